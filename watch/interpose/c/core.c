/* core.c: the interposer's socket, lock, call stacks and model (docs/watch-events.md).
 *
 * The constructor connects to RC_WATCH_SOCKET (a SOCK_SEQPACKET socket) and sends hello; without
 * the socket every wrapper passes its call through and nothing is sent. The model is host-side and
 * kept under one mutex: the live allocations (driver ones and annotated pool blocks, each in an
 * address-sorted array), the captures in progress, the streams and events in them, the graphs and
 * executable graphs with the allocation records their captured ranges lay in (kept, reference
 * counted, after their free), the private pools and the call stacks already sent. Events are sent
 * under the same mutex, in the order the model changed. Nothing here calls a driver: no
 * synchronisation, no device memory, no capture-state query.
 *
 * dlsym and dlvsym are ours: the real ones are found in libc's own symbol table (dlvsym) and
 * through it (dlsym), and what they return for a wrapped name is mapped to the wrapper by pointer
 * identity with the real library's exports, so versioned and per-thread variants need no table. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "rcw.h"

#define TLS __thread __attribute__((tls_model("initial-exec")))
#define MAX_FRAMES 32
#define LINE_MAX_BYTES 4096

/* ---- state ---- */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_dl_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_fd = -1;
atomic_int rcw_g_on;
int rcw_g_backend = RCW_CUDA | RCW_ACL;
static int g_refuse;
static int g_glibc_unwind; /* RC_WATCH_UNWIND=backtrace: glibc's backtrace() for every stack */
static int g_pid;
static atomic_uint g_epoch;
atomic_int rcw_g_active;
static atomic_int g_private_any;
static uintptr_t g_self_lo, g_self_hi;
static uintptr_t g_main_base; /* the program's load address: its frames name g_exe */
static char g_exe[1024];
static char g_sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

static TLS unsigned tl_epoch;
static TLS long tl_tid;

int rcw_private_declared(void) { return atomic_load_explicit(&g_private_any, memory_order_relaxed); }
int rcw_refuse(void) { return g_refuse; }

long rcw_tid(void) {
	unsigned ep = atomic_load_explicit(&g_epoch, memory_order_relaxed);
	if (!tl_tid || tl_epoch != ep) {
		tl_tid = (long)syscall(SYS_gettid);
		tl_epoch = ep;
	}
	return tl_tid;
}

/* ---- event lines ---- */

typedef struct {
	char b[LINE_MAX_BYTES];
	size_t n;
	int over;
} ev_t;

static void put_n(ev_t *e, const char *s, size_t n) {
	if (e->over || e->n + n > LINE_MAX_BYTES - 1) {
		e->over = 1;
		return;
	}
	memcpy(e->b + e->n, s, n);
	e->n += n;
}

static void put(ev_t *e, const char *s) { put_n(e, s, strlen(s)); }

