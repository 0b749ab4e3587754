// The inner device: the rc_device table (and rc_inner's create_stream_with_flags) replaycheck hands
// a runtime plugin. Each entry is an adapter of the table's exact type that calls the Go function
// of inner_cgo.go exported for it, with the table's self: the runtime/cgo.Handle of the Runtime's
// state.
#include <stdint.h>
#include <string.h>

#include "_cgo_export.h"
#include "rcp.h"

// Adapters of the table's exact types.
#define H(self) ((uintptr_t)(self))
static int32_t in_malloc(void *s, rc_thread t, int64_t n, rc_ptr *o, rc_error *e) { return rcpInnerMalloc(H(s), t, n, o, e); }
static int32_t in_free(void *s, rc_thread t, rc_ptr p, rc_error *e) { return rcpInnerFree(H(s), t, p, e); }
static int32_t in_write(void *s, rc_thread t, rc_ptr d, const void *src, rc_error *e) { return rcpInnerWrite(H(s), t, d, (void *)src, e); }
static int32_t in_read(void *s, rc_thread t, void *d, rc_ptr src, rc_error *e) { return rcpInnerRead(H(s), t, d, src, e); }
static int32_t in_alloc_host(void *s, rc_thread t, int64_t n, rc_host_memory k, rc_ptr *o, rc_error *e) { return rcpInnerAllocHost(H(s), t, n, (uint32_t)k, o, e); }
static int32_t in_free_host(void *s, rc_thread t, rc_ptr p, rc_error *e) { return rcpInnerFreeHost(H(s), t, p, e); }
static int32_t in_host_write(void *s, rc_ptr d, const void *src, rc_error *e) { return rcpInnerHostWrite(H(s), d, (void *)src, e); }
static int32_t in_host_read(void *s, void *d, rc_ptr src, rc_error *e) { return rcpInnerHostRead(H(s), d, src, e); }
static int32_t in_create_stream(void *s, rc_thread t, rc_stream *o, rc_error *e) { return rcpInnerCreateStream(H(s), t, o, e); }
static int32_t in_create_stream_with_flags(void *s, rc_thread t, uint32_t f, rc_stream *o, rc_error *e) { return rcpInnerCreateStreamWithFlags(H(s), t, f, o, e); }
static int32_t in_destroy_stream(void *s, rc_thread t, rc_stream x, rc_error *e) { return rcpInnerDestroyStream(H(s), t, x, e); }
static int32_t in_create_event(void *s, rc_thread t, rc_event *o, rc_error *e) { return rcpInnerCreateEvent(H(s), t, o, e); }
static int32_t in_destroy_event(void *s, rc_thread t, rc_event x, rc_error *e) { return rcpInnerDestroyEvent(H(s), t, x, e); }
static int32_t in_fill(void *s, rc_thread t, rc_stream st, rc_ptr d, uint8_t v, rc_error *e) { return rcpInnerFill(H(s), t, st, d, v, e); }
static int32_t in_copy(void *s, rc_thread t, rc_stream st, rc_ptr d, rc_ptr src, rc_error *e) { return rcpInnerCopy(H(s), t, st, d, src, e); }
static int32_t in_axpy(void *s, rc_thread t, rc_stream st, rc_ptr y, rc_ptr x, uint32_t a, rc_error *e) { return rcpInnerAxpy(H(s), t, st, y, x, a, e); }
static int32_t in_record(void *s, rc_thread t, rc_event ev, rc_stream st, rc_error *e) { return rcpInnerRecord(H(s), t, ev, st, e); }
static int32_t in_wait(void *s, rc_thread t, rc_stream st, rc_event ev, rc_error *e) { return rcpInnerWait(H(s), t, st, ev, e); }
static int32_t in_sync_stream(void *s, rc_thread t, rc_stream st, rc_error *e) { return rcpInnerSyncStream(H(s), t, st, e); }
static int32_t in_sync_device(void *s, rc_thread t, rc_error *e) { return rcpInnerSyncDevice(H(s), t, e); }
static int32_t in_query_event(void *s, rc_thread t, rc_event ev, uint32_t *c, rc_error *e) { return rcpInnerQueryEvent(H(s), t, ev, c, e); }
static int32_t in_sync_event(void *s, rc_thread t, rc_event ev, rc_error *e) { return rcpInnerSyncEvent(H(s), t, ev, e); }
static int32_t in_exchange_capture_mode(void *s, rc_thread t, rc_capture_mode m, rc_capture_mode *old, rc_error *e) {
	uint32_t o = 0;
	int32_t rc = rcpInnerExchangeCaptureMode(H(s), t, (uint32_t)m, &o, e);
	if (rc == RC_OK && old) *old = (rc_capture_mode)o;
	return rc;
}
static int32_t in_begin_capture(void *s, rc_thread t, rc_stream st, rc_capture_mode m, rc_error *e) { return rcpInnerBeginCapture(H(s), t, st, (uint32_t)m, e); }
static int32_t in_end_capture(void *s, rc_thread t, rc_stream st, rc_graph *o, rc_error *e) { return rcpInnerEndCapture(H(s), t, st, o, e); }
static int32_t in_capture_info(void *s, rc_thread t, rc_stream st, rc_capture_info *o, rc_error *e) { return rcpInnerCaptureInfo(H(s), t, st, o, e); }
static int32_t in_launch(void *s, rc_thread t, rc_graph g, rc_stream st, rc_error *e) { return rcpInnerLaunch(H(s), t, g, st, e); }
static int32_t in_destroy_graph(void *s, rc_thread t, rc_graph g, rc_error *e) { return rcpInnerDestroyGraph(H(s), t, g, e); }
#undef H

void rcp_fill_inner(rc_inner *in, uintptr_t self) {
	memset(in, 0, sizeof *in);
	in->create_stream_with_flags = in_create_stream_with_flags;
	rc_device *d = &in->device;
	d->self = (void *)self;
	d->malloc_ = in_malloc;
	d->free_ = in_free;
	d->write = in_write;
	d->read = in_read;
	d->alloc_host = in_alloc_host;
	d->free_host = in_free_host;
	d->host_write = in_host_write;
	d->host_read = in_host_read;
	d->create_stream = in_create_stream;
	d->destroy_stream = in_destroy_stream;
	d->create_event = in_create_event;
	d->destroy_event = in_destroy_event;
	d->fill = in_fill;
	d->copy = in_copy;
	d->axpy = in_axpy;
	d->record = in_record;
	d->wait = in_wait;
	d->sync_stream = in_sync_stream;
	d->sync_device = in_sync_device;
	d->query_event = in_query_event;
	d->sync_event = in_sync_event;
	d->exchange_capture_mode = in_exchange_capture_mode;
	d->begin_capture = in_begin_capture;
	d->end_capture = in_end_capture;
	d->capture_info = in_capture_info;
	d->launch = in_launch;
	d->destroy_graph = in_destroy_graph;
}
