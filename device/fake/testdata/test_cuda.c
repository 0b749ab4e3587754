/* test_cuda.c: scripted scenarios against a fake libcuda.so.1, loaded with dlopen as a binding
 * loads it. Usage: test_cuda LIBRARY SCENARIO. Prints "FAIL ..." lines for broken expectations,
 * "ok SCENARIO" at the end, and facts the Go test compares ("seq ..."). Exit status 1 on failure. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long dptr;
typedef int (*fn_p)(void *);

static struct {
	int (*cuInit)(unsigned);
	int (*cuDeviceGetCount)(int *);
	int (*cuDeviceGet)(int *, int);
	int (*cuDevicePrimaryCtxRetain)(void **, int);
	int (*cuDevicePrimaryCtxRelease)(int);
	int (*cuCtxSetCurrent)(void *);
	int (*cuMemAlloc_v2)(dptr *, size_t);
	int (*cuMemFree_v2)(dptr);
	int (*cuMemcpyHtoD_v2)(dptr, const void *, size_t);
	int (*cuMemcpyDtoH_v2)(void *, dptr, size_t);
	int (*cuMemcpyDtoDAsync_v2)(dptr, dptr, size_t, void *);
	int (*cuMemcpyHtoDAsync_v2)(dptr, const void *, size_t, void *);
	int (*cuMemAllocHost_v2)(void **, size_t);
	int (*cuMemFreeHost)(void *);
	int (*cuMemsetD8Async)(dptr, unsigned char, size_t, void *);
	int (*cuStreamCreate)(void **, unsigned);
	int (*cuStreamSynchronize)(void *);
	int (*cuCtxSynchronize)(void);
	int (*cuEventCreate)(void **, unsigned);
	int (*cuEventRecord)(void *, void *);
	int (*cuStreamWaitEvent)(void *, void *, unsigned);
	int (*cuEventQuery)(void *);
	int (*cuModuleLoadData)(void **, const void *);
	int (*cuModuleGetFunction)(void **, void *, const char *);
	int (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **);
	int (*cuStreamBeginCapture_v2)(void *, int);
	int (*cuStreamEndCapture)(void *, void **);
	int (*cuStreamIsCapturing)(void *, int *);
	int (*cuThreadExchangeStreamCaptureMode)(int *);
	int (*cuGraphInstantiateWithFlags)(void **, void *, unsigned long long);
	int (*cuGraphLaunch)(void *, void *);
	int (*cuGraphGetNodes)(void *, void **, size_t *);
	int (*cuGraphNodeGetType)(void *, int *);
	int (*cuGraphExecDestroy)(void *);
	int (*cuGraphDestroy)(void *);
	int (*cuGetErrorName)(int, const char **);
	int (*cuGetErrorString)(int, const char **);
} cu;

static int failures;
#define CHECK(cond, ...)                                            \
	do {                                                        \
		if (!(cond)) {                                      \
			printf("FAIL %s:%d: ", __func__, __LINE__); \
			printf(__VA_ARGS__);                        \
			printf("\n");                               \
			failures++;                                 \
		}                                                   \
	} while (0)
#define EQ(got, want)                                                              \
	do {                                                                       \
		long long g_ = (long long)(got), w_ = (long long)(want);           \
		CHECK(g_ == w_, "%s = %lld, want %lld", #got, g_, w_);             \
	} while (0)
#define OK(call) EQ(call, 0)

enum { GLOBAL = 0, THREAD_LOCAL = 1, RELAXED = 2 };
static void *ctx;

static dptr dmalloc(size_t n) {
	dptr p = 0;
	OK(cu.cuMemAlloc_v2(&p, n));
	return p;
}
static void *stream_flags(unsigned flags) {
	void *s = NULL;
	OK(cu.cuStreamCreate(&s, flags));
	return s;
}
static void *stream(void) { return stream_flags(0); }
static void *event(void) {
	void *e = NULL;
	OK(cu.cuEventCreate(&e, 0));
	return e;
}
static int status(void *s) {
	int st = -1;
	OK(cu.cuStreamIsCapturing(s, &st));
	return st;
}
static unsigned char first_byte(dptr p) {
	unsigned char b = 0xEE;
	OK(cu.cuMemcpyDtoH_v2(&b, p, 1));
	return b;
}
static void *instantiate(void *g) {
	void *x = NULL;
	OK(cu.cuGraphInstantiateWithFlags(&x, g, 0));
	return x;
}

static void scenario_alloc(void) {
	dptr a = dmalloc(1000);
	OK(cu.cuMemFree_v2(a));
	EQ(dmalloc(1000), a);
	EQ(cu.cuMemFree_v2(a + 512), 1);
	dptr z;
	EQ(cu.cuMemAlloc_v2(&z, 0), 1);
	/* re-base: the bystander gets the old address and the replay writes it */
	void *s = stream(), *g = NULL;
	dptr buf = dmalloc(4096);
	OK(cu.cuStreamBeginCapture_v2(s, GLOBAL));
	OK(cu.cuMemsetD8Async(buf, 0x5A, 4096, s));
	OK(cu.cuStreamEndCapture(s, &g));
	void *x = instantiate(g);
	OK(cu.cuMemFree_v2(buf));
	dptr bigger = dmalloc(8192);
	CHECK(bigger != buf, "the re-based buffer is fresh space");
	dptr bystander = dmalloc(4096);
	EQ(bystander, buf);
	OK(cu.cuGraphLaunch(x, s));
	OK(cu.cuStreamSynchronize(s));
	EQ(first_byte(bystander), 0x5A);
	/* freed since capture, an allocation below 2 MiB: the driver keeps it mapped, the replay is
	 * silent (measured on an H200; scenario_freed has the sizes) */
	OK(cu.cuMemFree_v2(bystander));
	OK(cu.cuGraphLaunch(x, s));
	OK(cu.cuGraphExecDestroy(x));
	OK(cu.cuGraphDestroy(g));
}

/* A replay over an allocation freed with cuMemFree since capture, as hazards/replay-after-free
 * (copy src to tmp, tmp to out captured, tmp freed): silent below 2 MiB, 700 ILLEGAL_ADDRESS from
 * 2 MiB, src and out of tmp's size or of 4 KiB (measured on an H200). */
static void scenario_freed(void) {
	const size_t sizes[] = {4 << 10, 64 << 10, 1 << 20, (2 << 20) - 512, 2 << 20, 4 << 20, 64 << 20};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		for (int small_ends = 0; small_ends <= 1; small_ends++) {
			size_t n = sizes[i], io = small_ends ? 4096 : n;
			void *s = stream(), *g = NULL;
			dptr src = dmalloc(io), tmp = dmalloc(n), out = dmalloc(io);
			OK(cu.cuStreamBeginCapture_v2(s, GLOBAL));
			OK(cu.cuMemcpyDtoDAsync_v2(tmp, src, io, s));
			OK(cu.cuMemcpyDtoDAsync_v2(out, tmp, io, s));
			OK(cu.cuStreamEndCapture(s, &g));
			void *x = instantiate(g);
			OK(cu.cuGraphLaunch(x, s));
			OK(cu.cuMemFree_v2(tmp));
			int got = cu.cuGraphLaunch(x, s);
			CHECK(got == (n >= (2u << 20) ? 700 : 0), "tmp of %zu bytes, src and out of %zu: launch = %d", n, io, got);
			OK(cu.cuStreamSynchronize(s));
			OK(cu.cuGraphExecDestroy(x));
			OK(cu.cuGraphDestroy(g));
			OK(cu.cuMemFree_v2(src));
			OK(cu.cuMemFree_v2(out));
		}
	}
	/* one freed allocation of 2 MiB among small ones decides */
	void *s = stream(), *g = NULL;
	dptr small = dmalloc(4096), big = dmalloc(2 << 20);
	OK(cu.cuStreamBeginCapture_v2(s, GLOBAL));
	OK(cu.cuMemsetD8Async(small, 1, 4096, s));
	OK(cu.cuMemsetD8Async(big, 2, 4096, s));
	OK(cu.cuStreamEndCapture(s, &g));
	void *x = instantiate(g);
	OK(cu.cuMemFree_v2(small));
	OK(cu.cuGraphLaunch(x, s));
	OK(cu.cuMemFree_v2(big));
	EQ(cu.cuGraphLaunch(x, s), 700);
	/* handed out again, the large block is another allocation's: silent (a re-base) */
	EQ(dmalloc(2 << 20), big);
	OK(cu.cuGraphLaunch(x, s));
	OK(cu.cuGraphExecDestroy(x));
	OK(cu.cuGraphDestroy(g));
}

