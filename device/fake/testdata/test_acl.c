/* test_acl.c: scripted scenarios against a fake libascendcl.so, loaded with dlopen as a binding
 * loads it. Usage: test_acl LIBRARY SCENARIO. Prints "FAIL ..." lines for broken expectations,
 * "ok SCENARIO" at the end, and facts the Go test compares ("seq ..."). Exit status 1 on failure. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*fn_i_p)(void *);
typedef int (*fn_i_v)(void);
typedef int (*fn_i_i)(int32_t);
typedef int (*fn_i_pp)(void *, void *);
typedef int (*fn_i_pi)(void *, int);
typedef int (*fn_i_pu)(void *, uint32_t);
typedef int (*fn_i_pzi)(void **, size_t, int);
typedef int (*fn_i_pz)(void **, size_t);
typedef int (*fn_memcpy)(void *, size_t, const void *, size_t, int);
typedef int (*fn_memcpy_async)(void *, size_t, const void *, size_t, int, void *);
typedef int (*fn_memset_async)(void *, size_t, int32_t, size_t, void *);
typedef int (*fn_getinfo)(void *, int *, void **);
typedef const char *(*fn_errmsg)(void);
typedef int (*fn_meminfo)(int, size_t *, size_t *);

static struct {
	int (*aclInit)(const char *);
	fn_i_v aclFinalize;
	fn_errmsg aclGetRecentErrMsg;
	fn_i_i aclrtSetDevice, aclrtResetDevice;
	int (*aclrtGetDeviceCount)(uint32_t *);
	fn_meminfo aclrtGetMemInfo;
	fn_i_p aclrtCreateStream, aclrtDestroyStream, aclrtSynchronizeStream;
	fn_i_v aclrtSynchronizeDevice;
	fn_i_pzi aclrtMalloc;
	fn_i_p aclrtFree, aclrtFreeHost;
	fn_i_pz aclrtMallocHost;
	fn_memcpy aclrtMemcpy;
	fn_memcpy_async aclrtMemcpyAsync;
	fn_memset_async aclrtMemsetAsync;
	fn_i_pu aclrtCreateEventExWithFlag;
	fn_i_p aclrtDestroyEvent, aclrtSynchronizeEvent;
	fn_i_pp aclrtRecordEvent, aclrtStreamWaitEvent, aclrtQueryEventStatus;
	fn_i_pi aclmdlRICaptureBegin;
	fn_getinfo aclmdlRICaptureGetInfo;
	fn_i_pp aclmdlRICaptureEnd;
	fn_i_p aclmdlRICaptureThreadExchangeMode;
	fn_i_pp aclmdlRIExecuteAsync;
	fn_i_p aclmdlRIDestroy;
} acl;

static int failures;
#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			printf("FAIL %s:%d: ", __func__, __LINE__);        \
			printf(__VA_ARGS__);                               \
			printf(" [%s]\n", acl.aclGetRecentErrMsg());       \
			failures++;                                        \
		}                                                          \
	} while (0)
#define EQ(got, want)                                                                                \
	do {                                                                                         \
		long long g_ = (long long)(got), w_ = (long long)(want);                             \
		CHECK(g_ == w_, "%s = %lld, want %lld", #got, g_, w_);                               \
	} while (0)
#define OK(call) EQ(call, 0)

enum { H2D = 1, D2H = 2, D2D = 3 };
enum { GLOBAL = 0, THREAD_LOCAL = 1, RELAXED = 2 };

static void *dmalloc(size_t n) {
	void *p = NULL;
	OK(acl.aclrtMalloc(&p, n, 0));
	return p;
}
static void *stream(void) {
	void *s = NULL;
	OK(acl.aclrtCreateStream(&s));
	return s;
}
static void *event(void) {
	void *e = NULL;
	OK(acl.aclrtCreateEventExWithFlag(&e, 1));
	return e;
}
static int status(void *s) {
	int st = -1;
	void *ri;
	OK(acl.aclmdlRICaptureGetInfo(s, &st, &ri));
	return st;
}
/* first_byte reads in RELAXED interaction mode, so it may run while a capture is in progress. */
static unsigned char first_byte(void *dev) {
	unsigned char b = 0xEE;
	int m = RELAXED;
	OK(acl.aclmdlRICaptureThreadExchangeMode(&m));
	OK(acl.aclrtMemcpy(&b, 1, dev, 1, D2H));
	OK(acl.aclmdlRICaptureThreadExchangeMode(&m));
	return b;
}

