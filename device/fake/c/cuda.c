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
 * were. The y and z dimensions add no lane. extra may hold the packed arguments instead
 * (CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE, 24 bytes: y at 0, x at 8, a at 16, n at 20).
 *
 * The fingerprint kernel: cuModuleGetFunction finds "replaycheck_fingerprint" in a module whose
 * text names it (device/cuda FingerprintPTX). Launched with kernelParams {CUdeviceptr *src,
 * unsigned long long *n, CUdeviceptr *out} and blockDim.x a power of two up to 256, block b of the
 * grid writes out[b], the fingerprint of chunk b of the n bytes at src (internal/fingerprint's
 * definition), for each b below the chunk count: src is device memory, 8-byte aligned, out device
 * or pinned host memory. It runs at the launch, as eager work does; on a capturing stream it fails
 * not-supported (the bindings never capture it).
 *
 * Stream arguments: CU_STREAM_LEGACY is the legacy stream; CU_STREAM_PER_THREAD, and NULL in a
 * _ptsz/_ptds entry point, the calling thread's per-thread default stream (rc_thread_stream).
 * cuGetProcAddress answers from one table (procs, at the end), with hidden aliases of the
 * exports so that its pointers are this library's own functions.
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
typedef void *CUmemoryPool;
typedef unsigned long long cuuint64_t;

/* Stream handles with a meaning of their own (cuda.h): the legacy default stream and the calling
 * thread's per-thread default stream. */
#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

/* cuLaunchKernel's extra and cuLaunchKernelEx's configuration, as cuda.h declares them. */
#define CU_LAUNCH_PARAM_END ((void *)0x00)
#define CU_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define CU_LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)

typedef struct CUlaunchAttribute_st CUlaunchAttribute;
typedef struct CUlaunchConfig_st {
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	CUstream hStream;
	CUlaunchAttribute *attrs;
	unsigned int numAttrs;
} CUlaunchConfig;

/* CUgraphExecUpdateResult (an int enum) and CUgraphExecUpdateResultInfo_v1. */
enum { CU_GRAPH_EXEC_UPDATE_SUCCESS = 0, CU_GRAPH_EXEC_UPDATE_ERROR = 1 };
typedef struct CUgraphExecUpdateResultInfo_st {
	int result;
	CUgraphNode errorNode;
	CUgraphNode errorFromNode;
} CUgraphExecUpdateResultInfo;

_Static_assert(sizeof(CUlaunchConfig) == 56, "CUlaunchConfig is 56 bytes on LP64");
_Static_assert(sizeof(CUgraphExecUpdateResultInfo) == 24, "CUgraphExecUpdateResultInfo is 24 bytes on LP64");

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_STUB_LIBRARY 34
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_PTX 218
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE 910

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
#define RC_FP_NAME "replaycheck_fingerprint"
#define RC_FP_FUNC ((CUfunction)(uintptr_t)0xf1f1f000ull)

#ifndef RC_STUB
static int initialized;
#endif
/* Loaded modules: whether each holds the axpy kernel; the handle is index + 1 tagged. */
static int module_live[MAX_MODULES], module_axpy[MAX_MODULES];
/* Whether each loaded module holds the fingerprint kernel. */
static int module_fp[MAX_MODULES];
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

static CUresult mem_alloc(const char *entry, CUdeviceptr *dptr, size_t bytes) {
	cu_call c;
	int err = begin(&c, entry, 1);
	uint64_t a;
	if (!err && !dptr)
		err = null_arg("dptr");
	if (!err && !(err = rc_malloc(c.d, bytes, &a)))
		*dptr = a;
	return end(&c, err);
}

RC_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) { return mem_alloc("cuMemAlloc_v2", dptr, bytes); }

/* The v1 names take cuda.h's v1 types (CUdeviceptr_v1 and the sizes are 32-bit unsigned int). The
 * fake's device memory lies above 4 GiB, so cuMemAlloc fails out-of-memory after the rules (see
 * rc_malloc_v1) and cuMemFree never names a live allocation. */
RC_API CUresult cuMemAlloc(unsigned int *dptr, unsigned int bytes) {
	cu_call c;
	int err = begin(&c, "cuMemAlloc", 1);
	uint32_t a;
	if (!err && !dptr)
		err = null_arg("dptr");
	if (!err && !(err = rc_malloc_v1(c.d, bytes, &a)))
		*dptr = a;
	return end(&c, err);
}

static CUresult mem_free(const char *entry, CUdeviceptr dptr) {
	cu_call c;
	int err = begin(&c, entry, 1);
	if (!err)
		err = rc_free(c.d, dptr);
	return end(&c, err);
}

RC_API CUresult cuMemFree_v2(CUdeviceptr dptr) { return mem_free("cuMemFree_v2", dptr); }
RC_API CUresult cuMemFree(unsigned int dptr) { return mem_free("cuMemFree", dptr); }

static CUresult mem_alloc_host(const char *entry, void **pp, size_t bytes) {
	cu_call c;
	int err = begin(&c, entry, 1);
	uint64_t a;
	if (!err && !pp)
		err = null_arg("pp");
	if (!err && !(err = rc_alloc_host(c.d, bytes, &a)))
		*pp = P(a);
	return end(&c, err);
}

RC_API CUresult cuMemAllocHost_v2(void **pp, size_t bytes) { return mem_alloc_host("cuMemAllocHost_v2", pp, bytes); }
RC_API CUresult cuMemAllocHost(void **pp, unsigned int bytes) { return mem_alloc_host("cuMemAllocHost", pp, bytes); }

/* flags: CU_MEMHOSTALLOC_PORTABLE, DEVICEMAP and WRITECOMBINED, none of which changes what the
 * fake does; any other bit is CUDA_ERROR_INVALID_VALUE. */
RC_API CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags) {
	if (flags & ~7u) {
		cu_call c;
		int err = begin(&c, "cuMemHostAlloc", 1);
		if (!err)
			err = rc_fail("invalid-value", "cuMemHostAlloc: unknown flags %#x", flags);
		return end(&c, err);
	}
	return mem_alloc_host("cuMemHostAlloc", pp, bytes);
}

RC_API CUresult cuMemFreeHost(void *p) {
	cu_call c;
	int err = begin(&c, "cuMemFreeHost", 1);
	if (!err)
		err = rc_free_host(c.d, H(p));
	return end(&c, err);
}

/* stream_of resolves a stream argument: CU_STREAM_LEGACY is the legacy default stream (handle 0);
 * CU_STREAM_PER_THREAD, and NULL in a _ptsz/_ptds entry point, the calling thread's per-thread
 * default stream (rc_thread_stream). Called after begin succeeded. */
