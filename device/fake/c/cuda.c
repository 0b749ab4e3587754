/* cuda.c: the CUDA driver API front end of the fake libcuda.so.1, over the device model in core.c.
 *
 * Types as the driver API declares them on 64-bit Linux: CUresult, CUdevice and every enum are
 * int, CUdeviceptr is unsigned long long, every other handle is a pointer. Stream, event, graph
 * and executable-graph handles are the core's numbers cast to pointers (never dereferenced); the
 * legacy default stream is NULL. A primary context is RC_CU_CTX_TAG + device; a graph node is
 * (graph << 20) | (index + 1).
 *
 * The one kernel: cuModuleLoadData accepts NUL-terminated PTX text (it must contain ".version"
 * and ".entry"); cuModuleGetFunction finds "replaycheck_axpy" in a module whose text names it.
 * cuLaunchKernel of it takes kernelParams {CUdeviceptr *y, CUdeviceptr *x, unsigned int *a,
 * unsigned int *n} and computes y[i] = a*x[i] + y[i] over the little-endian uint32 lanes i < n
 * that the launch has a thread for, i = blockIdx.x * blockDim.x + threadIdx.x, as the bindings'
 * PTX (device/cuda AxpyPTX) does: one thread per lane, so a grid too small leaves lanes as they
 * were. The y and z dimensions add no lane. extra must be NULL.
 *
 * Built with -DRC_STUB it behaves as NVIDIA's stub library: every entry point but cuGetErrorName
 * and cuGetErrorString returns CUDA_ERROR_STUB_LIBRARY (34). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

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
typedef void *CUgraphNode;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_STUB_LIBRARY 34
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_PTX 218
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_NOT_FOUND 500

/* cuStreamCreate's flags: the default stream kind (0) synchronises with the legacy stream. */
#define CU_STREAM_NON_BLOCKING 0x1

/* Graph introspection as NVIDIA's cuda.h declares it (matched against CUDA 12.6's, CUDA_VERSION
 * 12060): CUgraphNodeType and CUmemorytype are int enums, CUDA_MEMSET_NODE_PARAMS is
 * CUDA_MEMSET_NODE_PARAMS_v1 (width counts elements of elementSize bytes) and CUDA_MEMCPY3D is
 * CUDA_MEMCPY3D_v2, field for field. The fake's graphs hold only the three kinds of work node:
 * stream capture turns an event record and wait inside one capture into edges. */
enum { CU_GRAPH_NODE_TYPE_KERNEL = 0, CU_GRAPH_NODE_TYPE_MEMCPY = 1, CU_GRAPH_NODE_TYPE_MEMSET = 2 };
enum { CU_MEMORYTYPE_HOST = 1, CU_MEMORYTYPE_DEVICE = 2 };

typedef struct CUDA_MEMSET_NODE_PARAMS_st {
	CUdeviceptr dst;
	size_t pitch;
	unsigned int value;
	unsigned int elementSize;
	size_t width;
	size_t height;
} CUDA_MEMSET_NODE_PARAMS;

typedef struct CUDA_MEMCPY3D_st {
	size_t srcXInBytes;
	size_t srcY;
	size_t srcZ;
	size_t srcLOD;
	int srcMemoryType;
	const void *srcHost;
	CUdeviceptr srcDevice;
	void *srcArray;
	void *reserved0;
	size_t srcPitch;
	size_t srcHeight;

	size_t dstXInBytes;
	size_t dstY;
	size_t dstZ;
	size_t dstLOD;
	int dstMemoryType;
	void *dstHost;
	CUdeviceptr dstDevice;
	void *dstArray;
	void *reserved1;
	size_t dstPitch;
	size_t dstHeight;

	size_t WidthInBytes;
	size_t Height;
	size_t Depth;
} CUDA_MEMCPY3D;

_Static_assert(sizeof(CUDA_MEMSET_NODE_PARAMS) == 40, "CUDA_MEMSET_NODE_PARAMS is 40 bytes on LP64");
_Static_assert(sizeof(CUDA_MEMCPY3D) == 200, "CUDA_MEMCPY3D is 200 bytes on LP64");

#define RC_CU_DRIVER_VERSION 12040
#define RC_CU_CTX_TAG 0xc0c0c000ull
#define RC_AXPY_NAME "replaycheck_axpy"
#define RC_AXPY_FUNC ((CUfunction)(uintptr_t)0xa8a8a000ull)
#define MAX_MODULES 64