static void scenario_alloc(void) {
	void *a = dmalloc(1000);
	OK(acl.aclrtFree(a));
	void *b = dmalloc(1000);
	CHECK(a == b, "free + malloc of the same size returns the old address: %p then %p", a, b);
	void *c = dmalloc(600);
	CHECK((char *)c == (char *)b + 1024, "fresh space after the 1024-byte block: %p, %p", b, c);
	/* LIFO per rounded size: the block freed last comes back first */
	void *d1 = dmalloc(700), *d2 = dmalloc(1024);
	OK(acl.aclrtFree(d1));
	OK(acl.aclrtFree(d2));
	CHECK(dmalloc(900) == d2, "LIFO reuse");
	CHECK(dmalloc(1024) == d1, "then the one freed before");
	EQ(acl.aclrtFree((char *)c + 512), 107000);
	OK(acl.aclrtFree(c));
	EQ(acl.aclrtFree(c), 107000);
	void *z = (void *)1;
	EQ(acl.aclrtMalloc(&z, 0, 0), 107000);
	/* host memory lives apart and is reused LIFO */
	void *h = NULL, *h2 = NULL;
	OK(acl.aclrtMallocHost(&h, 4096));
	CHECK(h != NULL && (h < (void *)a || h >= (void *)((char *)a + (1 << 20))), "host memory is not device memory");
	OK(acl.aclrtFreeHost(h));
	OK(acl.aclrtMallocHost(&h2, 4096));
	EQ((intptr_t)h2, (intptr_t)h);
	OK(acl.aclrtFreeHost(h2));
	EQ(acl.aclrtFreeHost(h2), 107000);
}

static void scenario_oom(void) { /* REPLAYCHECK_FAKE_MEMORY=4096 */
	void *a = dmalloc(4096), *b = NULL;
	EQ(acl.aclrtMalloc(&b, 1, 0), 207001);
	OK(acl.aclrtFree(a));
	b = dmalloc(512);
	CHECK(a == b, "the smallest larger cached block is handed out whole when the bump pointer is exhausted");
	EQ(acl.aclrtMalloc(&b, 8192, 0), 207001);
}

static void scenario_inject(void) { /* REPLAYCHECK_FAKE_FAIL_MALLOC=2 */
	void *a = dmalloc(64), *b = NULL;
	EQ(acl.aclrtMalloc(&b, 0, 0), 107000); /* a call that fails its checks does not count */
	EQ(acl.aclrtMalloc(&b, 64, 0), 207001);
	CHECK(strstr(acl.aclGetRecentErrMsg(), "injection") != NULL, "the detail says why");
	b = dmalloc(64);
	CHECK(b == (char *)a + 512, "the injected failure left the allocator untouched");
}

/* Run only on a cann profile given a capture-fill-freed rule answering 107000 with the capture
 * ended (behaviour_test.go): aclmdlRICaptureEnd makes the model, so the end answers the rule. */
static void scenario_freefill(void) {
	void *s = stream(), *g = NULL;
	void *buf = dmalloc(4096);
	OK(acl.aclmdlRICaptureBegin(s, RELAXED));
	OK(acl.aclrtMemsetAsync(buf, 4096, 1, 4096, s));
	OK(acl.aclrtFree(buf));
	EQ(acl.aclmdlRICaptureEnd(s, &g), 107000);
	CHECK(g == NULL, "no model");
}

static void scenario_rebase(void) {
	void *s = stream();
	void *a = dmalloc(4096);
	OK(acl.aclmdlRICaptureBegin(s, GLOBAL));
	OK(acl.aclrtMemsetAsync(a, 4096, 0x5A, 4096, s));
	void *g = NULL;
	OK(acl.aclmdlRICaptureEnd(s, &g));
	OK(acl.aclrtFree(a));
	void *bigger = dmalloc(8192);
	CHECK(bigger != a, "the re-based buffer is fresh space");
	void *bystander = dmalloc(4096);
	CHECK(bystander == a, "the bystander gets the old address: %p, want %p", bystander, a);
	unsigned char zero[4096] = {0};
	OK(acl.aclrtMemcpy(bystander, 4096, zero, 4096, H2D));
	OK(acl.aclmdlRIExecuteAsync(g, s));
	OK(acl.aclrtSynchronizeStream(s));
	EQ(first_byte(bystander), 0x5A);
	OK(acl.aclmdlRIDestroy(g));
	/* replay of memory freed since capture: graph-range-freed, 507011 on cann */
	void *x = dmalloc(2048);
	OK(acl.aclmdlRICaptureBegin(s, GLOBAL));
	OK(acl.aclrtMemsetAsync(x, 2048, 1, 2048, s));
	OK(acl.aclmdlRICaptureEnd(s, &g));
	OK(acl.aclrtFree(x));
	EQ(acl.aclmdlRIExecuteAsync(g, s), 507011);
	CHECK(strstr(acl.aclGetRecentErrMsg(), "freed") != NULL, "the detail names the situation");
}

static void scenario_capture(void) {
	for (int mode = GLOBAL; mode <= RELAXED; mode++) {
		void *s = stream(), *ri = NULL, *g = NULL;
		int st = -1;
		EQ(status(s), 0);
		OK(acl.aclmdlRICaptureBegin(s, mode));
		OK(acl.aclmdlRICaptureGetInfo(s, &st, &ri));
		EQ(st, 1);
		CHECK(ri != NULL, "a capture in progress has a model RI");
		EQ(acl.aclmdlRICaptureBegin(s, mode), 107027);
		OK(acl.aclmdlRICaptureEnd(s, &g));
		CHECK(g != NULL, "end returns a graph");
		EQ(status(s), 0);
		EQ(acl.aclmdlRICaptureEnd(s, &g), 107029);
		OK(acl.aclmdlRIDestroy(g));
		OK(acl.aclrtDestroyStream(s));
	}
	EQ(acl.aclmdlRICaptureBegin(NULL, GLOBAL), 100000);
	EQ(acl.aclmdlRICaptureBegin(stream(), 7), 107000);
}