static uint64_t stream_of(cu_call *c, CUstream s, int ptsz) {
	if (s == CU_STREAM_LEGACY)
		return 0;
	if (s == CU_STREAM_PER_THREAD || (ptsz && !s))
		return rc_thread_stream(c->d);
	return H(s);
}

/* The _ptds synchronous copies are the plain ones: the fake's synchronous copies are judged by the
 * rules as the legacy stream's. */
static CUresult memcpy_htod(const char *entry, CUdeviceptr dst, const void *src, size_t n) {
	cu_call c;
	int err = begin(&c, entry, 1);
	if (!err)
		err = rc_write(c.d, dst, src, n);
	return end(&c, err);
}

RC_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) { return memcpy_htod("cuMemcpyHtoD_v2", dst, src, n); }
RC_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n) { return memcpy_htod("cuMemcpyHtoD_v2_ptds", dst, src, n); }

static CUresult memcpy_dtoh(const char *entry, void *dst, CUdeviceptr src, size_t n) {
	cu_call c;
	int err = begin(&c, entry, 1);
	if (!err)
		err = rc_read(c.d, dst, src, n);
	return end(&c, err);
}

RC_API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) { return memcpy_dtoh("cuMemcpyDtoH_v2", dst, src, n); }
RC_API CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n) { return memcpy_dtoh("cuMemcpyDtoH_v2_ptds", dst, src, n); }

static CUresult memcpy_async(const char *entry, int ptsz, uint64_t dst, uint64_t src, size_t n, CUstream stream, int dir) {
	cu_call c;
	int err = begin(&c, entry, 1);
	if (!err)
		err = rc_copy(c.d, stream_of(&c, stream, ptsz), dst, src, n, dir);
	return end(&c, err);
}

RC_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) {
	return memcpy_async("cuMemcpyDtoDAsync_v2", 0, dst, src, n, stream, RC_D2D);
}
RC_API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) {
	return memcpy_async("cuMemcpyDtoDAsync_v2_ptsz", 1, dst, src, n, stream, RC_D2D);
}
RC_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream stream) {
	return memcpy_async("cuMemcpyHtoDAsync_v2", 0, dst, H(src), n, stream, RC_H2D);
}
RC_API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream stream) {
	return memcpy_async("cuMemcpyHtoDAsync_v2_ptsz", 1, dst, H(src), n, stream, RC_H2D);
}
RC_API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream stream) {
	return memcpy_async("cuMemcpyDtoHAsync_v2", 0, H(dst), src, n, stream, RC_D2H);
}
RC_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream stream) {
	return memcpy_async("cuMemcpyDtoHAsync_v2_ptsz", 1, H(dst), src, n, stream, RC_D2H);
}

/* Unified addressing: the direction comes from where each side lies. A source outside device
 * memory (pinned, or the program's pageable memory) makes a host-to-device copy, else a
 * destination outside it a device-to-host copy, else device to device. A copy between two host
 * buffers is not modelled (CUDA_ERROR_INVALID_VALUE, as rc_copy answers). */
static CUresult memcpy_unified(const char *entry, int ptsz, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) {
	cu_call c;
	int err = begin(&c, entry, 1);
	if (!err) {
		int dir = rc_memory_kind(c.d, src) != RC_MEM_DEVICE	  ? RC_H2D
			  : rc_memory_kind(c.d, dst) != RC_MEM_DEVICE ? RC_D2H
								      : RC_D2D;
		err = rc_copy(c.d, stream_of(&c, stream, ptsz), dst, src, n, dir);
	}
	return end(&c, err);
}

RC_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) {
	return memcpy_unified("cuMemcpyAsync", 0, dst, src, n, stream);
}
RC_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) {
	return memcpy_unified("cuMemcpyAsync_ptsz", 1, dst, src, n, stream);
}

/* n counts elements of elem bytes. */
static CUresult memset_async(const char *entry, int ptsz, CUdeviceptr dst, unsigned elem, uint32_t value, size_t n, CUstream stream) {
	cu_call c;
	int err = begin(&c, entry, 1);
	if (!err)
		err = rc_fill_elems(c.d, stream_of(&c, stream, ptsz), dst, n, elem, value);
	return end(&c, err);
}

RC_API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream stream) {
	return memset_async("cuMemsetD8Async", 0, dst, 1, value, n, stream);
}
RC_API CUresult cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char value, size_t n, CUstream stream) {
	return memset_async("cuMemsetD8Async_ptsz", 1, dst, 1, value, n, stream);
}
RC_API CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t n, CUstream stream) {
	return memset_async("cuMemsetD16Async", 0, dst, 2, value, n, stream);
}
RC_API CUresult cuMemsetD16Async_ptsz(CUdeviceptr dst, unsigned short value, size_t n, CUstream stream) {
	return memset_async("cuMemsetD16Async_ptsz", 1, dst, 2, value, n, stream);
}
RC_API CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t n, CUstream stream) {
	return memset_async("cuMemsetD32Async", 0, dst, 4, value, n, stream);
}
RC_API CUresult cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int value, size_t n, CUstream stream) {
	return memset_async("cuMemsetD32Async_ptsz", 1, dst, 4, value, n, stream);
}

/* Stream-ordered allocation: the device allocator serves it as cuMemAlloc, at the call; no rule
 * judges it; on a capturing stream it fails CUDA_ERROR_NOT_SUPPORTED (see rc_malloc_async). Every
 * pool is the device's one allocator: any non-NULL pool handle is accepted. */
static CUresult mem_alloc_async(const char *entry, int ptsz, CUdeviceptr *dptr, size_t bytes, int pooled, CUmemoryPool pool, CUstream stream) {
	cu_call c;
	int err = begin(&c, entry, 1);
	uint64_t a;
	if (!err && !dptr)
		err = null_arg("dptr");
	if (!err && pooled && !pool)
		err = null_arg("pool");
	if (!err && !(err = rc_malloc_async(c.d, stream_of(&c, stream, ptsz), bytes, &a)))
		*dptr = a;
	return end(&c, err);
}

RC_API CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream stream) {
	return mem_alloc_async("cuMemAllocAsync", 0, dptr, bytes, 0, NULL, stream);
}
RC_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUstream stream) {
	return mem_alloc_async("cuMemAllocAsync_ptsz", 1, dptr, bytes, 0, NULL, stream);
}
RC_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream stream) {
	return mem_alloc_async("cuMemAllocFromPoolAsync", 0, dptr, bytes, 1, pool, stream);
}
RC_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream stream) {
	return mem_alloc_async("cuMemAllocFromPoolAsync_ptsz", 1, dptr, bytes, 1, pool, stream);
}