#ifndef RC_STUB
static int initialized;
#endif
/* Loaded modules: whether each holds the axpy kernel; the handle is index + 1 tagged. */
static int module_live[MAX_MODULES], module_axpy[MAX_MODULES];
#define RC_MODULE_TAG 0x30d0000ull

typedef struct {
	const char *entry;
	rc_device *d;
	int locked;
} cu_call;

#define H(p) ((uint64_t)(uintptr_t)(p))
#define P(h) ((void *)(uintptr_t)(h))

/* begin_lib enters an entry point that needs cuInit; begin also needs a current context and
 * settles launched graph work first when settle is set (every call but a launch and a
 * capture-state question). begin_args is begin for an entry point whose arguments the call log
 * records (rc_enter_args). */
static int begin_lib_args(cu_call *c, const char *entry, const char *args) {
	int err = rc_enter_args(entry, args);
	c->entry = entry;
	c->d = NULL;
	c->locked = 0;
	if (err)
		return err; /* injected (REPLAYCHECK_FAKE_FAIL) */
#ifdef RC_STUB
	rc_set_detail("%s: CUDA driver is a stub library (fake)", entry);
	return CUDA_ERROR_STUB_LIBRARY;
#else
	rc_lock();
	c->locked = 1;
	if (!initialized) {
		rc_set_detail("%s: cuInit has not been called", entry);
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	return 0;
#endif
}

static int begin_lib(cu_call *c, const char *entry) { return begin_lib_args(c, entry, NULL); }

static int begin_args(cu_call *c, const char *entry, const char *args, int settle) {
	int err = begin_lib_args(c, entry, args);
	if (err)
		return err;
	c->d = rc_current();
	if (!c->d) {
		rc_set_detail("%s: no current context on this thread", entry);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	if ((err = rc_lost(c->d, entry)))
		return err;
	if (settle)
		rc_settle(c->d);
	return 0;
}

static int begin(cu_call *c, const char *entry, int settle) { return begin_args(c, entry, NULL, settle); }

static CUresult end(cu_call *c, int err) {
	if (c->locked)
		rc_unlock();
	rc_log_result(c->entry, err);
	return err;
}

static int null_arg(const char *what) { return rc_fail("invalid-value", "%s is NULL", what); }

static int check_device(CUdevice dev) {
	if (dev < 0 || dev >= rc_device_count()) {
		rc_set_detail("device %d out of range: the fake has %d device(s)", dev, rc_device_count());
		return CUDA_ERROR_INVALID_DEVICE;
	}
	return 0;
}

RC_API CUresult cuInit(unsigned int flags) {
	cu_call c;
	c.entry = "cuInit";
	c.locked = 0;
	int err = rc_enter("cuInit");
	if (err)
		return end(&c, err);
#ifdef RC_STUB
	(void)flags;
	rc_set_detail("cuInit: CUDA driver is a stub library (fake)");
	return end(&c, CUDA_ERROR_STUB_LIBRARY);
#else
	if (flags != 0)
		return end(&c, rc_fail("invalid-value", "cuInit flags must be 0, not %u", flags));
	rc_lock();
	c.locked = 1;
	initialized = 1;
	return end(&c, 0);
#endif
}

static int driver_version(int *version) {
#ifdef RC_STUB
	(void)version;
	rc_set_detail("cuDriverGetVersion: CUDA driver is a stub library (fake)");
	return CUDA_ERROR_STUB_LIBRARY;
#else
	if (!version)
		return null_arg("version");
	*version = RC_CU_DRIVER_VERSION;
	return CUDA_SUCCESS;
#endif
}

RC_API CUresult cuDriverGetVersion(int *version) {
	cu_call c = {.entry = "cuDriverGetVersion"};
	int err = rc_enter(c.entry);
	if (!err)
		err = driver_version(version);
	return end(&c, err);
}

RC_API CUresult cuDeviceGetCount(int *count) {
	cu_call c;
	int err = begin_lib(&c, "cuDeviceGetCount");
	if (!err && !count)
		err = null_arg("count");
	if (!err)
		*count = rc_device_count();
	return end(&c, err);
}

RC_API CUresult cuDeviceGet(CUdevice *device, int ordinal) {
	cu_call c;
	int err = begin_lib(&c, "cuDeviceGet");
	if (!err && !device)
		err = null_arg("device");
	if (!err && !(err = check_device(ordinal)))
		*device = ordinal;
	return end(&c, err);
}

RC_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
	cu_call c;
	int err = begin_lib(&c, "cuDeviceGetName");
	if (!err && (!name || len <= 0))
		err = null_arg("name");
	if (!err && !(err = check_device(dev)))
		snprintf(name, (size_t)len, "replaycheck fake");
	return end(&c, err);
}

RC_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
	cu_call c;
	int err = begin_lib(&c, "cuDeviceTotalMem_v2");
	if (!err && !bytes)
		err = null_arg("bytes");
	if (!err && !(err = check_device(dev)))
		*bytes = (size_t)rc_memory_size();
	return end(&c, err);
}