static void scenario_replay(void) {
	void *s = stream(), *a = dmalloc(256), *g = NULL;
	unsigned char zero[256] = {0};
	OK(acl.aclrtMemcpy(a, 256, zero, 256, H2D));
	OK(acl.aclmdlRICaptureBegin(s, GLOBAL));
	OK(acl.aclrtMemsetAsync(a, 256, 7, 256, s));
	OK(acl.aclmdlRICaptureEnd(s, &g));
	EQ(first_byte(a), 0);
	OK(acl.aclmdlRIExecuteAsync(g, s));
	EQ(first_byte(a), 7);
	/* concurrent launches on two streams interleave one node of each in turn */
	void *s1 = stream(), *s2 = stream(), *b = dmalloc(256), *c = dmalloc(256), *g1, *g2;
	OK(acl.aclmdlRICaptureBegin(s1, GLOBAL));
	OK(acl.aclrtMemsetAsync(a, 256, 1, 256, s1));
	OK(acl.aclrtMemcpyAsync(b, 256, a, 256, D2D, s1));
	OK(acl.aclmdlRICaptureEnd(s1, &g1));
	OK(acl.aclmdlRICaptureBegin(s2, GLOBAL));
	OK(acl.aclrtMemsetAsync(a, 256, 2, 256, s2));
	OK(acl.aclrtMemcpyAsync(c, 256, a, 256, D2D, s2));
	OK(acl.aclmdlRICaptureEnd(s2, &g2));
	OK(acl.aclmdlRIExecuteAsync(g1, s1));
	OK(acl.aclmdlRIExecuteAsync(g2, s2));
	int st;
	void *ri;
	OK(acl.aclmdlRICaptureGetInfo(s1, &st, &ri)); /* does not settle */
	EQ(first_byte(b), 2);
	EQ(first_byte(c), 2);
	/* one stream: launches in order */
	OK(acl.aclmdlRIExecuteAsync(g1, s1));
	OK(acl.aclmdlRIExecuteAsync(g2, s1));
	EQ(first_byte(b), 1);
	EQ(first_byte(c), 2);
}

static void scenario_fork(void) {
	void *origin = stream(), *side = stream(), *x = dmalloc(512), *y = dmalloc(512);
	void *fork = event(), *join = event(), *g = NULL;
	OK(acl.aclmdlRICaptureBegin(origin, GLOBAL));
	OK(acl.aclrtMemsetAsync(x, 512, 3, 512, origin));
	OK(acl.aclrtRecordEvent(fork, origin));
	OK(acl.aclrtStreamWaitEvent(side, fork));
	EQ(status(side), 1);
	OK(acl.aclrtMemcpyAsync(y, 512, x, 512, D2D, side));
	EQ(acl.aclmdlRICaptureEnd(side, &g), 107036);
	OK(acl.aclrtRecordEvent(join, side));
	OK(acl.aclrtStreamWaitEvent(origin, join));
	OK(acl.aclmdlRICaptureEnd(origin, &g));
	EQ(status(side), 0);
	OK(acl.aclmdlRIExecuteAsync(g, origin));
	EQ(first_byte(y), 3);
	/* unjoined: the end fails and the capture is over */
	OK(acl.aclmdlRICaptureBegin(origin, GLOBAL));
	OK(acl.aclrtRecordEvent(fork, origin));
	OK(acl.aclrtStreamWaitEvent(side, fork));
	OK(acl.aclrtMemsetAsync(y, 512, 9, 512, side));
	EQ(acl.aclmdlRICaptureEnd(origin, &g), 107025);
	EQ(status(origin), 0);
	EQ(status(side), 0);
	/* work outside the capture runs eagerly */
	OK(acl.aclmdlRICaptureBegin(origin, GLOBAL));
	OK(acl.aclrtMemsetAsync(y, 512, 4, 512, side));
	EQ(first_byte(y), 4);
	/* events */
	void *before = event();
	OK(acl.aclrtRecordEvent(before, side));
	EQ(acl.aclrtStreamWaitEvent(origin, before), 107024);
	EQ(status(origin), 1);
	OK(acl.aclrtRecordEvent(fork, origin));
	int done = -1;
	EQ(acl.aclrtQueryEventStatus(fork, &done), 107028);
	EQ(acl.aclrtSynchronizeEvent(fork), 107028);
	EQ(acl.aclrtStreamWaitEvent(NULL, fork), 107031);
	OK(acl.aclmdlRICaptureEnd(origin, &g));
	OK(acl.aclrtQueryEventStatus(fork, &done));
	EQ(done, 1);
}

static void scenario_sync(void) {
	void *s = stream(), *g = NULL;
	OK(acl.aclmdlRICaptureBegin(s, GLOBAL));
	EQ(acl.aclrtSynchronizeStream(s), 107027);
	EQ(status(s), 1);
	EQ(acl.aclrtSynchronizeDevice(), 107027);
	EQ(status(s), 1);
	OK(acl.aclmdlRICaptureEnd(s, &g));
	OK(acl.aclrtSynchronizeStream(s));
	OK(acl.aclrtSynchronizeDevice());
}

