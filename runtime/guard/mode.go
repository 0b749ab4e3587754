package guard

import (
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"sync/atomic"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/enum"
)

// Mode is a context's execution identity.
type Mode uint8

const (
	// Unlatched is the state of a Latch before its first successful Latch call. It is not a mode a
	// context can run in.
	Unlatched Mode = iota
	// Program mode: everything the platform allows is allowed; growth is free + malloc.
	Program
	// Kernel mode: the guards are on.
	Kernel
)

var modeNames = enum.New("mode", "mode", enum.Name(Unlatched, "unlatched"), enum.Name(Program, "program"), enum.Name(Kernel, "kernel"))

func (m Mode) String() string { return modeNames.String(m) }

// Latch holds a context's execution mode, latched once. The zero Latch is unlatched and ready to
// use. A Latch is safe for concurrent use; it must not be copied after first use. Every guarded
// call asks for the mode (a capture of 100,000 ops asks 100,000 times): it is one atomic load.
type Latch struct {
	mode atomic.Uint32
}

// Latch latches m. Latching the held mode again is a no-op; latching the other mode is refused
// with class device.ClassInvalidState and leaves the held mode unchanged. Unlatched and unknown
// values are not modes to latch (class device.ClassInvalidValue): there is no unlatch.
func (l *Latch) Latch(m Mode) error {
	if m != Program && m != Kernel {
		return guardError(device.ClassInvalidValue, "Latch", "cannot latch %v: a context latches program or kernel, and there is no unlatch", m)
	}
	if l.mode.CompareAndSwap(uint32(Unlatched), uint32(m)) {
		return nil
	}
	held := l.Mode()
	if held == m {
		return nil
	}
	// A context that changed identity would carry buffers and captures made under the other rules.
	return guardError(device.ClassInvalidState, "Latch", "context is latched in %v mode; it cannot become %v", held, m)
}

// Mode returns the latched mode, Unlatched before the first successful Latch.
func (l *Latch) Mode() Mode { return Mode(l.mode.Load()) }

// guardError builds an error raised by the guard itself, never by the platform.
func guardError(class device.Class, op, format string, args ...any) *device.Error {
	return &device.Error{Backend: runtime.GuardBackend, Op: op, Class: class, Detail: fmt.Sprintf(format, args...)}
}

// refusal builds a refusal of the guard named guard (runtime.Guards): nothing was done.
func refusal(guard, op, format string, args ...any) error {
	return runtime.Refuse(guard, guardError(device.ClassRefused, op, format, args...))
}