RC_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
	cu_call c;
	int err = begin_lib(&c, "cuDevicePrimaryCtxRetain");
	if (!err && !pctx)
		err = null_arg("pctx");
	if (!err && !(err = check_device(dev)) && !(err = rc_device_retain(dev)))
		*pctx = P(RC_CU_CTX_TAG + (uint64_t)dev);
	return end(&c, err);
}

static CUresult primary_release(const char *entry, CUdevice dev) {
	cu_call c;
	int err = begin_lib(&c, entry);
	if (!err && !(err = check_device(dev))) {
		if (!rc_device_at(dev)) {
			rc_set_detail("%s: the primary context of device %d is not retained", entry, dev);
			err = CUDA_ERROR_INVALID_CONTEXT;
		} else {
			err = rc_device_release(dev);
		}
	}
	return end(&c, err);
}

RC_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return primary_release("cuDevicePrimaryCtxRelease", dev); }
RC_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) { return primary_release("cuDevicePrimaryCtxRelease_v2", dev); }

RC_API CUresult cuCtxSetCurrent(CUcontext ctx) {
	cu_call c;
	int err = begin_lib(&c, "cuCtxSetCurrent");
	if (!err) {
		if (!ctx) {
			rc_set_current(-1);
		} else {
			uint64_t h = H(ctx);
			int dev = (int)(h - RC_CU_CTX_TAG);
			if (h < RC_CU_CTX_TAG || dev >= rc_device_count() || !rc_device_at(dev)) {
				rc_set_detail("cuCtxSetCurrent: %p is not a retained primary context", ctx);
				err = CUDA_ERROR_INVALID_CONTEXT;
			} else {
				rc_set_current(dev);
			}
		}
	}
	return end(&c, err);
}

RC_API CUresult cuCtxSynchronize(void) {
	cu_call c;
	int err = begin(&c, "cuCtxSynchronize", 1);
	if (!err)
		err = rc_sync_device(c.d);
	return end(&c, err);
}

RC_API CUresult cuMemGetInfo_v2(size_t *freeBytes, size_t *total) {
	cu_call c;
	int err = begin(&c, "cuMemGetInfo_v2", 0);
	if (!err)
		rc_mem_info(c.d, freeBytes, total);
	return end(&c, err);
}

RC_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) {
	cu_call c;
	int err = begin(&c, "cuMemAlloc_v2", 1);
	uint64_t a;
	if (!err && !dptr)
		err = null_arg("dptr");
	if (!err && !(err = rc_malloc(c.d, bytes, &a)))
		*dptr = a;
	return end(&c, err);
}

RC_API CUresult cuMemFree_v2(CUdeviceptr dptr) {
	cu_call c;
	int err = begin(&c, "cuMemFree_v2", 1);
	if (!err)
		err = rc_free(c.d, dptr);
	return end(&c, err);
}

RC_API CUresult cuMemAllocHost_v2(void **pp, size_t bytes) {
	cu_call c;
	int err = begin(&c, "cuMemAllocHost_v2", 1);
	uint64_t a;
	if (!err && !pp)
		err = null_arg("pp");
	if (!err && !(err = rc_alloc_host(c.d, bytes, &a)))
		*pp = P(a);
	return end(&c, err);
}

RC_API CUresult cuMemFreeHost(void *p) {
	cu_call c;
	int err = begin(&c, "cuMemFreeHost", 1);
	if (!err)
		err = rc_free_host(c.d, H(p));
	return end(&c, err);
}

RC_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
	cu_call c;
	int err = begin(&c, "cuMemcpyHtoD_v2", 1);
	if (!err)
		err = rc_write(c.d, dst, src, n);
	return end(&c, err);
}