/* ---- a second thread ---- */
typedef struct {
	void (*body)(void *);
	void *arg;
} thread_job;

static void *thread_main(void *p) {
	thread_job *j = p;
	OK(acl.aclrtSetDevice(0));
	j->body(j->arg);
	OK(acl.aclrtResetDevice(0));
	return NULL;
}
static void on_other_thread(void (*body)(void *), void *arg) {
	pthread_t t;
	thread_job j = {body, arg};
	pthread_create(&t, NULL, thread_main, &j);
	pthread_join(t, NULL);
}

static int other_result;
static void end_there(void *s) {
	void *g = NULL;
	other_result = acl.aclmdlRICaptureEnd(s, &g);
}
static void *unsafe_target;
static void copy_there(void *mode) {
	unsigned char b = 1;
	int m = (int)(intptr_t)mode;
	OK(acl.aclmdlRICaptureThreadExchangeMode(&m));
	other_result = acl.aclrtMemcpy(unsafe_target, 1, &b, 1, H2D);
}

static void scenario_threads(void) {
	void *s = stream(), *g = NULL;
	OK(acl.aclmdlRICaptureBegin(s, GLOBAL));
	on_other_thread(end_there, s);
	EQ(other_result, 107038);
	EQ(status(s), 0);
	OK(acl.aclmdlRICaptureBegin(s, RELAXED));
	on_other_thread(end_there, s);
	EQ(other_result, 0);
	EQ(status(s), 0);

	unsafe_target = dmalloc(64);
	unsigned char b = 1;
	OK(acl.aclmdlRICaptureBegin(s, GLOBAL));
	EQ(acl.aclrtMemcpy(unsafe_target, 1, &b, 1, H2D), 107030);
	EQ(acl.aclrtMemcpy(&b, 1, unsafe_target, 1, D2H), 107030);
	on_other_thread(copy_there, (void *)(intptr_t)GLOBAL);
	EQ(other_result, 107030);
	on_other_thread(copy_there, (void *)(intptr_t)RELAXED);
	EQ(other_result, 0);
	int m = RELAXED;
	OK(acl.aclmdlRICaptureThreadExchangeMode(&m));
	EQ(m, GLOBAL);
	OK(acl.aclrtMemcpy(unsafe_target, 1, &b, 1, H2D));
	m = GLOBAL;
	OK(acl.aclmdlRICaptureThreadExchangeMode(&m));
	EQ(m, RELAXED);
	void *p = NULL;
	OK(acl.aclrtMalloc(&p, 64, 0)); /* cann: malloc is unchecked */
	OK(acl.aclrtFree(p));
	EQ(status(s), 1);
	OK(acl.aclmdlRICaptureEnd(s, &g));

	OK(acl.aclmdlRICaptureBegin(s, THREAD_LOCAL));
	EQ(acl.aclrtMemcpy(unsafe_target, 1, &b, 1, H2D), 107030);
	on_other_thread(copy_there, (void *)(intptr_t)GLOBAL);
	EQ(other_result, 0);
	OK(acl.aclmdlRICaptureEnd(s, &g));
}

static void scenario_host(void) {
	void *s = stream(), *d = dmalloc(256), *pinned = NULL, *g = NULL;
	unsigned char pageable[256];
	memset(pageable, 0x11, sizeof pageable);
	OK(acl.aclrtMallocHost(&pinned, 256));
	memset(pinned, 0x22, 256);
	OK(acl.aclmdlRICaptureBegin(s, GLOBAL));
	EQ(acl.aclrtMemcpyAsync(d, 256, pageable, 256, H2D, s), 107000);
	OK(acl.aclrtMemcpyAsync(d, 256, pinned, 256, H2D, s));
	EQ(acl.aclrtMemsetAsync(pinned, 256, 0, 256, s), 107000);
	OK(acl.aclmdlRICaptureEnd(s, &g));
	OK(acl.aclrtMemcpyAsync(d, 256, pageable, 256, H2D, s));
	EQ(first_byte(d), 0x11);
	memset(pinned, 0x33, 256); /* the replay reads the host address again */
	OK(acl.aclmdlRIExecuteAsync(g, s));
	EQ(first_byte(d), 0x33);
	EQ(acl.aclrtMemcpyAsync(pageable, 256, pinned, 256, H2D, s), 107000);
}

static void scenario_errmsg(void) {
	void *s = stream();
	OK(acl.aclmdlRICaptureBegin(s, GLOBAL));
	EQ(acl.aclrtSynchronizeStream(s), 107027);
	const char *m = acl.aclGetRecentErrMsg();
	CHECK(strstr(m, "synchronize the capturing stream") && strstr(m, "profile cann"), "detail: %s", m);
	uint32_t n = 0;
	OK(acl.aclrtGetDeviceCount(&n));
	EQ(n, 1);
	size_t freeb = 0, total = 0;
	OK(acl.aclrtGetMemInfo(0, &freeb, &total));
	CHECK(total > 0 && freeb <= total, "meminfo %zu of %zu", freeb, total);
}