/* Pinned host memory: unsafe in a capture as cuMemAlloc is; and a launch whose copy names pinned
 * memory freed since capture loses the context, even with the address handed out again (H200). */
static void scenario_host(void) {
	void *s = stream(), *g = NULL, *h = NULL, *again = NULL;
	dptr dev = dmalloc(4096);
	OK(cu.cuMemAllocHost_v2(&h, 4096));
	OK(cu.cuStreamBeginCapture_v2(s, GLOBAL));
	OK(cu.cuMemsetD8Async(dev, 1, 4096, s));
	EQ(cu.cuMemAllocHost_v2(&again, 4096), 900);
	EQ(status(s), 2);
	EQ(cu.cuStreamEndCapture(s, &g), 901);
	OK(cu.cuStreamBeginCapture_v2(s, RELAXED));
	OK(cu.cuMemAllocHost_v2(&again, 4096));
	OK(cu.cuMemFreeHost(again));
	EQ(status(s), 1);
	OK(cu.cuStreamEndCapture(s, &g));
	OK(cu.cuGraphDestroy(g));

	memset(h, 0x11, 4096);
	OK(cu.cuStreamBeginCapture_v2(s, GLOBAL));
	OK(cu.cuMemcpyHtoDAsync_v2(dev, h, 4096, s));
	OK(cu.cuStreamEndCapture(s, &g));
	void *x = instantiate(g);
	OK(cu.cuGraphLaunch(x, s));
	OK(cu.cuStreamSynchronize(s));
	EQ(first_byte(dev), 0x11);
	OK(cu.cuMemFreeHost(h));
	OK(cu.cuMemAllocHost_v2(&again, 4096));
	EQ(again, h);
	EQ(cu.cuGraphLaunch(x, s), 719);
	EQ(cu.cuCtxSynchronize(), 719); /* sticky */
}

/* A fill of memory freed during the capture: cuStreamEndCapture makes the graph, and its
 * instantiation fails 1 (H200); the memory allocated again at its address, it succeeds. */
static void scenario_freefill(void) {
	for (int again = 0; again <= 1; again++) {
		void *s = stream(), *g = NULL, *x = NULL;
		dptr buf = dmalloc(4096);
		OK(cu.cuStreamBeginCapture_v2(s, RELAXED));
		OK(cu.cuMemsetD8Async(buf, 1, 4096, s));
		OK(cu.cuMemFree_v2(buf));
		if (again)
			EQ(dmalloc(4096), buf);
		OK(cu.cuStreamEndCapture(s, &g));
		EQ(status(s), 0);
		EQ(cu.cuGraphInstantiateWithFlags(&x, g, 0), again ? 0 : 1);
		if (x)
			OK(cu.cuGraphExecDestroy(x));
		OK(cu.cuGraphDestroy(g));
	}
}

/* A copy from memory freed during its capture: allocated again at the same address, the graph is
 * instantiated; freed, the instantiation crashes the process (the H200's driver did, SIGSEGV),
 * where a profile has that row. */
static void scenario_freecopy(void) {
	for (int again = 1; again >= 0; again--) {
		void *s = stream(), *g = NULL, *x = NULL;
		dptr src = dmalloc(4096), dst = dmalloc(4096);
		OK(cu.cuStreamBeginCapture_v2(s, RELAXED));
		OK(cu.cuMemcpyDtoDAsync_v2(dst, src, 4096, s));
		OK(cu.cuMemFree_v2(src));
		if (again)
			EQ(dmalloc(4096), src);
		OK(cu.cuStreamEndCapture(s, &g));
		EQ(status(s), 0);
		printf("%s\n", again ? "allocated again: instantiating" : "instantiating over the freed source");
		fflush(stdout);
		OK(cu.cuGraphInstantiateWithFlags(&x, g, 0));
		if (again)
			printf("allocated again: instantiated\n");
		OK(cu.cuGraphExecDestroy(x));
		OK(cu.cuGraphDestroy(g));
	}
}

static void scenario_capture(void) {
	for (int mode = GLOBAL; mode <= RELAXED; mode++) {
		void *s = stream(), *g = NULL;
		EQ(status(s), 0);
		OK(cu.cuStreamBeginCapture_v2(s, mode));
		EQ(status(s), 1);
		EQ(cu.cuStreamBeginCapture_v2(s, mode), 401);
		OK(cu.cuStreamEndCapture(s, &g));
		CHECK(g != NULL, "end returns a graph");
		EQ(status(s), 0);
		void *none = (void *)1;
		EQ(cu.cuStreamEndCapture(s, &none), 401); /* ILLEGAL_STATE, measured on an H200 */
		CHECK(none == NULL, "a failed end returns no graph");
		OK(cu.cuGraphDestroy(g));
	}
	EQ(cu.cuStreamBeginCapture_v2(NULL, GLOBAL), 900); /* STREAM_CAPTURE_UNSUPPORTED, measured */
	/* captured work is not run until launched */
	void *s = stream(), *g = NULL;
	dptr a = dmalloc(64);
	unsigned char zero[64] = {0};
	OK(cu.cuMemcpyHtoD_v2(a, zero, 64));
	OK(cu.cuStreamBeginCapture_v2(s, GLOBAL));
	OK(cu.cuMemsetD8Async(a, 9, 64, s));
	OK(cu.cuStreamEndCapture(s, &g));
	EQ(first_byte(a), 0);
	void *x = instantiate(g);
	OK(cu.cuGraphDestroy(g)); /* the executable graph is a copy */
	OK(cu.cuGraphLaunch(x, s));
	EQ(first_byte(a), 9);
}

static void scenario_sync(void) {
	void *s = stream(), *g = (void *)1;
	dptr a = dmalloc(64);
	OK(cu.cuStreamBeginCapture_v2(s, GLOBAL));
	EQ(cu.cuStreamSynchronize(s), 900);
	EQ(status(s), 2);
	EQ(cu.cuMemsetD8Async(a, 1, 64, s), 901);
	EQ(cu.cuCtxSynchronize(), 900);
	EQ(cu.cuStreamEndCapture(s, &g), 901);
	CHECK(g == NULL, "no graph after an invalidated capture");
	EQ(status(s), 0);
	/* malloc is an unsafe call in GLOBAL mode */
	OK(cu.cuStreamBeginCapture_v2(s, GLOBAL));
	dptr p;
	EQ(cu.cuMemAlloc_v2(&p, 64), 900);
	EQ(status(s), 2);
	EQ(cu.cuStreamEndCapture(s, &g), 901);
	/* captured events: 907, and the capture is invalidated (measured) */
	void *e = event();
	OK(cu.cuStreamBeginCapture_v2(s, RELAXED));
	OK(cu.cuEventRecord(e, s));
	EQ(cu.cuEventQuery(e), 907);
	EQ(status(s), 2);
	EQ(cu.cuStreamEndCapture(s, &g), 901);
	EQ(status(s), 0);
	OK(cu.cuEventQuery(e));
}

static int other_result;
static void *end_there(void *s) {
	void *g = NULL;
	OK(cu.cuCtxSetCurrent(ctx));
	other_result = cu.cuStreamEndCapture(s, &g);
	return NULL;
}
static dptr unsafe_target;
static void *copy_there(void *mode) {
	unsigned char b = 1;
	int m = (int)(intptr_t)mode;
	OK(cu.cuCtxSetCurrent(ctx));
	OK(cu.cuThreadExchangeStreamCaptureMode(&m));
	other_result = cu.cuMemcpyHtoD_v2(unsafe_target, &b, 1);
	return NULL;
}
static void *alloc_there(void *mode) {
	int m = (int)(intptr_t)mode;
	dptr p;
	OK(cu.cuCtxSetCurrent(ctx));
	OK(cu.cuThreadExchangeStreamCaptureMode(&m));
	other_result = cu.cuMemAlloc_v2(&p, 64);
	if (other_result == 0)
		OK(cu.cuMemFree_v2(p));
	m = GLOBAL;
	OK(cu.cuThreadExchangeStreamCaptureMode(&m));
	return NULL;
}
static void on_other_thread(void *(*body)(void *), void *arg) {
	pthread_t t;
	pthread_create(&t, NULL, body, arg);
	pthread_join(t, NULL);
}

