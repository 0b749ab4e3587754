/*
 * passthrough: the runtime plugin the loader's own tests use. It forwards every device call to the
 * inner device, in both modes, and serves the allocator calls (slots, arena bank, pools, retire)
 * as replaycheck's built-in guards do in program mode: the same inner calls in the same order, so
 * a run through it is the built-in program-mode run, call for call. It never refuses anything of
 * its own accord. An inner error is returned as the inner device wrote it.
 *
 * Knobs, read by rc_runtime_open from the environment:
 *   RC_TEST_REFUSE=call:message        the call (a table field name without its trailing
 *                                      underscore: malloc, sync_stream, provision, ...) is refused
 *                                      with message, before anything is done
 *   RC_TEST_FAIL=call:class:message    the call fails with RC_ERROR, its own class and message,
 *                                      code 0, before anything is done; "open" fails
 *                                      rc_runtime_open itself
 *   RC_TEST_LOG=path                   every inner call forwarded is appended to path as
 *                                      "inner=<call> t=<0|1|-> tid=<gettid>"
 *                                      (both messages: \xHH is the byte HH, for messages that are
 *                                      not text)
 *   RC_TEST_HANG=call                  the call never returns, making no device call (a deadlocked
 *                                      runtime); holds and slots_changed too
 *   RC_TEST_EXIT=call[:how]            the call calls exit(0), as a runtime that gives up on the
 *                                      process would; holds and slots_changed too. how: quick
 *                                      (quick_exit(0)), _exit (_exit(0)), thread (exit(0) from a
 *                                      thread the call starts and waits for)
 *   RC_TEST_EXIT_BETWEEN=1             rc_runtime_close starts a thread that calls exit(0) after
 *                                      it returned: between replaycheck's calls
 *   RC_TEST_SLOT_LOG=1                 slots_changed is filled: a log that never reaches back
 *                                      (-1, *now 0), so replaycheck asks holds about every slot
 *   RC_TEST_QUERY_CALLS=call           holds or slots_changed makes an inner malloc_ of 64 bytes
 *                                      every time it is called, and keeps it (a query that changes
 *                                      the device)
 *   RC_TEST_BAD_THREAD=call            malloc, launch or provision forwards its inner call for
 *                                      thread 7, not the t it was called for
 *   RC_TEST_PROVISION_LIE=how          a provision that succeeds answers against the contract:
 *                                      short (*out holds half the bytes asked), empty (*out
 *                                      {0,0}), served (*served 99), in-place (a growth of a held
 *                                      slot answered RC_IN_PLACE with *out = cur, nothing done),
 *                                      wrap (*out's address 16 bytes below the end of the address
 *                                      space)
 *   RC_TEST_BANK_LIE=how               a commit_bank that succeeds answers its last region against
 *                                      the contract: unwritten (out[n-1] left as replaycheck set
 *                                      it), empty ({0,0}), short (half the bytes asked), null
 *                                      (address 0), wrap (as provision's), duplicate (out[0]),
 *                                      overlap (one byte into out[0])
 *   RC_TEST_ALLOC_LIE=call:how         a malloc, alloc_host or pool_alloc (call) that succeeds
 *                                      answers *out against the contract, as RC_TEST_BANK_LIE
 *                                      says of a region: unwritten, empty, short, null or wrap
 *   RC_TEST_HANDLE_LIE=call:how        a create_stream, create_stream_with_flags, create_event or
 *                                      end_capture (call) that succeeds answers *out against the
 *                                      contract: unwritten (as replaycheck set it), default (0),
 *                                      again (the first handle that call answered), invented
 *                                      (4242, which the inner device never made)
 *   RC_TEST_BLOCKING_ONLY=1            create_stream_with_flags is left NULL (a version 3 runtime
 *                                      that creates blocking streams only)
 *   RC_TEST_STREAM_FLAGS=n             create_stream_with_flags forwards the flags n (decimal), not
 *                                      the ones it was called with
 *   RC_TEST_CREATE_STREAM_FLAGS=n      create_stream makes its stream with the inner
 *                                      create_stream_with_flags and the flags n (decimal)
 *   RC_TEST_INNER_THREADS=n            rc_runtime_open starts n threads that each create and
 *                                      destroy 500 inner streams and events at once, and joins
 *                                      them: inner calls from several threads of the plugin's own
 *                                      during one call of replaycheck's
 *   RC_TEST_STRAY=path[:n]             rc_runtime_open starts a thread that waits for the file
 *                                      path to exist, then makes n (default 1) inner
 *                                      create_stream calls for RC_THREAD_MAIN, 50 us apart, and
 *                                      writes the last one's status to path.done: inner calls
 *                                      between replaycheck's calls, when the test says
 *   RC_TEST_FORWARD_FROM_THREAD=1      fill, copy and launch are forwarded from a thread the plugin
 *                                      starts for the call and joins, as a runtime with a driver
 *                                      thread of its own would: the call waits for the inner one
 *   RC_TEST_RULE=name                  refusal_rule is filled, even by a plugin built for version 3
 *                                      or older (which a replaycheck must not read), and names name
 *                                      for every refusal; "-" answers NULL; \xHH is the byte HH. With
 *                                      RC_TEST_QUERY_CALLS=refusal_rule, hang or exit, as holds
 * Compile-time variants:
 *   -DRC_TEST_ABI=N                    rc_runtime_abi_version() returns N, and rc_runtime_open
 *                                      accepts only N (1: a plugin built against the version 1
 *                                      header, which ends rc_runtime before slots_changed; 2: the
 *                                      version 2 header, which ends it before
 *                                      create_stream_with_flags and reads inner as an rc_device)
 *   -DRC_TEST_NO_CLOSE                 rc_runtime_close is not exported
 *   -DRC_TEST_NULL_ENTRIES             rc_runtime_open leaves device.launch and retire NULL
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "replaycheck/runtime.h"

#ifndef RC_TEST_ABI
#define RC_TEST_ABI RC_ABI_VERSION
#endif

#define GRANULE 512

typedef struct {
	char *key;
	rc_slot slot;
	rc_ptr ptr;
} slot_t;

typedef struct {
	uint64_t addr;
	int64_t size;
	rc_ptr used; /* zero: free */
} block_t;

