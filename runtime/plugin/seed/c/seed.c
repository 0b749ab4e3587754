/*
 * The seed runtime: replaycheck's built-in guards (runtime/guard) re-stated in C against the plugin
 * ABI (replaycheck/runtime.h), so a team can put a runtime of its own under the probes and compare.
 *
 * Built as is, this is the reference plugin: every rule of runtime/guard, with the same outcomes.
 * The plugin's other files: seed.h, the state; defects.h and defects.c, the defects each
 * RC_SEED_DEFECT_* macro adds for the defective plugins, called here where they strike; hooks.h and
 * hooks.c, the environment's crash and hang test hooks; grow.h and grow.c, the growable arrays and
 * the rest of the bookkeeping's host memory, every size overflow-checked. A plugin is all four .c
 * files compiled together, with the defect's macro, if any.
 *
 * The state is per opened runtime and needs no lock: replaycheck makes one call at a time per
 * opened runtime (see the ABI). Host memory for the plugin's own bookkeeping that cannot be had
 * (or whose size would not fit in a size_t) aborts the process: the harness cannot go on without
 * its bookkeeping.
 */
#include "replaycheck/runtime.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "defects.h"
#include "grow.h"
#include "hooks.h"
#include "seed.h"

#define EXPORT __attribute__((visibility("default")))

static bool guarding(const state *S, bool removed) { return !removed && S->mode == RC_MODE_KERNEL; }

static bool ptr_zero(rc_ptr p) { return p.addr == 0 && p.bytes == 0; }
static bool ptr_eq(rc_ptr a, rc_ptr b) { return a.addr == b.addr && a.bytes == b.bytes; }
static uint64_t ptr_end(rc_ptr p) { return p.addr + (uint64_t)p.bytes; }
static bool overlaps(rc_ptr p, rc_ptr q) { return p.addr < ptr_end(q) && q.addr < ptr_end(p); }
static bool contains(rc_ptr p, rc_ptr q) { return q.addr >= p.addr && ptr_end(q) <= ptr_end(p); }

/* ---------------------------------------------------------------------------------------------- */
/* Errors and words, as runtime/guard says them. */

static void appendf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t cap, const char *fmt, ...) {
	size_t n = strlen(buf);
	if (n + 1 >= cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + n, cap - n, fmt, ap);
	va_end(ap);
}

static int32_t failv(rc_error *err, int32_t status, const char *class_name, const char *fmt, va_list ap) {
	memset(err, 0, sizeof *err);
	snprintf(err->class_name, sizeof err->class_name, "%s", class_name);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	return status;
}

/* refuse is a refusal by the rule named rule (a RULE_ name, which refusal_rule answers): nothing
 * was done. */