RC_API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	cu_call c;
	int err = begin(&c, "cuMemcpyDtoH_v2", 1);
	if (!err)
		err = rc_read(c.d, dst, src, n);
	return end(&c, err);
}

RC_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) {
	cu_call c;
	int err = begin(&c, "cuMemcpyDtoDAsync_v2", 1);
	if (!err)
		err = rc_copy(c.d, H(stream), dst, src, n, RC_D2D);
	return end(&c, err);
}

RC_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream stream) {
	cu_call c;
	int err = begin(&c, "cuMemcpyHtoDAsync_v2", 1);
	if (!err)
		err = rc_copy(c.d, H(stream), dst, H(src), n, RC_H2D);
	return end(&c, err);
}

RC_API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream stream) {
	cu_call c;
	int err = begin(&c, "cuMemcpyDtoHAsync_v2", 1);
	if (!err)
		err = rc_copy(c.d, H(stream), H(dst), src, n, RC_D2H);
	return end(&c, err);
}

RC_API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream stream) {
	cu_call c;
	int err = begin(&c, "cuMemsetD8Async", 1);
	if (!err)
		err = rc_fill(c.d, H(stream), dst, n, value);
	return end(&c, err);
}

/* flags: 0 (CU_STREAM_DEFAULT), a blocking stream the legacy stream synchronises with, or
 * CU_STREAM_NON_BLOCKING; any other bit is CUDA_ERROR_INVALID_VALUE, as the driver answers. The log
 * records them ("cuStreamCreate flags=1"). */
RC_API CUresult cuStreamCreate(CUstream *stream, unsigned int flags) {
	cu_call c;
	char args[32];
	snprintf(args, sizeof args, "flags=%u", flags);
	int err = begin_args(&c, "cuStreamCreate", args, 1);
	uint64_t h;
	if (!err && !stream)
		err = null_arg("stream");
	if (!err && (flags & ~(unsigned int)CU_STREAM_NON_BLOCKING))
		err = rc_fail("invalid-value", "cuStreamCreate: unknown flags %#x (CU_STREAM_DEFAULT 0 or CU_STREAM_NON_BLOCKING 1)", flags);
	if (!err && !(err = rc_create_stream(c.d, (flags & CU_STREAM_NON_BLOCKING) != 0, &h)))
		*stream = P(h);
	return end(&c, err);
}

RC_API CUresult cuStreamDestroy_v2(CUstream stream) {
	cu_call c;
	int err = begin(&c, "cuStreamDestroy_v2", 1);
	if (!err)
		err = rc_destroy_stream(c.d, H(stream));
	return end(&c, err);
}

RC_API CUresult cuStreamSynchronize(CUstream stream) {
	cu_call c;
	int err = begin(&c, "cuStreamSynchronize", 1);
	if (!err)
		err = rc_sync_stream(c.d, H(stream));
	return end(&c, err);
}

RC_API CUresult cuEventCreate(CUevent *event, unsigned int flags) {
	(void)flags;
	cu_call c;
	int err = begin(&c, "cuEventCreate", 1);
	uint64_t h;
	if (!err && !event)
		err = null_arg("event");
	if (!err && !(err = rc_create_event(c.d, &h)))
		*event = P(h);
	return end(&c, err);
}

RC_API CUresult cuEventDestroy_v2(CUevent event) {
	cu_call c;
	int err = begin(&c, "cuEventDestroy_v2", 1);
	if (!err)
		err = rc_destroy_event(c.d, H(event));
	return end(&c, err);
}

RC_API CUresult cuEventRecord(CUevent event, CUstream stream) {
	cu_call c;
	int err = begin(&c, "cuEventRecord", 1);
	if (!err)
		err = rc_record(c.d, H(event), H(stream));
	return end(&c, err);
}

RC_API CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
	(void)flags;
	cu_call c;
	int err = begin(&c, "cuStreamWaitEvent", 1);
	if (!err)
		err = rc_wait(c.d, H(stream), H(event));
	return end(&c, err);
}

/* Work runs at enqueue, so a recorded event is always complete: never CUDA_ERROR_NOT_READY. */
RC_API CUresult cuEventQuery(CUevent event) {
	cu_call c;
	int err = begin(&c, "cuEventQuery", 1);
	if (!err)
		err = rc_query_event(c.d, H(event));
	return end(&c, err);
}