typedef struct {
	char *name;
	uint32_t host;
	rc_ptr seg;
	block_t *blocks;
	size_t n;
} pool_t;

typedef struct {
	rc_device in;
	/* The inner rc_inner's entry, version 3; NULL before. */
	int32_t (*in_create_stream_with_flags)(void *self, rc_thread t, uint32_t flags, rc_stream *out, rc_error *err);
	rc_mode mode;
	slot_t *slots;
	size_t nslots;
	pool_t *pools;
	size_t npools;
	int retired;
	char refuse[64], refuse_msg[256];
	char fail[64], fail_class[32], fail_msg[256];
	char log[1024];
	int from_thread;
	char hang[64];
	char exit_in[64];
	char query_calls[64];
	char rule[128];
	char bad_thread[64];
	char lie[64];
	char bank_lie[64];
	char alloc_lie[64], alloc_lie_how[64];
	long stream_flags;        /* RC_TEST_STREAM_FLAGS, -1 when unset */
	long create_stream_flags; /* RC_TEST_CREATE_STREAM_FLAGS, -1 when unset */
	char handle_lie[64], handle_lie_how[64];
	int handle_seen;    /* RC_TEST_HANDLE_LIE=...:again: the call answered before */
	uint64_t handle_first;
} pt;

static int zero(rc_ptr p) { return p.addr == 0 && p.bytes == 0; }
static int same(rc_ptr a, rc_ptr b) { return a.addr == b.addr && a.bytes == b.bytes; }

static void seterr(rc_error *e, const char *cls, const char *fmt, ...) {
	memset(e, 0, sizeof *e);
	snprintf(e->class_name, sizeof e->class_name, "%s", cls);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof e->message, fmt, ap);
	va_end(ap);
}

/* exit_now ends the process, from the thread it runs on. */
static void *exit_now(void *arg) {
	(void)arg;
	exit(0);
}

/* knob applies the refuse and fail knobs to call; non-zero: return it. */
static int32_t knob(pt *p, const char *call, rc_error *e) {
	if (p->refuse[0] && strcmp(p->refuse, call) == 0) {
		seterr(e, "refused", "%s", p->refuse_msg);
		return RC_REFUSED;
	}
	if (p->fail[0] && strcmp(p->fail, call) == 0) {
		seterr(e, p->fail_class, "%s", p->fail_msg);
		return RC_ERROR;
	}
	if (p->hang[0] && strcmp(p->hang, call) == 0)
		for (;;)
			pause();
	if (p->exit_in[0] && strcmp(p->exit_in, call) == 0) exit(0);
	if (p->exit_in[0] && strncmp(p->exit_in, call, strlen(call)) == 0) {
		const char *how = p->exit_in + strlen(call);
		if (strcmp(how, ":quick") == 0) quick_exit(0);
		if (strcmp(how, ":_exit") == 0) _exit(0);
		pthread_t th;
		if (strcmp(how, ":thread") == 0 && pthread_create(&th, NULL, exit_now, NULL) == 0) pthread_join(th, NULL);
	}
	return RC_OK;
}

/* query applies the hang, exit and query-calls knobs to holds or slots_changed. */
static void query(pt *p, const char *call) {
	rc_error e;
	(void)knob(p, call, &e);
	if (p->query_calls[0] && strcmp(p->query_calls, call) == 0) {
		rc_ptr kept;
		p->in.malloc_(p->in.self, RC_THREAD_MAIN, 64, &kept, &e);
	}
}

/* thr is the thread call forwards its inner call for: t, or 7 under RC_TEST_BAD_THREAD. */
static rc_thread thr(pt *p, const char *call, rc_thread t) {
	return p->bad_thread[0] && strcmp(p->bad_thread, call) == 0 ? (rc_thread)7 : t;
}

/* unescape decodes \xHH in s, in place. */
static void unescape(char *s) {
	char *w = s;
	for (const char *r = s; *r;) {
		unsigned v;
		if (r[0] == '\\' && r[1] == 'x' && isxdigit((unsigned char)r[2]) && isxdigit((unsigned char)r[3]) &&
		    sscanf(r + 2, "%2x", &v) == 1 && v != 0) {
			*w++ = (char)v;
			r += 4;
			continue;
		}
		*w++ = *r++;
	}
	*w = 0;
}

static void logcall(pt *p, const char *call, int t) {
	if (!p->log[0]) return;
	FILE *f = fopen(p->log, "a");
	if (!f) return;
	if (t < 0)
		fprintf(f, "inner=%s t=- tid=%ld\n", call, (long)syscall(SYS_gettid));
	else
		fprintf(f, "inner=%s t=%d tid=%ld\n", call, t, (long)syscall(SYS_gettid));
	fclose(f);
}

#define P ((pt *)self)
#define KNOB(name)                                  \
	do {                                        \
		int32_t k_ = knob(P, name, err);    \
		if (k_ != RC_OK) return k_;         \
	} while (0)
/* FWD logs and makes one inner call. */
#define FWD(name, t, field, ...) (logcall(P, name, (int)(t)), P->in.field(P->in.self, __VA_ARGS__))

/* --- Slots. --- */

static slot_t *find_slot(pt *p, const char *key) {
	for (size_t i = 0; i < p->nslots; i++)
		if (strcmp(p->slots[i].key, key) == 0) return &p->slots[i];
	return NULL;
}

static slot_t *holder_of(pt *p, uint64_t addr) {
	for (size_t i = 0; i < p->nslots; i++)
		if (p->slots[i].ptr.addr == addr) return &p->slots[i];
	return NULL;
}

static void put_slot(pt *p, const char *key, rc_slot slot, rc_ptr ptr) {
	slot_t *s = find_slot(p, key);
	if (s) {
		s->slot = slot;
		s->ptr = ptr;
		return;
	}
	p->slots = realloc(p->slots, (p->nslots + 1) * sizeof *p->slots);
	p->slots[p->nslots++] = (slot_t){strdup(key), slot, ptr};
}

static void drop_slot(pt *p, slot_t *s) {
	size_t i = (size_t)(s - p->slots);
	free(s->key);
	p->slots[i] = p->slots[--p->nslots];
}

