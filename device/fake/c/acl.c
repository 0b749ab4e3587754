/* acl.c: the ACL front end of the fake libascendcl.so, over the device model in core.c.
 *
 * Types as the platform facts (docs/platforms.md) and hicann/runtime's acl_rt.h declare them: handles are
 * void*, aclError and every enum are int. Stream, event and model-RI handles are the core's
 * numbers cast to pointers (never dereferenced, so a destroyed handle fails cleanly); the default
 * stream is NULL. aclmdlRICaptureGetInfo's model RI is RC_ACL_CAPTURE_TAG | capture id.
 *
 * Built with -DRC_STUB it is a library with no driver behind it: aclInit and aclFinalize succeed,
 * every device call fails ACL_ERROR_RT_NO_DEVICE (207004) and aclrtGetDeviceCount reports 0. */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

typedef int aclError;
typedef void *aclrtStream;
typedef void *aclrtEvent;
typedef void *aclmdlRI;

enum { ACL_MEMCPY_HOST_TO_HOST = 0, ACL_MEMCPY_HOST_TO_DEVICE = 1, ACL_MEMCPY_DEVICE_TO_HOST = 2, ACL_MEMCPY_DEVICE_TO_DEVICE = 3 };
enum { ACL_EVENT_RECORDED_STATUS_NOT_READY = 0, ACL_EVENT_RECORDED_STATUS_COMPLETE = 1 };

#define ACL_SUCCESS 0
#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_RT_INVALID_DEVICEID 107001
#define ACL_ERROR_RT_CONTEXT_NULL 107002
#define ACL_ERROR_RT_NO_DEVICE 207004

/* The model RI aclmdlRICaptureGetInfo reports for a capture in progress: its id, tagged. */
#define RC_ACL_CAPTURE_TAG (1ull << 48)

static int initialized;

typedef struct {
	const char *entry;
	rc_device *d;
	int locked;
} acl_call;

#define H(p) ((uint64_t)(uintptr_t)(p))
#define P(h) ((void *)(uintptr_t)(h))

/* begin enters an entry point that needs the calling thread's current device; settle says
 * whether graph work launched earlier must run first (every call but a launch and a capture-state
 * question). An injected failure (REPLAYCHECK_FAKE_FAIL) answers first. */
static int begin(acl_call *c, const char *entry, int settle) {
	int err = rc_enter(entry);
	c->entry = entry;
	c->d = NULL;
	c->locked = 0;
	if (err)
		return err;
#ifdef RC_STUB
	(void)settle;
	rc_set_detail("%s: no Ascend device (fake libascendcl.so built without a driver)", entry);
	return ACL_ERROR_RT_NO_DEVICE;
#else
	rc_lock();
	c->locked = 1;
	c->d = rc_current();
	if (!c->d) {
		rc_set_detail("%s: no current device on this thread (aclrtSetDevice first)", entry);
		return ACL_ERROR_RT_CONTEXT_NULL;
	}
	if ((err = rc_lost(c->d, entry)))
		return err;
	if (settle)
		rc_settle(c->d);
	return 0;
#endif
}

static aclError end(acl_call *c, int err) {
	if (c->locked)
		rc_unlock();
	rc_log_result(c->entry, err);
	return err;
}

static int null_arg(const char *what) { return rc_fail("invalid-value", "%s is NULL", what); }

RC_API aclError aclInit(const char *configPath) {
	(void)configPath;
	int err = rc_enter("aclInit");
	if (!err) {
		rc_lock();
		if (initialized) {
			rc_set_detail("aclInit: already initialized");
			err = ACL_ERROR_REPEAT_INITIALIZE;
		}
		initialized = 1;
		rc_unlock();
	}
	rc_log_result("aclInit", err);
	return err;
}

RC_API aclError aclFinalize(void) {
	int err = rc_enter("aclFinalize");
	if (!err) {
		rc_lock();
		initialized = 0;
		rc_unlock();
	}
	rc_log_result("aclFinalize", err);
	return err;
}

RC_API const char *aclGetRecentErrMsg(void) {
	rc_trace("aclGetRecentErrMsg");
	return rc_detail();
}

static int device_count(uint32_t *count) {
#ifdef RC_STUB
	if (count)
		*count = 0;
	rc_set_detail("aclrtGetDeviceCount: no Ascend device (fake libascendcl.so built without a driver)");
	return ACL_ERROR_RT_NO_DEVICE;
#else
	if (!count) {
		rc_set_detail("aclrtGetDeviceCount: count is NULL");
		return ACL_ERROR_INVALID_PARAM;
	}
	*count = (uint32_t)rc_device_count();
	return 0;
#endif
}

