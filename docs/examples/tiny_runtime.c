//go:build ignore

/*
 * tiny_runtime.c: a small runtime under replaycheck's probes, written against the plugin ABI
 * (include/replaycheck/runtime.h, version 4; it leaves the optional slots_changed NULL, and names
 * the rule behind each refusal, retained or arena, in refusal_rule). It is the worked example of
 * docs/runtime-abi.md.
 *
 *   cc -std=c11 -Wall -Wextra -Werror -shared -fPIC -I include -o tiny_runtime.so docs/examples/tiny_runtime.c
 *   replaycheck run --runtime ./tiny_runtime.so specs
 *
 * What it has, the allocator a framework puts in front of the driver:
 *   - slots: plain (growth is free + malloc), retained (kernel mode never grows, releases or frees
 *     it) and arena (regions of a bank with a capacity: kernel mode refuses a request above it
 *     before touching anything, serves one within it in place, and never releases a region);
 *   - pools: one segment reserved per pool, blocks served first fit in 512-byte units with no
 *     driver call, freed blocks merged with free neighbours;
 *   - every device call passed through to the inner device unchanged.
 *
 * What it deliberately lacks: a capture watch, a residency check and replay isolation. Run through
 * the catalog, the probes that need those come out corrupted: docs/runtime-abi.md shows which, and
 * docs/examples/examples_test.go keeps that list true.
 *
 * State is per opened runtime and needs no lock: replaycheck makes one call at a time per opened
 * runtime. Nothing is global.
 *
 * (The //go:build line above only tells the Go tool that this C file is not cgo source of the test
 * package beside it; to a C compiler it is a comment.)
 */
#include "replaycheck/runtime.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define UNIT 512 /* pool blocks are rounded up to this, as replaycheck's pools are */

typedef struct {
	rc_slot kind;
	char *key;
	rc_ptr ptr; /* for an arena region, ptr.bytes is its capacity */
} slot;

typedef struct {
	uint64_t addr;
	int64_t size; /* a multiple of UNIT */
	int used;
} block;

typedef struct {
	char *name;
	uint32_t host; /* 0: device memory; else an rc_host_memory */
	rc_ptr segment;
	block *blocks; /* cover the segment in address order */
	size_t nblocks;
} pool;

typedef struct {
	rc_mode mode;
	rc_device in; /* the inner device: every call we do not refuse goes here */
	/* ...and its one call outside rc_device: inner is the first member of an rc_inner (version 3) */
	int32_t (*in_create_stream_with_flags)(void *self, rc_thread t, uint32_t flags, rc_stream *out, rc_error *err);
	slot *slots;
	size_t nslots;
	pool *pools;
	size_t npools;
	bool retired;
	const char *refused_by; /* the rule of the last refusal: what refusal_rule answers (version 4) */
} tiny;

static bool kernel(const tiny *T) { return T->mode == RC_MODE_KERNEL; }

/* Results other than RC_OK: a refusal (class "refused", code 0) or the runtime's own failure. An
 * inner device's failure is never rewritten: the caller returns the rc_error the inner call filled. */
