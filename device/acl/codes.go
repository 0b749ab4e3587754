package acl

import (
	"fmt"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/internal/bind"
)

const backendName = "acl"

// The codes the binding reports for failures it finds itself, before a call reaches the device.
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
	Class device.Class
}

// Codes is the one table of ACL status codes: each code's name (acl_base.h, acl_rt.h) and its
// portable class. It agrees with the simulator's cann profile (device/sim/profiles/cann.yaml),
// which encodes the same facts (docs/platforms.md). It needs no library.
var Codes = map[int]Code{
	100000: {"ACL_ERROR_INVALID_PARAM", device.ClassInvalidValue},
	100002: {"ACL_ERROR_REPEAT_INITIALIZE", device.ClassInvalidState},
	107000: {"ACL_ERROR_RT_PARAM_INVALID", device.ClassInvalidValue},
	107001: {"ACL_ERROR_RT_INVALID_DEVICEID", device.ClassInvalidValue},
	107002: {"ACL_ERROR_RT_CONTEXT_NULL", device.ClassInvalidState},
	107024: {"ACL_ERROR_RT_CAPTURE_DEPENDENCY", device.ClassCaptureDependency},
	107025: {"ACL_ERROR_RT_STREAM_UNJOINED", device.ClassCaptureUnjoined},
	107026: {"ACL_ERROR_RT_MODEL_CAPTURED", device.ClassCaptureConflict},
	107027: {"ACL_ERROR_RT_STREAM_CAPTURED", device.ClassCapturedStream},
	107028: {"ACL_ERROR_RT_EVENT_CAPTURED", device.ClassCapturedEvent},
	107029: {"ACL_ERROR_RT_STREAM_NOT_CAPTURED", device.ClassCaptureNotCapturing},
	107030: {"ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT", device.ClassCaptureMode},
	107031: {"ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT", device.ClassCaptureImplicit},
	107032: {"ACL_ERROR_STREAM_CAPTURE_CONFLICT", device.ClassCaptureConflict},
	107036: {"ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED", device.ClassCaptureUnmatched},
	107037: {"ACL_ERROR_RT_MODEL_RUNNING", device.ClassInvalidState},
	107038: {"ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD", device.ClassWrongThread},
	107041: {"ACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC", device.ClassCaptureMode},
	200000: {"ACL_ERROR_BAD_ALLOC", device.ClassOutOfMemory},
	200001: {"ACL_ERROR_API_NOT_SUPPORT", device.ClassNotSupported},
	200006: {"ACL_ERROR_FEATURE_UNSUPPORTED", device.ClassNotSupported},
	207000: {"ACL_ERROR_RT_FEATURE_NOT_SUPPORT", device.ClassNotSupported},
	207001: {"ACL_ERROR_RT_MEMORY_ALLOCATION", device.ClassOutOfMemory},
	207004: {"ACL_ERROR_RT_NO_DEVICE", device.ClassNotSupported},
	207018: {"ACL_ERROR_RT_DEVICE_OOM", device.ClassOutOfMemory},
	507000: {"ACL_ERROR_RT_INTERNAL_ERROR", device.ClassInternal},
	507010: {"ACL_ERROR_RT_LOST_HEARTBEAT", device.ClassDeviceLost},
	507011: {"ACL_ERROR_RT_MODEL_EXECUTE", device.ClassIllegalAddress},
	507903: {"ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED", device.ClassCaptureInvalidated},
}

// Lookup names code and classes it; a code outside the table is internal, named by its number.
func Lookup(code int) (name string, class device.Class) {
	if c, ok := Codes[code]; ok {
		return c.Name, c.Class
	}
	return fmt.Sprintf("ACL_ERROR_%d", code), device.ClassInternal
}

// codes names and classes the package's codes for the driver-neutral device (device/internal/bind).
var codes = bind.Codes{Backend: backendName, Lookup: Lookup, InvalidValue: codeInvalidValue, NotSupported: codeNotSupported, OutOfMemory: codeOutOfMemory}

// driverError is the *device.Error of a platform code.
func driverError(op string, code int, detail string) *device.Error {
	return codes.Error(op, code, detail)
}

// invalid is a call refused before it reaches the driver, with the invalid-value code.
func invalid(op, format string, args ...any) error { return codes.Invalid(op, format, args...) }
