// fake_cuda.c: a test double of the CUDA driver API (see fakecore.h). -DSTUB makes cuInit answer
// CUDA_ERROR_STUB_LIBRARY (34); -DOMIT_MEMSET leaves cuMemsetD8Async out. Kernel launches are
// checked against the PTX the module was loaded with and run on the host.
#define CODE_INVALIDATED 901
#define CODE_UNSAFE 900
#define CODE_BEGIN_DEFAULT 906
#define CODE_BEGIN_CAPTURING 401
#define CODE_NOT_CAPTURING 1
#define CODE_UNMATCHED 903
#define CODE_UNJOINED 904
#define CODE_WRONG_THREAD 908
#define CODE_SYNC_CAPTURING 900
#define CODE_EVENT_CAPTURED 907
#define INVALIDATES 1
#define WRONG_THREAD_ENDS 0
#include "fakecore.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static __thread void *current_ctx;
static int primary_ctx = 1;
static char *module_ptx;

CUresult cuInit(unsigned flags) {
	ENTER("cuInit");
#ifdef STUB
	(void)flags;
	return 34;
#else
	return flags == 0 ? 0 : 1;
#endif
}
CUresult cuGetErrorString(CUresult code, const char **s) {
	switch (code) {
	case 34:
		*s = "CUDA driver is a stub library";
		return 0;
	default:
		*s = errmsg;
		return 0;
	}
}
CUresult cuDriverGetVersion(int *v) {
	*v = 12040;
	return 0;
}
CUresult cuDeviceGetCount(int *n) {
	ENTER("cuDeviceGetCount");
	*n = 1;
	return 0;
}
CUresult cuDeviceGet(int *dev, int ordinal) {
	ENTER("cuDeviceGet");
	if (ordinal != 0) {
		return 101;
	}
	*dev = 0;
	return 0;
}
CUresult cuDeviceGetName(char *name, int len, int dev) {
	(void)dev;
	snprintf(name, (size_t)len, "NVIDIA H200");
	return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev) {
	(void)dev;
	*bytes = (size_t)141 << 30;
	return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
	ENTER("cuDevicePrimaryCtxRetain");
	(void)dev;
	*ctx = &primary_ctx;
	return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
	ENTER("cuDevicePrimaryCtxRelease_v2");
	(void)dev;
	return 0;
}
CUresult cuCtxSetCurrent(void *ctx) {
	ENTER("cuCtxSetCurrent");
	current_ctx = ctx;
	return 0;
}
// need_ctx fails a call made on a thread without the context current.
#define NEED_CTX(fn)                                                                                                   \
	do {                                                                                                               \
		ENTER(fn);                                                                                                     \
		if (current_ctx != &primary_ctx) {                                                                             \
			return fail(201, fn, "no current context");                                                                \
		}                                                                                                              \
	} while (0)

