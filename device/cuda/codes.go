package cuda

import (
	"fmt"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/internal/bind"
)

const backendName = "cuda"

// The codes the binding reports for failures it finds itself, before a call reaches the driver.
const (
	codeInvalidValue = 1   // CUDA_ERROR_INVALID_VALUE
	codeOutOfMemory  = 2   // CUDA_ERROR_OUT_OF_MEMORY
	codeNotSupported = 801 // CUDA_ERROR_NOT_SUPPORTED
	// codeStubLibrary is cuInit's answer from the stub libcuda.so that toolkits ship for linking:
	// the library is present, the driver is not.
	codeStubLibrary = 34
	codeNotReady    = 600 // cuEventQuery: the event's work is not complete (not a failure)
)

// Code is one entry of the CUDA code table.
type Code struct {
	Name  string
	Class device.Class
}

// Codes is the one table of CUresult codes: each code's name (cuda.h) and its portable class. It
// agrees with the simulator's cuda profile (device/sim/profiles/cuda.yaml), which encodes the
// same facts (docs/platforms.md): 401 ILLEGAL_STATE is capture-conflict there, the answer
// to a begin on a stream already capturing and to an end on a stream in no capture (measured on an
// H200, driver 13.0). It needs no library.
var Codes = map[int]Code{
	1:   {"CUDA_ERROR_INVALID_VALUE", device.ClassInvalidValue},
	2:   {"CUDA_ERROR_OUT_OF_MEMORY", device.ClassOutOfMemory},
	3:   {"CUDA_ERROR_NOT_INITIALIZED", device.ClassInvalidState},
	4:   {"CUDA_ERROR_DEINITIALIZED", device.ClassDeviceLost},
	34:  {"CUDA_ERROR_STUB_LIBRARY", device.ClassNotSupported},
	100: {"CUDA_ERROR_NO_DEVICE", device.ClassNotSupported},
	101: {"CUDA_ERROR_INVALID_DEVICE", device.ClassInvalidValue},
	200: {"CUDA_ERROR_INVALID_IMAGE", device.ClassInvalidValue},
	201: {"CUDA_ERROR_INVALID_CONTEXT", device.ClassInvalidValue},
	209: {"CUDA_ERROR_NO_BINARY_FOR_GPU", device.ClassNotSupported},
	218: {"CUDA_ERROR_INVALID_PTX", device.ClassNotSupported},
	222: {"CUDA_ERROR_UNSUPPORTED_PTX_VERSION", device.ClassNotSupported},
	400: {"CUDA_ERROR_INVALID_HANDLE", device.ClassInvalidValue},
	401: {"CUDA_ERROR_ILLEGAL_STATE", device.ClassCaptureConflict},
	500: {"CUDA_ERROR_NOT_FOUND", device.ClassInvalidValue},
	600: {"CUDA_ERROR_NOT_READY", device.ClassInvalidState},
	700: {"CUDA_ERROR_ILLEGAL_ADDRESS", device.ClassIllegalAddress},
	702: {"CUDA_ERROR_LAUNCH_TIMEOUT", device.ClassInternal},
	710: {"CUDA_ERROR_ASSERT", device.ClassInternal},
	714: {"CUDA_ERROR_HARDWARE_STACK_ERROR", device.ClassInternal},
	715: {"CUDA_ERROR_ILLEGAL_INSTRUCTION", device.ClassInternal},
	716: {"CUDA_ERROR_MISALIGNED_ADDRESS", device.ClassIllegalAddress},
	717: {"CUDA_ERROR_INVALID_ADDRESS_SPACE", device.ClassIllegalAddress},
	718: {"CUDA_ERROR_INVALID_PC", device.ClassInternal},
	719: {"CUDA_ERROR_LAUNCH_FAILED", device.ClassDeviceLost},
	801: {"CUDA_ERROR_NOT_SUPPORTED", device.ClassNotSupported},
	900: {"CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", device.ClassCaptureUnsupported},
	901: {"CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", device.ClassCaptureInvalidated},
	902: {"CUDA_ERROR_STREAM_CAPTURE_MERGE", device.ClassCaptureConflict},
	903: {"CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", device.ClassCaptureUnmatched},
	904: {"CUDA_ERROR_STREAM_CAPTURE_UNJOINED", device.ClassCaptureUnjoined},
	905: {"CUDA_ERROR_STREAM_CAPTURE_ISOLATION", device.ClassCaptureDependency},
	906: {"CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", device.ClassCaptureImplicit},
	907: {"CUDA_ERROR_CAPTURED_EVENT", device.ClassCapturedEvent},
	908: {"CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", device.ClassWrongThread},
	999: {"CUDA_ERROR_UNKNOWN", device.ClassInternal},
}

// Lookup names code and classes it; a code outside the table is internal, named by its number.
func Lookup(code int) (name string, class device.Class) {
	if c, ok := Codes[code]; ok {
		return c.Name, c.Class
	}
	return fmt.Sprintf("CUDA_ERROR_%d", code), device.ClassInternal
}

// sticky are the codes cuda.h documents as leaving "the process in an inconsistent state": every
// later call returns the same error, and "to continue using CUDA, the process must be terminated
// and relaunched". An H200 did so for 700 after a replay over freed memory (driver 13.0).
var sticky = map[int]bool{700: true, 702: true, 710: true, 714: true, 715: true, 716: true, 717: true, 718: true, 719: true}

// Sticky reports whether code poisons the process's CUDA context (device.Error.Sticky).
func Sticky(code int) bool { return sticky[code] }

// codes names and classes the package's codes for the driver-neutral device (device/internal/bind).
var codes = bind.Codes{Backend: backendName, Lookup: Lookup, Sticky: Sticky, InvalidValue: codeInvalidValue, NotSupported: codeNotSupported, OutOfMemory: codeOutOfMemory}

// driverError is the *device.Error of a platform code.
func driverError(op string, code int, detail string) *device.Error {
	return codes.Error(op, code, detail)
}

// invalid is a call refused before it reaches the driver, with the invalid-value code.
func invalid(op, format string, args ...any) error { return codes.Invalid(op, format, args...) }