static void put_hex(ev_t *e, uint64_t v) {
	char t[20];
	int i = 20;
	do {
		t[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	t[--i] = 'x';
	t[--i] = '0';
	put_n(e, t + i, (size_t)(20 - i));
}

static void put_dec(ev_t *e, int64_t v) {
	char t[24];
	int i = 24;
	uint64_t u = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
	do {
		t[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		t[--i] = '-';
	put_n(e, t + i, (size_t)(24 - i));
}

/* Paths and symbols: %, space, |, comma and newline escaped. */
static void put_esc(ev_t *e, const char *s) {
	for (; s && *s; s++) {
		switch (*s) {
		case '%': put(e, "%25"); break;
		case ' ': put(e, "%20"); break;
		case '|': put(e, "%7C"); break;
		case ',': put(e, "%2C"); break;
		case '\n': put(e, "%0A"); break;
		default: put_n(e, s, 1);
		}
	}
}

static void put_key_hex(ev_t *e, const char *key, uint64_t v) {
	put(e, key);
	put_hex(e, v);
}

static void put_key_dec(ev_t *e, const char *key, int64_t v) {
	put(e, key);
	put_dec(e, v);
}

static void put_stream(ev_t *e, const char *key, uint64_t s) {
	put(e, key);
	if (s & RCW_PTDS) {
		put(e, "ptds:");
		put_dec(e, (int64_t)(s & ~RCW_PTDS));
	} else {
		put_hex(e, s);
	}
}

static void ev_start(ev_t *e, const char *name) {
	e->n = 0;
	e->over = 0;
	put(e, name);
	put_key_dec(e, " pid=", g_pid);
	put_key_dec(e, " tid=", rcw_tid());
}

static void ev_call(ev_t *e, const char *call, uint32_t stack) {
	put(e, " call=");
	put(e, call);
	put_key_dec(e, " stack=", stack);
}

/* Events that cannot make a finding by themselves (docs/watch-events.md: clean launches of graphs
 * that name no private-pool block, allocations and frees outside every capture of memory nothing
 * names, and the stack events they name) wait here, lock held, whole lines: a send per launch
 * would double the cost of a graph launch. Every other event sends them first. */
#define DEFER_BYTES (64 * 1024)
static char g_defer[DEFER_BYTES];
static size_t g_defer_n;

/* Sends n bytes as one message, lock held. A failed send turns the interposer off for this
 * process. */
static void send_msg(const char *b, size_t n) {
	if (g_fd < 0 || !n)
		return;
	for (;;) {
		ssize_t r = send(g_fd, b, n, MSG_NOSIGNAL);
		if (r >= 0)
			return;
		if (errno != EINTR)
			break;
	}
	atomic_store(&rcw_g_on, 0);
	close(g_fd);
	g_fd = -1;
}

/* A run of clean launches waiting to be written: the same thread launching the same executable
 * graph on the same stream from the same call stack, n times in a row (docs/watch-events.md:
 * launch's n). Formatting a line per launch cost as much as the rest of the interposer's work. */
static struct {
	int on;
	long tid;
	const char *call;
	uint32_t stack;
	uint64_t exec, stream, n;
} g_run;

/* Appends a whole line to the deferred events, sending them first when it would not fit. */
static void defer_append(const ev_t *e) {
	if (g_defer_n + e->n > DEFER_BYTES) {
		send_msg(g_defer, g_defer_n);
		g_defer_n = 0;
	}
	memcpy(g_defer + g_defer_n, e->b, e->n);
	g_defer_n += e->n;
}

/* Writes the run of clean launches, if any, as one line with the deferred events (lock held). */
static void run_close(void) {
	if (!g_run.on)
		return;
	g_run.on = 0;
	ev_t e;
	e.n = 0;
	e.over = 0;
	put(&e, "launch");
	put_key_dec(&e, " pid=", g_pid);
	put_key_dec(&e, " tid=", g_run.tid);
	ev_call(&e, g_run.call, g_run.stack);
	put_key_hex(&e, " exec=", g_run.exec);
	put_stream(&e, " stream=", g_run.stream);
	put(&e, " stale=0 refused=0");
	if (g_run.n > 1)
		put_key_dec(&e, " n=", (int64_t)g_run.n);
	e.b[e.n++] = '\n';
	defer_append(&e);
}

/* Sends the deferred events, lock held. */
static void ev_flush(void) {
	run_close();
	send_msg(g_defer, g_defer_n);
	g_defer_n = 0;
}

/* Sends one line at once, after whatever waits, lock held. */
static void ev_send(ev_t *e) {
	if (g_fd < 0)
		return;
	e->b[e->n++] = '\n';
	ev_flush();
	send_msg(e->b, e->n);
}

/* Lets one line wait with the others, lock held. */
static void ev_defer(ev_t *e) {
	if (g_fd < 0)
		return;
	e->b[e->n++] = '\n';
	run_close();
	defer_append(e);
}

/* A clean launch that may wait: it extends the run in progress or starts one (lock held). */
static void launch_defer(const char *call, uint32_t stack, uint64_t exec, uint64_t stream) {
	long tid = rcw_tid();
	if (g_run.on && g_run.tid == tid && g_run.call == call && g_run.stack == stack && g_run.exec == exec &&
	    g_run.stream == stream) {
		g_run.n++;
		return;
	}
	run_close();
	g_run.on = 1;
	g_run.tid = tid;
	g_run.call = call;
	g_run.stack = stack;
	g_run.exec = exec;
	g_run.stream = stream;
	g_run.n = 1;
}

/* ---- call stacks ---- */

typedef struct {
	void *pc[MAX_FRAMES];
	int n;
} stk_t;

typedef struct {
	uint64_t hash;
	uint32_t id;
	int n;
	void **pc;
} stk_ent;

static stk_ent *g_stk;
static size_t g_stk_cap, g_stk_n;
static uint32_t g_stk_next = 1;

/* Captures the caller's stack, the interposer's own frames left out (outside the lock). */
static void stk_capture(stk_t *s) {
	void *raw[MAX_FRAMES + 8];
	int n = g_glibc_unwind ? backtrace(raw, MAX_FRAMES + 8) : rcw_backtrace(raw, MAX_FRAMES + 8), i = 0;
	while (i < n && (uintptr_t)raw[i] >= g_self_lo && (uintptr_t)raw[i] < g_self_hi)
		i++;
	s->n = 0;
	for (; i < n && s->n < MAX_FRAMES; i++)
		s->pc[s->n++] = raw[i];
}

static uint64_t stk_hash(const stk_t *s) {
	uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)s->n;
	for (int i = 0; i < s->n; i++) {
		h ^= (uint64_t)(uintptr_t)s->pc[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h;
}

static void stk_send(uint32_t id, const stk_t *s) {
	ev_t e;
	e.n = 0;
	e.over = 0;
	put(&e, "stack");
	put_key_dec(&e, " pid=", g_pid);
	put_key_dec(&e, " id=", id);
	put(&e, " frames=");
	for (int i = 0; i < s->n; i++) {
		size_t mark = e.n;
		Dl_info info;
		memset(&info, 0, sizeof info);
		if (!dladdr(s->pc[i], &info))
			memset(&info, 0, sizeof info);
		if (i)
			put(&e, "|");
		put_hex(&e, (uint64_t)(uintptr_t)s->pc[i]);
		put(&e, ",");
		put_hex(&e, (uint64_t)(uintptr_t)info.dli_fbase);
		put(&e, ",");
		/* dladdr names the program by argv[0], which may be relative. */
		put_esc(&e, (uintptr_t)info.dli_fbase == g_main_base && g_exe[0] ? g_exe : info.dli_fname);
		put(&e, ",");
		put_esc(&e, info.dli_sname);
		if (e.over) {
			e.n = mark;
			e.over = 0;
			break;
		}
	}
	ev_defer(&e); /* before every event that names it, which sends it at the latest */
}

/* The stack's id, sending a stack event the first time (lock held). */
static uint32_t stk_intern(const stk_t *s) {
	uint64_t h = stk_hash(s);
	if (g_stk_cap) {
		for (size_t i = h & (g_stk_cap - 1);; i = (i + 1) & (g_stk_cap - 1)) {
			stk_ent *x = &g_stk[i];
			if (!x->id)
				break;
			if (x->hash == h && x->n == s->n && !memcmp(x->pc, s->pc, sizeof(void *) * (size_t)s->n))
				return x->id;
		}
	}
	if ((g_stk_n + 1) * 2 > g_stk_cap) {
		size_t cap = g_stk_cap ? g_stk_cap * 2 : 256;
		stk_ent *t = calloc(cap, sizeof *t);
		if (!t)
			return 0;
		for (size_t i = 0; i < g_stk_cap; i++) {
			if (!g_stk[i].id)
				continue;
			size_t j = g_stk[i].hash & (cap - 1);
			while (t[j].id)
				j = (j + 1) & (cap - 1);
			t[j] = g_stk[i];
		}
		free(g_stk);
		g_stk = t;
		g_stk_cap = cap;
	}
	void **pc = malloc(sizeof(void *) * (size_t)(s->n ? s->n : 1));
	if (!pc)
		return 0;
	memcpy(pc, s->pc, sizeof(void *) * (size_t)s->n);
	size_t i = h & (g_stk_cap - 1);
	while (g_stk[i].id)
		i = (i + 1) & (g_stk_cap - 1);
	uint32_t id = g_stk_next++;
	g_stk[i] = (stk_ent){.hash = h, .id = id, .n = s->n, .pc = pc};
	g_stk_n++;
	stk_send(id, s);
	return id;
}

/* Starts event name for call, its stack interned first (which may send a stack event before it);
 * returns the stack's id (lock held). */
static uint32_t ev_open(ev_t *e, const char *name, const char *call, const stk_t *s) {
	uint32_t id = stk_intern(s);
	ev_start(e, name);
	ev_call(e, call, id);
	return id;
}

static void stk_clear(void) {
	for (size_t i = 0; i < g_stk_cap; i++)
		free(g_stk[i].pc);
	free(g_stk);
	g_stk = NULL;
	g_stk_cap = g_stk_n = 0;
	g_stk_next = 1;
}

/* ---- a map from handles to pointers (open addressing, backward-shift deletion) ---- */

typedef struct {
	uint64_t key;
	void *val;
} hm_ent;

typedef struct {
	hm_ent *t;
	size_t cap, n;
} hmap;

static size_t hm_slot(const hmap *m, uint64_t k) { return (size_t)((k * 0x9e3779b97f4a7c15ull) >> 20) & (m->cap - 1); }

static void *hm_get(const hmap *m, uint64_t k) {
	if (!m->cap)
		return NULL;
	for (size_t i = hm_slot(m, k);; i = (i + 1) & (m->cap - 1)) {
		if (!m->t[i].val)
			return NULL;
		if (m->t[i].key == k)
			return m->t[i].val;
	}
}

/* Puts v (non-NULL) at k; returns what was there. */
static void *hm_put(hmap *m, uint64_t k, void *v) {
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		hm_ent *t = calloc(cap, sizeof *t);
		if (!t)
			return v; /* out of memory: the entry is dropped, the caller frees v */
		hmap nm = {t, cap, 0};
		for (size_t i = 0; i < m->cap; i++) {
			if (m->t[i].val) {
				size_t j = hm_slot(&nm, m->t[i].key);
				while (t[j].val)
					j = (j + 1) & (cap - 1);
				t[j] = m->t[i];
			}
		}
		free(m->t);
		m->t = t;
		m->cap = cap;
	}
	size_t i = hm_slot(m, k);
	while (m->t[i].val && m->t[i].key != k)
		i = (i + 1) & (m->cap - 1);
	void *old = m->t[i].val;
	if (!old)
		m->n++;
	m->t[i] = (hm_ent){k, v};
	return old;
}

static void *hm_del(hmap *m, uint64_t k) {
	if (!m->cap)
		return NULL;
	size_t i = hm_slot(m, k);
	while (m->t[i].val && m->t[i].key != k)
		i = (i + 1) & (m->cap - 1);
	void *old = m->t[i].val;
	if (!old)
		return NULL;
	m->n--;
	for (size_t j = (i + 1) & (m->cap - 1); m->t[j].val; j = (j + 1) & (m->cap - 1)) {
		size_t home = hm_slot(m, m->t[j].key);
		/* j's entry may move to the hole i when its home is not in (i, j] cyclically. */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			m->t[i] = m->t[j];
			i = j;
		}
	}
	m->t[i] = (hm_ent){0, NULL};
	return old;
}

/* ---- allocations ---- */

/* An allocation: live until freed; refs counts the captures, graphs and executable graphs that
 * name it, which keep the record after its free. gen is 1 for the first allocation at its address,
 * then 2... */
typedef struct rec {
	uint64_t addr, size, pool;
	uint32_t gen;
	uint8_t kind, live, in_capture;
	int refs;
} rec;

typedef struct {
	rec **v;
	size_t n, cap;
} recvec;

static recvec g_drv; /* driver allocations: device, host, async */
static recvec g_blk; /* annotated pool blocks */
static hmap g_gens;  /* address -> last generation */
static uint64_t *g_private;
static size_t g_private_n, g_private_cap;

/* Index of the first record whose addr is above x. */
static size_t rv_upper(const recvec *v, uint64_t x) {
	size_t lo = 0, hi = v->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v->v[mid]->addr <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static rec *rv_find(const recvec *v, uint64_t x) {
	size_t i = rv_upper(v, x);
	if (!i)
		return NULL;
	rec *r = v->v[i - 1];
	return x - r->addr < r->size ? r : NULL;
}

static void rec_release(rec *r) {
	if (!r->live && r->refs <= 0)
		free(r);
}

static void rv_remove_at(recvec *v, size_t i) {
	memmove(v->v + i, v->v + i + 1, (v->n - i - 1) * sizeof *v->v);
	v->n--;
}

/* Ends r's life in the model (it was freed, or another allocation took its range). */
static void rec_kill(recvec *v, size_t i) {
	rec *r = v->v[i];
	rv_remove_at(v, i);
	r->live = 0;
	rec_release(r);
}

static void rv_insert(recvec *v, rec *r) {
	/* Whatever overlaps r is gone: a free we did not see, or one whose event lost the race. */
	size_t i = rv_upper(v, r->addr);
	if (i && v->v[i - 1]->addr + v->v[i - 1]->size > r->addr)
		rec_kill(v, --i);
	while (i < v->n && v->v[i]->addr < r->addr + r->size)
		rec_kill(v, i);
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 256;
		rec **t = realloc(v->v, cap * sizeof *t);
		if (!t)
			return;
		v->v = t;
		v->cap = cap;
	}
	memmove(v->v + i + 1, v->v + i, (v->n - i) * sizeof *v->v);
	v->v[i] = r;
	v->n++;
}

static int is_private(uint64_t pool) {
	for (size_t i = 0; i < g_private_n; i++)
		if (g_private[i] == pool)
			return 1;
	return 0;
}

/* ---- captures, streams, events, graphs ---- */

typedef struct {
	rec **v;
	size_t n, cap;
} reflist;

typedef struct {
	int id, active, mode;
	long tid;
	uint64_t stream;
	reflist recs;
} cap_t;

typedef struct {
	uint64_t key;
	cap_t *c;
} keycap;

/* A graph or executable graph: the allocation records its captured ranges lay in, distinct. */
typedef struct {
	int capture;
	reflist recs;
} graph_t;

static cap_t **g_caps;
static size_t g_caps_n, g_caps_cap;
static keycap *g_streams; /* streams in a capture */
static size_t g_streams_n, g_streams_cap;
static keycap *g_events; /* events recorded in a capture */
static size_t g_events_n, g_events_cap;
static hmap g_graphs, g_execs;

/* The captures the calling thread began and has not ended, by id, of this process (epoch). */
static TLS int tl_caps[16];
static TLS int tl_ncaps;
static TLS unsigned tl_caps_epoch;

static void rl_add(reflist *l, rec *r) {
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		rec **t = realloc(l->v, cap * sizeof *t);
		if (!t)
			return;
		l->v = t;
		l->cap = cap;
	}
	l->v[l->n++] = r;
	r->refs++;
}

static void rl_clear(reflist *l) {
	for (size_t i = 0; i < l->n; i++) {
		l->v[i]->refs--;
		rec_release(l->v[i]);
	}
	free(l->v);
	*l = (reflist){0};
}

static int ptr_cmp(const void *a, const void *b) {
	uintptr_t x = (uintptr_t) * (rec *const *)a, y = (uintptr_t) * (rec *const *)b;
	return x < y ? -1 : x > y;
}

/* Distinct records only: what a launch checks is computed once, here. */
static void rl_dedup(reflist *l) {
	if (l->n < 2)
		return;
	qsort(l->v, l->n, sizeof *l->v, ptr_cmp);
	size_t k = 1;
	for (size_t i = 1; i < l->n; i++) {
		if (l->v[i] == l->v[k - 1])
			l->v[i]->refs--; /* still named by the one kept */
		else
			l->v[k++] = l->v[i];
	}
	l->n = k;
}

static void rl_copy(reflist *dst, const reflist *src) {
	for (size_t i = 0; i < src->n; i++)
		rl_add(dst, src->v[i]);
}

static void graph_free(graph_t *g) {
	if (!g)
		return;
	rl_clear(&g->recs);
	free(g);
}

static keycap *kc_find(keycap *a, size_t n, uint64_t key) {
	for (size_t i = 0; i < n; i++)
		if (a[i].key == key)
			return &a[i];
	return NULL;
}

static void kc_set(keycap **a, size_t *n, size_t *cap, uint64_t key, cap_t *c) {
	keycap *x = kc_find(*a, *n, key);
	if (x) {
		x->c = c;
		return;
	}
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		keycap *t = realloc(*a, nc * sizeof *t);
		if (!t)
			return;
		*a = t;
		*cap = nc;
	}
	(*a)[(*n)++] = (keycap){key, c};
}

static void kc_drop(keycap *a, size_t *n, uint64_t key) {
	for (size_t i = 0; i < *n; i++) {
		if (a[i].key == key) {
			a[i] = a[--*n];
			return;
		}
	}
}

static void kc_drop_cap(keycap *a, size_t *n, const cap_t *c) {
	for (size_t i = 0; i < *n;) {
		if (a[i].c == c)
			a[i] = a[--*n];
		else
			i++;
	}
}

static cap_t *stream_cap(uint64_t stream) {
	keycap *x = kc_find(g_streams, g_streams_n, stream);
	return x && x->c->active ? x->c : NULL;
}

static cap_t *cap_by_id(int id) { return id > 0 && (size_t)id <= g_caps_n ? g_caps[id - 1] : NULL; }

/* The capture the calling thread began most recently and that is still in progress, 0 if none. */
static int thread_tcap(void) {
	if (tl_caps_epoch != atomic_load_explicit(&g_epoch, memory_order_relaxed)) {
		tl_ncaps = 0;
		tl_caps_epoch = atomic_load_explicit(&g_epoch, memory_order_relaxed);
	}
	while (tl_ncaps > 0) {
		cap_t *c = cap_by_id(tl_caps[tl_ncaps - 1]);
		if (c && c->active)
			return c->id;
		tl_ncaps--;
	}
	return 0;
}

static void thread_push_cap(int id) {
	thread_tcap();
	if (tl_ncaps == (int)(sizeof tl_caps / sizeof tl_caps[0])) {
		memmove(tl_caps, tl_caps + 1, sizeof tl_caps - sizeof tl_caps[0]);
		tl_ncaps--;
	}
	tl_caps[tl_ncaps++] = id;
}

/* The records holding [addr, addr+bytes) go into c: the pool block and its driver segment at
 * each end of the range. */
static void cap_add_range(cap_t *c, uint64_t addr, uint64_t bytes) {
	rec *seen[4] = {0};
	int k = 0;
	uint64_t ends[2] = {addr, bytes > 1 ? addr + bytes - 1 : addr};
	for (int e = 0; e < 2; e++) {
		rec *rs[2] = {rv_find(&g_blk, ends[e]), rv_find(&g_drv, ends[e])};
		for (int j = 0; j < 2; j++) {
			rec *r = rs[j];
			if (!r || r == seen[0] || r == seen[1] || r == seen[2] || r == seen[3])
				continue;
			seen[k++] = r;
			rl_add(&c->recs, r);
		}
	}
}

/* ---- model reset (fork) ---- */

static void model_clear(void) {
	for (size_t i = 0; i < g_graphs.cap; i++)
		graph_free(g_graphs.t[i].val);
	for (size_t i = 0; i < g_execs.cap; i++)
		graph_free(g_execs.t[i].val);
	free(g_graphs.t);
	free(g_execs.t);
	g_graphs = g_execs = (hmap){0};
	for (size_t i = 0; i < g_caps_n; i++) {
		rl_clear(&g_caps[i]->recs);
		free(g_caps[i]);
	}
	free(g_caps);
	g_caps = NULL;
	g_caps_n = g_caps_cap = 0;
	atomic_store(&rcw_g_active, 0);
	free(g_streams);
	free(g_events);
	g_streams = g_events = NULL;
	g_streams_n = g_streams_cap = g_events_n = g_events_cap = 0;
	recvec *vs[2] = {&g_drv, &g_blk};
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < vs[k]->n; i++)
			free(vs[k]->v[i]); /* every reference is gone: the lists above are cleared */
		free(vs[k]->v);
		*vs[k] = (recvec){0};
	}
	free(g_gens.t);
	g_gens = (hmap){0};
	free(g_private);
	g_private = NULL;
	g_private_n = g_private_cap = 0;
	atomic_store(&g_private_any, 0);
	stk_clear();
}

