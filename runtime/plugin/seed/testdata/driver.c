/*
 * Test driver for the seed runtime plugins: driver PLUGIN.so SCENARIO.
 *
 * It dlopens a plugin, opens it over a minimal inner device of its own (host memory from calloc
 * with LIFO reuse of a freed block of the same size, synchronous streams, a toy capture that
 * records fill, copy and axpy into a graph and runs them again on launch), runs one scenario and
 * prints what happened, one fact per line, with no addresses (offsets and counter deltas only), for
 * the Go test to check. It ends with "done SCENARIO"; a broken precondition prints "FATAL ..." and
 * exits 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replaycheck/runtime.h"

/* ---------------------------------------------------------------------------------------------- */
/* The inner device. */

enum { FILL, COPY, AXPY };
typedef struct {
	int kind;
	rc_ptr dst, src;
	uint8_t value;
	uint32_t a;
} node;

typedef struct {
	uint64_t addr;
	int64_t bytes;
	int live, host;
} blk;

typedef struct {
	uint64_t id; /* 0: not capturing */
	rc_stream origin;
	node nodes[64];
	size_t n;
} cap;

typedef struct {
	node nodes[64];
	size_t n;
	int live;
} graph;

typedef struct {
	blk blocks[256];
	size_t nblocks;
	rc_stream next_stream;
	uint64_t stream_capture[64]; /* stream handle -> capture id, 0 when none */
	int stream_live[64];
	uint64_t event_capture[64]; /* event handle -> capture id it was recorded in */
	rc_event next_event;
	cap caps[8];
	uint64_t next_capture;
	graph graphs[32];
	rc_graph next_graph;
	long mallocs, frees, host_allocs, host_frees, launches, calls;
} dev;

static int32_t derr(rc_error *err, const char *cls, const char *fmt, ...) {
	va_list ap;
	memset(err, 0, sizeof *err);
	err->code = 1;
	snprintf(err->name, sizeof err->name, "TOY_ERROR");
	snprintf(err->class_name, sizeof err->class_name, "%s", cls);
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	return RC_ERROR;
}

static int32_t alloc(dev *d, int host, int64_t bytes, rc_ptr *out, rc_error *err) {
	d->calls++;
	if (bytes <= 0)
		return derr(err, "invalid-value", "cannot allocate %lld bytes", (long long)bytes);
	/* The most recently freed block of the same size is reused: same address. */
	for (size_t i = d->nblocks; i-- > 0;) {
		blk *b = &d->blocks[i];
		if (!b->live && b->host == host && b->bytes == bytes) {
			b->live = 1;
			/* Move it to the end, so reuse stays LIFO. */
			blk k = *b;
			memmove(b, b + 1, (d->nblocks - i - 1) * sizeof *b);
			d->blocks[d->nblocks - 1] = k;
			*out = (rc_ptr){k.addr, bytes};
			return RC_OK;
		}
	}
	if (d->nblocks == 256)
		return derr(err, "out-of-memory", "toy device: too many blocks");
	void *p = calloc(1, (size_t)bytes);
	if (!p)
		return derr(err, "out-of-memory", "toy device: calloc failed");
	d->blocks[d->nblocks++] = (blk){(uint64_t)(uintptr_t)p, bytes, 1, host};
	*out = (rc_ptr){(uint64_t)(uintptr_t)p, bytes};
	return RC_OK;
}

static int32_t release(dev *d, int host, rc_ptr p, rc_error *err) {
	d->calls++;
	for (size_t i = 0; i < d->nblocks; i++) {
		blk *b = &d->blocks[i];
		if (b->live && b->host == host && b->addr == p.addr) {
			b->live = 0; /* the memory stays, so a stale replay writes somewhere harmless */
			/* Move it to the end: the last freed is reused first. */
			blk k = *b;
			memmove(b, b + 1, (d->nblocks - i - 1) * sizeof *b);
			d->blocks[d->nblocks - 1] = k;
			return RC_OK;
		}
	}
	return derr(err, "invalid-value", "toy device: 0x%llx is not a live allocation", (unsigned long long)p.addr);
}

static int live(dev *d, rc_ptr r) {
	for (size_t i = 0; i < d->nblocks; i++) {
		blk *b = &d->blocks[i];
		if (b->live && r.addr >= b->addr && r.addr + (uint64_t)r.bytes <= b->addr + (uint64_t)b->bytes)
			return 1;
	}
	return 0;
}