RC_API aclError aclrtGetDeviceCount(uint32_t *count) {
	int err = rc_enter("aclrtGetDeviceCount");
	if (!err)
		err = device_count(count);
	rc_log_result("aclrtGetDeviceCount", err);
	return err;
}

static int set_device(int32_t deviceId) {
#ifdef RC_STUB
	(void)deviceId;
	rc_set_detail("aclrtSetDevice: no Ascend device (fake libascendcl.so built without a driver)");
	return ACL_ERROR_RT_NO_DEVICE;
#else
	int err = 0;
	rc_lock();
	if (deviceId < 0 || deviceId >= rc_device_count()) {
		rc_set_detail("aclrtSetDevice: device %d out of range: the fake has %d device(s)", deviceId, rc_device_count());
		err = ACL_ERROR_RT_INVALID_DEVICEID;
	} else if ((err = rc_device_retain(deviceId)) == 0) {
		rc_set_current(deviceId);
	}
	rc_unlock();
	return err;
#endif
}

RC_API aclError aclrtSetDevice(int32_t deviceId) {
	int err = rc_enter("aclrtSetDevice");
	if (!err)
		err = set_device(deviceId);
	rc_log_result("aclrtSetDevice", err);
	return err;
}

static int reset_device(int32_t deviceId) {
#ifdef RC_STUB
	(void)deviceId;
	rc_set_detail("aclrtResetDevice: no Ascend device (fake libascendcl.so built without a driver)");
	return ACL_ERROR_RT_NO_DEVICE;
#else
	int err = 0;
	rc_lock();
	if (deviceId < 0 || deviceId >= rc_device_count() || !rc_device_at(deviceId)) {
		rc_set_detail("aclrtResetDevice: device %d is not set", deviceId);
		err = ACL_ERROR_RT_INVALID_DEVICEID;
	} else {
		rc_device_release(deviceId);
		if (rc_current_index() == deviceId)
			rc_set_current(-1);
	}
	rc_unlock();
	return err;
#endif
}

RC_API aclError aclrtResetDevice(int32_t deviceId) {
	int err = rc_enter("aclrtResetDevice");
	if (!err)
		err = reset_device(deviceId);
	rc_log_result("aclrtResetDevice", err);
	return err;
}

RC_API aclError aclrtGetMemInfo(int attr, size_t *freeBytes, size_t *total) {
	(void)attr;
	acl_call c;
	int err = begin(&c, "aclrtGetMemInfo", 0);
	if (!err)
		rc_mem_info(c.d, freeBytes, total);
	return end(&c, err);
}

// The fake names itself, so a run through it has a platform key of its own
// (acl/cann-<version>-replaycheck-fake) and never passes for hardware.
RC_API const char *aclrtGetSocName(void) {
	rc_trace("aclrtGetSocName");
	return "replaycheck-fake";
}

// aclsysGetVersionStr(pkgName, versionStr): the runtime package reports the CANN version the cann
// profile encodes; any other package is the fake's own.
RC_API aclError aclsysGetVersionStr(char *pkgName, char *versionStr) {
	int err = rc_enter("aclsysGetVersionStr");
	if (!err && (!pkgName || !versionStr)) {
		rc_set_detail("aclsysGetVersionStr: %s is NULL", pkgName ? "versionStr" : "pkgName");
		err = ACL_ERROR_INVALID_PARAM;
	}
	if (!err)
		snprintf(versionStr, 128, "%s", strcmp(pkgName, "runtime") == 0 ? "9.0.0" : "replaycheck-fake");
	rc_log_result("aclsysGetVersionStr", err);
	return err;
}

RC_API aclError aclrtCreateStream(aclrtStream *stream) {
	acl_call c;
	int err = begin(&c, "aclrtCreateStream", 1);
	uint64_t h;
	if (!err && !stream)
		err = null_arg("stream");
	if (!err && !(err = rc_create_stream(c.d, 1, &h))) /* every ACL stream is non-blocking */
		*stream = P(h);
	return end(&c, err);
}

RC_API aclError aclrtDestroyStream(aclrtStream stream) {
	acl_call c;
	int err = begin(&c, "aclrtDestroyStream", 1);
	if (!err)
		err = rc_destroy_stream(c.d, H(stream));
	return end(&c, err);
}

RC_API aclError aclrtSynchronizeStream(aclrtStream stream) {
	acl_call c;
	int err = begin(&c, "aclrtSynchronizeStream", 1);
	if (!err)
		err = rc_sync_stream(c.d, H(stream));
	return end(&c, err);
}

RC_API aclError aclrtSynchronizeDevice(void) {
	acl_call c;
	int err = begin(&c, "aclrtSynchronizeDevice", 1);
	if (!err)
		err = rc_sync_device(c.d);
	return end(&c, err);
}