static CUresult mem_free_async(const char *entry, int ptsz, CUdeviceptr dptr, CUstream stream) {
	cu_call c;
	int err = begin(&c, entry, 1);
	if (!err)
		err = rc_free_async(c.d, stream_of(&c, stream, ptsz), dptr);
	return end(&c, err);
}

RC_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) { return mem_free_async("cuMemFreeAsync", 0, dptr, stream); }
RC_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) { return mem_free_async("cuMemFreeAsync_ptsz", 1, dptr, stream); }

/* Pools are handles only: the default pool of device d is RC_POOL_TAG + d, a created pool
 * RC_POOL_TAG + 0x100 + slot. cuMemPoolCreate accepts any non-NULL properties. */
#define RC_POOL_TAG 0x9001000ull
#define MAX_POOLS 64
static int pool_live[MAX_POOLS];

RC_API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev) {
	cu_call c;
	int err = begin_lib(&c, "cuDeviceGetDefaultMemPool");
	if (!err && !pool)
		err = null_arg("pool_out");
	if (!err && !(err = check_device(dev)))
		*pool = P(RC_POOL_TAG + (uint64_t)dev);
	return end(&c, err);
}

RC_API CUresult cuMemPoolCreate(CUmemoryPool *pool, const void *props) {
	cu_call c;
	int err = begin(&c, "cuMemPoolCreate", 0);
	if (!err && (!pool || !props))
		err = null_arg(pool ? "poolProps" : "pool");
	if (!err) {
		int i = 0;
		while (i < MAX_POOLS && pool_live[i])
			i++;
		if (i == MAX_POOLS) {
			err = rc_fail("out-of-memory", "cuMemPoolCreate: %d pools exist", MAX_POOLS);
		} else {
			pool_live[i] = 1;
			*pool = P(RC_POOL_TAG + 0x100 + (uint64_t)i);
		}
	}
	return end(&c, err);
}

RC_API CUresult cuMemPoolDestroy(CUmemoryPool pool) {
	cu_call c;
	int err = begin(&c, "cuMemPoolDestroy", 1);
	uint64_t h = H(pool);
	if (!err && (h < RC_POOL_TAG + 0x100 || h >= RC_POOL_TAG + 0x100 + MAX_POOLS || !pool_live[h - RC_POOL_TAG - 0x100]))
		err = rc_fail("invalid-value", "cuMemPoolDestroy: %p is not a pool cuMemPoolCreate made", pool);
	if (!err)
		pool_live[h - RC_POOL_TAG - 0x100] = 0;
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

static CUresult stream_synchronize(const char *entry, int ptsz, CUstream stream) {
	cu_call c;
	int err = begin(&c, entry, 1);
	if (!err)
		err = rc_sync_stream(c.d, stream_of(&c, stream, ptsz));
	return end(&c, err);
}

RC_API CUresult cuStreamSynchronize(CUstream stream) { return stream_synchronize("cuStreamSynchronize", 0, stream); }
RC_API CUresult cuStreamSynchronize_ptsz(CUstream stream) { return stream_synchronize("cuStreamSynchronize_ptsz", 1, stream); }

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

/* cuEventRecordWithFlags' flags: CU_EVENT_RECORD_DEFAULT 0 or CU_EVENT_RECORD_EXTERNAL 1, which
 * records as cuEventRecord does (the fake has no event nodes); any other bit is
 * CUDA_ERROR_INVALID_VALUE. */
static CUresult event_record(const char *entry, int ptsz, CUevent event, CUstream stream, unsigned int flags) {
	cu_call c;
	int err = begin(&c, entry, 1);
	if (!err && (flags & ~1u))
		err = rc_fail("invalid-value", "%s: unknown flags %#x", entry, flags);
	if (!err)
		err = rc_record(c.d, H(event), stream_of(&c, stream, ptsz));
	return end(&c, err);
}

RC_API CUresult cuEventRecord(CUevent event, CUstream stream) { return event_record("cuEventRecord", 0, event, stream, 0); }
RC_API CUresult cuEventRecord_ptsz(CUevent event, CUstream stream) { return event_record("cuEventRecord_ptsz", 1, event, stream, 0); }
RC_API CUresult cuEventRecordWithFlags(CUevent event, CUstream stream, unsigned int flags) {
	return event_record("cuEventRecordWithFlags", 0, event, stream, flags);
}
RC_API CUresult cuEventRecordWithFlags_ptsz(CUevent event, CUstream stream, unsigned int flags) {
	return event_record("cuEventRecordWithFlags_ptsz", 1, event, stream, flags);
}

static CUresult stream_wait_event(const char *entry, int ptsz, CUstream stream, CUevent event) {
	cu_call c;
	int err = begin(&c, entry, 1);
	if (!err)
		err = rc_wait(c.d, stream_of(&c, stream, ptsz), H(event));
	return end(&c, err);
}

RC_API CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
	(void)flags;
	return stream_wait_event("cuStreamWaitEvent", 0, stream, event);
}
RC_API CUresult cuStreamWaitEvent_ptsz(CUstream stream, CUevent event, unsigned int flags) {
	(void)flags;
	return stream_wait_event("cuStreamWaitEvent_ptsz", 1, stream, event);
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
				module_fp[i] = strstr(text, RC_FP_NAME) != NULL;
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
	if (!err && strcmp(name, RC_FP_NAME) == 0 && module_fp[i]) {
		*fn = RC_FP_FUNC;
		return end(&c, err);
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

/* The kernel's parameters as cuFuncGetParamInfo answers them: y (CUdeviceptr) at 0, x at 8, a
 * (unsigned int) at 16, n at 20; the packed buffer of extra's CU_LAUNCH_PARAM_BUFFER_POINTER is 24
 * bytes. */
static const size_t axpy_offset[4] = {0, 8, 16, 20}, axpy_size[4] = {8, 8, 4, 4};
#define AXPY_ARGS_BYTES 24

RC_API CUresult cuFuncGetParamInfo(CUfunction f, size_t paramIndex, size_t *paramOffset, size_t *paramSize) {
	cu_call c;
	int err = begin(&c, "cuFuncGetParamInfo", 0);
	if (!err && f != RC_AXPY_FUNC) {
		rc_set_detail("cuFuncGetParamInfo: %p is not a function of a loaded module", f);
		err = CUDA_ERROR_INVALID_HANDLE;
	}
	if (!err && !paramOffset)
		err = null_arg("paramOffset");
	if (!err && paramIndex >= 4)
		err = rc_fail("invalid-value", "cuFuncGetParamInfo: " RC_AXPY_NAME " has 4 parameters, not %zu", paramIndex + 1);
	if (!err) {
		*paramOffset = axpy_offset[paramIndex];
		if (paramSize)
			*paramSize = axpy_size[paramIndex];
	}
	return end(&c, err);
}

/* axpy_args reads the kernel's arguments from kernelParams, or from extra's packed buffer
 * ({CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END},
 * size 24), not both. */
static int axpy_args(const char *entry, void **kernelParams, void **extra, CUdeviceptr *y, CUdeviceptr *x, unsigned int *a, unsigned int *n) {
	if (kernelParams && !extra) {
		if (!kernelParams[0] || !kernelParams[1] || !kernelParams[2] || !kernelParams[3])
			return rc_fail("invalid-value", "%s: " RC_AXPY_NAME " takes kernelParams {&y, &x, &a, &n}", entry);
		*y = *(CUdeviceptr *)kernelParams[0];
		*x = *(CUdeviceptr *)kernelParams[1];
		*a = *(unsigned int *)kernelParams[2];
		*n = *(unsigned int *)kernelParams[3];
		return 0;
	}
	if (kernelParams || !extra)
		return rc_fail("invalid-value", "%s: give kernelParams or extra, not %s", entry, kernelParams ? "both" : "neither");
	const unsigned char *buf = NULL;
	size_t size = 0;
	int sized = 0;
	for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
			buf = extra[i + 1];
		} else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1]) {
			size = *(size_t *)extra[i + 1];
			sized = 1;
		} else {
			return rc_fail("invalid-value", "%s: extra[%zu] = %p is not a launch parameter the fake knows", entry, i, extra[i]);
		}
	}
	if (!buf || !sized || size != AXPY_ARGS_BYTES)
		return rc_fail("invalid-value", "%s: extra needs CU_LAUNCH_PARAM_BUFFER_POINTER and CU_LAUNCH_PARAM_BUFFER_SIZE %d, not %zu", entry,
			       AXPY_ARGS_BYTES, size);
	memcpy(y, buf + axpy_offset[0], sizeof *y);
	memcpy(x, buf + axpy_offset[1], sizeof *x);
	memcpy(a, buf + axpy_offset[2], sizeof *a);
	memcpy(n, buf + axpy_offset[3], sizeof *n);
	return 0;
}

