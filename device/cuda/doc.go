// Package cuda is the CUDA backend: a binding of the CUDA driver API (libcuda.so.1) loaded at run
// time, never linked.
//
// New opens the library (Options.Library, $REPLAYCHECK_CUDA_LIB, else libcuda.so.1), resolves
// the whole function table at once, binding the exported names exactly (cuMemAlloc_v2,
// cuStreamBeginCapture_v2, cuGraphInstantiateWithFlags, ...), and calls cuInit(0) at every open
// (it may be called again; a library loaded again starts uninitialised). A library that cannot be
// loaded is a *NoLibraryError (ErrNoLibrary); a cuInit failure, above all the toolkit's stub
// library (CUDA_ERROR_STUB_LIBRARY, 34), wraps ErrNoDriver.
//
// Open retains the device's primary context (never cuCtxCreate) and makes it current on two
// locked OS-thread workers, Main and Other; every call runs on the worker its Thread names. The
// axpy kernel is PTX text (AxpyPTX) JIT-compiled with cuModuleLoadData at open; a driver that
// refuses it leaves the device without capability "kernels". The fingerprint kernel
// (FingerprintPTX, internal/fingerprint's definition) loads in the same module; a driver that
// refuses the two loads the axpy kernel alone, and the device then states no fingerprints
// (device.Fingerprinter, which the engine verifies with where it is stated). EndCapture instantiates the captured
// CUgraph with cuGraphInstantiateWithFlags; a device.Graph holds both, and DestroyGraph destroys
// both. The instantiation is a potentially unsafe call: while another capture is in progress that
// the calling thread's interaction mode minds, it fails 900 after cuStreamEndCapture ended the
// capture, and that other capture is invalidated (measured on an H200, driver 13.0); EndCapture
// then returns the 900 with no graph. CaptureInfo asks cuStreamIsCapturing for the status and
// takes the ID (one per BeginCapture, shared by the streams a Wait forks into the capture), the
// origin and the mode from the Go bookkeeping; cuStreamGetCaptureInfo is not bound. Errors are
// *device.Error named and classed by the one table Codes, with cuGetErrorString's text as Detail;
// after a failed call the status of every capture in progress is asked again, and Invalidated
// says whether this call invalidated one.
//
// Graph introspection (capability "graph-introspection"): GraphNodes lists the captured CUgraph's
// nodes with cuGraphGetNodes and cuGraphNodeGetType; a memset node writes the rows
// cuGraphMemsetNodeGetParams describes (dst, width*elementSize bytes, per pitch when height > 1),
// a memcpy node reads and writes what cuGraphMemcpyNodeGetParams describes (for replaycheck's 1-D
// copies, WidthInBytes from srcXInBytes of srcHost or srcDevice, by srcMemoryType, to the same of
// dst; UNIFIED counts as a device pointer). The structs match NVIDIA's cuda.h of CUDA 12.6
// (CUDA_MEMSET_NODE_PARAMS_v1, CUDA_MEMCPY3D_v2). A kernel node is listed as
// "kernel" without ranges: cuGraphKernelNodeGetParams maps to a _v2 export whose struct grew in
// 12.0, and is not bound (so the conformance spec that wants the axpy node's ranges is skipped
// here, saying so). Empty, event-wait and event-record nodes are listed without ranges; any other
// node type, or a copy with a CUDA array side, fails not-supported. The four entry points are
// optional: a library that lacks any of them still opens, without the capability, and GraphNodes
// fails not-supported naming what is missing.
//
// The package's tests run on device/fake's libcuda.so.1 (built with the system C compiler), the
// conformance suite included; with REPLAYCHECK_HARDWARE=cuda (make device-check) the conformance
// suite runs also on device 0 of the library the binding's own search finds, labelled "hardware".
//
// The driver-neutral half of the device is device/internal/bind, shared with device/acl.
package cuda
