/* acl.c: the ACL (CANN runtime, libascendcl.so) entry points the interposer wraps.
 *
 * Signatures as CANN's acl_rt.h and acl_mdl.h declare them: aclError and every enum int, handles
 * void *. A model RI made by aclmdlRICaptureEnd is both the graph and the executable graph, so its
 * end is followed by instantiate and its destroy sends destroy-exec and destroy-graph. A wrapper
 * whose real function the loaded library lacks answers ACL_ERROR_RT_FEATURE_NOT_SUPPORT. */
#include <stdatomic.h>
#include <stdint.h>

#include "rcw.h"

typedef int aclError;
typedef void *aclrtStream;
typedef void *aclrtEvent;
typedef void *aclmdlRI;
typedef void *aclrtFuncHandle;

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
	X(aclrtStreamWaitEvent) X(aclrtSynchronizeStream) X(aclrtSynchronizeDevice) X(aclrtSynchronizeEvent)

#define ENUM(n) E_##n,
enum { ACL_ENTRIES(ENUM) E_COUNT };

#define H(p) ((uint64_t)(uintptr_t)(p))
#define ON rcw_watching(RCW_ACL)
#define REAL(n)                                                                               \
	__typeof__(&n) real = (__typeof__(&n))rcw_real(RCW_ACL, &rcw_acl_entries[E_##n]); \
	if (!real)                                                                            \
	return ACL_ERROR_RT_FEATURE_NOT_SUPPORT

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

RCW_API aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, int kind, aclrtStream stream) {
	REAL(aclrtMemcpyAsync);
	if (!rcw_capturing())
		return real(dst, destMax, src, count, kind, stream);
	aclError r = real(dst, destMax, src, count, kind, stream);
	if (!r && ON)
		rcw_copy("aclrtMemcpyAsync", H(stream), H(dst), H(src), count);
	return r;
}

RCW_API aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
	REAL(aclrtMemsetAsync);
	if (!rcw_capturing())
		return real(devPtr, maxCount, value, count, stream);
	aclError r = real(devPtr, maxCount, value, count, stream);
	if (!r && ON)
		rcw_memset("aclrtMemsetAsync", H(stream), H(devPtr), count);
	return r;
}

/* argsData is the kernel's argument block, argsSize bytes: argument 0. CANN allows it in device
 * memory, which the host must not read: such a block is not scanned (nolayout, with a note). */
RCW_API aclError aclrtLaunchKernel(aclrtFuncHandle funcHandle, uint32_t numBlocks, const void *argsData, size_t argsSize,
				   aclrtStream stream) {
	REAL(aclrtLaunchKernel);
	if (!rcw_capturing())
		return real(funcHandle, numBlocks, argsData, argsSize, stream);
	aclError r = real(funcHandle, numBlocks, argsData, argsSize, stream);
	if (!r && ON) {
		rcw_arg a = {argsData, argsData ? argsSize : 0};
		static atomic_int noted;
		int dev = rcw_device_memory(H(argsData));
		rcw_kernel("aclrtLaunchKernel", H(stream), H(funcHandle), &a, 1, dev,
			   dev && !atomic_exchange(&noted, 1)
				   ? "aclrtLaunchKernel: an argument block in device memory is not read: its pointers are not followed"
				   : NULL);
	}
	return r;
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
