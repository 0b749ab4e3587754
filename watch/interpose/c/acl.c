/* acl.c: the ACL (CANN runtime, libascendcl.so) entry points the interposer wraps.
 *
 * Signatures as CANN's acl_rt.h and acl_mdl.h declare them: aclError and every enum int, handles
 * void *. A model RI made by aclmdlRICaptureEnd is both the graph and the executable graph, so its
 * end is followed by instantiate and its destroy sends destroy-exec and destroy-graph. A wrapper
 * whose real function the loaded library lacks answers ACL_ERROR_RT_FEATURE_NOT_SUPPORT.
 *
 * Kernels: every launch entry point CANN offers takes one packed argument block, argument 0 of
 * the op. A block in host memory (aclrtLaunchKernelWithHostArgs's; the list an
 * aclrtLaunchKernelWithConfig names, recorded here as aclrtKernelArgsAppend built it;
 * aclrtLaunchKernel(V2)'s when it is not device memory the interposer tracks) is scanned for
 * possible pointers. A block in device memory is not read, but is itself a range the graph reads. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcw.h"

typedef int aclError;
typedef void *aclrtStream;
typedef void *aclrtEvent;
typedef void *aclmdlRI;
typedef void *aclrtFuncHandle;
typedef void *aclrtArgsHandle;
typedef void *aclrtParamHandle;
typedef struct aclrtLaunchKernelCfg aclrtLaunchKernelCfg;
typedef struct {
	uint32_t addrOffset;
	uint32_t dataOffset;
} aclrtPlaceHolderInfo;

#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_RT_FEATURE_NOT_SUPPORT 207000
/* aclmdlRICaptureEnd failures that end the capture all the same: another thread's end of a
 * non-relaxed capture, a forked stream never joined back, an invalidated capture. */
#define ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD 107038
#define ACL_ERROR_RT_STREAM_CAPTURE_UNJOINED 107025
#define ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED 507903

#define ACL_ENTRIES(X)                                                                                         \
	X(aclrtMalloc) X(aclrtFree) X(aclrtMallocHost) X(aclrtFreeHost) X(aclmdlRICaptureBegin)                \
	X(aclmdlRICaptureEnd) X(aclmdlRICaptureThreadExchangeMode) X(aclmdlRIExecuteAsync) X(aclmdlRIDestroy)  \
	X(aclrtMemcpyAsync) X(aclrtMemsetAsync) X(aclrtLaunchKernel) X(aclrtRecordEvent)                       \
	X(aclrtStreamWaitEvent) X(aclrtSynchronizeStream) X(aclrtSynchronizeDevice) X(aclrtSynchronizeEvent)    \
	X(aclrtLaunchKernelV2) X(aclrtLaunchKernelWithHostArgs) X(aclrtLaunchKernelWithConfig)                 \
	X(aclrtKernelArgsInit) X(aclrtKernelArgsAppend)

#define ENUM(n) E_##n,
enum { ACL_ENTRIES(ENUM) E_COUNT };