/* The fingerprint kernel (internal/fingerprint): per chunk of 1 MiB, the sum mod 2^64 of
 * fmix64(word ^ index * K) over its little-endian 8-byte words, indexes counted from the buffer's
 * start; a partial last word is its bytes zero-padded, their count in the top byte. */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the fake's fingerprint kernel reads words in host order: little-endian hosts only"
#endif
#define RC_FP_CHUNK (1ull << 20)
#define RC_FP_K 0x9E3779B97F4A7C15ull

static uint64_t fp_mix(uint64_t k) {
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

/* fp_sum: the fingerprint of the n bytes at p, whose first word has index word. */
static uint64_t fp_sum(const unsigned char *p, uint64_t n, uint64_t word) {
	uint64_t s = 0, i = 0;
	for (; i + 8 <= n; i += 8, word++) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		s += fp_mix(w ^ word * RC_FP_K);
	}
	if (i < n) {
		uint64_t w = (n - i) << 56;
		for (uint64_t j = 0; i + j < n; j++)
			w |= (uint64_t)p[i + j] << (8 * j);
		s += fp_mix(w ^ word * RC_FP_K);
	}
	return s;
}

static int launch_fingerprint(cu_call *c, const char *entry, int ptsz, unsigned int gridDimX, unsigned int blockDimX, unsigned int blockDimY,
			      unsigned int blockDimZ, CUstream stream, void **kernelParams, void **extra) {
	if (extra || !kernelParams || !kernelParams[0] || !kernelParams[1] || !kernelParams[2])
		return rc_fail("invalid-value", "%s: " RC_FP_NAME " takes kernelParams {&src, &n, &out}, and no extra", entry);
	uint64_t src = *(CUdeviceptr *)kernelParams[0], n = *(unsigned long long *)kernelParams[1], out = *(CUdeviceptr *)kernelParams[2];
	if (!gridDimX || !blockDimX || blockDimX > 256 || (blockDimX & (blockDimX - 1)) || blockDimY != 1 || blockDimZ != 1)
		return rc_fail("invalid-value", "%s: " RC_FP_NAME " runs blocks of a power of two up to 256 threads, one block per chunk", entry);
	if (src % 8)
		return rc_fail("invalid-value", "%s: " RC_FP_NAME "'s source %#llx is not 8-byte aligned", entry, (unsigned long long)src);
	uint64_t chunks = (n + RC_FP_CHUNK - 1) / RC_FP_CHUNK;
	if (chunks > gridDimX)
		chunks = gridDimX;
	int err;
	if (n && ((err = rc_live_range(c->d, "source", src, n)) || (err = rc_live_range(c->d, "out", out, chunks * 8))))
		return err;
	if (n && rc_memory_kind(c->d, src) != RC_MEM_DEVICE)
		return rc_fail("invalid-value", "%s: " RC_FP_NAME "'s source %#llx is not device memory", entry, (unsigned long long)src);
	int st, mode;
	uint64_t id, origin;
	if ((err = rc_capture_info(c->d, stream_of(c, stream, ptsz), &st, &id, &origin, &mode)))
		return err;
	if (st != 0)
		return rc_fail("not-supported", "%s: the fake does not capture " RC_FP_NAME, entry);
	const unsigned char *p = (const unsigned char *)(uintptr_t)src;
	for (uint64_t b = 0; b < chunks; b++) {
		uint64_t lo = b * RC_FP_CHUNK, hi = lo + RC_FP_CHUNK < n ? lo + RC_FP_CHUNK : n, v = fp_sum(p + lo, hi - lo, lo / 8);
		memcpy((unsigned char *)(uintptr_t)out + 8 * b, &v, 8);
	}
	return 0;
}