RC_API CUresult cuEventSynchronize(CUevent event) {
	cu_call c;
	int err = begin(&c, "cuEventSynchronize", 1);
	if (!err)
		err = rc_sync_event(c.d, H(event));
	return end(&c, err);
}

RC_API CUresult cuModuleLoadData(CUmodule *module, const void *image) {
	cu_call c;
	int err = begin(&c, "cuModuleLoadData", 0);
	if (!err && (!module || !image))
		err = null_arg(module ? "image" : "module");
	if (!err) {
		const char *text = image;
		if (!strstr(text, ".version") || !strstr(text, ".entry")) {
			rc_set_detail("cuModuleLoadData: the image is not PTX text (no .version or .entry)");
			err = CUDA_ERROR_INVALID_PTX;
		} else {
			int i = 0;
			while (i < MAX_MODULES && module_live[i])
				i++;
			if (i == MAX_MODULES) {
				err = rc_fail("out-of-memory", "cuModuleLoadData: %d modules are loaded", MAX_MODULES);
			} else {
				module_live[i] = 1;
				module_axpy[i] = strstr(text, RC_AXPY_NAME) != NULL;
				*module = P(RC_MODULE_TAG + (uint64_t)i + 1);
			}
		}
	}
	return end(&c, err);
}

static int module_index(CUmodule m) {
	uint64_t h = H(m);
	if (h <= RC_MODULE_TAG || h > RC_MODULE_TAG + MAX_MODULES || !module_live[h - RC_MODULE_TAG - 1])
		return -1;
	return (int)(h - RC_MODULE_TAG - 1);
}

RC_API CUresult cuModuleUnload(CUmodule module) {
	cu_call c;
	int err = begin(&c, "cuModuleUnload", 0);
	int i = module_index(module);
	if (!err && i < 0) {
		rc_set_detail("cuModuleUnload: %p is not a loaded module", module);
		err = CUDA_ERROR_INVALID_HANDLE;
	}
	if (!err)
		module_live[i] = 0;
	return end(&c, err);
}

RC_API CUresult cuModuleGetFunction(CUfunction *fn, CUmodule module, const char *name) {
	cu_call c;
	int err = begin(&c, "cuModuleGetFunction", 0);
	int i = module_index(module);
	if (!err && (!fn || !name))
		err = null_arg(fn ? "name" : "fn");
	if (!err && i < 0) {
		rc_set_detail("cuModuleGetFunction: %p is not a loaded module", module);
		err = CUDA_ERROR_INVALID_HANDLE;
	}
	if (!err) {
		if (strcmp(name, RC_AXPY_NAME) != 0 || !module_axpy[i]) {
			rc_set_detail("cuModuleGetFunction: no kernel %s in the module (the fake knows " RC_AXPY_NAME ")", name);
			err = CUDA_ERROR_NOT_FOUND;
		} else {
			*fn = RC_AXPY_FUNC;
		}
	}
	return end(&c, err);
}

RC_API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
			       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
			       unsigned int sharedMemBytes, CUstream stream, void **kernelParams, void **extra) {
	(void)sharedMemBytes;
	cu_call c;
	int err = begin(&c, "cuLaunchKernel", 1);
	if (!err && f != RC_AXPY_FUNC) {
		rc_set_detail("cuLaunchKernel: %p is not a function of a loaded module", f);
		err = CUDA_ERROR_INVALID_HANDLE;
	}
	if (!err && (!kernelParams || extra || !kernelParams[0] || !kernelParams[1] || !kernelParams[2] || !kernelParams[3]))
		err = rc_fail("invalid-value", "cuLaunchKernel: " RC_AXPY_NAME " takes kernelParams {&y, &x, &a, &n} and no extra");
	if (!err && (!gridDimX || !gridDimY || !gridDimZ || !blockDimX || !blockDimY || !blockDimZ))
		err = rc_fail("invalid-value", "cuLaunchKernel: a grid or block dimension is 0");
	if (!err) {
		CUdeviceptr y = *(CUdeviceptr *)kernelParams[0], x = *(CUdeviceptr *)kernelParams[1];
		unsigned int a = *(unsigned int *)kernelParams[2], n = *(unsigned int *)kernelParams[3];
		uint64_t threads = (uint64_t)gridDimX * blockDimX;
		err = rc_axpy(c.d, H(stream), y, x, threads < n ? threads : n, a);
	}
	return end(&c, err);
}