RC_API aclError aclrtMalloc(void **devPtr, size_t size, int policy) {
	(void)policy;
	acl_call c;
	int err = begin(&c, "aclrtMalloc", 1);
	uint64_t a;
	if (!err && !devPtr)
		err = null_arg("devPtr");
	if (!err && !(err = rc_malloc(c.d, size, &a)))
		*devPtr = P(a);
	return end(&c, err);
}

RC_API aclError aclrtFree(void *devPtr) {
	acl_call c;
	int err = begin(&c, "aclrtFree", 1);
	if (!err)
		err = rc_free(c.d, H(devPtr));
	return end(&c, err);
}

RC_API aclError aclrtMallocHost(void **hostPtr, size_t size) {
	acl_call c;
	int err = begin(&c, "aclrtMallocHost", 1);
	uint64_t a;
	if (!err && !hostPtr)
		err = null_arg("hostPtr");
	if (!err && !(err = rc_alloc_host(c.d, size, &a)))
		*hostPtr = P(a);
	return end(&c, err);
}

RC_API aclError aclrtFreeHost(void *hostPtr) {
	acl_call c;
	int err = begin(&c, "aclrtFreeHost", 1);
	if (!err)
		err = rc_free_host(c.d, H(hostPtr));
	return end(&c, err);
}

/* aclrtMemcpy is the synchronous copy: host to device is the simulator's Write, device to host
 * its Read. Device-to-device and host-to-host synchronous copies are not modelled. */
RC_API aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, int kind) {
	acl_call c;
	int err = begin(&c, "aclrtMemcpy", 1);
	if (!err && count > destMax)
		err = rc_fail("invalid-value", "count %zu exceeds the destination's %zu bytes", count, destMax);
	if (!err) {
		switch (kind) {
		case ACL_MEMCPY_HOST_TO_DEVICE:
			err = rc_write(c.d, H(dst), src, count);
			break;
		case ACL_MEMCPY_DEVICE_TO_HOST:
			err = rc_read(c.d, dst, H(src), count);
			break;
		case ACL_MEMCPY_DEVICE_TO_DEVICE:
		case ACL_MEMCPY_HOST_TO_HOST:
			err = rc_fail("not-supported", "synchronous copy kind %d is not modelled (host to device and device to host are)", kind);
			break;
		default:
			err = rc_fail("invalid-value", "unknown copy kind %d", kind);
		}
	}
	return end(&c, err);
}

RC_API aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, int kind, aclrtStream stream) {
	acl_call c;
	int err = begin(&c, "aclrtMemcpyAsync", 1);
	if (!err && count > destMax)
		err = rc_fail("invalid-value", "count %zu exceeds the destination's %zu bytes", count, destMax);
	if (!err) {
		switch (kind) {
		case ACL_MEMCPY_HOST_TO_DEVICE:
			err = rc_copy(c.d, H(stream), H(dst), H(src), count, RC_H2D);
			break;
		case ACL_MEMCPY_DEVICE_TO_HOST:
			err = rc_copy(c.d, H(stream), H(dst), H(src), count, RC_D2H);
			break;
		case ACL_MEMCPY_DEVICE_TO_DEVICE:
			err = rc_copy(c.d, H(stream), H(dst), H(src), count, RC_D2D);
			break;
		default:
			err = rc_fail("invalid-value", "copy kind %d: a stream copies to or from device memory", kind);
		}
	}
	return end(&c, err);
}

RC_API aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
	acl_call c;
	int err = begin(&c, "aclrtMemsetAsync", 1);
	if (!err && count > maxCount)
		err = rc_fail("invalid-value", "count %zu exceeds the destination's %zu bytes", count, maxCount);
	if (!err)
		err = rc_fill(c.d, H(stream), H(devPtr), count, (uint8_t)value);
	return end(&c, err);
}

/* Every event is capture-capable, as in the simulator: plain aclrtCreateEvent's 207000 when
 * recorded into a capture is not modelled. */
static aclError create_event(const char *entry, aclrtEvent *event) {
	acl_call c;
	int err = begin(&c, entry, 1);
	uint64_t h;
	if (!err && !event)
		err = null_arg("event");
	if (!err && !(err = rc_create_event(c.d, &h)))
		*event = P(h);
	return end(&c, err);
}

RC_API aclError aclrtCreateEventExWithFlag(aclrtEvent *event, uint32_t flag) {
	(void)flag;
	return create_event("aclrtCreateEventExWithFlag", event);
}

RC_API aclError aclrtCreateEvent(aclrtEvent *event) { return create_event("aclrtCreateEvent", event); }

RC_API aclError aclrtDestroyEvent(aclrtEvent event) {
	acl_call c;
	int err = begin(&c, "aclrtDestroyEvent", 1);
	if (!err)
		err = rc_destroy_event(c.d, H(event));
	return end(&c, err);
}