static CUresult launch_kernel(const char *entry, int ptsz, CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
			      unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, CUstream stream, void **kernelParams,
			      void **extra) {
	cu_call c;
	int err = begin(&c, entry, 1);
	if (!err && f == RC_FP_FUNC)
		return end(&c, launch_fingerprint(&c, entry, ptsz, gridDimX, blockDimX, blockDimY, blockDimZ, stream, kernelParams, extra));
	CUdeviceptr y = 0, x = 0;
	unsigned int a = 0, n = 0;
	if (!err && f != RC_AXPY_FUNC) {
		rc_set_detail("%s: %p is not a function of a loaded module", entry, f);
		err = CUDA_ERROR_INVALID_HANDLE;
	}
	if (!err)
		err = axpy_args(entry, kernelParams, extra, &y, &x, &a, &n);
	if (!err && (!gridDimX || !gridDimY || !gridDimZ || !blockDimX || !blockDimY || !blockDimZ))
		err = rc_fail("invalid-value", "%s: a grid or block dimension is 0", entry);
	if (!err) {
		uint64_t threads = (uint64_t)gridDimX * blockDimX;
		err = rc_axpy(c.d, stream_of(&c, stream, ptsz), y, x, threads < n ? threads : n, a);
	}
	return end(&c, err);
}

RC_API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
			       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
			       unsigned int sharedMemBytes, CUstream stream, void **kernelParams, void **extra) {
	(void)sharedMemBytes;
	return launch_kernel("cuLaunchKernel", 0, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, stream, kernelParams, extra);
}

RC_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
				    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
				    unsigned int sharedMemBytes, CUstream stream, void **kernelParams, void **extra) {
	(void)sharedMemBytes;
	return launch_kernel("cuLaunchKernel_ptsz", 1, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, stream, kernelParams,
			     extra);
}

/* The launch attributes are not looked at (none changes what the fake's kernel computes). */
static CUresult launch_kernel_ex(const char *entry, int ptsz, const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra) {
	if (!config) {
		cu_call c;
		int err = begin(&c, entry, 1);
		if (!err)
			err = null_arg("config");
		return end(&c, err);
	}
	return launch_kernel(entry, ptsz, f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY,
			     config->blockDimZ, config->hStream, kernelParams, extra);
}

RC_API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra) {
	return launch_kernel_ex("cuLaunchKernelEx", 0, config, f, kernelParams, extra);
}
RC_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra) {
	return launch_kernel_ex("cuLaunchKernelEx_ptsz", 1, config, f, kernelParams, extra);
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

static CUresult begin_capture(const char *entry, int ptsz, CUstream stream, int mode) {
	cu_call c;
	int err = begin(&c, entry, 1);
	if (!err)
		err = rc_begin_capture(c.d, stream_of(&c, stream, ptsz), mode);
	return end(&c, err);
}

RC_API CUresult cuStreamBeginCapture_v2(CUstream stream, int mode) { return begin_capture("cuStreamBeginCapture_v2", 0, stream, mode); }
RC_API CUresult cuStreamBeginCapture_v2_ptsz(CUstream stream, int mode) {
	return begin_capture("cuStreamBeginCapture_v2_ptsz", 1, stream, mode);
}
/* v1 (CUDA 10.0) takes no mode: the capture is GLOBAL. */
RC_API CUresult cuStreamBeginCapture(CUstream stream) { return begin_capture("cuStreamBeginCapture", 0, stream, RC_GLOBAL); }
RC_API CUresult cuStreamBeginCapture_ptsz(CUstream stream) { return begin_capture("cuStreamBeginCapture_ptsz", 1, stream, RC_GLOBAL); }

static CUresult end_capture(const char *entry, int ptsz, CUstream stream, CUgraph *graph) {
	cu_call c;
	int err = begin(&c, entry, 1);
	uint64_t g;
	if (!err && !graph)
		err = null_arg("graph");
	if (!err) {
		*graph = NULL;
		if (!(err = rc_end_capture(c.d, stream_of(&c, stream, ptsz), 0, &g)))
			*graph = P(g);
	}
	return end(&c, err);
}

RC_API CUresult cuStreamEndCapture(CUstream stream, CUgraph *graph) { return end_capture("cuStreamEndCapture", 0, stream, graph); }
RC_API CUresult cuStreamEndCapture_ptsz(CUstream stream, CUgraph *graph) { return end_capture("cuStreamEndCapture_ptsz", 1, stream, graph); }

static CUresult is_capturing(const char *entry, int ptsz, CUstream stream, int *status) {
	cu_call c;
	int err = begin(&c, entry, 0);
	int st, mode;
	uint64_t id, origin;
	if (!err && !status)
		err = null_arg("status");
	if (!err && !(err = rc_capture_info(c.d, stream_of(&c, stream, ptsz), &st, &id, &origin, &mode)))
		*status = st;
	return end(&c, err);
}

RC_API CUresult cuStreamIsCapturing(CUstream stream, int *status) { return is_capturing("cuStreamIsCapturing", 0, stream, status); }
RC_API CUresult cuStreamIsCapturing_ptsz(CUstream stream, int *status) { return is_capturing("cuStreamIsCapturing_ptsz", 1, stream, status); }

/* The executable graph is a copy of the graph's nodes: destroying the graph leaves it usable. The
 * instantiation is an unsafe call: the profile's instantiation rules (EndCapture's rules on the
 * other captures in progress) answer here, not in cuStreamEndCapture, as the driver does. */
static int instantiate(cu_call *c, CUgraphExec *exec, CUgraph graph) {
	uint64_t h;
	int err = exec ? 0 : null_arg("exec");
	if (!err && !(err = rc_instantiate(c->d, H(graph), &h)))
		*exec = P(h);
	return err;
}

RC_API CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags) {
	(void)flags;
	cu_call c;
	int err = begin(&c, "cuGraphInstantiateWithFlags", 1);
	if (!err)
		err = instantiate(&c, exec, graph);
	return end(&c, err);
}

/* cuGraphInstantiate (CUDA 10.0) and _v2 (11.0): on failure *errNode is NULL (the fake names no
 * node) and logBuffer, when given, holds the failure's detail. */
static CUresult instantiate_logged(const char *entry, CUgraphExec *exec, CUgraph graph, CUgraphNode *errNode, char *logBuffer, size_t bufferSize) {
	cu_call c;
	int err = begin(&c, entry, 1);
	if (!err)
		err = instantiate(&c, exec, graph);
	if (err && errNode)
		*errNode = NULL;
	if (logBuffer && bufferSize)
		snprintf(logBuffer, bufferSize, "%s", err ? rc_detail() : "");
	return end(&c, err);
}

RC_API CUresult cuGraphInstantiate(CUgraphExec *exec, CUgraph graph, CUgraphNode *errNode, char *logBuffer, size_t bufferSize) {
	return instantiate_logged("cuGraphInstantiate", exec, graph, errNode, logBuffer, bufferSize);
}
RC_API CUresult cuGraphInstantiate_v2(CUgraphExec *exec, CUgraph graph, CUgraphNode *errNode, char *logBuffer, size_t bufferSize) {
	return instantiate_logged("cuGraphInstantiate_v2", exec, graph, errNode, logBuffer, bufferSize);
}

