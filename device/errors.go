package device

import (
	"errors"
	"fmt"
	"slices"
)

// Class is the portable class of a device error, the same for every backend.
type Class string

const (
	ClassCaptureUnsupported  Class = "capture-unsupported"   // a call not allowed while capturing (sync, unsafe call)
	ClassCapturedStream      Class = "captured-stream"       // the call names a stream that is capturing
	ClassCapturedEvent       Class = "captured-event"        // the call names an event recorded inside a capture
	ClassCaptureDependency   Class = "capture-dependency"    // wait on an event from outside the capture
	ClassCaptureUnjoined     Class = "capture-unjoined"      // a forked stream was not joined back before the end
	ClassCaptureUnmatched    Class = "capture-unmatched"     // end on a stream that is not the origin
	ClassCaptureInvalidated  Class = "capture-invalidated"   // the capture was invalidated by an earlier error
	ClassCaptureImplicit     Class = "capture-implicit"      // implicit dependency on the legacy/default stream
	ClassCaptureNotCapturing Class = "capture-not-capturing" // end on a stream that is not capturing
	ClassCaptureConflict     Class = "capture-conflict"      // begin on a stream already capturing or merged
	ClassWrongThread         Class = "wrong-thread"          // ended from a thread that did not begin it
	ClassCaptureMode         Class = "capture-mode"          // call not allowed in the active capture mode
	ClassOutOfMemory         Class = "out-of-memory"
	ClassInvalidValue        Class = "invalid-value"
	ClassNotSupported        Class = "not-supported"
	ClassDeviceLost          Class = "device-lost"
	// ClassIllegalAddress is device work that touched memory no allocation holds (CUDA 700).
	ClassIllegalAddress Class = "illegal-address"
	ClassInternal       Class = "internal"
	// ClassInvalidState is a call that the object's current state forbids, e.g. latching a context
	// into the other execution mode.
	ClassInvalidState Class = "invalid-state"
	// ClassRefused is a kernel-mode guard refusal: nothing was done.
	ClassRefused Class = "refused"
)

var classes = []Class{
	ClassCaptureUnsupported, ClassCapturedStream, ClassCapturedEvent, ClassCaptureDependency,
	ClassCaptureUnjoined, ClassCaptureUnmatched, ClassCaptureInvalidated, ClassCaptureImplicit,
	ClassCaptureNotCapturing, ClassCaptureConflict, ClassWrongThread, ClassCaptureMode,
	ClassOutOfMemory, ClassInvalidValue, ClassNotSupported, ClassDeviceLost, ClassIllegalAddress, ClassInternal,
	ClassRefused, ClassInvalidState,
}

// Classes lists every class, for validation of probe files and baselines, in a fresh slice.
func Classes() []Class { return slices.Clone(classes) }

// ValidClass reports whether c is one of Classes.
func ValidClass(c Class) bool { return slices.Contains(classes, c) }

// Error is every failure a Device returns.
type Error struct {
	Backend string
	Op      string // the device call, e.g. "SyncStream", or the platform entry point
	Code    int    // the platform's own number (ACL 107027, CUDA 900); 0 for guard refusals
	Name    string // the platform's name for Code, when known (e.g. "ACL_ERROR_RT_STREAM_CAPTURED")
	Class   Class
	// Invalidated is true when this error also invalidated the capture in progress.
	Invalidated bool
	// Sticky is true when the error poisoned the device for the rest of the process: every later
	// call answers it, and the platform allows no further work in this process (CUDA's illegal
	// address, launch failure and the other errors its documentation says need the process
	// relaunched).
	Sticky bool
	// Crash, when set, is the signal the platform's process dies of inside this call (SIGSEGV): a
	// backend that survives it (the simulator) answers this error instead, and the engine reports
	// the instance as crashed, as an isolated worker that died would be.
	Crash  string
	Detail string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s: %s", e.Backend, e.Op, e.Class)
	if e.Code != 0 || e.Name != "" {
		s += fmt.Sprintf(" (code %d", e.Code)
		if e.Name != "" {
			s += " " + e.Name
		}
		s += ")"
	}
	if e.Invalidated {
		s += ", capture invalidated"
	}
	if e.Sticky {
		s += ", sticky (every later call answers it)"
	}
	if e.Crash != "" {
		s += fmt.Sprintf(", crashes the process (signal %s)", e.Crash)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// AsError returns the *Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// ClassOf returns the class of err, ClassInternal for a non-nil error that is not an *Error, and ""
// for nil.
func ClassOf(err error) Class {
	if err == nil {
		return ""
	}
	if e, ok := AsError(err); ok {
		return e.Class
	}
	return ClassInternal
}

// PluginBackend starts the Backend of every error a loaded runtime plugin reports itself (a refusal
// or its own failure), followed by the plugin's name: "runtime:reference".
const PluginBackend = "runtime:"

// IsRefusal reports whether err is a guard refusal.
func IsRefusal(err error) bool { return ClassOf(err) == ClassRefused }