/* A second thread that begins a capture on capture_there.s in capture_there.mode, waits at the
 * barrier while the main thread works, and then ends it: other_result is the end's answer. */
static struct {
	void *s;
	int mode;
	pthread_barrier_t begun, done;
} capture_there;
static void *capture_on_other_thread(void *arg) {
	(void)arg;
	void *g = NULL;
	OK(cu.cuCtxSetCurrent(ctx));
	OK(cu.cuStreamBeginCapture_v2(capture_there.s, capture_there.mode));
	OK(cu.cuMemsetD8Async(unsafe_target, 2, 64, capture_there.s));
	pthread_barrier_wait(&capture_there.begun);
	pthread_barrier_wait(&capture_there.done);
	other_result = cu.cuStreamEndCapture(capture_there.s, &g);
	if (other_result == 0)
		OK(cu.cuGraphDestroy(g));
	return NULL;
}

/* end_and_instantiate ends s's capture, which succeeds, and instantiates its graph: the answer. */
static int end_and_instantiate(void *s) {
	void *g = NULL, *x = NULL;
	OK(cu.cuStreamEndCapture(s, &g));
	CHECK(g != NULL, "cuStreamEndCapture returns a graph");
	EQ(status(s), 0);
	int err = cu.cuGraphInstantiateWithFlags(&x, g, 0);
	if (err == 0)
		OK(cu.cuGraphExecDestroy(x));
	OK(cu.cuGraphDestroy(g));
	return err;
}

/* Ending a capture while another capture is in progress that the calling thread's interaction
 * mode minds: cuStreamEndCapture succeeds, cuGraphInstantiateWithFlags fails 900 and invalidates
 * the other capture, whose end then fails 901 (measured on an H200). A RELAXED other capture,
 * another thread's THREAD_LOCAL one or a caller in RELAXED mode leaves the instantiation alone. */
static void scenario_instantiate(void) {
	unsafe_target = dmalloc(64);
	void *g = NULL;
	for (int mode = GLOBAL; mode <= RELAXED; mode++) {
		void *s1 = stream(), *s2 = stream();
		OK(cu.cuStreamBeginCapture_v2(s1, mode));
		OK(cu.cuMemsetD8Async(unsafe_target, 1, 64, s1));
		OK(cu.cuStreamBeginCapture_v2(s2, mode));
		OK(cu.cuMemsetD8Async(unsafe_target, 2, 64, s2));
		EQ(end_and_instantiate(s1), mode == RELAXED ? 0 : 900);
		EQ(status(s2), mode == RELAXED ? 1 : 2);
		EQ(cu.cuStreamEndCapture(s2, &g), mode == RELAXED ? 0 : 901);
		EQ(status(s2), 0);
		if (mode == RELAXED)
			OK(cu.cuGraphDestroy(g));
	}
	/* a caller in RELAXED interaction mode */
	void *s1 = stream(), *s2 = stream();
	OK(cu.cuStreamBeginCapture_v2(s1, GLOBAL));
	OK(cu.cuStreamBeginCapture_v2(s2, GLOBAL));
	int m = RELAXED;
	OK(cu.cuThreadExchangeStreamCaptureMode(&m));
	EQ(end_and_instantiate(s1), 0);
	m = GLOBAL;
	OK(cu.cuThreadExchangeStreamCaptureMode(&m));
	EQ(status(s2), 1);
	EQ(end_and_instantiate(s2), 0);
	/* another thread's capture: a GLOBAL one is minded, a THREAD_LOCAL or RELAXED one is not */
	for (int mode = GLOBAL; mode <= RELAXED; mode++) {
		capture_there.s = s2;
		capture_there.mode = mode;
		pthread_barrier_init(&capture_there.begun, NULL, 2);
		pthread_barrier_init(&capture_there.done, NULL, 2);
		pthread_t t;
		pthread_create(&t, NULL, capture_on_other_thread, NULL);
		pthread_barrier_wait(&capture_there.begun);
		OK(cu.cuStreamBeginCapture_v2(s1, GLOBAL));
		EQ(end_and_instantiate(s1), mode == GLOBAL ? 900 : 0);
		EQ(status(s2), mode == GLOBAL ? 2 : 1);
		pthread_barrier_wait(&capture_there.done);
		pthread_join(t, NULL);
		EQ(other_result, mode == GLOBAL ? 901 : 0);
		EQ(status(s2), 0);
		pthread_barrier_destroy(&capture_there.begun);
		pthread_barrier_destroy(&capture_there.done);
	}
	/* with no other capture in progress, the same graph instantiates */
	OK(cu.cuStreamBeginCapture_v2(s1, GLOBAL));
	EQ(end_and_instantiate(s1), 0);
}

static void scenario_threads(void) {
	void *s = stream(), *g = NULL;
	OK(cu.cuStreamBeginCapture_v2(s, GLOBAL));
	on_other_thread(end_there, s);
	EQ(other_result, 908);
	EQ(status(s), 1);
	OK(cu.cuStreamEndCapture(s, &g));
	/* A synchronous copy is legacy-stream work: 906 during any capture of a blocking stream, whatever
	 * the capture and interaction modes, from either thread, and the capture is invalidated
	 * (measured on an H200). scenario_nonblocking has non-blocking streams. */
	unsafe_target = dmalloc(64);
	OK(cu.cuStreamBeginCapture_v2(s, THREAD_LOCAL));
	on_other_thread(copy_there, (void *)(intptr_t)GLOBAL);
	EQ(other_result, 906);
	EQ(status(s), 2);
	EQ(cu.cuStreamEndCapture(s, &g), 901);
	OK(cu.cuStreamBeginCapture_v2(s, RELAXED));
	unsigned char b = 1;
	int m = RELAXED;
	OK(cu.cuThreadExchangeStreamCaptureMode(&m));
	EQ(cu.cuMemcpyHtoD_v2(unsafe_target, &b, 1), 906);
	EQ(status(s), 2);
	m = GLOBAL;
	OK(cu.cuThreadExchangeStreamCaptureMode(&m));
	EQ(m, RELAXED);
	EQ(cu.cuMemcpyDtoH_v2(&b, unsafe_target, 1), 906);
	EQ(cu.cuStreamEndCapture(s, &g), 901);
	OK(cu.cuStreamBeginCapture_v2(s, GLOBAL));
	on_other_thread(copy_there, (void *)(intptr_t)RELAXED);
	EQ(other_result, 906);
	EQ(status(s), 2);
	EQ(cu.cuStreamEndCapture(s, &g), 901);
	/* cuMemAlloc keeps its interaction-mode rule: a RELAXED thread may allocate during a GLOBAL capture */
	OK(cu.cuStreamBeginCapture_v2(s, GLOBAL));
	on_other_thread(alloc_there, (void *)(intptr_t)RELAXED);
	EQ(other_result, 0);
	EQ(status(s), 1);
	OK(cu.cuStreamEndCapture(s, &g));
}

/* Non-blocking streams (cuStreamCreate flags CU_STREAM_NON_BLOCKING, 1): the legacy stream does not
 * synchronise with them. While only non-blocking streams capture, work on the legacy stream (NULL)
 * and synchronous copies run at once, outside every graph; while a capture holds a blocking stream,
 * its origin or one that joined it through an event, they fail 906 and invalidate that capture, and
 * only that one. Other flag bits are CUDA_ERROR_INVALID_VALUE. */