static int32_t t_malloc(void *self, rc_thread t, int64_t bytes, rc_ptr *out, rc_error *err) {
	(void)t;
	dev *d = self;
	int32_t st = alloc(d, 0, bytes, out, err);
	d->mallocs += st == RC_OK;
	return st;
}
static int32_t t_free(void *self, rc_thread t, rc_ptr p, rc_error *err) {
	(void)t;
	dev *d = self;
	int32_t st = release(d, 0, p, err);
	d->frees += st == RC_OK;
	return st;
}
static int32_t t_alloc_host(void *self, rc_thread t, int64_t bytes, rc_host_memory kind, rc_ptr *out, rc_error *err) {
	(void)t;
	(void)kind;
	dev *d = self;
	int32_t st = alloc(d, 1, bytes, out, err);
	d->host_allocs += st == RC_OK;
	return st;
}
static int32_t t_free_host(void *self, rc_thread t, rc_ptr p, rc_error *err) {
	(void)t;
	dev *d = self;
	int32_t st = release(d, 1, p, err);
	d->host_frees += st == RC_OK;
	return st;
}
static int32_t t_write(void *self, rc_thread t, rc_ptr dst, const void *src, rc_error *err) {
	(void)t;
	if (!live(self, dst))
		return derr(err, "illegal-address", "write outside any allocation");
	memcpy((void *)(uintptr_t)dst.addr, src, (size_t)dst.bytes);
	return RC_OK;
}
static int32_t t_read(void *self, rc_thread t, void *dst, rc_ptr src, rc_error *err) {
	(void)t;
	if (!live(self, src))
		return derr(err, "illegal-address", "read outside any allocation");
	memcpy(dst, (const void *)(uintptr_t)src.addr, (size_t)src.bytes);
	return RC_OK;
}
static int32_t t_host_write(void *self, rc_ptr dst, const void *src, rc_error *err) { return t_write(self, RC_THREAD_MAIN, dst, src, err); }
static int32_t t_host_read(void *self, void *dst, rc_ptr src, rc_error *err) { return t_read(self, RC_THREAD_MAIN, dst, src, err); }

static int32_t t_create_stream(void *self, rc_thread t, rc_stream *out, rc_error *err) {
	(void)t;
	dev *d = self;
	if (d->next_stream >= 63)
		return derr(err, "out-of-memory", "toy device: too many streams");
	*out = ++d->next_stream;
	d->stream_live[*out] = 1;
	return RC_OK;
}
/* The toy's streams are all alike; it keeps the flags of the last one made, for a scenario to show. */
static uint32_t last_stream_flags = UINT32_MAX;
static int32_t t_create_stream_with_flags(void *self, rc_thread t, uint32_t flags, rc_stream *out, rc_error *err) {
	if (flags > RC_STREAM_NON_BLOCKING)
		return derr(err, "invalid-value", "toy device: stream flags %u", (unsigned)flags);
	last_stream_flags = flags;
	return t_create_stream(self, t, out, err);
}
static int32_t t_destroy_stream(void *self, rc_thread t, rc_stream s, rc_error *err) {
	(void)t;
	dev *d = self;
	if (s == 0 || s >= 64 || !d->stream_live[s])
		return derr(err, "invalid-value", "no stream %llu", (unsigned long long)s);
	d->stream_live[s] = 0;
	d->stream_capture[s] = 0;
	return RC_OK;
}
static int32_t t_create_event(void *self, rc_thread t, rc_event *out, rc_error *err) {
	(void)t;
	dev *d = self;
	if (d->next_event >= 63)
		return derr(err, "out-of-memory", "toy device: too many events");
	*out = ++d->next_event;
	return RC_OK;
}
static int32_t t_destroy_event(void *self, rc_thread t, rc_event e, rc_error *err) {
	(void)self;
	(void)t;
	(void)e;
	(void)err;
	return RC_OK;
}

static cap *capture_of(dev *d, rc_stream s) {
	if (s >= 64 || d->stream_capture[s] == 0)
		return NULL;
	for (size_t i = 0; i < 8; i++)
		if (d->caps[i].id == d->stream_capture[s])
			return &d->caps[i];
	return NULL;
}

static void run(const node *n) {
	switch (n->kind) {
	case FILL:
		memset((void *)(uintptr_t)n->dst.addr, n->value, (size_t)n->dst.bytes);
		break;
	case COPY: {
		int64_t k = n->dst.bytes < n->src.bytes ? n->dst.bytes : n->src.bytes;
		memmove((void *)(uintptr_t)n->dst.addr, (const void *)(uintptr_t)n->src.addr, (size_t)k);
		break;
	}
	case AXPY: {
		uint32_t *y = (uint32_t *)(uintptr_t)n->dst.addr;
		const uint32_t *x = (const uint32_t *)(uintptr_t)n->src.addr;
		for (int64_t i = 0; i < n->dst.bytes / 4 && i < n->src.bytes / 4; i++)
			y[i] += n->a * x[i];
		break;
	}
	}
}

/* enqueue runs n now, or records it when s is capturing. */
static int32_t enqueue(dev *d, rc_stream s, node n, rc_error *err) {
	if (!live(d, n.dst) || (n.kind != FILL && !live(d, n.src)))
		return derr(err, "illegal-address", "work outside any allocation");
	cap *c = capture_of(d, s);
	if (c) {
		if (c->n == 64)
			return derr(err, "out-of-memory", "toy device: capture full");
		c->nodes[c->n++] = n;
		return RC_OK;
	}
	run(&n);
	return RC_OK;
}

