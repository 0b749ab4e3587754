// fake_acl.c: a test double of the ACL runtime (see fakecore.h). Compile with -DOMIT_MEMSET to
// leave aclrtMemsetAsync out.
#define CODE_INVALIDATED 507903
#define CODE_UNSAFE 107030
#define CODE_BEGIN_DEFAULT 100000
#define CODE_BEGIN_CAPTURING 107027
#define CODE_NOT_CAPTURING 107029
#define CODE_UNMATCHED 107036
#define CODE_UNJOINED 107025
#define CODE_WRONG_THREAD 107038
#define CODE_SYNC_CAPTURING 107027
#define CODE_EVENT_CAPTURED 107028
#define INVALIDATES 0
#define WRONG_THREAD_ENDS 1
#include "fakecore.h"

typedef int aclError;

static __thread int current_device = -1;

aclError aclInit(const char *config) {
	(void)config;
	ENTER("aclInit");
	return 0;
}
const char *aclGetRecentErrMsg(void) {
	logcall("aclGetRecentErrMsg");
	return errmsg;
}
aclError aclrtSetDevice(int32_t id) {
	ENTER("aclrtSetDevice");
	current_device = id;
	return 0;
}
aclError aclrtResetDevice(int32_t id) {
	ENTER("aclrtResetDevice");
	(void)id;
	current_device = -1;
	return 0;
}
aclError aclrtGetDeviceCount(uint32_t *n) {
	ENTER("aclrtGetDeviceCount");
	*n = 1;
	return 0;
}
const char *aclrtGetSocName(void) { return "Ascend910B3"; }
aclError aclrtGetMemInfo(int attr, size_t *freeBytes, size_t *total) {
	(void)attr;
	*freeBytes = (size_t)1 << 30;
	*total = (size_t)1 << 31;
	return 0;
}
aclError aclsysGetVersionStr(char *pkg, char *out) {
	snprintf(out, 128, "%s", strcmp(pkg, "runtime") == 0 ? "9.0.0" : "25.0.rc1");
	return 0;
}

aclError aclrtMalloc(void **p, size_t n, int policy) {
	ENTER("aclrtMalloc");
	if (policy != 0) {
		return fail(100000, "aclrtMalloc", "policy is not HUGE_FIRST");
	}
	if (n > ((size_t)1 << 40)) {
		return fail(207001, "aclrtMalloc", "out of memory");
	}
	*p = calloc(1, n);
	return 0;
}
aclError aclrtFree(void *p) {
	ENTER("aclrtFree");
	free(p);
	return 0;
}
aclError aclrtMallocHost(void **p, size_t n) {
	ENTER("aclrtMallocHost");
	*p = calloc(1, n);
	return 0;
}
aclError aclrtFreeHost(void *p) {
	ENTER("aclrtFreeHost");
	free(p);
	return 0;
}
aclError aclrtMemcpy(void *dst, size_t max, const void *src, size_t n, int kind) {
	ENTER("aclrtMemcpy");
	if (n > max || (kind != 1 && kind != 2)) {
		return fail(100000, "aclrtMemcpy", "bad count or kind");
	}
	return sync_copy(dst, src, n, "aclrtMemcpy");
}
aclError aclrtMemcpyAsync(void *dst, size_t max, const void *src, size_t n, int kind, void *stream) {
	ENTER("aclrtMemcpyAsync");
	if (n > max || kind < 1 || kind > 3) {
		return fail(100000, "aclrtMemcpyAsync", "bad count or kind");
	}
	op_t op = {.kind = OP_MEMCPY, .dst = dst, .src = src, .n = n};
	return enqueue(stream, op, "aclrtMemcpyAsync");
}
#ifndef OMIT_MEMSET
aclError aclrtMemsetAsync(void *dst, size_t max, int32_t value, size_t n, void *stream) {
	ENTER("aclrtMemsetAsync");
	if (n > max) {
		return fail(100000, "aclrtMemsetAsync", "count past the maximum");
	}
	op_t op = {.kind = OP_MEMSET, .dst = dst, .n = n, .value = value};
	return enqueue(stream, op, "aclrtMemsetAsync");
}
#endif
aclError aclrtCreateStream(void **s) {
	ENTER("aclrtCreateStream");
	*s = new_stream();
	return 0;
}
aclError aclrtDestroyStream(void *s) {
	ENTER("aclrtDestroyStream");
	free_stream(s);
	return 0;
}
aclError aclrtSynchronizeStream(void *s) {
	ENTER("aclrtSynchronizeStream");
	return sync_stream(s, "aclrtSynchronizeStream");
}
aclError aclrtSynchronizeDevice(void) {
	ENTER("aclrtSynchronizeDevice");
	return sync_device("aclrtSynchronizeDevice");
}
aclError aclrtCreateEventExWithFlag(void **e, uint32_t flag) {
	ENTER("aclrtCreateEventExWithFlag");
	if (flag != 1) {
		return fail(100000, "aclrtCreateEventExWithFlag", "want ACL_EVENT_SYNC");
	}
	*e = new_event();
	return 0;
}
aclError aclrtDestroyEvent(void *e) {
	ENTER("aclrtDestroyEvent");
	free_event(e);
	return 0;
}
aclError aclrtRecordEvent(void *e, void *s) {
	ENTER("aclrtRecordEvent");
	return record(e, s);
}
aclError aclrtStreamWaitEvent(void *s, void *e) {
	ENTER("aclrtStreamWaitEvent");
	return wait_event(s, e);
}
aclError aclrtQueryEventStatus(void *e, int *status) {
	ENTER("aclrtQueryEventStatus");
	int rc = event_captured(e, "aclrtQueryEventStatus");
	if (rc == 0) {
		*status = 1;
	}
	return rc;
}
aclError aclrtSynchronizeEvent(void *e) {
	ENTER("aclrtSynchronizeEvent");
	return event_captured(e, "aclrtSynchronizeEvent");
}
aclError aclmdlRICaptureBegin(void *s, int mode) {
	ENTER("aclmdlRICaptureBegin");
	return begin_capture(s, mode, "aclmdlRICaptureBegin");
}
aclError aclmdlRICaptureGetInfo(void *s, int *status, void **ri) {
	ENTER("aclmdlRICaptureGetInfo");
	*status = capture_status(s);
	*ri = NULL;
	return 0;
}
aclError aclmdlRICaptureEnd(void *s, void **ri) {
	ENTER("aclmdlRICaptureEnd");
	return end_capture(s, (graph_t **)ri, "aclmdlRICaptureEnd");
}
aclError aclmdlRICaptureThreadExchangeMode(int *mode) {
	ENTER("aclmdlRICaptureThreadExchangeMode");
	int old = thread_mode;
	thread_mode = *mode;
	*mode = old;
	return 0;
}
aclError aclmdlRIExecuteAsync(void *ri, void *s) {
	ENTER("aclmdlRIExecuteAsync");
	(void)s;
	replay(ri);
	return 0;
}
aclError aclmdlRIDestroy(void *ri) {
	ENTER("aclmdlRIDestroy");
	graph_t *g = ri;
	free(g->ops);
	free(g);
	return 0;
}
