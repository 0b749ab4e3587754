/* cuda.c: the CUDA driver API entry points the interposer wraps.
 *
 * Each wrapper has the exported name and the signature NVIDIA's cuda.h gives that exported symbol
 * on 64-bit Linux (the unversioned legacy names keep their legacy signatures: cuMemAlloc takes a
 * 32-bit CUdeviceptr_v1, cuStreamBeginCapture no mode), calls the real function and tells core.c
 * what the call changed. Handles are pointers, CUresult and enums int. A wrapper whose real
 * function the loaded driver lacks answers CUDA_ERROR_NOT_FOUND. Kernel arguments are read with
 * the driver's own layout (cuFuncGetParamInfo), cached per function. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcw.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef unsigned int CUdeviceptr_v1;
typedef unsigned long long cuuint64_t;
typedef void *CUstream;
typedef void *CUevent;
typedef void *CUgraph;
typedef void *CUgraphExec;
typedef void *CUgraphNode;
typedef void *CUfunction;
typedef void *CUmemoryPool;

typedef struct CUlaunchConfig_st {
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	CUstream hStream;
	void *attrs; /* CUlaunchAttribute * */
	unsigned int numAttrs;
} CUlaunchConfig;

typedef struct CUDA_GRAPH_INSTANTIATE_PARAMS_st {
	cuuint64_t flags;
	CUstream hUploadStream;
	CUgraphNode hErrNode_out;
	int result_out; /* CUgraphInstantiateResult */
} CUDA_GRAPH_INSTANTIATE_PARAMS;

_Static_assert(sizeof(CUlaunchConfig) == 56, "CUlaunchConfig is 56 bytes on LP64");
_Static_assert(sizeof(CUDA_GRAPH_INSTANTIATE_PARAMS) == 32, "CUDA_GRAPH_INSTANTIATE_PARAMS is 32 bytes on LP64");

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_STREAM_CAPTURE_INVALIDATED 901
#define CUDA_ERROR_STREAM_CAPTURE_UNJOINED 904
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 0x2
#define CU_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define CU_LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)
#define CU_STREAM_CAPTURE_MODE_GLOBAL 0

#define CUDA_ENTRIES(X)                                                                                                \
	X(cuMemAlloc, 0) X(cuMemAlloc_v2, 0) X(cuMemFree, 0) X(cuMemFree_v2, 0) X(cuMemAllocAsync, 0)                  \
	X(cuMemAllocAsync_ptsz, 1) X(cuMemFreeAsync, 0) X(cuMemFreeAsync_ptsz, 1) X(cuMemAllocFromPoolAsync, 0)        \
	X(cuMemAllocFromPoolAsync_ptsz, 1) X(cuMemAllocHost, 0) X(cuMemAllocHost_v2, 0) X(cuMemHostAlloc, 0)           \
	X(cuMemFreeHost, 0) X(cuStreamBeginCapture, 0) X(cuStreamBeginCapture_ptsz, 1) X(cuStreamBeginCapture_v2, 0)   \
	X(cuStreamBeginCapture_v2_ptsz, 1) X(cuStreamEndCapture, 0) X(cuStreamEndCapture_ptsz, 1)                      \
	X(cuThreadExchangeStreamCaptureMode, 0) X(cuGraphInstantiate, 0) X(cuGraphInstantiate_v2, 0)                   \
	X(cuGraphInstantiateWithFlags, 0) X(cuGraphInstantiateWithParams, 0) X(cuGraphInstantiateWithParams_ptsz, 1)   \
	X(cuGraphExecUpdate, 0) X(cuGraphExecUpdate_v2, 0) X(cuGraphLaunch, 0) X(cuGraphLaunch_ptsz, 1)                \
	X(cuGraphExecDestroy, 0) X(cuGraphDestroy, 0) X(cuMemcpyAsync, 0) X(cuMemcpyAsync_ptsz, 1)                     \
	X(cuMemcpyHtoDAsync_v2, 0) X(cuMemcpyHtoDAsync_v2_ptsz, 1) X(cuMemcpyDtoHAsync_v2, 0)                          \
	X(cuMemcpyDtoHAsync_v2_ptsz, 1) X(cuMemcpyDtoDAsync_v2, 0) X(cuMemcpyDtoDAsync_v2_ptsz, 1)                     \
	X(cuMemsetD8Async, 0) X(cuMemsetD8Async_ptsz, 1) X(cuMemsetD16Async, 0) X(cuMemsetD16Async_ptsz, 1)            \
	X(cuMemsetD32Async, 0) X(cuMemsetD32Async_ptsz, 1) X(cuLaunchKernel, 0) X(cuLaunchKernel_ptsz, 1)              \
	X(cuLaunchKernelEx, 0) X(cuLaunchKernelEx_ptsz, 1) X(cuEventRecord, 0) X(cuEventRecord_ptsz, 1)                \
	X(cuEventRecordWithFlags, 0) X(cuEventRecordWithFlags_ptsz, 1) X(cuStreamWaitEvent, 0)                         \
	X(cuStreamWaitEvent_ptsz, 1) X(cuStreamSynchronize, 0) X(cuStreamSynchronize_ptsz, 1) X(cuCtxSynchronize, 0)   \
	X(cuEventSynchronize, 0) X(cuGetProcAddress, 0) X(cuGetProcAddress_v2, 0)