static CUresult graph_launch(const char *entry, int ptsz, CUgraphExec exec, CUstream stream) {
	cu_call c;
	int err = begin(&c, entry, 0);
	if (!err)
		err = rc_launch(c.d, H(exec), stream_of(&c, stream, ptsz), 1);
	return end(&c, err);
}

RC_API CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) { return graph_launch("cuGraphLaunch", 0, exec, stream); }
RC_API CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream) { return graph_launch("cuGraphLaunch_ptsz", 1, exec, stream); }

/* exec_update: an update succeeds when graph has as many nodes as exec, of the same types in the
 * same order with the same dependencies; exec then replays graph's nodes (their addresses).
 * Otherwise CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, *result CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED
 * or _NODE_TYPE_CHANGED, *node graph's first node that differs (NULL past its last), and exec is
 * unchanged. */
static int exec_update(cu_call *c, CUgraphExec exec, CUgraph graph, int *result, CUgraphNode *node) {
	size_t i;
	int err = rc_exec_update(c->d, H(exec), H(graph), result, &i);
	*node = NULL;
	if (err || *result == RC_UPDATE_OK)
		return err;
	size_t n = 0;
	rc_graph_nodes(c->d, H(graph), &n);
	if (i < n)
		*node = P((H(graph) << 20) | (i + 1));
	rc_set_detail("%s: graph %p differs from executable graph %p at node %zu (%s)", c->entry, graph, exec, i,
		      *result == RC_UPDATE_NODE_TYPE ? "node type changed" : "topology changed");
	return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
}

RC_API CUresult cuGraphExecUpdate(CUgraphExec exec, CUgraph graph, CUgraphNode *hErrorNode_out, int *updateResult_out) {
	cu_call c;
	int err = begin(&c, "cuGraphExecUpdate", 1);
	int result = CU_GRAPH_EXEC_UPDATE_ERROR;
	CUgraphNode node = NULL;
	if (!err && (!hErrorNode_out || !updateResult_out))
		err = null_arg(hErrorNode_out ? "updateResult_out" : "hErrorNode_out");
	if (!err) {
		err = exec_update(&c, exec, graph, &result, &node);
		*hErrorNode_out = node;
		*updateResult_out = result;
	}
	return end(&c, err);
}

RC_API CUresult cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo *resultInfo) {
	cu_call c;
	int err = begin(&c, "cuGraphExecUpdate_v2", 1);
	int result = CU_GRAPH_EXEC_UPDATE_ERROR;
	CUgraphNode node = NULL;
	if (!err && !resultInfo)
		err = null_arg("resultInfo");
	if (!err) {
		err = exec_update(&c, exec, graph, &result, &node);
		*resultInfo = (CUgraphExecUpdateResultInfo){.result = result, .errorNode = node, .errorFromNode = NULL};
	}
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

/* A captured cuMemsetD8Async, D16Async or D32Async: one row of width elements of elementSize
 * bytes (1, 2 or 4), value the element; pitch is 0 (unused when height is 1). */
RC_API CUresult cuGraphMemsetNodeGetParams(CUgraphNode node, CUDA_MEMSET_NODE_PARAMS *params) {
	cu_call c;
	int err = begin(&c, "cuGraphMemsetNodeGetParams", 1);
	rc_node_info info;
	if (!err && !(err = node_info(&c, node, params, "nodeParams", &info)) && info.kind != RC_MEMSET)
		err = rc_fail("invalid-value", "cuGraphMemsetNodeGetParams: %p is not a memset node", node);
	if (!err)
		*params = (CUDA_MEMSET_NODE_PARAMS){
			.dst = info.dst, .pitch = 0, .value = info.pattern, .elementSize = info.elem, .width = (size_t)info.bytes / info.elem, .height = 1};
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

/* ---------- cuGetProcAddress ---------- */

/* Hidden aliases of the exports: their addresses are this library's own functions, as dlsym on
 * its handle answers, even where another object (an LD_PRELOAD interposer) defines the same name
 * and the exported symbol itself would bind to that one. */
#define RC_ALIAS(name) extern __typeof__(name) rc_own_##name __attribute__((alias(#name), visibility("hidden")));
#define RC_EXPORTS(X)                                                                                                     \
	X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceTotalMem_v2)        \
	X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuDevicePrimaryCtxRelease_v2) X(cuCtxSetCurrent)         \
	X(cuCtxSynchronize) X(cuMemGetInfo_v2) X(cuMemAlloc) X(cuMemAlloc_v2) X(cuMemFree) X(cuMemFree_v2)                   \
	X(cuMemAllocHost) X(cuMemAllocHost_v2) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemcpyHtoD_v2)                        \
	X(cuMemcpyHtoD_v2_ptds) X(cuMemcpyDtoH_v2) X(cuMemcpyDtoH_v2_ptds) X(cuMemcpyAsync) X(cuMemcpyAsync_ptsz)           \
	X(cuMemcpyDtoDAsync_v2) X(cuMemcpyDtoDAsync_v2_ptsz) X(cuMemcpyHtoDAsync_v2) X(cuMemcpyHtoDAsync_v2_ptsz)           \
	X(cuMemcpyDtoHAsync_v2) X(cuMemcpyDtoHAsync_v2_ptsz) X(cuMemsetD8Async) X(cuMemsetD8Async_ptsz)                     \
	X(cuMemsetD16Async) X(cuMemsetD16Async_ptsz) X(cuMemsetD32Async) X(cuMemsetD32Async_ptsz) X(cuMemAllocAsync)        \
	X(cuMemAllocAsync_ptsz) X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz) X(cuMemAllocFromPoolAsync)                         \
	X(cuMemAllocFromPoolAsync_ptsz) X(cuDeviceGetDefaultMemPool) X(cuMemPoolCreate) X(cuMemPoolDestroy)                 \
	X(cuStreamCreate) X(cuStreamDestroy_v2) X(cuStreamSynchronize) X(cuStreamSynchronize_ptsz) X(cuEventCreate)         \
	X(cuEventRecord) X(cuEventRecord_ptsz) X(cuEventRecordWithFlags) X(cuEventRecordWithFlags_ptsz)                     \
	X(cuStreamWaitEvent) X(cuStreamWaitEvent_ptsz) X(cuEventQuery) X(cuEventSynchronize) X(cuEventDestroy_v2)           \
	X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetParamInfo) X(cuLaunchKernel)                \
	X(cuLaunchKernel_ptsz) X(cuLaunchKernelEx) X(cuLaunchKernelEx_ptsz) X(cuStreamBeginCapture)                         \
	X(cuStreamBeginCapture_ptsz) X(cuStreamBeginCapture_v2) X(cuStreamBeginCapture_v2_ptsz) X(cuStreamEndCapture)       \
	X(cuStreamEndCapture_ptsz) X(cuStreamIsCapturing) X(cuStreamIsCapturing_ptsz) X(cuThreadExchangeStreamCaptureMode)  \
	X(cuGraphInstantiate) X(cuGraphInstantiate_v2) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphLaunch_ptsz) \
	X(cuGraphExecUpdate) X(cuGraphExecUpdate_v2) X(cuGraphGetNodes) X(cuGraphNodeGetType)                               \
	X(cuGraphMemsetNodeGetParams) X(cuGraphMemcpyNodeGetParams) X(cuGraphExecDestroy) X(cuGraphDestroy)                 \
	X(cuGetErrorName) X(cuGetErrorString) X(cuGetProcAddress) X(cuGetProcAddress_v2)

