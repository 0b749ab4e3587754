// Every call replaycheck makes into a runtime plugin: its entry points, called through the addresses
// dl resolved, and the entries of the table it returned, each noted in flight (flight.h) for the
// exit handlers.
#include <stdint.h>
#include <string.h>

#include "flight.h"

// RCP_CALL makes the call expr, of type T, into the runtime r, noted in flight, and returns it.
#define RCP_CALL(r, T, ...)                                                    \
	rcp_note n_ = rcp_in(r);                                                \
	T v_ = (__VA_ARGS__);                                                   \
	rcp_out(n_);                                                            \
	return v_;

// The entry points, called through the addresses dl resolved.
uint32_t rcp_abi(void *f) { return ((uint32_t (*)(void))f)(); }
int32_t rcp_open(void *f, uint32_t v, uint32_t mode, const rc_device *in, rc_runtime *out, rc_error *e) {
	RCP_CALL(out, int32_t, ((int32_t (*)(uint32_t, rc_mode, const rc_device *, rc_runtime *, rc_error *))f)(v, (rc_mode)mode, in, out, e))
}
void rcp_close(void *f, const rc_runtime *r) {
	rcp_note n = rcp_in(r);
	((void (*)(void *))f)(r->self);
	rcp_out(n);
}

// The names of the entries of *r the plugin left NULL, comma-separated, into buf.
void rcp_missing(const rc_runtime *r, char *buf, size_t n) {
	buf[0] = 0;
#define M(f, name) if (!(f)) { if (buf[0]) strncat(buf, ", ", n - strlen(buf) - 1); strncat(buf, name, n - strlen(buf) - 1); }
	M(r->device.malloc_, "device.malloc_") M(r->device.free_, "device.free_") M(r->device.write, "device.write")
	M(r->device.read, "device.read") M(r->device.alloc_host, "device.alloc_host") M(r->device.free_host, "device.free_host")
	M(r->device.host_write, "device.host_write") M(r->device.host_read, "device.host_read")
	M(r->device.create_stream, "device.create_stream") M(r->device.destroy_stream, "device.destroy_stream")
	M(r->device.create_event, "device.create_event") M(r->device.destroy_event, "device.destroy_event")
	M(r->device.fill, "device.fill") M(r->device.copy, "device.copy") M(r->device.axpy, "device.axpy")
	M(r->device.record, "device.record") M(r->device.wait, "device.wait") M(r->device.sync_stream, "device.sync_stream")
	M(r->device.sync_device, "device.sync_device") M(r->device.query_event, "device.query_event")
	M(r->device.sync_event, "device.sync_event") M(r->device.exchange_capture_mode, "device.exchange_capture_mode")
	M(r->device.begin_capture, "device.begin_capture") M(r->device.end_capture, "device.end_capture")
	M(r->device.capture_info, "device.capture_info") M(r->device.launch, "device.launch")
	M(r->device.destroy_graph, "device.destroy_graph")
	M(r->provision, "provision") M(r->release, "release") M(r->holds, "holds") M(r->commit_bank, "commit_bank")
	M(r->reserve_pool, "reserve_pool") M(r->pool_alloc, "pool_alloc") M(r->pool_free, "pool_free") M(r->retire, "retire")
#undef M
}