static int32_t say(rc_error *err, int32_t status, const char *class_name, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int32_t say(rc_error *err, int32_t status, const char *class_name, const char *fmt, ...) {
	va_list ap;
	memset(err, 0, sizeof *err);
	snprintf(err->class_name, sizeof err->class_name, "%s", class_name);
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	return status;
}
/* REFUSE refuses by the rule named rule: named as replaycheck's reference guard of the same rule,
 * so that the catalog's expect.refused-by holds for it. */
#define REFUSE(T, rule, err, ...) ((T)->refused_by = (rule), say(err, RC_REFUSED, "refused", __VA_ARGS__))
#define FAIL(err, cls, ...) say(err, RC_ERROR, cls, __VA_ARGS__)

static void *grow_array(void *v, size_t n, size_t elem) {
	void *p = realloc(v, (n + 1) * elem);
	if (!p)
		abort(); /* the bookkeeping cannot go on without memory */
	return p;
}

static slot *find_slot(tiny *T, const char *key) {
	for (size_t i = 0; i < T->nslots; i++)
		if (strcmp(T->slots[i].key, key) == 0)
			return &T->slots[i];
	return NULL;
}

static slot *slot_at(tiny *T, uint64_t addr) {
	for (size_t i = 0; i < T->nslots; i++)
		if (T->slots[i].ptr.addr == addr)
			return &T->slots[i];
	return NULL;
}

static void drop_slot(tiny *T, slot *s) {
	free(s->key);
	*s = T->slots[--T->nslots];
}

static void set_slot(tiny *T, rc_slot kind, const char *key, rc_ptr p) {
	slot *s = find_slot(T, key);
	if (!s) {
		T->slots = grow_array(T->slots, T->nslots, sizeof *T->slots);
		s = &T->slots[T->nslots++];
		size_t n = strlen(key) + 1;
		s->key = malloc(n);
		if (!s->key)
			abort();
		memcpy(s->key, key, n);
	}
	s->kind = kind;
	s->ptr = p;
}

static const char *kind_name(rc_slot k) {
	return k == RC_SLOT_RETAINED ? "retained" : k == RC_SLOT_ARENA ? "arena" : "plain";
}

/* ---- Device calls. The allocator's frees are checked; everything else passes straight through. ---- */

#define IN(self) (((tiny *)(self))->in)
static int32_t d_malloc(void *self, rc_thread t, int64_t n, rc_ptr *out, rc_error *err) { return IN(self).malloc_(IN(self).self, t, n, out, err); }
static int32_t d_write(void *self, rc_thread t, rc_ptr d, const void *src, rc_error *err) { return IN(self).write(IN(self).self, t, d, src, err); }
static int32_t d_read(void *self, rc_thread t, void *d, rc_ptr src, rc_error *err) { return IN(self).read(IN(self).self, t, d, src, err); }
static int32_t d_alloc_host(void *self, rc_thread t, int64_t n, rc_host_memory k, rc_ptr *out, rc_error *err) { return IN(self).alloc_host(IN(self).self, t, n, k, out, err); }
static int32_t d_free_host(void *self, rc_thread t, rc_ptr p, rc_error *err) { return IN(self).free_host(IN(self).self, t, p, err); }
static int32_t d_host_write(void *self, rc_ptr d, const void *src, rc_error *err) { return IN(self).host_write(IN(self).self, d, src, err); }
static int32_t d_host_read(void *self, void *d, rc_ptr src, rc_error *err) { return IN(self).host_read(IN(self).self, d, src, err); }
static int32_t d_create_stream(void *self, rc_thread t, rc_stream *out, rc_error *err) { return IN(self).create_stream(IN(self).self, t, out, err); }
static int32_t r_create_stream_with_flags(void *self, rc_thread t, uint32_t f, rc_stream *out, rc_error *err) {
	return ((tiny *)self)->in_create_stream_with_flags(IN(self).self, t, f, out, err);
}
static int32_t d_destroy_stream(void *self, rc_thread t, rc_stream s, rc_error *err) { return IN(self).destroy_stream(IN(self).self, t, s, err); }
static int32_t d_create_event(void *self, rc_thread t, rc_event *out, rc_error *err) { return IN(self).create_event(IN(self).self, t, out, err); }
static int32_t d_destroy_event(void *self, rc_thread t, rc_event e, rc_error *err) { return IN(self).destroy_event(IN(self).self, t, e, err); }
static int32_t d_fill(void *self, rc_thread t, rc_stream s, rc_ptr d, uint8_t v, rc_error *err) { return IN(self).fill(IN(self).self, t, s, d, v, err); }
static int32_t d_copy(void *self, rc_thread t, rc_stream s, rc_ptr d, rc_ptr src, rc_error *err) { return IN(self).copy(IN(self).self, t, s, d, src, err); }
static int32_t d_axpy(void *self, rc_thread t, rc_stream s, rc_ptr y, rc_ptr x, uint32_t a, rc_error *err) { return IN(self).axpy(IN(self).self, t, s, y, x, a, err); }
static int32_t d_record(void *self, rc_thread t, rc_event e, rc_stream s, rc_error *err) { return IN(self).record(IN(self).self, t, e, s, err); }
static int32_t d_wait(void *self, rc_thread t, rc_stream s, rc_event e, rc_error *err) { return IN(self).wait(IN(self).self, t, s, e, err); }
static int32_t d_sync_stream(void *self, rc_thread t, rc_stream s, rc_error *err) { return IN(self).sync_stream(IN(self).self, t, s, err); }
static int32_t d_sync_device(void *self, rc_thread t, rc_error *err) { return IN(self).sync_device(IN(self).self, t, err); }
static int32_t d_query_event(void *self, rc_thread t, rc_event e, uint32_t *done, rc_error *err) { return IN(self).query_event(IN(self).self, t, e, done, err); }
static int32_t d_sync_event(void *self, rc_thread t, rc_event e, rc_error *err) { return IN(self).sync_event(IN(self).self, t, e, err); }
static int32_t d_exchange_capture_mode(void *self, rc_thread t, rc_capture_mode m, rc_capture_mode *old, rc_error *err) { return IN(self).exchange_capture_mode(IN(self).self, t, m, old, err); }
static int32_t d_begin_capture(void *self, rc_thread t, rc_stream s, rc_capture_mode m, rc_error *err) { return IN(self).begin_capture(IN(self).self, t, s, m, err); }
static int32_t d_end_capture(void *self, rc_thread t, rc_stream s, rc_graph *out, rc_error *err) { return IN(self).end_capture(IN(self).self, t, s, out, err); }
static int32_t d_capture_info(void *self, rc_thread t, rc_stream s, rc_capture_info *out, rc_error *err) { return IN(self).capture_info(IN(self).self, t, s, out, err); }
static int32_t d_launch(void *self, rc_thread t, rc_graph g, rc_stream s, rc_error *err) { return IN(self).launch(IN(self).self, t, g, s, err); }
static int32_t d_destroy_graph(void *self, rc_thread t, rc_graph g, rc_error *err) { return IN(self).destroy_graph(IN(self).self, t, g, err); }

/* keeps refuses, in kernel mode, to give up what a retained slot or an arena region holds. */
static int32_t keeps(tiny *T, const slot *s, rc_error *err) {
	if (kernel(T) && s->kind != RC_SLOT_PLAIN)
		return REFUSE(T, kind_name(s->kind), err, "%s slot \"%s\" holds 0x%llx+%lld for the context's life: kernel mode never frees it", kind_name(s->kind),
		              s->key, (unsigned long long)s->ptr.addr, (long long)s->ptr.bytes);
	return RC_OK;
}

static int32_t d_free(void *self, rc_thread t, rc_ptr p, rc_error *err) {
	tiny *T = self;
	slot *s = slot_at(T, p.addr);
	if (s && keeps(T, s, err) != RC_OK)
		return RC_REFUSED; /* decided before the inner free: nothing changed */
	int32_t st = T->in.free_(T->in.self, t, p, err);
	if (st == RC_OK && s)
		drop_slot(T, s);
	return st; /* an inner failure goes back with the rc_error the inner call filled */
}

/* ---- The arena bank. ---- */

/* commit plans every region, refuses before touching anything, allocates, and only then publishes
 * and frees what re-based regions held: a failed allocation leaves every region as it was. */
static int32_t commit(tiny *T, rc_thread t, const rc_region *r, size_t n, rc_ptr *out, rc_served *served, rc_error *err) {
	for (size_t i = 0; i < n; i++) {
		slot *s = find_slot(T, r[i].key);
		out[i] = (rc_ptr){0, 0};
		served[i] = RC_NOT_SERVED;
		if (s && s->kind != RC_SLOT_ARENA)
			return FAIL(err, "invalid-value", "key \"%s\" names a %s slot, not an arena region", r[i].key, kind_name(s->kind));
		if (s && r[i].bytes > s->ptr.bytes && kernel(T))
			return REFUSE(T, "arena", err, "arena region \"%s\" has capacity %lld bytes; %lld bytes exceed it: refused before any allocation or free",
			              r[i].key, (long long)s->ptr.bytes, (long long)r[i].bytes);
	}
	for (size_t i = 0; i < n; i++) {
		slot *s = find_slot(T, r[i].key);
		if (s && r[i].bytes <= s->ptr.bytes) {
			out[i] = s->ptr; /* within capacity: in place, no allocator call */
			served[i] = RC_IN_PLACE;
		} else if (!s && r[i].bytes == 0) {
			served[i] = RC_IN_PLACE;
		} else {
			int32_t st = T->in.malloc_(T->in.self, t, r[i].bytes, &out[i], err);
			if (st != RC_OK) {
				for (size_t j = 0; j < i; j++)
					if (served[j] == RC_ALLOCATED || served[j] == RC_REBASED) {
						rc_error ignored;
						T->in.free_(T->in.self, t, out[j], &ignored);
					}
				for (size_t j = 0; j < n; j++) {
					out[j] = (rc_ptr){0, 0};
					served[j] = RC_NOT_SERVED;
				}
				return st; /* the allocator's error, unchanged */
			}
			served[i] = s ? RC_REBASED : RC_ALLOCATED;
		}
	}
	int32_t status = RC_OK;
	for (size_t i = 0; i < n; i++) {
		slot *s = find_slot(T, r[i].key);
		if (served[i] == RC_REBASED) {
			rc_error e;
			if (T->in.free_(T->in.self, t, s->ptr, &e) != RC_OK && status == RC_OK) {
				status = RC_ERROR;
				*err = e;
			}
		}
		if (served[i] != RC_IN_PLACE)
			set_slot(T, RC_SLOT_ARENA, r[i].key, out[i]);
	}
	return status;
}

static int32_t r_commit_bank(void *self, rc_thread t, const rc_region *regions, size_t n, rc_ptr *out, rc_error *err) {
	tiny *T = self;
	if (T->retired)
		return FAIL(err, "invalid-state", "the runtime is retired");
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(regions[i].key, regions[j].key) == 0)
				return FAIL(err, "invalid-value", "arena region \"%s\" is named twice", regions[i].key);
	rc_served *served = calloc(n ? n : 1, sizeof *served);
	if (!served)
		abort();
	int32_t st = commit(T, t, regions, n, out, served, err);
	free(served);
	return st;
}