RC_API aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
	acl_call c;
	int err = begin(&c, "aclrtRecordEvent", 1);
	if (!err)
		err = rc_record(c.d, H(event), H(stream));
	return end(&c, err);
}

RC_API aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
	acl_call c;
	int err = begin(&c, "aclrtStreamWaitEvent", 1);
	if (!err)
		err = rc_wait(c.d, H(stream), H(event));
	return end(&c, err);
}

RC_API aclError aclrtSynchronizeEvent(aclrtEvent event) {
	acl_call c;
	int err = begin(&c, "aclrtSynchronizeEvent", 1);
	if (!err)
		err = rc_sync_event(c.d, H(event));
	return end(&c, err);
}

RC_API aclError aclrtQueryEventStatus(aclrtEvent event, int *status) {
	acl_call c;
	int err = begin(&c, "aclrtQueryEventStatus", 1);
	if (!err && !status)
		err = null_arg("status");
	if (!err && !(err = rc_query_event(c.d, H(event))))
		*status = ACL_EVENT_RECORDED_STATUS_COMPLETE;
	return end(&c, err);
}

RC_API aclError aclmdlRICaptureThreadExchangeMode(int *mode) {
	acl_call c;
	int err = begin(&c, "aclmdlRICaptureThreadExchangeMode", 1);
	int old;
	if (!err && !mode)
		err = null_arg("mode");
	if (!err && !(err = rc_exchange_mode(c.d, *mode, &old)))
		*mode = old;
	return end(&c, err);
}

RC_API aclError aclmdlRICaptureBegin(aclrtStream stream, int mode) {
	acl_call c;
	int err = begin(&c, "aclmdlRICaptureBegin", 1);
	if (!err)
		err = rc_begin_capture(c.d, H(stream), mode);
	return end(&c, err);
}

RC_API aclError aclmdlRICaptureGetInfo(aclrtStream stream, int *status, aclmdlRI *modelRI) {
	acl_call c;
	int err = begin(&c, "aclmdlRICaptureGetInfo", 0);
	int st, mode;
	uint64_t id, origin;
	if (!err && !status)
		err = null_arg("status");
	if (!err && !(err = rc_capture_info(c.d, H(stream), &st, &id, &origin, &mode))) {
		*status = st;
		if (modelRI)
			*modelRI = id ? P(RC_ACL_CAPTURE_TAG | id) : NULL;
	}
	return end(&c, err);
}

RC_API aclError aclmdlRICaptureEnd(aclrtStream stream, aclmdlRI *modelRI) {
	acl_call c;
	int err = begin(&c, "aclmdlRICaptureEnd", 1);
	uint64_t g;
	if (!err && !modelRI)
		err = null_arg("modelRI");
	if (!err && !(err = rc_end_capture(c.d, H(stream), 1, &g)))
		*modelRI = P(g);
	return end(&c, err);
}

RC_API aclError aclmdlRIExecuteAsync(aclmdlRI modelRI, aclrtStream stream) {
	acl_call c;
	int err = begin(&c, "aclmdlRIExecuteAsync", 0);
	if (!err)
		err = rc_launch(c.d, H(modelRI), H(stream), 0);
	return end(&c, err);
}

RC_API aclError aclmdlRIDestroy(aclmdlRI modelRI) {
	acl_call c;
	int err = begin(&c, "aclmdlRIDestroy", 1);
	if (!err)
		err = rc_destroy_graph(c.d, H(modelRI));
	return end(&c, err);
}

/* ---------- graph reading: aclmdlRIGetStreams, aclmdlRIGetTasksByStream, aclmdlRITaskGetType ----------
 *
 * CANN 9.1's trial entry points, with the signatures of hicann/runtime's include/external/acl/acl_rt.h
 * (aclmdlRITask is void*, aclmdlRITaskType an int enum) and the array protocol of its
 * Model::ModelGetStreams and Stream::StreamGetTasks: a NULL array asks the count; with an array of
 * *num entries, min(*num, count) are filled in, the rest set to NULL, *num becomes the number filled
 * in, and fewer entries than the count fail ACL_ERROR_RT_INSUFFICIENT_INPUT_ARRAY (107039).
 *
 * A graph's model has one stream, handle RC_ACL_RI_STREAM_TAG | graph, holding the graph's work
 * nodes in capture order; a task is graph << 20 | (index + 1), as libcuda's fake numbers its graph
 * nodes. Types follow the
 * runtime's ConvertTaskType (src/runtime/core/src/kernel/kernel_utils.cc): a kernel is
 * ACL_MODEL_RI_TASK_KERNEL; a memset or memcpy task is ACL_MODEL_RI_TASK_DEFAULT, the type the
 * runtime gives every task that is not a kernel, event or value task.
 *
 * REPLAYCHECK_FAKE_RI_DROP=<n>, read at every call, makes aclmdlRIGetTasksByStream misreport the
 * graph: it leaves out task n (from 0) of every stream, as a runtime that loses a task would. */