#define H(p) ((uint64_t)(uintptr_t)(p))
#define ON rcw_watching(RCW_ACL)
#define REAL(n)                                                                               \
	__typeof__(&n) real = (__typeof__(&n))rcw_real(RCW_ACL, &rcw_acl_entries[E_##n]); \
	if (!real)                                                                            \
	return ACL_ERROR_RT_FEATURE_NOT_SUPPORT

/* Outside every capture a copy, memset or kernel launch only passes through, as in cuda.c: the
 * wrapper is a tail call after two loads, and the watched path is a function of its own. */
#define FAST(n, ...)                                                                                             \
	__typeof__(&n) real = (__typeof__(&n))__atomic_load_n(&rcw_acl_entries[E_##n].real, __ATOMIC_ACQUIRE); \
	if (real && !rcw_capturing())                                                                          \
		return real(__VA_ARGS__);                                                                      \
	return n##_watched(__VA_ARGS__)

RCW_API aclError aclrtMalloc(void **devPtr, size_t size, int policy) {
	REAL(aclrtMalloc);
	aclError r = real(devPtr, size, policy);
	if (!r && devPtr && ON)
		rcw_alloc("aclrtMalloc", H(*devPtr), size, RCW_DEVICE, 0, 0);
	return r;
}

RCW_API aclError aclrtFree(void *devPtr) {
	REAL(aclrtFree);
	aclError r = real(devPtr);
	if (!r && ON)
		rcw_free("aclrtFree", H(devPtr), RCW_DEVICE, 0);
	return r;
}

RCW_API aclError aclrtMallocHost(void **hostPtr, size_t size) {
	REAL(aclrtMallocHost);
	aclError r = real(hostPtr, size);
	if (!r && hostPtr && ON)
		rcw_alloc("aclrtMallocHost", H(*hostPtr), size, RCW_HOST, 0, 0);
	return r;
}

RCW_API aclError aclrtFreeHost(void *hostPtr) {
	REAL(aclrtFreeHost);
	aclError r = real(hostPtr);
	if (!r && ON)
		rcw_free("aclrtFreeHost", H(hostPtr), RCW_HOST, 0);
	return r;
}

RCW_API aclError aclmdlRICaptureBegin(aclrtStream stream, int mode) {
	REAL(aclmdlRICaptureBegin);
	aclError r = real(stream, mode);
	if (!r && ON)
		rcw_begin("aclmdlRICaptureBegin", H(stream), mode);
	return r;
}

RCW_API aclError aclmdlRICaptureEnd(aclrtStream stream, aclmdlRI *modelRI) {
	REAL(aclmdlRICaptureEnd);
	aclError r = real(stream, modelRI);
	if (ON) {
		if (!r && modelRI)
			rcw_end("aclmdlRICaptureEnd", H(stream), H(*modelRI), 1, 1);
		else if (r == ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD || r == ACL_ERROR_RT_STREAM_CAPTURE_UNJOINED ||
			 r == ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED)
			rcw_end("aclmdlRICaptureEnd", H(stream), 0, 0, 1);
	}
	return r;
}

RCW_API aclError aclmdlRICaptureThreadExchangeMode(int *mode) {
	REAL(aclmdlRICaptureThreadExchangeMode);
	int want = mode ? *mode : 0;
	aclError r = real(mode);
	if (!r && mode && ON)
		rcw_mode("aclmdlRICaptureThreadExchangeMode", want);
	return r;
}

/* A stale launch under RC_WATCH_REFUSE=1 never reaches the runtime. */
RCW_API aclError aclmdlRIExecuteAsync(aclmdlRI modelRI, aclrtStream stream) {
	REAL(aclmdlRIExecuteAsync);
	if (ON && rcw_launch("aclmdlRIExecuteAsync", H(modelRI), H(stream)))
		return ACL_ERROR_INVALID_PARAM;
	return real(modelRI, stream);
}

RCW_API aclError aclmdlRIDestroy(aclmdlRI modelRI) {
	REAL(aclmdlRIDestroy);
	aclError r = real(modelRI);
	if (!r && ON) {
		rcw_destroy_exec("aclmdlRIDestroy", H(modelRI));
		rcw_destroy_graph("aclmdlRIDestroy", H(modelRI));
	}
	return r;
}

RCW_API aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, int kind, aclrtStream stream);
__attribute__((noinline)) static aclError aclrtMemcpyAsync_watched(void *dst, size_t destMax, const void *src, size_t count, int kind,
								   aclrtStream stream) {
	REAL(aclrtMemcpyAsync);
	aclError r = real(dst, destMax, src, count, kind, stream);
	if (!r && ON)
		rcw_copy("aclrtMemcpyAsync", H(stream), H(dst), H(src), count);
	return r;
}
RCW_API aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, int kind, aclrtStream stream) {
	FAST(aclrtMemcpyAsync, dst, destMax, src, count, kind, stream);
}

RCW_API aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream);
__attribute__((noinline)) static aclError aclrtMemsetAsync_watched(void *devPtr, size_t maxCount, int32_t value, size_t count,
								   aclrtStream stream) {
	REAL(aclrtMemsetAsync);
	aclError r = real(devPtr, maxCount, value, count, stream);
	if (!r && ON)
		rcw_memset("aclrtMemsetAsync", H(stream), H(devPtr), count);
	return r;
}
RCW_API aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
	FAST(aclrtMemsetAsync, devPtr, maxCount, value, count, stream);
}