static void scenario_nonblocking(void) {
	void *bad = (void *)1, *g = NULL;
	EQ(cu.cuStreamCreate(&bad, 2), 1);
	EQ(cu.cuStreamCreate(&bad, 0xffffffffu), 1);
	CHECK(bad == (void *)1, "a refused cuStreamCreate returns no stream");
	void *nb = stream_flags(1), *b = stream(), *e = event();
	dptr x = dmalloc(64), y = dmalloc(64);
	unsigned char zero[64] = {0}, b1 = 1;
	OK(cu.cuMemcpyHtoD_v2(x, zero, 64));
	OK(cu.cuMemcpyHtoD_v2(y, zero, 64));

	/* only a non-blocking stream captures: the legacy stream's work runs at once, not captured */
	for (int mode = GLOBAL; mode <= RELAXED; mode++) {
		OK(cu.cuStreamBeginCapture_v2(nb, mode));
		OK(cu.cuMemsetD8Async(x, 1, 64, nb));
		OK(cu.cuMemsetD8Async(y, 2, 64, NULL));
		OK(cu.cuEventRecord(e, NULL));
		OK(cu.cuStreamSynchronize(NULL));
		EQ(first_byte(y), 2); /* cuMemcpyDtoH_v2, a synchronous copy, allowed too */
		EQ(first_byte(x), 0);
		OK(cu.cuMemcpyHtoD_v2(y, zero, 64));
		EQ(status(nb), 1);
		OK(cu.cuStreamEndCapture(nb, &g));
		void *exec = instantiate(g);
		OK(cu.cuGraphLaunch(exec, nb));
		OK(cu.cuStreamSynchronize(nb));
		EQ(first_byte(x), 1);
		EQ(first_byte(y), 0); /* the legacy stream's fill is not in the graph */
		OK(cu.cuMemcpyHtoD_v2(x, zero, 64));
		OK(cu.cuGraphExecDestroy(exec));
		OK(cu.cuGraphDestroy(g));
	}
	/* synchronising the device is refused during any capture */
	OK(cu.cuStreamBeginCapture_v2(nb, RELAXED));
	EQ(cu.cuCtxSynchronize(), 900);
	EQ(status(nb), 2);
	EQ(cu.cuStreamEndCapture(nb, &g), 901);

	/* a blocking stream captures: 906, the capture invalidated, nothing run */
	for (int op = 0; op < 4; op++) {
		OK(cu.cuStreamBeginCapture_v2(b, op % 2 ? RELAXED : GLOBAL));
		int got = op == 0 ? cu.cuMemsetD8Async(y, 3, 64, NULL)
			: op == 1 ? cu.cuStreamSynchronize(NULL)
			: op == 2 ? cu.cuMemcpyHtoD_v2(y, &b1, 1)
				  : cu.cuEventRecord(e, NULL);
		CHECK(got == 906, "legacy-stream call %d during a blocking capture = %d, want 906", op, got);
		EQ(status(b), 2);
		EQ(cu.cuStreamEndCapture(b, &g), 901);
	}
	EQ(first_byte(y), 0);

	/* a blocking stream that joined a non-blocking capture makes it a blocking one */
	OK(cu.cuStreamBeginCapture_v2(nb, GLOBAL));
	OK(cu.cuEventRecord(e, nb));
	OK(cu.cuStreamWaitEvent(b, e, 0));
	EQ(cu.cuMemsetD8Async(y, 4, 64, NULL), 906);
	EQ(status(nb), 2);
	EQ(status(b), 2);
	EQ(cu.cuStreamEndCapture(nb, &g), 901);
	EQ(status(b), 0);

	/* of two captures only the one holding a blocking stream is invalidated */
	OK(cu.cuStreamBeginCapture_v2(nb, RELAXED));
	OK(cu.cuStreamBeginCapture_v2(b, RELAXED));
	EQ(cu.cuMemcpyDtoH_v2(&b1, y, 1), 906);
	EQ(status(b), 2);
	EQ(status(nb), 1);
	EQ(cu.cuStreamEndCapture(b, &g), 901);
	OK(cu.cuMemsetD8Async(y, 5, 64, NULL));
	EQ(first_byte(y), 5);
	OK(cu.cuStreamEndCapture(nb, &g));
	OK(cu.cuGraphDestroy(g));
}

static const char ptx[] = ".version 7.0\n.target sm_52\n.address_size 64\n"
			  ".visible .entry replaycheck_axpy(.param .u64 y, .param .u64 x, .param .u32 a, .param .u32 n)\n{ ret; }\n";