static int32_t refuse(state *S, const char *rule, rc_error *err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int32_t refuse(state *S, const char *rule, rc_error *err, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	int32_t st = failv(err, RC_REFUSED, "refused", fmt, ap);
	va_end(ap);
	S->refused_by = rule;
	return st;
}

/* own is the runtime's own failure (misuse of its API, an exhausted pool): class and message. */
static int32_t own(rc_error *err, const char *class_name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int32_t own(rc_error *err, const char *class_name, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	int32_t st = failv(err, RC_ERROR, class_name, fmt, ap);
	va_end(ap);
	return st;
}

typedef struct {
	char s[48];
} word;

static word ptr_str(rc_ptr p) {
	word w;
	snprintf(w.s, sizeof w.s, "0x%llx+%lld", (unsigned long long)p.addr, (long long)p.bytes);
	return w;
}

static word describe_ptr(rc_ptr p) {
	if (ptr_zero(p)) {
		word w = {"nothing"};
		return w;
	}
	return ptr_str(p);
}

static word stream_str(rc_stream s) {
	word w;
	if (s == 0)
		snprintf(w.s, sizeof w.s, "default stream");
	else
		snprintf(w.s, sizeof w.s, "stream#%llu", (unsigned long long)s);
	return w;
}

static word graph_str(rc_graph g) {
	word w;
	snprintf(w.s, sizeof w.s, "graph#%llu", (unsigned long long)g);
	return w;
}

static const char *slot_name(rc_slot s) {
	switch (s) {
	case RC_SLOT_PLAIN: return "plain";
	case RC_SLOT_RETAINED: return "retained";
	case RC_SLOT_ARENA: return "arena";
	}
	return "slot(?)";
}

static const char *mode_name(uint32_t m) {
	switch (m) {
	case RC_CAPTURE_GLOBAL: return "global";
	case RC_CAPTURE_THREAD_LOCAL: return "thread-local";
	case RC_CAPTURE_RELAXED: return "relaxed";
	}
	return "mode(?)";
}

static void capture_str(char *buf, size_t cap, const capture *c) {
	word o = stream_str(c->origin);
	if (c->id == 0)
		appendf(buf, cap, "capture #%llu (no platform capture ID, origin %s, %s mode)", (unsigned long long)c->seq, o.s,
		        mode_name(c->mode));
	else
		appendf(buf, cap, "capture #%llu (platform capture ID %llu, origin %s, %s mode)", (unsigned long long)c->seq,
		        (unsigned long long)c->id, o.s, mode_name(c->mode));
}

/* active_captures names every active capture, in the order they began. */
static void active_captures(const state *S, char *buf, size_t cap) {
	buf[0] = 0;
	for (size_t i = 0; i < S->caps.n; i++) {
		if (i > 0)
			appendf(buf, cap, " and ");
		capture_str(buf, cap, &S->caps.v[i]);
	}
}

static void pool_str(char *buf, size_t cap, const pool *p) {
	word seg = ptr_str(p->segment);
	const char *where = "device";
	if (p->host == RC_HOST_PAGEABLE)
		where = "pageable host";
	else if (p->host == RC_HOST_PINNED)
		where = "pinned host";
	else if (p->host != 0)
		where = "host";
	appendf(buf, cap, "pool \"%s\" (%s segment %s)", p->name, where, seg.s);
}

/* ---------------------------------------------------------------------------------------------- */
/* The residency ledger. */

/* ledger_find returns the index of the first allocation at or above addr; *found says it is at addr. */
static size_t ledger_find(const state *S, uint64_t addr, bool *found) {
	size_t lo = 0, hi = S->live.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (S->live.v[mid].ptr.addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < S->live.n && S->live.v[lo].ptr.addr == addr;
	return lo;
}

static void ledger_add(state *S, rc_ptr p) {
	allocation a = {p, ++S->next_gen};
	bool found;
	size_t i = ledger_find(S, p.addr, &found);
	if (found) {
		/* Two live blocks cannot share an address: the old one was freed behind the runtime's back. */
		S->live.v[i] = a;
		return;
	}
	INSERT(S->live, i, a);
}

void ledger_remove(state *S, uint64_t addr) {
	bool found;
	size_t i = ledger_find(S, addr, &found);
	if (found)
		DELETE(S->live, i);
}

/* containing returns the live allocation that holds all of r, or NULL. */
static const allocation *containing(const state *S, rc_ptr r) {
	bool found;
	size_t i = ledger_find(S, r.addr, &found);
	if (!found) {
		if (i == 0)
			return NULL;
		i--;
	}
	if (i >= S->live.n)
		return NULL;
	const allocation *a = &S->live.v[i];
	if (ptr_end(r) >= r.addr && contains(a->ptr, r))
		return a;
	return NULL;
}

static void range_str(char *buf, size_t cap, range r) {
	word p = ptr_str(r.ptr);
	if (r.gen == 0)
		appendf(buf, cap, "%s (in no allocation made through the guard at capture)", p.s);
	else
		appendf(buf, cap, "%s (allocation generation %llu at capture)", p.s, (unsigned long long)r.gen);
}

/* A capture's ranges are appended as its ops touch them, repeats included, and made unique once
 * when it ends (ranges_unique): a check for a repeat at every op made a capture of n ops O(n^2). */
static void ranges_add(ranges *rs, range r) { PUSH(*rs, r); }

typedef struct {
	range r;
	size_t at;
} placed;

static int cmp_u64(uint64_t a, uint64_t b) { return (a > b) - (a < b); }

/* by_range orders equal ranges (address, size, generation, write) together, each group in the
 * order the ranges were touched. */
static int by_range(const void *x, const void *y) {
	const placed *a = x, *b = y;
	int c = cmp_u64(a->r.ptr.addr, b->r.ptr.addr);
	if (!c)
		c = cmp_u64((uint64_t)a->r.ptr.bytes, (uint64_t)b->r.ptr.bytes);
	if (!c)
		c = cmp_u64(a->r.gen, b->r.gen);
	if (!c)
		c = (a->r.write > b->r.write) - (a->r.write < b->r.write);
	if (!c)
		c = cmp_u64(a->at, b->at);
	return c;
}

/* ranges_unique keeps the first occurrence of each range, in the order they were touched. */
static void ranges_unique(ranges *rs) {
	if (rs->n < 2)
		return;
	placed *p = alloc_array(rs->n, sizeof *p);
	bool *dup = alloc_array(rs->n, sizeof *dup);
	for (size_t i = 0; i < rs->n; i++)
		p[i] = (placed){rs->v[i], i};
	qsort(p, rs->n, sizeof *p, by_range);
	for (size_t i = 1; i < rs->n; i++) {
		range a = p[i - 1].r, b = p[i].r;
		dup[p[i].at] = ptr_eq(a.ptr, b.ptr) && a.gen == b.gen && a.write == b.write;
	}
	size_t n = 0;
	for (size_t i = 0; i < rs->n; i++)
		if (!dup[i])
			rs->v[n++] = rs->v[i];
	rs->n = n;
	free(p);
	free(dup);
}

static void ranges_copy(ranges *dst, const ranges *src) {
	dst->v = NULL;
	dst->n = dst->cap = 0;
	if (src->n == 0)
		return;
	dst->v = grow(NULL, &dst->cap, src->n, sizeof *dst->v);
	memcpy(dst->v, src->v, src->n * sizeof *src->v);
	dst->n = src->n;
}

/* touch records a range a captured op reads or writes, with the generation that holds it now. */
static void touch(state *S, capture *c, int write, rc_ptr p) {
	if (p.bytes <= 0)
		return;
	range r = {p, 0, write};
	const allocation *a = containing(S, p);
	if (a)
		r.gen = a->gen;
	ranges_add(&c->ranges, r);
}

/* ---------------------------------------------------------------------------------------------- */
/* Slots and pools: lookups and descriptions. */

/* The slots' index: a lookup by key costs a hash instead of a search of every slot (a probe with
 * n buffers asks about them n times). A slot changes position only here: appended (slot_set),
 * replaced by the last one (slot_remove), or all of them at once (retire's sort, slots_compact),
 * after which slot_index_rebuild indexes them again. */

static size_t key_hash(const char *k) {
	uint64_t h = 14695981039346656037ULL; /* FNV-1a */
	for (; *k; k++)
		h = (h ^ (unsigned char)*k) * 1099511628211ULL;
	return (size_t)h;
}

/* slot_cell is the index cell holding key, or the empty cell where it would go. */
static size_t *slot_cell(const state *S, const char *key) {
	size_t mask = S->index_cap - 1;
	for (size_t i = key_hash(key) & mask;; i = (i + 1) & mask) {
		size_t at = S->index[i];
		if (at == 0 || strcmp(S->slots.v[at - 1].key, key) == 0)
			return &S->index[i];
	}
}

/* slot_index_rebuild indexes every slot again, in a table at least four times their number, so
 * that a probe run stays short; slot_set rebuilds it once the slots pass a quarter of it. */
static void slot_index_rebuild(state *S) {
	size_t cap = 16, need = S->slots.n;
	for (int i = 0; i < 2; i++)
		need = grow_need(need, need); /* 4 * S->slots.n, checked */
	while (cap < need)
		cap = grow_need(cap, cap);
	free(S->index);
	S->index = alloc_array(cap, sizeof *S->index);
	S->index_cap = cap;
	for (size_t i = 0; i < S->slots.n; i++)
		*slot_cell(S, S->slots.v[i].key) = i + 1;
}

/* slot_index_delete empties cell and moves later cells of its run back into the hole, so that no
 * lookup stops early at it (backward-shift deletion). */
static void slot_index_delete(state *S, size_t *cell) {
	size_t mask = S->index_cap - 1, hole = (size_t)(cell - S->index);
	for (size_t j = (hole + 1) & mask; S->index[j] != 0; j = (j + 1) & mask) {
		size_t home = key_hash(S->slots.v[S->index[j] - 1].key) & mask;
		if (((j - home) & mask) >= ((j - hole) & mask)) {
			S->index[hole] = S->index[j];
			hole = j;
		}
	}
	S->index[hole] = 0;
}

static slot_state *slot_of(state *S, const char *key) {
	if (S->slots.n == 0)
		return NULL;
	size_t at = *slot_cell(S, key);
	return at ? &S->slots.v[at - 1] : NULL;
}

static slot_state *holder_of(state *S, uint64_t addr) {
	for (size_t i = 0; i < S->slots.n; i++)
		if (S->slots.v[i].ptr.addr == addr)
			return &S->slots.v[i];
	return NULL;
}

/* LOG_KEEP is how many slot changes the log keeps: a caller further behind reads every slot. */
#define LOG_KEEP 4096

/* slot_changed logs a change of what the slot named key holds; a full log drops its older half. */
static void slot_changed(state *S, const char *key) {
	if (S->slot_log.n == LOG_KEEP) {
		for (size_t i = 0; i < LOG_KEEP / 2; i++)
			free(S->slot_log.v[i]);
		memmove(S->slot_log.v, S->slot_log.v + LOG_KEEP / 2, LOG_KEEP / 2 * sizeof *S->slot_log.v);
		S->slot_log.n -= LOG_KEEP / 2;
		S->log_base += LOG_KEEP / 2;
	}
	char *k = dupstr(key);
	PUSH(S->slot_log, k);
}

/* slot_take empties slot i where it is: logged (every way a slot is emptied goes through here, so
 * the log sees it) and its key freed. The slot stays in place, keyless, until slots_compact or
 * slot_remove drops it, so that a loop emptying slots in order keeps its order. */
void slot_take(state *S, size_t i) {
	slot_changed(S, S->slots.v[i].key);
	slot_index_delete(S, slot_cell(S, S->slots.v[i].key));
	free(S->slots.v[i].key);
	S->slots.v[i].key = NULL;
}

/* slots_compact drops the slots slot_take emptied, the others in their order. */
void slots_compact(state *S) {
	size_t n = 0;
	for (size_t i = 0; i < S->slots.n; i++)
		if (S->slots.v[i].key)
			S->slots.v[n++] = S->slots.v[i];
	S->slots.n = n;
	slot_index_rebuild(S);
}

/* slot_remove empties slot i, and the last slot takes its place. */
static void slot_remove(state *S, size_t i) {
	slot_take(S, i);
	size_t last = S->slots.n - 1;
	if (i != last) {
		S->slots.v[i] = S->slots.v[last];
		*slot_cell(S, S->slots.v[i].key) = i + 1;
	}
	S->slots.n--;
}

void slot_delete(state *S, const char *key) {
	slot_state *st = slot_of(S, key);
	if (st)
		slot_remove(S, (size_t)(st - S->slots.v));
}

static void slot_set(state *S, rc_slot slot, const char *key, rc_ptr p) {
	slot_state *st = slot_of(S, key);
	if (st) {
		if (st->slot != slot || !ptr_eq(st->ptr, p))
			slot_changed(S, key);
		st->slot = slot;
		st->ptr = p;
		return;
	}
	slot_changed(S, key);
	slot_state n = {slot, dupstr(key), p};
	PUSH(S->slots, n);
	if (4 * S->slots.n > S->index_cap)
		slot_index_rebuild(S);
	else
		*slot_cell(S, key) = S->slots.n;
}

static pool *pool_of(state *S, const char *name) {
	for (size_t i = 0; i < S->pools.n; i++)
		if (strcmp(S->pools.v[i].name, name) == 0)
			return &S->pools.v[i];
	return NULL;
}

static const pool *pool_at(const state *S, rc_ptr r) {
	for (size_t i = 0; i < S->pools.n; i++)
		if (contains(S->pools.v[i].segment, r))
			return &S->pools.v[i];
	return NULL;
}

/* describe_holder names the slot or pool holding a, for refusal details. */
static void describe_holder(state *S, char *buf, size_t cap, const allocation *a) {
	const slot_state *st = holder_of(S, a->ptr.addr);
	if (st) {
		appendf(buf, cap, ", held by %s slot \"%s\"", slot_name(st->slot), st->key);
		return;
	}
	const pool *p = pool_at(S, a->ptr);
	if (p) {
		appendf(buf, cap, ", a block of ");
		pool_str(buf, cap, p);
	}
}

/* ---------------------------------------------------------------------------------------------- */
/* Captures. */

static int32_t inner_info(state *S, rc_thread t, rc_stream s, rc_capture_info *info, rc_error *err) {
	memset(info, 0, sizeof *info);
	return S->in.capture_info(S->in.self, t, s, info, err);
}

static capture *by_seq(state *S, uint64_t seq) {
	for (size_t i = 0; i < S->caps.n; i++)
		if (S->caps.v[i].seq == seq)
			return &S->caps.v[i];
	return NULL;
}

/* captured_from returns the latest active capture begun here on origin s, or NULL. */
static capture *captured_from(state *S, rc_stream s) {
	capture *found = NULL;
	for (size_t i = 0; i < S->caps.n; i++)
		if (S->caps.v[i].origin == s && (!found || S->caps.v[i].seq > found->seq))
			found = &S->caps.v[i];
	return found;
}

/* by_id returns the active capture with platform ID id (non-zero), NULL when none; *why is set when
 * several claim it: the platform's answer then proves membership of neither. */
static capture *by_id(state *S, uint64_t id, char *why, size_t cap) {
	capture *found = NULL;
	for (size_t i = 0; i < S->caps.n; i++) {
		capture *c = &S->caps.v[i];
		if (c->id != id)
			continue;
		if (found) {
			why[0] = 0;
			capture_str(why, cap, found);
			appendf(why, cap, " and ");
			capture_str(why, cap, c);
			appendf(why, cap, " both report platform capture ID %llu", (unsigned long long)id);
			return NULL;
		}
		found = c;
	}
	return found;
}

/* capture_of returns the active capture (begun here) that s is part of, or NULL; *why is non-empty
 * when membership cannot be established. */
static capture *capture_of(state *S, rc_thread t, rc_stream s, char *why, size_t cap) {
	why[0] = 0;
	if (S->caps.n == 0)
		return NULL;
	rc_capture_info info;
	rc_error e;
	if (inner_info(S, t, s, &info, &e) != RC_OK) {
		snprintf(why, cap, "%s", e.message[0] ? e.message : "capture info failed");
		return NULL;
	}
	if (info.status == RC_CAPTURE_NONE || info.id == 0)
		return NULL;
	return by_id(S, info.id, why, cap);
}

static bool still_capturing(state *S, rc_thread t, const capture *c) {
	rc_capture_info info;
	rc_error e;
	if (inner_info(S, t, c->origin, &info, &e) != RC_OK)
		return true; /* keep watching: failing closed is the safe side */
	if (c->id == 0)
		return info.status != RC_CAPTURE_NONE;
	return info.status != RC_CAPTURE_NONE && info.id == c->id;
}

static void forget(state *S, uint64_t seq) {
	for (size_t i = 0; i < S->caps.n; i++)
		if (S->caps.v[i].seq == seq) {
			free(S->caps.v[i].ranges.v);
			DELETE(S->caps, i);
			break;
		}
	for (size_t i = 0; i < S->recorded_in.n;)
		if (S->recorded_in.v[i].seq == seq)
			DELETE(S->recorded_in, i);
		else
			i++;
}

/* watch_allocator refuses an allocator call while a capture begun here is active. */
static int32_t watch_allocator(state *S, rc_error *err) {
	if (!guarding(S, WATCH_OFF) || S->caps.n == 0)
		return RC_OK;
	char act[512];
	active_captures(S, act, sizeof act);
	return refuse(S, RULE_CAPTURE_WATCH, err,
	              "allocator call while %s is active: an allocation made or freed inside a capture leaves the graph holding an address it does not own",
	              act);
}

/* watch_stream sets *out to the active capture s is part of (NULL when none), or refuses when a
 * capture begun here is active and s is not part of it. */
static int32_t watch_stream(state *S, rc_thread t, rc_stream s, capture **out, rc_error *err) {
	char why[512];
	capture *c = capture_of(S, t, s, why, sizeof why);
	*out = c;
	if (c || S->caps.n == 0 || !guarding(S, WATCH_OFF))
		return RC_OK;
	char act[512];
	active_captures(S, act, sizeof act);
	word sw = stream_str(s);
	if (why[0])
		return refuse(S, RULE_CAPTURE_WATCH, err, "%s is active and membership of %s cannot be established: %s", act, sw.s, why);
	return refuse(S, RULE_CAPTURE_WATCH, err, "%s is not part of %s: the work would run once, eagerly, and never replay", sw.s, act);
}

/* ---------------------------------------------------------------------------------------------- */
/* Flights: graphs launched here that may still be running, for replay isolation. */

static void land(state *S, rc_stream s, uint64_t upto) {
	size_t k = 0;
	for (size_t i = 0; i < S->airborne.n; i++) {
		flight *f = &S->airborne.v[i];
		if (f->s != s || f->seq > upto)
			S->airborne.v[k++] = *f;
		else
			free(f->ranges.v);
	}
	S->airborne.n = k;
}

static void land_all(state *S) {
	for (size_t i = 0; i < S->airborne.n; i++)
		free(S->airborne.v[i].ranges.v);
	S->airborne.n = 0;
}

static fence *fence_of(state *S, rc_event e) {
	for (size_t i = 0; i < S->fences.n; i++)
		if (S->fences.v[i].e == e)
			return &S->fences.v[i];
	return NULL;
}

static void fence_delete(state *S, rc_event e) {
	for (size_t i = 0; i < S->fences.n; i++)
		if (S->fences.v[i].e == e) {
			DELETE(S->fences, i);
			return;
		}
}

static void land_event(state *S, rc_event e) {
	fence *f = fence_of(S, e);
	if (f)
		land(S, f->s, f->upto);
}

static uint64_t ordered_upto(const state *S, rc_stream s, rc_stream o) {
	for (size_t i = 0; i < S->ordered.n; i++)
		if (S->ordered.v[i].s == s && S->ordered.v[i].o == o)
			return S->ordered.v[i].upto;
	return 0;
}

static void flights_wait(state *S, rc_stream s, rc_event e) {
	fence *f = fence_of(S, e);
	if (!f || f->s == s)
		return;
	for (size_t i = 0; i < S->ordered.n; i++)
		if (S->ordered.v[i].s == s && S->ordered.v[i].o == f->s) {
			if (f->upto > S->ordered.v[i].upto)
				S->ordered.v[i].upto = f->upto;
			return;
		}
	order o = {s, f->s, f->upto};
	PUSH(S->ordered, o);
}

static void flights_record(state *S, rc_event e, rc_stream s) {
	fence *f = fence_of(S, e);
	if (f) {
		f->s = s;
		f->upto = S->fseq;
		return;
	}
	fence n = {e, s, S->fseq};
	PUSH(S->fences, n);
}

static int32_t isolated(state *S, rc_graph g, rc_stream s, const ranges *rs, rc_error *err) {
	for (size_t i = 0; i < S->airborne.n; i++) {
		const flight *f = &S->airborne.v[i];
		if (f->s == s || f->seq <= ordered_upto(S, s, f->s))
			continue;
		for (size_t x = 0; x < rs->n; x++)
			for (size_t y = 0; y < f->ranges.n; y++) {
				range a = rs->v[x], b = f->ranges.v[y];
				if (!(a.write || b.write) || !overlaps(a.ptr, b.ptr))
					continue;
				uint64_t lo = a.ptr.addr > b.ptr.addr ? a.ptr.addr : b.ptr.addr;
				uint64_t hi = ptr_end(a.ptr) < ptr_end(b.ptr) ? ptr_end(a.ptr) : ptr_end(b.ptr);
				rc_ptr ov = {lo, (int64_t)(hi - lo)};
				word gw = graph_str(g), sw = stream_str(s), fg = graph_str(f->g), fs = stream_str(f->s), ow = ptr_str(ov);
				return refuse(S, RULE_ISOLATION, err,
				              "replay of %s on %s refused: %s, launched on %s, may still be running and nothing orders it before %s; both touch %s (%s by this graph, %s by that one): concurrent replays would race",
				              gw.s, sw.s, fg.s, fs.s, sw.s, ow.s, a.write ? "written" : "read", b.write ? "written" : "read");
			}
	}
	return RC_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Pass-through calls. */

#define S_ ((state *)self)

static int32_t d_write(void *self, rc_thread t, rc_ptr dst, const void *src, rc_error *err) {
	return S_->in.write(S_->in.self, t, dst, src, err);
}
static int32_t d_read(void *self, rc_thread t, void *dst, rc_ptr src, rc_error *err) {
	return S_->in.read(S_->in.self, t, dst, src, err);
}
static int32_t d_host_write(void *self, rc_ptr dst, const void *src, rc_error *err) {
	return S_->in.host_write(S_->in.self, dst, src, err);
}
static int32_t d_host_read(void *self, void *dst, rc_ptr src, rc_error *err) {
	return S_->in.host_read(S_->in.self, dst, src, err);
}
static int32_t d_create_stream(void *self, rc_thread t, rc_stream *out, rc_error *err) {
	return S_->in.create_stream(S_->in.self, t, out, err);
}
/* A non-blocking stream (rc_runtime.create_stream_with_flags) is watched as any other: work on the
 * default stream beside a capture is refused whether the platform would order it or not. */
static int32_t r_create_stream_with_flags(void *self, rc_thread t, uint32_t flags, rc_stream *out, rc_error *err) {
	return S_->in_create_stream_with_flags(S_->in.self, t, flags, out, err);
}
static int32_t d_create_event(void *self, rc_thread t, rc_event *out, rc_error *err) {
	return S_->in.create_event(S_->in.self, t, out, err);
}
static int32_t d_exchange_capture_mode(void *self, rc_thread t, rc_capture_mode mode, rc_capture_mode *old, rc_error *err) {
	return S_->in.exchange_capture_mode(S_->in.self, t, mode, old, err);
}
static int32_t d_capture_info(void *self, rc_thread t, rc_stream s, rc_capture_info *out, rc_error *err) {
	return S_->in.capture_info(S_->in.self, t, s, out, err);
}

/* Synchronisation: what completes tells replay isolation which launches are no longer in flight. */

static int32_t d_sync_device(void *self, rc_thread t, rc_error *err) {
	int32_t st = S_->in.sync_device(S_->in.self, t, err);
	if (st == RC_OK)
		land_all(S_);
	return st;
}
static int32_t d_sync_stream(void *self, rc_thread t, rc_stream s, rc_error *err) {
	int32_t st = S_->in.sync_stream(S_->in.self, t, s, err);
	if (st == RC_OK)
		land(S_, s, S_->fseq);
	return st;
}
static int32_t d_query_event(void *self, rc_thread t, rc_event e, uint32_t *complete, rc_error *err) {
	int32_t st = S_->in.query_event(S_->in.self, t, e, complete, err);
	if (st == RC_OK && *complete)
		land_event(S_, e);
	return st;
}
static int32_t d_sync_event(void *self, rc_thread t, rc_event e, rc_error *err) {
	int32_t st = S_->in.sync_event(S_->in.self, t, e, err);
	if (st == RC_OK)
		land_event(S_, e);
	return st;
}

/* ---------------------------------------------------------------------------------------------- */
/* Streams, events, graphs. */

static int32_t d_destroy_stream(void *self, rc_thread t, rc_stream s, rc_error *err) {
	state *S = self;
	if (guarding(S, WATCH_OFF)) {
		char buf[512] = "", why[512];
		word sw = stream_str(s);
		const capture *c = captured_from(S, s);
		if (c) {
			capture_str(buf, sizeof buf, c);
			return refuse(S, RULE_CAPTURE_WATCH, err, "%s is the origin of %s: destroying it would end the capture behind the guard's back", sw.s, buf);
		}
		c = capture_of(S, t, s, why, sizeof why);
		if (c) {
			capture_str(buf, sizeof buf, c);
			return refuse(S, RULE_CAPTURE_WATCH, err, "%s is part of %s: destroying it would end the capture behind the guard's back", sw.s, buf);
		}
		if (why[0]) {
			active_captures(S, buf, sizeof buf);
			return refuse(S, RULE_CAPTURE_WATCH, err, "%s is active and membership of %s cannot be established: %s", buf, sw.s, why);
		}
	}
	int32_t st = S->in.destroy_stream(S->in.self, t, s, err);
	if (st != RC_OK)
		return st;
	for (size_t i = 0; i < S->caps.n;) {
		capture *c = &S->caps.v[i];
		/* The origin is gone, so the platform cannot be asked about it any more. */
		if (c->origin == s || !still_capturing(S, t, c))
			forget(S, c->seq);
		else
			i++;
	}
	return RC_OK;
}

static int32_t d_destroy_event(void *self, rc_thread t, rc_event e, rc_error *err) {
	state *S = self;
	int32_t st = S->in.destroy_event(S->in.self, t, e, err);
	if (st != RC_OK)
		return st;
	for (size_t i = 0; i < S->recorded_in.n; i++)
		if (S->recorded_in.v[i].e == e) {
			DELETE(S->recorded_in, i);
			break;
		}
	fence_delete(S, e);
	return RC_OK;
}

static graph *graph_of(state *S, rc_graph g) {
	for (size_t i = 0; i < S->graphs.n; i++)
		if (S->graphs.v[i].g == g)
			return &S->graphs.v[i];
	return NULL;
}

static int32_t d_destroy_graph(void *self, rc_thread t, rc_graph g, rc_error *err) {
	state *S = self;
	int32_t st = S->in.destroy_graph(S->in.self, t, g, err);
	if (st != RC_OK)
		return st;
	for (size_t i = 0; i < S->graphs.n; i++)
		if (S->graphs.v[i].g == g) {
			free(S->graphs.v[i].ranges.v);
			DELETE(S->graphs, i);
			break;
		}
	return RC_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Allocator calls. */

static int32_t d_malloc(void *self, rc_thread t, int64_t bytes, rc_ptr *out, rc_error *err) {
	crash_point("malloc");
	state *S = self;
	if (watch_allocator(S, err) != RC_OK)
		return RC_REFUSED;
	int32_t st = S->in.malloc_(S->in.self, t, bytes, out, err);
	if (st == RC_OK)
		ledger_add(S, *out);
	return st;
}

static int32_t d_alloc_host(void *self, rc_thread t, int64_t bytes, rc_host_memory kind, rc_ptr *out, rc_error *err) {
	state *S = self;
	if (watch_allocator(S, err) != RC_OK)
		return RC_REFUSED;
	int32_t st = S->in.alloc_host(S->in.self, t, bytes, kind, out, err);
	if (st == RC_OK)
		ledger_add(S, *out);
	return st;
}

static int32_t d_free_host(void *self, rc_thread t, rc_ptr p, rc_error *err) {
	state *S = self;
	if (watch_allocator(S, err) != RC_OK)
		return RC_REFUSED;
	int32_t st = S->in.free_host(S->in.self, t, p, err);
	if (st == RC_OK)
		ledger_remove(S, p.addr);
	return st;
}

/* refuse_release refuses, in kernel mode, to free what a retained slot or committed arena region
 * holds: a graph may hold its address for the context's whole life. */
static int32_t refuse_release(state *S, const slot_state *st, rc_error *err) {
	word p = ptr_str(st->ptr);
	if (st->slot == RC_SLOT_RETAINED && guarding(S, RETAINED_OFF))
		return refuse(S, RULE_RETAINED, err, "retained slot \"%s\" holds %s for the context's life: kernel mode never frees it", st->key, p.s);
	if (st->slot == RC_SLOT_ARENA && guarding(S, false))
		return refuse(S, RULE_ARENA, err, "arena region \"%s\" is committed at %s: kernel mode never releases it", st->key, p.s);
	return RC_OK;
}

static int32_t d_free(void *self, rc_thread t, rc_ptr p, rc_error *err) {
	crash_point("free");
	state *S = self;
	slot_state *held = holder_of(S, p.addr);
	if (held && refuse_release(S, held, err) != RC_OK)
		return RC_REFUSED;
	if (watch_allocator(S, err) != RC_OK)
		return RC_REFUSED;
	int32_t st = S->in.free_(S->in.self, t, p, err);
	if (st != RC_OK)
		return st;
	ledger_remove(S, p.addr);
	if (held)
		slot_delete(S, held->key);
	return RC_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Capture. */

static int32_t d_begin_capture(void *self, rc_thread t, rc_stream s, rc_capture_mode mode, rc_error *err) {
	crash_point("begin_capture");
	state *S = self;
	int32_t st = S->in.begin_capture(S->in.self, t, s, mode, err);
	if (st != RC_OK)
		return st;
	capture c = {++S->last_seq, 0, s, (uint32_t)mode, {NULL, 0, 0}};
	/* Without the platform's capture ID no stream can be shown to be part of the capture, so the
	 * watch then refuses every stream: it fails closed. Such a capture is known by its origin. */
	rc_capture_info info;
	rc_error e;
	if (inner_info(S, t, s, &info, &e) == RC_OK && info.status != RC_CAPTURE_NONE)
		c.id = info.id;
	PUSH(S->caps, c);
	return RC_OK;
}

/* ending returns the active capture (begun here) that an end_capture on s would end, or NULL. */
static capture *ending(state *S, rc_thread t, rc_stream s) {
	rc_capture_info info;
	rc_error e;
	if (inner_info(S, t, s, &info, &e) == RC_OK && info.status != RC_CAPTURE_NONE && info.id != 0) {
		char why[512];
		capture *c = by_id(S, info.id, why, sizeof why);
		if (c)
			return c;
		/* A capture whose ID could not be learnt at begin, or one of several claiming the ID, is
		 * known by its origin. */
		c = captured_from(S, s);
		if (c && (c->id == 0 || c->id == info.id))
			return c;
		return NULL;
	}
	return captured_from(S, s);
}

static int32_t d_end_capture(void *self, rc_thread t, rc_stream s, rc_graph *out, rc_error *err) {
	crash_point("end_capture");
	state *S = self;
	capture *c = ending(S, t, s);
	uint64_t seq = c ? c->seq : 0;
	int32_t st = S->in.end_capture(S->in.self, t, s, out, err);
	if (!c)
		return st;
	if (st == RC_OK) {
		graph *g = graph_of(S, *out);
		if (g) {
			free(g->ranges.v);
		} else {
			graph n = {*out, {NULL, 0, 0}};
			PUSH(S->graphs, n);
			g = &S->graphs.v[S->graphs.n - 1];
		}
		c = by_seq(S, seq);
		ranges_unique(&c->ranges);
		g->ranges = c->ranges;
		c->ranges.v = NULL;
		c->ranges.n = c->ranges.cap = 0;
	}
	/* A failed end may or may not terminate the capture (platforms differ): ask. */
	if (st == RC_OK || !still_capturing(S, t, by_seq(S, seq)))
		forget(S, seq);
	return st;
}

/* ---------------------------------------------------------------------------------------------- */
/* Stream work. */

static int32_t d_fill(void *self, rc_thread t, rc_stream s, rc_ptr dst, uint8_t value, rc_error *err) {
	crash_point("fill");
	state *S = self;
	capture *c;
	if (watch_stream(S, t, s, &c, err) != RC_OK)
		return RC_REFUSED;
	int32_t st = S->in.fill(S->in.self, t, s, dst, value, err);
	if (st == RC_OK && c)
		touch(S, c, 1, dst);
	return st;
}

static int32_t d_copy(void *self, rc_thread t, rc_stream s, rc_ptr dst, rc_ptr src, rc_error *err) {
	crash_point("copy");
	state *S = self;
	capture *c;
	if (watch_stream(S, t, s, &c, err) != RC_OK)
		return RC_REFUSED;
	int32_t st = S->in.copy(S->in.self, t, s, dst, src, err);
	if (st == RC_OK && c) {
		int64_t n = dst.bytes < src.bytes ? dst.bytes : src.bytes;
		rc_ptr d = {dst.addr, n}, r = {src.addr, n};
		touch(S, c, 1, d);
		touch(S, c, 0, r);
	}
	return st;
}

static int32_t d_axpy(void *self, rc_thread t, rc_stream s, rc_ptr y, rc_ptr x, uint32_t a, rc_error *err) {
	state *S = self;
	capture *c;
	if (watch_stream(S, t, s, &c, err) != RC_OK)
		return RC_REFUSED;
	int32_t st = S->in.axpy(S->in.self, t, s, y, x, a, err);
	if (st == RC_OK && c) {
		touch(S, c, 1, y);
		touch(S, c, 0, x);
	}
	return st;
}

static int32_t d_record(void *self, rc_thread t, rc_event e, rc_stream s, rc_error *err) {
	state *S = self;
	capture *c;
	if (watch_stream(S, t, s, &c, err) != RC_OK)
		return RC_REFUSED;
	int32_t st = S->in.record(S->in.self, t, e, s, err);
	if (st != RC_OK)
		return st;
	recorded *r = NULL;
	size_t ri = 0;
	for (; ri < S->recorded_in.n; ri++)
		if (S->recorded_in.v[ri].e == e) {
			r = &S->recorded_in.v[ri];
			break;
		}
	if (c) {
		if (r) {
			r->seq = c->seq;
		} else {
			recorded n = {e, c->seq};
			PUSH(S->recorded_in, n);
		}
		fence_delete(S, e); /* a record inside a capture is a graph node, not a fence */
	} else {
		if (r)
			DELETE(S->recorded_in, ri);
		flights_record(S, e, s);
	}
	return RC_OK;
}

static int32_t d_wait(void *self, rc_thread t, rc_stream s, rc_event e, rc_error *err) {
	state *S = self;
	bool forks = false;
	for (size_t i = 0; i < S->recorded_in.n; i++)
		if (S->recorded_in.v[i].e == e) {
			forks = by_seq(S, S->recorded_in.v[i].seq) != NULL;
			break;
		}
	if (!forks) {
		capture *c;
		if (watch_stream(S, t, s, &c, err) != RC_OK)
			return RC_REFUSED;
	}
	int32_t st = S->in.wait(S->in.self, t, s, e, err);
	if (st != RC_OK)
		return st;
	flights_wait(S, s, e);
	return RC_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Replay. */

/* stale explains in buf why r may not be replayed, or leaves buf empty when it is still resident. */
static void stale(state *S, range r, char *buf, size_t cap) {
	buf[0] = 0;
	const allocation *a = containing(S, r.ptr);
	if (defect_pointer_equality(a))
		return;
	if (r.gen == 0) {
		appendf(buf, cap, "captured range ");
		range_str(buf, cap, r);
		appendf(buf, cap, ": the guard cannot vouch for it");
		return;
	}
	if (a && a->gen == r.gen)
		return;
	if (a) {
		word p = ptr_str(a->ptr);
		appendf(buf, cap, "captured range ");
		range_str(buf, cap, r);
		appendf(buf, cap, " now lies in allocation generation %llu at %s", (unsigned long long)a->gen, p.s);
		describe_holder(S, buf, cap, a);
		appendf(buf, cap, ": same address, different allocation");
		return;
	}
	size_t now = 0;
	for (size_t i = 0; i < S->live.n; i++)
		if (overlaps(S->live.v[i].ptr, r.ptr))
			now++;
	appendf(buf, cap, "captured range ");
	range_str(buf, cap, r);
	if (now == 0) {
		appendf(buf, cap, " is no longer inside any live allocation (freed");
		const pool *p = pool_at(S, r.ptr);
		if (p) {
			appendf(buf, cap, " back in the free space of ");
			pool_str(buf, cap, p);
		}
		appendf(buf, cap, ")");
		return;
	}
	appendf(buf, cap, " is no longer inside one live allocation; it overlaps ");
	size_t k = 0;
	for (size_t i = 0; i < S->live.n; i++) {
		const allocation *o = &S->live.v[i];
		if (!overlaps(o->ptr, r.ptr))
			continue;
		word p = ptr_str(o->ptr);
		appendf(buf, cap, "%sgeneration %llu at %s", k++ ? ", " : "", (unsigned long long)o->gen, p.s);
		describe_holder(S, buf, cap, o);
	}
}

static int32_t check_residency(state *S, rc_graph g, const graph *known, rc_error *err) {
	word gw = graph_str(g);
	if (!known)
		return refuse(S, RULE_RESIDENCY, err, "%s was not captured through this guard: its captured ranges are unknown", gw.s);
	char first[512] = "", why[512];
	size_t n = 0;
	for (size_t i = 0; i < known->ranges.n; i++) {
		stale(S, known->ranges.v[i], why, sizeof why);
		if (!why[0])
			continue;
		if (n++ == 0)
			memcpy(first, why, sizeof first);
	}
	if (n == 0)
		return RC_OK;
	if (n == 1)
		return refuse(S, RULE_RESIDENCY, err, "replay of %s refused: %s", gw.s, first);
	return refuse(S, RULE_RESIDENCY, err, "replay of %s refused: %s (and %zu more stale range%s)", gw.s, first, n - 1,
		      n == 2 ? "" : "s");
}

static int32_t d_launch(void *self, rc_thread t, rc_graph g, rc_stream s, rc_error *err) {
	crash_point("launch");
	state *S = self;
	capture *c;
	if (watch_stream(S, t, s, &c, err) != RC_OK)
		return RC_REFUSED;
	const graph *known = graph_of(S, g);
	static const ranges none = {NULL, 0, 0};
	const ranges *rs = known ? &known->ranges : &none;
	if (guarding(S, false) && check_residency(S, g, known, err) != RC_OK)
		return RC_REFUSED;
	if (guarding(S, false) && isolated(S, g, s, rs, err) != RC_OK)
		return RC_REFUSED;
	int32_t st = S->in.launch(S->in.self, t, g, s, err);
	if (st != RC_OK)
		return st;
	flight f = {++S->fseq, g, s, {NULL, 0, 0}};
	ranges_copy(&f.ranges, rs);
	PUSH(S->airborne, f);
	if (c) {
		/* A graph launched into a capture replays its ranges as part of the new graph. */
		for (size_t i = 0; i < f.ranges.n; i++)
			ranges_add(&c->ranges, f.ranges.v[i]);
	}
	return RC_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Slots. */

static bool slot_valid(rc_slot s) { return s == RC_SLOT_PLAIN || s == RC_SLOT_RETAINED || s == RC_SLOT_ARENA; }

static int32_t check_request(rc_slot slot, const char *key, int64_t bytes, rc_error *err) {
	if (!slot_valid(slot))
		return own(err, "invalid-value", "unknown slot(%d)", (int)slot);
	if (!key || !key[0])
		return own(err, "invalid-value", "a %s slot needs a key", slot_name(slot));
	if (bytes < 0)
		return own(err, "invalid-value", "%s slot \"%s\": negative request of %lld bytes", slot_name(slot), key, (long long)bytes);
	return RC_OK;
}

/* lookup returns the slot named key after checking that the caller's view of it (kind and buffer)
 * matches the runtime's; a mismatch is the caller's bug, reported without side effect. */
static int32_t lookup(state *S, rc_slot slot, const char *key, rc_ptr cur, slot_state **out, rc_error *err) {
	slot_state *st = slot_of(S, key);
	rc_ptr held = {0, 0};
	*out = NULL;
	if (st) {
		if (st->slot != slot)
			return own(err, "invalid-value", "key \"%s\" names a %s slot, not a %s slot", key, slot_name(st->slot), slot_name(slot));
		held = st->ptr;
	}
	if (!ptr_eq(cur, held)) {
		word h = describe_ptr(held), c = describe_ptr(cur);
		return own(err, "invalid-value", "%s slot \"%s\" holds %s, not %s", slot_name(slot), key, h.s, c.s);
	}
	*out = st;
	return RC_OK;
}

/* commit plans, allocates, then publishes: nothing is visible, and nothing old is freed, until every
 * allocation the bank needs has succeeded, so a failure can be rolled back completely. *published
 * says the regions were published (ptrs and served hold them), also when freeing an old block then
 * failed. */
static int32_t commit(state *S, rc_thread t, const rc_region *regions, size_t n, rc_ptr *ptrs, rc_served *served,
                      bool *published, rc_error *err) {
	*published = false;
	size_t *need = alloc_array(n, sizeof *need);
	size_t nneed = 0;
	int32_t st = RC_OK;
	for (size_t i = 0; i < n; i++) {
		const rc_region *r = &regions[i];
		slot_state *s = slot_of(S, r->key);
		ptrs[i] = (rc_ptr){0, 0};
		served[i] = RC_NOT_SERVED;
		if (s && s->slot != RC_SLOT_ARENA) {
			st = own(err, "invalid-value", "key \"%s\" names a %s slot, not an arena region", r->key, slot_name(s->slot));
			goto out;
		}
		if (s && r->bytes <= s->ptr.bytes) {
			ptrs[i] = s->ptr;
			served[i] = RC_IN_PLACE;
		} else if (!s && r->bytes == 0) {
			served[i] = RC_IN_PLACE;
		} else if (!s) {
			served[i] = RC_ALLOCATED;
			need[nneed++] = i;
		} else if (guarding(S, false)) {
			/* Checked for every region before any allocation or free, so the peers stay as they were. */
			word p = ptr_str(s->ptr);
			char msg[sizeof err->message];
			snprintf(msg, sizeof msg,
			         "arena region \"%s\" is committed at %s with capacity %lld bytes; a request of %lld bytes exceeds it: refused before any allocation or free, no region of the %zu changed",
			         r->key, p.s, (long long)s->ptr.bytes, (long long)r->bytes, n);
			defect_arena_rollback(S, t);
			st = refuse(S, RULE_ARENA, err, "%s", msg);
			goto out;
		} else {
			served[i] = RC_REBASED;
			need[nneed++] = i;
		}
	}
	if (nneed == 0) {
		*published = true;
		goto out;
	}
	if ((st = watch_allocator(S, err)) != RC_OK)
		goto out;
	for (size_t k = 0; k < nneed; k++) {
		size_t i = need[k];
		st = S->in.malloc_(S->in.self, t, regions[i].bytes, &ptrs[i], err);
		if (st != RC_OK) {
			/* Roll back what this commit allocated; the allocator's error is returned as it was. */
			for (size_t j = 0; j < k; j++) {
				rc_error e;
				S->in.free_(S->in.self, t, ptrs[need[j]], &e);
			}
			goto out;
		}
	}
	rc_ptr *old = alloc_array(nneed, sizeof *old);
	size_t nold = 0;
	for (size_t k = 0; k < nneed; k++) {
		size_t i = need[k];
		slot_state *s = slot_of(S, regions[i].key);
		if (s)
			old[nold++] = s->ptr;
		ledger_add(S, ptrs[i]);
		slot_set(S, RC_SLOT_ARENA, regions[i].key, ptrs[i]);
	}
	*published = true;
	for (size_t k = 0; k < nold; k++) {
		rc_error e;
		int32_t fs = S->in.free_(S->in.self, t, old[k], &e);
		if (fs != RC_OK) {
			if (st == RC_OK) {
				st = fs;
				*err = e;
			}
			continue;
		}
		ledger_remove(S, old[k].addr);
	}
	free(old);
out:
	if (!*published)
		for (size_t i = 0; i < n; i++) {
			ptrs[i] = (rc_ptr){0, 0};
			served[i] = RC_NOT_SERVED;
		}
	free(need);
	return st;
}

static int32_t r_provision(void *self, rc_thread t, rc_slot slot, const char *key, rc_ptr cur, int64_t bytes, rc_ptr *out,
                           rc_served *served, rc_error *err) {
	crash_point("provision");
	state *S = self;
	*out = cur;
	*served = RC_NOT_SERVED;
	if (check_request(slot, key, bytes, err) != RC_OK)
		return RC_ERROR;
	if (S->retired)
		return own(err, "invalid-state", "the context is retired: slot \"%s\" cannot be provisioned", key);
	slot_state *st;
	if (lookup(S, slot, key, cur, &st, err) != RC_OK)
		return RC_ERROR;
	if (slot == RC_SLOT_ARENA) {
		rc_region r = {key, bytes};
		rc_ptr p;
		rc_served sv;
		bool published;
		int32_t s = commit(S, t, &r, 1, &p, &sv, &published, err);
		if (published) {
			/* Published; a failure, if any, is about freeing the re-based block. */
			*out = p;
			*served = sv;
		}
		return s;
	}
	if (st && bytes <= st->ptr.bytes) {
		*out = st->ptr;
		*served = RC_IN_PLACE;
		return RC_OK;
	}
	if (!st && bytes == 0) {
		*out = (rc_ptr){0, 0};
		*served = RC_IN_PLACE;
		return RC_OK;
	}
	if (st && slot == RC_SLOT_RETAINED && guarding(S, RETAINED_OFF)) {
		word p = ptr_str(st->ptr);
		char msg[sizeof err->message];
		snprintf(msg, sizeof msg,
		         "retained slot \"%s\" holds %s (capacity %lld bytes); growth to %lld bytes would re-base it: refused before anything was freed",
		         key, p.s, (long long)st->ptr.bytes, (long long)bytes);
		int32_t fs = defect_retained_free(S, t, st, key, err);
		if (fs != RC_OK)
			return fs;
		/* Refused ahead of the free: the buffer stays where a captured graph may expect it. */
		return refuse(S, RULE_RETAINED, err, "%s", msg);
	}
	if (watch_allocator(S, err) != RC_OK)
		return RC_REFUSED;
	if (!st) {
		rc_ptr p;
		int32_t s = S->in.malloc_(S->in.self, t, bytes, &p, err);
		if (s != RC_OK) {
			*out = (rc_ptr){0, 0};
			return s;
		}
		ledger_add(S, p);
		slot_set(S, slot, key, p);
		*out = p;
		*served = RC_ALLOCATED;
		return RC_OK;
	}
	rc_ptr old = st->ptr;
	int32_t s = S->in.free_(S->in.self, t, old, err);
	if (s != RC_OK)
		return s;
	ledger_remove(S, old.addr);
	slot_delete(S, key);
	rc_ptr p;
	s = S->in.malloc_(S->in.self, t, bytes, &p, err);
	if (s != RC_OK) {
		/* Free + malloc cannot be undone: the slot is empty now. */
		*out = (rc_ptr){0, 0};
		return s;
	}
	ledger_add(S, p);
	slot_set(S, slot, key, p);
	*out = p;
	*served = RC_REBASED;
	return RC_OK;
}

static int32_t r_release(void *self, rc_thread t, rc_slot slot, const char *key, rc_ptr p, rc_error *err) {
	state *S = self;
	if (check_request(slot, key, 0, err) != RC_OK)
		return RC_ERROR;
	slot_state *st;
	if (lookup(S, slot, key, p, &st, err) != RC_OK)
		return RC_ERROR;
	if (!st)
		return RC_OK;
	if (refuse_release(S, st, err) != RC_OK)
		return RC_REFUSED;
	if (watch_allocator(S, err) != RC_OK)
		return RC_REFUSED;
	int32_t s = S->in.free_(S->in.self, t, st->ptr, err);
	if (s != RC_OK)
		return s;
	ledger_remove(S, st->ptr.addr);
	slot_delete(S, key);
	return RC_OK;
}

static int32_t r_holds(void *self, const char *key, rc_slot *slot, rc_ptr *p) {
	const slot_state *st = key ? slot_of(self, key) : NULL;
	if (!st)
		return 0;
	*slot = st->slot;
	*p = st->ptr;
	return 1;
}

static int64_t r_slots_changed(void *self, uint64_t since, const char **keys, size_t cap, uint64_t *now) {
	const state *S = self;
	*now = S->log_base + S->slot_log.n;
	if (since < S->log_base || since > *now)
		return -1;
	size_t n = (size_t)(*now - since);
	for (size_t i = 0; i < n && i < cap; i++)
		keys[i] = S->slot_log.v[since - S->log_base + i];
	return (int64_t)n;
}

static int32_t r_commit_bank(void *self, rc_thread t, const rc_region *regions, size_t n, rc_ptr *out, rc_error *err) {
	state *S = self;
	for (size_t i = 0; i < n; i++) {
		out[i] = (rc_ptr){0, 0};
		if (check_request(RC_SLOT_ARENA, regions[i].key, regions[i].bytes, err) != RC_OK)
			return RC_ERROR;
		for (size_t j = 0; j < i; j++)
			if (strcmp(regions[j].key, regions[i].key) == 0)
				return own(err, "invalid-value", "arena region \"%s\" is named twice", regions[i].key);
	}
	if (S->retired)
		return own(err, "invalid-state", "the context is retired: the bank cannot be committed");
	rc_served *served = alloc_array(n, sizeof *served);
	bool published;
	int32_t st = commit(S, t, regions, n, out, served, &published, err);
	free(served);
	return st;
}

/* ---------------------------------------------------------------------------------------------- */
/* Pools: one segment per named pool, blocks served by best fit with no device call. */

static bool pool_alloc_block(pool *p, int64_t bytes, rc_ptr *out) {
	int64_t need = (bytes + GRANULARITY - 1) / GRANULARITY * GRANULARITY;
	size_t best = SIZE_MAX;
	for (size_t i = 0; i < p->blocks.n; i++) {
		const block *b = &p->blocks.v[i];
		if (ptr_zero(b->used) && b->size >= need && (best == SIZE_MAX || b->size < p->blocks.v[best].size))
			best = i;
	}
	if (best == SIZE_MAX)
		return false;
	block b = p->blocks.v[best];
	*out = (rc_ptr){b.addr, bytes};
	p->blocks.v[best] = (block){b.addr, need, *out};
	if (b.size > need) {
		block rest = {b.addr + (uint64_t)need, b.size - need, {0, 0}};
		INSERT(p->blocks, best + 1, rest);
	}
	return true;
}

static bool pool_free_block(pool *p, rc_ptr ptr) {
	size_t i = 0;
	while (i < p->blocks.n && p->blocks.v[i].addr != ptr.addr)
		i++;
	if (i == p->blocks.n || !ptr_eq(p->blocks.v[i].used, ptr))
		return false;
	p->blocks.v[i].used = (rc_ptr){0, 0};
	if (i + 1 < p->blocks.n && ptr_zero(p->blocks.v[i + 1].used)) {
		p->blocks.v[i].size += p->blocks.v[i + 1].size;
		DELETE(p->blocks, i + 1);
	}
	if (i > 0 && ptr_zero(p->blocks.v[i - 1].used)) {
		p->blocks.v[i - 1].size += p->blocks.v[i].size;
		DELETE(p->blocks, i);
	}
	return true;
}

static int64_t largest_free(const pool *p) {
	int64_t n = 0;
	for (size_t i = 0; i < p->blocks.n; i++)
		if (ptr_zero(p->blocks.v[i].used) && p->blocks.v[i].size > n)
			n = p->blocks.v[i].size;
	return n;
}

static int32_t r_reserve_pool(void *self, rc_thread t, const char *name, int64_t bytes, uint32_t host, rc_error *err) {
	state *S = self;
	if (!name || !name[0])
		return own(err, "invalid-value", "a pool needs a name");
	const pool *existing = pool_of(S, name);
	if (existing) {
		char buf[256] = "";
		pool_str(buf, sizeof buf, existing);
		return own(err, "invalid-value", "%s is already reserved", buf);
	}
	if (bytes < GRANULARITY)
		return own(err, "invalid-value", "pool \"%s\": a segment of %lld bytes holds no block of %d", name, (long long)bytes, GRANULARITY);
	if (S->retired)
		return own(err, "invalid-state", "the context is retired: pool \"%s\" cannot be reserved", name);
	if (watch_allocator(S, err) != RC_OK)
		return RC_REFUSED;
	rc_ptr seg;
	int32_t st = host == 0 ? S->in.malloc_(S->in.self, t, bytes, &seg, err)
	                       : S->in.alloc_host(S->in.self, t, bytes, (rc_host_memory)host, &seg, err);
	if (st != RC_OK)
		return st;
	pool p = {dupstr(name), host, seg, {NULL, 0, 0}};
	block whole = {seg.addr, bytes / GRANULARITY * GRANULARITY, {0, 0}};
	PUSH(p.blocks, whole);
	PUSH(S->pools, p);
	return RC_OK;
}

static int32_t r_pool_alloc(void *self, rc_thread t, const char *name, int64_t bytes, rc_ptr *out, rc_error *err) {
	state *S = self;
	(void)t;
	*out = (rc_ptr){0, 0};
	pool *p = name ? pool_of(S, name) : NULL;
	if (!p)
		return own(err, "invalid-value", "no pool \"%s\" is reserved", name ? name : "");
	char buf[256] = "";
	pool_str(buf, sizeof buf, p);
	if (bytes <= 0)
		return own(err, "invalid-value", "%s: cannot allocate %lld bytes", buf, (long long)bytes);
	if (watch_allocator(S, err) != RC_OK)
		return RC_REFUSED;
	if (!pool_alloc_block(p, bytes, out))
		return own(err, "out-of-memory",
		           "%s has no free block of %lld bytes (the largest free block has %lld): size the pool for the blocks live at once", buf,
		           (long long)bytes, (long long)largest_free(p));
	ledger_add(S, *out);
	return RC_OK;
}

static int32_t r_pool_free(void *self, rc_thread t, const char *name, rc_ptr ptr, rc_error *err) {
	state *S = self;
	(void)t;
	pool *p = name ? pool_of(S, name) : NULL;
	if (!p)
		return own(err, "invalid-value", "no pool \"%s\" is reserved", name ? name : "");
	if (watch_allocator(S, err) != RC_OK)
		return RC_REFUSED;
	if (!pool_free_block(p, ptr)) {
		char buf[256] = "";
		pool_str(buf, sizeof buf, p);
		word w = ptr_str(ptr);
		return own(err, "invalid-value", "%s is not a block %s has handed out", w.s, buf);
	}
	ledger_remove(S, ptr.addr);
	return RC_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Teardown. */

static int by_key(const void *a, const void *b) {
	return strcmp(((const slot_state *)a)->key, ((const slot_state *)b)->key);
}

static int by_name(const void *a, const void *b) { return strcmp(((const pool *)a)->name, ((const pool *)b)->name); }

static void pool_dispose(pool *p) {
	free(p->name);
	free(p->blocks.v);
}

/* retire frees every buffer a slot holds, in either mode, retained and arena included, and every
 * pool's segment, as a context's exit does; afterwards provision and commit_bank fail. The first
 * failure is returned, after everything else was freed. */
static int32_t r_retire(void *self, rc_thread t, rc_error *err) {
	state *S = self;
	if (S->retired)
		return RC_OK;
	if (watch_allocator(S, err) != RC_OK)
		return RC_REFUSED;
	int32_t status = RC_OK;
	rc_error e;
	if (S->slots.n > 1)
		qsort(S->slots.v, S->slots.n, sizeof *S->slots.v, by_key);
	slot_index_rebuild(S); /* the sort moved every slot */
	for (size_t i = 0; i < S->slots.n; i++) {
		slot_state *st = &S->slots.v[i];
		int32_t s = S->in.free_(S->in.self, t, st->ptr, &e);
		if (s != RC_OK) {
			if (status == RC_OK) {
				status = s;
				*err = e;
			}
			continue;
		}
		ledger_remove(S, st->ptr.addr);
		slot_take(S, i);
	}
	slots_compact(S);
	if (S->pools.n > 1)
		qsort(S->pools.v, S->pools.n, sizeof *S->pools.v, by_name);
	for (size_t i = 0; i < S->pools.n;) {
		pool *p = &S->pools.v[i];
		int32_t s = p->host == 0 ? S->in.free_(S->in.self, t, p->segment, &e) : S->in.free_host(S->in.self, t, p->segment, &e);
		if (s != RC_OK) {
			if (status == RC_OK) {
				status = s;
				*err = e;
			}
			i++;
			continue;
		}
		for (size_t b = 0; b < p->blocks.n; b++)
			if (!ptr_zero(p->blocks.v[b].used))
				ledger_remove(S, p->blocks.v[b].addr);
		pool_dispose(p);
		DELETE(S->pools, i);
	}
	S->retired = true;
	return status;
}

/* ---------------------------------------------------------------------------------------------- */
/* Entry points. */

/* r_refusal_rule names the rule behind the last refusal: the guard's name whose rule it is. */
static const char *r_refusal_rule(void *self) { return ((const state *)self)->refused_by; }

EXPORT uint32_t rc_runtime_abi_version(void) { return RC_ABI_VERSION; }

EXPORT void rc_runtime_close(void *self) {
	state *S = self;
	if (!S)
		return;
	for (size_t i = 0; i < S->slots.n; i++)
		free(S->slots.v[i].key);
	free(S->slots.v);
	free(S->index);
	for (size_t i = 0; i < S->slot_log.n; i++)
		free(S->slot_log.v[i]);
	free(S->slot_log.v);
	free(S->live.v);
	for (size_t i = 0; i < S->caps.n; i++)
		free(S->caps.v[i].ranges.v);
	free(S->caps.v);
	free(S->recorded_in.v);
	for (size_t i = 0; i < S->graphs.n; i++)
		free(S->graphs.v[i].ranges.v);
	free(S->graphs.v);
	for (size_t i = 0; i < S->pools.n; i++)
		pool_dispose(&S->pools.v[i]);
	free(S->pools.v);
	land_all(S);
	free(S->airborne.v);
	free(S->fences.v);
	free(S->ordered.v);
	free(S);
}

EXPORT int32_t rc_runtime_open(uint32_t abi_version, rc_mode mode, const rc_device *inner, rc_runtime *out, rc_error *err) {
	if (abi_version != RC_ABI_VERSION)
		return own(err, "invalid-value", "the plugin implements runtime ABI version %u, not %u", RC_ABI_VERSION, abi_version);
	if (mode != RC_MODE_PROGRAM && mode != RC_MODE_KERNEL)
		return own(err, "invalid-value", "cannot latch mode %d: a context latches program or kernel, and there is no unlatch", (int)mode);
	if (!inner || !out)
		return own(err, "invalid-value", "no inner device");
	state *S = calloc(1, sizeof *S);
	if (!S)
		return own(err, "out-of-memory", "no host memory for the runtime's state");
	S->mode = mode;
	S->in = *inner;
	S->in_create_stream_with_flags = ((const rc_inner *)inner)->create_stream_with_flags;

	memset(out, 0, sizeof *out);
	out->self = S;
	rc_device *d = &out->device;
	d->self = S;
	d->malloc_ = d_malloc;
	d->free_ = d_free;
	d->write = d_write;
	d->read = d_read;
	d->alloc_host = d_alloc_host;
	d->free_host = d_free_host;
	d->host_write = d_host_write;
	d->host_read = d_host_read;
	d->create_stream = d_create_stream;
	d->destroy_stream = d_destroy_stream;
	d->create_event = d_create_event;
	d->destroy_event = d_destroy_event;
	d->fill = d_fill;
	d->copy = d_copy;
	d->axpy = d_axpy;
	d->record = d_record;
	d->wait = d_wait;
	d->sync_stream = d_sync_stream;
	d->sync_device = d_sync_device;
	d->query_event = d_query_event;
	d->sync_event = d_sync_event;
	d->exchange_capture_mode = d_exchange_capture_mode;
	d->begin_capture = d_begin_capture;
	d->end_capture = d_end_capture;
	d->capture_info = d_capture_info;
	d->launch = d_launch;
	d->destroy_graph = d_destroy_graph;

	out->provision = r_provision;
	out->release = r_release;
	out->holds = r_holds;
	out->commit_bank = r_commit_bank;
	out->reserve_pool = r_reserve_pool;
	out->pool_alloc = r_pool_alloc;
	out->pool_free = r_pool_free;
	out->retire = r_retire;
	out->slots_changed = r_slots_changed;
	out->create_stream_with_flags = r_create_stream_with_flags;
	out->refusal_rule = r_refusal_rule;
	return RC_OK;
}