static int32_t t_fill(void *self, rc_thread t, rc_stream s, rc_ptr dst, uint8_t value, rc_error *err) {
	(void)t;
	return enqueue(self, s, (node){FILL, dst, {0, 0}, value, 0}, err);
}
static int32_t t_copy(void *self, rc_thread t, rc_stream s, rc_ptr dst, rc_ptr src, rc_error *err) {
	(void)t;
	return enqueue(self, s, (node){COPY, dst, src, 0, 0}, err);
}
static int32_t t_axpy(void *self, rc_thread t, rc_stream s, rc_ptr y, rc_ptr x, uint32_t a, rc_error *err) {
	(void)t;
	return enqueue(self, s, (node){AXPY, y, x, 0, a}, err);
}
static int32_t t_record(void *self, rc_thread t, rc_event e, rc_stream s, rc_error *err) {
	(void)t;
	(void)err;
	dev *d = self;
	cap *c = capture_of(d, s);
	d->event_capture[e % 64] = c ? c->id : 0;
	return RC_OK;
}
static int32_t t_wait(void *self, rc_thread t, rc_stream s, rc_event e, rc_error *err) {
	(void)t;
	(void)err;
	dev *d = self;
	uint64_t id = d->event_capture[e % 64];
	if (id && s < 64)
		for (size_t i = 0; i < 8; i++)
			if (d->caps[i].id == id)
				d->stream_capture[s] = id; /* a fork into the capture */
	return RC_OK;
}
static int32_t t_ok(void *self, rc_thread t, rc_error *err) {
	(void)self;
	(void)t;
	(void)err;
	return RC_OK;
}
static int32_t t_sync_stream(void *self, rc_thread t, rc_stream s, rc_error *err) {
	(void)s;
	return t_ok(self, t, err);
}
static int32_t t_query_event(void *self, rc_thread t, rc_event e, uint32_t *complete, rc_error *err) {
	(void)e;
	*complete = 1;
	return t_ok(self, t, err);
}
static int32_t t_sync_event(void *self, rc_thread t, rc_event e, rc_error *err) {
	(void)e;
	return t_ok(self, t, err);
}
static int32_t t_exchange(void *self, rc_thread t, rc_capture_mode mode, rc_capture_mode *old, rc_error *err) {
	(void)mode;
	*old = RC_CAPTURE_GLOBAL;
	return t_ok(self, t, err);
}
static int32_t t_begin(void *self, rc_thread t, rc_stream s, rc_capture_mode mode, rc_error *err) {
	(void)t;
	(void)mode;
	dev *d = self;
	if (s >= 64 || d->stream_capture[s])
		return derr(err, "capture-conflict", "stream %llu is already capturing", (unsigned long long)s);
	for (size_t i = 0; i < 8; i++)
		if (d->caps[i].id == 0) {
			d->caps[i] = (cap){++d->next_capture, s, {{0, {0, 0}, {0, 0}, 0, 0}}, 0};
			d->stream_capture[s] = d->caps[i].id;
			return RC_OK;
		}
	return derr(err, "out-of-memory", "toy device: too many captures");
}
static int32_t t_end(void *self, rc_thread t, rc_stream s, rc_graph *out, rc_error *err) {
	(void)t;
	dev *d = self;
	cap *c = capture_of(d, s);
	if (!c)
		return derr(err, "capture-not-capturing", "stream %llu is not capturing", (unsigned long long)s);
	if (c->origin != s)
		return derr(err, "capture-unmatched", "stream %llu is not the origin", (unsigned long long)s);
	if (d->next_graph >= 31)
		return derr(err, "out-of-memory", "toy device: too many graphs");
	rc_graph g = ++d->next_graph;
	memcpy(d->graphs[g].nodes, c->nodes, sizeof c->nodes);
	d->graphs[g].n = c->n;
	d->graphs[g].live = 1;
	for (size_t i = 0; i < 64; i++)
		if (d->stream_capture[i] == c->id)
			d->stream_capture[i] = 0;
	c->id = 0;
	*out = g;
	return RC_OK;
}
static int32_t t_info(void *self, rc_thread t, rc_stream s, rc_capture_info *out, rc_error *err) {
	(void)t;
	(void)err;
	cap *c = capture_of(self, s);
	memset(out, 0, sizeof *out);
	if (c) {
		out->status = RC_CAPTURE_ACTIVE;
		out->id = c->id;
		out->origin = c->origin;
	}
	return RC_OK;
}
static int32_t t_launch(void *self, rc_thread t, rc_graph g, rc_stream s, rc_error *err) {
	(void)t;
	dev *d = self;
	if (g == 0 || g >= 32 || !d->graphs[g].live)
		return derr(err, "invalid-value", "no graph %llu", (unsigned long long)g);
	d->launches++;
	for (size_t i = 0; i < d->graphs[g].n; i++) {
		int32_t st = enqueue(d, s, d->graphs[g].nodes[i], err);
		if (st != RC_OK)
			return st;
	}
	return RC_OK;
}
static int32_t t_destroy_graph(void *self, rc_thread t, rc_graph g, rc_error *err) {
	(void)t;
	dev *d = self;
	if (g == 0 || g >= 32 || !d->graphs[g].live)
		return derr(err, "invalid-value", "no graph %llu", (unsigned long long)g);
	d->graphs[g].live = 0;
	return RC_OK;
}

static rc_inner inner_of(dev *d) {
	rc_device x = {
	    .self = d, .malloc_ = t_malloc, .free_ = t_free, .write = t_write, .read = t_read,
	    .alloc_host = t_alloc_host, .free_host = t_free_host, .host_write = t_host_write, .host_read = t_host_read,
	    .create_stream = t_create_stream, .destroy_stream = t_destroy_stream, .create_event = t_create_event,
	    .destroy_event = t_destroy_event, .fill = t_fill, .copy = t_copy, .axpy = t_axpy, .record = t_record,
	    .wait = t_wait, .sync_stream = t_sync_stream, .sync_device = t_ok, .query_event = t_query_event,
	    .sync_event = t_sync_event, .exchange_capture_mode = t_exchange, .begin_capture = t_begin,
	    .end_capture = t_end, .capture_info = t_info, .launch = t_launch, .destroy_graph = t_destroy_graph,
	};
	return (rc_inner){.device = x, .create_stream_with_flags = t_create_stream_with_flags};
}