/* ---- kernels ---- */

/* A launch whose argument block the caller placed (aclrtLaunchKernel, V2): in device memory the
 * interposer tracks, the host must not read it (said once per entry point, in *noted), and the
 * graph reads the block itself when it runs: r=, so freeing or re-allocating it makes the graph
 * stale. Anywhere else it is host memory, scanned, never past argsSize. */
static void placed_block(const char *call, atomic_int *noted, aclrtStream stream, aclrtFuncHandle f, const void *argsData,
			 size_t argsSize) {
	if (argsData && rcw_device_memory(H(argsData))) {
		char note[200];
		const char *say = NULL;
		if (!atomic_exchange(noted, 1)) {
			snprintf(note, sizeof note,
				 "%s: an argument block in device memory is not read: its pointers are not followed (the block itself is a range the graph reads)",
				 call);
			say = note;
		}
		rcw_kernel_block(call, H(stream), H(f), H(argsData), argsSize, say);
		return;
	}
	rcw_arg a = {argsData, argsData ? argsSize : 0};
	rcw_kernel(call, H(stream), H(f), &a, 1, 0, NULL);
}

RCW_API aclError aclrtLaunchKernel(aclrtFuncHandle funcHandle, uint32_t numBlocks, const void *argsData, size_t argsSize,
				   aclrtStream stream);
__attribute__((noinline)) static aclError aclrtLaunchKernel_watched(aclrtFuncHandle funcHandle, uint32_t numBlocks, const void *argsData,
								    size_t argsSize, aclrtStream stream) {
	static atomic_int noted;
	REAL(aclrtLaunchKernel);
	aclError r = real(funcHandle, numBlocks, argsData, argsSize, stream);
	if (!r && ON)
		placed_block("aclrtLaunchKernel", &noted, stream, funcHandle, argsData, argsSize);
	return r;
}
RCW_API aclError aclrtLaunchKernel(aclrtFuncHandle funcHandle, uint32_t numBlocks, const void *argsData, size_t argsSize,
				   aclrtStream stream) {
	FAST(aclrtLaunchKernel, funcHandle, numBlocks, argsData, argsSize, stream);
}

RCW_API aclError aclrtLaunchKernelV2(aclrtFuncHandle funcHandle, uint32_t numBlocks, const void *argsData, size_t argsSize,
				     aclrtLaunchKernelCfg *cfg, aclrtStream stream);
__attribute__((noinline)) static aclError aclrtLaunchKernelV2_watched(aclrtFuncHandle funcHandle, uint32_t numBlocks, const void *argsData,
								      size_t argsSize, aclrtLaunchKernelCfg *cfg, aclrtStream stream) {
	static atomic_int noted;
	REAL(aclrtLaunchKernelV2);
	aclError r = real(funcHandle, numBlocks, argsData, argsSize, cfg, stream);
	if (!r && ON)
		placed_block("aclrtLaunchKernelV2", &noted, stream, funcHandle, argsData, argsSize);
	return r;
}
RCW_API aclError aclrtLaunchKernelV2(aclrtFuncHandle funcHandle, uint32_t numBlocks, const void *argsData, size_t argsSize,
				     aclrtLaunchKernelCfg *cfg, aclrtStream stream) {
	FAST(aclrtLaunchKernelV2, funcHandle, numBlocks, argsData, argsSize, cfg, stream);
}

/* hostArgs is host memory the runtime copies: scanned whole (placeholders' data areas lie inside
 * it), never past argsSize. */