/* ---- the wrappers' calls ---- */

static const char *kind_name(int k) {
	switch (k) {
	case RCW_HOST: return "host";
	case RCW_ASYNC: return "async";
	case RCW_POOL: return "pool";
	}
	return "device";
}

static const char *mode_name(int m) {
	switch (m) {
	case 1: return "thread-local";
	case 2: return "relaxed";
	}
	return "global";
}

static void lock(void) { pthread_mutex_lock(&g_lock); }
static void unlock(void) { pthread_mutex_unlock(&g_lock); }

static void do_alloc(const char *call, const stk_t *s, uint64_t addr, uint64_t size, int kind, uint64_t pool, uint64_t stream) {
	rec *r = calloc(1, sizeof *r);
	lock();
	if (r) {
		uintptr_t gen = (uintptr_t)hm_get(&g_gens, addr) + 1;
		hm_put(&g_gens, addr, (void *)gen);
		*r = (rec){.addr = addr, .size = size ? size : 1, .pool = pool, .gen = (uint32_t)gen, .kind = (uint8_t)kind, .live = 1,
			   .in_capture = atomic_load(&rcw_g_active) > 0};
		rv_insert(kind == RCW_POOL ? &g_blk : &g_drv, r);
	}
	ev_t e;
	ev_open(&e, "alloc", call, s);
	put_key_hex(&e, " addr=", addr);
	put_key_dec(&e, " size=", (int64_t)size);
	put(&e, " kind=");
	put(&e, kind_name(kind));
	put_key_hex(&e, " pool=", pool);
	put_stream(&e, " stream=", stream);
	if (atomic_load(&rcw_g_active) > 0)
		ev_send(&e); /* alloc-in-capture, or a private block the checker must see now */
	else
		ev_defer(&e);
	unlock();
}