typedef void *aclmdlRITask;
enum { ACL_MODEL_RI_TASK_DEFAULT = 0, ACL_MODEL_RI_TASK_KERNEL = 1 };
#define ACL_ERROR_RT_INSUFFICIENT_INPUT_ARRAY 107039
#define RC_ACL_RI_STREAM_TAG (1ull << 49) /* above every graph handle */

/* ri_graph is the graph whose model stream (or model RI) h is, 0 and a failure when none. */
static int ri_graph(acl_call *c, uint64_t h, int stream, uint64_t *g) {
	uint64_t graph = stream ? h & ~RC_ACL_RI_STREAM_TAG : h;
	if ((stream && !(h & RC_ACL_RI_STREAM_TAG)) || graph >= RC_ACL_RI_STREAM_TAG || !rc_is_graph(c->d, graph))
		return rc_fail("invalid-value", "%s: %#llx is not a %s of a live model RI", c->entry, (unsigned long long)h,
			       stream ? "stream" : "handle");
	*g = graph;
	return 0;
}

/* dropped is the task REPLAYCHECK_FAKE_RI_DROP leaves out, SIZE_MAX when none. */
static size_t dropped(void) {
	const char *v = getenv("REPLAYCHECK_FAKE_RI_DROP");
	char *end;
	if (!v || !*v)
		return SIZE_MAX;
	long n = strtol(v, &end, 0);
	return *end || n < 0 ? SIZE_MAX : (size_t)n;
}

/* fill_array answers the array protocol above for count entries, entry(i) the i-th. */
static int fill_array(const char *entry, void **out, uint32_t *num, size_t count, uint64_t base, size_t skip) {
	if (!out) {
		*num = (uint32_t)count;
		return 0;
	}
	size_t n = count < *num ? count : *num;
	for (size_t i = 0, k = 0; i < *num; i++) {
		if (i < n) {
			k += k == skip;
			out[i] = P(base + k++);
		} else {
			out[i] = NULL;
		}
	}
	*num = (uint32_t)n;
	if (n < count) {
		rc_set_detail("%s: the array holds %zu entries, fewer than the %zu there are", entry, n, count);
		return ACL_ERROR_RT_INSUFFICIENT_INPUT_ARRAY;
	}
	return 0;
}

RC_API aclError aclmdlRIGetStreams(aclmdlRI modelRI, aclrtStream *streams, uint32_t *numStreams) {
	acl_call c;
	int err = begin(&c, "aclmdlRIGetStreams", 1);
	uint64_t g = 0;
	if (!err && !numStreams)
		err = null_arg("numStreams");
	if (!err && !(err = ri_graph(&c, H(modelRI), 0, &g)))
		err = fill_array(c.entry, streams, numStreams, 1, RC_ACL_RI_STREAM_TAG | g, SIZE_MAX);
	return end(&c, err);
}

RC_API aclError aclmdlRIGetTasksByStream(aclrtStream stream, aclmdlRITask *tasks, uint32_t *numTasks) {
	acl_call c;
	int err = begin(&c, "aclmdlRIGetTasksByStream", 1);
	uint64_t g = 0;
	size_t n = 0, skip = dropped();
	if (!err && !numTasks)
		err = null_arg("numTasks");
	if (!err && !(err = ri_graph(&c, H(stream), 1, &g)) && !(err = rc_graph_nodes(c.d, g, &n))) {
		if (skip < n)
			n--;
		else
			skip = SIZE_MAX;
		err = fill_array(c.entry, tasks, numTasks, n, g << 20 | 1, skip);
	}
	return end(&c, err);
}

RC_API aclError aclmdlRITaskGetType(aclmdlRITask task, int *type) {
	acl_call c;
	int err = begin(&c, "aclmdlRITaskGetType", 1);
	uint64_t h = H(task), g = h >> 20, i = h & ((1u << 20) - 1);
	int kind = 0;
	if (!err && !type)
		err = null_arg("type");
	if (!err && (i == 0 || !rc_is_graph(c.d, g)))
		err = rc_fail("invalid-value", "aclmdlRITaskGetType: %p is not a task of a live model RI", task);
	if (!err && !(err = rc_graph_node_kind(c.d, g, i - 1, &kind)))
		*type = kind == RC_KERNEL ? ACL_MODEL_RI_TASK_KERNEL : ACL_MODEL_RI_TASK_DEFAULT;
	return end(&c, err);
}

/* ---------- kernels: aclrtBinaryLoadFromData, aclrtBinaryGetFunction, aclrtLaunchKernel ---------- */

