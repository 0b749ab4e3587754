package acl

import (
	"fmt"

	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/internal/bind"
)

const backendName = "acl"

// The codes the binding reports for failures it finds itself, before a call reaches the runtime.
const (
	codeInvalidValue = 107000 // ACL_ERROR_RT_PARAM_INVALID
	codeNotSupported = 207000 // ACL_ERROR_RT_FEATURE_NOT_SUPPORT
	codeOutOfMemory  = 207001 // ACL_ERROR_RT_MEMORY_ALLOCATION
	// codeRepeatInitialize is aclInit's answer to a second aclInit in one process: success here.
	codeRepeatInitialize = 100002
)

// Code is one entry of the ACL code table.
type Code struct {
	Name  string
	Class runtime.Class
}

// Codes is the one table of ACL status codes: each code's name (acl_base.h, acl_rt.h) and its
// portable class. It agrees with the simulator's cann profile (runtime/sim/profiles/cann.yaml),
// which encodes the same facts (docs/platforms.md). It needs no library.
var Codes = map[int]Code{
	100000: {"ACL_ERROR_INVALID_PARAM", runtime.ClassInvalidValue},
	100002: {"ACL_ERROR_REPEAT_INITIALIZE", runtime.ClassInvalidState},
	107000: {"ACL_ERROR_RT_PARAM_INVALID", runtime.ClassInvalidValue},
	107001: {"ACL_ERROR_RT_INVALID_DEVICEID", runtime.ClassInvalidValue},
	107002: {"ACL_ERROR_RT_CONTEXT_NULL", runtime.ClassInvalidState},
	107024: {"ACL_ERROR_RT_CAPTURE_DEPENDENCY", runtime.ClassCaptureDependency},
	107025: {"ACL_ERROR_RT_STREAM_UNJOINED", runtime.ClassCaptureUnjoined},
	107026: {"ACL_ERROR_RT_MODEL_CAPTURED", runtime.ClassCaptureConflict},
	107027: {"ACL_ERROR_RT_STREAM_CAPTURED", runtime.ClassCapturedStream},
	107028: {"ACL_ERROR_RT_EVENT_CAPTURED", runtime.ClassCapturedEvent},
	107029: {"ACL_ERROR_RT_STREAM_NOT_CAPTURED", runtime.ClassCaptureNotCapturing},
	107030: {"ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT", runtime.ClassCaptureMode},
	107031: {"ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT", runtime.ClassCaptureImplicit},
	107032: {"ACL_ERROR_RT_STREAM_CAPTURE_CONFLICT", runtime.ClassCaptureConflict},
	107036: {"ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED", runtime.ClassCaptureUnmatched},
	107037: {"ACL_ERROR_RT_MODEL_RUNNING", runtime.ClassInvalidState},
	107038: {"ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD", runtime.ClassWrongThread},
	107041: {"ACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC", runtime.ClassCaptureMode},
	200000: {"ACL_ERROR_BAD_ALLOC", runtime.ClassOutOfMemory},
	200001: {"ACL_ERROR_API_NOT_SUPPORT", runtime.ClassNotSupported},
	200006: {"ACL_ERROR_FEATURE_UNSUPPORTED", runtime.ClassNotSupported},
	207000: {"ACL_ERROR_RT_FEATURE_NOT_SUPPORT", runtime.ClassNotSupported},
	207001: {"ACL_ERROR_RT_MEMORY_ALLOCATION", runtime.ClassOutOfMemory},
	207004: {"ACL_ERROR_RT_NO_DEVICE", runtime.ClassNotSupported},
	207018: {"ACL_ERROR_RT_DEVICE_OOM", runtime.ClassOutOfMemory},
	507000: {"ACL_ERROR_RT_INTERNAL_ERROR", runtime.ClassInternal},
	507010: {"ACL_ERROR_RT_LOST_HEARTBEAT", runtime.ClassDeviceLost},
	507011: {"ACL_ERROR_RT_MODEL_EXECUTE", runtime.ClassIllegalAddress},
	507903: {"ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED", runtime.ClassCaptureInvalidated},
}

// Lookup names code and classes it; a code outside the table is internal, named by its number.
func Lookup(code int) (name string, class runtime.Class) {
	if c, ok := Codes[code]; ok {
		return c.Name, c.Class
	}
	return fmt.Sprintf("ACL_ERROR_%d", code), runtime.ClassInternal
}

// codes names and classes the package's codes for the driver-neutral device (runtime/internal/bind).
var codes = bind.Codes{Backend: backendName, Lookup: Lookup, InvalidValue: codeInvalidValue, NotSupported: codeNotSupported, OutOfMemory: codeOutOfMemory}

// driverError is the *runtime.Error of a platform code.
func driverError(op string, code int, detail string) *runtime.Error {
	return codes.Error(op, code, detail)
}

// invalid is a call refused before it reaches the driver, with the invalid-value code.
func invalid(op, format string, args ...any) error { return codes.Invalid(op, format, args...) }