/* ---- Slots. ---- */

static int32_t r_provision(void *self, rc_thread t, rc_slot kind, const char *key, rc_ptr cur, int64_t bytes, rc_ptr *out,
                           rc_served *served, rc_error *err) {
	tiny *T = self;
	if (T->retired)
		return FAIL(err, "invalid-state", "the runtime is retired: slot \"%s\" cannot be provisioned", key);
	if (bytes < 0)
		return FAIL(err, "invalid-value", "slot \"%s\": negative request of %lld bytes", key, (long long)bytes);
	slot *s = find_slot(T, key);
	if (s && s->kind != kind)
		return FAIL(err, "invalid-value", "key \"%s\" names a %s slot, not a %s slot", key, kind_name(s->kind), kind_name(kind));
	rc_ptr held = s ? s->ptr : (rc_ptr){0, 0};
	if (held.addr != cur.addr || held.bytes != cur.bytes)
		return FAIL(err, "invalid-value", "slot \"%s\" holds 0x%llx+%lld, not the buffer the caller names", key,
		            (unsigned long long)held.addr, (long long)held.bytes);
	if (kind == RC_SLOT_ARENA) {
		rc_region r = {key, bytes};
		int32_t st = commit(T, t, &r, 1, out, served, err);
		if (st != RC_OK) { /* *out: what the slot holds now (a refusal or a failed commit left it as it was) */
			slot *now = find_slot(T, key);
			*out = now ? now->ptr : (rc_ptr){0, 0};
			*served = RC_NOT_SERVED;
		}
		return st;
	}
	if ((s && bytes <= s->ptr.bytes) || (!s && bytes == 0)) {
		*out = held; /* fits: in place, no allocator call */
		*served = RC_IN_PLACE;
		return RC_OK;
	}
	if (s && kind == RC_SLOT_RETAINED && kernel(T))
		return REFUSE(T, "retained", err, "retained slot \"%s\" holds %lld bytes; growth to %lld would re-base it: refused before anything was freed",
		              key, (long long)s->ptr.bytes, (long long)bytes);
	bool rebase = s != NULL;
	if (rebase) { /* free, then allocate at the new size */
		int32_t st = T->in.free_(T->in.self, t, s->ptr, err);
		if (st != RC_OK)
			return st;
		drop_slot(T, s);
		*out = (rc_ptr){0, 0}; /* from here on the slot is empty until the allocation succeeds */
	}
	int32_t st = T->in.malloc_(T->in.self, t, bytes, out, err);
	if (st != RC_OK) {
		*out = (rc_ptr){0, 0};
		return st;
	}
	set_slot(T, kind, key, *out);
	*served = rebase ? RC_REBASED : RC_ALLOCATED;
	return RC_OK;
}