RC_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
RC_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags, int *symbolStatus);
RC_EXPORTS(RC_ALIAS)

/* One driver entry point (a base name, as cuGetProcAddress is asked for it) in one version: since
 * is the CUDA version that introduced the variant sym; ptsz its per-thread-default-stream variant
 * (_ptsz, _ptds for the synchronous copies), NULL for an entry point without a stream. */
typedef struct {
	const char *name;
	int since;
	const char *sym;
	void *fn;
	const char *ptsz;
	void *ptsz_fn;
} proc_t;

#define V(sym) #sym, (void *)rc_own_##sym
#define NOPT NULL, NULL

/* The versions are those of NVIDIA's cudaTypedefs.h (CUDA 12.6): PFN_<name>_v<since> names each
 * variant's typedef (PFN_cuMemAlloc_v2000 is cuMemAlloc, PFN_cuMemAlloc_v3020 cuMemAlloc_v2,
 * PFN_cuStreamBeginCapture_v10000 and _v10010, PFN_cuGraphExecUpdate_v10020 and _v12000,
 * PFN_cuGraphInstantiate_v10000 and _v11000); cuGraphInstantiate from 12000 is
 * cuGraphInstantiateWithFlags, as cuda.h's #define and cudaTypedefs.h's PFN_cuGraphInstantiate
 * say. The per-thread variants exist from 7000 (PFN_..._v7000_ptsz) or from the entry point's
 * first version when later. A variant older than the fake exports (cuStreamDestroy of 2000) is
 * not in the table: asked for a version before the fake's oldest, the answer is
 * CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT. */