static void scenario_race(void) { /* REPLAYCHECK_FAKE_SEED decides; prints the values left */
	void *origin = stream(), *side = stream(), *x = dmalloc(1024), *fork = event(), *join = event(), *g = NULL;
	OK(acl.aclmdlRICaptureBegin(origin, GLOBAL));
	OK(acl.aclrtRecordEvent(fork, origin));
	OK(acl.aclrtStreamWaitEvent(side, fork));
	OK(acl.aclrtMemsetAsync(x, 1024, 2, 1024, side));
	OK(acl.aclrtMemsetAsync(x, 1024, 1, 1024, origin));
	OK(acl.aclrtRecordEvent(join, side));
	OK(acl.aclrtStreamWaitEvent(origin, join));
	OK(acl.aclmdlRICaptureEnd(origin, &g));
	printf("seq");
	for (int i = 0; i < 16; i++) {
		OK(acl.aclmdlRIExecuteAsync(g, origin));
		printf(" %d", first_byte(x));
	}
	printf("\n");
}

/* REPLAYCHECK_FAKE_FAIL, set here: it is read at every call. */
static void scenario_fail(void) {
	void *s = stream(), *x = dmalloc(512), *p = NULL;
	setenv("REPLAYCHECK_FAKE_FAIL", "aclrtSynchronizeStream=107027", 1);
	EQ(acl.aclrtSynchronizeStream(s), 107027);
	const char *m = acl.aclGetRecentErrMsg();
	CHECK(strcmp(m, "aclrtSynchronizeStream: failure 107027 injected by REPLAYCHECK_FAKE_FAIL") == 0, "detail: %s", m);
	EQ(acl.aclrtSynchronizeStream(s), 107027); /* every call */
	OK(acl.aclrtSynchronizeDevice());          /* only the entry point named */
	/* the injected call touches nothing: no allocation, no memset */
	setenv("REPLAYCHECK_FAKE_FAIL", "aclrtMalloc=207001", 1);
	EQ(acl.aclrtMalloc(&p, 512, 0), 207001);
	CHECK(p == NULL, "an injected aclrtMalloc stored %p", p);
	setenv("REPLAYCHECK_FAKE_FAIL", "aclrtMemsetAsync=507000", 1);
	EQ(acl.aclrtMemsetAsync(x, 512, 7, 512, s), 507000);
	/* names that are not the entry point's, and codes that are not codes, inject nothing */
	const char *inert[] = {"aclrtMemsetAsyncX=5", "aclrtMemset=5", "aclrtMemsetAsync", "aclrtMemsetAsync=",
			       "aclrtMemsetAsync=five", "aclrtMemsetAsync=0", "aclrtMemsetAsync=5x"};
	for (size_t i = 0; i < sizeof inert / sizeof inert[0]; i++) {
		setenv("REPLAYCHECK_FAKE_FAIL", inert[i], 1);
		OK(acl.aclrtMemsetAsync(x, 512, 0, 512, s));
	}
	unsetenv("REPLAYCHECK_FAKE_FAIL");
	OK(acl.aclrtSynchronizeStream(s));
	EQ(first_byte(x), 0);
	void *y = dmalloc(512);
	CHECK((char *)y == (char *)x + 512, "the next block is %p, want %p: an injected failure allocated", y, (void *)((char *)x + 512));
}

static void scenario_crash(void) { /* REPLAYCHECK_FAKE_CRASH=aclrtMalloc dies here */
	void *p = NULL;
	OK(acl.aclrtMalloc(&p, 64, 0));
}

/* Kernels as Ascend C custom operators reach them: a binary, its function, a launch with packed
 * arguments {y, x, a, n} (24 bytes), read at the call. */
static struct {
	int (*aclrtBinaryLoadFromData)(const void *, size_t, const void *, void **);
	int (*aclrtBinaryGetFunction)(void *, const char *, void **);
	int (*aclrtBinaryUnLoad)(void *);
	int (*aclrtLaunchKernel)(void *, uint32_t, const void *, size_t, void *);
} ak;

static void pack(unsigned char *args, void *y, void *x, uint32_t a, uint32_t n) {
	memcpy(args, &y, 8);
	memcpy(args + 8, &x, 8);
	memcpy(args + 16, &a, 4);
	memcpy(args + 20, &n, 4);
}