/* The one kernel, as libcuda's fake has it: replaycheck_axpy computes y[i] = a*x[i] + y[i] over
 * the n little-endian uint32 lanes, all n whatever numBlocks (an Ascend C kernel splits its lanes
 * among its blocks itself). A binary is any data naming "replaycheck_axpy"; its handle is
 * RC_ACL_BIN_TAG + index + 1 and its function's RC_ACL_FUNC_TAG + index + 1, dead once the
 * binary is unloaded. */
typedef void *aclrtBinHandle;
typedef void *aclrtFuncHandle;
typedef struct aclrtBinaryLoadOptions aclrtBinaryLoadOptions;

#define RC_ACL_AXPY_NAME "replaycheck_axpy"
#define RC_ACL_BIN_TAG 0xb1b0000ull
#define RC_ACL_FUNC_TAG 0xf0f0000ull
#define MAX_BINARIES 64
/* The packed arguments {void *y; void *x; uint32_t a; uint32_t n;}. */
#define RC_ACL_AXPY_ARGS 24

static int binary_live[MAX_BINARIES];

static int tagged_index(void *h, uint64_t tag) {
	uint64_t v = H(h);
	if (v <= tag || v > tag + MAX_BINARIES || !binary_live[v - tag - 1])
		return -1;
	return (int)(v - tag - 1);
}

static int invalid_param(const char *fmt, const char *entry, const void *what) {
	rc_set_detail(fmt, entry, what);
	return ACL_ERROR_INVALID_PARAM;
}

RC_API aclError aclrtBinaryLoadFromData(const void *data, size_t length, const aclrtBinaryLoadOptions *options, aclrtBinHandle *binHandle) {
	(void)options;
	acl_call c;
	int err = begin(&c, "aclrtBinaryLoadFromData", 0);
	if (!err && (!data || !binHandle))
		err = invalid_param("%s: %s is NULL", c.entry, data ? "binHandle" : "data");
	if (!err && (length < sizeof RC_ACL_AXPY_NAME - 1 || !memmem(data, length, RC_ACL_AXPY_NAME, sizeof RC_ACL_AXPY_NAME - 1)))
		err = invalid_param("%s: the binary at %p holds no kernel the fake knows (" RC_ACL_AXPY_NAME ")", c.entry, data);
	if (!err) {
		int i = 0;
		while (i < MAX_BINARIES && binary_live[i])
			i++;
		if (i == MAX_BINARIES) {
			err = rc_fail("out-of-memory", "aclrtBinaryLoadFromData: %d binaries are loaded", MAX_BINARIES);
		} else {
			binary_live[i] = 1;
			*binHandle = P(RC_ACL_BIN_TAG + (uint64_t)i + 1);
		}
	}
	return end(&c, err);
}

RC_API aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char *kernelName, aclrtFuncHandle *funcHandle) {
	acl_call c;
	int err = begin(&c, "aclrtBinaryGetFunction", 0);
	int i = tagged_index(binHandle, RC_ACL_BIN_TAG);
	if (!err && (!kernelName || !funcHandle))
		err = invalid_param("%s: %s is NULL", c.entry, kernelName ? "funcHandle" : "kernelName");
	if (!err && i < 0)
		err = invalid_param("%s: %p is not a loaded binary", c.entry, binHandle);
	if (!err && strcmp(kernelName, RC_ACL_AXPY_NAME) != 0)
		err = invalid_param("%s: no kernel %s in the binary (the fake knows " RC_ACL_AXPY_NAME ")", c.entry, kernelName);
	if (!err)
		*funcHandle = P(RC_ACL_FUNC_TAG + (uint64_t)i + 1);
	return end(&c, err);
}

RC_API aclError aclrtBinaryUnLoad(aclrtBinHandle binHandle) {
	acl_call c;
	int err = begin(&c, "aclrtBinaryUnLoad", 0);
	int i = tagged_index(binHandle, RC_ACL_BIN_TAG);
	if (!err && i < 0)
		err = invalid_param("%s: %p is not a loaded binary", c.entry, binHandle);
	if (!err)
		binary_live[i] = 0;
	return end(&c, err);
}

/* The launch every entry point shares: funcHandle a function of a loaded binary, args the packed
 * arguments, argsSize 24 (else ACL_ERROR_INVALID_PARAM), numBlocks > 0. args in device memory must
 * be live; host_only refuses device memory (the WithHostArgs and WithConfig blocks are the host's).
 * The fake reads the arguments at the call, so the caller may reuse the buffer at once and a
 * capture holds the values (a device reads a device-memory argument block when the kernel runs). */