#define ENUM(n, p) E_##n,
enum { CUDA_ENTRIES(ENUM) E_COUNT };

#define H(p) ((uint64_t)(uintptr_t)(p))
#define ON rcw_watching(RCW_CUDA)
/* real: the driver's n, or the wrapper answers CUDA_ERROR_NOT_FOUND. */
#define REAL(n)                                                                                 \
	__typeof__(&n) real = (__typeof__(&n))rcw_real(RCW_CUDA, &rcw_cuda_entries[E_##n]); \
	if (!real)                                                                              \
	return CUDA_ERROR_NOT_FOUND

/* The stream's key: CU_STREAM_LEGACY (0x1) is the legacy stream 0; CU_STREAM_PER_THREAD (0x2),
 * and NULL passed to a per-thread variant, the calling thread's per-thread stream. */
static uint64_t skey(CUstream s, int ptsz) {
	uint64_t h = H(s);
	if (h == 2 || (h == 0 && ptsz))
		return RCW_PTDS | (uint64_t)rcw_tid();
	return h == 1 ? 0 : h;
}

/* ---- allocations ---- */

RCW_API CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytes) {
	REAL(cuMemAlloc);
	CUresult r = real(dptr, bytes);
	if (!r && dptr && ON)
		rcw_alloc("cuMemAlloc", *dptr, bytes, RCW_DEVICE, 0, 0);
	return r;
}

RCW_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) {
	REAL(cuMemAlloc_v2);
	CUresult r = real(dptr, bytes);
	if (!r && dptr && ON)
		rcw_alloc("cuMemAlloc_v2", *dptr, bytes, RCW_DEVICE, 0, 0);
	return r;
}

RCW_API CUresult cuMemFree(CUdeviceptr_v1 dptr) {
	REAL(cuMemFree);
	CUresult r = real(dptr);
	if (!r && ON)
		rcw_free("cuMemFree", dptr, RCW_DEVICE, 0);
	return r;
}

RCW_API CUresult cuMemFree_v2(CUdeviceptr dptr) {
	REAL(cuMemFree_v2);
	CUresult r = real(dptr);
	if (!r && ON)
		rcw_free("cuMemFree_v2", dptr, RCW_DEVICE, 0);
	return r;
}