static void scenario_kernel(void *lib) {
	*(void **)&ak.aclrtBinaryLoadFromData = dlsym(lib, "aclrtBinaryLoadFromData");
	*(void **)&ak.aclrtBinaryGetFunction = dlsym(lib, "aclrtBinaryGetFunction");
	*(void **)&ak.aclrtBinaryUnLoad = dlsym(lib, "aclrtBinaryUnLoad");
	*(void **)&ak.aclrtLaunchKernel = dlsym(lib, "aclrtLaunchKernel");
	CHECK(ak.aclrtBinaryLoadFromData && ak.aclrtBinaryGetFunction && ak.aclrtBinaryUnLoad && ak.aclrtLaunchKernel, "kernel entry points");
	if (!ak.aclrtLaunchKernel)
		return;
	static const char bin[] = "\x7f" "ELF....replaycheck_axpy....", other[] = "\x7f" "ELF....other_kernel";
	void *b = NULL, *b2 = NULL, *f = NULL, *f2 = NULL;
	EQ(ak.aclrtBinaryLoadFromData(other, sizeof other, NULL, &b), 100000);
	OK(ak.aclrtBinaryLoadFromData(bin, sizeof bin, NULL, &b));
	EQ(ak.aclrtBinaryGetFunction(b, "other", &f), 100000);
	OK(ak.aclrtBinaryGetFunction(b, "replaycheck_axpy", &f));
	uint32_t xs[4] = {1, 2, 3, 0xffffffffu}, ys[4] = {10, 20, 30, 5}, out[4];
	void *x = dmalloc(16), *y = dmalloc(16), *s = stream(), *ri = NULL;
	OK(acl.aclrtMemcpy(x, 16, xs, 16, H2D));
	OK(acl.aclrtMemcpy(y, 16, ys, 16, H2D));
	unsigned char args[24];
	pack(args, y, x, 3, 4);
	OK(ak.aclrtLaunchKernel(f, 1, args, sizeof args, s));
	OK(acl.aclrtSynchronizeStream(s));
	OK(acl.aclrtMemcpy(out, 16, y, 16, D2H));
	EQ(out[0], 13);
	EQ(out[2], 39);
	EQ(out[3], 2); /* 3*0xffffffff + 5 wraps */
	EQ(ak.aclrtLaunchKernel(f, 1, args, 20, s), 100000);
	EQ(ak.aclrtLaunchKernel(f, 1, NULL, 24, s), 100000);
	EQ(ak.aclrtLaunchKernel(f, 0, args, 24, s), 100000);
	EQ(ak.aclrtLaunchKernel((void *)0x1234, 1, args, 24, s), 100000);
	/* captured: the arguments are read at the call, so the buffer is reused at once */
	OK(acl.aclrtMemcpy(y, 16, ys, 16, H2D));
	OK(acl.aclmdlRICaptureBegin(s, GLOBAL));
	OK(ak.aclrtLaunchKernel(f, 2, args, sizeof args, s));
	pack(args, x, y, 1000, 4); /* would swap x and y if read at replay */
	OK(acl.aclmdlRICaptureEnd(s, &ri));
	OK(acl.aclrtMemcpy(out, 16, y, 16, D2H));
	EQ(out[0], 10); /* captured, not run */
	OK(acl.aclmdlRIExecuteAsync(ri, s));
	OK(acl.aclrtSynchronizeStream(s));
	OK(acl.aclrtMemcpy(out, 16, y, 16, D2H));
	EQ(out[0], 13);
	EQ(out[1], 26);
	uint32_t xs_now[4];
	OK(acl.aclrtMemcpy(xs_now, 16, x, 16, D2H));
	EQ(xs_now[0], 1);
	OK(acl.aclmdlRIDestroy(ri));
	/* the arguments in device memory, as CANN documents them: read at the call too */
	void *dargs = dmalloc(24);
	pack(args, y, x, 1, 1);
	OK(acl.aclrtMemcpy(dargs, 24, args, 24, H2D));
	OK(ak.aclrtLaunchKernel(f, 1, dargs, 24, s));
	OK(acl.aclrtMemcpy(out, 16, y, 16, D2H));
	EQ(out[0], 14);
	EQ(out[1], 26); /* n = 1 lane */
	OK(acl.aclrtFree(dargs));
	EQ(ak.aclrtLaunchKernel(f, 1, dargs, 24, s), 107000); /* freed device memory */
	/* a second binary, then unload: its function dies with it */
	OK(ak.aclrtBinaryLoadFromData(bin, sizeof bin, NULL, &b2));
	OK(ak.aclrtBinaryGetFunction(b2, "replaycheck_axpy", &f2));
	OK(ak.aclrtBinaryUnLoad(b2));
	EQ(ak.aclrtLaunchKernel(f2, 1, args, 24, s), 100000);
	EQ(ak.aclrtBinaryUnLoad(b2), 100000);
	OK(ak.aclrtLaunchKernel(f, 1, args, 24, s));
	OK(ak.aclrtBinaryUnLoad(b));
}

/* The other launch entry points: aclrtLaunchKernelV2 (cfg NULL), aclrtLaunchKernelWithHostArgs
 * (no placeholders) and aclrtLaunchKernelWithConfig over an argument list built with
 * aclrtKernelArgsInit, Append (in order) and Finalize. */
typedef struct {
	uint32_t addrOffset, dataOffset;
} placeholder;
static struct {
	int (*aclrtLaunchKernelV2)(void *, uint32_t, const void *, size_t, void *, void *);
	int (*aclrtLaunchKernelWithHostArgs)(void *, uint32_t, void *, void *, void *, size_t, placeholder *, size_t);
	int (*aclrtLaunchKernelWithConfig)(void *, uint32_t, void *, void *, void *, void *);
	int (*aclrtKernelArgsInit)(void *, void **);
	int (*aclrtKernelArgsAppend)(void *, void *, size_t, void **);
	int (*aclrtKernelArgsFinalize)(void *);
} al;