static int32_t check_request(const char *op, rc_slot slot, const char *key, int64_t bytes, rc_error *err) {
	if ((unsigned)slot > RC_SLOT_ARENA) {
		seterr(err, "invalid-value", "%s: unknown slot %u", op, (unsigned)slot);
		return RC_ERROR;
	}
	if (!key || !key[0]) {
		seterr(err, "invalid-value", "%s: a slot needs a key", op);
		return RC_ERROR;
	}
	if (bytes < 0) {
		seterr(err, "invalid-value", "%s: slot %s: negative request of %lld bytes", op, key, (long long)bytes);
		return RC_ERROR;
	}
	return RC_OK;
}

/* lookup checks the caller's view of the slot named key against what it holds. */
static int32_t lookup(pt *p, const char *op, rc_slot slot, const char *key, rc_ptr cur, slot_t **st, rc_error *err) {
	*st = find_slot(p, key);
	rc_ptr held = {0, 0};
	if (*st) {
		if ((*st)->slot != slot) {
			seterr(err, "invalid-value", "%s: key %s names a slot of kind %d, not %d", op, key, (int)(*st)->slot, (int)slot);
			return RC_ERROR;
		}
		held = (*st)->ptr;
	}
	if (!same(cur, held)) {
		seterr(err, "invalid-value", "%s: slot %s holds %#llx+%lld, not %#llx+%lld", op, key, (unsigned long long)held.addr,
		       (long long)held.bytes, (unsigned long long)cur.addr, (long long)cur.bytes);
		return RC_ERROR;
	}
	return RC_OK;
}

/* commit plans, allocates, publishes, then frees the re-based blocks: the built-in bank's order. */
static int32_t commit(void *self, rc_thread t, const rc_region *regions, size_t n, rc_ptr *out, rc_served *served, rc_error *err) {
	size_t *need = calloc(n ? n : 1, sizeof *need), nn = 0;
	for (size_t i = 0; i < n; i++) {
		slot_t *st = find_slot(P, regions[i].key);
		out[i] = (rc_ptr){0, 0};
		if (st && st->slot != RC_SLOT_ARENA) {
			seterr(err, "invalid-value", "key %s names a non-arena slot", regions[i].key);
			free(need);
			return RC_ERROR;
		}
		if (st && regions[i].bytes <= st->ptr.bytes) {
			out[i] = st->ptr;
			served[i] = RC_IN_PLACE;
		} else if (!st && regions[i].bytes == 0) {
			served[i] = RC_IN_PLACE;
		} else {
			served[i] = st ? RC_REBASED : RC_ALLOCATED;
			need[nn++] = i;
		}
	}
	for (size_t k = 0; k < nn; k++) {
		size_t i = need[k];
		int32_t rc = FWD("malloc", t, malloc_, t, regions[i].bytes, &out[i], err);
		if (rc != RC_OK) {
			rc_error cause = *err, scratch;
			for (size_t j = 0; j < k; j++) FWD("free", t, free_, t, out[need[j]], &scratch);
			*err = cause;
			free(need);
			return rc;
		}
	}
	rc_ptr *old = calloc(nn ? nn : 1, sizeof *old);
	size_t nold = 0;
	for (size_t k = 0; k < nn; k++) {
		size_t i = need[k];
		slot_t *st = find_slot(P, regions[i].key);
		if (st) old[nold++] = st->ptr;
		put_slot(P, regions[i].key, RC_SLOT_ARENA, out[i]);
	}
	int32_t result = RC_OK;
	for (size_t k = 0; k < nold; k++) {
		rc_error e;
		if (FWD("free", t, free_, t, old[k], &e) != RC_OK && result == RC_OK) {
			*err = e;
			result = RC_ERROR;
		}
	}
	free(old);
	free(need);
	return result;
}

static int32_t provide(void *self, rc_thread t, rc_slot slot, const char *key, rc_ptr cur, int64_t bytes, slot_t *st,
                       rc_ptr *out, rc_served *served, rc_error *err);

static int32_t pt_provision(void *self, rc_thread t, rc_slot slot, const char *key, rc_ptr cur, int64_t bytes, rc_ptr *out,
                            rc_served *served, rc_error *err) {
	KNOB("provision");
	*served = RC_NOT_SERVED;
	*out = cur;
	if (check_request("provision", slot, key, bytes, err)) return RC_ERROR;
	if (P->retired) {
		seterr(err, "invalid-state", "the context is retired: slot %s cannot be provisioned", key);
		return RC_ERROR;
	}
	slot_t *st;
	if (lookup(P, "provision", slot, key, cur, &st, err)) return RC_ERROR;
	if (strcmp(P->lie, "in-place") == 0 && st && bytes > st->ptr.bytes) {
		*served = RC_IN_PLACE; /* *out = cur: the growth was never made */
		return RC_OK;
	}
	int32_t rc = provide(self, t, slot, key, cur, bytes, st, out, served, err);
	if (rc == RC_OK && strcmp(P->lie, "short") == 0) out->bytes /= 2;
	if (rc == RC_OK && strcmp(P->lie, "empty") == 0) *out = (rc_ptr){0, 0};
	if (rc == RC_OK && strcmp(P->lie, "served") == 0) *served = (rc_served)99;
	if (rc == RC_OK && strcmp(P->lie, "wrap") == 0) out->addr = UINT64_MAX - 15;
	return rc;
}