void rcw_alloc(const char *call, uint64_t addr, uint64_t size, int kind, uint64_t pool, uint64_t stream) {
	stk_t s;
	stk_capture(&s);
	do_alloc(call, &s, addr, size, kind, pool, stream);
}

static void do_free(const char *call, const stk_t *s, uint64_t addr, int kind, uint64_t pool, uint64_t stream) {
	lock();
	recvec *v = kind == RCW_POOL ? &g_blk : &g_drv;
	size_t i = rv_upper(v, addr);
	int named = 0; /* a capture, graph or executable graph names it: free-captured */
	if (i && v->v[i - 1]->addr == addr && (kind != RCW_POOL || v->v[i - 1]->pool == pool)) {
		rec *r = v->v[i - 1];
		kind = r->kind;
		pool = r->pool;
		named = r->refs > 0;
		rec_kill(v, i - 1);
	}
	ev_t e;
	ev_open(&e, "free", call, s);
	put_key_hex(&e, " addr=", addr);
	put(&e, " kind=");
	put(&e, kind_name(kind));
	put_key_hex(&e, " pool=", pool);
	put_stream(&e, " stream=", stream);
	if (named || atomic_load(&rcw_g_active) > 0)
		ev_send(&e);
	else
		ev_defer(&e);
	unlock();
}

void rcw_free(const char *call, uint64_t addr, int kind, uint64_t stream) {
	stk_t s;
	stk_capture(&s);
	do_free(call, &s, addr, kind, 0, stream);
}

void rcw_begin(const char *call, uint64_t stream, int mode) {
	stk_t s;
	stk_capture(&s);
	cap_t *c = calloc(1, sizeof *c);
	if (!c)
		return;
	lock();
	if (g_caps_n == g_caps_cap) {
		size_t cap = g_caps_cap ? g_caps_cap * 2 : 16;
		cap_t **t = realloc(g_caps, cap * sizeof *t);
		if (!t) {
			unlock();
			free(c);
			return;
		}
		g_caps = t;
		g_caps_cap = cap;
	}
	g_caps[g_caps_n++] = c;
	*c = (cap_t){.id = (int)g_caps_n, .active = 1, .mode = mode, .tid = rcw_tid(), .stream = stream};
	atomic_fetch_add(&rcw_g_active, 1);
	kc_set(&g_streams, &g_streams_n, &g_streams_cap, stream, c);
	thread_push_cap(c->id);
	ev_t e;
	ev_open(&e, "begin", call, &s);
	put_stream(&e, " stream=", stream);
	put_key_dec(&e, " capture=", c->id);
	put(&e, " mode=");
	put(&e, mode_name(mode));
	ev_send(&e);
	unlock();
}

