/* drv.h: what the watch test programs know of the CUDA driver API and of ACL, without the SDKs'
 * headers, and how a program reaches the driver's entry points.
 *
 * A program defines RC_CUDA or RC_ACL, then includes this header first. RC_ATTACH (a -D switch)
 * says how the entry points are resolved, so one scenario is compiled several ways:
 *   RC_ATTACH_LINKED     direct symbols: the program is linked with -lcuda / -lascendcl;
 *   RC_ATTACH_DLOPEN     dlopen("libcuda.so.1" / "libascendcl.so") and dlsym of each symbol, as
 *                        torch_npu's FunctionLoader does;
 *   RC_ATTACH_GETPROC    dlsym("cuGetProcAddress_v2") and every entry point through it, by base
 *                        name and CUDA version, as the CUDA runtime does (CUDA only);
 *   RC_ATTACH_GETPROC_PTSZ  the same with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, so the
 *                        stream calls are the _ptsz ones and stream 0 is the calling thread's
 *                        per-thread default stream (CUDA only).
 * Every call goes through the table `cu` or `acl` (cu.MemAlloc(...)); helpers below fail the
 * program (exit 3, a line on stderr) on an unexpected error. */
#ifndef RC_PROGRAMS_DRV_H
#define RC_PROGRAMS_DRV_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RC_ATTACH_LINKED 1
#define RC_ATTACH_DLOPEN 2
#define RC_ATTACH_GETPROC 3
#define RC_ATTACH_GETPROC_PTSZ 4
#ifndef RC_ATTACH
#error "RC_ATTACH must name how the driver is reached (RC_ATTACH_LINKED, RC_ATTACH_DLOPEN, ...)"
#endif

/* The pool annotations, as a runtime uses them (the test compiles with -I include). */
#include "replaycheck/watch.h"

static inline void die(const char *what, long long code) {
	fprintf(stderr, "program: %s failed: %lld\n", what, code);
	exit(3);
}

/* CK fails the program unless call returns 0. */
#define CK(call)                                   \
	do {                                       \
		long long ck_ = (long long)(call); \
		if (ck_ != 0)                      \
			die(#call, ck_);           \
	} while (0)

#define RC_STR(x) #x

/* pick returns the index of argv[1] among the NULL-terminated names (the program's variants), or
 * exits 2 naming them. */
static inline int pick(int argc, char **argv, const char *const *names) {
	for (int i = 0; argc > 1 && names[i]; i++)
		if (strcmp(argv[1], names[i]) == 0)
			return i;
	fprintf(stderr, "usage: %s", argv[0]);
	for (int i = 0; names[i]; i++)
		fprintf(stderr, "%s%s", i ? "|" : " ", names[i]);
	fprintf(stderr, "\n");
	exit(2);
}

/* ------------------------------------------------------------------ CUDA */
#ifdef RC_CUDA

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUgraph;
typedef void *CUgraphExec;

#define CUDA_ERROR_INVALID_VALUE 1
#define CU_LAUNCH_PARAM_END ((void *)0x00)
#define CU_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define CU_LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)

typedef struct CUlaunchAttribute_st CUlaunchAttribute;
typedef struct {
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	CUstream hStream;
	CUlaunchAttribute *attrs;
	unsigned int numAttrs;
} CUlaunchConfig;
#define CU_STREAM_NON_BLOCKING 0x1
enum { CU_STREAM_CAPTURE_MODE_GLOBAL = 0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1, CU_STREAM_CAPTURE_MODE_RELAXED = 2 };
enum { CU_GET_PROC_ADDRESS_DEFAULT = 0, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 2 };

/* The CUDA version a runtime built against CUDA 12.4 asks entry points for. */
#define RC_CUDA_VERSION 12040

/* X(field, exported symbol, base name cuGetProcAddress is asked for, parameters) */
#define RC_CU_ENTRY_POINTS(X)                                                                            \
	X(Init, cuInit, cuInit, (unsigned int))                                                          \
	X(DeviceGet, cuDeviceGet, cuDeviceGet, (CUdevice *, int))                                        \
	X(PrimaryCtxRetain, cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice)) \
	X(CtxSetCurrent, cuCtxSetCurrent, cuCtxSetCurrent, (CUcontext))                                  \
	X(CtxSynchronize, cuCtxSynchronize, cuCtxSynchronize, (void))                                    \
	X(MemAlloc, cuMemAlloc_v2, cuMemAlloc, (CUdeviceptr *, size_t))                                  \
	X(MemFree, cuMemFree_v2, cuMemFree, (CUdeviceptr))                                               \
	X(MemAllocAsync, cuMemAllocAsync, cuMemAllocAsync, (CUdeviceptr *, size_t, CUstream))             \
	X(MemFreeAsync, cuMemFreeAsync, cuMemFreeAsync, (CUdeviceptr, CUstream))                         \
	X(MemcpyHtoD, cuMemcpyHtoD_v2, cuMemcpyHtoD, (CUdeviceptr, const void *, size_t))                \
	X(MemcpyDtoH, cuMemcpyDtoH_v2, cuMemcpyDtoH, (void *, CUdeviceptr, size_t))                      \
	X(MemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream)) \
	X(MemsetD8Async, cuMemsetD8Async, cuMemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream)) \
	X(StreamCreate, cuStreamCreate, cuStreamCreate, (CUstream *, unsigned int))                      \
	X(StreamSynchronize, cuStreamSynchronize, cuStreamSynchronize, (CUstream))                       \
	X(EventCreate, cuEventCreate, cuEventCreate, (CUevent *, unsigned int))                          \
	X(EventRecord, cuEventRecord, cuEventRecord, (CUevent, CUstream))                                \
	X(StreamWaitEvent, cuStreamWaitEvent, cuStreamWaitEvent, (CUstream, CUevent, unsigned int))      \
	X(ModuleLoadData, cuModuleLoadData, cuModuleLoadData, (CUmodule *, const void *))                \
	X(ModuleGetFunction, cuModuleGetFunction, cuModuleGetFunction, (CUfunction *, CUmodule, const char *)) \
	X(LaunchKernel, cuLaunchKernel, cuLaunchKernel,                                                  \
	  (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, \
	   unsigned int, CUstream, void **, void **))                                                    \
	X(LaunchKernelEx, cuLaunchKernelEx, cuLaunchKernelEx, (const CUlaunchConfig *, CUfunction, void **, void **)) \
	X(StreamBeginCapture, cuStreamBeginCapture_v2, cuStreamBeginCapture, (CUstream, int))            \
	X(StreamEndCapture, cuStreamEndCapture, cuStreamEndCapture, (CUstream, CUgraph *))               \
	X(ThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, (int *)) \
	X(GraphInstantiate, cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, (CUgraphExec *, CUgraph, unsigned long long)) \
	X(GraphLaunch, cuGraphLaunch, cuGraphLaunch, (CUgraphExec, CUstream))                            \
	X(GraphExecDestroy, cuGraphExecDestroy, cuGraphExecDestroy, (CUgraphExec))                       \
	X(GraphDestroy, cuGraphDestroy, cuGraphDestroy, (CUgraph))