static void scenario_launches(void *lib) {
	*(void **)&ak.aclrtBinaryLoadFromData = dlsym(lib, "aclrtBinaryLoadFromData");
	*(void **)&ak.aclrtBinaryGetFunction = dlsym(lib, "aclrtBinaryGetFunction");
	*(void **)&al.aclrtLaunchKernelV2 = dlsym(lib, "aclrtLaunchKernelV2");
	*(void **)&al.aclrtLaunchKernelWithHostArgs = dlsym(lib, "aclrtLaunchKernelWithHostArgs");
	*(void **)&al.aclrtLaunchKernelWithConfig = dlsym(lib, "aclrtLaunchKernelWithConfig");
	*(void **)&al.aclrtKernelArgsInit = dlsym(lib, "aclrtKernelArgsInit");
	*(void **)&al.aclrtKernelArgsAppend = dlsym(lib, "aclrtKernelArgsAppend");
	*(void **)&al.aclrtKernelArgsFinalize = dlsym(lib, "aclrtKernelArgsFinalize");
	void **slots = (void **)&al;
	for (size_t i = 0; i < sizeof al / sizeof(void *); i++)
		if (!slots[i]) {
			CHECK(0, "launch entry point %zu missing", i);
			return;
		}
	static const char bin[] = "\x7f" "ELF....replaycheck_axpy....";
	void *b = NULL, *f = NULL;
	OK(ak.aclrtBinaryLoadFromData(bin, sizeof bin, NULL, &b));
	OK(ak.aclrtBinaryGetFunction(b, "replaycheck_axpy", &f));
	uint32_t xs[4] = {1, 2, 3, 4}, ys[4] = {10, 20, 30, 40}, out[4];
	void *x = dmalloc(16), *y = dmalloc(16), *s = stream(), *ri = NULL;
	OK(acl.aclrtMemcpy(x, 16, xs, 16, H2D));
	OK(acl.aclrtMemcpy(y, 16, ys, 16, H2D));
	unsigned char args[24];

	/* V2, the arguments in device memory, cfg NULL: y += 1*x */
	void *dargs = dmalloc(24);
	pack(args, y, x, 1, 4);
	OK(acl.aclrtMemcpy(dargs, 24, args, 24, H2D));
	OK(al.aclrtLaunchKernelV2(f, 1, dargs, 24, NULL, s));
	OK(acl.aclrtSynchronizeStream(s));
	OK(acl.aclrtMemcpy(out, 16, y, 16, D2H));
	EQ(out[0], 11);
	EQ(out[3], 44);
	EQ(al.aclrtLaunchKernelV2(f, 1, dargs, 16, NULL, s), 100000);
	EQ(al.aclrtLaunchKernelV2(f, 0, dargs, 24, NULL, s), 100000);
	OK(acl.aclrtFree(dargs));
	EQ(al.aclrtLaunchKernelV2(f, 1, dargs, 24, NULL, s), 107000); /* freed device memory */

	/* WithHostArgs: y += 2*x, captured; the host block is read at the call */
	pack(args, y, x, 2, 4);
	OK(acl.aclmdlRICaptureBegin(s, GLOBAL));
	OK(al.aclrtLaunchKernelWithHostArgs(f, 1, s, NULL, args, sizeof args, NULL, 0));
	OK(acl.aclmdlRICaptureEnd(s, &ri));
	pack(args, x, y, 1000, 4);
	OK(acl.aclmdlRIExecuteAsync(ri, s));
	OK(acl.aclrtSynchronizeStream(s));
	OK(acl.aclmdlRIDestroy(ri));
	OK(acl.aclrtMemcpy(out, 16, y, 16, D2H));
	EQ(out[0], 13);
	EQ(out[3], 52);
	placeholder ph = {0, 8};
	EQ(al.aclrtLaunchKernelWithHostArgs(f, 1, s, NULL, args, sizeof args, &ph, 1), 207000);
	EQ(al.aclrtLaunchKernelWithHostArgs(f, 1, s, NULL, args, 20, NULL, 0), 100000);
	EQ(al.aclrtLaunchKernelWithHostArgs((void *)0x1234, 1, s, NULL, args, 24, NULL, 0), 100000);
	void *dev24 = dmalloc(24);
	EQ(al.aclrtLaunchKernelWithHostArgs(f, 1, s, NULL, dev24, 24, NULL, 0), 100000); /* not host memory */
	OK(acl.aclrtFree(dev24));

	/* WithConfig: the list holds what was appended, in order: y += 3*x */
	void *h = NULL, *h2 = NULL, *p = NULL;
	uint32_t a = 3, n = 4;
	EQ(al.aclrtKernelArgsInit((void *)0x1234, &h), 100000);
	OK(al.aclrtKernelArgsInit(f, &h));
	OK(al.aclrtKernelArgsAppend(h, &y, 8, &p));
	OK(al.aclrtKernelArgsAppend(h, &x, 8, &p));
	OK(al.aclrtKernelArgsAppend(h, &a, 4, &p));
	OK(al.aclrtKernelArgsAppend(h, &n, 4, &p));
	EQ(al.aclrtLaunchKernelWithConfig(f, 1, s, NULL, h, NULL), 100000); /* not finalized */
	OK(al.aclrtKernelArgsFinalize(h));
	EQ(al.aclrtKernelArgsAppend(h, &n, 4, &p), 100000); /* finalized */
	a = 1000; /* appended values were copied */
	OK(acl.aclmdlRICaptureBegin(s, GLOBAL));
	OK(al.aclrtLaunchKernelWithConfig(f, 1, s, NULL, h, NULL));
	OK(acl.aclmdlRICaptureEnd(s, &ri));
	OK(acl.aclmdlRIExecuteAsync(ri, s));
	OK(acl.aclrtSynchronizeStream(s));
	OK(acl.aclmdlRIDestroy(ri));
	OK(acl.aclrtMemcpy(out, 16, y, 16, D2H));
	EQ(out[0], 16);
	EQ(out[3], 64);
	/* a list of the wrong size, one never made */
	OK(al.aclrtKernelArgsInit(f, &h2));
	OK(al.aclrtKernelArgsAppend(h2, &y, 8, &p));
	OK(al.aclrtKernelArgsFinalize(h2));
	EQ(al.aclrtLaunchKernelWithConfig(f, 1, s, NULL, h2, NULL), 100000);
	EQ(al.aclrtLaunchKernelWithConfig(f, 1, s, NULL, (void *)0x1234, NULL), 100000);
	EQ(al.aclrtKernelArgsFinalize((void *)0x1234), 100000);
	OK(acl.aclrtMemcpy(out, 16, y, 16, D2H));
	EQ(out[0], 16); /* the refused launches ran nothing */
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: test_acl LIBRARY SCENARIO\n");
		return 2;
	}
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		printf("FAIL dlopen: %s\n", dlerror());
		return 1;
	}
