package cuda

import (
	"fmt"

	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/internal/bind"
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
	Class runtime.Class
}

// Codes is the one table of CUresult codes: each code's name (cuda.h) and its portable class. It
// agrees with the simulator's cuda profile (runtime/sim/profiles/cuda.yaml), which encodes the
// same facts (docs/platforms.md): 401 ILLEGAL_STATE is capture-conflict there, the answer
// to a begin on a stream already capturing and to an end on a stream in no capture (measured on an
// H200, driver 13.0). It needs no library.
var Codes = map[int]Code{
	1:   {"CUDA_ERROR_INVALID_VALUE", runtime.ClassInvalidValue},
	2:   {"CUDA_ERROR_OUT_OF_MEMORY", runtime.ClassOutOfMemory},
	3:   {"CUDA_ERROR_NOT_INITIALIZED", runtime.ClassInvalidState},
	4:   {"CUDA_ERROR_DEINITIALIZED", runtime.ClassDeviceLost},
	34:  {"CUDA_ERROR_STUB_LIBRARY", runtime.ClassNotSupported},
	100: {"CUDA_ERROR_NO_DEVICE", runtime.ClassNotSupported},
	101: {"CUDA_ERROR_INVALID_DEVICE", runtime.ClassInvalidValue},
	200: {"CUDA_ERROR_INVALID_IMAGE", runtime.ClassInvalidValue},
	201: {"CUDA_ERROR_INVALID_CONTEXT", runtime.ClassInvalidValue},
	209: {"CUDA_ERROR_NO_BINARY_FOR_GPU", runtime.ClassNotSupported},
	218: {"CUDA_ERROR_INVALID_PTX", runtime.ClassNotSupported},
	222: {"CUDA_ERROR_UNSUPPORTED_PTX_VERSION", runtime.ClassNotSupported},
	400: {"CUDA_ERROR_INVALID_HANDLE", runtime.ClassInvalidValue},
	401: {"CUDA_ERROR_ILLEGAL_STATE", runtime.ClassCaptureConflict},
	500: {"CUDA_ERROR_NOT_FOUND", runtime.ClassInvalidValue},
	600: {"CUDA_ERROR_NOT_READY", runtime.ClassInvalidState},
	700: {"CUDA_ERROR_ILLEGAL_ADDRESS", runtime.ClassIllegalAddress},
	702: {"CUDA_ERROR_LAUNCH_TIMEOUT", runtime.ClassInternal},
	710: {"CUDA_ERROR_ASSERT", runtime.ClassInternal},
	714: {"CUDA_ERROR_HARDWARE_STACK_ERROR", runtime.ClassInternal},
	715: {"CUDA_ERROR_ILLEGAL_INSTRUCTION", runtime.ClassInternal},
	716: {"CUDA_ERROR_MISALIGNED_ADDRESS", runtime.ClassIllegalAddress},
	717: {"CUDA_ERROR_INVALID_ADDRESS_SPACE", runtime.ClassIllegalAddress},
	718: {"CUDA_ERROR_INVALID_PC", runtime.ClassInternal},
	719: {"CUDA_ERROR_LAUNCH_FAILED", runtime.ClassDeviceLost},
	801: {"CUDA_ERROR_NOT_SUPPORTED", runtime.ClassNotSupported},
	900: {"CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", runtime.ClassCaptureUnsupported},
	901: {"CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", runtime.ClassCaptureInvalidated},
	902: {"CUDA_ERROR_STREAM_CAPTURE_MERGE", runtime.ClassCaptureConflict},
	903: {"CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", runtime.ClassCaptureUnmatched},
	904: {"CUDA_ERROR_STREAM_CAPTURE_UNJOINED", runtime.ClassCaptureUnjoined},
	905: {"CUDA_ERROR_STREAM_CAPTURE_ISOLATION", runtime.ClassCaptureDependency},
	906: {"CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", runtime.ClassCaptureImplicit},
	907: {"CUDA_ERROR_CAPTURED_EVENT", runtime.ClassCapturedEvent},
	908: {"CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", runtime.ClassWrongThread},
	999: {"CUDA_ERROR_UNKNOWN", runtime.ClassInternal},
}

// Lookup names code and classes it; a code outside the table is internal, named by its number.
func Lookup(code int) (name string, class runtime.Class) {
	if c, ok := Codes[code]; ok {
		return c.Name, c.Class
	}
	return fmt.Sprintf("CUDA_ERROR_%d", code), runtime.ClassInternal
}

// sticky are the codes cuda.h documents as leaving "the process in an inconsistent state": every
// later call returns the same error, and "to continue using CUDA, the process must be terminated
// and relaunched". An H200 did so for 700 after a replay over freed memory (driver 13.0).
var sticky = map[int]bool{700: true, 702: true, 710: true, 714: true, 715: true, 716: true, 717: true, 718: true, 719: true}

// Sticky reports whether code poisons the process's CUDA context (runtime.Error.Sticky).
func Sticky(code int) bool { return sticky[code] }

// codes names and classes the package's codes for the driver-neutral device (runtime/internal/bind).
var codes = bind.Codes{Backend: backendName, Lookup: Lookup, Sticky: Sticky, InvalidValue: codeInvalidValue, NotSupported: codeNotSupported, OutOfMemory: codeOutOfMemory}

// driverError is the *runtime.Error of a platform code.
func driverError(op string, code int, detail string) *runtime.Error {
	return codes.Error(op, code, detail)
}

// invalid is a call refused before it reaches the driver, with the invalid-value code.
func invalid(op, format string, args ...any) error { return codes.Invalid(op, format, args...) }