#define RC_CU_FIELD(f, sym, base, params) CUresult(*f) params;
static struct {
	RC_CU_ENTRY_POINTS(RC_CU_FIELD)
} cu;
#undef RC_CU_FIELD

#if RC_ATTACH == RC_ATTACH_LINKED
#define RC_CU_DECLARE(f, sym, base, params) extern CUresult sym params;
RC_CU_ENTRY_POINTS(RC_CU_DECLARE)
#undef RC_CU_DECLARE
#endif

typedef CUresult (*rc_get_proc_v2)(const char *symbol, void **pfn, int cudaVersion, unsigned long long flags, int *symbolStatus);

/* cu_load fills the table the way RC_ATTACH says. */
static inline void cu_load(void) {
#if RC_ATTACH == RC_ATTACH_LINKED
#define RC_CU_SET(f, sym, base, params) cu.f = sym;
	RC_CU_ENTRY_POINTS(RC_CU_SET)
#undef RC_CU_SET
#elif RC_ATTACH == RC_ATTACH_DLOPEN
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *fp;
	if (!lib)
		die(dlerror(), 0);
#define RC_CU_SET(f, sym, base, params)      \
	if (!(fp = dlsym(lib, RC_STR(sym))))  \
		die("dlsym " RC_STR(sym), 0); \
	memcpy(&cu.f, &fp, sizeof fp);
	RC_CU_ENTRY_POINTS(RC_CU_SET)
#undef RC_CU_SET
#elif RC_ATTACH == RC_ATTACH_GETPROC || RC_ATTACH == RC_ATTACH_GETPROC_PTSZ
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *fp;
	if (!lib)
		die(dlerror(), 0);
	rc_get_proc_v2 get;
	if (!(fp = dlsym(lib, "cuGetProcAddress_v2")))
		die("dlsym cuGetProcAddress_v2", 0);
	memcpy(&get, &fp, sizeof fp);
#if RC_ATTACH == RC_ATTACH_GETPROC_PTSZ
	unsigned long long flags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
#else
	unsigned long long flags = CU_GET_PROC_ADDRESS_DEFAULT;
#endif
	int found;
#define RC_CU_SET(f, sym, base, params)                                   \
	found = -1;                                                        \
	fp = NULL;                                                         \
	CK(get(RC_STR(base), &fp, RC_CUDA_VERSION, flags, &found));        \
	if (!fp || found != 0)                                             \
		die("cuGetProcAddress_v2 " RC_STR(base), found);            \
	memcpy(&cu.f, &fp, sizeof fp);
	RC_CU_ENTRY_POINTS(RC_CU_SET)
#undef RC_CU_SET
#else
#error "RC_ATTACH: CUDA is reached linked, through dlopen, or through cuGetProcAddress_v2"
#endif
}