RC_API CUresult cuThreadExchangeStreamCaptureMode(int *mode) {
	cu_call c;
	int err = begin(&c, "cuThreadExchangeStreamCaptureMode", 1);
	int old;
	if (!err && !mode)
		err = null_arg("mode");
	if (!err && !(err = rc_exchange_mode(c.d, *mode, &old)))
		*mode = old;
	return end(&c, err);
}

RC_API CUresult cuStreamBeginCapture_v2(CUstream stream, int mode) {
	cu_call c;
	int err = begin(&c, "cuStreamBeginCapture_v2", 1);
	if (!err)
		err = rc_begin_capture(c.d, H(stream), mode);
	return end(&c, err);
}

RC_API CUresult cuStreamEndCapture(CUstream stream, CUgraph *graph) {
	cu_call c;
	int err = begin(&c, "cuStreamEndCapture", 1);
	uint64_t g;
	if (!err && !graph)
		err = null_arg("graph");
	if (!err) {
		*graph = NULL;
		if (!(err = rc_end_capture(c.d, H(stream), 0, &g)))
			*graph = P(g);
	}
	return end(&c, err);
}

RC_API CUresult cuStreamIsCapturing(CUstream stream, int *status) {
	cu_call c;
	int err = begin(&c, "cuStreamIsCapturing", 0);
	int st, mode;
	uint64_t id, origin;
	if (!err && !status)
		err = null_arg("status");
	if (!err && !(err = rc_capture_info(c.d, H(stream), &st, &id, &origin, &mode)))
		*status = st;
	return end(&c, err);
}

/* The executable graph is a copy of the graph's nodes: destroying the graph leaves it usable. The
 * instantiation is an unsafe call: the profile's instantiation rules (EndCapture's rules on the
 * other captures in progress) answer here, not in cuStreamEndCapture, as the driver does. */
RC_API CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags) {
	(void)flags;
	cu_call c;
	int err = begin(&c, "cuGraphInstantiateWithFlags", 1);
	uint64_t h;
	if (!err && !exec)
		err = null_arg("exec");
	if (!err && !(err = rc_instantiate(c.d, H(graph), &h)))
		*exec = P(h);
	return end(&c, err);
}

RC_API CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
	cu_call c;
	int err = begin(&c, "cuGraphLaunch", 0);
	if (!err)
		err = rc_launch(c.d, H(exec), H(stream), 1);
	return end(&c, err);
}

RC_API CUresult cuGraphGetNodes(CUgraph graph, CUgraphNode *nodes, size_t *num) {
	cu_call c;
	int err = begin(&c, "cuGraphGetNodes", 1);
	size_t n;
	if (!err && !num)
		err = null_arg("numNodes");
	/* As cuda.h documents it: with nodes, *num entries are filled in, those past the graph's
	 * nodes set to NULL, and *num becomes the number of nodes obtained. */
	if (!err && !(err = rc_graph_nodes(c.d, H(graph), &n))) {
		if (nodes) {
			for (size_t i = 0; i < *num; i++)
				nodes[i] = i < n ? P((H(graph) << 20) | (i + 1)) : NULL;
			if (n > *num)
				n = *num;
		}
		*num = n;
	}
	return end(&c, err);
}

/* node_info decodes a node handle, (graph << 20) | (index + 1), and fetches what the node does. */
static int node_info(cu_call *c, CUgraphNode node, void *out, const char *what, rc_node_info *info) {
	uint64_t h = H(node);
	if (!out)
		return null_arg(what);
	if ((h & 0xfffff) == 0)
		return rc_fail("invalid-value", "%s: %p is not a graph node", c->entry, node);
	return rc_graph_node_info(c->d, h >> 20, (h & 0xfffff) - 1, info);
}

RC_API CUresult cuGraphNodeGetType(CUgraphNode node, int *type) {
	cu_call c;
	int err = begin(&c, "cuGraphNodeGetType", 1);
	rc_node_info info;
	if (!err && !(err = node_info(&c, node, type, "type", &info)))
		*type = info.kind == RC_KERNEL ? CU_GRAPH_NODE_TYPE_KERNEL
			: info.kind == RC_MEMCPY ? CU_GRAPH_NODE_TYPE_MEMCPY
						 : CU_GRAPH_NODE_TYPE_MEMSET;
	return end(&c, err);
}