RCW_API aclError aclrtLaunchKernelWithHostArgs(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream,
					       aclrtLaunchKernelCfg *cfg, void *hostArgs, size_t argsSize,
					       aclrtPlaceHolderInfo *placeHolderArray, size_t placeHolderNum);
__attribute__((noinline)) static aclError aclrtLaunchKernelWithHostArgs_watched(aclrtFuncHandle funcHandle, uint32_t numBlocks,
										aclrtStream stream, aclrtLaunchKernelCfg *cfg,
										void *hostArgs, size_t argsSize,
										aclrtPlaceHolderInfo *placeHolderArray,
										size_t placeHolderNum) {
	REAL(aclrtLaunchKernelWithHostArgs);
	aclError r = real(funcHandle, numBlocks, stream, cfg, hostArgs, argsSize, placeHolderArray, placeHolderNum);
	if (!r && ON) {
		rcw_arg a = {hostArgs, hostArgs ? argsSize : 0};
		rcw_kernel("aclrtLaunchKernelWithHostArgs", H(stream), H(funcHandle), &a, 1, 0, NULL);
	}
	return r;
}
RCW_API aclError aclrtLaunchKernelWithHostArgs(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream,
					       aclrtLaunchKernelCfg *cfg, void *hostArgs, size_t argsSize,
					       aclrtPlaceHolderInfo *placeHolderArray, size_t placeHolderNum) {
	FAST(aclrtLaunchKernelWithHostArgs, funcHandle, numBlocks, stream, cfg, hostArgs, argsSize, placeHolderArray, placeHolderNum);
}

/* Argument lists (aclrtKernelArgsInit, aclrtKernelArgsAppend): the bytes appended to each handle,
 * recorded host-side as the runtime copies them, so a launch with the list is scanned without
 * asking the runtime anything. A direct-mapped table: a list whose slot a newer one took, or one
 * made before the interposer watched, is unknown, and its launch says so once (nolayout). At
 * most LIST_BYTES of a list are kept: the scan stops there. Recorded whether or not a capture is
 * in progress: a list may be built before its capture begins. */
#define LISTS 1024
#define LIST_BYTES 4096
typedef struct {
	uint64_t handle; /* 0: free */
	size_t n, cap;
	unsigned char *bytes;
} arglist;
static arglist g_lists[LISTS];
static pthread_mutex_t g_lists_lock = PTHREAD_MUTEX_INITIALIZER;

static arglist *list_slot(uint64_t h) { return &g_lists[(size_t)((h * 0x9e3779b97f4a7c15ull) >> 54) & (LISTS - 1)]; }

static void lists_lock(void) { pthread_mutex_lock(&g_lists_lock); }
static void lists_unlock(void) { pthread_mutex_unlock(&g_lists_lock); }
/* A fork while another thread holds the lock would leave it held in the child. */
__attribute__((constructor)) static void lists_atfork(void) { pthread_atfork(lists_lock, lists_unlock, lists_unlock); }

RCW_API aclError aclrtKernelArgsInit(aclrtFuncHandle funcHandle, aclrtArgsHandle *argsHandle) {
	REAL(aclrtKernelArgsInit);
	aclError r = real(funcHandle, argsHandle);
	if (!r && argsHandle && *argsHandle && ON) {
		lists_lock();
		arglist *l = list_slot(H(*argsHandle));
		l->handle = H(*argsHandle);
		l->n = 0;
		lists_unlock();
	}
	return r;
}

RCW_API aclError aclrtKernelArgsAppend(aclrtArgsHandle argsHandle, void *param, size_t paramSize, aclrtParamHandle *paramHandle) {
	REAL(aclrtKernelArgsAppend);
	aclError r = real(argsHandle, param, paramSize, paramHandle);
	if (!r && param && ON) {
		lists_lock();
		arglist *l = list_slot(H(argsHandle));
		if (l->handle == H(argsHandle)) {
			size_t take = paramSize < LIST_BYTES - l->n ? paramSize : LIST_BYTES - l->n;
			if (l->n + take > l->cap) {
				size_t cap = l->cap ? l->cap : 64;
				while (cap < l->n + take)
					cap *= 2;
				unsigned char *b = realloc(l->bytes, cap);
				if (b) {
					l->bytes = b;
					l->cap = cap;
				} else {
					take = 0;
				}
			}
			memcpy(l->bytes + l->n, param, take);
			l->n += take;
		}
		lists_unlock();
	}
	return r;
}