/* provide serves a provision the checks passed. */
static int32_t provide(void *self, rc_thread t, rc_slot slot, const char *key, rc_ptr cur, int64_t bytes, slot_t *st,
                       rc_ptr *out, rc_served *served, rc_error *err) {
	if (slot == RC_SLOT_ARENA) {
		rc_region r = {key, bytes};
		rc_ptr p = cur;
		rc_served s = RC_NOT_SERVED;
		int32_t rc = commit(self, t, &r, 1, &p, &s, err);
		if (rc == RC_OK) {
			*out = p;
			*served = s;
			return RC_OK;
		}
		/* What the slot holds now: the new block when the bank was published before the failure
		 * (freeing the old one failed), cur when it was rolled back. */
		st = find_slot(P, key);
		*out = st ? st->ptr : (rc_ptr){0, 0};
		return rc;
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
	rc_ptr p;
	if (!st) {
		if (FWD("malloc", t, malloc_, thr(P, "provision", t), bytes, &p, err) != RC_OK) {
			*out = (rc_ptr){0, 0};
			return RC_ERROR;
		}
		put_slot(P, key, slot, p);
		*out = p;
		*served = RC_ALLOCATED;
		return RC_OK;
	}
	if (FWD("free", t, free_, t, st->ptr, err) != RC_OK) return RC_ERROR;
	drop_slot(P, st);
	if (FWD("malloc", t, malloc_, t, bytes, &p, err) != RC_OK) {
		*out = (rc_ptr){0, 0};
		return RC_ERROR;
	}
	put_slot(P, key, slot, p);
	*out = p;
	*served = RC_REBASED;
	return RC_OK;
}

static int32_t pt_release(void *self, rc_thread t, rc_slot slot, const char *key, rc_ptr p, rc_error *err) {
	KNOB("release");
	if (check_request("release", slot, key, 0, err)) return RC_ERROR;
	slot_t *st;
	if (lookup(P, "release", slot, key, p, &st, err)) return RC_ERROR;
	if (!st) return RC_OK;
	if (FWD("free", t, free_, t, st->ptr, err) != RC_OK) return RC_ERROR;
	drop_slot(P, st);
	return RC_OK;
}

static int32_t pt_holds(void *self, const char *key, rc_slot *slot, rc_ptr *p) {
	query(P, "holds");
	slot_t *st = find_slot(P, key);
	if (!st) return 0;
	*slot = st->slot;
	*p = st->ptr;
	return 1;
}

/* lie makes *p, a buffer an allocator call answered RC_OK with, answer against the contract as how
 * says (RC_TEST_BANK_LIE, RC_TEST_ALLOC_LIE): before is what *p held before the call, first another
 * buffer of the same answer. What was allocated stays allocated. */
static void lie(const char *how, rc_ptr *p, rc_ptr before, rc_ptr first) {
	if (strcmp(how, "unwritten") == 0) *p = before;
	if (strcmp(how, "empty") == 0) *p = (rc_ptr){0, 0};
	if (strcmp(how, "short") == 0) p->bytes /= 2;
	if (strcmp(how, "null") == 0) p->addr = 0;
	if (strcmp(how, "wrap") == 0) p->addr = UINT64_MAX - 15;
	if (strcmp(how, "duplicate") == 0) *p = first;
	if (strcmp(how, "overlap") == 0) p->addr = first.addr + 1;
}

/* alloc_lie applies RC_TEST_ALLOC_LIE to call's answer *out (rc its result, before what *out held
 * before the call), and returns rc. */
static int32_t alloc_lie(pt *p, const char *call, int32_t rc, rc_ptr *out, rc_ptr before) {
	if (rc == RC_OK && strcmp(p->alloc_lie, call) == 0) lie(p->alloc_lie_how, out, before, *out);
	return rc;
}

static int32_t pt_commit_bank(void *self, rc_thread t, const rc_region *regions, size_t n, rc_ptr *out, rc_error *err) {
	KNOB("commit_bank");
	for (size_t i = 0; i < n; i++) {
		if (check_request("commit_bank", RC_SLOT_ARENA, regions[i].key, regions[i].bytes, err)) return RC_ERROR;
		for (size_t j = 0; j < i; j++)
			if (strcmp(regions[i].key, regions[j].key) == 0) {
				seterr(err, "invalid-value", "arena region %s is named twice", regions[i].key);
				return RC_ERROR;
			}
	}
	if (P->retired) {
		seterr(err, "invalid-state", "the context is retired: the bank cannot be committed");
		return RC_ERROR;
	}
	rc_served *served = calloc(n ? n : 1, sizeof *served);
	rc_ptr before = n ? out[n - 1] : (rc_ptr){0, 0};
	int32_t rc = commit(self, t, regions, n, out, served, err);
	free(served);
	if (rc == RC_OK && n > 0) lie(P->bank_lie, &out[n - 1], before, out[0]);
	return rc;
}

/* handle_lie applies RC_TEST_HANDLE_LIE to call's answer *out (rc its result, before what *out held
 * before the call), and returns rc. What was made stays made. */
static int32_t handle_lie(pt *p, const char *call, int32_t rc, uint64_t *out, uint64_t before) {
	if (rc != RC_OK || strcmp(p->handle_lie, call) != 0) return rc;
	const char *how = p->handle_lie_how;
	if (strcmp(how, "unwritten") == 0) *out = before;
	if (strcmp(how, "default") == 0) *out = 0;
	if (strcmp(how, "invented") == 0) *out = 4242;
	if (strcmp(how, "again") == 0) {
		if (p->handle_seen) *out = p->handle_first;
		p->handle_first = *out;
		p->handle_seen = 1;
	}
	return rc;
}

/* --- Pools: best fit over GRANULE-rounded blocks, merged on free. --- */

static pool_t *find_pool(pt *p, const char *name) {
	for (size_t i = 0; i < p->npools; i++)
		if (strcmp(p->pools[i].name, name) == 0) return &p->pools[i];
	return NULL;
}

static int32_t pt_reserve_pool(void *self, rc_thread t, const char *name, int64_t bytes, uint32_t host, rc_error *err) {
	KNOB("reserve_pool");
	if (!name || !name[0]) {
		seterr(err, "invalid-value", "a pool needs a name");
		return RC_ERROR;
	}
	if (find_pool(P, name)) {
		seterr(err, "invalid-value", "pool %s is already reserved", name);
		return RC_ERROR;
	}
	if (bytes < GRANULE) {
		seterr(err, "invalid-value", "pool %s: a segment of %lld bytes holds no block", name, (long long)bytes);
		return RC_ERROR;
	}
	if (P->retired) {
		seterr(err, "invalid-state", "the context is retired: pool %s cannot be reserved", name);
		return RC_ERROR;
	}
	rc_ptr seg;
	int32_t rc = host == 0 ? FWD("malloc", t, malloc_, t, bytes, &seg, err)
	                       : FWD("alloc_host", t, alloc_host, t, bytes, (rc_host_memory)host, &seg, err);
	if (rc != RC_OK) return rc;
	P->pools = realloc(P->pools, (P->npools + 1) * sizeof *P->pools);
	pool_t *pl = &P->pools[P->npools++];
	pl->name = strdup(name);
	pl->host = host;
	pl->seg = seg;
	pl->blocks = malloc(sizeof *pl->blocks);
	pl->blocks[0] = (block_t){seg.addr, seg.bytes / GRANULE * GRANULE, {0, 0}};
	pl->n = 1;
	return RC_OK;
}

static int32_t pt_pool_alloc(void *self, rc_thread t, const char *name, int64_t bytes, rc_ptr *out, rc_error *err) {
	(void)t;
	KNOB("pool_alloc");
	pool_t *pl = find_pool(P, name);
	if (!pl) {
		seterr(err, "invalid-value", "no pool %s is reserved", name);
		return RC_ERROR;
	}
	if (bytes <= 0) {
		seterr(err, "invalid-value", "pool %s: cannot allocate %lld bytes", name, (long long)bytes);
		return RC_ERROR;
	}
	int64_t need = (bytes + GRANULE - 1) / GRANULE * GRANULE;
	size_t best = pl->n;
	for (size_t i = 0; i < pl->n; i++)
		if (zero(pl->blocks[i].used) && pl->blocks[i].size >= need && (best == pl->n || pl->blocks[i].size < pl->blocks[best].size))
			best = i;
	if (best == pl->n) {
		seterr(err, "out-of-memory", "pool %s has no free block of %lld bytes", name, (long long)bytes);
		return RC_ERROR;
	}
	block_t b = pl->blocks[best];
	rc_ptr before = *out;
	*out = (rc_ptr){b.addr, bytes};
	pl->blocks[best] = (block_t){b.addr, need, *out};
	if (b.size > need) {
		pl->blocks = realloc(pl->blocks, (pl->n + 1) * sizeof *pl->blocks);
		memmove(&pl->blocks[best + 2], &pl->blocks[best + 1], (pl->n - best - 1) * sizeof *pl->blocks);
		pl->blocks[best + 1] = (block_t){b.addr + (uint64_t)need, b.size - need, {0, 0}};
		pl->n++;
	}
	return alloc_lie(P, "pool_alloc", RC_OK, out, before);
}

static void remove_block(pool_t *pl, size_t i) {
	memmove(&pl->blocks[i], &pl->blocks[i + 1], (pl->n - i - 1) * sizeof *pl->blocks);
	pl->n--;
}

static int32_t pt_pool_free(void *self, rc_thread t, const char *name, rc_ptr p, rc_error *err) {
	(void)t;
	KNOB("pool_free");
	pool_t *pl = find_pool(P, name);
	if (!pl) {
		seterr(err, "invalid-value", "no pool %s is reserved", name);
		return RC_ERROR;
	}
	size_t i = 0;
	while (i < pl->n && pl->blocks[i].addr != p.addr) i++;
	if (i == pl->n || !same(pl->blocks[i].used, p)) {
		seterr(err, "invalid-value", "%#llx+%lld is not a block pool %s has handed out", (unsigned long long)p.addr, (long long)p.bytes, name);
		return RC_ERROR;
	}
	pl->blocks[i].used = (rc_ptr){0, 0};
	if (i + 1 < pl->n && zero(pl->blocks[i + 1].used)) {
		pl->blocks[i].size += pl->blocks[i + 1].size;
		remove_block(pl, i + 1);
	}
	if (i > 0 && zero(pl->blocks[i - 1].used)) {
		pl->blocks[i - 1].size += pl->blocks[i].size;
		remove_block(pl, i);
	}
	return RC_OK;
}

/* --- Retire: slots in key order, then pools in name order. --- */

static int by_key(const void *a, const void *b) { return strcmp(((const slot_t *)a)->key, ((const slot_t *)b)->key); }
static int by_name(const void *a, const void *b) { return strcmp(((const pool_t *)a)->name, ((const pool_t *)b)->name); }

static int32_t pt_retire(void *self, rc_thread t, rc_error *err) {
	KNOB("retire");
	if (P->retired) return RC_OK;
	int32_t result = RC_OK;
	rc_error e;
	qsort(P->slots, P->nslots, sizeof *P->slots, by_key);
	size_t kept = 0;
	for (size_t i = 0; i < P->nslots; i++) {
		if (FWD("free", t, free_, t, P->slots[i].ptr, &e) != RC_OK) {
			if (result == RC_OK) *err = e, result = RC_ERROR;
			P->slots[kept++] = P->slots[i];
			continue;
		}
		free(P->slots[i].key);
	}
	P->nslots = kept;
	qsort(P->pools, P->npools, sizeof *P->pools, by_name);
	kept = 0;
	for (size_t i = 0; i < P->npools; i++) {
		pool_t *pl = &P->pools[i];
		int32_t rc = pl->host == 0 ? FWD("free", t, free_, t, pl->seg, &e) : FWD("free_host", t, free_host, t, pl->seg, &e);
		if (rc != RC_OK) {
			if (result == RC_OK) *err = e, result = RC_ERROR;
			P->pools[kept++] = *pl;
			continue;
		}
		free(pl->name);
		free(pl->blocks);
	}
	P->npools = kept;
	P->retired = 1;
	return result;
}

/* --- The device: every call forwarded. --- */

static int32_t pt_malloc(void *self, rc_thread t, int64_t bytes, rc_ptr *out, rc_error *err) {
	KNOB("malloc");
	rc_ptr before = *out;
	return alloc_lie(P, "malloc", FWD("malloc", t, malloc_, thr(P, "malloc", t), bytes, out, err), out, before);
}
static int32_t pt_free(void *self, rc_thread t, rc_ptr p, rc_error *err) {
	KNOB("free");
	slot_t *st = holder_of(P, p.addr);
	int32_t rc = FWD("free", t, free_, t, p, err);
	if (rc == RC_OK && st) drop_slot(P, st);
	return rc;
}
static int32_t pt_write(void *self, rc_thread t, rc_ptr dst, const void *src, rc_error *err) {
	KNOB("write");
	return FWD("write", t, write, t, dst, src, err);
}
static int32_t pt_read(void *self, rc_thread t, void *dst, rc_ptr src, rc_error *err) {
	KNOB("read");
	return FWD("read", t, read, t, dst, src, err);
}
static int32_t pt_alloc_host(void *self, rc_thread t, int64_t bytes, rc_host_memory kind, rc_ptr *out, rc_error *err) {
	KNOB("alloc_host");
	rc_ptr before = *out;
	return alloc_lie(P, "alloc_host", FWD("alloc_host", t, alloc_host, t, bytes, kind, out, err), out, before);
}
static int32_t pt_free_host(void *self, rc_thread t, rc_ptr p, rc_error *err) {
	KNOB("free_host");
	return FWD("free_host", t, free_host, t, p, err);
}
static int32_t pt_host_write(void *self, rc_ptr dst, const void *src, rc_error *err) {
	KNOB("host_write");
	return FWD("host_write", -1, host_write, dst, src, err);
}
static int32_t pt_host_read(void *self, void *dst, rc_ptr src, rc_error *err) {
	KNOB("host_read");
	return FWD("host_read", -1, host_read, dst, src, err);
}
static int32_t pt_create_stream(void *self, rc_thread t, rc_stream *out, rc_error *err) {
	KNOB("create_stream");
	uint64_t before = *out;
	if (P->create_stream_flags >= 0 && P->in_create_stream_with_flags) {
		logcall(P, "create_stream_with_flags", (int)t);
		return handle_lie(P, "create_stream",
		                  P->in_create_stream_with_flags(P->in.self, t, (uint32_t)P->create_stream_flags, out, err), out, before);
	}
	return handle_lie(P, "create_stream", FWD("create_stream", t, create_stream, t, out, err), out, before);
}
static int32_t pt_create_stream_with_flags(void *self, rc_thread t, uint32_t flags, rc_stream *out, rc_error *err) {
	KNOB("create_stream_with_flags");
	logcall(P, "create_stream_with_flags", (int)t);
	if (P->stream_flags >= 0) flags = (uint32_t)P->stream_flags;
	uint64_t before = *out;
	return handle_lie(P, "create_stream_with_flags", P->in_create_stream_with_flags(P->in.self, t, flags, out, err), out, before);
}
static int32_t pt_destroy_stream(void *self, rc_thread t, rc_stream s, rc_error *err) {
	KNOB("destroy_stream");
	return FWD("destroy_stream", t, destroy_stream, t, s, err);
}
static int32_t pt_create_event(void *self, rc_thread t, rc_event *out, rc_error *err) {
	KNOB("create_event");
	uint64_t before = *out;
	return handle_lie(P, "create_event", FWD("create_event", t, create_event, t, out, err), out, before);
}
static int32_t pt_destroy_event(void *self, rc_thread t, rc_event e, rc_error *err) {
	KNOB("destroy_event");
	return FWD("destroy_event", t, destroy_event, t, e, err);
}
/* A forwarded call made from a thread of the plugin's own (RC_TEST_FORWARD_FROM_THREAD). */
typedef struct {
	pt *p;
	enum { J_FILL, J_COPY, J_LAUNCH } op;
	rc_thread t;
	rc_stream s;
	rc_ptr dst, src;
	uint8_t v;
	rc_graph g;
	rc_error *err;
	int32_t status;
} job_t;

static void *job_run(void *arg) {
	job_t *j = arg;
	void *self = j->p;
	switch (j->op) {
	case J_FILL: j->status = FWD("fill", j->t, fill, j->t, j->s, j->dst, j->v, j->err); break;
	case J_COPY: j->status = FWD("copy", j->t, copy, j->t, j->s, j->dst, j->src, j->err); break;
	case J_LAUNCH: j->status = FWD("launch", j->t, launch, j->t, j->g, j->s, j->err); break;
	}
	return NULL;
}

/* elsewhere runs j on a new thread and waits for it. */
static int32_t elsewhere(job_t j) {
	pthread_t th;
	if (pthread_create(&th, NULL, job_run, &j) != 0) {
		seterr(j.err, "internal", "pthread_create failed");
		return RC_ERROR;
	}
	pthread_join(th, NULL);
	return j.status;
}

static int32_t pt_fill(void *self, rc_thread t, rc_stream s, rc_ptr dst, uint8_t v, rc_error *err) {
	KNOB("fill");
	if (P->from_thread) return elsewhere((job_t){.p = P, .op = J_FILL, .t = t, .s = s, .dst = dst, .v = v, .err = err});
	return FWD("fill", t, fill, t, s, dst, v, err);
}
static int32_t pt_copy(void *self, rc_thread t, rc_stream s, rc_ptr dst, rc_ptr src, rc_error *err) {
	KNOB("copy");
	if (P->from_thread) return elsewhere((job_t){.p = P, .op = J_COPY, .t = t, .s = s, .dst = dst, .src = src, .err = err});
	return FWD("copy", t, copy, t, s, dst, src, err);
}
static int32_t pt_axpy(void *self, rc_thread t, rc_stream s, rc_ptr y, rc_ptr x, uint32_t a, rc_error *err) {
	KNOB("axpy");
	return FWD("axpy", t, axpy, t, s, y, x, a, err);
}
static int32_t pt_record(void *self, rc_thread t, rc_event e, rc_stream s, rc_error *err) {
	KNOB("record");
	return FWD("record", t, record, t, e, s, err);
}
static int32_t pt_wait(void *self, rc_thread t, rc_stream s, rc_event e, rc_error *err) {
	KNOB("wait");
	return FWD("wait", t, wait, t, s, e, err);
}
static int32_t pt_sync_stream(void *self, rc_thread t, rc_stream s, rc_error *err) {
	KNOB("sync_stream");
	return FWD("sync_stream", t, sync_stream, t, s, err);
}
static int32_t pt_sync_device(void *self, rc_thread t, rc_error *err) {
	KNOB("sync_device");
	return FWD("sync_device", t, sync_device, t, err);
}
static int32_t pt_query_event(void *self, rc_thread t, rc_event e, uint32_t *complete, rc_error *err) {
	KNOB("query_event");
	return FWD("query_event", t, query_event, t, e, complete, err);
}
static int32_t pt_sync_event(void *self, rc_thread t, rc_event e, rc_error *err) {
	KNOB("sync_event");
	return FWD("sync_event", t, sync_event, t, e, err);
}
static int32_t pt_exchange_capture_mode(void *self, rc_thread t, rc_capture_mode m, rc_capture_mode *old, rc_error *err) {
	KNOB("exchange_capture_mode");
	return FWD("exchange_capture_mode", t, exchange_capture_mode, t, m, old, err);
}
static int32_t pt_begin_capture(void *self, rc_thread t, rc_stream s, rc_capture_mode m, rc_error *err) {
	KNOB("begin_capture");
	return FWD("begin_capture", t, begin_capture, t, s, m, err);
}
static int32_t pt_end_capture(void *self, rc_thread t, rc_stream s, rc_graph *out, rc_error *err) {
	KNOB("end_capture");
	uint64_t before = *out;
	return handle_lie(P, "end_capture", FWD("end_capture", t, end_capture, t, s, out, err), out, before);
}
static int32_t pt_capture_info(void *self, rc_thread t, rc_stream s, rc_capture_info *out, rc_error *err) {
	KNOB("capture_info");
	return FWD("capture_info", t, capture_info, t, s, out, err);
}
static int32_t pt_launch(void *self, rc_thread t, rc_graph g, rc_stream s, rc_error *err) {
	KNOB("launch");
	if (P->from_thread) return elsewhere((job_t){.p = P, .op = J_LAUNCH, .t = t, .g = g, .s = s, .err = err});
	return FWD("launch", t, launch, thr(P, "launch", t), g, s, err);
}
static int32_t pt_destroy_graph(void *self, rc_thread t, rc_graph g, rc_error *err) {
	KNOB("destroy_graph");
	return FWD("destroy_graph", t, destroy_graph, t, g, err);
}

static const char *pt_refusal_rule(void *self) {
	query(P, "refusal_rule");
	return strcmp(P->rule, "-") == 0 ? NULL : P->rule;
}

static int64_t pt_slots_changed(void *self, uint64_t since, const char **keys, size_t cap, uint64_t *now) {
	(void)since, (void)keys, (void)cap;
	query(P, "slots_changed");
	*now = 0;
	return -1;
}

/* --- Entry points. --- */

uint32_t rc_runtime_abi_version(void) { return RC_TEST_ABI; }

/* split copies "a:b" of s into a and b (b the rest); 0 when there is no colon. */
static int split(const char *s, char *a, size_t na, char *b, size_t nb) {
	const char *c = strchr(s, ':');
	if (!c) return 0;
	snprintf(a, na, "%.*s", (int)(c - s), s);
	snprintf(b, nb, "%s", c + 1);
	return 1;
}

/* churn creates and destroys inner streams and events for thread (t) arg, 500 of each. */
typedef struct {
	pt *p;
	rc_thread t;
} churn_arg;

static void *churn(void *arg) {
	churn_arg *a = arg;
	for (int i = 0; i < 500; i++) {
		rc_stream s;
		rc_event ev;
		rc_error e;
		if (a->p->in.create_stream(a->p->in.self, a->t, &s, &e) == RC_OK) a->p->in.destroy_stream(a->p->in.self, a->t, s, &e);
		if (a->p->in.create_event(a->p->in.self, a->t, &ev, &e) == RC_OK) a->p->in.destroy_event(a->p->in.self, a->t, ev, &e);
	}
	return NULL;
}

/* inner_threads runs churn on n threads at once (at most 16) and waits for them. */
static void inner_threads(pt *p, int n) {
	pthread_t th[16];
	churn_arg args[16];
	if (n > 16) n = 16;
	int started[16] = {0};
	for (int i = 0; i < n; i++) {
		args[i] = (churn_arg){p, (rc_thread)(i % 2)};
		started[i] = pthread_create(&th[i], NULL, churn, &args[i]) == 0;
	}
	for (int i = 0; i < n; i++)
		if (started[i]) pthread_join(th[i], NULL);
}

/* stray_arg is a stray thread's own copy of what it needs: it may outlive the runtime. */
typedef struct {
	rc_device in;
	char path[512];
	int n;
} stray_arg;

/* stray waits for its file, makes its inner calls and reports the last one's status in <file>.done. */
static void *stray(void *arg) {
	stray_arg *a = arg;
	while (access(a->path, F_OK) != 0) usleep(1000);
	int32_t status = RC_OK;
	for (int i = 0; i < a->n; i++) {
		rc_stream s;
		rc_error e;
		if (i > 0) usleep(50);
		status = a->in.create_stream(a->in.self, RC_THREAD_MAIN, &s, &e);
	}
	/* Written whole under another name, then renamed: a reader never sees it half written. */
	char done[600], part[610];
	snprintf(done, sizeof done, "%s.done", a->path);
	snprintf(part, sizeof part, "%s.part", done);
	FILE *f = fopen(part, "w");
	if (f) {
		fprintf(f, "%d\n", (int)status);
		fclose(f);
		rename(part, done);
	}
	free(a);
	return NULL;
}

int32_t rc_runtime_open(uint32_t abi_version, rc_mode mode, const rc_device *inner, rc_runtime *out, rc_error *err) {
	if (abi_version != RC_TEST_ABI) {
		seterr(err, "invalid-value", "passthrough speaks ABI %u, asked for %u", (unsigned)RC_TEST_ABI, (unsigned)abi_version);
		return RC_ERROR;
	}
	pt *p = calloc(1, sizeof *p);
	p->in = *inner;
#if RC_TEST_ABI >= 3
	p->in_create_stream_with_flags = ((const rc_inner *)inner)->create_stream_with_flags;
#endif
	p->mode = mode;
	const char *v;
	if ((v = getenv("RC_TEST_REFUSE")) && *v) split(v, p->refuse, sizeof p->refuse, p->refuse_msg, sizeof p->refuse_msg);
	if ((v = getenv("RC_TEST_FAIL")) && *v) {
		char rest[512];
		if (split(v, p->fail, sizeof p->fail, rest, sizeof rest))
			split(rest, p->fail_class, sizeof p->fail_class, p->fail_msg, sizeof p->fail_msg);
	}
	unescape(p->refuse_msg);
	unescape(p->fail_msg);
	if ((v = getenv("RC_TEST_EXIT")) && *v) snprintf(p->exit_in, sizeof p->exit_in, "%s", v);
	if ((v = getenv("RC_TEST_QUERY_CALLS")) && *v) snprintf(p->query_calls, sizeof p->query_calls, "%s", v);
	int ruled = (v = getenv("RC_TEST_RULE")) != NULL;
	if (ruled) snprintf(p->rule, sizeof p->rule, "%s", v);
	unescape(p->rule);
	if ((v = getenv("RC_TEST_BAD_THREAD")) && *v) snprintf(p->bad_thread, sizeof p->bad_thread, "%s", v);
	if ((v = getenv("RC_TEST_PROVISION_LIE")) && *v) snprintf(p->lie, sizeof p->lie, "%s", v);
	if ((v = getenv("RC_TEST_BANK_LIE")) && *v) snprintf(p->bank_lie, sizeof p->bank_lie, "%s", v);
	if ((v = getenv("RC_TEST_HANDLE_LIE")) && *v) split(v, p->handle_lie, sizeof p->handle_lie, p->handle_lie_how, sizeof p->handle_lie_how);
	if ((v = getenv("RC_TEST_ALLOC_LIE")) && *v) split(v, p->alloc_lie, sizeof p->alloc_lie, p->alloc_lie_how, sizeof p->alloc_lie_how);
	p->stream_flags = (v = getenv("RC_TEST_STREAM_FLAGS")) && *v ? strtol(v, NULL, 10) : -1;
	p->create_stream_flags = (v = getenv("RC_TEST_CREATE_STREAM_FLAGS")) && *v ? strtol(v, NULL, 10) : -1;
	int slot_log = (v = getenv("RC_TEST_SLOT_LOG")) && strcmp(v, "1") == 0;
	if ((v = getenv("RC_TEST_LOG")) && *v) snprintf(p->log, sizeof p->log, "%s", v);
	if ((v = getenv("RC_TEST_HANG")) && *v) snprintf(p->hang, sizeof p->hang, "%s", v);
	p->from_thread = (v = getenv("RC_TEST_FORWARD_FROM_THREAD")) && strcmp(v, "1") == 0;
	if (strcmp(p->fail, "open") == 0) {
		seterr(err, p->fail_class, "%s", p->fail_msg);
		free(p);
		return RC_ERROR;
	}

	memset(out, 0, sizeof *out);
	out->self = p;
	rc_device *d = &out->device;
	d->self = p;
	d->malloc_ = pt_malloc;
	d->free_ = pt_free;
	d->write = pt_write;
	d->read = pt_read;
	d->alloc_host = pt_alloc_host;
	d->free_host = pt_free_host;
	d->host_write = pt_host_write;
	d->host_read = pt_host_read;
	d->create_stream = pt_create_stream;
	d->destroy_stream = pt_destroy_stream;
	d->create_event = pt_create_event;
	d->destroy_event = pt_destroy_event;
	d->fill = pt_fill;
	d->copy = pt_copy;
	d->axpy = pt_axpy;
	d->record = pt_record;
	d->wait = pt_wait;
	d->sync_stream = pt_sync_stream;
	d->sync_device = pt_sync_device;
	d->query_event = pt_query_event;
	d->sync_event = pt_sync_event;
	d->exchange_capture_mode = pt_exchange_capture_mode;
	d->begin_capture = pt_begin_capture;
	d->end_capture = pt_end_capture;
	d->capture_info = pt_capture_info;
	d->launch = pt_launch;
	d->destroy_graph = pt_destroy_graph;
	out->provision = pt_provision;
	out->release = pt_release;
	out->holds = pt_holds;
	out->commit_bank = pt_commit_bank;
	out->reserve_pool = pt_reserve_pool;
	out->pool_alloc = pt_pool_alloc;
	out->pool_free = pt_pool_free;
	out->retire = pt_retire;
	if (slot_log) out->slots_changed = pt_slots_changed; /* a version 1 replaycheck would not read it */
	if (p->in_create_stream_with_flags && !((v = getenv("RC_TEST_BLOCKING_ONLY")) && strcmp(v, "1") == 0))
		out->create_stream_with_flags = pt_create_stream_with_flags;
	if (ruled) out->refusal_rule = pt_refusal_rule; /* read from version 4 only */
#ifdef RC_TEST_NULL_ENTRIES
	d->launch = NULL;
	out->retire = NULL;
#endif
	if ((v = getenv("RC_TEST_INNER_THREADS")) && *v) inner_threads(p, (int)strtol(v, NULL, 10));
	if ((v = getenv("RC_TEST_STRAY")) && *v) {
		stray_arg *a = calloc(1, sizeof *a);
		a->in = *inner;
		char n[32] = "";
		if (!split(v, a->path, sizeof a->path, n, sizeof n)) snprintf(a->path, sizeof a->path, "%s", v);
		a->n = *n ? (int)strtol(n, NULL, 10) : 1;
		pthread_t th;
		if (pthread_create(&th, NULL, stray, a) == 0)
			pthread_detach(th);
		else
			free(a);
	}
	return RC_OK;
}

#ifndef RC_TEST_NO_CLOSE
/* exit_later waits for the close that started it to return, then ends the process. */
static void *exit_later(void *arg) {
	(void)arg;
	usleep(20000);
	exit(0);
}

void rc_runtime_close(void *self) {
	const char *v = getenv("RC_TEST_EXIT_BETWEEN");
	if (v && strcmp(v, "1") == 0) {
		pthread_t th;
		if (pthread_create(&th, NULL, exit_later, NULL) == 0) pthread_detach(th);
	}
	for (size_t i = 0; i < P->nslots; i++) free(P->slots[i].key);
	for (size_t i = 0; i < P->npools; i++) {
		free(P->pools[i].name);
		free(P->pools[i].blocks);
	}
	free(P->slots);
	free(P->pools);
	free(P);
}
#endif