/* A captured cuMemsetD8Async: one row of width bytes, elementSize 1; pitch is 0 (unused when
 * height is 1). */
RC_API CUresult cuGraphMemsetNodeGetParams(CUgraphNode node, CUDA_MEMSET_NODE_PARAMS *params) {
	cu_call c;
	int err = begin(&c, "cuGraphMemsetNodeGetParams", 1);
	rc_node_info info;
	if (!err && !(err = node_info(&c, node, params, "nodeParams", &info)) && info.kind != RC_MEMSET)
		err = rc_fail("invalid-value", "cuGraphMemsetNodeGetParams: %p is not a memset node", node);
	if (!err)
		*params = (CUDA_MEMSET_NODE_PARAMS){
			.dst = info.dst, .pitch = 0, .value = info.value, .elementSize = 1, .width = (size_t)info.bytes, .height = 1};
	return end(&c, err);
}

/* A captured cuMemcpy*Async_v2: a 1-D copy of WidthInBytes (Height and Depth 1, each pitch the
 * width); the host side, by the copy's direction, is CU_MEMORYTYPE_HOST with its pointer in
 * srcHost or dstHost, a device side CU_MEMORYTYPE_DEVICE with srcDevice or dstDevice. */
RC_API CUresult cuGraphMemcpyNodeGetParams(CUgraphNode node, CUDA_MEMCPY3D *params) {
	cu_call c;
	int err = begin(&c, "cuGraphMemcpyNodeGetParams", 1);
	rc_node_info info;
	if (!err && !(err = node_info(&c, node, params, "nodeParams", &info)) && info.kind != RC_MEMCPY)
		err = rc_fail("invalid-value", "cuGraphMemcpyNodeGetParams: %p is not a memcpy node", node);
	if (!err) {
		size_t n = (size_t)info.bytes;
		memset(params, 0, sizeof *params);
		params->WidthInBytes = n;
		params->Height = params->Depth = 1;
		params->srcPitch = params->dstPitch = n;
		params->srcHeight = params->dstHeight = 1;
		if (info.dir == RC_H2D) {
			params->srcMemoryType = CU_MEMORYTYPE_HOST;
			params->srcHost = P(info.src);
		} else {
			params->srcMemoryType = CU_MEMORYTYPE_DEVICE;
			params->srcDevice = info.src;
		}
		if (info.dir == RC_D2H) {
			params->dstMemoryType = CU_MEMORYTYPE_HOST;
			params->dstHost = P(info.dst);
		} else {
			params->dstMemoryType = CU_MEMORYTYPE_DEVICE;
			params->dstDevice = info.dst;
		}
	}
	return end(&c, err);
}

RC_API CUresult cuGraphExecDestroy(CUgraphExec exec) {
	cu_call c;
	int err = begin(&c, "cuGraphExecDestroy", 1);
	if (!err)
		err = rc_destroy_graph(c.d, H(exec));
	return end(&c, err);
}

RC_API CUresult cuGraphDestroy(CUgraph graph) {
	cu_call c;
	int err = begin(&c, "cuGraphDestroy", 1);
	if (!err)
		err = rc_destroy_graph(c.d, H(graph));
	return end(&c, err);
}

/* cuGetErrorName and cuGetErrorString name a code from the generated table (the platform's codes
 * and every code the profile names), injected codes included; any other code is
 * CUDA_ERROR_INVALID_VALUE with *pStr NULL, as the driver answers. They work in the stub too. */
static CUresult error_text(const char *entry, CUresult error, const char **pStr, int name) {
	cu_call c = {.entry = entry};
	int err = rc_enter(entry);
	const rc_code_name *n = rc_code_lookup(error);
	if (!err && !pStr)
		err = null_arg("pStr");
	if (!err) {
		*pStr = n ? (name ? n->name : n->text) : NULL;
		if (!n) {
			rc_set_detail("%s: %d is not a CUresult the fake knows", entry, error);
			err = CUDA_ERROR_INVALID_VALUE;
		}
	}
	return end(&c, err);
}

RC_API CUresult cuGetErrorName(CUresult error, const char **pStr) { return error_text("cuGetErrorName", error, pStr, 1); }

RC_API CUresult cuGetErrorString(CUresult error, const char **pStr) { return error_text("cuGetErrorString", error, pStr, 0); }