CUresult cuCtxSynchronize(void) {
	NEED_CTX("cuCtxSynchronize");
	return sync_device("cuCtxSynchronize");
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	NEED_CTX("cuMemAlloc_v2");
	if (n > ((size_t)1 << 40)) {
		return fail(2, "cuMemAlloc_v2", "out of memory");
	}
	*p = (CUdeviceptr)(uintptr_t)calloc(1, n);
	return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
	NEED_CTX("cuMemFree_v2");
	free((void *)(uintptr_t)p);
	return 0;
}
CUresult cuMemAllocHost_v2(void **p, size_t n) {
	NEED_CTX("cuMemAllocHost_v2");
	*p = calloc(1, n);
	return 0;
}
CUresult cuMemFreeHost(void *p) {
	NEED_CTX("cuMemFreeHost");
	free(p);
	return 0;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
	NEED_CTX("cuMemcpyHtoD_v2");
	return sync_copy((void *)(uintptr_t)dst, src, n, "cuMemcpyHtoD_v2");
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	NEED_CTX("cuMemcpyDtoH_v2");
	return sync_copy(dst, (const void *)(uintptr_t)src, n, "cuMemcpyDtoH_v2");
}
static CUresult copy_async(const char *fn, void *dst, const void *src, size_t n, void *stream) {
	op_t op = {.kind = OP_MEMCPY, .dst = dst, .src = src, .n = n};
	return enqueue(stream, op, fn);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void *stream) {
	NEED_CTX("cuMemcpyDtoDAsync_v2");
	return copy_async("cuMemcpyDtoDAsync_v2", (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, stream);
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *stream) {
	NEED_CTX("cuMemcpyHtoDAsync_v2");
	return copy_async("cuMemcpyHtoDAsync_v2", (void *)(uintptr_t)dst, src, n, stream);
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *stream) {
	NEED_CTX("cuMemcpyDtoHAsync_v2");
	return copy_async("cuMemcpyDtoHAsync_v2", dst, (const void *)(uintptr_t)src, n, stream);
}
#ifndef OMIT_MEMSET
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, void *stream) {
	NEED_CTX("cuMemsetD8Async");
	op_t op = {.kind = OP_MEMSET, .dst = (char *)(uintptr_t)dst, .n = n, .value = v};
	return enqueue(stream, op, "cuMemsetD8Async");
}
#endif
CUresult cuStreamCreate(void **s, unsigned flags) {
	NEED_CTX("cuStreamCreate");
	if (flags != 0) {
		return fail(1, "cuStreamCreate", "want a blocking stream");
	}
	*s = new_stream();
	return 0;
}
CUresult cuStreamDestroy_v2(void *s) {
	NEED_CTX("cuStreamDestroy_v2");
	free_stream(s);
	return 0;
}
CUresult cuStreamSynchronize(void *s) {
	NEED_CTX("cuStreamSynchronize");
	return sync_stream(s, "cuStreamSynchronize");
}
CUresult cuEventCreate(void **e, unsigned flags) {
	NEED_CTX("cuEventCreate");
	(void)flags;
	*e = new_event();
	return 0;
}
CUresult cuEventDestroy_v2(void *e) {
	NEED_CTX("cuEventDestroy_v2");
	free_event(e);
	return 0;
}
CUresult cuEventRecord(void *e, void *s) {
	NEED_CTX("cuEventRecord");
	return record(e, s);
}
CUresult cuStreamWaitEvent(void *s, void *e, unsigned flags) {
	NEED_CTX("cuStreamWaitEvent");
	(void)flags;
	return wait_event(s, e);
}
CUresult cuEventQuery(void *e) {
	NEED_CTX("cuEventQuery");
	return event_captured(e, "cuEventQuery");
}
CUresult cuEventSynchronize(void *e) {
	NEED_CTX("cuEventSynchronize");
	return event_captured(e, "cuEventSynchronize");
}
CUresult cuModuleLoadData(void **mod, const void *image) {
	NEED_CTX("cuModuleLoadData");
	if (strstr(image, ".entry replaycheck_axpy(") == NULL || strstr(image, ".version") == NULL) {
		return fail(218, "cuModuleLoadData", "not the axpy PTX");
	}
	free(module_ptx);
	module_ptx = strdup(image);
	*mod = module_ptx;
	return 0;
}
CUresult cuModuleUnload(void *mod) {
	NEED_CTX("cuModuleUnload");
	(void)mod;
	return 0;
}
CUresult cuModuleGetFunction(void **f, void *mod, const char *name) {
	NEED_CTX("cuModuleGetFunction");
	if (mod != module_ptx || strcmp(name, "replaycheck_axpy") != 0) {
		return fail(500, "cuModuleGetFunction", "no such function");
	}
	*f = module_ptx;
	return 0;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		unsigned shared, void *stream, void **params, void **extra) {
	NEED_CTX("cuLaunchKernel");
	if (f != module_ptx || params == NULL || extra != NULL || gy != 1 || gz != 1 || by != 1 || bz != 1 || shared != 0) {
		return fail(1, "cuLaunchKernel", "bad launch");
	}
	uint64_t y = *(uint64_t *)params[0], x = *(uint64_t *)params[1];
	uint32_t a = *(uint32_t *)params[2], n = *(uint32_t *)params[3];
	if ((uint64_t)gx * bx < n) {
		return fail(1, "cuLaunchKernel", "too few threads for the lanes");
	}
	op_t op = {.kind = OP_AXPY, .dst = (char *)(uintptr_t)y, .src = (const char *)(uintptr_t)x, .n = n, .a = a};
	return enqueue(stream, op, "cuLaunchKernel");
}
CUresult cuStreamBeginCapture_v2(void *s, int mode) {
	NEED_CTX("cuStreamBeginCapture_v2");
	return begin_capture(s, mode, "cuStreamBeginCapture_v2");
}
CUresult cuStreamEndCapture(void *s, void **graph) {
	NEED_CTX("cuStreamEndCapture");
	return end_capture(s, (graph_t **)graph, "cuStreamEndCapture");
}
CUresult cuStreamIsCapturing(void *s, int *status) {
	NEED_CTX("cuStreamIsCapturing");
	*status = capture_status(s);
	return 0;
}
CUresult cuThreadExchangeStreamCaptureMode(int *mode) {
	ENTER("cuThreadExchangeStreamCaptureMode");
	int old = thread_mode;
	thread_mode = *mode;
	*mode = old;
	return 0;
}
CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
	NEED_CTX("cuGraphInstantiateWithFlags");
	if (flags != 0) {
		return fail(1, "cuGraphInstantiateWithFlags", "flags");
	}
	*exec = graph;
	return 0;
}
CUresult cuGraphLaunch(void *exec, void *s) {
	NEED_CTX("cuGraphLaunch");
	(void)s;
	replay(exec);
	return 0;
}
CUresult cuGraphExecDestroy(void *exec) {
	NEED_CTX("cuGraphExecDestroy");
	(void)exec;
	return 0;
}
CUresult cuGraphDestroy(void *graph) {
	NEED_CTX("cuGraphDestroy");
	graph_t *g = graph;
	free(g->ops);
	free(g);
	return 0;
}