void rcw_end(const char *call, uint64_t stream, uint64_t graph, int ok, int acl) {
	stk_t s;
	stk_capture(&s);
	graph_t *g = calloc(1, sizeof *g);
	lock();
	keycap *x = kc_find(g_streams, g_streams_n, stream);
	cap_t *c = x && x->c->active && x->c->stream == stream ? x->c : NULL;
	if (!c) {
		unlock();
		free(g);
		return;
	}
	c->active = 0;
	atomic_fetch_sub(&rcw_g_active, 1);
	kc_drop_cap(g_streams, &g_streams_n, c);
	kc_drop_cap(g_events, &g_events_n, c);
	if (ok && graph && g) {
		g->capture = c->id;
		g->recs = c->recs; /* the capture's references move to the graph */
		c->recs = (reflist){0};
		rl_dedup(&g->recs);
		graph_free(hm_put(&g_graphs, graph, g));
		if (acl) {
			graph_t *ex = calloc(1, sizeof *ex);
			if (ex) {
				ex->capture = c->id;
				rl_copy(&ex->recs, &g->recs);
				graph_free(hm_put(&g_execs, graph, ex));
			}
		}
		g = NULL;
	} else {
		rl_clear(&c->recs);
	}
	ev_t e;
	uint32_t id = ev_open(&e, "end", call, &s);
	put_stream(&e, " stream=", stream);
	put_key_dec(&e, " capture=", c->id);
	put_key_hex(&e, " graph=", ok ? graph : 0);
	put_key_dec(&e, " ok=", ok);
	ev_send(&e);
	if (ok && graph && acl) {
		ev_start(&e, "instantiate");
		ev_call(&e, call, id);
		put_key_hex(&e, " graph=", graph);
		put_key_hex(&e, " exec=", graph);
		ev_send(&e);
	}
	unlock();
	free(g);
}

void rcw_instantiate(const char *call, uint64_t graph, uint64_t exec) {
	stk_t s;
	stk_capture(&s);
	graph_t *ex = calloc(1, sizeof *ex);
	lock();
	if (ex) {
		graph_t *g = hm_get(&g_graphs, graph);
		if (g) {
			ex->capture = g->capture;
			rl_copy(&ex->recs, &g->recs);
		}
		graph_free(hm_put(&g_execs, exec, ex));
	}
	ev_t e;
	ev_open(&e, "instantiate", call, &s);
	put_key_hex(&e, " graph=", graph);
	put_key_hex(&e, " exec=", exec);
	ev_send(&e);
	unlock();
}

void rcw_update(const char *call, uint64_t exec, uint64_t graph, int ok) {
	stk_t s;
	stk_capture(&s);
	lock();
	graph_t *ex = hm_get(&g_execs, exec);
	if (ok && ex) {
		graph_t *g = hm_get(&g_graphs, graph);
		reflist old = ex->recs;
		ex->recs = (reflist){0};
		if (g) {
			ex->capture = g->capture;
			rl_copy(&ex->recs, &g->recs);
		}
		rl_clear(&old);
	}
	ev_t e;
	ev_open(&e, "update", call, &s);
	put_key_hex(&e, " exec=", exec);
	put_key_hex(&e, " graph=", graph);
	put_key_dec(&e, " ok=", ok);
	ev_send(&e);
	unlock();
}

/* Stale: an allocation the graph names was freed, unless it was a private pool's block and its
 * range is now free or held by a block of the same pool allocated during a capture. *shared says
 * whether the graph names a private pool's block (its launches matter to shared-concurrent). */
static int exec_stale(const graph_t *ex, int *shared) {
	*shared = 0;
	for (size_t i = 0; i < ex->recs.n; i++) {
		const rec *r = ex->recs.v[i];
		if (r->kind == RCW_POOL && is_private(r->pool))
			*shared = 1;
		if (r->live)
			continue;
		if (r->kind == RCW_POOL && is_private(r->pool)) {
			const rec *now = rv_find(&g_blk, r->addr);
			if (!now || (now->pool == r->pool && now->in_capture))
				continue;
		}
		return 1;
	}
	return 0;
}

int rcw_launch(const char *call, uint64_t exec, uint64_t stream) {
	stk_t s;
	stk_capture(&s);
	lock();
	graph_t *ex = hm_get(&g_execs, exec);
	int shared = 0;
	int stale = ex && exec_stale(ex, &shared), refused = stale && g_refuse;
	uint32_t id = stk_intern(&s);
	if (!stale && !shared && g_fd >= 0) {
		launch_defer(call, id, exec, stream);
		unlock();
		return 0;
	}
	ev_t e;
	ev_start(&e, "launch");
	ev_call(&e, call, id);
	put_key_hex(&e, " exec=", exec);
	put_stream(&e, " stream=", stream);
	put_key_dec(&e, " stale=", stale);
	put_key_dec(&e, " refused=", refused);
	ev_send(&e); /* stale, or its graph shares a private pool's block */
	unlock();
	return refused;
}

static void destroy(const char *call, const char *name, const char *key, hmap *m, uint64_t h) {
	stk_t s;
	stk_capture(&s);
	lock();
	graph_free(hm_del(m, h));
	ev_t e;
	ev_open(&e, name, call, &s);
	put_key_hex(&e, key, h);
	ev_send(&e);
	unlock();
}

void rcw_destroy_exec(const char *call, uint64_t exec) { destroy(call, "destroy-exec", " exec=", &g_execs, exec); }

void rcw_destroy_graph(const char *call, uint64_t graph) { destroy(call, "destroy-graph", " graph=", &g_graphs, graph); }

void rcw_mode(const char *call, int mode) {
	stk_t s;
	stk_capture(&s);
	lock();
	ev_t e;
	ev_open(&e, "mode", call, &s);
	put(&e, " mode=");
	put(&e, mode_name(mode));
	ev_send(&e);
	unlock();
}

void rcw_record(const char *call, uint64_t event, uint64_t stream) {
	int send_it = rcw_private_declared();
	if (!send_it && !rcw_capturing())
		return; /* no capture: no event carries one (each capture's end dropped its events) */
	stk_t s;
	if (send_it)
		stk_capture(&s);
	lock();
	cap_t *c = stream_cap(stream);
	if (c)
		kc_set(&g_events, &g_events_n, &g_events_cap, event, c);
	else
		kc_drop(g_events, &g_events_n, event);
	if (send_it) {
		ev_t e;
		ev_open(&e, "record", call, &s);
		put_key_hex(&e, " event=", event);
		put_stream(&e, " stream=", stream);
		ev_send(&e);
	}
	unlock();
}

