// fakecore.h: the small deterministic device behind the bindings' test doubles (fake_acl.c,
// fake_cuda.c; the same text in runtime/acl/testdata and runtime/cuda/testdata). Device memory is
// host memory; streams run their work at once unless they capture; a capture records memsets,
// copies and kernels and a replay runs them again. Capture rules: the codes the including file
// defines (CODE_*), with INVALIDATES saying whether a rejection invalidates the capture.
// Test hooks, through the environment: FAKE_LOG names a file that gets "<function> <thread>" per
// call; FAKE_FAIL="<function>=<code>" makes that function fail with code (message included).
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_MEMSET, OP_MEMCPY, OP_AXPY };
typedef struct {
	int kind;
	char *dst;
	const char *src;
	size_t n;
	int value;
	uint32_t a;
} op_t;

struct stream;
typedef struct capture {
	int status; // 1 active, 2 invalidated
	int mode;
	pthread_t thread;
	struct stream *origin;
	op_t *ops;
	size_t nops;
} capture_t;
// pending: a stream forked into a capture has work the origin has not joined; gen counts its work.
typedef struct stream { capture_t *cap; int pending; unsigned gen; } stream_t;
typedef struct event { capture_t *cap; stream_t *from; unsigned gen; } event_t;
typedef struct graph { op_t *ops; size_t nops; } graph_t;

#define MAXCAP 64
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static capture_t *active[MAXCAP];
static __thread int thread_mode; // the thread's capture interaction mode, GLOBAL = 0
static __thread char errmsg[256];

static void logcall(const char *fn) {
	const char *path = getenv("FAKE_LOG");
	if (path == NULL || *path == 0) {
		return;
	}
	FILE *f = fopen(path, "a");
	if (f != NULL) {
		fprintf(f, "%s %lu\n", fn, (unsigned long)pthread_self());
		fclose(f);
	}
}

static int fail(int code, const char *fn, const char *why) {
	snprintf(errmsg, sizeof errmsg, "fake: %s: %s (%d)", fn, why, code);
	return code;
}

// enter logs the call and answers an injected failure, 0 otherwise.
static int enter(const char *fn) {
	logcall(fn);
	const char *spec = getenv("FAKE_FAIL");
	size_t n = strlen(fn);
	if (spec != NULL && strncmp(spec, fn, n) == 0 && spec[n] == '=') {
		return fail(atoi(spec + n + 1), fn, "injected failure");
	}
	return 0;
}

#define ENTER(fn)                                                                                                      \
	do {                                                                                                               \
		int rc_ = enter(fn);                                                                                           \
		if (rc_ != 0) {                                                                                                \
			return rc_;                                                                                                \
		}                                                                                                              \
	} while (0)

static void run(const op_t *op) {
	switch (op->kind) {
	case OP_MEMSET:
		memset(op->dst, op->value, op->n);
		break;
	case OP_MEMCPY:
		memmove(op->dst, op->src, op->n);
		break;
	case OP_AXPY:
		for (size_t i = 0; i < op->n; i++) {
			uint32_t x, y;
			memcpy(&x, op->src + 4 * i, 4);
			memcpy(&y, op->dst + 4 * i, 4);
			y = op->a * x + y;
			memcpy(op->dst + 4 * i, &y, 4);
		}
		break;
	}
}

static void invalidate(capture_t *c) {
	if (INVALIDATES && c != NULL) {
		c->status = 2;
	}
}