static void scenario_kernel(void) {
	void *mod = NULL, *fn = NULL, *bad = NULL;
	EQ(cu.cuModuleLoadData(&bad, "not ptx"), 218);
	OK(cu.cuModuleLoadData(&mod, ptx));
	EQ(cu.cuModuleGetFunction(&fn, mod, "other"), 500);
	OK(cu.cuModuleGetFunction(&fn, mod, "replaycheck_axpy"));
	uint32_t xs[4] = {1, 2, 3, 0xffffffffu}, ys[4] = {10, 20, 30, 5}, out[4];
	dptr x = dmalloc(16), y = dmalloc(16);
	OK(cu.cuMemcpyHtoD_v2(x, xs, 16));
	OK(cu.cuMemcpyHtoD_v2(y, ys, 16));
	unsigned a = 3, n = 4;
	void *params[] = {&y, &x, &a, &n};
	void *s = stream(), *g = NULL;
	OK(cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
	OK(cu.cuMemcpyDtoH_v2(out, y, 16));
	EQ(out[0], 13);
	EQ(out[1], 26);
	EQ(out[2], 39);
	EQ(out[3], 2); /* 3*0xffffffff + 5 wraps */
	/* one thread per lane (blockIdx.x * blockDim.x + threadIdx.x): 1 x 3 threads leave lane 3 */
	OK(cu.cuMemcpyHtoD_v2(y, ys, 16));
	OK(cu.cuLaunchKernel(fn, 1, 1, 1, 3, 2, 2, 0, s, params, NULL));
	OK(cu.cuMemcpyDtoH_v2(out, y, 16));
	EQ(out[2], 39);
	EQ(out[3], 5);
	OK(cu.cuLaunchKernel(fn, 2, 1, 1, 2, 1, 1, 0, s, params, NULL));
	OK(cu.cuMemcpyDtoH_v2(out, y, 16));
	EQ(out[0], 16);
	EQ(out[3], 2);
	OK(cu.cuStreamBeginCapture_v2(s, GLOBAL));
	OK(cu.cuMemsetD8Async(x, 0, 16, s));
	OK(cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
	OK(cu.cuMemcpyDtoDAsync_v2(x, y, 16, s));
	OK(cu.cuStreamEndCapture(s, &g));
	size_t num = 0;
	OK(cu.cuGraphGetNodes(g, NULL, &num));
	EQ(num, 3);
	void *nodes[3];
	OK(cu.cuGraphGetNodes(g, nodes, &num));
	int types[3] = {-1, -1, -1};
	for (int i = 0; i < 3; i++)
		OK(cu.cuGraphNodeGetType(nodes[i], &types[i]));
	EQ(types[0], 2);
	EQ(types[1], 0);
	EQ(types[2], 1);
	n = 0;
	EQ(cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, s, params, NULL), 1);
}

static void scenario_errors(void) {
	const char *name = NULL, *text = NULL;
	OK(cu.cuGetErrorName(900, &name));
	CHECK(name && strcmp(name, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED") == 0, "name %s", name);
	OK(cu.cuGetErrorString(700, &text));
	CHECK(text && strstr(text, "illegal memory access"), "text %s", text);
	OK(cu.cuGetErrorName(34, &name));
	CHECK(name && strcmp(name, "CUDA_ERROR_STUB_LIBRARY") == 0, "name %s", name);
	EQ(cu.cuGetErrorName(123456, &name), 1);
	int n = 0;
	OK(cu.cuDeviceGetCount(&n));
	EQ(n, 1);
	int dev = -1;
	EQ(cu.cuDeviceGet(&dev, 1), 101);
}

static void scenario_race(void) {
	void *origin = stream(), *side = stream(), *fork = event(), *join = event(), *g = NULL;
	dptr x = dmalloc(1024);
	OK(cu.cuStreamBeginCapture_v2(origin, GLOBAL));
	OK(cu.cuEventRecord(fork, origin));
	OK(cu.cuStreamWaitEvent(side, fork, 0));
	OK(cu.cuMemsetD8Async(x, 2, 1024, side));
	OK(cu.cuMemsetD8Async(x, 1, 1024, origin));
	OK(cu.cuEventRecord(join, side));
	OK(cu.cuStreamWaitEvent(origin, join, 0));
	OK(cu.cuStreamEndCapture(origin, &g));
	void *exec = instantiate(g);
	printf("seq");
	for (int i = 0; i < 16; i++) {
		OK(cu.cuGraphLaunch(exec, origin));
		printf(" %d", first_byte(x));
	}
	printf("\n");
}

/* REPLAYCHECK_FAKE_FAIL, set here: it is read at every call. */
static void scenario_fail(void) {
	void *s = stream(), *g = NULL;
	dptr a = dmalloc(512), p = 0;
	const char *name = NULL;
	setenv("REPLAYCHECK_FAKE_FAIL", "cuMemAlloc_v2=2", 1);
	EQ(cu.cuMemAlloc_v2(&p, 512), 2);
	EQ(cu.cuMemAlloc_v2(&p, 512), 2); /* every call */
	EQ(p, 0);
	OK(cu.cuMemsetD8Async(a, 1, 512, s)); /* only the entry point named */
	OK(cu.cuGetErrorName(2, &name));
	CHECK(name && strcmp(name, "CUDA_ERROR_OUT_OF_MEMORY") == 0, "name %s", name);
	/* an injected 900 touches nothing: the capture stays active, where the rule's 900 invalidates */
	setenv("REPLAYCHECK_FAKE_FAIL", "cuStreamSynchronize=900", 1);
	OK(cu.cuStreamBeginCapture_v2(s, GLOBAL));
	EQ(cu.cuStreamSynchronize(s), 900);
	EQ(status(s), 1);
	OK(cu.cuStreamEndCapture(s, &g));
	OK(cu.cuGraphDestroy(g));
	/* a code outside the table is returned as is, and has no name */
	setenv("REPLAYCHECK_FAKE_FAIL", "cuStreamSynchronize=4242", 1);
	EQ(cu.cuStreamSynchronize(s), 4242);
	EQ(cu.cuGetErrorName(4242, &name), 1);
	const char *inert[] = {"cuStreamSynchronizeX=5", "cuStream=5", "cuStreamSynchronize", "cuStreamSynchronize=",
			       "cuStreamSynchronize=five", "cuStreamSynchronize=0"};
	for (size_t i = 0; i < sizeof inert / sizeof inert[0]; i++) {
		setenv("REPLAYCHECK_FAKE_FAIL", inert[i], 1);
		OK(cu.cuStreamSynchronize(s));
	}
	unsetenv("REPLAYCHECK_FAKE_FAIL");
	EQ(first_byte(a), 1);
	EQ(dmalloc(512), a + 512); /* the injected allocations took nothing */
}

static void scenario_crash(void) {
	dptr p;
	OK(cu.cuMemAlloc_v2(&p, 64));
}

/* ---------- what watch's interposer meets (cuGetProcAddress, _ptsz, v1 names, ...) ---------- */

typedef struct {
	unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
	void *hStream;
	void *attrs;
	unsigned numAttrs;
} launch_config;

typedef struct {
	int result;
	void *errorNode, *errorFromNode;
} update_info;

static void *lib_handle;

/* The entry points the scenarios below use beyond cu's, found by dlsym. */
static struct {
	int (*cuGetProcAddress)(const char *, void **, int, unsigned long long);
	int (*cuGetProcAddress_v2)(const char *, void **, int, unsigned long long, int *);
	int (*cuMemAlloc)(unsigned *, unsigned);
	int (*cuMemFree)(unsigned);
	int (*cuMemAllocHost)(void **, unsigned);
	int (*cuMemHostAlloc)(void **, size_t, unsigned);
	int (*cuMemAllocAsync)(dptr *, size_t, void *);
	int (*cuMemFreeAsync)(dptr, void *);
	int (*cuMemAllocFromPoolAsync)(dptr *, size_t, void *, void *);
	int (*cuDeviceGetDefaultMemPool)(void **, int);
	int (*cuMemPoolCreate)(void **, const void *);
	int (*cuMemPoolDestroy)(void *);
	int (*cuMemcpyAsync)(dptr, dptr, size_t, void *);
	int (*cuMemsetD16Async)(dptr, unsigned short, size_t, void *);
	int (*cuMemsetD32Async)(dptr, unsigned, size_t, void *);
	int (*cuMemsetD8Async_ptsz)(dptr, unsigned char, size_t, void *);
	int (*cuFuncGetParamInfo)(void *, size_t, size_t *, size_t *);
	int (*cuLaunchKernelEx)(const launch_config *, void *, void **, void **);
	int (*cuLaunchKernel_ptsz)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **);
	int (*cuEventRecordWithFlags)(void *, void *, unsigned);
	int (*cuStreamBeginCapture)(void *);
	int (*cuStreamBeginCapture_v2_ptsz)(void *, int);
	int (*cuStreamEndCapture_ptsz)(void *, void **);
	int (*cuStreamIsCapturing_ptsz)(void *, int *);
	int (*cuStreamSynchronize_ptsz)(void *);
	int (*cuGraphLaunch_ptsz)(void *, void *);
	int (*cuGraphInstantiate)(void **, void *, void **, char *, size_t);
	int (*cuGraphInstantiate_v2)(void **, void *, void **, char *, size_t);
	int (*cuGraphExecUpdate)(void *, void *, void **, int *);
	int (*cuGraphExecUpdate_v2)(void *, void *, update_info *);
	int (*cuGraphMemsetNodeGetParams)(void *, void *);
	int (*cuGraphMemcpyNodeGetParams)(void *, void *);
} cx;

static int load_cx(void) {
#define LOADX(name) *(void **)(&cx.name) = dlsym(lib_handle, #name)
	LOADX(cuGetProcAddress); LOADX(cuGetProcAddress_v2); LOADX(cuMemAlloc); LOADX(cuMemFree); LOADX(cuMemAllocHost);
	LOADX(cuMemHostAlloc); LOADX(cuMemAllocAsync); LOADX(cuMemFreeAsync); LOADX(cuMemAllocFromPoolAsync);
	LOADX(cuDeviceGetDefaultMemPool); LOADX(cuMemPoolCreate); LOADX(cuMemPoolDestroy); LOADX(cuMemcpyAsync);
	LOADX(cuMemsetD16Async); LOADX(cuMemsetD32Async); LOADX(cuMemsetD8Async_ptsz); LOADX(cuFuncGetParamInfo);
	LOADX(cuLaunchKernelEx); LOADX(cuLaunchKernel_ptsz); LOADX(cuEventRecordWithFlags); LOADX(cuStreamBeginCapture);
	LOADX(cuStreamBeginCapture_v2_ptsz); LOADX(cuStreamEndCapture_ptsz); LOADX(cuStreamIsCapturing_ptsz);
	LOADX(cuStreamSynchronize_ptsz); LOADX(cuGraphLaunch_ptsz); LOADX(cuGraphInstantiate); LOADX(cuGraphInstantiate_v2);
	LOADX(cuGraphExecUpdate); LOADX(cuGraphExecUpdate_v2); LOADX(cuGraphMemsetNodeGetParams); LOADX(cuGraphMemcpyNodeGetParams);
	void **slots = (void **)&cx;
	for (size_t i = 0; i < sizeof cx / sizeof(void *); i++)
		if (!slots[i]) {
			printf("FAIL missing watch symbol %zu\n", i);
			return 0;
		}
	return 1;
}

/* A decoy of one of the fake's exports, defined by this program (built -rdynamic), as an
 * LD_PRELOAD interposer defines it: a reference to the export through the fake's GOT would bind
 * here, and cuGetProcAddress must answer the fake's own function all the same. */
int cuMemAlloc_v2(dptr *p, size_t n);
int cuMemAlloc_v2(dptr *p, size_t n) {
	(void)p;
	(void)n;
	return 12345;
}

/* proc_queries checks RC_TEST_PROCS, "name:version:flags:export;...": cuGetProcAddress and _v2
 * answer each with dlsym(library, export), status SUCCESS. */
static void proc_queries(void) {
	const char *env = getenv("RC_TEST_PROCS");
	CHECK(env && *env, "RC_TEST_PROCS is set");
	if (!env)
		return;
	char *list = strdup(env), *save = NULL;
	int n = 0;
	for (char *q = strtok_r(list, ";", &save); q; q = strtok_r(NULL, ";", &save), n++) {
		char name[128], want[128];
		int version;
		unsigned long long flags;
		if (sscanf(q, "%127[^:]:%d:%llu:%127s", name, &version, &flags, want) != 4) {
			CHECK(0, "bad query %s", q);
			continue;
		}
		void *pfn = NULL, *pfn1 = NULL, *own = dlsym(lib_handle, want);
		int st = -1;
		int got = cx.cuGetProcAddress_v2(name, &pfn, version, flags, &st);
		CHECK(got == 0 && st == 0 && own && pfn == own, "cuGetProcAddress_v2(%s, %d, %llu) = %d, status %d, %p; dlsym(%s) = %p", name, version,
		      flags, got, st, pfn, want, own);
		got = cx.cuGetProcAddress(name, &pfn1, version, flags);
		CHECK(got == 0 && pfn1 == own, "cuGetProcAddress(%s, %d, %llu) = %d, %p; dlsym(%s) = %p", name, version, flags, got, pfn1, want, own);
	}
	free(list);
	printf("queries %d\n", n);
}

static void scenario_procaddress(void) {
	proc_queries();
	void *pfn = (void *)1;
	int st = -1;
	EQ(cx.cuGetProcAddress_v2("cuNoSuchEntryPoint", &pfn, 12040, 0, &st), 500);
	EQ(st, 1);
	CHECK(pfn == NULL, "not found: *pfn = NULL");
	pfn = (void *)1;
	EQ(cx.cuGetProcAddress_v2("cuMemAlloc_v2", &pfn, 12040, 0, &st), 500); /* base names only */
	EQ(st, 1);
	EQ(cx.cuGetProcAddress_v2("cuMemAllocAsync", &pfn, 11010, 0, &st), 500);
	EQ(st, 2);
	CHECK(pfn == NULL, "version not sufficient: *pfn = NULL");
	EQ(cx.cuGetProcAddress("cuFuncGetParamInfo", &pfn, 12030, 0), 500);
	EQ(cx.cuGetProcAddress_v2("cuMemAlloc", &pfn, 12040, 4, &st), 1);
	EQ(cx.cuGetProcAddress_v2(NULL, &pfn, 12040, 0, &st), 1);
	/* the fake's own function, not the program's decoy that its exported name binds to here */
	void *decoy = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
	CHECK(decoy == (void *)cuMemAlloc_v2, "the decoy is the program's (built -rdynamic)");
	OK(cx.cuGetProcAddress_v2("cuMemAlloc", &pfn, 12040, 0, &st));
	CHECK(pfn != decoy && pfn == dlsym(lib_handle, "cuMemAlloc_v2"), "cuMemAlloc: %p, decoy %p", pfn, decoy);
	int (*alloc)(dptr *, size_t) = (int (*)(dptr *, size_t))pfn;
	dptr p = 0;
	OK(alloc(&p, 64));
	OK(cu.cuMemFree_v2(p));
}

/* The per-thread default stream (CU_STREAM_PER_THREAD, (CUstream)0x2, and NULL in a _ptsz entry
 * point) is one blocking stream per thread, apart from the legacy stream and other threads'. */
static void *ptsz_there(void *arg) {
	int st = -1;
	(void)arg;
	OK(cu.cuCtxSetCurrent(ctx));
	OK(cx.cuStreamIsCapturing_ptsz(NULL, &st));
	other_result = st;
	return NULL;
}

static void scenario_ptsz(void) {
	void *per_thread = (void *)2, *g = NULL, *x = NULL;
	dptr a = dmalloc(64);
	unsigned char zero[64] = {0};
	OK(cu.cuMemcpyHtoD_v2(a, zero, 64));
	int st = -1;
	OK(cx.cuStreamBeginCapture_v2_ptsz(NULL, GLOBAL));
	OK(cx.cuStreamIsCapturing_ptsz(NULL, &st));
	EQ(st, 1);
	EQ(status(per_thread), 1);
	EQ(status(NULL), 0); /* the legacy stream is another stream */
	on_other_thread(ptsz_there, NULL);
	EQ(other_result, 0); /* and so is another thread's */
	OK(cx.cuMemsetD8Async_ptsz(a, 7, 64, NULL));
	OK(cx.cuStreamEndCapture_ptsz(NULL, &g));
	EQ(first_byte(a), 0); /* captured, not run */
	x = instantiate(g);
	OK(cx.cuGraphLaunch_ptsz(x, NULL));
	OK(cx.cuStreamSynchronize_ptsz(NULL));
	EQ(first_byte(a), 7);
	/* (CUstream)0x2 in the plain calls is the same stream */
	OK(cu.cuStreamBeginCapture_v2(per_thread, GLOBAL));
	OK(cx.cuStreamIsCapturing_ptsz(NULL, &st));
	EQ(st, 1);
	OK(cu.cuMemsetD8Async(a, 9, 64, per_thread));
	OK(cu.cuStreamEndCapture(per_thread, &g));
	size_t num = 0;
	OK(cu.cuGraphGetNodes(g, NULL, &num));
	EQ(num, 1);
	OK(cu.cuMemsetD8Async(a, 5, 64, per_thread)); /* not capturing: runs now */
	OK(cu.cuStreamSynchronize(per_thread));
	EQ(first_byte(a), 5);
	/* NULL in a plain call stays the legacy stream: its capture is refused, as ever */
	EQ(cu.cuStreamBeginCapture_v2(NULL, GLOBAL), 900);
	OK(cu.cuGraphExecDestroy(x));
}

/* v1 names: cuda.h's 32-bit CUdeviceptr_v1 cannot name the fake's memory (above 4 GiB). */
static void scenario_v1(void) {
	unsigned p32 = 7;
	EQ(cx.cuMemAlloc(&p32, 64), 2);
	EQ(p32, 7);
	EQ(cx.cuMemFree(0x1000), 1);
	void *h = NULL, *h2 = NULL;
	OK(cx.cuMemAllocHost(&h, 4096));
	memset(h, 3, 4096);
	dptr d = dmalloc(4096);
	OK(cu.cuMemcpyHtoD_v2(d, h, 4096));
	EQ(first_byte(d), 3);
	OK(cu.cuMemFreeHost(h));
	OK(cx.cuMemHostAlloc(&h2, 4096, 1 | 2 | 4));
	EQ(cx.cuMemHostAlloc(&h, 4096, 8), 1);
	OK(cu.cuMemFreeHost(h2));
	/* cuStreamBeginCapture (v1) captures in GLOBAL: the capturing thread's cuMemAlloc is refused */
	void *s = stream(), *g = NULL;
	OK(cx.cuStreamBeginCapture(s));
	EQ(status(s), 1);
	EQ(cx.cuMemAlloc(&p32, 64), 900); /* the rules answer before the address question */
	EQ(status(s), 2);
	EQ(cu.cuStreamEndCapture(s, &g), 901);
	/* cuGraphInstantiate and _v2 */
	OK(cx.cuStreamBeginCapture(s));
	OK(cu.cuMemsetD8Async(d, 4, 4096, s));
	OK(cu.cuStreamEndCapture(s, &g));
	void *x = NULL, *x2 = NULL, *err_node = (void *)1;
	char log[128] = "x";
	OK(cx.cuGraphInstantiate(&x, g, &err_node, log, sizeof log));
	OK(cx.cuGraphInstantiate_v2(&x2, g, NULL, NULL, 0));
	OK(cu.cuGraphLaunch(x2, s));
	EQ(first_byte(d), 4);
	EQ(cx.cuGraphInstantiate_v2(&x2, (void *)0x77, &err_node, log, sizeof log), 1);
	CHECK(err_node == NULL, "a failed instantiation names no node");
	CHECK(strstr(log, "does not exist") != NULL, "the log holds the failure: %s", log);
	OK(cu.cuGraphExecDestroy(x));
	OK(cu.cuGraphDestroy(g));
}

/* capture_seq captures onto s: a memset of dst, then (copy) a copy of dst into out or (!copy)
 * the two swapped. */
static void *capture_seq(void *s, dptr dst, dptr out, unsigned char v, int memset_first, int nodes) {
	void *g = NULL;
	OK(cu.cuStreamBeginCapture_v2(s, GLOBAL));
	if (memset_first) {
		OK(cu.cuMemsetD8Async(dst, v, 64, s));
		if (nodes > 1)
			OK(cu.cuMemcpyDtoDAsync_v2(out, dst, 64, s));
	} else {
		OK(cu.cuMemcpyDtoDAsync_v2(out, dst, 64, s));
		if (nodes > 1)
			OK(cu.cuMemsetD8Async(dst, v, 64, s));
	}
	OK(cu.cuStreamEndCapture(s, &g));
	return g;
}

static void scenario_update(void) {
	void *s = stream();
	dptr a = dmalloc(64), b = dmalloc(64), c = dmalloc(64), d = dmalloc(64);
	unsigned char zero[64] = {0};
	OK(cu.cuMemcpyHtoD_v2(c, zero, 64));
	OK(cu.cuMemcpyHtoD_v2(d, zero, 64));
	void *g1 = capture_seq(s, a, b, 1, 1, 2), *g2 = capture_seq(s, c, d, 2, 1, 2);
	void *other = capture_seq(s, c, d, 3, 0, 2), *fewer = capture_seq(s, c, d, 3, 1, 1);
	void *x = instantiate(g1);
	update_info info = {-1, (void *)1, (void *)1};
	/* a node of another type: 910, NODE_TYPE_CHANGED naming the node, nothing changes */
	EQ(cx.cuGraphExecUpdate_v2(x, other, &info), 910);
	EQ(info.result, 3);
	void *nodes[2];
	size_t num = 2;
	OK(cu.cuGraphGetNodes(other, nodes, &num));
	CHECK(info.errorNode == nodes[0], "errorNode %p, want %p", info.errorNode, nodes[0]);
	void *err_node = NULL;
	int result = -1;
	EQ(cx.cuGraphExecUpdate(x, fewer, &err_node, &result), 910);
	EQ(result, 2);
	OK(cu.cuGraphLaunch(x, s));
	OK(cu.cuStreamSynchronize(s));
	EQ(first_byte(b), 1);
	EQ(first_byte(d), 0);
	/* the same shape: the executable graph runs g2's nodes from then on */
	OK(cx.cuGraphExecUpdate_v2(x, g2, &info));
	EQ(info.result, 0);
	CHECK(info.errorNode == NULL, "no error node");
	OK(cu.cuGraphDestroy(g2));
	OK(cu.cuGraphLaunch(x, s));
	OK(cu.cuStreamSynchronize(s));
	EQ(first_byte(d), 2);
	/* v1 back to g1 */
	OK(cx.cuGraphExecUpdate(x, g1, &err_node, &result));
	EQ(result, 0);
	OK(cu.cuMemcpyHtoD_v2(b, zero, 64));
	OK(cu.cuGraphLaunch(x, s));
	OK(cu.cuStreamSynchronize(s));
	EQ(first_byte(b), 1);
	OK(cu.cuGraphExecDestroy(x));
}

static void scenario_async(void) {
	void *s = stream(), *cap = stream_flags(1), *g = NULL, *pool = NULL, *mine = NULL;
	dptr p = 0, q = 0;
	OK(cx.cuMemAllocAsync(&p, 1000, s));
	OK(cx.cuMemFreeAsync(p, s));
	EQ(dmalloc(1000), p); /* the device allocator serves both: LIFO reuse */
	OK(cu.cuMemFree_v2(p));
	EQ(cx.cuMemFreeAsync(p, s), 1);
	OK(cx.cuDeviceGetDefaultMemPool(&pool, 0));
	CHECK(pool != NULL, "a default pool");
	OK(cx.cuMemAllocFromPoolAsync(&q, 1000, pool, s));
	EQ(q, p);
	EQ(cx.cuMemAllocFromPoolAsync(&p, 1000, NULL, s), 1);
	OK(cx.cuMemPoolCreate(&mine, &q));
	OK(cx.cuMemPoolDestroy(mine));
	EQ(cx.cuMemPoolDestroy(mine), 1);
	EQ(cx.cuMemPoolDestroy(pool), 1);
	/* on a capturing stream: not supported, the capture goes on */
	OK(cu.cuStreamBeginCapture_v2(cap, GLOBAL));
	EQ(cx.cuMemAllocAsync(&p, 1000, cap), 801);
	EQ(cx.cuMemFreeAsync(q, cap), 801);
	EQ(status(cap), 1);
	/* elsewhere during a GLOBAL capture: no rule judges it, as cuMemAlloc's does */
	OK(cx.cuMemAllocAsync(&p, 512, s));
	OK(cx.cuMemFreeAsync(p, s));
	EQ(status(cap), 1);
	OK(cu.cuStreamEndCapture(cap, &g));
	OK(cu.cuGraphDestroy(g));
	OK(cx.cuMemFreeAsync(q, NULL));
}

typedef struct {
	unsigned long long dst;
	size_t pitch;
	unsigned value, elementSize;
	size_t width, height;
} memset_params;

static void scenario_copies(void) {
	void *s = stream(), *g = NULL;
	dptr a = dmalloc(64), b = dmalloc(64);
	unsigned char src[64], back[64];
	for (int i = 0; i < 64; i++)
		src[i] = (unsigned char)i;
	/* unified: pageable to device, device to device, device to pageable, pinned to device */
	OK(cx.cuMemcpyAsync(a, (dptr)(uintptr_t)src, 64, s));
	OK(cx.cuMemcpyAsync(b, a, 64, s));
	OK(cx.cuMemcpyAsync((dptr)(uintptr_t)back, b, 64, s));
	OK(cu.cuStreamSynchronize(s));
	CHECK(memcmp(src, back, 64) == 0, "the copies went round");
	void *h = NULL;
	OK(cu.cuMemAllocHost_v2(&h, 64));
	memset(h, 0x42, 64);
	OK(cx.cuMemcpyAsync(a, (dptr)(uintptr_t)h, 64, s));
	EQ(first_byte(a), 0x42);
	EQ(cx.cuMemcpyAsync((dptr)(uintptr_t)back, (dptr)(uintptr_t)src, 64, s), 1); /* host to host: not modelled */
	/* memsets of 16- and 32-bit elements, counted in elements */
	uint32_t words[16];
	OK(cx.cuMemsetD32Async(a, 0x11223344u, 16, s));
	OK(cx.cuMemsetD16Async(b, 0xabcd, 4, s));
	OK(cu.cuMemcpyDtoH_v2(words, a, 64));
	EQ(words[0], 0x11223344u);
	EQ(words[15], 0x11223344u);
	uint16_t halves[8];
	OK(cu.cuMemcpyDtoH_v2(halves, b, 16));
	EQ(halves[3], 0xabcd);
	EQ(halves[4], 0x0908); /* past the 4 elements: the earlier copy's bytes 8 and 9 */
	EQ(cx.cuMemsetD32Async(a + 2, 0, 4, s), 1); /* misaligned */
	EQ(cx.cuMemsetD32Async(a, 0, 17, s), 1);    /* past the allocation */
	/* captured: a node each, as cuda.h describes them */
	OK(cu.cuStreamBeginCapture_v2(s, GLOBAL));
	OK(cx.cuMemsetD16Async(a, 0x0102, 8, s));
	OK(cx.cuMemcpyAsync(a, (dptr)(uintptr_t)h, 64, s));
	OK(cu.cuStreamEndCapture(s, &g));
	void *nodes[2];
	size_t num = 2;
	OK(cu.cuGraphGetNodes(g, nodes, &num));
	EQ(num, 2);
	memset_params mp;
	OK(cx.cuGraphMemsetNodeGetParams(nodes[0], &mp));
	EQ(mp.elementSize, 2);
	EQ(mp.width, 8);
	EQ(mp.value, 0x0102);
	unsigned char cp[200];
	OK(cx.cuGraphMemcpyNodeGetParams(nodes[1], cp));
	int src_type;
	memcpy(&src_type, cp + 32, sizeof src_type); /* srcMemoryType */
	EQ(src_type, 1);                             /* CU_MEMORYTYPE_HOST: pinned memory, host to device */
	OK(cu.cuGraphDestroy(g));
	OK(cu.cuMemFreeHost(h));
}

static void scenario_launch(void) {
	void *mod = NULL, *fn = NULL, *s = stream();
	OK(cu.cuModuleLoadData(&mod, ptx));
	OK(cu.cuModuleGetFunction(&fn, mod, "replaycheck_axpy"));
	size_t off = 99, size = 99;
	const size_t offs[4] = {0, 8, 16, 20}, sizes[4] = {8, 8, 4, 4};
	for (size_t i = 0; i < 4; i++) {
		OK(cx.cuFuncGetParamInfo(fn, i, &off, &size));
		EQ(off, offs[i]);
		EQ(size, sizes[i]);
	}
	EQ(cx.cuFuncGetParamInfo(fn, 4, &off, &size), 1);
	EQ(cx.cuFuncGetParamInfo((void *)0x1234, 0, &off, &size), 400);
	uint32_t xs[4] = {1, 2, 3, 4}, ys[4] = {10, 20, 30, 40}, out[4];
	dptr x = dmalloc(16), y = dmalloc(16);
	OK(cu.cuMemcpyHtoD_v2(x, xs, 16));
	OK(cu.cuMemcpyHtoD_v2(y, ys, 16));
	unsigned a = 2, n = 4;
	void *params[] = {&y, &x, &a, &n};
	launch_config cfg = {1, 1, 1, 32, 1, 1, 0, s, NULL, 0};
	OK(cx.cuLaunchKernelEx(&cfg, fn, params, NULL));
	OK(cu.cuMemcpyDtoH_v2(out, y, 16));
	EQ(out[0], 12);
	EQ(out[3], 48);
	/* extra: the packed 24-byte buffer */
	unsigned char buf[24];
	size_t buf_size = sizeof buf;
	memcpy(buf, &y, 8);
	memcpy(buf + 8, &x, 8);
	memcpy(buf + 16, &a, 4);
	n = 2;
	memcpy(buf + 20, &n, 4);
	void *extra[] = {(void *)1, buf, (void *)2, &buf_size, (void *)0};
	OK(cx.cuLaunchKernel_ptsz(fn, 1, 1, 1, 32, 1, 1, 0, s, NULL, extra));
	OK(cu.cuMemcpyDtoH_v2(out, y, 16));
	EQ(out[0], 14);
	EQ(out[1], 28);
	EQ(out[2], 36); /* n = 2 lanes */
	EQ(cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, s, params, extra), 1);
	buf_size = 20;
	EQ(cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, s, NULL, extra), 1);
	EQ(cx.cuLaunchKernelEx(NULL, fn, params, NULL), 1);
	/* cuEventRecordWithFlags: CU_EVENT_RECORD_EXTERNAL is a record; other bits are refused */
	void *e = event();
	OK(cx.cuEventRecordWithFlags(e, s, 1));
	OK(cu.cuEventQuery(e));
	EQ(cx.cuEventRecordWithFlags(e, s, 4), 1);
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: test_cuda LIBRARY SCENARIO\n");
		return 2;
	}
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		printf("FAIL dlopen: %s\n", dlerror());
		return 1;
	}
	lib_handle = lib;
	if (strcmp(argv[2], "procmissing") == 0) {
		/* the missing-symbol variant without cuMemAlloc_v2: cuGetProcAddress does not find it */
		int (*gpa)(const char *, void **, int, unsigned long long, int *);
		*(void **)&gpa = dlsym(lib, "cuGetProcAddress_v2");
		void *pfn = (void *)1;
		int st = -1;
		CHECK(gpa != NULL, "cuGetProcAddress_v2 exported");
		if (gpa) {
			EQ(gpa("cuMemAlloc", &pfn, 12040, 0, &st), 500);
			EQ(st, 1);
			CHECK(pfn == NULL, "no pointer");
			OK(gpa("cuMemFree", &pfn, 12040, 0, &st));
			CHECK(pfn == dlsym(lib, "cuMemFree_v2"), "cuMemFree_v2");
		}
		if (failures)
			return 1;
		printf("ok procmissing\n");
		return 0;
	}
