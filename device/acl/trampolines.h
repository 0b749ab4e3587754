// The ACL ABI as the binding assumes it (acl_base.h, acl_rt.h), and the trampolines that call it
// (trampolines.c). aclError is int, enums are int; streams, events, model RIs and tasks are void*.
// No SDK header is included: every entry point is called through a pointer the dl package
// resolved (fn), by one of these. Every name starts rc_acl_, apart from CUDA's (device/cuda) in a
// binary that links both.
#ifndef REPLAYCHECK_DEVICE_ACL_TRAMPOLINES_H
#define REPLAYCHECK_DEVICE_ACL_TRAMPOLINES_H

#include <stddef.h>
#include <stdint.h>

typedef int aclError;

// Entry points of one shape: f(s), f(), f(v), f(p), f(a, b), f(&out), and a string f().
aclError rc_acl_call_cstr(void *fn, const char *s);
aclError rc_acl_call_void(void *fn);
aclError rc_acl_call_i32(void *fn, int32_t v);
aclError rc_acl_call_ptr(void *fn, void *p);
aclError rc_acl_call_ptr_ptr(void *fn, void *a, void *b);
aclError rc_acl_call_outptr(void *fn, void **out);
aclError rc_acl_call_outu32(void *fn, uint32_t *out);
const char *rc_acl_call_str(void *fn);

// Memory. The host side of aclrtMemcpy is a Go buffer for the call's duration.
aclError rc_acl_aclrtMalloc(void *fn, uint64_t *addr, size_t n, int policy);
aclError rc_acl_aclrtFree(void *fn, uint64_t addr);
aclError rc_acl_aclrtMallocHost(void *fn, void **p, size_t n);
aclError rc_acl_aclrtMemcpy_h2d(void *fn, uint64_t dst, const void *src, size_t n);
aclError rc_acl_aclrtMemcpy_d2h(void *fn, void *dst, uint64_t src, size_t n);
aclError rc_acl_aclrtMemcpyAsync(void *fn, uint64_t dst, uint64_t src, size_t n, int kind, void *stream);
aclError rc_acl_aclrtMemsetAsync(void *fn, uint64_t dst, int32_t value, size_t n, void *stream);
aclError rc_acl_aclrtGetMemInfo(void *fn, int attr, size_t *freeBytes, size_t *total);

// Events, capture and the version.
aclError rc_acl_aclrtCreateEventExWithFlag(void *fn, void **e, uint32_t flags);
aclError rc_acl_aclrtQueryEventStatus(void *fn, void *e, int *status);
aclError rc_acl_aclmdlRICaptureBegin(void *fn, void *stream, int mode);
aclError rc_acl_aclmdlRICaptureGetInfo(void *fn, void *stream, int *status, void **ri);
aclError rc_acl_aclmdlRICaptureEnd(void *fn, void *stream, void **ri);
aclError rc_acl_aclmdlRICaptureThreadExchangeMode(void *fn, int *mode);
aclError rc_acl_aclsysGetVersionStr(void *fn, char *pkg, char *out);

// Graph reading: aclmdlRIGetStreams and aclmdlRIGetTasksByStream (one shape), aclmdlRITaskGetType.
aclError rc_acl_aclmdlRIGetList(void *fn, void *owner, void **out, uint32_t *num);
aclError rc_acl_aclmdlRITaskGetType(void *fn, void *task, int *type);

#endif