static int launch_axpy(acl_call *c, aclrtFuncHandle funcHandle, uint32_t numBlocks, const void *argsData, size_t argsSize,
		       aclrtStream stream, int host_only) {
	if (tagged_index(funcHandle, RC_ACL_FUNC_TAG) < 0)
		return invalid_param("%s: %p is not a function of a loaded binary", c->entry, funcHandle);
	if (!argsData || argsSize != RC_ACL_AXPY_ARGS) {
		rc_set_detail("%s: " RC_ACL_AXPY_NAME " takes %d bytes of packed arguments {y, x, a, n}, not %zu%s", c->entry, RC_ACL_AXPY_ARGS,
			      argsSize, argsData ? "" : " (the arguments are NULL)");
		return ACL_ERROR_INVALID_PARAM;
	}
	int kind = rc_memory_kind(c->d, H(argsData));
	if (host_only && kind == RC_MEM_DEVICE)
		return invalid_param("%s: the arguments at %p are in device memory, not the host's", c->entry, argsData);
	if (kind != RC_MEM_PAGEABLE) {
		int err = rc_live_range(c->d, "argsData", H(argsData), RC_ACL_AXPY_ARGS);
		if (err)
			return err;
	}
	if (numBlocks == 0) {
		rc_set_detail("%s: numBlocks is 0", c->entry);
		return ACL_ERROR_INVALID_PARAM;
	}
	const unsigned char *args = argsData;
	uint64_t y, x;
	uint32_t a, n;
	memcpy(&y, args, 8);
	memcpy(&x, args + 8, 8);
	memcpy(&a, args + 16, 4);
	memcpy(&n, args + 20, 4);
	return rc_axpy(c->d, H(stream), y, x, n, a);
}

/* argsData holds the packed arguments. CANN documents it as device memory; a host buffer is
 * accepted too. */
RC_API aclError aclrtLaunchKernel(aclrtFuncHandle funcHandle, uint32_t numBlocks, const void *argsData, size_t argsSize, aclrtStream stream) {
	acl_call c;
	int err = begin(&c, "aclrtLaunchKernel", 1);
	if (!err)
		err = launch_axpy(&c, funcHandle, numBlocks, argsData, argsSize, stream, 0);
	return end(&c, err);
}

/* The launch configuration (cfg, NULL allowed) is not looked at. */
typedef struct aclrtLaunchKernelCfg aclrtLaunchKernelCfg;

/* aclrtLaunchKernel with a launch configuration. */
RC_API aclError aclrtLaunchKernelV2(aclrtFuncHandle funcHandle, uint32_t numBlocks, const void *argsData, size_t argsSize,
				    aclrtLaunchKernelCfg *cfg, aclrtStream stream) {
	(void)cfg;
	acl_call c;
	int err = begin(&c, "aclrtLaunchKernelV2", 1);
	if (!err)
		err = launch_axpy(&c, funcHandle, numBlocks, argsData, argsSize, stream, 0);
	return end(&c, err);
}

typedef struct {
	uint32_t addrOffset;
	uint32_t dataOffset;
} aclrtPlaceHolderInfo;

/* The arguments in host memory, copied by the runtime. Placeholders (data the runtime copies to
 * the device and whose address it writes into the arguments) are not modelled: placeHolderNum
 * must be 0, else ACL_ERROR_RT_FEATURE_NOT_SUPPORT. */
RC_API aclError aclrtLaunchKernelWithHostArgs(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream, aclrtLaunchKernelCfg *cfg,
					      void *hostArgs, size_t argsSize, aclrtPlaceHolderInfo *placeHolderArray, size_t placeHolderNum) {
	(void)cfg;
	(void)placeHolderArray;
	acl_call c;
	int err = begin(&c, "aclrtLaunchKernelWithHostArgs", 1);
	if (!err && placeHolderNum != 0)
		err = rc_fail("not-supported", "aclrtLaunchKernelWithHostArgs: %zu placeholders: the fake does not model placeholders", placeHolderNum);
	if (!err)
		err = launch_axpy(&c, funcHandle, numBlocks, hostArgs, argsSize, stream, 1);
	return end(&c, err);
}

/* Argument lists (aclrtKernelArgsInit, aclrtKernelArgsAppend, aclrtKernelArgsFinalize,
 * aclrtLaunchKernelWithConfig): the fake keeps each list host-side, the bytes appended in order,
 * at most RC_ACL_ARGS_BYTES. Its handle is RC_ACL_ARGS_TAG + index + 1; at most MAX_ARG_LISTS
 * lists are made in a process (CANN has no call that ends one), after which Init fails
 * out-of-memory. A parameter's handle is RC_ACL_PARAM_TAG | list index << 16 | its offset. */
typedef void *aclrtArgsHandle;
typedef void *aclrtParamHandle;

#define RC_ACL_ARGS_TAG 0xa4a0000ull
#define RC_ACL_PARAM_TAG (1ull << 40)
#define MAX_ARG_LISTS 1024
#define RC_ACL_ARGS_BYTES 1024

