// The C half of the runtime plugin loader: what plugin_cgo.go calls. The definitions are in this
// directory's .c files (inner.c, flight.c, calls.c), built with the package's CFLAGS (C11, -Wall
// -Wextra -Werror); cgo's preamble includes this header only.
#ifndef REPLAYCHECK_PLUGIN_RCP_H
#define REPLAYCHECK_PLUGIN_RCP_H

#include <stddef.h>
#include <stdint.h>

#include "replaycheck/runtime.h"

// rcp_box is an rc_runtime and what the wrappers note about the call being made into it. The
// rc_runtime comes first: a *rcp_box is the *rc_runtime the wrappers take.
typedef struct {
	rc_runtime rt;
	const char *desc; // "runtime plugin P was inside its entry E", C memory: set before each call
	// holds' key and answer (rt_holds_box): C memory, so that the hottest call allocates nothing.
	const char *hkey;
	int32_t held;
	uint32_t hslot;
	rc_ptr hptr;
} rcp_box;

// inner.c: the inner device's table, whose entries call the Go functions of inner_cgo.go with self.
void rcp_fill_inner(rc_inner *in, uintptr_t self);

// flight.c: the exit handlers, and the plugins loaded for them to name (C memory, the Plugin's).
int rcp_register_exit(int strict);
void rcp_loaded_add(const char *d);
void rcp_loaded_remove(const char *d);

// calls.c: the entry points, called through the addresses dl resolved, and the names of the
// entries of *r the plugin left NULL, comma-separated, into buf.
uint32_t rcp_abi(void *f);
int32_t rcp_open(void *f, uint32_t v, uint32_t mode, const rc_device *in, rc_runtime *out, rc_error *e);
void rcp_close(void *f, const rc_runtime *r);
void rcp_missing(const rc_runtime *r, char *buf, size_t n);

// calls.c: calls into the runtime's table, each noted in flight for the exit handlers. rt_holds_box
// asks holds about the box's hkey into its held, hslot and hptr; rt_refusal_rule copies the name
// refusal_rule gives into buf (see calls.c).
int32_t rt_malloc(const rc_runtime *r, uint32_t t, int64_t n, rc_ptr *o, rc_error *e);
int32_t rt_free(const rc_runtime *r, uint32_t t, rc_ptr p, rc_error *e);
int32_t rt_write(const rc_runtime *r, uint32_t t, rc_ptr d, const void *src, rc_error *e);
int32_t rt_read(const rc_runtime *r, uint32_t t, void *d, rc_ptr src, rc_error *e);
int32_t rt_alloc_host(const rc_runtime *r, uint32_t t, int64_t n, uint32_t k, rc_ptr *o, rc_error *e);
int32_t rt_free_host(const rc_runtime *r, uint32_t t, rc_ptr p, rc_error *e);
int32_t rt_host_write(const rc_runtime *r, rc_ptr d, const void *src, rc_error *e);
int32_t rt_host_read(const rc_runtime *r, void *d, rc_ptr src, rc_error *e);
int32_t rt_create_stream(const rc_runtime *r, uint32_t t, rc_stream *o, rc_error *e);
int32_t rt_create_stream_with_flags(const rc_runtime *r, uint32_t t, uint32_t f, rc_stream *o, rc_error *e);
int32_t rt_destroy_stream(const rc_runtime *r, uint32_t t, rc_stream s, rc_error *e);
int32_t rt_create_event(const rc_runtime *r, uint32_t t, rc_event *o, rc_error *e);
int32_t rt_destroy_event(const rc_runtime *r, uint32_t t, rc_event x, rc_error *e);
int32_t rt_fill(const rc_runtime *r, uint32_t t, rc_stream s, rc_ptr d, uint8_t v, rc_error *e);
int32_t rt_copy(const rc_runtime *r, uint32_t t, rc_stream s, rc_ptr d, rc_ptr src, rc_error *e);
int32_t rt_axpy(const rc_runtime *r, uint32_t t, rc_stream s, rc_ptr y, rc_ptr x, uint32_t a, rc_error *e);
int32_t rt_record(const rc_runtime *r, uint32_t t, rc_event ev, rc_stream s, rc_error *e);
int32_t rt_wait(const rc_runtime *r, uint32_t t, rc_stream s, rc_event ev, rc_error *e);
int32_t rt_sync_stream(const rc_runtime *r, uint32_t t, rc_stream s, rc_error *e);
int32_t rt_sync_device(const rc_runtime *r, uint32_t t, rc_error *e);
int32_t rt_query_event(const rc_runtime *r, uint32_t t, rc_event ev, uint32_t *c, rc_error *e);
int32_t rt_sync_event(const rc_runtime *r, uint32_t t, rc_event ev, rc_error *e);
int32_t rt_exchange_capture_mode(const rc_runtime *r, uint32_t t, uint32_t m, uint32_t *old, rc_error *e);
int32_t rt_begin_capture(const rc_runtime *r, uint32_t t, rc_stream s, uint32_t m, rc_error *e);
int32_t rt_end_capture(const rc_runtime *r, uint32_t t, rc_stream s, rc_graph *o, rc_error *e);
int32_t rt_capture_info(const rc_runtime *r, uint32_t t, rc_stream s, rc_capture_info *o, rc_error *e);
int32_t rt_launch(const rc_runtime *r, uint32_t t, rc_graph g, rc_stream s, rc_error *e);
int32_t rt_destroy_graph(const rc_runtime *r, uint32_t t, rc_graph g, rc_error *e);
int32_t rt_provision(const rc_runtime *r, uint32_t t, uint32_t slot, const char *key, rc_ptr cur, int64_t n, rc_ptr *o, uint32_t *served, rc_error *e);
int32_t rt_release(const rc_runtime *r, uint32_t t, uint32_t slot, const char *key, rc_ptr p, rc_error *e);
void rt_holds_box(rc_runtime *r);
int64_t rt_slots_changed(const rc_runtime *r, uint64_t since, const char **keys, size_t cap, uint64_t *now);
int64_t rt_refusal_rule(const rc_runtime *r, char *buf, size_t n);
int32_t rt_commit_bank(const rc_runtime *r, uint32_t t, const rc_region *regions, size_t n, rc_ptr *o, rc_error *e);
int32_t rt_reserve_pool(const rc_runtime *r, uint32_t t, const char *name, int64_t n, uint32_t host, rc_error *e);
int32_t rt_pool_alloc(const rc_runtime *r, uint32_t t, const char *name, int64_t n, rc_ptr *o, rc_error *e);
int32_t rt_pool_free(const rc_runtime *r, uint32_t t, const char *name, rc_ptr p, rc_error *e);
int32_t rt_retire(const rc_runtime *r, uint32_t t, rc_error *e);

#endif