#define ALLOC_ASYNC(n, ptsz)                                                               \
	RCW_API CUresult n(CUdeviceptr *dptr, size_t bytes, CUstream s) {                  \
		REAL(n);                                                                   \
		CUresult r = real(dptr, bytes, s);                                         \
		if (!r && dptr && ON)                                                      \
			rcw_alloc(#n, *dptr, bytes, RCW_ASYNC, 0, skey(s, ptsz));          \
		return r;                                                                  \
	}
ALLOC_ASYNC(cuMemAllocAsync, 0)
ALLOC_ASYNC(cuMemAllocAsync_ptsz, 1)

#define FREE_ASYNC(n, ptsz)                                                \
	RCW_API CUresult n(CUdeviceptr dptr, CUstream s) {                 \
		REAL(n);                                                   \
		CUresult r = real(dptr, s);                                \
		if (!r && ON)                                              \
			rcw_free(#n, dptr, RCW_ASYNC, skey(s, ptsz));      \
		return r;                                                  \
	}
FREE_ASYNC(cuMemFreeAsync, 0)
FREE_ASYNC(cuMemFreeAsync_ptsz, 1)

#define ALLOC_POOL(n, ptsz)                                                                      \
	RCW_API CUresult n(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s) {     \
		REAL(n);                                                                         \
		CUresult r = real(dptr, bytes, pool, s);                                         \
		if (!r && dptr && ON)                                                            \
			rcw_alloc(#n, *dptr, bytes, RCW_ASYNC, H(pool), skey(s, ptsz));          \
		return r;                                                                        \
	}
ALLOC_POOL(cuMemAllocFromPoolAsync, 0)
ALLOC_POOL(cuMemAllocFromPoolAsync_ptsz, 1)

RCW_API CUresult cuMemAllocHost(void **pp, unsigned int bytes) {
	REAL(cuMemAllocHost);
	CUresult r = real(pp, bytes);
	if (!r && pp && ON)
		rcw_alloc("cuMemAllocHost", H(*pp), bytes, RCW_HOST, 0, 0);
	return r;
}

RCW_API CUresult cuMemAllocHost_v2(void **pp, size_t bytes) {
	REAL(cuMemAllocHost_v2);
	CUresult r = real(pp, bytes);
	if (!r && pp && ON)
		rcw_alloc("cuMemAllocHost_v2", H(*pp), bytes, RCW_HOST, 0, 0);
	return r;
}

RCW_API CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags) {
	REAL(cuMemHostAlloc);
	CUresult r = real(pp, bytes, flags);
	if (!r && pp && ON)
		rcw_alloc("cuMemHostAlloc", H(*pp), bytes, RCW_HOST, 0, 0);
	return r;
}

RCW_API CUresult cuMemFreeHost(void *p) {
	REAL(cuMemFreeHost);
	CUresult r = real(p);
	if (!r && ON)
		rcw_free("cuMemFreeHost", H(p), RCW_HOST, 0);
	return r;
}

/* ---- captures ---- */

#define BEGIN1(n, ptsz)                                                                        \
	RCW_API CUresult n(CUstream s) {                                                       \
		REAL(n);                                                                       \
		CUresult r = real(s);                                                          \
		if (!r && ON)                                                                  \
			rcw_begin(#n, skey(s, ptsz), CU_STREAM_CAPTURE_MODE_GLOBAL);           \
		return r;                                                                      \
	}
BEGIN1(cuStreamBeginCapture, 0)
BEGIN1(cuStreamBeginCapture_ptsz, 1)

#define BEGIN2(n, ptsz)                                          \
	RCW_API CUresult n(CUstream s, int mode) {               \
		REAL(n);                                         \
		CUresult r = real(s, mode);                      \
		if (!r && ON)                                    \
			rcw_begin(#n, skey(s, ptsz), mode);      \
		return r;                                        \
	}
BEGIN2(cuStreamBeginCapture_v2, 0)
BEGIN2(cuStreamBeginCapture_v2_ptsz, 1)

/* The capture is over when the end succeeds, and when it fails because the capture was
 * invalidated or left a forked stream unjoined; other failures leave it in progress. */
#define END(n, ptsz)                                                                                      \
	RCW_API CUresult n(CUstream s, CUgraph *graph) {                                                  \
		REAL(n);                                                                                  \
		CUresult r = real(s, graph);                                                              \
		if (ON) {                                                                                 \
			if (!r && graph)                                                                  \
				rcw_end(#n, skey(s, ptsz), H(*graph), 1, 0);                              \
			else if (r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED || r == CUDA_ERROR_STREAM_CAPTURE_UNJOINED) \
				rcw_end(#n, skey(s, ptsz), 0, 0, 0);                                      \
		}                                                                                         \
		return r;                                                                                 \
	}
END(cuStreamEndCapture, 0)
END(cuStreamEndCapture_ptsz, 1)

RCW_API CUresult cuThreadExchangeStreamCaptureMode(int *mode) {
	REAL(cuThreadExchangeStreamCaptureMode);
	int want = mode ? *mode : 0;
	CUresult r = real(mode);
	if (!r && mode && ON)
		rcw_mode("cuThreadExchangeStreamCaptureMode", want);
	return r;
}

/* ---- graphs ---- */

#define INSTANTIATE5(n)                                                                                  \
	RCW_API CUresult n(CUgraphExec *exec, CUgraph g, CUgraphNode *errNode, char *log, size_t logSize) { \
		REAL(n);                                                                                 \
		CUresult r = real(exec, g, errNode, log, logSize);                                       \
		if (!r && exec && ON)                                                                    \
			rcw_instantiate(#n, H(g), H(*exec));                                             \
		return r;                                                                                \
	}
INSTANTIATE5(cuGraphInstantiate)
INSTANTIATE5(cuGraphInstantiate_v2)

RCW_API CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph g, unsigned long long flags) {
	REAL(cuGraphInstantiateWithFlags);
	CUresult r = real(exec, g, flags);
	if (!r && exec && ON)
		rcw_instantiate("cuGraphInstantiateWithFlags", H(g), H(*exec));
	return r;
}

#define INSTANTIATE_PARAMS(n)                                                                        \
	RCW_API CUresult n(CUgraphExec *exec, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *params) {    \
		REAL(n);                                                                             \
		CUresult r = real(exec, g, params);                                                  \
		if (!r && exec && ON)                                                                \
			rcw_instantiate(#n, H(g), H(*exec));                                         \
		return r;                                                                            \
	}
INSTANTIATE_PARAMS(cuGraphInstantiateWithParams)
INSTANTIATE_PARAMS(cuGraphInstantiateWithParams_ptsz)

/* v1: (exec, graph, CUgraphNode *hErrorNode_out, CUgraphExecUpdateResult *updateResult_out). */
RCW_API CUresult cuGraphExecUpdate(CUgraphExec exec, CUgraph g, CUgraphNode *errNode, int *result) {
	REAL(cuGraphExecUpdate);
	CUresult r = real(exec, g, errNode, result);
	if (ON)
		rcw_update("cuGraphExecUpdate", H(exec), H(g), r == CUDA_SUCCESS);
	return r;
}

/* v2: (exec, graph, CUgraphExecUpdateResultInfo *resultInfo). */
RCW_API CUresult cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph g, void *resultInfo) {
	REAL(cuGraphExecUpdate_v2);
	CUresult r = real(exec, g, resultInfo);
	if (ON)
		rcw_update("cuGraphExecUpdate_v2", H(exec), H(g), r == CUDA_SUCCESS);
	return r;
}

/* A stale launch under RC_WATCH_REFUSE=1 never reaches the driver. */
#define LAUNCH(n, ptsz)                                                                          \
	RCW_API CUresult n(CUgraphExec exec, CUstream s) {                                       \
		REAL(n);                                                                         \
		if (ON && rcw_launch(#n, H(exec), skey(s, ptsz)))                                \
			return CUDA_ERROR_INVALID_VALUE;                                         \
		return real(exec, s);                                                            \
	}
LAUNCH(cuGraphLaunch, 0)
LAUNCH(cuGraphLaunch_ptsz, 1)

RCW_API CUresult cuGraphExecDestroy(CUgraphExec exec) {
	REAL(cuGraphExecDestroy);
	CUresult r = real(exec);
	if (!r && ON)
		rcw_destroy_exec("cuGraphExecDestroy", H(exec));
	return r;
}

RCW_API CUresult cuGraphDestroy(CUgraph g) {
	REAL(cuGraphDestroy);
	CUresult r = real(g);
	if (!r && ON)
		rcw_destroy_graph("cuGraphDestroy", H(g));
	return r;
}

/* ---- copies and memsets ---- */

/* Outside every capture a copy, memset or kernel launch only passes through: the wrapper is a
 * tail call after two loads, and the watched path is a function of its own, so that the fast one
 * saves no registers. */
#define FAST(n, ...)                                                                         \
	__typeof__(&n) real = (__typeof__(&n))__atomic_load_n(&rcw_cuda_entries[E_##n].real, __ATOMIC_ACQUIRE); \
	if (real && !rcw_capturing())                                                        \
		return real(__VA_ARGS__);                                                    \
	return n##_watched(__VA_ARGS__)

#define COPY(n, ptsz, dt, st)                                                                \
	RCW_API CUresult n(dt dst, st src, size_t bytes, CUstream s);                        \
	__attribute__((noinline)) static CUresult n##_watched(dt dst, st src, size_t bytes, CUstream s) { \
		REAL(n);                                                                     \
		CUresult r = real(dst, src, bytes, s);                                       \
		if (!r && ON && rcw_capturing())                                             \
			rcw_copy(#n, skey(s, ptsz), H(dst), H(src), bytes);                  \
		return r;                                                                    \
	}                                                                                    \
	RCW_API CUresult n(dt dst, st src, size_t bytes, CUstream s) { FAST(n, dst, src, bytes, s); }
COPY(cuMemcpyAsync, 0, CUdeviceptr, CUdeviceptr)
COPY(cuMemcpyAsync_ptsz, 1, CUdeviceptr, CUdeviceptr)
COPY(cuMemcpyHtoDAsync_v2, 0, CUdeviceptr, const void *)
COPY(cuMemcpyHtoDAsync_v2_ptsz, 1, CUdeviceptr, const void *)
COPY(cuMemcpyDtoHAsync_v2, 0, void *, CUdeviceptr)
COPY(cuMemcpyDtoHAsync_v2_ptsz, 1, void *, CUdeviceptr)
COPY(cuMemcpyDtoDAsync_v2, 0, CUdeviceptr, CUdeviceptr)
COPY(cuMemcpyDtoDAsync_v2_ptsz, 1, CUdeviceptr, CUdeviceptr)

#define MEMSET(n, ptsz, vt, width)                                                           \
	RCW_API CUresult n(CUdeviceptr dst, vt value, size_t count, CUstream s);             \
	__attribute__((noinline)) static CUresult n##_watched(CUdeviceptr dst, vt value, size_t count, CUstream s) { \
		REAL(n);                                                                     \
		CUresult r = real(dst, value, count, s);                                     \
		if (!r && ON && rcw_capturing())                                             \
			rcw_memset(#n, skey(s, ptsz), dst, (uint64_t)count * (width));       \
		return r;                                                                    \
	}                                                                                    \
	RCW_API CUresult n(CUdeviceptr dst, vt value, size_t count, CUstream s) { FAST(n, dst, value, count, s); }
MEMSET(cuMemsetD8Async, 0, unsigned char, 1)
MEMSET(cuMemsetD8Async_ptsz, 1, unsigned char, 1)
MEMSET(cuMemsetD16Async, 0, unsigned short, 2)
MEMSET(cuMemsetD16Async_ptsz, 1, unsigned short, 2)
MEMSET(cuMemsetD32Async, 0, unsigned int, 4)
MEMSET(cuMemsetD32Async_ptsz, 1, unsigned int, 4)

/* ---- kernels ---- */

/* A function's parameter layout, from cuFuncGetParamInfo: n parameters (0 with none: no layout). */
typedef struct {
	uint64_t func;
	size_t n;
	size_t *size;
} layout_t;

static pthread_mutex_t g_layout_lock = PTHREAD_MUTEX_INITIALIZER;
static layout_t *g_layouts; /* sorted by func */
static size_t g_layouts_n, g_layouts_cap;
static rcw_entry g_getparam = {"cuFuncGetParamInfo", NULL, 0, NULL, 0};

#define MAX_PARAMS 4096

/* The layout of f, asking the driver the first time (*first set then). */
static layout_t *layout_of(CUfunction f, int *first) {
	uint64_t key = H(f);
	size_t lo = 0, hi = g_layouts_n;
	*first = 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (g_layouts[mid].func < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < g_layouts_n && g_layouts[lo].func == key)
		return &g_layouts[lo];
	*first = 1;
	layout_t l = {key, 0, NULL};
	CUresult (*info)(CUfunction, size_t, size_t *, size_t *) =
		(CUresult(*)(CUfunction, size_t, size_t *, size_t *))rcw_real(RCW_CUDA, &g_getparam);
	if (info) {
		size_t cap = 0, off, size;
		while (l.n < MAX_PARAMS && info(f, l.n, &off, &size) == CUDA_SUCCESS) {
			if (l.n == cap) {
				cap = cap ? cap * 2 : 8;
				size_t *t = realloc(l.size, cap * sizeof *t);
				if (!t)
					break;
				l.size = t;
			}
			l.size[l.n++] = size;
		}
	}
	if (g_layouts_n == g_layouts_cap) {
		size_t cap = g_layouts_cap ? g_layouts_cap * 2 : 64;
		layout_t *t = realloc(g_layouts, cap * sizeof *t);
		if (!t) {
			free(l.size);
			return NULL;
		}
		g_layouts = t;
		g_layouts_cap = cap;
	}
	memmove(g_layouts + lo + 1, g_layouts + lo, (g_layouts_n - lo) * sizeof *g_layouts);
	g_layouts[lo] = l;
	g_layouts_n++;
	return &g_layouts[lo];
}

/* A kernel launched into a capture, or by a thread with one: its arguments, by the driver's layout,
 * or the one buffer extra passes (CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE: argument 0). */
static void kernel(const char *call, CUfunction f, uint64_t stream, void **params, void **extra) {
	if (!rcw_capturing())
		return;
	rcw_arg one;
	const void *buf = NULL;
	size_t bufsize = 0;
	int have_size = 0;
	for (size_t i = 0; !params && extra && extra[i]; i += 2) {
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
			buf = extra[i + 1];
		else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1]) {
			bufsize = *(const size_t *)extra[i + 1];
			have_size = 1;
		}
	}
	if (!params && buf && have_size) {
		one = (rcw_arg){buf, bufsize};
		rcw_kernel(call, stream, H(f), &one, 1, 0, NULL);
		return;
	}
	pthread_mutex_lock(&g_layout_lock);
	int first;
	layout_t *l = layout_of(f, &first);
	size_t n = l ? l->n : 0;
	rcw_arg stackargs[32], *args = stackargs;
	if (n > 32 && !(args = malloc(n * sizeof *args)))
		n = 0;
	for (size_t i = 0; i < n; i++)
		args[i] = (rcw_arg){params ? params[i] : NULL, l->size[i]};
	pthread_mutex_unlock(&g_layout_lock);
	char note[160];
	if (!n && first)
		snprintf(note, sizeof note,
			 "kernel function 0x%llx has no parameter layout (cuFuncGetParamInfo): its arguments are not scanned",
			 (unsigned long long)H(f));
	rcw_kernel(call, stream, H(f), args, n, n == 0, !n && first ? note : NULL);
	if (args != stackargs)
		free(args);
}

#define LAUNCH_KERNEL(n, ptsz)                                                                                    \
	RCW_API CUresult n(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,      \
			   unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params, void **extra); \
	__attribute__((noinline)) static CUresult n##_watched(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, \
			   unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params, void **extra) { \
		REAL(n);                                                                                          \
		CUresult r = real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);                            \
		if (!r && ON)                                                                                     \
			kernel(#n, f, skey(s, ptsz), params, extra);                                              \
		return r;                                                                                         \
	}                                                                                                         \
	RCW_API CUresult n(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,      \
			   unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params, void **extra) { \
		FAST(n, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);                                      \
	}
LAUNCH_KERNEL(cuLaunchKernel, 0)
LAUNCH_KERNEL(cuLaunchKernel_ptsz, 1)

#define LAUNCH_KERNEL_EX(n, ptsz)                                                                   \
	RCW_API CUresult n(const CUlaunchConfig *config, CUfunction f, void **params, void **extra); \
	__attribute__((noinline)) static CUresult n##_watched(const CUlaunchConfig *config, CUfunction f, void **params, void **extra) { \
		REAL(n);                                                                            \
		CUresult r = real(config, f, params, extra);                                        \
		if (!r && config && ON)                                                             \
			kernel(#n, f, skey(config->hStream, ptsz), params, extra);                  \
		return r;                                                                           \
	}                                                                                           \
	RCW_API CUresult n(const CUlaunchConfig *config, CUfunction f, void **params, void **extra) { \
		FAST(n, config, f, params, extra);                                                 \
	}
LAUNCH_KERNEL_EX(cuLaunchKernelEx, 0)
LAUNCH_KERNEL_EX(cuLaunchKernelEx_ptsz, 1)

/* ---- events and synchronisation ---- */

#define RECORD(n, ptsz)                                                       \
	RCW_API CUresult n(CUevent e, CUstream s) {                           \
		REAL(n);                                                      \
		CUresult r = real(e, s);                                      \
		if (!r && ON)                                                 \
			rcw_record(#n, H(e), skey(s, ptsz));                  \
		return r;                                                     \
	}
RECORD(cuEventRecord, 0)
RECORD(cuEventRecord_ptsz, 1)

#define RECORD_FLAGS(n, ptsz)                                                 \
	RCW_API CUresult n(CUevent e, CUstream s, unsigned int flags) {       \
		REAL(n);                                                      \
		CUresult r = real(e, s, flags);                               \
		if (!r && ON)                                                 \
			rcw_record(#n, H(e), skey(s, ptsz));                  \
		return r;                                                     \
	}
RECORD_FLAGS(cuEventRecordWithFlags, 0)
RECORD_FLAGS(cuEventRecordWithFlags_ptsz, 1)

#define WAIT(n, ptsz)                                                         \
	RCW_API CUresult n(CUstream s, CUevent e, unsigned int flags) {       \
		REAL(n);                                                      \
		CUresult r = real(s, e, flags);                               \
		if (!r && ON)                                                 \
			rcw_wait(#n, skey(s, ptsz), H(e));                    \
		return r;                                                     \
	}
WAIT(cuStreamWaitEvent, 0)
WAIT(cuStreamWaitEvent_ptsz, 1)

#define SYNC_STREAM(n, ptsz)                                                          \
	RCW_API CUresult n(CUstream s) {                                              \
		REAL(n);                                                              \
		CUresult r = real(s);                                                 \
		if (!r && ON)                                                         \
			rcw_sync(#n, RCW_SYNC_STREAM, skey(s, ptsz), 0);              \
		return r;                                                             \
	}
SYNC_STREAM(cuStreamSynchronize, 0)
SYNC_STREAM(cuStreamSynchronize_ptsz, 1)

RCW_API CUresult cuCtxSynchronize(void) {
	REAL(cuCtxSynchronize);
	CUresult r = real();
	if (!r && ON)
		rcw_sync("cuCtxSynchronize", RCW_SYNC_DEVICE, 0, 0);
	return r;
}

RCW_API CUresult cuEventSynchronize(CUevent e) {
	REAL(cuEventSynchronize);
	CUresult r = real(e);
	if (!r && ON)
		rcw_sync("cuEventSynchronize", RCW_SYNC_EVENT, 0, H(e));
	return r;
}

/* ---- cuGetProcAddress: how the runtime reaches every entry point ---- */

RCW_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
	REAL(cuGetProcAddress);
	CUresult r = real(symbol, pfn, cudaVersion, flags);
	if (!r && pfn && *pfn && ON)
		*pfn = rcw_map_real(RCW_CUDA, *pfn, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0);
	return r;
}

RCW_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags, int *status) {
	REAL(cuGetProcAddress_v2);
	CUresult r = real(symbol, pfn, cudaVersion, flags, status);
	if (!r && pfn && *pfn && ON)
		*pfn = rcw_map_real(RCW_CUDA, *pfn, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0);
	return r;
}

#define ENTRY(n, p) {#n, (void *)n, p, NULL, 0},
rcw_entry rcw_cuda_entries[] = {CUDA_ENTRIES(ENTRY)};
const size_t rcw_cuda_count = E_COUNT;

void rcw_cuda_atfork_prepare(void) { pthread_mutex_lock(&g_layout_lock); }

void rcw_cuda_atfork_parent(void) { pthread_mutex_unlock(&g_layout_lock); }

/* Function handles mean nothing in the child: the cache starts over. */
void rcw_cuda_atfork_child(void) {
	pthread_mutex_init(&g_layout_lock, NULL);
	for (size_t i = 0; i < g_layouts_n; i++)
		free(g_layouts[i].size);
	g_layouts_n = 0;
}