#define LOAD(name) *(void **)(&cu.name) = dlsym(lib, #name)
	LOAD(cuInit); LOAD(cuDeviceGetCount); LOAD(cuDeviceGet); LOAD(cuDevicePrimaryCtxRetain);
	LOAD(cuDevicePrimaryCtxRelease); LOAD(cuCtxSetCurrent); LOAD(cuMemAlloc_v2); LOAD(cuMemFree_v2);
	LOAD(cuMemcpyHtoD_v2); LOAD(cuMemcpyDtoH_v2); LOAD(cuMemcpyDtoDAsync_v2); LOAD(cuMemsetD8Async);
	LOAD(cuStreamCreate); LOAD(cuStreamSynchronize); LOAD(cuCtxSynchronize); LOAD(cuEventCreate);
	LOAD(cuEventRecord); LOAD(cuStreamWaitEvent); LOAD(cuEventQuery); LOAD(cuModuleLoadData);
	LOAD(cuModuleGetFunction); LOAD(cuLaunchKernel); LOAD(cuStreamBeginCapture_v2); LOAD(cuStreamEndCapture);
	LOAD(cuStreamIsCapturing); LOAD(cuThreadExchangeStreamCaptureMode); LOAD(cuGraphInstantiateWithFlags);
	LOAD(cuGraphLaunch); LOAD(cuGraphGetNodes); LOAD(cuGraphNodeGetType); LOAD(cuGraphExecDestroy);
	LOAD(cuGraphDestroy); LOAD(cuGetErrorName); LOAD(cuGetErrorString); LOAD(cuMemcpyHtoDAsync_v2);
	LOAD(cuMemAllocHost_v2); LOAD(cuMemFreeHost);
	void **slots = (void **)&cu;
	for (size_t i = 0; i < sizeof cu / sizeof(void *); i++)
		if (!slots[i]) {
			printf("FAIL missing symbol %zu\n", i);
			return 1;
		}
	const char *sc = argv[2];
	if (strcmp(sc, "stub") == 0) {
		int n = 5;
		EQ(cu.cuInit(0), 34);
		EQ(cu.cuDeviceGetCount(&n), 34);
		const char *name = NULL;
		OK(cu.cuGetErrorName(34, &name));
		CHECK(name && strcmp(name, "CUDA_ERROR_STUB_LIBRARY") == 0, "name %s", name);
		if (load_cx()) {
			void *pfn = NULL;
			EQ(cx.cuGetProcAddress_v2("cuInit", &pfn, 12040, 0, NULL), 34);
		}
	} else {
		/* the runtime library finds cuInit with cuGetProcAddress before it calls it */
		if (!load_cx())
			return 1;
		void *pfn = NULL;
		int st = -1;
		OK(cx.cuGetProcAddress_v2("cuInit", &pfn, 12040, 0, &st));
		CHECK(pfn == dlsym(lib, "cuInit"), "cuInit before cuInit");
		int n;
		EQ(cu.cuDeviceGetCount(&n), 3);
		OK(cu.cuInit(0));
		dptr p;
		EQ(cu.cuMemAlloc_v2(&p, 64), 201);
		OK(cu.cuDevicePrimaryCtxRetain(&ctx, 0));
		OK(cu.cuCtxSetCurrent(ctx));
		if (strcmp(sc, "alloc") == 0) scenario_alloc();
		else if (strcmp(sc, "capture") == 0) scenario_capture();
		else if (strcmp(sc, "sync") == 0) scenario_sync();
		else if (strcmp(sc, "threads") == 0) scenario_threads();
		else if (strcmp(sc, "nonblocking") == 0) scenario_nonblocking();
		else if (strcmp(sc, "freed") == 0) scenario_freed();
		else if (strcmp(sc, "host") == 0) scenario_host();
		else if (strcmp(sc, "freefill") == 0) scenario_freefill();
		else if (strcmp(sc, "freecopy") == 0) scenario_freecopy();
		else if (strcmp(sc, "instantiate") == 0) scenario_instantiate();
		else if (strcmp(sc, "kernel") == 0) scenario_kernel();
		else if (strcmp(sc, "errors") == 0) scenario_errors();
		else if (strcmp(sc, "race") == 0) scenario_race();
		else if (strcmp(sc, "fail") == 0) scenario_fail();
		else if (strcmp(sc, "crash") == 0) scenario_crash();
		else if (strcmp(sc, "procaddress") == 0) scenario_procaddress();
		else if (strcmp(sc, "ptsz") == 0) scenario_ptsz();
		else if (strcmp(sc, "v1") == 0) scenario_v1();
		else if (strcmp(sc, "update") == 0) scenario_update();
		else if (strcmp(sc, "async") == 0) scenario_async();
		else if (strcmp(sc, "copies") == 0) scenario_copies();
		else if (strcmp(sc, "launch") == 0) scenario_launch();
		else {
			printf("FAIL unknown scenario %s\n", sc);
			return 2;
		}
		OK(cu.cuCtxSetCurrent(NULL));
		OK(cu.cuDevicePrimaryCtxRelease(0));
	}
	if (failures)
		return 1;
	printf("ok %s\n", sc);
	return 0;
}