// Calls into the runtime's table.
#define D(r) (r)->device
int32_t rt_malloc(const rc_runtime *r, uint32_t t, int64_t n, rc_ptr *o, rc_error *e) { RCP_CALL(r, int32_t, D(r).malloc_(D(r).self, (rc_thread)t, n, o, e)) }
int32_t rt_free(const rc_runtime *r, uint32_t t, rc_ptr p, rc_error *e) { RCP_CALL(r, int32_t, D(r).free_(D(r).self, (rc_thread)t, p, e)) }
int32_t rt_write(const rc_runtime *r, uint32_t t, rc_ptr d, const void *src, rc_error *e) { RCP_CALL(r, int32_t, D(r).write(D(r).self, (rc_thread)t, d, src, e)) }
int32_t rt_read(const rc_runtime *r, uint32_t t, void *d, rc_ptr src, rc_error *e) { RCP_CALL(r, int32_t, D(r).read(D(r).self, (rc_thread)t, d, src, e)) }
int32_t rt_alloc_host(const rc_runtime *r, uint32_t t, int64_t n, uint32_t k, rc_ptr *o, rc_error *e) { RCP_CALL(r, int32_t, D(r).alloc_host(D(r).self, (rc_thread)t, n, (rc_host_memory)k, o, e)) }
int32_t rt_free_host(const rc_runtime *r, uint32_t t, rc_ptr p, rc_error *e) { RCP_CALL(r, int32_t, D(r).free_host(D(r).self, (rc_thread)t, p, e)) }
int32_t rt_host_write(const rc_runtime *r, rc_ptr d, const void *src, rc_error *e) { RCP_CALL(r, int32_t, D(r).host_write(D(r).self, d, src, e)) }
int32_t rt_host_read(const rc_runtime *r, void *d, rc_ptr src, rc_error *e) { RCP_CALL(r, int32_t, D(r).host_read(D(r).self, d, src, e)) }
int32_t rt_create_stream(const rc_runtime *r, uint32_t t, rc_stream *o, rc_error *e) { RCP_CALL(r, int32_t, D(r).create_stream(D(r).self, (rc_thread)t, o, e)) }
int32_t rt_create_stream_with_flags(const rc_runtime *r, uint32_t t, uint32_t f, rc_stream *o, rc_error *e) { RCP_CALL(r, int32_t, r->create_stream_with_flags(r->self, (rc_thread)t, f, o, e)) }
int32_t rt_destroy_stream(const rc_runtime *r, uint32_t t, rc_stream s, rc_error *e) { RCP_CALL(r, int32_t, D(r).destroy_stream(D(r).self, (rc_thread)t, s, e)) }
int32_t rt_create_event(const rc_runtime *r, uint32_t t, rc_event *o, rc_error *e) { RCP_CALL(r, int32_t, D(r).create_event(D(r).self, (rc_thread)t, o, e)) }
int32_t rt_destroy_event(const rc_runtime *r, uint32_t t, rc_event x, rc_error *e) { RCP_CALL(r, int32_t, D(r).destroy_event(D(r).self, (rc_thread)t, x, e)) }
int32_t rt_fill(const rc_runtime *r, uint32_t t, rc_stream s, rc_ptr d, uint8_t v, rc_error *e) { RCP_CALL(r, int32_t, D(r).fill(D(r).self, (rc_thread)t, s, d, v, e)) }
int32_t rt_copy(const rc_runtime *r, uint32_t t, rc_stream s, rc_ptr d, rc_ptr src, rc_error *e) { RCP_CALL(r, int32_t, D(r).copy(D(r).self, (rc_thread)t, s, d, src, e)) }
int32_t rt_axpy(const rc_runtime *r, uint32_t t, rc_stream s, rc_ptr y, rc_ptr x, uint32_t a, rc_error *e) { RCP_CALL(r, int32_t, D(r).axpy(D(r).self, (rc_thread)t, s, y, x, a, e)) }
int32_t rt_record(const rc_runtime *r, uint32_t t, rc_event ev, rc_stream s, rc_error *e) { RCP_CALL(r, int32_t, D(r).record(D(r).self, (rc_thread)t, ev, s, e)) }
int32_t rt_wait(const rc_runtime *r, uint32_t t, rc_stream s, rc_event ev, rc_error *e) { RCP_CALL(r, int32_t, D(r).wait(D(r).self, (rc_thread)t, s, ev, e)) }
int32_t rt_sync_stream(const rc_runtime *r, uint32_t t, rc_stream s, rc_error *e) { RCP_CALL(r, int32_t, D(r).sync_stream(D(r).self, (rc_thread)t, s, e)) }
int32_t rt_sync_device(const rc_runtime *r, uint32_t t, rc_error *e) { RCP_CALL(r, int32_t, D(r).sync_device(D(r).self, (rc_thread)t, e)) }
int32_t rt_query_event(const rc_runtime *r, uint32_t t, rc_event ev, uint32_t *c, rc_error *e) { RCP_CALL(r, int32_t, D(r).query_event(D(r).self, (rc_thread)t, ev, c, e)) }
int32_t rt_sync_event(const rc_runtime *r, uint32_t t, rc_event ev, rc_error *e) { RCP_CALL(r, int32_t, D(r).sync_event(D(r).self, (rc_thread)t, ev, e)) }
int32_t rt_exchange_capture_mode(const rc_runtime *r, uint32_t t, uint32_t m, uint32_t *old, rc_error *e) {
	rc_capture_mode o = RC_CAPTURE_GLOBAL;
	rcp_note n = rcp_in(r);
	int32_t rc = D(r).exchange_capture_mode(D(r).self, (rc_thread)t, (rc_capture_mode)m, &o, e);
	rcp_out(n);
	*old = (uint32_t)o;
	return rc;
}
int32_t rt_begin_capture(const rc_runtime *r, uint32_t t, rc_stream s, uint32_t m, rc_error *e) { RCP_CALL(r, int32_t, D(r).begin_capture(D(r).self, (rc_thread)t, s, (rc_capture_mode)m, e)) }
int32_t rt_end_capture(const rc_runtime *r, uint32_t t, rc_stream s, rc_graph *o, rc_error *e) { RCP_CALL(r, int32_t, D(r).end_capture(D(r).self, (rc_thread)t, s, o, e)) }
int32_t rt_capture_info(const rc_runtime *r, uint32_t t, rc_stream s, rc_capture_info *o, rc_error *e) { RCP_CALL(r, int32_t, D(r).capture_info(D(r).self, (rc_thread)t, s, o, e)) }
int32_t rt_launch(const rc_runtime *r, uint32_t t, rc_graph g, rc_stream s, rc_error *e) { RCP_CALL(r, int32_t, D(r).launch(D(r).self, (rc_thread)t, g, s, e)) }
int32_t rt_destroy_graph(const rc_runtime *r, uint32_t t, rc_graph g, rc_error *e) { RCP_CALL(r, int32_t, D(r).destroy_graph(D(r).self, (rc_thread)t, g, e)) }
#undef D