void rcw_wait(const char *call, uint64_t stream, uint64_t event) {
	int priv = rcw_private_declared();
	if (!priv && !rcw_capturing())
		return;
	stk_t s;
	stk_capture(&s);
	lock();
	keycap *x = kc_find(g_events, g_events_n, event);
	cap_t *c = x && x->c->active ? x->c : NULL;
	int join = c && stream_cap(stream) != c;
	if (join)
		kc_set(&g_streams, &g_streams_n, &g_streams_cap, stream, c);
	if (join || priv) {
		ev_t e;
		ev_open(&e, join ? "join" : "wait", call, &s);
		put_stream(&e, " stream=", stream);
		if (join)
			put_key_dec(&e, " capture=", c->id);
		put_key_hex(&e, " event=", event);
		ev_send(&e);
	}
	unlock();
}

void rcw_sync(const char *call, int what, uint64_t stream, uint64_t event) {
	if (!rcw_private_declared())
		return;
	stk_t s;
	stk_capture(&s);
	lock();
	ev_t e;
	ev_open(&e, "sync", call, &s);
	put(&e, what == RCW_SYNC_DEVICE ? " what=device" : what == RCW_SYNC_STREAM ? " what=stream" : " what=event");
	put_stream(&e, " stream=", stream);
	put_key_hex(&e, " event=", event);
	ev_send(&e);
	unlock();
}

/* The op's header, or 0 when neither the stream nor the calling thread is in a capture (lock
 * held; *c is the stream's capture). */
static int op_start(ev_t *e, const char *call, const stk_t *s, uint64_t stream, const char *what, cap_t **c) {
	*c = stream_cap(stream);
	int tcap = thread_tcap();
	if (!*c && !tcap)
		return 0;
	ev_open(e, "op", call, s);
	put_stream(e, " stream=", stream);
	put_key_dec(e, " capture=", *c ? (*c)->id : 0);
	put_key_dec(e, " tcap=", tcap);
	put(e, " what=");
	put(e, what);
	return 1;
}

static void put_range(ev_t *e, const char *key, uint64_t addr, uint64_t bytes) {
	put(e, key);
	put_hex(e, addr);
	put(e, "+");
	put_dec(e, (int64_t)bytes);
}

/* A copy (src set: w = dst, r = src) or a memset (w = dst) on stream. */
static void copy_op(const char *call, const char *what, uint64_t stream, uint64_t dst, const uint64_t *src, uint64_t bytes) {
	if (!rcw_capturing())
		return;
	stk_t s;
	stk_capture(&s);
	lock();
	ev_t e;
	cap_t *c;
	if (op_start(&e, call, &s, stream, what, &c)) {
		put_range(&e, " w=", dst, bytes);
		if (src)
			put_range(&e, " r=", *src, bytes);
		if (c) {
			cap_add_range(c, dst, bytes);
			if (src)
				cap_add_range(c, *src, bytes);
		}
		ev_send(&e);
	}
	unlock();
}

void rcw_copy(const char *call, uint64_t stream, uint64_t dst, uint64_t src, uint64_t bytes) {
	copy_op(call, "copy", stream, dst, &src, bytes);
}

void rcw_memset(const char *call, uint64_t stream, uint64_t dst, uint64_t bytes) {
	copy_op(call, "memset", stream, dst, NULL, bytes);
}

static void send_note(const char *call, uint32_t stack, const char *text) {
	ev_t e;
	ev_start(&e, "note");
	ev_call(&e, call, stack);
	put(&e, " text=");
	put_esc(&e, text);
	ev_send(&e);
}

static void kernel_op(const char *call, uint64_t stream, uint64_t func, const rcw_arg *args, size_t nargs, int nolayout,
		      uint64_t block, uint64_t block_bytes, const char *note) {
	stk_t s;
	stk_capture(&s);
	lock();
	ev_t e;
	cap_t *c;
	if (note)
		send_note(call, stk_intern(&s), note);
	if (op_start(&e, call, &s, stream, "kernel", &c)) {
		put_key_hex(&e, " func=", func);
		if (nolayout)
			put(&e, " nolayout=1");
		if (block && block_bytes) {
			put_range(&e, " r=", block, block_bytes);
			if (c)
				cap_add_range(c, block, block_bytes);
		}
		for (size_t i = 0; i < nargs && !nolayout; i++) {
			if (!args[i].p)
				continue;
			for (size_t off = 0; off + 8 <= args[i].size; off += 8) {
				uint64_t v;
				memcpy(&v, (const char *)args[i].p + off, 8);
				rec *r = rv_find(&g_blk, v);
				if (!r)
					r = rv_find(&g_drv, v);
				if (!r)
					continue;
				size_t mark = e.n;
				put(&e, " arg=");
				put_dec(&e, (int64_t)i);
				put(&e, ":");
				put_dec(&e, (int64_t)off);
				put(&e, ":");
				put_hex(&e, v);
				if (e.over) {
					e.n = mark;
					e.over = 0;
					break;
				}
				if (c)
					cap_add_range(c, v, 1);
			}
		}
		ev_send(&e);
	}
	unlock();
}

void rcw_kernel(const char *call, uint64_t stream, uint64_t func, const rcw_arg *args, size_t nargs, int nolayout,
		const char *note) {
	if (rcw_capturing())
		kernel_op(call, stream, func, args, nargs, nolayout, 0, 0, note);
}

void rcw_kernel_block(const char *call, uint64_t stream, uint64_t func, uint64_t block, uint64_t bytes, const char *note) {
	if (rcw_capturing())
		kernel_op(call, stream, func, NULL, 0, 1, block, bytes, note);
}

int rcw_device_memory(uint64_t addr) {
	lock();
	const rec *r = rv_find(&g_drv, addr);
	int dev = r && (r->kind == RCW_DEVICE || r->kind == RCW_ASYNC);
	unlock();
	return dev;
}

/* ---- pool annotations (include/replaycheck/watch.h) ---- */

RCW_API void rc_watch_pool_alloc(const void *pool, const void *addr, size_t bytes) {
	if (!atomic_load_explicit(&rcw_g_on, memory_order_relaxed))
		return;
	stk_t s;
	stk_capture(&s);
	do_alloc("rc_watch_pool_alloc", &s, (uint64_t)(uintptr_t)addr, bytes, RCW_POOL, (uint64_t)(uintptr_t)pool, 0);
}

RCW_API void rc_watch_pool_free(const void *pool, const void *addr) {
	if (!atomic_load_explicit(&rcw_g_on, memory_order_relaxed))
		return;
	stk_t s;
	stk_capture(&s);
	do_free("rc_watch_pool_free", &s, (uint64_t)(uintptr_t)addr, RCW_POOL, (uint64_t)(uintptr_t)pool, 0);
}

RCW_API void rc_watch_pool_private(const void *pool) {
	if (!atomic_load_explicit(&rcw_g_on, memory_order_relaxed))
		return;
	lock();
	uint64_t p = (uint64_t)(uintptr_t)pool;
	if (!is_private(p)) {
		if (g_private_n == g_private_cap) {
			size_t cap = g_private_cap ? g_private_cap * 2 : 8;
			uint64_t *t = realloc(g_private, cap * sizeof *t);
			if (t) {
				g_private = t;
				g_private_cap = cap;
			}
		}
		if (g_private_n < g_private_cap)
			g_private[g_private_n++] = p;
	}
	atomic_store(&g_private_any, 1);
	ev_t e;
	ev_start(&e, "pool-private");
	ev_call(&e, "rc_watch_pool_private", 0);
	put_key_hex(&e, " pool=", p);
	ev_send(&e);
	unlock();
}

