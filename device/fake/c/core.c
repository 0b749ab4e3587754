/* core.c: the device model of the fake driver libraries, a port of device/sim to C.
 *
 * Every function mirrors the simulator's function of the same role (named in its comment); where
 * the fake cannot know what the simulator knows it says so (pageable host memory is the program's
 * own, so the fake neither checks nor tracks it). */
#define _GNU_SOURCE
#include "core.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rules.h"

#define GRANULARITY 512
#define PAGE_SIZE_SIM (64 << 10)
#define MAX_DEVICES 8
#define DEFAULT_MEMORY (1ull << 30)
/* A node range that lies in no heap of the fake: pageable host memory, which it cannot track. */
#define GEN_UNTRACKED UINT64_MAX

/* ---------- small containers ---------- */

static void *xrealloc(void *p, size_t n) {
	void *q = realloc(p, n ? n : 1);
	if (!q)
		abort();
	return q;
}

typedef struct {
	int *v;
	size_t n, cap;
} ints;

static void ints_push(ints *a, int x) {
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 4;
		a->v = xrealloc(a->v, a->cap * sizeof *a->v);
	}
	a->v[a->n++] = x;
}
static void ints_free(ints *a) {
	free(a->v);
	a->v = NULL;
	a->n = a->cap = 0;
}
static int ints_has(const ints *a, int x) {
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i] == x)
			return 1;
	return 0;
}
static ints ints_clone(const ints *a) {
	ints out = {0};
	for (size_t i = 0; i < a->n; i++)
		ints_push(&out, a->v[i]);
	return out;
}

typedef struct {
	void **v;
	size_t n, cap;
} ptrs;

static void ptrs_push(ptrs *a, void *x) {
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 8;
		a->v = xrealloc(a->v, a->cap * sizeof *a->v);
	}
	a->v[a->n++] = x;
}
static void ptrs_remove_at(ptrs *a, size_t i) {
	memmove(&a->v[i], &a->v[i + 1], (a->n - i - 1) * sizeof *a->v);
	a->n--;
}
static void ptrs_remove(ptrs *a, void *x) {
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i] == x) {
			ptrs_remove_at(a, i);
			return;
		}
}

/* ---------- environment, lock, detail, log ---------- */

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static char crash_entry[128];
static FILE *call_log;
static uint64_t memory_size = DEFAULT_MEMORY;
static int device_count = 1;
static uint64_t seed;
/* REPLAYCHECK_FAKE_FAIL_MALLOC=n: the n-th device allocation that passes its checks fails
 * out-of-memory, once per process (sim Device.FailMalloc). */
static long fail_malloc;
static _Thread_local char detail_buf[1024];
static _Thread_local int current_index = -1;

static void read_env(void) {
	const char *v = getenv("REPLAYCHECK_FAKE_CRASH");
	if (v)
		snprintf(crash_entry, sizeof crash_entry, "%s", v);
	if ((v = getenv("REPLAYCHECK_FAKE_LOG")) && *v && (call_log = fopen(v, "a")))
		setvbuf(call_log, NULL, _IOLBF, 0); /* whole lines, written as they end */
	if ((v = getenv("REPLAYCHECK_FAKE_MEMORY")) && *v) {
		unsigned long long n = strtoull(v, NULL, 0);
		if (n >= GRANULARITY && n <= (1ull << 40))
			memory_size = n;
	}
	if ((v = getenv("REPLAYCHECK_FAKE_DEVICES")) && *v) {
		long n = strtol(v, NULL, 0);
		if (n >= 0 && n <= MAX_DEVICES)
			device_count = (int)n;
	}
	if ((v = getenv("REPLAYCHECK_FAKE_SEED")) && *v)
		seed = strtoull(v, NULL, 0);
	if ((v = getenv("REPLAYCHECK_FAKE_FAIL_MALLOC")) && *v)
		fail_malloc = strtol(v, NULL, 0);
}

/* Unloading the library closes its call log: a process that loads the fake again and again (one
 * backend per instance, the conformance suite) would otherwise keep a descriptor per load. */
__attribute__((destructor)) static void close_log(void) {
	if (call_log) {
		fclose(call_log);
		call_log = NULL;
	}
}

/* The calling thread as the kernel names it (gettid): what the log records, and what Go's
 * syscall.Gettid returns on that thread. */
static long thread_id(void) { return (long)syscall(SYS_gettid); }

/* fault crashes the process as a crashing driver does: the kernel's SIGSEGV, which a Go process
 * cannot mistake for a signal sent by another process. */
static void fault(void) {
	volatile uintptr_t bad = 8;
	*(volatile int *)bad = 1;
	abort();
}

static void trace(const char *entry, const char *args) {
	pthread_once(&env_once, read_env);
	if (crash_entry[0] && strcmp(crash_entry, entry) == 0)
		fault();
	if (call_log)
		fprintf(call_log, "%ld call %s%s%s\n", thread_id(), entry, args ? " " : "", args ? args : "");
}

void rc_trace(const char *entry) { trace(entry, NULL); }

/* injected answers REPLAYCHECK_FAKE_FAIL="<entry point>=<code>" for entry: the code when the
 * variable names entry and a non-zero code, else 0. Unlike the rest of the environment it is read
 * at every call, so a test arms and disarms it between calls (never while a call is in flight:
 * setenv is not safe against a concurrent getenv). */
static int injected(const char *entry) {
	const char *v = getenv("REPLAYCHECK_FAKE_FAIL");
	size_t n = strlen(entry);
	if (!v || strncmp(v, entry, n) != 0 || v[n] != '=')
		return 0;
	char *end;
	long code = strtol(v + n + 1, &end, 0);
	if (end == v + n + 1 || *end || code == 0 || code != (int)code)
		return 0;
	rc_set_detail("%s: failure %ld injected by REPLAYCHECK_FAKE_FAIL", entry, code);
	return (int)code;
}

int rc_enter(const char *entry) { return rc_enter_args(entry, NULL); }

int rc_enter_args(const char *entry, const char *args) {
	trace(entry, args);
	return injected(entry);
}

void rc_log_result(const char *entry, int code) {
	if (call_log && code)
		fprintf(call_log, "%ld fail %s %d: %s\n", thread_id(), entry, code, detail_buf);
}

void rc_lock(void) { pthread_mutex_lock(&lib_lock); }
void rc_unlock(void) { pthread_mutex_unlock(&lib_lock); }

const char *rc_detail(void) { return detail_buf; }

void rc_set_detail(const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail_buf, sizeof detail_buf, fmt, ap);
	va_end(ap);
}

const char *rc_profile_name(void) { return RC_PROFILE_NAME; }

static const rc_class_code *class_code(const char *class_name) {
	for (size_t i = 0; i < sizeof rc_class_codes / sizeof rc_class_codes[0]; i++)
		if (strcmp(rc_class_codes[i].class_name, class_name) == 0)
			return &rc_class_codes[i];
	return NULL;
}

int rc_fail(const char *class_name, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail_buf, sizeof detail_buf, fmt, ap);
	va_end(ap);
	const rc_class_code *c = class_code(class_name);
	return c ? c->code : -1;
}

const rc_code_name *rc_code_lookup(int code) {
	for (size_t i = 0; i < sizeof rc_code_names / sizeof rc_code_names[0]; i++)
		if (rc_code_names[i].code == code)
			return &rc_code_names[i];
	return NULL;
}

/* ---------- memory (sim memory.go) ---------- */

typedef struct {
	uint64_t addr;
	int64_t bytes;
	int64_t capacity;
	uint64_t gen;
} alloc_t;

typedef struct {
	uint64_t addr;
	int64_t capacity;
} block_t;

/* One caching allocator over a reserved region: freed blocks are cached by capacity and reused
 * LIFO (the cache list is in release order, so the last entry of a capacity is its top). */
typedef struct {
	void *map;
	uint64_t base, limit, bump;
	block_t *cache;
	size_t ncache, ccache;
	alloc_t *live; /* sorted by address */
	size_t nlive, clive;
} heap_t;

static int64_t round_up(int64_t n) { return (n + GRANULARITY - 1) / GRANULARITY * GRANULARITY; }

static int heap_init(heap_t *h, uint64_t size) {
	memset(h, 0, sizeof *h);
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	h->map = m;
	h->base = h->bump = (uint64_t)(uintptr_t)m;
	h->limit = h->base + size;
	return 0;
}

static void heap_destroy(heap_t *h) {
	if (h->map)
		munmap(h->map, h->limit - h->base);
	free(h->cache);
	free(h->live);
	memset(h, 0, sizeof *h);
}

static int in_region(const heap_t *h, uint64_t addr) { return h->map && addr >= h->base && addr < h->limit; }

static int take_cached(heap_t *h, int64_t capacity, uint64_t *addr) {
	for (size_t i = h->ncache; i-- > 0;) {
		if (h->cache[i].capacity == capacity) {
			*addr = h->cache[i].addr;
			memmove(&h->cache[i], &h->cache[i + 1], (h->ncache - i - 1) * sizeof *h->cache);
			h->ncache--;
			return 1;
		}
	}
	return 0;
}