static int32_t r_release(void *self, rc_thread t, rc_slot kind, const char *key, rc_ptr p, rc_error *err) {
	tiny *T = self;
	slot *s = find_slot(T, key);
	if (!s)
		return RC_OK;
	if (s->kind != kind || s->ptr.addr != p.addr)
		return FAIL(err, "invalid-value", "%s slot \"%s\" does not hold 0x%llx", kind_name(kind), key, (unsigned long long)p.addr);
	if (keeps(T, s, err) != RC_OK)
		return RC_REFUSED;
	int32_t st = T->in.free_(T->in.self, t, s->ptr, err);
	if (st == RC_OK)
		drop_slot(T, s);
	return st;
}

static int32_t r_holds(void *self, const char *key, rc_slot *kind, rc_ptr *p) {
	slot *s = find_slot(self, key);
	if (!s)
		return 0;
	*kind = s->kind;
	*p = s->ptr;
	return 1;
}

/* ---- Pools: first fit, no driver call after the segment. ---- */

static pool *find_pool(tiny *T, const char *name) {
	for (size_t i = 0; i < T->npools; i++)
		if (strcmp(T->pools[i].name, name) == 0)
			return &T->pools[i];
	return NULL;
}

static int32_t r_reserve_pool(void *self, rc_thread t, const char *name, int64_t bytes, uint32_t host, rc_error *err) {
	tiny *T = self;
	if (find_pool(T, name))
		return FAIL(err, "invalid-value", "pool \"%s\" is already reserved", name);
	if (bytes < UNIT)
		return FAIL(err, "invalid-value", "pool \"%s\": %lld bytes hold no block of %d", name, (long long)bytes, UNIT);
	rc_ptr seg;
	int32_t st = host ? T->in.alloc_host(T->in.self, t, bytes, (rc_host_memory)host, &seg, err) : T->in.malloc_(T->in.self, t, bytes, &seg, err);
	if (st != RC_OK)
		return st;
	T->pools = grow_array(T->pools, T->npools, sizeof *T->pools);
	pool *p = &T->pools[T->npools++];
	*p = (pool){malloc(strlen(name) + 1), host, seg, malloc(sizeof(block)), 1};
	if (!p->name || !p->blocks)
		abort();
	strcpy(p->name, name);
	p->blocks[0] = (block){seg.addr, bytes / UNIT * UNIT, 0};
	return RC_OK;
}