/* ---------------------------------------------------------------------------------------------- */
/* The plugin. */

static uint32_t (*abi_version)(void);
static int32_t (*open_rt)(uint32_t, rc_mode, const rc_device *, rc_runtime *, rc_error *);
static void (*close_rt)(void *);

static void fatal(const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	printf("FATAL ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	exit(1);
}

typedef struct {
	dev *d;
	rc_runtime rt;
	const rc_device *x; /* the device the engine drives: &rt.device */
} env;

/* open_env opens the plugin in mode over a fresh inner device. The inner table is a copy: the
 * plugin may not keep a pointer to it (it lives on this stack frame). */
static void open_env(env *e, rc_mode mode) {
	e->d = calloc(1, sizeof *e->d);
	if (!e->d)
		fatal("calloc");
	rc_inner inner = inner_of(e->d);
	rc_error err;
	if (open_rt(RC_ABI_VERSION, mode, &inner.device, &e->rt, &err) != RC_OK)
		fatal("open: %s", err.message);
	memset(&inner, 0, sizeof inner);
	e->x = &e->rt.device;
}

static void close_env(env *e) {
	close_rt(e->rt.self);
	for (size_t i = 0; i < e->d->nblocks; i++)
		free((void *)(uintptr_t)e->d->blocks[i].addr);
	free(e->d);
}

static const char *status_name(int32_t st) {
	switch (st) {
	case RC_OK: return "ok";
	case RC_REFUSED: return "refused";
	case RC_ERROR: return "error";
	}
	return "?";
}

static const char *served_name(rc_served s) {
	switch (s) {
	case RC_NOT_SERVED: return "not-served";
	case RC_IN_PLACE: return "in-place";
	case RC_ALLOCATED: return "allocated";
	case RC_REBASED: return "rebased";
	}
	return "?";
}

/* outcome prints a call's status, with the class of a failure. */
static void outcome(const char *label, int32_t st, const rc_error *err) {
	if (st == RC_OK)
		printf("%s: ok\n", label);
	else
		printf("%s: %s %s\n", label, status_name(st), err->class_name);
	fflush(stdout);
}

static rc_ptr must_malloc(env *e, int64_t bytes) {
	rc_ptr p;
	rc_error err;
	if (e->x->malloc_(e->x->self, RC_THREAD_MAIN, bytes, &p, &err) != RC_OK)
		fatal("malloc %lld: %s", (long long)bytes, err.message);
	return p;
}

static rc_stream must_stream(env *e) {
	rc_stream s;
	rc_error err;
	if (e->x->create_stream(e->x->self, RC_THREAD_MAIN, &s, &err) != RC_OK)
		fatal("create_stream: %s", err.message);
	return s;
}

/* provision prints the outcome of one provision: status, how it was served, the counter deltas,
 * whether the address stayed, and whether the slot holds the result. */
static rc_ptr provision(env *e, const char *label, rc_slot slot, const char *key, rc_ptr cur, int64_t bytes) {
	long m = e->d->mallocs, f = e->d->frees;
	rc_ptr out;
	rc_served served;
	rc_error err;
	int32_t st = e->rt.provision(e->rt.self, RC_THREAD_MAIN, slot, key, cur, bytes, &out, &served, &err);
	rc_slot hs;
	rc_ptr hp = {0, 0};
	int held = e->rt.holds(e->rt.self, key, &hs, &hp);
	printf("%s: %s %s mallocs+%ld frees+%ld same-address=%d held=%d", label, status_name(st), served_name(served),
	       e->d->mallocs - m, e->d->frees - f, out.addr == cur.addr && out.bytes == cur.bytes, held);
	if (st != RC_OK)
		printf(" class=%s", err.class_name);
	printf("\n");
	fflush(stdout);
	if (st == RC_OK && (!held || hp.addr != out.addr || hp.bytes != out.bytes) && !(out.addr == 0 && out.bytes == 0))
		fatal("%s: holds disagrees with provision", label);
	return st == RC_OK ? out : cur;
}

/* ---------------------------------------------------------------------------------------------- */
/* Scenarios. */

static void grow(rc_mode mode) {
	env e;
	open_env(&e, mode);
	rc_ptr kv = provision(&e, "retained first", RC_SLOT_RETAINED, "kv", (rc_ptr){0, 0}, 1024);
	kv = provision(&e, "retained at capacity", RC_SLOT_RETAINED, "kv", kv, 1024);
	kv = provision(&e, "retained below capacity", RC_SLOT_RETAINED, "kv", kv, 512);
	kv = provision(&e, "retained growth", RC_SLOT_RETAINED, "kv", kv, 4096);
	rc_ptr w = provision(&e, "plain first", RC_SLOT_PLAIN, "w", (rc_ptr){0, 0}, 1024);
	w = provision(&e, "plain growth", RC_SLOT_PLAIN, "w", w, 2048);
	rc_ptr a = provision(&e, "arena first", RC_SLOT_ARENA, "ws", (rc_ptr){0, 0}, 1024);
	a = provision(&e, "arena below capacity", RC_SLOT_ARENA, "ws", a, 1000);
	a = provision(&e, "arena over capacity", RC_SLOT_ARENA, "ws", a, 1025);
	provision(&e, "empty zero request", RC_SLOT_PLAIN, "nothing", (rc_ptr){0, 0}, 0);
	provision(&e, "stale view", RC_SLOT_PLAIN, "w", (rc_ptr){0, 0}, 8);

	rc_error err;
	long f = e.d->frees;
	int32_t st = e.rt.release(e.rt.self, RC_THREAD_MAIN, RC_SLOT_RETAINED, "kv", kv, &err);
	outcome("release retained", st, &err);
	printf("release retained frees+%ld\n", e.d->frees - f);
	st = e.x->free_(e.x->self, RC_THREAD_MAIN, a, &err);
	outcome("free arena region", st, &err);
	st = e.rt.release(e.rt.self, RC_THREAD_MAIN, RC_SLOT_PLAIN, "w", w, &err);
	outcome("release plain", st, &err);
	close_env(&e);
}

/* bank commits two arena regions, then asks one for more than its capacity. */
static void bank(void) {
	env e;
	open_env(&e, RC_MODE_KERNEL);
	rc_region regions[2] = {{"a", 1024}, {"b", 2048}};
	rc_ptr out[2];
	rc_error err;
	int32_t st = e.rt.commit_bank(e.rt.self, RC_THREAD_MAIN, regions, 2, out, &err);
	outcome("commit", st, &err);
	printf("commit mallocs=%ld\n", e.d->mallocs);
	rc_region again[2] = {{"a", 512}, {"b", 2048}};
	rc_ptr in[2];
	st = e.rt.commit_bank(e.rt.self, RC_THREAD_MAIN, again, 2, in, &err);
	outcome("commit within capacity", st, &err);
	printf("within capacity in place=%d mallocs=%ld\n", in[0].addr == out[0].addr && in[1].addr == out[1].addr, e.d->mallocs);

	rc_region over[2] = {{"a", 1024}, {"b", 2049}};
	long f = e.d->frees, m = e.d->mallocs;
	st = e.rt.commit_bank(e.rt.self, RC_THREAD_MAIN, over, 2, in, &err);
	outcome("commit over capacity", st, &err);
	rc_slot s;
	rc_ptr pa = {0, 0}, pb = {0, 0};
	int ha = e.rt.holds(e.rt.self, "a", &s, &pa), hb = e.rt.holds(e.rt.self, "b", &s, &pb);
	printf("over capacity mallocs+%ld frees+%ld a-held=%d b-held=%d\n", e.d->mallocs - m, e.d->frees - f,
	       ha && pa.addr == out[0].addr, hb && pb.addr == out[1].addr);
	/* Is the other committed region's address still allocated on the inner device? */
	printf("over capacity a-allocated=%d\n", live(e.d, out[0]));
	rc_region dup[2] = {{"c", 8}, {"c", 8}};
	st = e.rt.commit_bank(e.rt.self, RC_THREAD_MAIN, dup, 2, in, &err);
	outcome("commit naming a region twice", st, &err);
	close_env(&e);
}

static void pools(void) {
	env e;
	open_env(&e, RC_MODE_KERNEL);
	rc_error err;
	int32_t st = e.rt.reserve_pool(e.rt.self, RC_THREAD_MAIN, "p", 4096 + 100, 0, &err);
	outcome("reserve", st, &err);
	st = e.rt.reserve_pool(e.rt.self, RC_THREAD_MAIN, "p", 4096, 0, &err);
	outcome("reserve again", st, &err);
	st = e.rt.reserve_pool(e.rt.self, RC_THREAD_MAIN, "tiny", 511, 0, &err);
	outcome("reserve tiny", st, &err);
	uint64_t base = e.d->blocks[e.d->nblocks - 1].addr;
	rc_ptr b[8];
	int64_t sizes[] = {100, 600, 512, 512, 1};
	for (int i = 0; i < 5; i++) {
		st = e.rt.pool_alloc(e.rt.self, RC_THREAD_MAIN, "p", sizes[i], &b[i], &err);
		if (st != RC_OK)
			fatal("pool_alloc %d: %s", i, err.message);
		printf("alloc %lld at %llu bytes %lld\n", (long long)sizes[i], (unsigned long long)(b[i].addr - base), (long long)b[i].bytes);
	}
	/* Two equal free blocks, at 0 and 1536: the lowest address is served. */
	e.rt.pool_free(e.rt.self, RC_THREAD_MAIN, "p", b[0], &err);
	e.rt.pool_free(e.rt.self, RC_THREAD_MAIN, "p", b[2], &err);
	st = e.rt.pool_alloc(e.rt.self, RC_THREAD_MAIN, "p", 512, &b[5], &err);
	printf("equal fit at %llu\n", (unsigned long long)(b[5].addr - base));
	/* The smallest block that holds it: 1536 (512) rather than the tail. */
	st = e.rt.pool_alloc(e.rt.self, RC_THREAD_MAIN, "p", 300, &b[6], &err);
	printf("best fit at %llu\n", (unsigned long long)(b[6].addr - base));
	st = e.rt.pool_alloc(e.rt.self, RC_THREAD_MAIN, "p", 4096, &b[7], &err);
	outcome("alloc too large", st, &err);
	st = e.rt.pool_free(e.rt.self, RC_THREAD_MAIN, "p", (rc_ptr){base + 7, 3}, &err);
	outcome("free of a foreign block", st, &err);
	/* Free everything: the blocks coalesce into the whole segment. */
	rc_ptr live_blocks[] = {b[1], b[3], b[4], b[5], b[6]};
	for (int i = 0; i < 5; i++)
		if (e.rt.pool_free(e.rt.self, RC_THREAD_MAIN, "p", live_blocks[i], &err) != RC_OK)
			fatal("pool_free: %s", err.message);
	st = e.rt.pool_alloc(e.rt.self, RC_THREAD_MAIN, "p", 4096, &b[7], &err);
	outcome("alloc whole segment after coalescing", st, &err);
	printf("whole segment at %llu\n", (unsigned long long)(b[7].addr - base));
	printf("pool device mallocs=%ld frees=%ld\n", e.d->mallocs, e.d->frees);
	st = e.rt.retire(e.rt.self, RC_THREAD_MAIN, &err);
	outcome("retire", st, &err);
	printf("after retire frees=%ld\n", e.d->frees);
	close_env(&e);
}

/* watch begins a capture and makes allocator calls and off-capture work during it. */
static void watch(rc_mode mode) {
	env e;
	open_env(&e, mode);
	rc_error err;
	rc_ptr buf = must_malloc(&e, 1024);
	rc_stream s = must_stream(&e), other = must_stream(&e);
	if (e.x->begin_capture(e.x->self, RC_THREAD_MAIN, s, RC_CAPTURE_GLOBAL, &err) != RC_OK)
		fatal("begin: %s", err.message);
	long m = e.d->mallocs;
	rc_ptr p;
	int32_t st = e.x->malloc_(e.x->self, RC_THREAD_MAIN, 64, &p, &err);
	outcome("malloc during capture", st, &err);
	printf("malloc during capture mallocs+%ld\n", e.d->mallocs - m);
	if (st == RC_OK) {
		st = e.x->free_(e.x->self, RC_THREAD_MAIN, p, &err);
		outcome("free during capture", st, &err);
	}
	st = e.x->alloc_host(e.x->self, RC_THREAD_MAIN, 64, RC_HOST_PINNED, &p, &err);
	outcome("alloc_host during capture", st, &err);
	provision(&e, "provision during capture", RC_SLOT_PLAIN, "k", (rc_ptr){0, 0}, 64);
	st = e.rt.reserve_pool(e.rt.self, RC_THREAD_MAIN, "p", 4096, 0, &err);
	outcome("reserve_pool during capture", st, &err);
	st = e.x->fill(e.x->self, RC_THREAD_MAIN, other, buf, 1, &err);
	outcome("fill off the capture", st, &err);
	st = e.x->fill(e.x->self, RC_THREAD_MAIN, s, buf, 2, &err);
	outcome("fill in the capture", st, &err);
	rc_event ev;
	e.x->create_event(e.x->self, RC_THREAD_MAIN, &ev, &err);
	st = e.x->record(e.x->self, RC_THREAD_MAIN, ev, s, &err);
	outcome("record in the capture", st, &err);
	st = e.x->wait(e.x->self, RC_THREAD_MAIN, other, ev, &err);
	outcome("wait forking into the capture", st, &err);
	st = e.x->fill(e.x->self, RC_THREAD_MAIN, other, buf, 3, &err);
	outcome("fill on the forked stream", st, &err);
	st = e.x->destroy_stream(e.x->self, RC_THREAD_MAIN, s, &err);
	outcome("destroy the origin during capture", st, &err);
	st = e.rt.retire(e.rt.self, RC_THREAD_MAIN, &err);
	outcome("retire during capture", st, &err);
	rc_graph g;
	st = e.x->end_capture(e.x->self, RC_THREAD_MAIN, s, &g, &err);
	outcome("end", st, &err);
	st = e.x->malloc_(e.x->self, RC_THREAD_MAIN, 64, &p, &err);
	outcome("malloc after capture", st, &err);
	close_env(&e);
}

/* capture_copy captures dst <- src on a new stream and returns the graph. */
static rc_graph capture_copy(env *e, rc_stream s, rc_ptr dst, rc_ptr src) {
	rc_error err;
	rc_graph g;
	if (e->x->begin_capture(e->x->self, RC_THREAD_MAIN, s, RC_CAPTURE_GLOBAL, &err) != RC_OK)
		fatal("begin: %s", err.message);
	if (e->x->copy(e->x->self, RC_THREAD_MAIN, s, dst, src, &err) != RC_OK)
		fatal("copy: %s", err.message);
	if (e->x->end_capture(e->x->self, RC_THREAD_MAIN, s, &g, &err) != RC_OK)
		fatal("end: %s", err.message);
	return g;
}

/* rebase captures copies into a plain slot's buffer and a fill of it (dst written three times,
 * src read twice), grows the slot (a re-base), then launches: dst's range is the one stale range. */
static void rebase(rc_mode mode) {
	env e;
	open_env(&e, mode);
	rc_error err;
	rc_stream s = must_stream(&e);
	rc_ptr src = must_malloc(&e, 1024);
	rc_ptr dst = provision(&e, "plain first", RC_SLOT_PLAIN, "dst", (rc_ptr){0, 0}, 1024);
	rc_graph g;
	if (e.x->begin_capture(e.x->self, RC_THREAD_MAIN, s, RC_CAPTURE_GLOBAL, &err) != RC_OK ||
	    e.x->copy(e.x->self, RC_THREAD_MAIN, s, dst, src, &err) != RC_OK ||
	    e.x->fill(e.x->self, RC_THREAD_MAIN, s, dst, 1, &err) != RC_OK ||
	    e.x->copy(e.x->self, RC_THREAD_MAIN, s, dst, src, &err) != RC_OK ||
	    e.x->end_capture(e.x->self, RC_THREAD_MAIN, s, &g, &err) != RC_OK)
		fatal("capture: %s", err.message);
	int32_t st = e.x->launch(e.x->self, RC_THREAD_MAIN, g, s, &err);
	outcome("launch before the re-base", st, &err);
	provision(&e, "plain growth", RC_SLOT_PLAIN, "dst", dst, 4096);
	long l = e.d->launches;
	st = e.x->launch(e.x->self, RC_THREAD_MAIN, g, s, &err);
	outcome("launch after the re-base", st, &err);
	printf("launch after the re-base reached the device=%ld\n", e.d->launches - l);
	if (st == RC_REFUSED) {
		printf("why: %s\n", err.message);
		/* dst's range is stale once, however often the capture touched it. */
		printf("more stale ranges named=%s\n", strstr(err.message, "more stale ranges") ? "yes" : "no");
	}
	st = e.x->launch(e.x->self, RC_THREAD_MAIN, 999, s, &err);
	outcome("launch of a graph not captured here", st, &err);
	close_env(&e);
}

/* same_address captures a copy into dst, frees dst, allocates a bystander of its size (the toy
 * allocator hands back the very same address), and launches. */
static void same_address(rc_mode mode) {
	env e;
	open_env(&e, mode);
	rc_error err;
	rc_stream s = must_stream(&e);
	rc_ptr src = must_malloc(&e, 1024), dst = must_malloc(&e, 1024);
	uint8_t seven[1024];
	memset(seven, 7, sizeof seven);
	if (e.x->write(e.x->self, RC_THREAD_MAIN, src, seven, &err) != RC_OK)
		fatal("write: %s", err.message);
	rc_graph g = capture_copy(&e, s, dst, src);
	int32_t st = e.x->free_(e.x->self, RC_THREAD_MAIN, dst, &err);
	outcome("free dst", st, &err);
	rc_ptr by = must_malloc(&e, 1024);
	printf("bystander at the same address=%d\n", by.addr == dst.addr);
	if (e.x->fill(e.x->self, RC_THREAD_MAIN, s, by, 0xEE, &err) != RC_OK)
		fatal("fill: %s", err.message);
	st = e.x->launch(e.x->self, RC_THREAD_MAIN, g, s, &err);
	outcome("launch after free and re-allocation", st, &err);
	if (st == RC_REFUSED)
		printf("why: %s\n", err.message);
	uint8_t b;
	if (e.x->read(e.x->self, RC_THREAD_MAIN, &b, (rc_ptr){by.addr, 1}, &err) != RC_OK)
		fatal("read: %s", err.message);
	printf("bystander byte=%d\n", b);
	/* Freed and not re-allocated: no live allocation holds the range. */
	st = e.x->free_(e.x->self, RC_THREAD_MAIN, by, &err);
	outcome("free bystander", st, &err);
	st = e.x->launch(e.x->self, RC_THREAD_MAIN, g, s, &err);
	outcome("launch after free", st, &err);
	close_env(&e);
}

/* isolation launches two graphs that share memory on two streams, and orders them by a sync and by
 * a wait on an event recorded after a launch. */
static void isolation(rc_mode mode) {
	env e;
	open_env(&e, mode);
	rc_error err;
	rc_stream s1 = must_stream(&e), s2 = must_stream(&e);
	rc_ptr a = must_malloc(&e, 1024), b = must_malloc(&e, 1024), c = must_malloc(&e, 1024);
	rc_graph g1, g2, g3;
	if (e.x->begin_capture(e.x->self, RC_THREAD_MAIN, s1, RC_CAPTURE_GLOBAL, &err) != RC_OK ||
	    e.x->fill(e.x->self, RC_THREAD_MAIN, s1, a, 1, &err) != RC_OK ||
	    e.x->end_capture(e.x->self, RC_THREAD_MAIN, s1, &g1, &err) != RC_OK)
		fatal("capture g1: %s", err.message);
	g2 = capture_copy(&e, s2, b, a);
	g3 = capture_copy(&e, s2, c, b);
	int32_t st = e.x->launch(e.x->self, RC_THREAD_MAIN, g1, s1, &err);
	outcome("launch g1 on s1", st, &err);
	st = e.x->launch(e.x->self, RC_THREAD_MAIN, g2, s2, &err);
	outcome("launch g2 on s2 while g1 writes what it reads", st, &err);
	if (st == RC_REFUSED)
		printf("why: %s\n", err.message);
	st = e.x->sync_stream(e.x->self, RC_THREAD_MAIN, s1, &err);
	outcome("sync s1", st, &err);
	st = e.x->launch(e.x->self, RC_THREAD_MAIN, g2, s2, &err);
	outcome("launch g2 on s2 after the sync", st, &err);
	st = e.x->launch(e.x->self, RC_THREAD_MAIN, g3, s2, &err);
	outcome("launch g3 on the same stream", st, &err);
	st = e.x->launch(e.x->self, RC_THREAD_MAIN, g1, s1, &err);
	outcome("launch g1 on s1 while g2 reads what it writes", st, &err);
	rc_event ev;
	if (e.x->create_event(e.x->self, RC_THREAD_MAIN, &ev, &err) != RC_OK)
		fatal("create_event: %s", err.message);
	st = e.x->record(e.x->self, RC_THREAD_MAIN, ev, s2, &err);
	outcome("record after g2 and g3 on s2", st, &err);
	st = e.x->wait(e.x->self, RC_THREAD_MAIN, s1, ev, &err);
	outcome("s1 waits for it", st, &err);
	st = e.x->launch(e.x->self, RC_THREAD_MAIN, g1, s1, &err);
	outcome("launch g1 on s1 after the wait", st, &err);
	close_env(&e);
}

static void retire(void) {
	env e;
	open_env(&e, RC_MODE_KERNEL);
	rc_error err;
	provision(&e, "retained", RC_SLOT_RETAINED, "kv", (rc_ptr){0, 0}, 1024);
	provision(&e, "arena", RC_SLOT_ARENA, "ws", (rc_ptr){0, 0}, 1024);
	provision(&e, "plain", RC_SLOT_PLAIN, "w", (rc_ptr){0, 0}, 1024);
	int32_t st = e.rt.reserve_pool(e.rt.self, RC_THREAD_MAIN, "host", 1024, RC_HOST_PINNED, &err);
	outcome("reserve host pool", st, &err);
	st = e.rt.retire(e.rt.self, RC_THREAD_MAIN, &err);
	outcome("retire", st, &err);
	printf("retire frees=%ld host-frees=%ld\n", e.d->frees, e.d->host_frees);
	st = e.rt.retire(e.rt.self, RC_THREAD_MAIN, &err);
	outcome("retire again", st, &err);
	provision(&e, "provision after retire", RC_SLOT_PLAIN, "w2", (rc_ptr){0, 0}, 8);
	close_env(&e);
}

/* opens shows that every open keeps its own state, and that a bad open is refused. */
static void opens(void) {
	printf("abi version=%u\n", abi_version());
	env a, b;
	open_env(&a, RC_MODE_KERNEL);
	open_env(&b, RC_MODE_PROGRAM);
	provision(&a, "a retained", RC_SLOT_RETAINED, "kv", (rc_ptr){0, 0}, 1024);
	rc_slot s;
	rc_ptr p;
	printf("b holds a's slot=%d\n", b.rt.holds(b.rt.self, "kv", &s, &p));
	rc_ptr kv = provision(&b, "b retained", RC_SLOT_RETAINED, "kv", (rc_ptr){0, 0}, 1024);
	provision(&b, "b retained growth", RC_SLOT_RETAINED, "kv", kv, 2048);
	rc_stream nb;
	rc_error err;
	int32_t st = a.rt.create_stream_with_flags ? a.rt.create_stream_with_flags(a.rt.self, RC_THREAD_MAIN, RC_STREAM_NON_BLOCKING, &nb, &err) : -1;
	printf("a non-blocking stream: %s flags=%u\n", st == -1 ? "no entry" : status_name(st), (unsigned)last_stream_flags);
	close_env(&a);
	close_env(&b);
	dev d = {0};
	rc_inner inner = inner_of(&d);
	rc_runtime rt;
	outcome("open with another ABI version", open_rt(RC_ABI_VERSION + 1, RC_MODE_KERNEL, &inner.device, &rt, &err), &err);
	outcome("open with an unknown mode", open_rt(RC_ABI_VERSION, (rc_mode)7, &inner.device, &rt, &err), &err);
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: driver PLUGIN.so SCENARIO\n");
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fatal("dlopen: %s", dlerror());
	*(void **)&abi_version = dlsym(h, "rc_runtime_abi_version");
	*(void **)&open_rt = dlsym(h, "rc_runtime_open");
	*(void **)&close_rt = dlsym(h, "rc_runtime_close");
	if (!abi_version || !open_rt || !close_rt)
		fatal("missing entry point");
	const char *sc = argv[2];
	if (!strcmp(sc, "grow-program"))
		grow(RC_MODE_PROGRAM);
	else if (!strcmp(sc, "grow-kernel"))
		grow(RC_MODE_KERNEL);
	else if (!strcmp(sc, "bank"))
		bank();
	else if (!strcmp(sc, "pool"))
		pools();
	else if (!strcmp(sc, "watch-kernel"))
		watch(RC_MODE_KERNEL);
	else if (!strcmp(sc, "watch-program"))
		watch(RC_MODE_PROGRAM);
	else if (!strcmp(sc, "rebase-kernel"))
		rebase(RC_MODE_KERNEL);
	else if (!strcmp(sc, "rebase-program"))
		rebase(RC_MODE_PROGRAM);
	else if (!strcmp(sc, "same-address-kernel"))
		same_address(RC_MODE_KERNEL);
	else if (!strcmp(sc, "same-address-program"))
		same_address(RC_MODE_PROGRAM);
	else if (!strcmp(sc, "isolation-kernel"))
		isolation(RC_MODE_KERNEL);
	else if (!strcmp(sc, "isolation-program"))
		isolation(RC_MODE_PROGRAM);
	else if (!strcmp(sc, "retire"))
		retire();
	else if (!strcmp(sc, "opens"))
		opens();
	else
		fatal("unknown scenario %s", sc);
	printf("done %s\n", sc);
	return 0;
}
