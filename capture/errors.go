package capture

import (
	"context"
	"errors"
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"strings"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// fatal is a failure that ends the instance in error. It keeps the error it wraps (a
// *device.Error stays one for errors.As), the kind of failure and the step it came from.
type fatal struct {
	kind ErrorKind
	step *probes.Step
	err  error
}

func (e *fatal) Error() string { return e.err.Error() }
func (e *fatal) Unwrap() error { return e.err }

// fail wraps err as a fatal error of kind; a context error is a timeout or an interruption, and a
// device-lost answer a lost device, whatever the caller thought it was.
func fail(kind ErrorKind, step *probes.Step, err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		kind = ErrTimeout
	case errors.Is(err, context.Canceled):
		kind = ErrInterrupted
	case kind != ErrFault && kind != ErrRuntime && crashed(err):
		kind = ErrCrash
	case kind != ErrFault && kind != ErrRuntime && (deviceLost(err) || sticky(err)):
		kind = ErrDeviceLost
	}
	return &fatal{kind: kind, step: step, err: err}
}

// deviceLost reports whether err is the platform saying the device is lost: not a runtime under
// test failing on its own with that class.
func deviceLost(err error) bool {
	e, ok := device.AsError(err)
	return ok && e.Class == device.ClassDeviceLost && !strings.HasPrefix(e.Backend, runtime.PluginBackend)
}

// crashed reports whether err is the platform's process dying inside the call
// (device.Error.Crash), which a backend that survives it (the simulator) answers instead.
func crashed(err error) bool {
	e, ok := device.AsError(err)
	return ok && e.Crash != "" && !strings.HasPrefix(e.Backend, runtime.PluginBackend)
}

// sticky reports whether err is the platform's sticky error (device.Error.Sticky): the device
// answers it to every later call, as a lost one does.
func sticky(err error) bool {
	e, ok := device.AsError(err)
	return ok && e.Sticky && !strings.HasPrefix(e.Backend, runtime.PluginBackend)
}

// failf is fail with a formatted message; %w keeps what it wraps.
func failf(kind ErrorKind, step *probes.Step, format string, args ...any) error {
	return fail(kind, step, fmt.Errorf(format, args...))
}

// runErrorOf is the RunError a failure becomes. An error that is not fatal (a panic turned into an
// error, say) is the harness's.
func runErrorOf(err error) *RunError {
	var f *fatal
	if !errors.As(err, &f) {
		return &RunError{Kind: ErrHarness, Message: err.Error()}
	}
	return &RunError{Kind: f.kind, Step: f.step, Message: err.Error()}
}

// stepRef returns a pointer to a copy of s, for the places a step is optional.
func stepRef(s probes.Step) *probes.Step { return &s }