/* lower_bound over live by address. */
static size_t live_search(const heap_t *h, uint64_t addr) {
	size_t lo = 0, hi = h->nlive;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (h->live[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* sim memory.alloc: a cached block of exactly the rounded size (LIFO), fresh space from the
 * bump pointer, then the smallest larger cached block, whole. */
static int heap_alloc(heap_t *h, uint64_t *next_gen, int64_t bytes, uint64_t *out) {
	if ((uint64_t)bytes > h->limit - h->base)
		return 0;
	int64_t size = round_up(bytes), capacity = size;
	uint64_t addr;
	if (!take_cached(h, size, &addr)) {
		if (h->bump + (uint64_t)size <= h->limit) {
			addr = h->bump;
			h->bump += (uint64_t)size;
		} else {
			int64_t best = -1;
			for (size_t i = 0; i < h->ncache; i++) {
				int64_t c = h->cache[i].capacity;
				if (c > size && (best < 0 || c < best))
					best = c;
			}
			if (best < 0)
				return 0;
			take_cached(h, best, &addr);
			capacity = best;
		}
	}
	if (h->nlive == h->clive) {
		h->clive = h->clive ? 2 * h->clive : 16;
		h->live = xrealloc(h->live, h->clive * sizeof *h->live);
	}
	size_t i = live_search(h, addr);
	memmove(&h->live[i + 1], &h->live[i], (h->nlive - i) * sizeof *h->live);
	h->live[i] = (alloc_t){.addr = addr, .bytes = bytes, .capacity = capacity, .gen = ++*next_gen};
	h->nlive++;
	*out = addr;
	return 1;
}

static alloc_t *heap_live_at(heap_t *h, uint64_t addr) {
	size_t i = live_search(h, addr);
	return i < h->nlive && h->live[i].addr == addr ? &h->live[i] : NULL;
}

static void heap_release(heap_t *h, uint64_t addr) {
	size_t i = live_search(h, addr);
	block_t b = {h->live[i].addr, h->live[i].capacity};
	memmove(&h->live[i], &h->live[i + 1], (h->nlive - i - 1) * sizeof *h->live);
	h->nlive--;
	if (h->ncache == h->ccache) {
		h->ccache = h->ccache ? 2 * h->ccache : 16;
		h->cache = xrealloc(h->cache, h->ccache * sizeof *h->cache);
	}
	h->cache[h->ncache++] = b;
}

/* sim heap.containing: the live allocation whose requested range holds all of [addr, addr+n). */
static alloc_t *heap_containing(heap_t *h, uint64_t addr, int64_t n) {
	size_t i = live_search(h, addr);
	if (!(i < h->nlive && h->live[i].addr == addr))
		i--;
	if (i >= h->nlive || n <= 0 || addr + (uint64_t)n < addr)
		return NULL;
	alloc_t *a = &h->live[i];
	return addr >= a->addr && addr + (uint64_t)n <= a->addr + (uint64_t)a->bytes ? a : NULL;
}

/* ---------- objects (sim capture.go) ---------- */

typedef struct {
	uint64_t addr;
	int64_t bytes;
} range_t;

typedef struct {
	int kind;
	range_t dst, src;
	uint8_t value;
	uint32_t a;
	int dir; /* a memcpy's direction: RC_D2D, RC_H2D or RC_D2H */
	/* A memset of 2- or 4-byte elements (cuMemsetD16Async, cuMemsetD32Async) writes pattern in
	 * each; 0 is a byte memset of value. */
	uint8_t elem;
	uint32_t pattern;
} work_t;

typedef struct {
	work_t w;
	ints deps;
	uint64_t gens[3];
	int64_t sizes[3]; /* the requested bytes of each range's allocation at capture */
} node_t;

struct capture;

typedef struct {
	uint64_t h;
	struct capture *cap;
	ints tail;
	int nonblocking; /* the default stream does not synchronise with it */
} stream_t;

typedef struct {
	uint64_t h;
	struct capture *cap;
	ints nodes;
	int eager;
} event_t;

typedef struct capture {
	uint64_t id;
	uint64_t origin;
	int mode;
	pthread_t thread;
	int status;
	node_t *nodes;
	size_t nnodes, cnodes;
	ptrs members; /* stream_t*: origin first, then forked streams in fork order */
} capture_t;

typedef struct {
	uint64_t h;
	uint64_t capture;
	node_t *nodes;
	size_t nnodes;
} graph_t;

typedef struct {
	uint64_t stream;
	work_t *works;
	size_t head, n, cap;
} queue_t;

typedef struct {
	pthread_t t;
	int mode;
} thread_mode_t;

/* A thread's per-thread default stream (rc_thread_stream). */
typedef struct {
	pthread_t t;
	uint64_t stream;
} thread_stream_t;

/* An armed fault (replaycheck_fake_inject): left counts the calls of its kind still to come. */
typedef struct {
	int kind;
	long n, left;
} fault_t;

#define MAX_FAULTS 16

struct rc_device {
	int index;
	int refs;
	fault_t faults[MAX_FAULTS];
	int nfaults;
	/* fired lists the faults fired since the device was created, in order. */
	fault_t fired[MAX_FAULTS];
	int nfired;
	int lost;
	heap_t dev, host;
	uint64_t next_gen;
	ptrs streams, events, graphs, caps, pending;
	uint64_t last_handle, last_capture;
	thread_mode_t *modes;
	size_t nmodes;
	thread_stream_t *tstreams;
	size_t ntstreams;
	int seeded;
	uint64_t rng_hi, rng_lo;
};

static rc_device *devices[MAX_DEVICES];

/* work_ranges: reads then writes, as sim work.reads() + work.writes(). */
static size_t work_ranges(const work_t *w, range_t out[3]) {
	switch (w->kind) {
	case RC_MEMCPY:
		out[0] = w->src;
		out[1] = w->dst;
		return 2;
	case RC_KERNEL:
		out[0] = w->src;
		out[1] = w->dst;
		out[2] = w->dst;
		return 3;
	default:
		out[0] = w->dst;
		return 1;
	}
}

static void node_free(node_t *n) { ints_free(&n->deps); }

static void nodes_free(node_t *nodes, size_t n) {
	for (size_t i = 0; i < n; i++)
		node_free(&nodes[i]);
	free(nodes);
}

/* sim memory.containing: device memory, then host memory. */
static alloc_t *containing(rc_device *d, uint64_t addr, int64_t n, int *host) {
	alloc_t *a = heap_containing(&d->dev, addr, n);
	*host = 0;
	if (!a && (a = heap_containing(&d->host, addr, n)))
		*host = 1;
	return a;
}

static int tracked(rc_device *d, uint64_t addr) { return in_region(&d->dev, addr) || in_region(&d->host, addr); }

/* ---------- random replay order (Go's math/rand/v2 PCG and Rand.IntN, on 64-bit) ---------- */

static uint64_t pcg_next(rc_device *d) {
	const uint64_t mul_hi = 2549297995355413924ull, mul_lo = 4865540595714422341ull;
	const uint64_t inc_hi = 6364136223846793005ull, inc_lo = 1442695040888963407ull;
	unsigned __int128 m = (unsigned __int128)d->rng_lo * mul_lo;
	uint64_t hi = (uint64_t)(m >> 64), lo = (uint64_t)m;
	hi += d->rng_hi * mul_lo + d->rng_lo * mul_hi;
	unsigned __int128 s = (unsigned __int128)lo + inc_lo;
	lo = (uint64_t)s;
	hi = hi + inc_hi + (uint64_t)(s >> 64);
	d->rng_lo = lo;
	d->rng_hi = hi;
	hi ^= hi >> 32;
	hi *= 0xda942042e4dd58b5ull;
	hi ^= hi >> 48;
	hi *= (lo | 1);
	return hi;
}

static size_t rng_intn(rc_device *d, size_t n) {
	uint64_t N = n;
	if ((N & (N - 1)) == 0)
		return (size_t)(pcg_next(d) & (N - 1));
	unsigned __int128 m = (unsigned __int128)pcg_next(d) * N;
	if ((uint64_t)m < N) {
		uint64_t thresh = (0 - N) % N;
		while ((uint64_t)m < thresh)
			m = (unsigned __int128)pcg_next(d) * N;
	}
	return (size_t)(m >> 64);
}

/* ---------- devices ---------- */

int rc_device_count(void) {
	pthread_once(&env_once, read_env);
	return device_count;
}

uint64_t rc_memory_size(void) {
	pthread_once(&env_once, read_env);
	return memory_size;
}

static stream_t *new_stream(uint64_t h, int nonblocking) {
	stream_t *s = calloc(1, sizeof *s);
	if (!s)
		abort();
	s->h = h;
	s->nonblocking = nonblocking;
	return s;
}

int rc_device_retain(int index) {
	pthread_once(&env_once, read_env);
	if (index < 0 || index >= device_count)
		return rc_fail("invalid-value", "device %d out of range: the fake has %d device(s)", index, device_count);
	if (devices[index]) {
		devices[index]->refs++;
		return 0;
	}
	rc_device *d = calloc(1, sizeof *d);
	if (!d)
		abort();
	if (heap_init(&d->dev, memory_size) || heap_init(&d->host, memory_size)) {
		heap_destroy(&d->dev);
		free(d);
		return rc_fail("out-of-memory", "cannot reserve %llu bytes of address space for device %d",
			       (unsigned long long)memory_size, index);
	}
	d->index = index;
	d->refs = 1;
	ptrs_push(&d->streams, new_stream(0, 0));
	if (seed) {
		d->seeded = 1;
		d->rng_hi = seed;
		d->rng_lo = (uint64_t)index;
	}
	devices[index] = d;
	return 0;
}

static void capture_free(capture_t *c) {
	nodes_free(c->nodes, c->nnodes);
	free(c->members.v);
	free(c);
}

static void device_destroy(rc_device *d) {
	for (size_t i = 0; i < d->streams.n; i++) {
		stream_t *s = d->streams.v[i];
		ints_free(&s->tail);
		free(s);
	}
	for (size_t i = 0; i < d->events.n; i++) {
		event_t *e = d->events.v[i];
		ints_free(&e->nodes);
		free(e);
	}
	for (size_t i = 0; i < d->graphs.n; i++) {
		graph_t *g = d->graphs.v[i];
		nodes_free(g->nodes, g->nnodes);
		free(g);
	}
	for (size_t i = 0; i < d->caps.n; i++)
		capture_free(d->caps.v[i]);
	for (size_t i = 0; i < d->pending.n; i++) {
		queue_t *q = d->pending.v[i];
		free(q->works);
		free(q);
	}
	free(d->streams.v);
	free(d->events.v);
	free(d->graphs.v);
	free(d->caps.v);
	free(d->pending.v);
	free(d->modes);
	free(d->tstreams);
	heap_destroy(&d->dev);
	heap_destroy(&d->host);
	free(d);
}

int rc_device_release(int index) {
	if (index < 0 || index >= MAX_DEVICES || !devices[index])
		return rc_fail("invalid-value", "device %d is not open", index);
	if (--devices[index]->refs == 0) {
		device_destroy(devices[index]);
		devices[index] = NULL;
	}
	return 0;
}

rc_device *rc_device_at(int index) { return index >= 0 && index < MAX_DEVICES ? devices[index] : NULL; }
int rc_device_index(const rc_device *d) { return d->index; }
void rc_set_current(int index) { current_index = index; }
int rc_current_index(void) { return current_index; }
rc_device *rc_current(void) { return rc_device_at(current_index); }

void rc_mem_info(rc_device *d, size_t *free_bytes, size_t *total) {
	uint64_t live = 0;
	for (size_t i = 0; i < d->dev.nlive; i++)
		live += (uint64_t)d->dev.live[i].capacity;
	if (total)
		*total = (size_t)(d->dev.limit - d->dev.base);
	if (free_bytes)
		*free_bytes = (size_t)(d->dev.limit - d->dev.base - live);
}

static uint64_t new_handle(rc_device *d) { return ((uint64_t)(d->index + 1) << 32) | ++d->last_handle; }

static int *mode_slot(rc_device *d) {
	pthread_t self = pthread_self();
	for (size_t i = 0; i < d->nmodes; i++)
		if (pthread_equal(d->modes[i].t, self))
			return &d->modes[i].mode;
	d->modes = xrealloc(d->modes, (d->nmodes + 1) * sizeof *d->modes);
	d->modes[d->nmodes] = (thread_mode_t){self, RC_GLOBAL};
	return &d->modes[d->nmodes++].mode;
}

static const char *mode_name(int m) {
	switch (m) {
	case RC_GLOBAL:
		return "global";
	case RC_THREAD_LOCAL:
		return "thread-local";
	case RC_RELAXED:
		return "relaxed";
	}
	return "mode?";
}

static const char *status_name(int s) { return s == RC_STATUS_ACTIVE ? "active" : s == RC_STATUS_INVALIDATED ? "invalidated" : "none"; }

/* describe a capture like sim's capture.String, into a rotating buffer. */
static const char *cap_str(const capture_t *c) {
	static _Thread_local char bufs[4][160];
	static _Thread_local int k;
	char *b = bufs[k++ & 3];
	snprintf(b, 160, "capture %llu (origin stream %#llx, %s, begun on thread %#lx, %s)", (unsigned long long)c->id,
		 (unsigned long long)c->origin, mode_name(c->mode), (unsigned long)c->thread, status_name(c->status));
	return b;
}

static stream_t *find_stream(rc_device *d, uint64_t h) {
	for (size_t i = 0; i < d->streams.n; i++)
		if (((stream_t *)d->streams.v[i])->h == h)
			return d->streams.v[i];
	return NULL;
}
static event_t *find_event(rc_device *d, uint64_t h) {
	for (size_t i = 0; i < d->events.n; i++)
		if (((event_t *)d->events.v[i])->h == h)
			return d->events.v[i];
	return NULL;
}
static graph_t *find_graph(rc_device *d, uint64_t h) {
	for (size_t i = 0; i < d->graphs.n; i++)
		if (((graph_t *)d->graphs.v[i])->h == h)
			return d->graphs.v[i];
	return NULL;
}

static int lookup_stream(rc_device *d, uint64_t h, stream_t **out) {
	if ((*out = find_stream(d, h)))
		return 0;
	return rc_fail("invalid-value", "stream %#llx does not exist (never created or destroyed)", (unsigned long long)h);
}
static int lookup_event(rc_device *d, uint64_t h, event_t **out) {
	if ((*out = find_event(d, h)))
		return 0;
	return rc_fail("invalid-value", "event %#llx does not exist (never created or destroyed)", (unsigned long long)h);
}
static int lookup_graph(rc_device *d, uint64_t h, graph_t **out) {
	if ((*out = find_graph(d, h)))
		return 0;
	return rc_fail("invalid-value", "graph %#llx does not exist (never captured or destroyed)", (unsigned long long)h);
}

int rc_is_graph(rc_device *d, uint64_t g) { return find_graph(d, g) != NULL; }

/* ---------- capture DAG ---------- */

static void capture_add(rc_device *d, capture_t *c, stream_t *s, work_t w) {
	if (c->nnodes == c->cnodes) {
		c->cnodes = c->cnodes ? 2 * c->cnodes : 8;
		c->nodes = xrealloc(c->nodes, c->cnodes * sizeof *c->nodes);
	}
	node_t *n = &c->nodes[c->nnodes];
	memset(n, 0, sizeof *n);
	n->w = w;
	n->deps = ints_clone(&s->tail);
	range_t rs[3];
	size_t k = work_ranges(&w, rs);
	for (size_t i = 0; i < k; i++) {
		int host;
		alloc_t *a = containing(d, rs[i].addr, rs[i].bytes, &host);
		n->gens[i] = a ? a->gen : tracked(d, rs[i].addr) ? 0 : GEN_UNTRACKED;
		n->sizes[i] = a ? a->bytes : 0;
	}
	c->nnodes++;
	s->tail.n = 0;
	ints_push(&s->tail, (int)c->nnodes - 1);
}

static void capture_fork(capture_t *c, stream_t *s, const ints *from) {
	s->cap = c;
	ints_free(&s->tail);
	s->tail = ints_clone(from);
	ptrs_push(&c->members, s);
}

/* sim capture.unjoined: forked streams whose last nodes are not ancestors of the origin's. */
static size_t capture_unjoined(const capture_t *c, stream_t **out) {
	char *reach = calloc(c->nnodes + 1, 1);
	size_t cstack = c->nnodes + 1, sp = 0, nout = 0;
	int *stack = malloc(cstack * sizeof *stack);
	if (!reach || !stack)
		abort();
	stream_t *origin = c->members.v[0];
	for (size_t i = 0; i < origin->tail.n; i++)
		stack[sp++] = origin->tail.v[i];
	while (sp > 0) {
		int i = stack[--sp];
		if (reach[i])
			continue;
		reach[i] = 1;
		for (size_t k = 0; k < c->nodes[i].deps.n; k++) {
			int p = c->nodes[i].deps.v[k];
			if (!reach[p]) {
				if (sp == cstack) {
					cstack *= 2;
					stack = xrealloc(stack, cstack * sizeof *stack);
				}
				stack[sp++] = p;
			}
		}
	}
	for (size_t m = 1; m < c->members.n; m++) {
		stream_t *s = c->members.v[m];
		if (s->cap != c)
			continue;
		for (size_t i = 0; i < s->tail.n; i++)
			if (!reach[s->tail.v[i]]) {
				out[nout++] = s;
				break;
			}
	}
	free(reach);
	free(stack);
	return nout;
}

/* sim Device.terminate: the capture's streams run eagerly again, events recorded in it are back
 * to their state before it. The capture is freed. */
static void terminate(rc_device *d, capture_t *c) {
	for (size_t i = 0; i < c->members.n; i++) {
		stream_t *s = c->members.v[i];
		if (s->cap == c) {
			s->cap = NULL;
			ints_free(&s->tail);
		}
	}
	for (size_t i = 0; i < d->events.n; i++) {
		event_t *e = d->events.v[i];
		if (e->cap == c) {
			e->cap = NULL;
			ints_free(&e->nodes);
		}
	}
	ptrs_remove(&d->caps, c);
	capture_free(c);
}

/* sim graph.stale: how many captured ranges lie in another allocation than at capture (stale)
 * and in none (freed: counted when their allocation at capture was at least at_least bytes and,
 * unless below is 0, fewer than below), with the first of each described. Pageable host ranges
 * are not tracked. */
static void graph_stale(rc_device *d, const graph_t *g, int64_t at_least, int64_t below, int *stale, int *freed, char *desc,
			size_t ndesc) {
	*stale = *freed = 0;
	desc[0] = 0;
	for (size_t i = 0; i < g->nnodes; i++) {
		range_t rs[3];
		size_t k = work_ranges(&g->nodes[i].w, rs);
		for (size_t j = 0; j < k; j++) {
			if (g->nodes[i].gens[j] == GEN_UNTRACKED)
				continue;
			int host;
			alloc_t *a = containing(d, rs[j].addr, rs[j].bytes, &host);
			if (!a) {
				int64_t size = g->nodes[i].sizes[j];
				if (size < at_least || (below && size >= below))
					continue;
				if (!*freed && !*stale)
					snprintf(desc, ndesc, "%#llx+%lld is in no live allocation (of %lld bytes at capture)",
						 (unsigned long long)rs[j].addr, (long long)rs[j].bytes, (long long)size);
				(*freed)++;
			} else if (a->gen != g->nodes[i].gens[j]) {
				if (!*freed && !*stale)
					snprintf(desc, ndesc, "%#llx+%lld now belongs to allocation %#llx+%lld",
						 (unsigned long long)rs[j].addr, (long long)rs[j].bytes,
						 (unsigned long long)a->addr, (long long)a->bytes);
				(*stale)++;
			}
		}
	}
}

/* ---------- rules (sim rules.go) ---------- */

/* Which of a call's rules enforce applies: all of them, or for EndCapture, all but the
 * instantiation rules (cuStreamEndCapture) or only those (cuGraphInstantiateWithFlags). */
enum { RC_RULES_ALL, RC_RULES_BUT_INSTANTIATION, RC_RULES_INSTANTIATION };

typedef struct {
	int op;
	stream_t *stream;
	int default_stream;
	event_t *event;
	graph_t *graph;
	int mode;
	int pageable;
	int rules;
} call_t;

/* Whether a condition names captures. capture-fill-freed and capture-copy-freed do in the
 * simulator, the capture the call ends; here they are judged at the instantiation, after
 * cuStreamEndCapture ended that capture. */
static int cond_scoped(int cond) {
	switch (cond) {
	case RC_COND_CAPTURE_FILL_FREED:
	case RC_COND_CAPTURE_COPY_FREED:
	case RC_COND_DEFAULT_STREAM:
	case RC_COND_STREAM_NOT_CAPTURING:
	case RC_COND_GRAPH_RANGE_STALE:
	case RC_COND_GRAPH_RANGE_FREED:
		return 0;
	}
	return 1;
}

static size_t all_caps(rc_device *d, capture_t **out) {
	for (size_t i = 0; i < d->caps.n; i++)
		out[i] = d->caps.v[i];
	return d->caps.n;
}

/* sim blockingCaptures: the captures in progress that hold a blocking stream (the origin, or a
 * stream that joined by waiting on an event recorded in it, still in it), and the first such
 * stream (of the first capture, origin first): CUDA's legacy stream synchronises with it, so
 * legacy-stream work then would depend on the capture. */
static size_t blocking_caps(rc_device *d, capture_t **out, stream_t **first) {
	size_t n = 0;
	*first = NULL;
	for (size_t i = 0; i < d->caps.n; i++) {
		capture_t *c = d->caps.v[i];
		for (size_t m = 0; m < c->members.n; m++) {
			stream_t *s = c->members.v[m];
			if (s->cap == c && !s->nonblocking) {
				if (!*first)
					*first = s;
				out[n++] = c;
				break;
			}
		}
	}
	return n;
}

/* The nodes an end of capture hands to the rules that check a graph as it is made: those of the
 * graph cuStreamEndCapture made, at its instantiation (CUDA), or of the capture the call ends (an
 * end that makes the graph, as ACL's). None for any other call. */
static const node_t *ended_nodes(const call_t *c, const stream_t *st, size_t *n) {
	*n = 0;
	if (c->op != RC_OP_END_CAPTURE)
		return NULL;
	if (c->graph) {
		*n = c->graph->nnodes;
		return c->graph->nodes;
	}
	if (st && st->cap && st->cap->origin == st->h) {
		*n = st->cap->nnodes;
		return st->cap->nodes;
	}
	return NULL;
}

/* eval evaluates rule r's condition: whether it holds, the captures it names and a detail. */
static int eval(rc_device *d, const call_t *c, const rc_rule *r, capture_t **caps, size_t *ncaps, char *det, size_t ndet) {
	enum rc_cond cond = (enum rc_cond)r->cond;
	stream_t *st = c->stream;
	event_t *ev = c->event;
	pthread_t self = pthread_self();
	stream_t *blocking;
	*ncaps = 0;
	switch (cond) { /* an enum: -Wswitch (-Wall) names a condition without its case */
	case RC_COND_STREAM_CAPTURING:
		if (!st || !st->cap)
			return 0;
		caps[(*ncaps)++] = st->cap;
		snprintf(det, ndet, "stream %#llx is in %s", (unsigned long long)st->h, cap_str(st->cap));
		return 1;
	case RC_COND_ANY_CAPTURE:
		if (d->caps.n == 0)
			return 0;
		*ncaps = all_caps(d, caps);
		snprintf(det, ndet, "%s is in progress", cap_str(caps[0]));
		return 1;
	case RC_COND_BLOCKING_CAPTURE:
		if ((*ncaps = blocking_caps(d, caps, &blocking)) == 0)
			return 0;
		snprintf(det, ndet, "stream %#llx, blocking, is in %s", (unsigned long long)blocking->h, cap_str(blocking->cap));
		return 1;
	case RC_COND_CALLER_BEGAN_CAPTURE:
	case RC_COND_OTHER_THREAD_BEGAN_CAPTURE: {
		int mine = cond == RC_COND_CALLER_BEGAN_CAPTURE;
		for (size_t i = 0; i < d->caps.n; i++) {
			capture_t *x = d->caps.v[i];
			if ((pthread_equal(x->thread, self) != 0) == mine)
				caps[(*ncaps)++] = x;
		}
		if (*ncaps == 0)
			return 0;
		if (mine)
			snprintf(det, ndet, "thread %#lx began %s", (unsigned long)self, cap_str(caps[0]));
		else
			snprintf(det, ndet, "called on thread %#lx while %s is in progress", (unsigned long)self, cap_str(caps[0]));
		return 1;
	}
	case RC_COND_CALLER_BEGAN_OTHER_CAPTURE:
	case RC_COND_OTHER_THREAD_BEGAN_OTHER_CAPTURE: {
		/* the captures in progress other than the one the call ends (none at an instantiation) */
		int mine = cond == RC_COND_CALLER_BEGAN_OTHER_CAPTURE;
		capture_t *ending = st ? st->cap : NULL;
		for (size_t i = 0; i < d->caps.n; i++) {
			capture_t *x = d->caps.v[i];
			if (x != ending && (pthread_equal(x->thread, self) != 0) == mine)
				caps[(*ncaps)++] = x;
		}
		if (*ncaps == 0)
			return 0;
		if (mine)
			snprintf(det, ndet, "thread %#lx began %s, still in progress", (unsigned long)self, cap_str(caps[0]));
		else
			snprintf(det, ndet, "ended on thread %#lx while %s is in progress", (unsigned long)self, cap_str(caps[0]));
		return 1;
	}
	case RC_COND_EVENT_CAPTURED:
		if (!ev || !ev->cap)
			return 0;
		caps[(*ncaps)++] = ev->cap;
		snprintf(det, ndet, "event %#llx was recorded in %s", (unsigned long long)ev->h, cap_str(ev->cap));
		return 1;
	case RC_COND_EVENT_RECORDED_OUTSIDE:
		if (!st || !ev || !st->cap || ev->cap || !ev->eager)
			return 0;
		caps[(*ncaps)++] = st->cap;
		snprintf(det, ndet, "stream %#llx is in %s and event %#llx was recorded outside it", (unsigned long long)st->h,
			 cap_str(st->cap), (unsigned long long)ev->h);
		return 1;
	case RC_COND_EVENT_IN_OTHER_CAPTURE:
		if (!st || !ev || !st->cap || !ev->cap || st->cap == ev->cap)
			return 0;
		caps[(*ncaps)++] = st->cap;
		caps[(*ncaps)++] = ev->cap;
		snprintf(det, ndet, "stream %#llx is in %s and event %#llx was recorded in %s", (unsigned long long)st->h,
			 cap_str(st->cap), (unsigned long long)ev->h, cap_str(ev->cap));
		return 1;
	case RC_COND_CAPTURE_INVALIDATED: {
		capture_t *target = st ? st->cap : NULL;
		if (!target && c->op == RC_OP_WAIT && ev && ev->cap)
			target = ev->cap;
		if (!target || target->status != RC_STATUS_INVALIDATED)
			return 0;
		caps[(*ncaps)++] = target;
		snprintf(det, ndet, "%s", cap_str(target));
		return 1;
	}
	case RC_COND_STREAM_OUTSIDE_CAPTURE:
		if (!st || st->cap || d->caps.n == 0 || (c->op == RC_OP_WAIT && ev && ev->cap))
			return 0;
		*ncaps = all_caps(d, caps);
		snprintf(det, ndet, "stream %#llx is in no capture while %s is in progress", (unsigned long long)st->h,
			 cap_str(caps[0]));
		return 1;
	case RC_COND_DEFAULT_STREAM:
		snprintf(det, ndet, "the default stream was named");
		return c->default_stream;
	case RC_COND_DEFAULT_STREAM_DURING_CAPTURE:
		if (!st || st->h != 0 || st->cap || d->caps.n == 0)
			return 0;
		*ncaps = all_caps(d, caps);
		snprintf(det, ndet, "the default stream was named while %s is in progress", cap_str(caps[0]));
		return 1;
	case RC_COND_DEFAULT_STREAM_DURING_BLOCKING_CAPTURE:
		if (!st || st->h != 0 || st->cap || (*ncaps = blocking_caps(d, caps, &blocking)) == 0)
			return 0;
		snprintf(det, ndet, "the default stream was named while stream %#llx, blocking, is in %s",
			 (unsigned long long)blocking->h, cap_str(blocking->cap));
		return 1;
	case RC_COND_DEFAULT_STREAM_JOINS_CAPTURE:
		if (!st || !ev || st->h != 0 || !ev->cap)
			return 0;
		caps[(*ncaps)++] = ev->cap;
		snprintf(det, ndet, "the default stream waits on event %#llx, recorded in %s", (unsigned long long)ev->h,
			 cap_str(ev->cap));
		return 1;
	case RC_COND_PAGEABLE_COPY_IN_CAPTURE:
		if (!c->pageable || !st || !st->cap)
			return 0;
		caps[(*ncaps)++] = st->cap;
		snprintf(det, ndet, "a copy of pageable host memory on stream %#llx, which is in %s", (unsigned long long)st->h,
			 cap_str(st->cap));
		return 1;
	case RC_COND_STREAM_NOT_CAPTURING:
		if (!st || st->cap)
			return 0;
		snprintf(det, ndet, "stream %#llx is not capturing", (unsigned long long)st->h);
		return 1;
	case RC_COND_STREAM_NOT_ORIGIN:
		if (!st || !st->cap || st->cap->origin == st->h)
			return 0;
		caps[(*ncaps)++] = st->cap;
		snprintf(det, ndet, "stream %#llx was forked into %s", (unsigned long long)st->h, cap_str(st->cap));
		return 1;
	case RC_COND_END_FROM_OTHER_THREAD:
		if (!st || !st->cap || pthread_equal(st->cap->thread, self))
			return 0;
		caps[(*ncaps)++] = st->cap;
		snprintf(det, ndet, "ended on thread %#lx, %s", (unsigned long)self, cap_str(st->cap));
		return 1;
	case RC_COND_FORK_UNJOINED: {
		if (!st || !st->cap || st->cap->origin != st->h)
			return 0;
		stream_t **open = malloc((st->cap->members.n + 1) * sizeof *open);
		if (!open)
			abort();
		size_t n = capture_unjoined(st->cap, open);
		if (n > 0) {
			caps[(*ncaps)++] = st->cap;
			snprintf(det, ndet, "%zu forked stream(s), first stream %#llx, not joined back to stream %#llx in %s", n,
				 (unsigned long long)open[0]->h, (unsigned long long)st->h, cap_str(st->cap));
		}
		free(open);
		return n > 0;
	}
	case RC_COND_CAPTURE_COPY_FREED: {
		/* sim capture-copy-freed: a copy whose device source lies in no live allocation. */
		size_t n;
		const node_t *nodes = ended_nodes(c, st, &n);
		for (size_t i = 0; i < n; i++) {
			const work_t *w = &nodes[i].w;
			int host;
			if (w->kind == RC_MEMCPY && rc_memory_kind(d, w->src.addr) == RC_MEM_DEVICE &&
			    !containing(d, w->src.addr, w->src.bytes, &host)) {
				snprintf(det, ndet, "a copy from %#llx+%lld in the capture, which lies in no live allocation",
					 (unsigned long long)w->src.addr, (long long)w->src.bytes);
				return 1;
			}
		}
		return 0;
	}
	case RC_COND_CAPTURE_FILL_FREED: {
		/* sim capture-fill-freed: a fill of memory that lies in no live allocation. */
		size_t n;
		const node_t *nodes = ended_nodes(c, st, &n);
		for (size_t i = 0; i < n; i++) {
			const work_t *w = &nodes[i].w;
			int host;
			if (w->kind == RC_MEMSET && !containing(d, w->dst.addr, w->dst.bytes, &host)) {
				snprintf(det, ndet, "a fill of %#llx+%lld in the capture, which lies in no live allocation",
					 (unsigned long long)w->dst.addr, (long long)w->dst.bytes);
				return 1;
			}
		}
		return 0;
	}
	case RC_COND_GRAPH_RANGE_STALE:
	case RC_COND_GRAPH_RANGE_FREED: {
		if (!c->graph)
			return 0;
		int stale, freed;
		char desc[200];
		graph_stale(d, c->graph, r->freed_at_least, r->freed_below, &stale, &freed, desc, sizeof desc);
		if (cond == RC_COND_GRAPH_RANGE_STALE ? stale == 0 : freed == 0)
			return 0;
		snprintf(det, ndet, "graph %#llx captured ranges that %s: %s", (unsigned long long)c->graph->h,
			 cond == RC_COND_GRAPH_RANGE_STALE ? "changed owner" : "were freed", desc);
		return 1;
	}
	case RC_COND_COUNT:
		break;
	}
	return 0;
}

/* sim Device.enforce: the first rejecting rule whose call, caller mode, pageable flag, condition
 * and capture modes match decides; allow rules never pre-empt a rejection. */
static int enforce(rc_device *d, const call_t *c) {
	int caller = *mode_slot(d);
	capture_t **caps = malloc((d->caps.n + 2) * sizeof *caps);
	if (!caps)
		abort();
	int code = 0;
	for (size_t i = 0; i < sizeof rc_rules / sizeof rc_rules[0]; i++) {
		const rc_rule *r = &rc_rules[i];
		if (r->allow || !(r->calls & RC_OP_BIT(c->op)) || (r->caller_modes && !(r->caller_modes & RC_MODE_BIT(caller))) ||
		    (r->pageable && !c->pageable))
			continue;
		if ((c->rules == RC_RULES_BUT_INSTANTIATION && r->instantiation) || (c->rules == RC_RULES_INSTANTIATION && !r->instantiation))
			continue;
		size_t n;
		char det[600];
		if (!eval(d, c, r, caps, &n, det, sizeof det))
			continue;
		if (cond_scoped(r->cond)) {
			size_t k = 0;
			for (size_t j = 0; j < n; j++)
				if (!r->modes || (r->modes & RC_MODE_BIT(caps[j]->mode)))
					caps[k++] = caps[j];
			if ((n = k) == 0)
				continue;
		}
		if (r->crash) {
			/* The platform's process dies in the call (the driver faults): so does this one. */
			fault();
		}
		int invalidated = 0;
		if (r->invalidates)
			for (size_t j = 0; j < n; j++)
				if (caps[j]->status == RC_STATUS_ACTIVE) {
					caps[j]->status = RC_STATUS_INVALIDATED;
					invalidated = 1;
				}
		/* ends-capture ends the capture the call ends; at an instantiation cuStreamEndCapture ended
		 * it already, and the graph is not instantiated. */
		if (r->ends_capture && c->stream && c->stream->cap) {
			terminate(d, c->stream->cap);
			strncat(det, "; the capture is ended without a graph", sizeof det - strlen(det) - 1);
		} else if (r->ends_capture && c->rules == RC_RULES_INSTANTIATION) {
			strncat(det, "; the graph is not instantiated", sizeof det - strlen(det) - 1);
		}
		rc_set_detail("%s: %s (profile %s, rule %zu)%s", r->situation, det, RC_PROFILE_NAME, i + 1,
			      invalidated ? "; the capture is invalidated" : "");
		code = r->code;
		break;
	}
	free(caps);
	return code;
}

/* ---------- execution ---------- */

static void run_axpy(uint64_t y, uint64_t x, int64_t n, uint32_t a) {
	/* As sim memory.axpy: page-sized chunks of x and y read, computed, then written back, so
	 * overlapping x and y give the simulator's result. */
	static _Thread_local uint8_t xs[PAGE_SIZE_SIM], ys[PAGE_SIZE_SIM];
	int64_t chunk = n < PAGE_SIZE_SIM ? n : PAGE_SIZE_SIM;
	for (int64_t off = 0; off < n; off += chunk) {
		int64_t len = n - off < chunk ? n - off : chunk;
		memcpy(xs, (const void *)(uintptr_t)(x + (uint64_t)off), (size_t)len);
		memcpy(ys, (const void *)(uintptr_t)(y + (uint64_t)off), (size_t)len);
		for (int64_t i = 0; i + 4 <= len; i += 4) {
			uint32_t xv = (uint32_t)xs[i] | (uint32_t)xs[i + 1] << 8 | (uint32_t)xs[i + 2] << 16 | (uint32_t)xs[i + 3] << 24;
			uint32_t yv = (uint32_t)ys[i] | (uint32_t)ys[i + 1] << 8 | (uint32_t)ys[i + 2] << 16 | (uint32_t)ys[i + 3] << 24;
			uint32_t v = a * xv + yv;
			ys[i] = (uint8_t)v;
			ys[i + 1] = (uint8_t)(v >> 8);
			ys[i + 2] = (uint8_t)(v >> 16);
			ys[i + 3] = (uint8_t)(v >> 24);
		}
		memcpy((void *)(uintptr_t)(y + (uint64_t)off), ys, (size_t)len);
	}
}

static void execute(const work_t *w) {
	switch (w->kind) {
	case RC_MEMSET:
		if (w->elem > 1) {
			/* little-endian elements, as the device stores them */
			uint8_t *p = (uint8_t *)(uintptr_t)w->dst.addr;
			for (int64_t i = 0; i + w->elem <= w->dst.bytes; i += w->elem)
				for (int b = 0; b < w->elem; b++)
					p[i + b] = (uint8_t)(w->pattern >> (8 * b));
		} else {
			memset((void *)(uintptr_t)w->dst.addr, w->value, (size_t)w->dst.bytes);
		}
		break;
	case RC_MEMCPY:
		memmove((void *)(uintptr_t)w->dst.addr, (const void *)(uintptr_t)w->src.addr, (size_t)w->dst.bytes);
		break;
	case RC_KERNEL:
		run_axpy(w->dst.addr, w->src.addr, w->dst.bytes, w->a);
		break;
	}
}

/* sim Device.settle: each stream's launched work in order, the streams interleaved one node of
 * each in turn in the order they were first launched on (with a seed, a random stream's next
 * node each step). */
void rc_settle(rc_device *d) {
	size_t next = 0;
	while (d->pending.n > 0) {
		size_t i = next % d->pending.n;
		if (d->seeded)
			i = rng_intn(d, d->pending.n);
		queue_t *q = d->pending.v[i];
		if (q->head < q->n) {
			execute(&q->works[q->head]);
			q->head++;
		}
		if (q->head == q->n) {
			free(q->works);
			free(q);
			ptrs_remove_at(&d->pending, i);
			next = i;
			continue;
		}
		next = i + 1;
	}
}

/* ---------- range checks ---------- */

/* sim Device.checkRange: a non-empty range inside one live device allocation, or with host set,
 * one live device or pinned host allocation. *host says which it was. */
static int check_range(rc_device *d, const char *what, uint64_t addr, int64_t n, int allow_host, int *host) {
	if (n <= 0)
		return rc_fail("invalid-value", "%s %#llx+%lld is empty", what, (unsigned long long)addr, (long long)n);
	alloc_t *a = containing(d, addr, n, host);
	if (!a)
		return rc_fail("invalid-value", "%s %#llx+%lld does not lie inside a live allocation", what,
			       (unsigned long long)addr, (long long)n);
	if (*host && !allow_host)
		return rc_fail("invalid-value", "%s %#llx+%lld is pinned host memory: the call needs device memory", what,
			       (unsigned long long)addr, (long long)n);
	return 0;
}

/* ---------- fault injection (sim faults.go) ---------- */

/* take_fault counts one call of class (RC_FAULT_ALLOC: an allocation; RC_FAULT_LAUNCH: a launch,
 * which the launch-fail, device-lost and hang faults count) for the armed faults, and returns the
 * kind of the fault that fires now, 0 for none. A fault due on a call another fault took fires at
 * the next one. */
static int take_fault(rc_device *d, int class) {
	int fired = 0, kept = 0;
	for (int i = 0; i < d->nfaults; i++) {
		fault_t f = d->faults[i];
		int counts = class == RC_FAULT_ALLOC ? f.kind == RC_FAULT_ALLOC : f.kind != RC_FAULT_ALLOC;
		if (counts && --f.left <= 0) {
			if (!fired) {
				fired = f.kind;
				if (d->nfired < MAX_FAULTS)
					d->fired[d->nfired++] = f;
				continue;
			}
			f.left = 1;
		}
		d->faults[kept++] = f;
	}
	d->nfaults = kept;
	return fired;
}

static pthread_mutex_t hang_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hang_cv = PTHREAD_COND_INITIALIZER;

/* hang_forever is a driver call that never returns: it lets the library lock go (the other
 * threads' calls still answer) and waits on a condition nobody signals. */
static _Noreturn void hang_forever(void) {
	if (call_log)
		fprintf(call_log, "%ld hang\n", thread_id());
	rc_unlock();
	pthread_mutex_lock(&hang_mu);
	for (;;)
		pthread_cond_wait(&hang_cv, &hang_mu);
}

int rc_lost(rc_device *d, const char *entry) {
	if (!d || !d->lost)
		return 0;
	return rc_fail("device-lost", "%s: the device is lost (fault device-lost fired earlier); only releasing it (a reset) helps", entry);
}

/* replaycheck_fake_inject arms a fault of kind (device.FaultKind: 1 alloc-fail, 2 launch-fail, 3
 * device-lost, 4 hang) on the calling thread's current device, firing at the n-th call of its kind
 * (n >= 1); kind 0 disarms every fault not fired. It returns 0, or -1 for a bad kind or n, no
 * current device, or too many armed faults. Not a driver entry point: a real library lacks it,
 * which is how a binding tells that it cannot inject faults. */
RC_API int replaycheck_fake_inject(int kind, long n) {
	rc_trace("replaycheck_fake_inject");
	rc_lock();
	rc_device *d = rc_current();
	int err = 0;
	if (!d || kind < 0 || kind > RC_FAULT_HANG || (kind && n < 1))
		err = -1;
	else if (kind == 0)
		d->nfaults = 0;
	else if (d->nfaults == MAX_FAULTS)
		err = -1;
	else
		d->faults[d->nfaults++] = (fault_t){.kind = kind, .n = n, .left = n};
	rc_unlock();
	return err;
}

/* replaycheck_fake_fired reports the i-th fault (0-based) fired on the calling thread's current
 * device since it was created: 1 with its kind and n, or 0 when fewer have fired. */
RC_API int replaycheck_fake_fired(long i, int *kind, long *n) {
	rc_trace("replaycheck_fake_fired");
	rc_lock();
	rc_device *d = rc_current();
	int ok = d && i >= 0 && i < d->nfired;
	if (ok) {
		*kind = d->fired[i].kind;
		*n = d->fired[i].n;
	}
	rc_unlock();
	return ok;
}

/* ---------- device calls (sim device.go) ---------- */

/* take_device carves bytes of device memory once the call's checks passed: the injected
 * failures first (REPLAYCHECK_FAKE_FAIL_MALLOC, the alloc-fail fault), then the heap. */
static int take_device(rc_device *d, uint64_t bytes, uint64_t *addr) {
	if (fail_malloc > 0 && --fail_malloc == 0)
		return rc_fail("out-of-memory", "allocation of %llu bytes failed by injection (REPLAYCHECK_FAKE_FAIL_MALLOC)",
			       (unsigned long long)bytes);
	if (take_fault(d, RC_FAULT_ALLOC) == RC_FAULT_ALLOC)
		return rc_fail("out-of-memory", "allocation of %llu bytes failed by injection (fault alloc-fail)", (unsigned long long)bytes);
	if (!heap_alloc(&d->dev, &d->next_gen, (int64_t)bytes, addr))
		return rc_fail("out-of-memory", "cannot allocate %llu bytes: %llu of %llu bytes are carved out and no cached block is large enough",
			       (unsigned long long)bytes, (unsigned long long)(d->dev.bump - d->dev.base),
			       (unsigned long long)(d->dev.limit - d->dev.base));
	return 0;
}

/* malloc_checked is rc_malloc; with below4g the call is a v1 entry point, whose 32-bit
 * CUdeviceptr cannot name memory above 4 GiB: it fails out-of-memory after the rules when the
 * device heap lies there (the fake's always does), allocating nothing. */
static int malloc_checked(rc_device *d, uint64_t bytes, uint64_t *addr, int below4g) {
	if (bytes == 0 || bytes > INT64_MAX)
		return rc_fail("invalid-value", "cannot allocate %llu bytes: the size must be positive", (unsigned long long)bytes);
	call_t c = {.op = RC_OP_MALLOC};
	int err = enforce(d, &c);
	if (err)
		return err;
	if (below4g && d->dev.limit > (1ull << 32))
		return rc_fail("out-of-memory",
			       "cannot allocate %llu bytes for a 32-bit CUdeviceptr (v1 entry point): the fake's device memory lies above 4 GiB",
			       (unsigned long long)bytes);
	return take_device(d, bytes, addr);
}

int rc_malloc(rc_device *d, uint64_t bytes, uint64_t *addr) { return malloc_checked(d, bytes, addr, 0); }

int rc_malloc_v1(rc_device *d, uint64_t bytes, uint32_t *addr) {
	uint64_t a;
	int err = malloc_checked(d, bytes, &a, 1);
	if (!err)
		*addr = (uint32_t)a;
	return err;
}

int rc_free(rc_device *d, uint64_t addr) {
	if (!heap_live_at(&d->dev, addr))
		return rc_fail("invalid-value", "%#llx is not a live allocation (never allocated or already freed)", (unsigned long long)addr);
	call_t c = {.op = RC_OP_FREE};
	int err = enforce(d, &c);
	if (err)
		return err;
	heap_release(&d->dev, addr);
	return 0;
}

int rc_alloc_host(rc_device *d, uint64_t bytes, uint64_t *addr) {
	if (bytes == 0 || bytes > INT64_MAX)
		return rc_fail("invalid-value", "cannot allocate %llu bytes: the size must be positive", (unsigned long long)bytes);
	call_t c = {.op = RC_OP_ALLOC_HOST};
	int err = enforce(d, &c);
	if (err)
		return err;
	if (!heap_alloc(&d->host, &d->next_gen, (int64_t)bytes, addr))
		return rc_fail("out-of-memory", "cannot allocate %llu bytes of pinned host memory", (unsigned long long)bytes);
	return 0;
}

int rc_free_host(rc_device *d, uint64_t addr) {
	if (!heap_live_at(&d->host, addr))
		return rc_fail("invalid-value", "%#llx is not a live pinned host allocation (never allocated or already freed)",
			       (unsigned long long)addr);
	call_t c = {.op = RC_OP_FREE_HOST};
	int err = enforce(d, &c);
	if (err)
		return err;
	heap_release(&d->host, addr);
	return 0;
}

int rc_write(rc_device *d, uint64_t dst, const void *src, uint64_t n) {
	int host;
	int err = check_range(d, "destination", dst, (int64_t)n, 0, &host);
	if (err)
		return err;
	if (!src)
		return rc_fail("invalid-value", "the host source is NULL");
	call_t c = {.op = RC_OP_WRITE};
	if ((err = enforce(d, &c)))
		return err;
	memmove((void *)(uintptr_t)dst, src, (size_t)n);
	return 0;
}

int rc_read(rc_device *d, void *dst, uint64_t src, uint64_t n) {
	int host;
	int err = check_range(d, "source", src, (int64_t)n, 0, &host);
	if (err)
		return err;
	if (!dst)
		return rc_fail("invalid-value", "the host destination is NULL");
	call_t c = {.op = RC_OP_READ};
	if ((err = enforce(d, &c)))
		return err;
	memmove(dst, (const void *)(uintptr_t)src, (size_t)n);
	return 0;
}

int rc_create_stream(rc_device *d, int nonblocking, uint64_t *s) {
	*s = new_handle(d);
	ptrs_push(&d->streams, new_stream(*s, nonblocking != 0));
	return 0;
}

int rc_destroy_stream(rc_device *d, uint64_t h) {
	if (h == 0)
		return rc_fail("invalid-value", "the default stream is never destroyed");
	stream_t *st;
	int err = lookup_stream(d, h, &st);
	if (err)
		return err;
	if (st->cap)
		terminate(d, st->cap);
	ptrs_remove(&d->streams, st);
	ints_free(&st->tail);
	free(st);
	return 0;
}

int rc_create_event(rc_device *d, uint64_t *e) {
	event_t *ev = calloc(1, sizeof *ev);
	if (!ev)
		abort();
	ev->h = *e = new_handle(d);
	ptrs_push(&d->events, ev);
	return 0;
}

int rc_destroy_event(rc_device *d, uint64_t h) {
	event_t *ev;
	int err = lookup_event(d, h, &ev);
	if (err)
		return err;
	ptrs_remove(&d->events, ev);
	ints_free(&ev->nodes);
	free(ev);
	return 0;
}

/* sim Device.enqueue: record into the stream's capture, or run now. */
static int enqueue(rc_device *d, const call_t *c, work_t w) {
	int err = enforce(d, c);
	if (err)
		return err;
	if (c->stream->cap)
		capture_add(d, c->stream->cap, c->stream, w);
	else
		execute(&w);
	return 0;
}

int rc_fill(rc_device *d, uint64_t s, uint64_t dst, uint64_t n, uint8_t value) {
	stream_t *st;
	int host, err = lookup_stream(d, s, &st);
	if (err || (err = check_range(d, "destination", dst, (int64_t)n, 0, &host)))
		return err;
	call_t c = {.op = RC_OP_FILL, .stream = st};
	return enqueue(d, &c, (work_t){.kind = RC_MEMSET, .dst = {dst, (int64_t)n}, .value = value});
}

/* side checks one side of a copy: device or pinned memory must be live; an address outside the
 * fake's memory is the program's own pageable memory when the direction puts host memory there. */
static int copy_side(rc_device *d, const char *what, uint64_t addr, int64_t n, int may_be_host, int *host, int *pageable) {
	*pageable = 0;
	if (n > 0 && !tracked(d, addr) && may_be_host) {
		if (!addr)
			return rc_fail("invalid-value", "%s is NULL", what);
		*host = *pageable = 1;
		return 0;
	}
	return check_range(d, what, addr, n, 1, host);
}

int rc_copy(rc_device *d, uint64_t s, uint64_t dst, uint64_t src, uint64_t n, int dir) {
	stream_t *st;
	int dh, sh, dp, sp, err = lookup_stream(d, s, &st);
	if (err || (err = copy_side(d, "destination", dst, (int64_t)n, dir == RC_D2H, &dh, &dp)) ||
	    (err = copy_side(d, "source", src, (int64_t)n, dir == RC_H2D, &sh, &sp)))
		return err;
	if (dh && sh)
		return rc_fail("invalid-value", "destination %#llx and source %#llx are both host memory: a copy between host buffers is the CPU's, not a stream's",
			       (unsigned long long)dst, (unsigned long long)src);
	call_t c = {.op = RC_OP_COPY, .stream = st, .pageable = dp || sp};
	return enqueue(d, &c, (work_t){.kind = RC_MEMCPY, .dst = {dst, (int64_t)n}, .src = {src, (int64_t)n}, .dir = dir});
}

int rc_axpy(rc_device *d, uint64_t s, uint64_t y, uint64_t x, uint64_t lanes, uint32_t a) {
	stream_t *st;
	int host, err = lookup_stream(d, s, &st);
	if (err)
		return err;
	int64_t n = (int64_t)(lanes * 4);
	if ((err = check_range(d, "y", y, n, 0, &host)) || (err = check_range(d, "x", x, n, 0, &host)))
		return err;
	call_t c = {.op = RC_OP_AXPY, .stream = st};
	return enqueue(d, &c, (work_t){.kind = RC_KERNEL, .dst = {y, n}, .src = {x, n}, .a = a});
}

int rc_fill_elems(rc_device *d, uint64_t s, uint64_t dst, uint64_t count, unsigned elem, uint32_t pattern) {
	if (elem == 1)
		return rc_fill(d, s, dst, count, (uint8_t)pattern);
	stream_t *st;
	int host, err = lookup_stream(d, s, &st);
	if (err)
		return err;
	if (elem != 2 && elem != 4)
		return rc_fail("invalid-value", "a memset element is 1, 2 or 4 bytes, not %u", elem);
	if (dst % elem)
		return rc_fail("invalid-value", "destination %#llx is not aligned to its %u-byte elements", (unsigned long long)dst, elem);
	if (count > (uint64_t)INT64_MAX / elem)
		return rc_fail("invalid-value", "%llu elements of %u bytes overflow", (unsigned long long)count, elem);
	if ((err = check_range(d, "destination", dst, (int64_t)(count * elem), 0, &host)))
		return err;
	call_t c = {.op = RC_OP_FILL, .stream = st};
	return enqueue(d, &c,
		       (work_t){.kind = RC_MEMSET, .dst = {dst, (int64_t)(count * elem)}, .value = (uint8_t)pattern, .elem = (uint8_t)elem, .pattern = pattern});
}

int rc_live_range(rc_device *d, const char *what, uint64_t addr, uint64_t n) {
	int host;
	return check_range(d, what, addr, (int64_t)n, 1, &host);
}

int rc_memory_kind(rc_device *d, uint64_t addr) {
	return in_region(&d->dev, addr) ? RC_MEM_DEVICE : in_region(&d->host, addr) ? RC_MEM_PINNED : RC_MEM_PAGEABLE;
}

uint64_t rc_thread_stream(rc_device *d) {
	pthread_t self = pthread_self();
	for (size_t i = 0; i < d->ntstreams; i++)
		if (pthread_equal(d->tstreams[i].t, self))
			return d->tstreams[i].stream;
	uint64_t h;
	rc_create_stream(d, 0, &h);
	d->tstreams = xrealloc(d->tstreams, (d->ntstreams + 1) * sizeof *d->tstreams);
	d->tstreams[d->ntstreams++] = (thread_stream_t){self, h};
	return h;
}

/* Stream-ordered allocation is no unsafe call (it never synchronises): no rule judges it. Work
 * runs at enqueue, so the allocation and the free take effect at the call. */
static int ordered_stream(rc_device *d, uint64_t s, const char *what, stream_t **st) {
	int err = lookup_stream(d, s, st);
	if (err)
		return err;
	if ((*st)->cap)
		return rc_fail("not-supported", "stream %#llx is in %s: a stream-ordered %s there would be a graph memory node, which the fake does not model",
			       (unsigned long long)s, cap_str((*st)->cap), what);
	return 0;
}

int rc_malloc_async(rc_device *d, uint64_t s, uint64_t bytes, uint64_t *addr) {
	stream_t *st;
	int err = ordered_stream(d, s, "allocation", &st);
	if (err)
		return err;
	if (bytes == 0 || bytes > INT64_MAX)
		return rc_fail("invalid-value", "cannot allocate %llu bytes: the size must be positive", (unsigned long long)bytes);
	return take_device(d, bytes, addr);
}

int rc_free_async(rc_device *d, uint64_t s, uint64_t addr) {
	stream_t *st;
	int err = ordered_stream(d, s, "free", &st);
	if (err)
		return err;
	if (!heap_live_at(&d->dev, addr))
		return rc_fail("invalid-value", "%#llx is not a live allocation (never allocated or already freed)", (unsigned long long)addr);
	heap_release(&d->dev, addr);
	return 0;
}

int rc_record(rc_device *d, uint64_t e, uint64_t s) {
	stream_t *st;
	event_t *ev;
	int err = lookup_stream(d, s, &st);
	if (err || (err = lookup_event(d, e, &ev)))
		return err;
	call_t c = {.op = RC_OP_RECORD, .stream = st, .event = ev};
	if ((err = enforce(d, &c)))
		return err;
	ints_free(&ev->nodes);
	if (st->cap) {
		ev->cap = st->cap; /* eager is kept: the captured record does not touch the event outside the graph */
		ev->nodes = ints_clone(&st->tail);
	} else {
		ev->cap = NULL;
		ev->eager = 1;
	}
	return 0;
}

int rc_wait(rc_device *d, uint64_t s, uint64_t e) {
	stream_t *st;
	event_t *ev;
	int err = lookup_stream(d, s, &st);
	if (err || (err = lookup_event(d, e, &ev)))
		return err;
	call_t c = {.op = RC_OP_WAIT, .stream = st, .event = ev};
	if ((err = enforce(d, &c)))
		return err;
	if (!ev->cap)
		return 0;
	if (st->cap == ev->cap) {
		for (size_t i = 0; i < ev->nodes.n; i++)
			if (!ints_has(&st->tail, ev->nodes.v[i]))
				ints_push(&st->tail, ev->nodes.v[i]);
		return 0;
	}
	if (!st->cap) {
		capture_fork(ev->cap, st, &ev->nodes);
		return 0;
	}
	return rc_fail("not-supported", "stream %#llx is in capture %llu and event %#llx was recorded in capture %llu: merging captures is not modelled",
		       (unsigned long long)s, (unsigned long long)st->cap->id, (unsigned long long)e, (unsigned long long)ev->cap->id);
}

int rc_sync_stream(rc_device *d, uint64_t s) {
	stream_t *st;
	int err = lookup_stream(d, s, &st);
	if (err)
		return err;
	call_t c = {.op = RC_OP_SYNC_STREAM, .stream = st};
	return enforce(d, &c);
}

int rc_sync_device(rc_device *d) {
	call_t c = {.op = RC_OP_SYNC_DEVICE};
	return enforce(d, &c);
}

int rc_query_event(rc_device *d, uint64_t e) {
	event_t *ev;
	int err = lookup_event(d, e, &ev);
	if (err)
		return err;
	call_t c = {.op = RC_OP_QUERY_EVENT, .event = ev};
	return enforce(d, &c);
}

int rc_sync_event(rc_device *d, uint64_t e) {
	event_t *ev;
	int err = lookup_event(d, e, &ev);
	if (err)
		return err;
	call_t c = {.op = RC_OP_SYNC_EVENT, .event = ev};
	return enforce(d, &c);
}

int rc_exchange_mode(rc_device *d, int mode, int *old) {
	if (mode < RC_GLOBAL || mode > RC_RELAXED)
		return rc_fail("invalid-value", "unknown capture mode %d", mode);
	int *slot = mode_slot(d);
	*old = *slot;
	*slot = mode;
	return 0;
}

int rc_begin_capture(rc_device *d, uint64_t s, int mode) {
	if (mode < RC_GLOBAL || mode > RC_RELAXED)
		return rc_fail("invalid-value", "unknown capture mode %d", mode);
	int err;
	if (s == 0) {
		/* handle 0 stands for the platform's default stream, which only the rules speak about */
		call_t c = {.op = RC_OP_BEGIN_CAPTURE, .default_stream = 1, .mode = mode};
		if ((err = enforce(d, &c)))
			return err;
	}
	stream_t *st;
	if ((err = lookup_stream(d, s, &st)))
		return err;
	call_t c = {.op = RC_OP_BEGIN_CAPTURE, .stream = st, .mode = mode};
	if ((err = enforce(d, &c)))
		return err;
	if (st->cap)
		return rc_fail("invalid-value", "stream %#llx is already in %s", (unsigned long long)s, cap_str(st->cap));
	capture_t *cp = calloc(1, sizeof *cp);
	if (!cp)
		abort();
	cp->id = ++d->last_capture;
	cp->origin = s;
	cp->mode = mode;
	cp->thread = pthread_self();
	cp->status = RC_STATUS_ACTIVE;
	ints none = {0};
	capture_fork(cp, st, &none);
	ptrs_push(&d->caps, cp);
	return 0;
}

int rc_end_capture(rc_device *d, uint64_t s, int instantiate, uint64_t *graph) {
	stream_t *st;
	int err = lookup_stream(d, s, &st);
	if (err)
		return err;
	call_t c = {.op = RC_OP_END_CAPTURE, .stream = st, .rules = instantiate ? RC_RULES_ALL : RC_RULES_BUT_INSTANTIATION};
	if ((err = enforce(d, &c)))
		return err;
	capture_t *cp = st->cap;
	if (!cp)
		return rc_fail("invalid-value", "stream %#llx is not capturing", (unsigned long long)s);
	if (cp->origin != s)
		return rc_fail("invalid-value", "stream %#llx did not begin %s", (unsigned long long)s, cap_str(cp));
	if (cp->status == RC_STATUS_INVALIDATED) {
		err = rc_fail("capture-invalidated", "%s was invalidated by an earlier error; no graph", cap_str(cp));
		terminate(d, cp);
		return err;
	}
	graph_t *g = calloc(1, sizeof *g);
	if (!g)
		abort();
	g->h = *graph = new_handle(d);
	g->capture = cp->id;
	g->nodes = cp->nodes;
	g->nnodes = cp->nnodes;
	cp->nodes = NULL;
	cp->nnodes = 0;
	ptrs_push(&d->graphs, g);
	terminate(d, cp);
	return 0;
}

int rc_capture_info(rc_device *d, uint64_t s, int *status, uint64_t *id, uint64_t *origin, int *mode) {
	stream_t *st;
	int err = lookup_stream(d, s, &st);
	if (err)
		return err;
	capture_t *cp = st->cap;
	*status = cp ? cp->status : RC_STATUS_NONE;
	*id = cp ? cp->id : 0;
	*origin = cp ? cp->origin : 0;
	*mode = cp ? cp->mode : 0;
	return 0;
}

static queue_t *queue_of(rc_device *d, uint64_t s) {
	for (size_t i = 0; i < d->pending.n; i++)
		if (((queue_t *)d->pending.v[i])->stream == s)
			return d->pending.v[i];
	queue_t *q = calloc(1, sizeof *q);
	if (!q)
		abort();
	q->stream = s;
	ptrs_push(&d->pending, q);
	return q;
}

static void queue_push(queue_t *q, const work_t *w) {
	if (q->n == q->cap) {
		q->cap = q->cap ? 2 * q->cap : 16;
		q->works = xrealloc(q->works, q->cap * sizeof *q->works);
	}
	q->works[q->n++] = *w;
}

/* sim Device.replayOrder: capture order, or with a seed a random pick among the ready nodes. */
static void replay(rc_device *d, const graph_t *g, queue_t *q) {
	if (!d->seeded) {
		for (size_t i = 0; i < g->nnodes; i++)
			queue_push(q, &g->nodes[i].w);
		return;
	}
	size_t n = g->nnodes;
	size_t *pending = calloc(n + 1, sizeof *pending);
	ints *children = calloc(n + 1, sizeof *children);
	ints ready = {0};
	if (!pending || !children)
		abort();
	for (size_t i = 0; i < n; i++) {
		pending[i] = g->nodes[i].deps.n;
		for (size_t k = 0; k < g->nodes[i].deps.n; k++)
			ints_push(&children[g->nodes[i].deps.v[k]], (int)i);
		if (g->nodes[i].deps.n == 0)
			ints_push(&ready, (int)i);
	}
	while (ready.n > 0) {
		size_t k = rng_intn(d, ready.n);
		int i = ready.v[k];
		memmove(&ready.v[k], &ready.v[k + 1], (ready.n - k - 1) * sizeof *ready.v);
		ready.n--;
		queue_push(q, &g->nodes[i].w);
		for (size_t j = 0; j < children[i].n; j++) {
			int ch = children[i].v[j];
			if (--pending[ch] == 0)
				ints_push(&ready, ch);
		}
	}
	for (size_t i = 0; i < n; i++)
		ints_free(&children[i]);
	free(children);
	free(pending);
	ints_free(&ready);
}

/* Not the simulator's: what the CUDA driver does with a graph whose copy names pinned host memory
 * freed with cuMemFreeHost since capture, even when a new allocation took the address (H200, driver
 * 13.0): up to 1 MiB the launch crashed the process; at 16 MiB it returned and the synchronisation
 * after it answered 719, the context lost. The fake answers 719 at the launch, and the device is
 * lost. replaycheck's bindings keep host memory a graph names (device/internal/bind/hosts.go), so
 * no launch of theirs should ever get here. */
static int freed_host(rc_device *d, const graph_t *gr) {
	for (size_t i = 0; i < gr->nnodes; i++) {
		range_t rs[3];
		size_t k = work_ranges(&gr->nodes[i].w, rs);
		for (size_t j = 0; j < k; j++) {
			int host;
			if (!in_region(&d->host, rs[j].addr))
				continue;
			alloc_t *a = containing(d, rs[j].addr, rs[j].bytes, &host);
			if (a && a->gen == gr->nodes[i].gens[j])
				continue;
			d->lost = 1;
			return rc_fail("device-lost",
				       "graph %#llx copies pinned host memory %#llx+%lld freed with cuMemFreeHost since capture: the "
				       "driver fails the replay and the context is lost (on an H200 a smaller copy crashed the process)",
				       (unsigned long long)gr->h, (unsigned long long)rs[j].addr, (long long)rs[j].bytes);
		}
	}
	return 0;
}

int rc_launch(rc_device *d, uint64_t g, uint64_t s, int freed_host_lost) {
	switch (take_fault(d, RC_FAULT_LAUNCH)) {
	case RC_FAULT_LAUNCH:
		return rc_fail("internal", "launch failed by injection (fault launch-fail)");
	case RC_FAULT_LOST:
		d->lost = 1;
		return rc_fail("device-lost", "the device was lost during the launch, by injection (fault device-lost); every later call fails");
	case RC_FAULT_HANG:
		hang_forever();
	}
	graph_t *gr;
	stream_t *st;
	int err = lookup_graph(d, g, &gr);
	if (err || (err = lookup_stream(d, s, &st)))
		return err;
	call_t c = {.op = RC_OP_LAUNCH, .stream = st, .graph = gr};
	if ((err = enforce(d, &c)) || (freed_host_lost && (err = freed_host(d, gr))))
		return err;
	if (st->cap)
		return rc_fail("not-supported", "stream %#llx is in %s: capturing a graph launch is not modelled", (unsigned long long)s,
			       cap_str(st->cap));
	replay(d, gr, queue_of(d, s));
	return 0;
}

int rc_destroy_graph(rc_device *d, uint64_t g) {
	graph_t *gr;
	int err = lookup_graph(d, g, &gr);
	if (err)
		return err;
	ptrs_remove(&d->graphs, gr);
	nodes_free(gr->nodes, gr->nnodes);
	free(gr);
	return 0;
}

int rc_instantiate(rc_device *d, uint64_t g, uint64_t *out) {
	graph_t *gr;
	int err = lookup_graph(d, g, &gr);
	if (err)
		return err;
	call_t c = {.op = RC_OP_END_CAPTURE, .rules = RC_RULES_INSTANTIATION, .graph = gr};
	if ((err = enforce(d, &c)))
		return err;
	graph_t *cl = calloc(1, sizeof *cl);
	if (!cl)
		abort();
	cl->h = *out = new_handle(d);
	cl->capture = gr->capture;
	cl->nnodes = gr->nnodes;
	cl->nodes = calloc(gr->nnodes + 1, sizeof *cl->nodes);
	if (!cl->nodes)
		abort();
	for (size_t i = 0; i < gr->nnodes; i++) {
		cl->nodes[i] = gr->nodes[i];
		cl->nodes[i].deps = ints_clone(&gr->nodes[i].deps);
	}
	ptrs_push(&d->graphs, cl);
	return 0;
}

int rc_exec_update(rc_device *d, uint64_t exec, uint64_t g, int *result, size_t *node) {
	graph_t *ex, *gr;
	int err = lookup_graph(d, exec, &ex);
	if (err || (err = lookup_graph(d, g, &gr)))
		return err;
	*result = RC_UPDATE_OK;
	*node = 0;
	size_t n = ex->nnodes < gr->nnodes ? ex->nnodes : gr->nnodes;
	for (size_t i = 0; i < n; i++) {
		const node_t *a = &ex->nodes[i], *b = &gr->nodes[i];
		*node = i;
		if (a->w.kind != b->w.kind) {
			*result = RC_UPDATE_NODE_TYPE;
			return 0;
		}
		int same = a->deps.n == b->deps.n;
		for (size_t k = 0; same && k < a->deps.n; k++)
			same = a->deps.v[k] == b->deps.v[k];
		if (!same) {
			*result = RC_UPDATE_TOPOLOGY;
			return 0;
		}
	}
	if (ex->nnodes != gr->nnodes) {
		*node = n;
		*result = RC_UPDATE_TOPOLOGY;
		return 0;
	}
	if (ex == gr)
		return 0;
	node_t *nodes = calloc(gr->nnodes + 1, sizeof *nodes);
	if (!nodes)
		abort();
	for (size_t i = 0; i < gr->nnodes; i++) {
		nodes[i] = gr->nodes[i];
		nodes[i].deps = ints_clone(&gr->nodes[i].deps);
	}
	nodes_free(ex->nodes, ex->nnodes);
	ex->nodes = nodes;
	ex->capture = gr->capture;
	return 0;
}

int rc_graph_nodes(rc_device *d, uint64_t g, size_t *n) {
	graph_t *gr;
	int err = lookup_graph(d, g, &gr);
	if (err)
		return err;
	*n = gr->nnodes;
	return 0;
}

int rc_graph_node_kind(rc_device *d, uint64_t g, size_t i, int *kind) {
	graph_t *gr;
	int err = lookup_graph(d, g, &gr);
	if (err)
		return err;
	if (i >= gr->nnodes)
		return rc_fail("invalid-value", "graph %#llx has %zu nodes, not %zu", (unsigned long long)g, gr->nnodes, i + 1);
	*kind = gr->nodes[i].w.kind;
	return 0;
}

int rc_graph_node_info(rc_device *d, uint64_t g, size_t i, rc_node_info *out) {
	int err = rc_graph_node_kind(d, g, i, &out->kind);
	if (err)
		return err;
	graph_t *gr = find_graph(d, g);
	const work_t *w = &gr->nodes[i].w;
	out->dst = w->dst.addr;
	out->src = w->src.addr;
	out->bytes = w->dst.bytes;
	out->dir = w->dir;
	out->value = w->value;
	out->elem = w->elem > 1 ? w->elem : 1;
	out->pattern = w->elem > 1 ? w->pattern : w->value;
	return 0;
}