static const proc_t procs[] = {
	{"cuInit", 2000, V(cuInit), NOPT},
	{"cuDriverGetVersion", 2020, V(cuDriverGetVersion), NOPT},
	{"cuDeviceGetCount", 2000, V(cuDeviceGetCount), NOPT},
	{"cuDeviceGet", 2000, V(cuDeviceGet), NOPT},
	{"cuDeviceGetName", 2000, V(cuDeviceGetName), NOPT},
	{"cuDeviceTotalMem", 3020, V(cuDeviceTotalMem_v2), NOPT},
	{"cuDevicePrimaryCtxRetain", 7000, V(cuDevicePrimaryCtxRetain), NOPT},
	{"cuDevicePrimaryCtxRelease", 7000, V(cuDevicePrimaryCtxRelease), NOPT},
	{"cuDevicePrimaryCtxRelease", 11000, V(cuDevicePrimaryCtxRelease_v2), NOPT},
	{"cuCtxSetCurrent", 4000, V(cuCtxSetCurrent), NOPT},
	{"cuCtxSynchronize", 2000, V(cuCtxSynchronize), NOPT},
	{"cuMemGetInfo", 3020, V(cuMemGetInfo_v2), NOPT},
	{"cuMemAlloc", 2000, V(cuMemAlloc), NOPT},
	{"cuMemAlloc", 3020, V(cuMemAlloc_v2), NOPT},
	{"cuMemFree", 2000, V(cuMemFree), NOPT},
	{"cuMemFree", 3020, V(cuMemFree_v2), NOPT},
	{"cuMemAllocHost", 2000, V(cuMemAllocHost), NOPT},
	{"cuMemAllocHost", 3020, V(cuMemAllocHost_v2), NOPT},
	{"cuMemHostAlloc", 2020, V(cuMemHostAlloc), NOPT},
	{"cuMemFreeHost", 2000, V(cuMemFreeHost), NOPT},
	{"cuMemcpyHtoD", 3020, V(cuMemcpyHtoD_v2), V(cuMemcpyHtoD_v2_ptds)},
	{"cuMemcpyDtoH", 3020, V(cuMemcpyDtoH_v2), V(cuMemcpyDtoH_v2_ptds)},
	{"cuMemcpyAsync", 4000, V(cuMemcpyAsync), V(cuMemcpyAsync_ptsz)},
	{"cuMemcpyDtoDAsync", 3020, V(cuMemcpyDtoDAsync_v2), V(cuMemcpyDtoDAsync_v2_ptsz)},
	{"cuMemcpyHtoDAsync", 3020, V(cuMemcpyHtoDAsync_v2), V(cuMemcpyHtoDAsync_v2_ptsz)},
	{"cuMemcpyDtoHAsync", 3020, V(cuMemcpyDtoHAsync_v2), V(cuMemcpyDtoHAsync_v2_ptsz)},
	{"cuMemsetD8Async", 3020, V(cuMemsetD8Async), V(cuMemsetD8Async_ptsz)},
	{"cuMemsetD16Async", 3020, V(cuMemsetD16Async), V(cuMemsetD16Async_ptsz)},
	{"cuMemsetD32Async", 3020, V(cuMemsetD32Async), V(cuMemsetD32Async_ptsz)},
	{"cuMemAllocAsync", 11020, V(cuMemAllocAsync), V(cuMemAllocAsync_ptsz)},
	{"cuMemFreeAsync", 11020, V(cuMemFreeAsync), V(cuMemFreeAsync_ptsz)},
	{"cuMemAllocFromPoolAsync", 11020, V(cuMemAllocFromPoolAsync), V(cuMemAllocFromPoolAsync_ptsz)},
	{"cuDeviceGetDefaultMemPool", 11020, V(cuDeviceGetDefaultMemPool), NOPT},
	{"cuMemPoolCreate", 11020, V(cuMemPoolCreate), NOPT},
	{"cuMemPoolDestroy", 11020, V(cuMemPoolDestroy), NOPT},
	{"cuStreamCreate", 2000, V(cuStreamCreate), NOPT},
	{"cuStreamDestroy", 4000, V(cuStreamDestroy_v2), NOPT},
	{"cuStreamSynchronize", 2000, V(cuStreamSynchronize), V(cuStreamSynchronize_ptsz)},
	{"cuEventCreate", 2000, V(cuEventCreate), NOPT},
	{"cuEventRecord", 2000, V(cuEventRecord), V(cuEventRecord_ptsz)},
	{"cuEventRecordWithFlags", 11010, V(cuEventRecordWithFlags), V(cuEventRecordWithFlags_ptsz)},
	{"cuStreamWaitEvent", 3020, V(cuStreamWaitEvent), V(cuStreamWaitEvent_ptsz)},
	{"cuEventQuery", 2000, V(cuEventQuery), NOPT},
	{"cuEventSynchronize", 2000, V(cuEventSynchronize), NOPT},
	{"cuEventDestroy", 4000, V(cuEventDestroy_v2), NOPT},
	{"cuModuleLoadData", 2000, V(cuModuleLoadData), NOPT},
	{"cuModuleUnload", 2000, V(cuModuleUnload), NOPT},
	{"cuModuleGetFunction", 2000, V(cuModuleGetFunction), NOPT},
	{"cuFuncGetParamInfo", 12040, V(cuFuncGetParamInfo), NOPT},
	{"cuLaunchKernel", 4000, V(cuLaunchKernel), V(cuLaunchKernel_ptsz)},
	{"cuLaunchKernelEx", 11060, V(cuLaunchKernelEx), V(cuLaunchKernelEx_ptsz)},
	{"cuStreamBeginCapture", 10000, V(cuStreamBeginCapture), V(cuStreamBeginCapture_ptsz)},
	{"cuStreamBeginCapture", 10010, V(cuStreamBeginCapture_v2), V(cuStreamBeginCapture_v2_ptsz)},
	{"cuStreamEndCapture", 10000, V(cuStreamEndCapture), V(cuStreamEndCapture_ptsz)},
	{"cuStreamIsCapturing", 10000, V(cuStreamIsCapturing), V(cuStreamIsCapturing_ptsz)},
	{"cuThreadExchangeStreamCaptureMode", 10010, V(cuThreadExchangeStreamCaptureMode), NOPT},
	{"cuGraphInstantiate", 10000, V(cuGraphInstantiate), NOPT},
	{"cuGraphInstantiate", 11000, V(cuGraphInstantiate_v2), NOPT},
	{"cuGraphInstantiate", 12000, V(cuGraphInstantiateWithFlags), NOPT},
	{"cuGraphInstantiateWithFlags", 11040, V(cuGraphInstantiateWithFlags), NOPT},
	{"cuGraphLaunch", 10000, V(cuGraphLaunch), V(cuGraphLaunch_ptsz)},
	{"cuGraphExecUpdate", 10020, V(cuGraphExecUpdate), NOPT},
	{"cuGraphExecUpdate", 12000, V(cuGraphExecUpdate_v2), NOPT},
	{"cuGraphGetNodes", 10000, V(cuGraphGetNodes), NOPT},
	{"cuGraphNodeGetType", 10000, V(cuGraphNodeGetType), NOPT},
	{"cuGraphMemsetNodeGetParams", 10000, V(cuGraphMemsetNodeGetParams), NOPT},
	{"cuGraphMemcpyNodeGetParams", 10000, V(cuGraphMemcpyNodeGetParams), NOPT},
	{"cuGraphExecDestroy", 10000, V(cuGraphExecDestroy), NOPT},
	{"cuGraphDestroy", 10000, V(cuGraphDestroy), NOPT},
	{"cuGetErrorName", 6000, V(cuGetErrorName), NOPT},
	{"cuGetErrorString", 6000, V(cuGetErrorString), NOPT},
	{"cuGetProcAddress", 11030, V(cuGetProcAddress), NOPT},
	{"cuGetProcAddress", 12000, V(cuGetProcAddress_v2), NOPT},
};

/* cuGetProcAddress' flags and CUdriverProcAddressQueryResult. */
#define CU_GET_PROC_ADDRESS_LEGACY_STREAM 0x1
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 0x2
enum { CU_GET_PROC_ADDRESS_SUCCESS = 0, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2 };

/* exported says whether the build exports sym (a missing-symbol variant, built with RC_OMIT, does
 * not: the driver it stands for lacks it). */
static int exported(const char *sym) {
#ifdef RC_OMIT
	return strcmp(sym, RC_OMIT) != 0;
#else
	(void)sym;
	return 1;
#endif
}

static CUresult get_proc(const char *entry, const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags, int *status) {
	cu_call c = {.entry = entry};
	int err = rc_enter(entry), st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
#ifdef RC_STUB
	if (!err) {
		rc_set_detail("%s: CUDA driver is a stub library (fake)", entry);
		err = CUDA_ERROR_STUB_LIBRARY;
	}
#endif
	if (!err && (!symbol || !pfn))
		err = null_arg(symbol ? "pfn" : "symbol");
	if (!err && (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
		err = rc_fail("invalid-value", "%s: unknown flags %#llx", entry, flags);
	if (err)
		return end(&c, err);
	const proc_t *best = NULL;
	for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
		if (strcmp(procs[i].name, symbol) != 0)
			continue;
		if (procs[i].since > cudaVersion) {
			st = best ? st : CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
			continue;
		}
		if (!best || procs[i].since > best->since)
			best = &procs[i];
	}
	*pfn = NULL;
	if (best) {
		int ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->ptsz && cudaVersion >= 7000;
		const char *sym = ptsz ? best->ptsz : best->sym;
		if (exported(sym)) {
			*pfn = ptsz ? best->ptsz_fn : best->fn;
			st = CU_GET_PROC_ADDRESS_SUCCESS;
		} else {
			st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		}
	}
	if (status)
		*status = st;
	if (!*pfn) {
		rc_set_detail("%s: %s %s", entry, symbol,
			      st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? "needs a later CUDA version than the one asked for"
									       : "is not an entry point of the fake");
		err = CUDA_ERROR_NOT_FOUND;
	}
	return end(&c, err);
}

RC_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
	return get_proc("cuGetProcAddress", symbol, pfn, cudaVersion, flags, NULL);
}

RC_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags, int *symbolStatus) {
	return get_proc("cuGetProcAddress_v2", symbol, pfn, cudaVersion, flags, symbolStatus);
}
