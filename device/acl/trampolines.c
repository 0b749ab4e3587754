//go:build cgo

// The trampolines of trampolines.h: each calls one ACL entry point through the pointer fn the dl
// package resolved, cast to the entry point's type as acl_rt.h declares it.
#include <stddef.h>
#include <stdint.h>

#include "trampolines.h"

aclError rc_acl_call_cstr(void *fn, const char *s) { return ((aclError (*)(const char *))fn)(s); }
aclError rc_acl_call_void(void *fn) { return ((aclError (*)(void))fn)(); }
aclError rc_acl_call_i32(void *fn, int32_t v) { return ((aclError (*)(int32_t))fn)(v); }
aclError rc_acl_call_ptr(void *fn, void *p) { return ((aclError (*)(void *))fn)(p); }
aclError rc_acl_call_ptr_ptr(void *fn, void *a, void *b) { return ((aclError (*)(void *, void *))fn)(a, b); }
aclError rc_acl_call_outptr(void *fn, void **out) { return ((aclError (*)(void **))fn)(out); }
aclError rc_acl_call_outu32(void *fn, uint32_t *out) { return ((aclError (*)(uint32_t *))fn)(out); }
const char *rc_acl_call_str(void *fn) { return ((const char *(*)(void))fn)(); }

aclError rc_acl_aclrtMalloc(void *fn, uint64_t *addr, size_t n, int policy) {
	void *p = NULL;
	aclError rc = ((aclError (*)(void **, size_t, int))fn)(&p, n, policy);
	*addr = (uint64_t)(uintptr_t)p;
	return rc;
}
aclError rc_acl_aclrtFree(void *fn, uint64_t addr) { return ((aclError (*)(void *))fn)((void *)(uintptr_t)addr); }
aclError rc_acl_aclrtMallocHost(void *fn, void **p, size_t n) { return ((aclError (*)(void **, size_t))fn)(p, n); }
// aclrtMemcpy(dst, destMax, src, count, kind), host side a Go buffer for the call's duration.
aclError rc_acl_aclrtMemcpy_h2d(void *fn, uint64_t dst, const void *src, size_t n) {
	return ((aclError (*)(void *, size_t, const void *, size_t, int))fn)((void *)(uintptr_t)dst, n, src, n, 1);
}
aclError rc_acl_aclrtMemcpy_d2h(void *fn, void *dst, uint64_t src, size_t n) {
	return ((aclError (*)(void *, size_t, const void *, size_t, int))fn)(dst, n, (const void *)(uintptr_t)src, n, 2);
}
// aclrtMemcpyAsync(dst, destMax, src, count, kind, stream)
aclError rc_acl_aclrtMemcpyAsync(void *fn, uint64_t dst, uint64_t src, size_t n, int kind, void *stream) {
	return ((aclError (*)(void *, size_t, const void *, size_t, int, void *))fn)(
		(void *)(uintptr_t)dst, n, (const void *)(uintptr_t)src, n, kind, stream);
}
// aclrtMemsetAsync(devPtr, maxCount, value, count, stream)
aclError rc_acl_aclrtMemsetAsync(void *fn, uint64_t dst, int32_t value, size_t n, void *stream) {
	return ((aclError (*)(void *, size_t, int32_t, size_t, void *))fn)((void *)(uintptr_t)dst, n, value, n, stream);
}
aclError rc_acl_aclrtCreateEventExWithFlag(void *fn, void **e, uint32_t flags) {
	return ((aclError (*)(void **, uint32_t))fn)(e, flags);
}
aclError rc_acl_aclrtQueryEventStatus(void *fn, void *e, int *status) {
	return ((aclError (*)(void *, int *))fn)(e, status);
}
aclError rc_acl_aclmdlRICaptureBegin(void *fn, void *stream, int mode) {
	return ((aclError (*)(void *, int))fn)(stream, mode);
}
aclError rc_acl_aclmdlRICaptureGetInfo(void *fn, void *stream, int *status, void **ri) {
	return ((aclError (*)(void *, int *, void **))fn)(stream, status, ri);
}
aclError rc_acl_aclmdlRICaptureEnd(void *fn, void *stream, void **ri) {
	return ((aclError (*)(void *, void **))fn)(stream, ri);
}
aclError rc_acl_aclmdlRICaptureThreadExchangeMode(void *fn, int *mode) {
	return ((aclError (*)(int *))fn)(mode);
}
// aclrtGetMemInfo(attr, free, total)
aclError rc_acl_aclrtGetMemInfo(void *fn, int attr, size_t *freeBytes, size_t *total) {
	return ((aclError (*)(int, size_t *, size_t *))fn)(attr, freeBytes, total);
}
// aclsysGetVersionStr(pkgName, versionStr): versionStr holds ACL_PKG_VERSION_MAX_SIZE (128) bytes.
aclError rc_acl_aclsysGetVersionStr(void *fn, char *pkg, char *out) {
	return ((aclError (*)(char *, char *))fn)(pkg, out);
}
// Graph reading, CANN 9.1's trial entry points (A2/A3), as hicann/runtime's
// include/external/acl/acl_rt.h declares them (aclmdlRI, aclrtStream and aclmdlRITask are void*,
// aclmdlRITaskType is an int enum):
//   aclmdlRIGetStreams(aclmdlRI modelRI, aclrtStream *streams, uint32_t *numStreams)
//   aclmdlRIGetTasksByStream(aclrtStream stream, aclmdlRITask *tasks, uint32_t *numTasks)
//   aclmdlRITaskGetType(aclmdlRITask task, aclmdlRITaskType *type)
// A NULL array asks the count; an array of *num entries gets min(*num, count) of them.
aclError rc_acl_aclmdlRIGetList(void *fn, void *owner, void **out, uint32_t *num) {
	return ((aclError (*)(void *, void **, uint32_t *))fn)(owner, out, num);
}
aclError rc_acl_aclmdlRITaskGetType(void *fn, void *task, int *type) {
	return ((aclError (*)(void *, int *))fn)(task, type);
}