int32_t rt_provision(const rc_runtime *r, uint32_t t, uint32_t slot, const char *key, rc_ptr cur, int64_t n, rc_ptr *o, uint32_t *served, rc_error *e) {
	rc_served s = RC_NOT_SERVED;
	rcp_note in = rcp_in(r);
	int32_t rc = r->provision(r->self, (rc_thread)t, (rc_slot)slot, key, cur, n, o, &s, e);
	rcp_out(in);
	*served = (uint32_t)s;
	return rc;
}
int32_t rt_release(const rc_runtime *r, uint32_t t, uint32_t slot, const char *key, rc_ptr p, rc_error *e) { RCP_CALL(r, int32_t, r->release(r->self, (rc_thread)t, (rc_slot)slot, key, p, e)) }
// rt_holds_box asks holds about the box's hkey into its held, hslot and hptr.
void rt_holds_box(rc_runtime *r) {
	rcp_box *b = (rcp_box *)r;
	rc_slot s = RC_SLOT_PLAIN;
	b->hptr = (rc_ptr){0, 0};
	rcp_note n = rcp_in(r);
	b->held = r->holds(r->self, b->hkey, &s, &b->hptr);
	rcp_out(n);
	b->hslot = (uint32_t)s;
}
int64_t rt_slots_changed(const rc_runtime *r, uint64_t since, const char **keys, size_t cap, uint64_t *now) {
	RCP_CALL(r, int64_t, r->slots_changed(r->self, since, keys, cap, now))
}
// rt_refusal_rule copies the name refusal_rule gives into buf, of n bytes with the NUL: it
// returns the name's length, n when the name is longer than n-1 bytes (buf then holds its first
// n-1), and -1 when the runtime named none (NULL). It reads at most n bytes of the name.
int64_t rt_refusal_rule(const rc_runtime *r, char *buf, size_t n) {
	rcp_note in = rcp_in(r);
	const char *s = r->refusal_rule(r->self);
	rcp_out(in);
	buf[0] = 0;
	if (s == NULL)
		return -1;
	size_t len = 0;
	while (len < n && s[len] != 0)
		len++;
	size_t k = len < n ? len : n - 1;
	memcpy(buf, s, k);
	buf[k] = 0;
	return (int64_t)len;
}
int32_t rt_commit_bank(const rc_runtime *r, uint32_t t, const rc_region *regions, size_t n, rc_ptr *o, rc_error *e) { RCP_CALL(r, int32_t, r->commit_bank(r->self, (rc_thread)t, regions, n, o, e)) }
int32_t rt_reserve_pool(const rc_runtime *r, uint32_t t, const char *name, int64_t n, uint32_t host, rc_error *e) { RCP_CALL(r, int32_t, r->reserve_pool(r->self, (rc_thread)t, name, n, host, e)) }
int32_t rt_pool_alloc(const rc_runtime *r, uint32_t t, const char *name, int64_t n, rc_ptr *o, rc_error *e) { RCP_CALL(r, int32_t, r->pool_alloc(r->self, (rc_thread)t, name, n, o, e)) }
int32_t rt_pool_free(const rc_runtime *r, uint32_t t, const char *name, rc_ptr p, rc_error *e) { RCP_CALL(r, int32_t, r->pool_free(r->self, (rc_thread)t, name, p, e)) }
int32_t rt_retire(const rc_runtime *r, uint32_t t, rc_error *e) { RCP_CALL(r, int32_t, r->retire(r->self, (rc_thread)t, e)) }