/* cu_open loads the driver and makes device 0's primary context current on this thread; other
 * threads make the context it returns current. */
static inline CUcontext cu_open(void) {
	cu_load();
	CUdevice dev;
	CUcontext ctx;
	CK(cu.Init(0));
	CK(cu.DeviceGet(&dev, 0));
	CK(cu.PrimaryCtxRetain(&ctx, dev));
	CK(cu.CtxSetCurrent(ctx));
	return ctx;
}

/* cu_stream is a non-blocking stream, as PyTorch captures on: legacy-stream work elsewhere does
 * not join its capture. */
static inline CUstream cu_stream(void) {
	CUstream s;
	CK(cu.StreamCreate(&s, CU_STREAM_NON_BLOCKING));
	return s;
}

static inline CUdeviceptr cu_alloc(size_t n) {
	CUdeviceptr p;
	CK(cu.MemAlloc(&p, n));
	return p;
}

/* cu_fill writes n bytes of value at p and waits. */
static inline void cu_fill(CUdeviceptr p, unsigned char value, size_t n) {
	unsigned char *h = malloc(n);
	if (!h)
		die("malloc", 0);
	memset(h, value, n);
	CK(cu.MemcpyHtoD(p, h, n));
	free(h);
}

/* cu_holds says whether all n bytes at p are value (after the device settled). */
static inline int cu_holds(CUdeviceptr p, unsigned char value, size_t n) {
	unsigned char *h = malloc(n);
	if (!h)
		die("malloc", 0);
	CK(cu.CtxSynchronize());
	CK(cu.MemcpyDtoH(h, p, n));
	int all = 1;
	for (size_t i = 0; i < n; i++)
		all &= h[i] == value;
	free(h);
	return all;
}

/* cu_graph is a captured graph and its executable graph. */
typedef struct {
	CUgraph g;
	CUgraphExec x;
} cu_graph;

/* cu_end ends the capture on s and instantiates its graph, as PyTorch does. */
static inline cu_graph cu_end(CUstream s) {
	cu_graph g;
	CK(cu.StreamEndCapture(s, &g.g));
	CK(cu.GraphInstantiate(&g.x, g.g, 0));
	return g;
}

/* cu_drop destroys both graphs: after it, freeing what they named is no hazard. */
static inline void cu_drop(cu_graph g) {
	CK(cu.GraphExecDestroy(g.x));
	CK(cu.GraphDestroy(g.g));
}

/* cu_launch_stream is where a program launches a graph it captured on s: s itself, or with the
 * per-thread default stream entry points, stream 0 (the calling thread's own default stream). */
static inline CUstream cu_launch_stream(CUstream s) {
#if RC_ATTACH == RC_ATTACH_GETPROC_PTSZ
	(void)s;
	return NULL;
#else
	return s;
#endif
}

#endif /* RC_CUDA */

/* ------------------------------------------------------------------ ACL */
#ifdef RC_ACL

typedef int aclError;
typedef void *aclrtStream;
typedef void *aclmdlRI;
typedef void *aclrtBinHandle;
typedef void *aclrtFuncHandle;

#define ACL_ERROR_INVALID_PARAM 100000
/* What the fake answers a replay over memory freed since capture (cann profile, after
 * vllm-ascend's reports): the launch fails, the program goes on. */
#define ACL_ERROR_RT_MODEL_EXECUTE 507011
enum { ACL_MEMCPY_HOST_TO_DEVICE = 1, ACL_MEMCPY_DEVICE_TO_HOST = 2, ACL_MEMCPY_DEVICE_TO_DEVICE = 3 };
enum { ACL_MEM_MALLOC_HUGE_FIRST = 0 };
enum { ACL_MODEL_RI_CAPTURE_MODE_GLOBAL = 0, ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL = 1, ACL_MODEL_RI_CAPTURE_MODE_RELAXED = 2 };

