// Package acl is the Ascend ACL backend: a binding of the ACL runtime (ACLGraph capture through
// aclmdlRICaptureBegin/End) loaded at run time, never linked.
//
// New opens the library (Options.Library, $REPLAYCHECK_ACL_LIB, else SearchPaths), resolves the
// whole function table at once (a missing required symbol fails New and is named in a
// *dl.MissingError), calls aclInit (a repeated initialisation is success) and counts the devices. A
// library that cannot be loaded is a *NoLibraryError (ErrNoLibrary); a failure of aclInit or of
// aclrtGetDeviceCount (ACL_ERROR_RT_NO_DEVICE: the runtime without its driver) wraps ErrNoDriver.
//
// Each Device owns two locked OS-thread workers, Main and Other, each with aclrtSetDevice done;
// every call runs on the worker its Thread names (inline when it is already there: OnThread,
// device.ThreadRunner, runs the engine's instance on Main's worker as one hand-off). Memory,
// streams, events and graphs map onto aclrtMalloc (HUGE_FIRST), aclrtMemcpy (Write, Read: the
// synchronous "unsafe" calls), aclrtMallocHost (pinned) or malloc (pageable), aclrtMemsetAsync,
// aclrtMemcpyAsync, aclrtCreateEventExWithFlag(ACL_EVENT_SYNC) and the model RI of a capture,
// replayed with aclmdlRIExecuteAsync. There is no kernel: Capabilities().Kernels is false and Axpy
// fails not-supported; GraphNodes is not supported either.
//
// Handles are small numbers issued in Go and mapped to the runtime's pointers. CaptureInfo asks
// aclmdlRICaptureGetInfo for the status and takes the ID (one per BeginCapture, shared by the
// streams a Wait forks into the capture), the origin and the mode from the Go bookkeeping. Every
// error is a *device.Error named and classed by the one table Codes, with aclGetRecentErrMsg's
// text, read on the failing thread, as Detail; after a failed call the status of every capture in
// progress is asked again, and Invalidated says whether this call invalidated one.
//
// The package's tests run on device/fake's libascendcl.so (built with the system C compiler), the
// conformance suite included; with REPLAYCHECK_HARDWARE=acl (make device-check) the conformance
// suite runs also on device 0 of the library the binding's own search finds, labelled "hardware".
//
// The driver-neutral half of the device is device/internal/bind, shared with device/cuda.
package acl
