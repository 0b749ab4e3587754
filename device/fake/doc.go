// Package fake builds fake driver libraries, libascendcl.so and libcuda.so.1, so the cgo bindings
// of device/acl and device/cuda can be exercised without Ascend or NVIDIA hardware.
//
// # What a fake promises
//
// Each library is C (c/core.c, the device model, and c/acl.c or c/cuda.c, the front end), built
// with the system C compiler ($CC, else cc) as C11 with -Wall -Wextra -Werror, and behaves as the
// simulator (device/sim) does on the matching profile: cann for ACL, cuda for CUDA. The profile's
// rules are not copied: Generate writes them into rules.h from the profile the simulator loads, and
// fails, naming it, on any condition the C core does not implement (Conditions lists those, in the
// order of the C enum rc_cond).
//
// Reproduced as the simulator does it: the caching allocator (512-byte rounding, LIFO reuse per
// rounded size, bump pointer, the smallest larger cached block when the bump pointer is exhausted,
// out-of-memory when nothing fits) over real, reserved host memory, so the bytes can be copied and
// the re-base hazard shows at the same addresses relative to the heap's base; pinned host memory
// (aclrtMallocHost, cuMemAllocHost_v2) from a second allocator of the same kind; streams, blocking
// or non-blocking (cuStreamCreate's flags 0 or CU_STREAM_NON_BLOCKING, any other bit
// CUDA_ERROR_INVALID_VALUE; every ACL stream is non-blocking), events, the capture DAG with fork and
// join through events; replay of launched graphs, settled at any
// call but another launch or a capture-state question (aclmdlRICaptureGetInfo,
// cuStreamIsCapturing), interleaving one node of each launched stream in turn; a seeded replay
// order (REPLAYCHECK_FAKE_SEED) drawn exactly as the simulator draws it (Go's PCG and Rand.IntN);
// threads' capture interaction modes, per calling OS thread (pthread_self); the rules, first
// rejecting match deciding, a freed allocation judged by the size it had at capture; and failures
// outside the rules with the profile's code per class.
//
// One call of the simulator is two of CUDA's: EndCapture is cuStreamEndCapture and then
// cuGraphInstantiateWithFlags, which the cuda binding calls at once. The EndCapture rules on the
// other captures in progress (InstantiationConditions) judge the instantiation, an unsafe call:
// the fake libcuda answers them from cuGraphInstantiateWithFlags, after cuStreamEndCapture
// succeeded and ended the capture, as the driver does (a rejection makes no executable graph and
// invalidates the other captures as the rule says); the fake libascendcl answers them from
// aclmdlRICaptureEnd. Generate refuses a profile with a rejecting EndCapture rule after one of
// them, whose answer would then depend on which call made it.
//
// One answer is the driver's and not the simulator's: cuGraphLaunch of a graph whose copy names
// pinned host memory freed with cuMemFreeHost since capture (even if the address was handed out
// again) fails 719 and loses the context. An H200 answered 719 at the synchronisation after such a
// launch at 16 MiB and crashed the process for smaller copies; the fake answers on the launch. The
// simulator has no such rule because the bindings keep host memory that graphs name
// (device/internal/bind), so a launch of theirs never meets it: the fake is what shows that they
// do.
//
// What the fake cannot reproduce: pageable host memory is the program's own (any address outside
// the fake's memory), so the fake neither checks that such a range is live nor sees it freed: a
// replay that reads freed pageable memory is not graph-range-freed, as it is in the simulator, and
// pageable and pinned allocations do not share one allocator. Addresses are real mmap addresses,
// not the simulator's 0x7f0000000000 + i<<40, and error details say the same things in other
// words. Counters are the binding's to keep. A thread is its pthread_self: a thread id reused after
// its thread exited inherits that thread's capture mode. cuGraphLaunch also accepts a CUgraph (the
// executable graph is a copy of its nodes). aclrtMemcpy copies host to device and device to host;
// its device-to-device and host-to-host kinds fail not-supported. Event flags are not modelled
// (every event is capture-capable, as in the simulator). Graph introspection: a graph's nodes are
// its work nodes only, in capture order (cuGraphGetNodes, cuGraphNodeGetType with cuda.h's
// numbering, KERNEL 0, MEMCPY 1, MEMSET 2); cuGraphMemsetNodeGetParams answers a one-row memset
// (elementSize 1, 2 or 4 as the cuMemsetD*Async call, width in elements, pitch 0) and
// cuGraphMemcpyNodeGetParams a 1-D CUDA_MEMCPY3D whose host side, by the copy's direction, is
// CU_MEMORYTYPE_HOST. Asked of a node of another kind they fail CUDA_ERROR_INVALID_VALUE.
//
// The per-thread default stream (CU_STREAM_PER_THREAD, (CUstream)0x2, in any call; NULL in a
// _ptsz or _ptds entry point) is one blocking stream per calling thread (pthread_self) and
// device, made at its first use and kept until the device is destroyed: capturable, synchronised
// with by the legacy stream as any blocking stream, apart from other threads' and from the legacy
// stream. The _ptds synchronous copies are the plain ones (the rules judge every synchronous copy
// as legacy-stream work). CU_STREAM_LEGACY ((CUstream)0x1) is the legacy stream (NULL).
// Stream-ordered allocation (cuMemAllocAsync, cuMemAllocFromPoolAsync, cuMemFreeAsync) is served
// by the device allocator as cuMemAlloc is and takes effect at the call (work runs at enqueue);
// no rule judges it (it is no unsafe call), and on a capturing stream it fails
// CUDA_ERROR_NOT_SUPPORTED where the driver would make a graph memory node. Pools are handles
// only (any non-NULL one is the device's allocator). The v1 names take cuda.h's v1 types:
// cuMemAlloc's CUdeviceptr is 32 bits, which cannot name the fake's memory (mmap'd above 4 GiB),
// so after the rules it fails CUDA_ERROR_OUT_OF_MEMORY allocating nothing, and cuMemFree never
// names a live allocation; cuMemAllocHost (32-bit size) works. cuMemcpyAsync copies between a
// host buffer (pinned or pageable) and device memory or within device memory; a copy between two
// host buffers fails CUDA_ERROR_INVALID_VALUE. cuLaunchKernelEx's launch attributes are not looked
// at. cuGraphExecUpdate(_v2) also requires the same dependencies (the driver's topology), and its
// errorFromNode is always NULL.
//
// # The C ABI
//
// Exports lists every entry point of each library; see c/acl.c and c/cuda.c for signatures.
//
// cuGetProcAddress and cuGetProcAddress_v2 answer every CUDA entry point the fake exports (but the
// fault-injection ones) by base name ("cuMemAlloc") and the caller's CUDA version, with the
// variant NVIDIA's cudaTypedefs.h gives that version (cuMemAlloc_v2 from 3020, cuStreamBeginCapture_v2
// from 10010, cuGraphInstantiate_v2 from 11000 and cuGraphInstantiateWithFlags from 12000,
// cuGraphExecUpdate_v2 from 12000; one table in c/cuda.c), and with
// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (2) its _ptsz variant (_ptds for the synchronous
// copies) from 7000: the pointer dlsym on the library's handle returns, the library's own even
// where another object (an interposer) defines the name. A versioned name ("cuMemAlloc_v2") or an
// unknown one is CUDA_ERROR_NOT_FOUND with symbol status SYMBOL_NOT_FOUND (1), a version older
// than every variant the fake has VERSION_NOT_SUFFICIENT (2), *pfn NULL; they need no cuInit. A
// missing-symbol build does not find its missing export. cuFuncGetParamInfo describes the kernel's
// parameters (y 0/8, x 8/8, a 16/4, n 20/4; index 4 and past CUDA_ERROR_INVALID_VALUE), and
// cuLaunchKernel, its _ptsz and cuLaunchKernelEx take the arguments as kernelParams or as extra's
// packed 24-byte buffer (CU_LAUNCH_PARAM_BUFFER_POINTER, CU_LAUNCH_PARAM_BUFFER_SIZE 24,
// CU_LAUNCH_PARAM_END), not both.
//
// libascendcl's kernel is the same replaycheck_axpy: aclrtBinaryLoadFromData takes any data
// naming it (options may be NULL), aclrtBinaryGetFunction finds it, aclrtBinaryUnLoad ends the
// binary and its function, and aclrtLaunchKernel takes the packed arguments {void *y; void *x;
// uint32_t a; uint32_t n;} (argsSize 24, else ACL_ERROR_INVALID_PARAM) in host memory or, as
// CANN documents, in device memory, and computes all n lanes whatever numBlocks (an Ascend C
// kernel splits its lanes among its blocks itself). The arguments are read at the call: the
// buffer may be reused at once, and a capture holds their values (a device would read a
// device-memory argument buffer when the kernel runs, which the fake does not model).
// aclrtLaunchKernelV2 is aclrtLaunchKernel with a launch configuration (cfg; NULL accepted; no
// configuration is looked at). aclrtLaunchKernelWithHostArgs takes the same 24 bytes in host
// memory (device memory: ACL_ERROR_INVALID_PARAM); placeholders are not modelled: a
// placeHolderNum other than 0 fails ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000, the cann profile's
// not-supported). aclrtLaunchKernelWithConfig takes an argument list: aclrtKernelArgsInit makes
// one for a function, aclrtKernelArgsAppend copies each parameter (host memory) onto its end in
// order, aclrtKernelArgsFinalize closes it (an append after: ACL_ERROR_INVALID_PARAM), and the
// launch needs it finalized, made for the launched function and 24 bytes long (else
// ACL_ERROR_INVALID_PARAM; reserve is not looked at). Lists live host-side for the whole
// process, as CANN has no call that ends one: at most 1024 are made (then Init fails
// out-of-memory, 207001), each at most 1024 bytes.
//
// libascendcl's graph reading (CANN 9.1's trial aclmdlRIGetStreams, aclmdlRIGetTasksByStream,
// aclmdlRITaskGetType) answers from the same graph nodes: a model RI has one stream holding its
// nodes in capture order as tasks, a kernel typed ACL_MODEL_RI_TASK_KERNEL and a memset or memcpy
// ACL_MODEL_RI_TASK_DEFAULT, as the runtime types them; REPLAYCHECK_FAKE_RI_DROP=<n>, read at
// every call, leaves task n of each stream out (a runtime that misreports its graph).
//
// ACL
// handles and CUDA streams, events, graphs and executable graphs are numbers cast to pointers; the
// default stream is NULL. aclmdlRICaptureGetInfo's model RI for a capture in progress is
// 1<<48 | capture id. The CUDA kernel is "replaycheck_axpy" (AxpyKernel): cuModuleLoadData takes
// PTX text containing ".version" and ".entry" and naming it, and cuLaunchKernel takes kernelParams
// {&y (CUdeviceptr), &x (CUdeviceptr), &a (unsigned int), &n (unsigned int, lanes)} (or extra), and
// computes y[i] = a*x[i] + y[i] over the little-endian uint32 lanes i < n that the launch has a
// thread for (i = blockIdx.x*blockDim.x + threadIdx.x, one thread per lane, as device/cuda's
// AxpyPTX): a grid too small leaves the remaining lanes as they were, as that kernel does. The
// CUDA library also runs "replaycheck_fingerprint" (device/cuda's FingerprintPTX, in a module whose
// text names it): kernelParams {&src, &n (unsigned long long), &out}, blocks of a power of two up to
// 256 threads, block b writing out[b], the fingerprint of chunk b of the n bytes at src
// (internal/fingerprint), computed on the CPU at the launch; on a capturing stream it fails
// not-supported. device/cuda checks it against internal/fingerprint's test vectors.
//
// Environment, read once per loaded copy of the library, at its first call: REPLAYCHECK_FAKE_MEMORY
// (bytes reserved per device and as much again for pinned host memory; default 1 GiB),
// REPLAYCHECK_FAKE_DEVICES (default 1, at most 8), REPLAYCHECK_FAKE_SEED (default 0: capture
// order), REPLAYCHECK_FAKE_LOG (a file the calls and their failures are appended to, see below),
// REPLAYCHECK_FAKE_FAIL_MALLOC (n: the n-th device allocation that passes its checks fails
// out-of-memory, once, as sim's FailMalloc) and REPLAYCHECK_FAKE_CRASH (an entry point name:
// calling it faults with SIGSEGV, a real invalid access, in every build).
//
// REPLAYCHECK_FAKE_FAIL="<entry point>=<code>" is read at every call instead, so a test arms and
// disarms it between calls (not while a call is in flight: setenv is not safe against a concurrent
// getenv). While it names an entry point that returns a status (every one but aclGetRecentErrMsg
// and aclrtGetSocName), every call of that entry point, not only the first, returns the code (any
// non-zero int, in the platform's table or not) before it touches anything: no rule is applied, no
// capture invalidated, nothing allocated or enqueued, and an output argument keeps what it had.
// The failure's detail names the injection ("<entry point>: failure <code> injected by
// REPLAYCHECK_FAKE_FAIL"), which aclGetRecentErrMsg returns on the calling thread;
// cuGetErrorName and cuGetErrorString name the code from the generated table (and answer
// CUDA_ERROR_INVALID_VALUE for a code outside it, as the driver does). A value that names another
// entry point, or whose code is not a non-zero decimal, octal or hex integer, injects nothing. It
// answers before the stub's code, in the stub too.
//
// Fault injection has entry points of its own, which no driver has (FaultEntryPoints; a binding
// that finds them, through device/internal/bind's FakeFaults, reports the fault-injection
// capability, one over a real driver does not):
// replaycheck_fake_inject(kind, n) arms a fault on the calling thread's current device, numbered as
// device.FaultKind (1 alloc-fail, 2 launch-fail, 3 device-lost, 4 hang; 0 disarms every fault not
// fired), firing at the n-th call of its kind: an allocation that passes its checks, or a graph
// launch (aclmdlRIExecuteAsync, cuGraphLaunch), answered before anything is looked at.
// replaycheck_fake_fired(i, &kind, &n) reports the i-th fault fired on the device. alloc-fail
// fails the allocation out-of-memory; launch-fail fails the launch with the profile's internal code
// (507000, 999); device-lost fails it with the profile's device-lost code (507010, 719) and every
// later call that needs the device answers that code until the device's last release
// (aclrtResetDevice, cuDevicePrimaryCtxRelease), after which the device made by the next retain is
// a fresh one; hang lets the library lock go and waits forever on a condition nobody signals, so
// other threads' calls still answer. Faults are per device, as the simulator's are.
//
// The call log has one line per call entered and one more per failure, each starting with the
// calling OS thread's kernel thread id (gettid(2), what Go's syscall.Gettid returns on that thread;
// the main thread's is the process id): "<tid> call <entry point>" ("<tid> call cuStreamCreate
// flags=<flags>": the one entry point whose argument is logged) and "<tid> fail <entry point>
// <code>: <detail>", and "<tid> hang" when an injected hang fault stops a call for good. Lines are
// written whole as they end (line-buffered, appended), so the file can be read while the library
// is loaded; ReadLog reads it.
//
// Which calls settle launched work: every device call but aclmdlRIExecuteAsync / cuGraphLaunch,
// aclmdlRICaptureGetInfo / cuStreamIsCapturing, and the calls the simulator has no counterpart
// for (device and context management, memory info, modules, error names).
//
// Variants (Variant): the full library; one without one named export (hidden by a linker version
// script); and the stub: CUDA's behaves as NVIDIA's stub library (every entry point but
// cuGetErrorName and cuGetErrorString returns CUDA_ERROR_STUB_LIBRARY, 34), ACL's as a library
// with no driver (aclInit succeeds; aclrtGetDeviceCount and every device call return
// ACL_ERROR_RT_NO_DEVICE, 207004, with a count of 0).
package fake