/* The list's recorded bytes are copied out under the lock and scanned as argument 0. */
RCW_API aclError aclrtLaunchKernelWithConfig(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream,
					     aclrtLaunchKernelCfg *cfg, aclrtArgsHandle argsHandle, void *reserve);
__attribute__((noinline)) static aclError aclrtLaunchKernelWithConfig_watched(aclrtFuncHandle funcHandle, uint32_t numBlocks,
									      aclrtStream stream, aclrtLaunchKernelCfg *cfg,
									      aclrtArgsHandle argsHandle, void *reserve) {
	static atomic_int noted;
	REAL(aclrtLaunchKernelWithConfig);
	aclError r = real(funcHandle, numBlocks, stream, cfg, argsHandle, reserve);
	if (r || !ON || !rcw_capturing())
		return r;
	unsigned char copy[LIST_BYTES];
	size_t n = 0;
	int known = 0;
	lists_lock();
	arglist *l = list_slot(H(argsHandle));
	if (argsHandle && l->handle == H(argsHandle)) {
		known = 1;
		n = l->n;
		if (n)
			memcpy(copy, l->bytes, n);
	}
	lists_unlock();
	if (known) {
		rcw_arg a = {copy, n};
		rcw_kernel("aclrtLaunchKernelWithConfig", H(stream), H(funcHandle), &a, 1, 0, NULL);
	} else {
		rcw_kernel("aclrtLaunchKernelWithConfig", H(stream), H(funcHandle), NULL, 0, 1,
			   !atomic_exchange(&noted, 1) ? "aclrtLaunchKernelWithConfig: an argument list the interposer did not see built "
							 "(aclrtKernelArgsInit, aclrtKernelArgsAppend) is not read"
						       : NULL);
	}
	return r;
}
RCW_API aclError aclrtLaunchKernelWithConfig(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream,
					     aclrtLaunchKernelCfg *cfg, aclrtArgsHandle argsHandle, void *reserve) {
	FAST(aclrtLaunchKernelWithConfig, funcHandle, numBlocks, stream, cfg, argsHandle, reserve);
}

RCW_API aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
	REAL(aclrtRecordEvent);
	aclError r = real(event, stream);
	if (!r && ON)
		rcw_record("aclrtRecordEvent", H(event), H(stream));
	return r;
}

RCW_API aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
	REAL(aclrtStreamWaitEvent);
	aclError r = real(stream, event);
	if (!r && ON)
		rcw_wait("aclrtStreamWaitEvent", H(stream), H(event));
	return r;
}

RCW_API aclError aclrtSynchronizeStream(aclrtStream stream) {
	REAL(aclrtSynchronizeStream);
	aclError r = real(stream);
	if (!r && ON)
		rcw_sync("aclrtSynchronizeStream", RCW_SYNC_STREAM, H(stream), 0);
	return r;
}

RCW_API aclError aclrtSynchronizeDevice(void) {
	REAL(aclrtSynchronizeDevice);
	aclError r = real();
	if (!r && ON)
		rcw_sync("aclrtSynchronizeDevice", RCW_SYNC_DEVICE, 0, 0);
	return r;
}

RCW_API aclError aclrtSynchronizeEvent(aclrtEvent event) {
	REAL(aclrtSynchronizeEvent);
	aclError r = real(event);
	if (!r && ON)
		rcw_sync("aclrtSynchronizeEvent", RCW_SYNC_EVENT, 0, H(event));
	return r;
}

#define ENTRY(n) {#n, (void *)n, 0, NULL, 0},
rcw_entry rcw_acl_entries[] = {ACL_ENTRIES(ENTRY)};
const size_t rcw_acl_count = E_COUNT;