static int32_t r_pool_alloc(void *self, rc_thread t, const char *name, int64_t bytes, rc_ptr *out, rc_error *err) {
	(void)t;
	pool *p = find_pool(self, name);
	if (!p)
		return FAIL(err, "invalid-value", "no pool \"%s\"", name);
	if (bytes <= 0)
		return FAIL(err, "invalid-value", "pool \"%s\": cannot allocate %lld bytes", name, (long long)bytes);
	int64_t need = (bytes + UNIT - 1) / UNIT * UNIT;
	for (size_t i = 0; i < p->nblocks; i++) {
		block *b = &p->blocks[i];
		if (b->used || b->size < need)
			continue;
		if (b->size > need) { /* split: the rest stays free right after */
			p->blocks = grow_array(p->blocks, p->nblocks, sizeof *p->blocks);
			b = &p->blocks[i];
			memmove(b + 2, b + 1, (p->nblocks - i - 1) * sizeof *b);
			b[1] = (block){b->addr + (uint64_t)need, b->size - need, 0};
			b->size = need;
			p->nblocks++;
		}
		b->used = 1;
		*out = (rc_ptr){b->addr, bytes};
		return RC_OK;
	}
	return FAIL(err, "out-of-memory", "pool \"%s\" has no free block of %lld bytes", name, (long long)bytes);
}

static int32_t r_pool_free(void *self, rc_thread t, const char *name, rc_ptr ptr, rc_error *err) {
	(void)t;
	pool *p = find_pool(self, name);
	if (!p)
		return FAIL(err, "invalid-value", "no pool \"%s\"", name);
	size_t i = 0;
	while (i < p->nblocks && !(p->blocks[i].used && p->blocks[i].addr == ptr.addr))
		i++;
	if (i == p->nblocks)
		return FAIL(err, "invalid-value", "0x%llx is not a block of pool \"%s\"", (unsigned long long)ptr.addr, name);
	p->blocks[i].used = 0;
	if (i + 1 < p->nblocks && !p->blocks[i + 1].used) { /* merge with a free block after */
		p->blocks[i].size += p->blocks[i + 1].size;
		memmove(&p->blocks[i + 1], &p->blocks[i + 2], (p->nblocks - i - 2) * sizeof *p->blocks);
		p->nblocks--;
	}
	if (i > 0 && !p->blocks[i - 1].used) { /* and with one before */
		p->blocks[i - 1].size += p->blocks[i].size;
		memmove(&p->blocks[i], &p->blocks[i + 1], (p->nblocks - i - 1) * sizeof *p->blocks);
		p->nblocks--;
	}
	return RC_OK;
}