static int enqueue(stream_t *s, op_t op, const char *fn) {
	pthread_mutex_lock(&mu);
	int rc = 0;
	if (s != NULL && s->cap != NULL) {
		capture_t *c = s->cap;
		if (c->status == 2) {
			rc = fail(CODE_INVALIDATED, fn, "the capture was invalidated");
		} else {
			c->ops = realloc(c->ops, (c->nops + 1) * sizeof(op_t));
			c->ops[c->nops++] = op;
			s->gen++;
			s->pending = s != c->origin;
		}
	} else {
		run(&op);
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

static int any_capture(void) {
	for (int i = 0; i < MAXCAP; i++) {
		if (active[i] != NULL) {
			return 1;
		}
	}
	return 0;
}

// unsafe_refused applies the capture-mode rule to a potentially unsafe call by this thread.
static capture_t *unsafe_refused(void) {
	for (int i = 0; i < MAXCAP; i++) {
		capture_t *c = active[i];
		if (c == NULL || thread_mode == 2) {
			continue;
		}
		if (pthread_equal(c->thread, pthread_self())) {
			if (c->mode != 2) {
				return c;
			}
		} else if (c->mode == 0 && thread_mode == 0) {
			return c;
		}
	}
	return NULL;
}

static int sync_copy(void *dst, const void *src, size_t n, const char *fn) {
	pthread_mutex_lock(&mu);
	capture_t *c = unsafe_refused();
	int rc = 0;
	if (c != NULL) {
		invalidate(c);
		rc = fail(CODE_UNSAFE, fn, "potentially unsafe call during a capture");
	} else {
		memmove(dst, src, n);
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

static int begin_capture(stream_t *s, int mode, const char *fn) {
	if (s == NULL) {
		return fail(CODE_BEGIN_DEFAULT, fn, "capture on the default stream");
	}
	pthread_mutex_lock(&mu);
	int rc = 0;
	if (s->cap != NULL) {
		rc = fail(CODE_BEGIN_CAPTURING, fn, "the stream is capturing");
	} else {
		capture_t *c = calloc(1, sizeof *c);
		c->status = 1;
		c->mode = mode;
		c->thread = pthread_self();
		c->origin = s;
		s->cap = c;
		for (int i = 0; i < MAXCAP; i++) {
			if (active[i] == NULL) {
				active[i] = c;
				break;
			}
		}
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

// drop ends c: no stream or event refers to it afterwards (streams and events are found through
// the lists below).
#define MAXOBJ 4096
static stream_t *streams[MAXOBJ];
static event_t *events[MAXOBJ];

static void track(void **list, void *p) {
	for (int i = 0; i < MAXOBJ; i++) {
		if (list[i] == NULL) {
			list[i] = p;
			return;
		}
	}
}
static void untrack(void **list, void *p) {
	for (int i = 0; i < MAXOBJ; i++) {
		if (list[i] == p) {
			list[i] = NULL;
		}
	}
}

static void drop(capture_t *c) {
	for (int i = 0; i < MAXOBJ; i++) {
		if (streams[i] != NULL && streams[i]->cap == c) {
			streams[i]->cap = NULL;
			streams[i]->pending = 0;
		}
		if (events[i] != NULL && events[i]->cap == c) {
			events[i]->cap = NULL;
		}
	}
	for (int i = 0; i < MAXCAP; i++) {
		if (active[i] == c) {
			active[i] = NULL;
		}
	}
	free(c->ops);
	free(c);
}

static int unjoined(capture_t *c) {
	for (int i = 0; i < MAXOBJ; i++) {
		if (streams[i] != NULL && streams[i]->cap == c && streams[i]->pending) {
			return 1;
		}
	}
	return 0;
}

static int end_capture(stream_t *s, graph_t **out, const char *fn) {
	*out = NULL;
	if (s == NULL || s->cap == NULL) {
		return fail(CODE_NOT_CAPTURING, fn, "the stream is not capturing");
	}
	pthread_mutex_lock(&mu);
	capture_t *c = s->cap;
	int rc = 0;
	if (c->origin != s) {
		rc = fail(CODE_UNMATCHED, fn, "not the origin stream");
	} else if (c->mode != 2 && !pthread_equal(c->thread, pthread_self())) {
		rc = fail(CODE_WRONG_THREAD, fn, "ended on another thread");
		if (WRONG_THREAD_ENDS) {
			drop(c);
		}
	} else if (c->status == 2) {
		rc = fail(CODE_INVALIDATED, fn, "the capture was invalidated");
		drop(c);
	} else if (unjoined(c)) {
		rc = fail(CODE_UNJOINED, fn, "a forked stream was not joined");
		drop(c);
	} else {
		graph_t *g = calloc(1, sizeof *g);
		g->ops = c->ops;
		g->nops = c->nops;
		c->ops = NULL;
		drop(c);
		*out = g;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

static int capture_status(stream_t *s) {
	pthread_mutex_lock(&mu);
	int st = (s != NULL && s->cap != NULL) ? s->cap->status : 0;
	pthread_mutex_unlock(&mu);
	return st;
}

static int sync_stream(stream_t *s, const char *fn) {
	pthread_mutex_lock(&mu);
	int rc = 0;
	if (s != NULL && s->cap != NULL) {
		invalidate(s->cap);
		rc = fail(CODE_SYNC_CAPTURING, fn, "the stream is capturing");
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

static int sync_device(const char *fn) {
	pthread_mutex_lock(&mu);
	int rc = 0;
	if (any_capture()) {
		for (int i = 0; i < MAXCAP; i++) {
			invalidate(active[i]);
		}
		rc = fail(CODE_SYNC_CAPTURING, fn, "a stream is capturing");
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

static int record(event_t *e, stream_t *s) {
	pthread_mutex_lock(&mu);
	e->cap = s != NULL ? s->cap : NULL;
	e->from = s;
	e->gen = s != NULL ? s->gen : 0;
	pthread_mutex_unlock(&mu);
	return 0;
}

static int wait_event(stream_t *s, event_t *e) {
	pthread_mutex_lock(&mu);
	if (e->cap != NULL && s != NULL && s->cap == NULL) {
		s->cap = e->cap; // fork into the capture
	} else if (e->cap != NULL && s != NULL && s->cap == e->cap && e->from != NULL && e->from->gen == e->gen) {
		e->from->pending = 0; // joined
	}
	pthread_mutex_unlock(&mu);
	return 0;
}

static int event_captured(event_t *e, const char *fn) {
	pthread_mutex_lock(&mu);
	int rc = e->cap != NULL ? fail(CODE_EVENT_CAPTURED, fn, "the event was recorded in a capture") : 0;
	pthread_mutex_unlock(&mu);
	return rc;
}

static void replay(graph_t *g) {
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < g->nops; i++) {
		run(&g->ops[i]);
	}
	pthread_mutex_unlock(&mu);
}

static stream_t *new_stream(void) {
	stream_t *s = calloc(1, sizeof *s);
	pthread_mutex_lock(&mu);
	track((void **)streams, s);
	pthread_mutex_unlock(&mu);
	return s;
}
static void free_stream(stream_t *s) {
	pthread_mutex_lock(&mu);
	untrack((void **)streams, s);
	pthread_mutex_unlock(&mu);
	free(s);
}
static event_t *new_event(void) {
	event_t *e = calloc(1, sizeof *e);
	pthread_mutex_lock(&mu);
	track((void **)events, e);
	pthread_mutex_unlock(&mu);
	return e;
}
static void free_event(event_t *e) {
	pthread_mutex_lock(&mu);
	untrack((void **)events, e);
	pthread_mutex_unlock(&mu);
	free(e);
}