/* ---- the real dlsym and dlvsym ---- */

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);
static dlsym_fn real_dlsym;
static dlvsym_fn real_dlvsym;
static pthread_once_t g_dl_once = PTHREAD_ONCE_INIT;

static uint32_t gnu_hash(const char *s) {
	uint32_t h = 5381;
	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

static uint32_t elf_hash(const char *s) {
	uint32_t h = 0, g;
	for (; *s; s++) {
		h = (h << 4) + (unsigned char)*s;
		if ((g = h & 0xf0000000))
			h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

struct elf_q {
	const char *name;
	void *found;
};

/* Looks name up in the dynamic symbol table of libc (or libdl, before glibc 2.34), through its
 * hash table: the only way to the real dlvsym that does not go through ours. */
static int elf_cb(struct dl_phdr_info *info, size_t size, void *data) {
	(void)size;
	struct elf_q *q = data;
	const char *n = info->dlpi_name;
	if (!n || (!strstr(n, "/libc.so") && strncmp(n, "libc.so", 7) && !strstr(n, "/libdl.so") && strncmp(n, "libdl.so", 8)))
		return 0;
	ElfW(Addr) base = info->dlpi_addr;
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(base + info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return 0;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const uint32_t *gnu = NULL, *sysv = NULL;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		ElfW(Addr) p = dyn->d_un.d_ptr;
		if (p < base) /* not relocated in place by the loader */
			p += base;
		switch (dyn->d_tag) {
		case DT_SYMTAB: symtab = (const ElfW(Sym) *)p; break;
		case DT_STRTAB: strtab = (const char *)p; break;
		case DT_GNU_HASH: gnu = (const uint32_t *)p; break;
		case DT_HASH: sysv = (const uint32_t *)p; break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	if (gnu) {
		uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
		const ElfW(Addr) *bloom = (const ElfW(Addr) *)(gnu + 4);
		const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
		const uint32_t *chain = buckets + nbuckets;
		uint32_t h = gnu_hash(q->name);
		uint32_t i = buckets[h % nbuckets];
		if (i < symoffset)
			return 0;
		for (;; i++) {
			uint32_t h2 = chain[i - symoffset];
			const ElfW(Sym) *sym = &symtab[i];
			if ((h | 1) == (h2 | 1) && sym->st_shndx != SHN_UNDEF && sym->st_value && !strcmp(strtab + sym->st_name, q->name)) {
				q->found = (void *)(base + sym->st_value);
				return 1;
			}
			if (h2 & 1)
				return 0;
		}
	}
	if (sysv) {
		uint32_t nbucket = sysv[0];
		const uint32_t *bucket = sysv + 2, *chain = bucket + nbucket;
		for (uint32_t i = bucket[elf_hash(q->name) % nbucket]; i; i = chain[i]) {
			const ElfW(Sym) *sym = &symtab[i];
			if (sym->st_shndx != SHN_UNDEF && sym->st_value && !strcmp(strtab + sym->st_name, q->name)) {
				q->found = (void *)(base + sym->st_value);
				return 1;
			}
		}
	}
	return 0;
}

static void *elf_lookup(const char *name) {
	struct elf_q q = {name, NULL};
	dl_iterate_phdr(elf_cb, &q);
	return q.found;
}

static void dl_init(void) {
	real_dlvsym = (dlvsym_fn)elf_lookup("dlvsym");
	if (real_dlvsym) {
		/* RTLD_NEXT from here: the definition after ours (libc's, or another preload's). */
		real_dlsym = (dlsym_fn)real_dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
		if (!real_dlsym)
			real_dlsym = (dlsym_fn)real_dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	}
	if (!real_dlsym)
		real_dlsym = (dlsym_fn)elf_lookup("dlsym");
}

/* ---- the real libraries ---- */

typedef struct {
	int fam;
	const char *soname;
	rcw_entry *e;
	size_t n;
	void *handle;
} fam_t;

static fam_t g_fams[2] = {
	{RCW_CUDA, "libcuda.so.1", rcw_cuda_entries, 0, NULL},
	{RCW_ACL, "libascendcl.so", rcw_acl_entries, 0, NULL},
};

static fam_t *fam_of(int fam) {
	fam_t *f = &g_fams[fam == RCW_ACL];
	f->n = fam == RCW_ACL ? rcw_acl_count : rcw_cuda_count;
	return f;
}

/* dl lock held. */
static void *fam_handle(fam_t *f) {
	if (!f->handle)
		f->handle = dlopen(f->soname, RTLD_NOLOAD | RTLD_LAZY);
	return f->handle;
}

void *rcw_real_slow(int fam, rcw_entry *e) {
	void *p = __atomic_load_n(&e->real, __ATOMIC_ACQUIRE);
	if (p || __atomic_load_n(&e->state, __ATOMIC_ACQUIRE))
		return p;
	pthread_once(&g_dl_once, dl_init);
	if (!real_dlsym)
		return NULL;
	pthread_mutex_lock(&g_dl_lock);
	fam_t *f = fam_of(fam);
	void *h = fam_handle(f);
	if (h) {
		p = real_dlsym(h, e->name);
		__atomic_store_n(&e->real, p, __ATOMIC_RELEASE);
		__atomic_store_n(&e->state, 1, __ATOMIC_RELEASE);
	} else {
		/* Not loaded under its soname: whatever follows us in the global scope, if anything. */
		p = real_dlsym(RTLD_NEXT, e->name);
		if (p)
			__atomic_store_n(&e->real, p, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&g_dl_lock);
	return p;
}

static rcw_entry *entry_by_wrapper(fam_t *f, void *p) {
	for (size_t i = 0; i < f->n; i++)
		if (f->e[i].wrapper == p)
			return &f->e[i];
	return NULL;
}

static void *map_real(fam_t *f, void *p, const char *name, int ptsz) {
	rcw_entry *best = NULL, *any = NULL;
	for (size_t i = 0; i < f->n; i++) {
		rcw_entry *e = &f->e[i];
		if (rcw_real(f->fam, e) != p)
			continue;
		if (name && !strcmp(name, e->name))
			return e->wrapper;
		if (!any)
			any = e;
		if (!best && ptsz >= 0 && e->ptsz == ptsz)
			best = e;
	}
	return best ? best->wrapper : any ? any->wrapper : p;
}

void *rcw_map_real(int fam, void *p, int ptsz) { return p ? map_real(fam_of(fam), p, NULL, ptsz) : p; }

static void *map_dlsym(void *handle, const char *name, void *p) {
	if (!name || !p)
		return p;
	int fam = name[0] == 'c' && name[1] == 'u' ? RCW_CUDA : !strncmp(name, "acl", 3) ? RCW_ACL : 0;
	if (!fam)
		return p;
	fam_t *f = fam_of(fam);
	rcw_entry *own = entry_by_wrapper(f, p);
	if (own) {
		/* The lookup found our export: only a loaded real library makes it an answer. */
		void *real = rcw_real(fam, own);
		if (!real)
			return NULL;
		return rcw_watching(fam) ? p : real;
	}
	if (!rcw_watching(fam))
		return p;
	if (handle != RTLD_DEFAULT && handle != RTLD_NEXT) {
		pthread_mutex_lock(&g_dl_lock);
		if (!fam_handle(f))
			f->handle = handle; /* loaded under another name: the program's handle is the library */
		pthread_mutex_unlock(&g_dl_lock);
	}
	return map_real(f, p, name, -1);
}

/* RTLD_NEXT as the caller means it: glibc resolves it from the return address of the dlsym call,
 * which, once this library answers dlsym, would be ours. So the search is done here: the objects
 * loaded after the caller's, in load order, the first that defines name itself. */
static void *next_after(const void *caller, const char *name, const char *version) {
	Dl_info info;
	struct link_map *self = NULL;
	if (!dladdr1(caller, &info, (void **)&self, RTLD_DL_LINKMAP) || !self)
		return NULL;
	for (struct link_map *l = self->l_next; l; l = l->l_next) {
		void *h = dlopen(l->l_name, RTLD_NOLOAD | RTLD_LAZY);
		if (!h)
			continue;
		void *p = version ? real_dlvsym(h, name, version) : real_dlsym(h, name);
		struct link_map *def = NULL;
		Dl_info di;
		int own = p && dladdr1(p, &di, (void **)&def, RTLD_DL_LINKMAP) && def == l;
		dlclose(h);
		if (own)
			return p;
	}
	return NULL;
}

/* noinline: the caller's return address is the program's, not an inlined frame's. */
__attribute__((noinline)) RCW_API void *dlsym(void *handle, const char *name) {
	pthread_once(&g_dl_once, dl_init);
	if (!real_dlsym)
		return NULL;
	if (handle == RTLD_NEXT)
		return map_dlsym(handle, name, next_after(__builtin_return_address(0), name, NULL));
	return map_dlsym(handle, name, real_dlsym(handle, name));
}

__attribute__((noinline)) RCW_API void *dlvsym(void *handle, const char *name, const char *version) {
	pthread_once(&g_dl_once, dl_init);
	if (!real_dlvsym)
		return NULL;
	if (handle == RTLD_NEXT)
		return map_dlsym(handle, name, next_after(__builtin_return_address(0), name, version));
	return map_dlsym(handle, name, real_dlvsym(handle, name, version));
}

/* ---- start, fork ---- */

static void hello(int forked) {
	ev_t e;
	ev_start(&e, "hello");
	put_key_dec(&e, " ppid=", getppid());
	put(&e, " exe=");
	put_esc(&e, g_exe);
	put(&e, rcw_g_backend == RCW_CUDA ? " backend=cuda" : rcw_g_backend == RCW_ACL ? " backend=acl" : " backend=cuda,acl");
	put_key_dec(&e, " refuse=", g_refuse);
	put(&e, " version=1");
	if (forked)
		put(&e, " fork=1");
	ev_send(&e);
}

static void connect_socket(void) {
	g_fd = -1;
	atomic_store(&rcw_g_on, 0);
	if (!g_sock_path[0])
		return;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	struct sockaddr_un a;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	memcpy(a.sun_path, g_sock_path, strlen(g_sock_path));
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		close(fd);
		return;
	}
	g_fd = fd;
	atomic_store(&rcw_g_on, 1);
}

static void atfork_prepare(void) {
	rcw_unwind_atfork_prepare();
	rcw_cuda_atfork_prepare();
	pthread_mutex_lock(&g_dl_lock);
	pthread_mutex_lock(&g_lock);
	ev_flush(); /* the parent's, not the child's */
}

static void atfork_parent(void) {
	pthread_mutex_unlock(&g_lock);
	pthread_mutex_unlock(&g_dl_lock);
	rcw_cuda_atfork_parent();
	rcw_unwind_atfork_parent();
}

/* A forked child starts empty (CUDA and ACL are not usable across fork), on a connection of its
 * own. */
static void atfork_child(void) {
	pthread_mutex_init(&g_lock, NULL);
	pthread_mutex_init(&g_dl_lock, NULL);
	rcw_cuda_atfork_child();
	rcw_unwind_atfork_child();
	atomic_fetch_add(&g_epoch, 1);
	g_pid = getpid();
	if (g_fd >= 0)
		close(g_fd); /* the parent's connection */
	g_defer_n = 0;
	g_run.on = 0;
	model_clear();
	connect_socket();
	if (g_fd >= 0) {
		lock();
		hello(1);
		unlock();
	}
}

static void self_range_cb_init(void);

/* At exit the deferred events go too (a process ended by a signal or _exit loses them: none of
 * them makes a finding by itself). */
__attribute__((destructor)) static void rcw_fini(void) {
	/* Another thread may hold the lock for good as the process ends: never wait for it. */
	if (pthread_mutex_trylock(&g_lock))
		return;
	ev_flush();
	unlock();
}

__attribute__((constructor)) static void rcw_init(void) {
	g_pid = getpid();
	pthread_once(&g_dl_once, dl_init);
	const char *sock = getenv("RC_WATCH_SOCKET");
	if (!sock || !*sock || strlen(sock) >= sizeof g_sock_path)
		return;
	memcpy(g_sock_path, sock, strlen(sock) + 1);
	const char *b = getenv("RC_WATCH_BACKEND");
	if (b && *b) {
		rcw_g_backend = 0;
		if (strstr(b, "cuda"))
			rcw_g_backend |= RCW_CUDA;
		if (strstr(b, "acl"))
			rcw_g_backend |= RCW_ACL;
	}
	const char *r = getenv("RC_WATCH_REFUSE");
	g_refuse = r && !strcmp(r, "1");
	const char *u = getenv("RC_WATCH_UNWIND");
	g_glibc_unwind = u && !strcmp(u, "backtrace");
	ssize_t n = readlink("/proc/self/exe", g_exe, sizeof g_exe - 1);
	g_exe[n > 0 ? n : 0] = 0;
	self_range_cb_init();
	/* backtrace loads libgcc_s on its first call: here, not inside someone's capture. */
	void *warm[4];
	backtrace(warm, 4);
	connect_socket();
	if (g_fd >= 0) {
		lock();
		hello(0);
		unlock();
	}
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Our own text: the frames a stack leaves out. The first object is the program. */
static int self_cb(struct dl_phdr_info *info, size_t size, void *data) {
	(void)size;
	if (!g_main_base)
		g_main_base = info->dlpi_addr ? info->dlpi_addr : 1;
	if (info->dlpi_addr != (ElfW(Addr))(uintptr_t)data)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (!g_self_lo || lo < g_self_lo)
			g_self_lo = lo;
		if (hi > g_self_hi)
			g_self_hi = hi;
	}
	return 1;
}

static void self_range_cb_init(void) {
	Dl_info info;
	if (dladdr((void *)(uintptr_t)&rcw_init, &info) && info.dli_fbase)
		dl_iterate_phdr(self_cb, info.dli_fbase);
}