#define RC_ACL_ENTRY_POINTS(X)                                                                       \
	X(Init, aclInit, (const char *))                                                             \
	X(SetDevice, aclrtSetDevice, (int32_t))                                                      \
	X(CreateStream, aclrtCreateStream, (aclrtStream *))                                          \
	X(SynchronizeStream, aclrtSynchronizeStream, (aclrtStream))                                  \
	X(SynchronizeDevice, aclrtSynchronizeDevice, (void))                                         \
	X(Malloc, aclrtMalloc, (void **, size_t, int))                                               \
	X(Free, aclrtFree, (void *))                                                                 \
	X(Memcpy, aclrtMemcpy, (void *, size_t, const void *, size_t, int))                          \
	X(MemcpyAsync, aclrtMemcpyAsync, (void *, size_t, const void *, size_t, int, aclrtStream))   \
	X(MemsetAsync, aclrtMemsetAsync, (void *, size_t, int32_t, size_t, aclrtStream))             \
	X(CaptureBegin, aclmdlRICaptureBegin, (aclrtStream, int))                                    \
	X(CaptureEnd, aclmdlRICaptureEnd, (aclrtStream, aclmdlRI *))                                 \
	X(CaptureThreadExchangeMode, aclmdlRICaptureThreadExchangeMode, (int *))                     \
	X(ExecuteAsync, aclmdlRIExecuteAsync, (aclmdlRI, aclrtStream))                               \
	X(RIDestroy, aclmdlRIDestroy, (aclmdlRI))                                                    \
	X(BinaryLoadFromData, aclrtBinaryLoadFromData, (const void *, size_t, const void *, aclrtBinHandle *)) \
	X(BinaryGetFunction, aclrtBinaryGetFunction, (aclrtBinHandle, const char *, aclrtFuncHandle *)) \
	X(LaunchKernel, aclrtLaunchKernel, (aclrtFuncHandle, uint32_t, const void *, size_t, aclrtStream))

#define RC_ACL_FIELD(f, sym, params) aclError(*f) params;
static struct {
	RC_ACL_ENTRY_POINTS(RC_ACL_FIELD)
} acl;
#undef RC_ACL_FIELD

#if RC_ATTACH == RC_ATTACH_LINKED
#define RC_ACL_DECLARE(f, sym, params) extern aclError sym params;
RC_ACL_ENTRY_POINTS(RC_ACL_DECLARE)
#undef RC_ACL_DECLARE
#endif

static inline void acl_load(void) {
#if RC_ATTACH == RC_ATTACH_LINKED
#define RC_ACL_SET(f, sym, params) acl.f = sym;
	RC_ACL_ENTRY_POINTS(RC_ACL_SET)
#undef RC_ACL_SET
#elif RC_ATTACH == RC_ATTACH_DLOPEN
	void *lib = dlopen("libascendcl.so", RTLD_NOW | RTLD_LOCAL), *fp;
	if (!lib)
		die(dlerror(), 0);
#define RC_ACL_SET(f, sym, params)            \
	if (!(fp = dlsym(lib, RC_STR(sym))))  \
		die("dlsym " RC_STR(sym), 0); \
	memcpy(&acl.f, &fp, sizeof fp);
	RC_ACL_ENTRY_POINTS(RC_ACL_SET)
#undef RC_ACL_SET
#else
#error "RC_ATTACH: ACL is reached linked or through dlopen"
#endif
}

static inline void acl_open(void) {
	acl_load();
	CK(acl.Init(NULL));
	CK(acl.SetDevice(0));
}

static inline aclrtStream acl_stream(void) {
	aclrtStream s;
	CK(acl.CreateStream(&s));
	return s;
}

static inline void *acl_alloc(size_t n) {
	void *p;
	CK(acl.Malloc(&p, n, ACL_MEM_MALLOC_HUGE_FIRST));
	return p;
}

static inline void acl_fill(void *p, unsigned char value, size_t n) {
	unsigned char *h = malloc(n);
	if (!h)
		die("malloc", 0);
	memset(h, value, n);
	CK(acl.Memcpy(p, n, h, n, ACL_MEMCPY_HOST_TO_DEVICE));
	free(h);
}

static inline int acl_holds(void *p, unsigned char value, size_t n) {
	unsigned char *h = malloc(n);
	if (!h)
		die("malloc", 0);
	CK(acl.SynchronizeDevice());
	CK(acl.Memcpy(h, n, p, n, ACL_MEMCPY_DEVICE_TO_HOST));
	int all = 1;
	for (size_t i = 0; i < n; i++)
		all &= h[i] == value;
	free(h);
	return all;
}

/* acl_launched says whether a replay's status is one a scenario expects: done, refused by
 * --refuse, or failed by the driver over freed memory. */
static inline int acl_launched(int rc) { return rc == 0 || rc == ACL_ERROR_INVALID_PARAM || rc == ACL_ERROR_RT_MODEL_EXECUTE; }

/* acl_end ends the capture on s: on Ascend the model RI is both the graph and the executable. */
static inline aclmdlRI acl_end(aclrtStream s) {
	aclmdlRI ri;
	CK(acl.CaptureEnd(s, &ri));
	return ri;
}

#endif /* RC_ACL */

#endif /* RC_PROGRAMS_DRV_H */