/* ---- Teardown. ---- */

/* retire frees every slot's buffer and every pool's segment, in either mode (a context's exit);
 * the first failure is returned after everything else was freed. */
static int32_t r_retire(void *self, rc_thread t, rc_error *err) {
	tiny *T = self;
	int32_t status = RC_OK;
	rc_error e;
	for (size_t i = 0; i < T->nslots; i++)
		if (T->in.free_(T->in.self, t, T->slots[i].ptr, &e) != RC_OK && status == RC_OK) {
			status = RC_ERROR;
			*err = e;
		}
	for (size_t i = 0; i < T->npools; i++) {
		pool *p = &T->pools[i];
		int32_t st = p->host ? T->in.free_host(T->in.self, t, p->segment, &e) : T->in.free_(T->in.self, t, p->segment, &e);
		if (st != RC_OK && status == RC_OK) {
			status = RC_ERROR;
			*err = e;
		}
	}
	while (T->nslots)
		drop_slot(T, &T->slots[0]);
	for (size_t i = 0; i < T->npools; i++) {
		free(T->pools[i].name);
		free(T->pools[i].blocks);
	}
	T->npools = 0;
	T->retired = true;
	return status;
}

/* refusal_rule names the rule behind the last refusal (version 4): the call that returned
 * RC_REFUSED just before. */
static const char *r_refusal_rule(void *self) { return ((const tiny *)self)->refused_by; }

/* ---- The three entry points. ---- */

EXPORT uint32_t rc_runtime_abi_version(void) { return RC_ABI_VERSION; }

EXPORT void rc_runtime_close(void *self) {
	tiny *T = self;
	for (size_t i = 0; i < T->nslots; i++)
		free(T->slots[i].key);
	for (size_t i = 0; i < T->npools; i++) {
		free(T->pools[i].name);
		free(T->pools[i].blocks);
	}
	free(T->slots);
	free(T->pools);
	free(T);
}

EXPORT int32_t rc_runtime_open(uint32_t abi, rc_mode mode, const rc_device *inner, rc_runtime *out, rc_error *err) {
	if (abi != RC_ABI_VERSION)
		return FAIL(err, "invalid-value", "tiny_runtime implements ABI version %u, not %u", RC_ABI_VERSION, abi);
	tiny *T = calloc(1, sizeof *T);
	if (!T)
		return FAIL(err, "out-of-memory", "no memory for the runtime's state");
	T->mode = mode;
	T->in = *inner; /* a copy; keeping the pointer would do too: *inner lives until rc_runtime_close */
	T->in_create_stream_with_flags = ((const rc_inner *)inner)->create_stream_with_flags;
	memset(out, 0, sizeof *out);
	out->self = T;
	out->device = (rc_device){
		.self = T, .malloc_ = d_malloc, .free_ = d_free, .write = d_write, .read = d_read,
		.alloc_host = d_alloc_host, .free_host = d_free_host, .host_write = d_host_write, .host_read = d_host_read,
		.create_stream = d_create_stream, .destroy_stream = d_destroy_stream,
		.create_event = d_create_event, .destroy_event = d_destroy_event,
		.fill = d_fill, .copy = d_copy, .axpy = d_axpy, .record = d_record, .wait = d_wait,
		.sync_stream = d_sync_stream, .sync_device = d_sync_device, .query_event = d_query_event, .sync_event = d_sync_event,
		.exchange_capture_mode = d_exchange_capture_mode, .begin_capture = d_begin_capture, .end_capture = d_end_capture,
		.capture_info = d_capture_info, .launch = d_launch, .destroy_graph = d_destroy_graph,
	};
	out->provision = r_provision;
	out->release = r_release;
	out->holds = r_holds;
	out->commit_bank = r_commit_bank;
	out->reserve_pool = r_reserve_pool;
	out->pool_alloc = r_pool_alloc;
	out->pool_free = r_pool_free;
	out->retire = r_retire;
	out->create_stream_with_flags = r_create_stream_with_flags; /* non-blocking streams, as PyTorch's */
	out->refusal_rule = r_refusal_rule;
	return RC_OK;
}