#define LOAD(name) *(void **)(&acl.name) = dlsym(lib, #name)
	LOAD(aclInit); LOAD(aclFinalize); LOAD(aclGetRecentErrMsg); LOAD(aclrtSetDevice); LOAD(aclrtResetDevice);
	LOAD(aclrtGetDeviceCount); LOAD(aclrtGetMemInfo); LOAD(aclrtCreateStream); LOAD(aclrtDestroyStream);
	LOAD(aclrtSynchronizeStream); LOAD(aclrtSynchronizeDevice); LOAD(aclrtMalloc); LOAD(aclrtFree);
	LOAD(aclrtMallocHost); LOAD(aclrtFreeHost); LOAD(aclrtMemcpy); LOAD(aclrtMemcpyAsync); LOAD(aclrtMemsetAsync);
	LOAD(aclrtCreateEventExWithFlag); LOAD(aclrtDestroyEvent); LOAD(aclrtSynchronizeEvent); LOAD(aclrtRecordEvent);
	LOAD(aclrtStreamWaitEvent); LOAD(aclrtQueryEventStatus); LOAD(aclmdlRICaptureBegin); LOAD(aclmdlRICaptureGetInfo);
	LOAD(aclmdlRICaptureEnd); LOAD(aclmdlRICaptureThreadExchangeMode); LOAD(aclmdlRIExecuteAsync); LOAD(aclmdlRIDestroy);
	void **slots = (void **)&acl;
	for (size_t i = 0; i < sizeof acl / sizeof(void *); i++)
		if (!slots[i]) {
			printf("FAIL missing symbol %zu\n", i);
			return 1;
		}
	const char *sc = argv[2];
	if (strcmp(sc, "stub") == 0) {
		uint32_t n = 7;
		EQ(acl.aclInit(NULL), 0);
		EQ(acl.aclrtGetDeviceCount(&n), 207004);
		EQ(n, 0);
		EQ(acl.aclrtSetDevice(0), 207004);
		void *p;
		EQ(acl.aclrtMalloc(&p, 64, 0), 207004);
	} else {
		OK(acl.aclInit(NULL));
		EQ(acl.aclInit(NULL), 100002);
		void *p;
		EQ(acl.aclrtMalloc(&p, 64, 0), 107002);
		EQ(acl.aclrtSetDevice(1), 107001);
		OK(acl.aclrtSetDevice(0));
		if (strcmp(sc, "alloc") == 0) scenario_alloc();
		else if (strcmp(sc, "oom") == 0) scenario_oom();
		else if (strcmp(sc, "inject") == 0) scenario_inject();
		else if (strcmp(sc, "rebase") == 0) scenario_rebase();
		else if (strcmp(sc, "freefill") == 0) scenario_freefill();
		else if (strcmp(sc, "capture") == 0) scenario_capture();
		else if (strcmp(sc, "replay") == 0) scenario_replay();
		else if (strcmp(sc, "fork") == 0) scenario_fork();
		else if (strcmp(sc, "sync") == 0) scenario_sync();
		else if (strcmp(sc, "threads") == 0) scenario_threads();
		else if (strcmp(sc, "host") == 0) scenario_host();
		else if (strcmp(sc, "errmsg") == 0) scenario_errmsg();
		else if (strcmp(sc, "race") == 0) scenario_race();
		else if (strcmp(sc, "fail") == 0) scenario_fail();
		else if (strcmp(sc, "crash") == 0) scenario_crash();
		else if (strcmp(sc, "kernel") == 0) scenario_kernel(lib);
		else if (strcmp(sc, "launches") == 0) scenario_launches(lib);
		else {
			printf("FAIL unknown scenario %s\n", sc);
			return 2;
		}
		OK(acl.aclrtResetDevice(0));
		OK(acl.aclFinalize());
	}
	if (failures)
		return 1;
	printf("ok %s\n", sc);
	return 0;
}