static struct {
	int finalized, func;
	size_t n;
	unsigned char bytes[RC_ACL_ARGS_BYTES];
} *arg_lists;
static int arg_lists_n;

static int args_index(aclrtArgsHandle h) {
	uint64_t v = H(h);
	if (v <= RC_ACL_ARGS_TAG || v > RC_ACL_ARGS_TAG + (uint64_t)arg_lists_n)
		return -1;
	return (int)(v - RC_ACL_ARGS_TAG - 1);
}

RC_API aclError aclrtKernelArgsInit(aclrtFuncHandle funcHandle, aclrtArgsHandle *argsHandle) {
	acl_call c;
	int err = begin(&c, "aclrtKernelArgsInit", 0);
	int f = tagged_index(funcHandle, RC_ACL_FUNC_TAG);
	if (!err && !argsHandle)
		err = null_arg("argsHandle");
	if (!err && f < 0)
		err = invalid_param("%s: %p is not a function of a loaded binary", c.entry, funcHandle);
	if (!err && !arg_lists && !(arg_lists = calloc(MAX_ARG_LISTS, sizeof *arg_lists)))
		err = rc_fail("out-of-memory", "aclrtKernelArgsInit: no host memory for argument lists");
	if (!err && arg_lists_n == MAX_ARG_LISTS)
		err = rc_fail("out-of-memory", "aclrtKernelArgsInit: %d argument lists were made", MAX_ARG_LISTS);
	if (!err) {
		int i = arg_lists_n++;
		arg_lists[i].func = f;
		*argsHandle = P(RC_ACL_ARGS_TAG + (uint64_t)i + 1);
	}
	return end(&c, err);
}

/* param is host memory, copied at the call; appending to a finalized list is refused. */
RC_API aclError aclrtKernelArgsAppend(aclrtArgsHandle argsHandle, void *param, size_t paramSize, aclrtParamHandle *paramHandle) {
	acl_call c;
	int err = begin(&c, "aclrtKernelArgsAppend", 0);
	int i = args_index(argsHandle);
	if (!err && (!param || !paramHandle))
		err = null_arg(param ? "paramHandle" : "param");
	if (!err && i < 0)
		err = invalid_param("%s: %p is not an argument list", c.entry, argsHandle);
	if (!err && arg_lists[i].finalized)
		err = invalid_param("%s: the argument list %p is finalized", c.entry, argsHandle);
	if (!err && paramSize > RC_ACL_ARGS_BYTES - arg_lists[i].n) {
		rc_set_detail("aclrtKernelArgsAppend: %zu bytes more pass the fake's %d bytes of arguments", paramSize, RC_ACL_ARGS_BYTES);
		err = ACL_ERROR_INVALID_PARAM;
	}
	if (!err) {
		memcpy(arg_lists[i].bytes + arg_lists[i].n, param, paramSize);
		*paramHandle = P(RC_ACL_PARAM_TAG | (uint64_t)i << 16 | arg_lists[i].n);
		arg_lists[i].n += paramSize;
	}
	return end(&c, err);
}

RC_API aclError aclrtKernelArgsFinalize(aclrtArgsHandle argsHandle) {
	acl_call c;
	int err = begin(&c, "aclrtKernelArgsFinalize", 0);
	int i = args_index(argsHandle);
	if (!err && i < 0)
		err = invalid_param("%s: %p is not an argument list", c.entry, argsHandle);
	if (!err)
		arg_lists[i].finalized = 1;
	return end(&c, err);
}

/* The arguments are the list's, which must be finalized and made for funcHandle (else
 * ACL_ERROR_INVALID_PARAM); reserve is not looked at. */
RC_API aclError aclrtLaunchKernelWithConfig(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream, aclrtLaunchKernelCfg *cfg,
					    aclrtArgsHandle argsHandle, void *reserve) {
	(void)cfg;
	(void)reserve;
	acl_call c;
	int err = begin(&c, "aclrtLaunchKernelWithConfig", 1);
	int i = args_index(argsHandle);
	if (!err && i < 0)
		err = invalid_param("%s: %p is not an argument list", c.entry, argsHandle);
	if (!err && !arg_lists[i].finalized)
		err = invalid_param("%s: the argument list %p is not finalized (aclrtKernelArgsFinalize)", c.entry, argsHandle);
	if (!err && arg_lists[i].func != tagged_index(funcHandle, RC_ACL_FUNC_TAG))
		err = invalid_param("%s: the argument list %p was made for another function", c.entry, argsHandle);
	if (!err)
		err = launch_axpy(&c, funcHandle, numBlocks, arg_lists[i].bytes, arg_lists[i].n, stream, 0);
	return end(&c, err);
}
