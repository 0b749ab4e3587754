/* cuda_prog.c: a program on the (fake) CUDA driver API that the interposer's tests run under
 * LD_PRELOAD. It reaches the driver in one of the ways real programs do:
 *
 *   linked   the exported symbols (built with -DLINKED, linked to -lcuda)
 *   dlsym    dlopen("libcuda.so.1") + dlsym of each versioned name
 *   proc     cuGetProcAddress_v2 of each base name, version 12040 (found with dlsym)
 *   ptsz     the same with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
 *
 * Usage: cuda_prog WAY SCENARIO. It prints what the tests compare ("key=value" lines) and exits 0,
 * or prints "FAIL ..." and exits 1. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "replaycheck/watch.h"

typedef unsigned long long dptr;
typedef void *CUstream;

/* field, exported name, base name (cuGetProcAddress), signature */
#define CU_FUNCS(F)                                                                                                    \
	F(Init, cuInit, cuInit, int (*)(unsigned))                                                                         \
	F(DeviceGet, cuDeviceGet, cuDeviceGet, int (*)(int *, int))                                                        \
	F(Retain, cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, int (*)(void **, int))                               \
	F(SetCurrent, cuCtxSetCurrent, cuCtxSetCurrent, int (*)(void *))                                                   \
	F(MemAlloc, cuMemAlloc_v2, cuMemAlloc, int (*)(dptr *, size_t))                                                    \
	F(MemFree, cuMemFree_v2, cuMemFree, int (*)(dptr))                                                                 \
	F(MemAllocAsync, cuMemAllocAsync, cuMemAllocAsync, int (*)(dptr *, size_t, CUstream))                              \
	F(MemFreeAsync, cuMemFreeAsync, cuMemFreeAsync, int (*)(dptr, CUstream))                                           \
	F(MemAllocHost, cuMemAllocHost_v2, cuMemAllocHost, int (*)(void **, size_t))                                       \
	F(MemFreeHost, cuMemFreeHost, cuMemFreeHost, int (*)(void *))                                                      \
	F(PoolCreate, cuMemPoolCreate, cuMemPoolCreate, int (*)(void **, const void *))                                    \
	F(HtoD, cuMemcpyHtoD_v2, cuMemcpyHtoD, int (*)(dptr, const void *, size_t))                                        \
	F(DtoH, cuMemcpyDtoH_v2, cuMemcpyDtoH, int (*)(void *, dptr, size_t))                                              \
	F(DtoDAsync, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync, int (*)(dptr, dptr, size_t, CUstream))                       \
	F(HtoDAsync, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync, int (*)(dptr, const void *, size_t, CUstream))              \
	F(MemsetD8Async, cuMemsetD8Async, cuMemsetD8Async, int (*)(dptr, unsigned char, size_t, CUstream))                 \
	F(MemsetD32Async, cuMemsetD32Async, cuMemsetD32Async, int (*)(dptr, unsigned int, size_t, CUstream))               \
	F(StreamCreate, cuStreamCreate, cuStreamCreate, int (*)(CUstream *, unsigned))                                     \
	F(StreamSync, cuStreamSynchronize, cuStreamSynchronize, int (*)(CUstream))                                         \
	F(CtxSync, cuCtxSynchronize, cuCtxSynchronize, int (*)(void))                                                      \
	F(EventCreate, cuEventCreate, cuEventCreate, int (*)(void **, unsigned))                                           \
	F(EventRecord, cuEventRecord, cuEventRecord, int (*)(void *, CUstream))                                            \
	F(EventSync, cuEventSynchronize, cuEventSynchronize, int (*)(void *))                                              \
	F(StreamWaitEvent, cuStreamWaitEvent, cuStreamWaitEvent, int (*)(CUstream, void *, unsigned))                      \
	F(ModuleLoadData, cuModuleLoadData, cuModuleLoadData, int (*)(void **, const void *))                              \
	F(ModuleGetFunction, cuModuleGetFunction, cuModuleGetFunction, int (*)(void **, void *, const char *))             \
	F(LaunchKernel, cuLaunchKernel, cuLaunchKernel,                                                                    \
	  int (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **)) \
	F(BeginCapture, cuStreamBeginCapture_v2, cuStreamBeginCapture, int (*)(CUstream, int))                             \
	F(EndCapture, cuStreamEndCapture, cuStreamEndCapture, int (*)(CUstream, void **))                                  \
	F(ExchangeMode, cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, int (*)(int *))              \
	F(Instantiate, cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, int (*)(void **, void *, unsigned long long)) \
	F(ExecUpdate, cuGraphExecUpdate_v2, cuGraphExecUpdate, int (*)(void *, void *, void *))                            \
	F(Launch, cuGraphLaunch, cuGraphLaunch, int (*)(void *, CUstream))                                                 \
	F(ExecDestroy, cuGraphExecDestroy, cuGraphExecDestroy, int (*)(void *))                                            \
	F(GraphDestroy, cuGraphDestroy, cuGraphDestroy, int (*)(void *))

#define FIELD(f, sym, base, type) __typeof__(type) f;
static struct {
	CU_FUNCS(FIELD)
} cu;

#ifdef LINKED
#define DECL(f, sym, base, type) extern int sym();
CU_FUNCS(DECL)
#endif

/* The other variants the interposer wraps: legacy v1 names and _ptsz ones (each one a wrapper).
 * Field, exported name, base name, the CUDA version and cuGetProcAddress flags that make the fake
 * answer this variant (a per-thread one from 7000), signature. */
#define CU_VARIANTS(F)                                                                                                 \
	F(MemAllocV1, cuMemAlloc, cuMemAlloc, 2000, 0, int (*)(unsigned *, unsigned))                                      \
	F(MemFreeV1, cuMemFree, cuMemFree, 2000, 0, int (*)(unsigned))                                                     \
	F(MemAllocHostV1, cuMemAllocHost, cuMemAllocHost, 2000, 0, int (*)(void **, unsigned))                             \
	F(HostAlloc, cuMemHostAlloc, cuMemHostAlloc, 2020, 0, int (*)(void **, size_t, unsigned))                          \
	F(AllocFromPool, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020, 0, int (*)(dptr *, size_t, void *, CUstream)) \
	F(AllocFromPoolPtsz, cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 11020, 2,                              \
	  int (*)(dptr *, size_t, void *, CUstream))                                                                       \
	F(FreeAsyncPtsz, cuMemFreeAsync_ptsz, cuMemFreeAsync, 11020, 2, int (*)(dptr, CUstream))                           \
	F(MemsetD16, cuMemsetD16Async, cuMemsetD16Async, 3020, 0, int (*)(dptr, unsigned short, size_t, CUstream))         \
	F(MemsetD16Ptsz, cuMemsetD16Async_ptsz, cuMemsetD16Async, 7000, 2, int (*)(dptr, unsigned short, size_t, CUstream)) \
	F(MemsetD32Ptsz, cuMemsetD32Async_ptsz, cuMemsetD32Async, 7000, 2, int (*)(dptr, unsigned int, size_t, CUstream))  \
	F(RecordFlags, cuEventRecordWithFlags, cuEventRecordWithFlags, 11010, 0, int (*)(void *, CUstream, unsigned))      \
	F(RecordFlagsPtsz, cuEventRecordWithFlags_ptsz, cuEventRecordWithFlags, 11010, 2, int (*)(void *, CUstream, unsigned)) \
	F(BeginV1, cuStreamBeginCapture, cuStreamBeginCapture, 10000, 0, int (*)(CUstream))                                \
	F(BeginV1Ptsz, cuStreamBeginCapture_ptsz, cuStreamBeginCapture, 10000, 2, int (*)(CUstream))                       \
	F(EndPtsz, cuStreamEndCapture_ptsz, cuStreamEndCapture, 10000, 2, int (*)(CUstream, void **))                      \
	F(InstantiateV1, cuGraphInstantiate, cuGraphInstantiate, 10000, 0, int (*)(void **, void *, void **, char *, size_t)) \
	F(InstantiateV2, cuGraphInstantiate_v2, cuGraphInstantiate, 11000, 0, int (*)(void **, void *, void **, char *, size_t)) \
	F(ExecUpdateV1, cuGraphExecUpdate, cuGraphExecUpdate, 10020, 0, int (*)(void *, void *, void **, int *))

#define VFIELD(f, sym, base, version, flags, type) __typeof__(type) f;
static struct {
	CU_VARIANTS(VFIELD)
} cv;

#ifdef LINKED
#define VDECL(f, sym, base, version, flags, type) extern int sym();
CU_VARIANTS(VDECL)
/* The fake has no cuGraphInstantiateWithParams: weak, so that only the interposer defines them. */
extern int cuGraphInstantiateWithParams() __attribute__((weak));
extern int cuGraphInstantiateWithParams_ptsz() __attribute__((weak));
#endif

static int failures;
#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			printf("FAIL %s:%d: ", __func__, __LINE__);         \
			printf(__VA_ARGS__);                                \
			printf("\n");                                       \
			failures++;                                         \
		}                                                           \
	} while (0)
#define OK(call)                                                            \
	do {                                                                \
		int rc_ = (call);                                           \
		CHECK(rc_ == 0, "%s = %d", #call, rc_);                     \
	} while (0)

static const char ptx[] = ".version 7.0\n.target sm_52\n.address_size 64\n"
			  ".visible .entry replaycheck_axpy(.param .u64 y, .param .u64 x, .param .u32 a, .param .u32 n)\n{\n}\n";

static void *lib; /* the driver's handle (dlsym, proc) */
#ifndef LINKED
static int (*gpa)(const char *, void **, int, unsigned long long, int *);
#endif

static void bind(const char *way) {
#ifdef LINKED
	(void)way;
#define LINK(f, sym, base, type) cu.f = (type)sym;
	CU_FUNCS(LINK)
#define VLINK(f, sym, base, version, flags, type) cv.f = (type)sym;
	CU_VARIANTS(VLINK)
#else
	void *h = lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("FAIL dlopen: %s\n", dlerror());
		exit(1);
	}
	if (!strcmp(way, "dlsym")) {
#define SYM(f, sym, base, type) cu.f = (type)dlsym(h, #sym);
		CU_FUNCS(SYM)
#define VSYM(f, sym, base, version, flags, type) cv.f = (type)dlsym(h, #sym);
		CU_VARIANTS(VSYM)
	} else {
		gpa = (int (*)(const char *, void **, int, unsigned long long, int *))dlsym(h, "cuGetProcAddress_v2");
		unsigned long long flags = !strcmp(way, "ptsz") ? 0x2 : 0;
		if (!gpa) {
			printf("FAIL no cuGetProcAddress_v2\n");
			exit(1);
		}
		/* As the runtime does: cuGetProcAddress_v2 itself, through cuGetProcAddress_v2. */
		void *self = NULL;
		int st;
		if (gpa("cuGetProcAddress", &self, 12040, 0, &st) || !self) {
			printf("FAIL cuGetProcAddress of itself\n");
			exit(1);
		}
		gpa = (int (*)(const char *, void **, int, unsigned long long, int *))self;
#define PROC(f, sym, base, type)                                          \
	{                                                                 \
		void *p = NULL;                                           \
		if (gpa(#base, &p, 12040, flags, &st) == 0)               \
			cu.f = (type)p;                                   \
	}
		CU_FUNCS(PROC)
#define VPROC(f, sym, base, version, flags, type)                 \
	{                                                         \
		void *p = NULL;                                   \
		if (gpa(#base, &p, version, flags, &st) == 0)     \
			cv.f = (type)p;                           \
	}
		CU_VARIANTS(VPROC)
	}
#endif
#define NEED(f, sym, base, type)                           \
	if (!cu.f) {                                       \
		printf("FAIL no %s\n", #sym);              \
		exit(1);                                   \
	}
	CU_FUNCS(NEED)
#define VNEED(f, sym, base, version, flags, type)          \
	if (!cv.f) {                                       \
		printf("FAIL no %s\n", #sym);              \
		exit(1);                                   \
	}
	CU_VARIANTS(VNEED)
}

/* The object a bound entry point lies in (its file name): the interposer when it is in the way. */
static const char *object_of(const void *p) {
	Dl_info info;
	if (!p)
		return "null";
	if (!dladdr(p, &info) || !info.dli_fname)
		return "unknown";
	const char *slash = strrchr(info.dli_fname, '/');
	return slash ? slash + 1 : info.dli_fname;
}

/* Arms (or, with NULL, disarms) the fake's failure injection: every call of entry fails code. */
static void failing(const char *entry, int code) {
	char v[128];
	if (!entry) {
		unsetenv("REPLAYCHECK_FAKE_FAIL");
		return;
	}
	snprintf(v, sizeof v, "%s=%d", entry, code);
	setenv("REPLAYCHECK_FAKE_FAIL", v, 1);
}

static void *ctx;
static void init(void) {
	int dev;
	OK(cu.Init(0));
	OK(cu.DeviceGet(&dev, 0));
	OK(cu.Retain(&ctx, dev));
	OK(cu.SetCurrent(ctx));
}

static void *axpy(void) {
	void *mod, *fn;
	OK(cu.ModuleLoadData(&mod, ptx));
	OK(cu.ModuleGetFunction(&fn, mod, "replaycheck_axpy"));
	return fn;
}

/* Two buffers, a graph that sets a, copies a to b and runs y=b, x=a; launched, then b freed and
 * launched again. */
static void basic(void) {
	dptr a, b;
	CUstream s;
	void *g, *ex, *fn = axpy();
	OK(cu.MemAlloc(&a, 4096));
	OK(cu.MemAlloc(&b, 4096));
	OK(cu.StreamCreate(&s, 1));
	printf("a=0x%llx\nb=0x%llx\nstream=%p\n", a, b, s);
	OK(cu.BeginCapture(s, 0));
	OK(cu.MemsetD8Async(a, 1, 4096, s));
	OK(cu.DtoDAsync(b, a, 4096, s));
	unsigned int k = 2, n = 1024;
	void *params[] = {&b, &a, &k, &n};
	OK(cu.LaunchKernel(fn, 4, 1, 1, 256, 1, 1, 0, s, params, NULL));
	OK(cu.EndCapture(s, &g));
	OK(cu.Instantiate(&ex, g, 0));
	printf("graph=%p\nexec=%p\n", g, ex);
	OK(cu.Launch(ex, s));
	OK(cu.StreamSync(s));
	OK(cu.MemFree(b));
	OK(cu.Launch(ex, s));
	OK(cu.ExecDestroy(ex));
	OK(cu.GraphDestroy(g));
	OK(cu.MemFree(a));
}

/* One graph launched five times from one call site, then once from another, then once more from
 * the first after its memory was freed: a run of clean launches, a launch of its own, a stale one. */
static void repeat(void) {
	dptr a;
	CUstream s;
	void *g, *ex;
	OK(cu.MemAlloc(&a, 64));
	OK(cu.StreamCreate(&s, 1));
	OK(cu.BeginCapture(s, 0));
	OK(cu.MemsetD8Async(a, 1, 64, s));
	OK(cu.EndCapture(s, &g));
	OK(cu.Instantiate(&ex, g, 0));
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 5; i++)
			OK(cu.Launch(ex, s));
		if (round == 0)
			OK(cu.Launch(ex, s));
		else
			OK(cu.StreamSync(s));
	}
	OK(cu.MemFree(a));
	printf("stale=%d\n", cu.Launch(ex, s));
}

/* A graph that sets a; a freed and the same bytes handed to a bystander, then the graph launched. */
static void refuse(void) {
	dptr a, by;
	CUstream s;
	void *g, *ex;
	unsigned char host[64];
	OK(cu.MemAlloc(&a, 64));
	OK(cu.StreamCreate(&s, 1));
	OK(cu.BeginCapture(s, 0));
	OK(cu.MemsetD8Async(a, 0xaa, 64, s));
	OK(cu.EndCapture(s, &g));
	OK(cu.Instantiate(&ex, g, 0));
	OK(cu.MemFree(a));
	OK(cu.MemAlloc(&by, 64));
	printf("a=0x%llx\nbystander=0x%llx\n", a, by);
	memset(host, 0x11, sizeof host);
	OK(cu.HtoD(by, host, sizeof host));
	int r = cu.Launch(ex, s);
	printf("launch=%d\n", r);
	OK(cu.StreamSync(s));
	memset(host, 0, sizeof host);
	OK(cu.DtoH(host, by, sizeof host));
	printf("bystander_byte=%02x\n", host[0]);
}

/* Results only, no address: the same with and without the interposer. */
static void plain(void) {
	dptr a;
	CUstream s;
	void *g, *ex, *fn = axpy();
	unsigned int host[16], k = 3, n = 16;
	OK(cu.MemAlloc(&a, sizeof host));
	OK(cu.StreamCreate(&s, 1));
	for (int i = 0; i < 16; i++)
		host[i] = (unsigned)i;
	OK(cu.HtoD(a, host, sizeof host));
	OK(cu.BeginCapture(s, 0));
	void *params[] = {&a, &a, &k, &n};
	OK(cu.LaunchKernel(fn, 1, 1, 1, 16, 1, 1, 0, s, params, NULL));
	OK(cu.EndCapture(s, &g));
	OK(cu.Instantiate(&ex, g, 0));
	OK(cu.Launch(ex, s));
	OK(cu.Launch(ex, s));
	OK(cu.StreamSync(s));
	OK(cu.DtoH(host, a, sizeof host));
	for (int i = 0; i < 16; i++)
		printf("%u%c", host[i], i == 15 ? '\n' : ' ');
	printf("free=%d\n", cu.MemFree(a));
	printf("free_again=%d\n", cu.MemFree(a));
}

/* The same call site in a loop, and a second site: two stacks. */
dptr site_one(void);
dptr site_two(void);

/* Exported (-rdynamic), so that dladdr names them. */
__attribute__((noinline)) dptr site_one(void) {
	dptr p;
	OK(cu.MemAlloc(&p, 256));
	return p;
}

__attribute__((noinline)) dptr site_two(void) {
	dptr p;
	OK(cu.MemAlloc(&p, 256));
	return p;
}

static void stacks(void) {
	dptr p[4];
	for (int i = 0; i < 3; i++)
		p[i] = site_one();
	p[3] = site_two();
	for (int i = 0; i < 4; i++)
		OK(cu.MemFree(p[i]));
}

/* A second stream forked into the capture through an event, and joined back. */
static void join(void) {
	dptr a;
	CUstream s1, s2;
	void *e1, *e2, *g;
	OK(cu.MemAlloc(&a, 256));
	OK(cu.StreamCreate(&s1, 1));
	OK(cu.StreamCreate(&s2, 1));
	OK(cu.EventCreate(&e1, 0));
	OK(cu.EventCreate(&e2, 0));
	printf("s1=%p\ns2=%p\ne1=%p\n", s1, s2, e1);
	OK(cu.BeginCapture(s1, 0));
	OK(cu.EventRecord(e1, s1));
	OK(cu.StreamWaitEvent(s2, e1, 0));
	OK(cu.MemsetD32Async(a, 7, 64, s2));
	OK(cu.EventRecord(e2, s2));
	OK(cu.StreamWaitEvent(s1, e2, 0));
	OK(cu.EndCapture(s1, &g));
	/* After the end s2 is no longer in a capture: no op. */
	OK(cu.MemsetD32Async(a, 8, 64, s2));
	OK(cu.StreamSync(s2));
}

/* Work on a stream outside the capture by the capturing thread (tcap), in relaxed mode. */
static void tcap(void) {
	dptr a, b;
	CUstream s1, s2;
	void *g;
	int mode = 2;
	OK(cu.ExchangeMode(&mode));
	OK(cu.MemAlloc(&a, 256));
	OK(cu.StreamCreate(&s1, 1));
	OK(cu.StreamCreate(&s2, 1));
	printf("a=0x%llx\ns1=%p\ns2=%p\n", a, s1, s2);
	OK(cu.BeginCapture(s1, 2));
	OK(cu.MemAlloc(&b, 256));
	printf("b=0x%llx\n", b);
	OK(cu.MemsetD8Async(a, 1, 256, s2));
	OK(cu.MemsetD8Async(a, 2, 256, s1));
	OK(cu.MemFree(b));
	OK(cu.EndCapture(s1, &g));
	/* No capture anywhere: no op. */
	OK(cu.MemsetD8Async(a, 3, 256, s2));
	OK(cu.StreamSync(s2));
}

/* The per-thread default stream (the legacy one cannot capture). */
static void streams(void) {
	dptr a;
	void *g;
	OK(cu.MemAlloc(&a, 256));
	OK(cu.BeginCapture((CUstream)0x2, 2));
	OK(cu.MemsetD8Async(a, 1, 256, (CUstream)0x2));
	OK(cu.EndCapture((CUstream)0x2, &g));
}

/* Stream-ordered allocation and pinned host memory. */
static void async(void) {
	dptr a;
	void *h;
	CUstream s;
	OK(cu.StreamCreate(&s, 1));
	OK(cu.MemAllocAsync(&a, 512, s));
	OK(cu.MemFreeAsync(a, s));
	OK(cu.MemAllocHost(&h, 128));
	OK(cu.MemFreeHost(h));
	printf("a=0x%llx\nhost=%p\nstream=%p\n", a, h, s);
}

/* A private pool's block captured, freed in the capture and taken by a second capture into the
 * same pool (PyTorch's pattern: not stale), then handed to an eager allocation (stale). Also the
 * record, wait and sync events that follow a private pool's declaration. */
static char pool_tag;
static void pool(void) {
	dptr seg;
	CUstream s;
	void *g1, *g2, *x1, *x2, *ev;
	const void *pool = &pool_tag;
	CHECK(rc_watch_pool_alloc != NULL, "rc_watch_pool_alloc is not bound");
	OK(cu.MemAlloc(&seg, 1 << 16));
	OK(cu.StreamCreate(&s, 1));
	OK(cu.EventCreate(&ev, 0));
	printf("seg=0x%llx\npool=%p\n", seg, pool);
	RC_WATCH_POOL_PRIVATE(pool);
	OK(cu.BeginCapture(s, 2));
	RC_WATCH_POOL_ALLOC(pool, (void *)(uintptr_t)seg, 1024);
	OK(cu.MemsetD8Async(seg, 1, 1024, s));
	RC_WATCH_POOL_FREE(pool, (void *)(uintptr_t)seg);
	OK(cu.EndCapture(s, &g1));
	OK(cu.Instantiate(&x1, g1, 0));
	OK(cu.BeginCapture(s, 2));
	RC_WATCH_POOL_ALLOC(pool, (void *)(uintptr_t)seg, 1024);
	OK(cu.MemsetD8Async(seg, 2, 1024, s));
	OK(cu.EndCapture(s, &g2));
	OK(cu.Instantiate(&x2, g2, 0));
	OK(cu.Launch(x1, s));
	OK(cu.Launch(x2, s));
	OK(cu.EventRecord(ev, s));
	OK(cu.EventSync(ev));
	OK(cu.StreamWaitEvent(s, ev, 0));
	OK(cu.StreamSync(s));
	OK(cu.CtxSync());
	/* Misuse: the block goes back to the pool and an eager allocation takes it. */
	RC_WATCH_POOL_FREE(pool, (void *)(uintptr_t)seg);
	RC_WATCH_POOL_ALLOC(pool, (void *)(uintptr_t)seg, 1024);
	OK(cu.Launch(x1, s));
}

/* cuGraphExecUpdate to a graph over another buffer: the executable graph names that one after. */
static void update(void) {
	dptr a, b;
	CUstream s;
	void *g1, *g2, *ex, *info[4] = {0};
	OK(cu.MemAlloc(&a, 256));
	OK(cu.MemAlloc(&b, 256));
	OK(cu.StreamCreate(&s, 1));
	OK(cu.BeginCapture(s, 0));
	OK(cu.MemsetD8Async(a, 1, 256, s));
	OK(cu.EndCapture(s, &g1));
	OK(cu.BeginCapture(s, 0));
	OK(cu.MemsetD8Async(b, 1, 256, s));
	OK(cu.EndCapture(s, &g2));
	OK(cu.Instantiate(&ex, g1, 0));
	printf("update=%d\n", cu.ExecUpdate(ex, g2, info));
	OK(cu.MemFree(a));
	OK(cu.Launch(ex, s));
	OK(cu.MemFree(b));
	OK(cu.Launch(ex, s));
}

/* A kernel whose arguments come packed in extra. */
static void extra(void) {
	dptr a;
	CUstream s;
	void *g, *fn = axpy();
	OK(cu.MemAlloc(&a, 256));
	OK(cu.StreamCreate(&s, 1));
	printf("a=0x%llx\n", a);
	unsigned char buf[24];
	unsigned int k = 1, n = 4;
	size_t size = sizeof buf;
	memcpy(buf, &a, 8);
	memcpy(buf + 8, &a, 8);
	memcpy(buf + 16, &k, 4);
	memcpy(buf + 20, &n, 4);
	void *ex[] = {(void *)1, buf, (void *)2, &size, NULL};
	OK(cu.BeginCapture(s, 0));
	OK(cu.LaunchKernel(fn, 1, 1, 1, 4, 1, 1, 0, s, NULL, ex));
	OK(cu.EndCapture(s, &g));
}

static void forked(void) {
	dptr a;
	OK(cu.MemAlloc(&a, 128));
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		dptr c;
		int r = cu.MemAlloc(&c, 128);
		printf("child=%d\n", (int)getpid());
		fflush(stdout);
		exit(r == 0 ? 0 : 1); /* exit, not _exit: events that wait go at exit */
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
	printf("parent=%d\n", (int)getpid());
	OK(cu.MemFree(a));
}

/* An allocation outside any capture may wait in the interposer and die with the process; one
 * inside a capture is a finding of its own and is sent at once. */
static void crash(void) {
	dptr a, b;
	CUstream s;
	OK(cu.MemAlloc(&a, 128));
	OK(cu.StreamCreate(&s, 1));
	OK(cu.BeginCapture(s, 2));
	OK(cu.MemAlloc(&b, 128));
	printf("a=0x%llx\nb=0x%llx\n", a, b);
	fflush(stdout);
	raise(SIGSEGV);
}

/* Two threads capturing at once in thread-local mode, each with a capture of its own. */
static CUstream thread_stream[2];
static pthread_barrier_t both_capturing;
static void *thread_capture(void *arg) {
	int i = (int)(intptr_t)arg, mode = 1;
	void *g;
	dptr a;
	OK(cu.SetCurrent(ctx));
	OK(cu.ExchangeMode(&mode));
	OK(cu.MemAlloc(&a, 128));
	OK(cu.BeginCapture(thread_stream[i], 1));
	pthread_barrier_wait(&both_capturing);
	OK(cu.MemsetD8Async(a, 1, 128, thread_stream[i]));
	OK(cu.EndCapture(thread_stream[i], &g));
	return NULL;
}

static void threads(void) {
	pthread_t t[2];
	pthread_barrier_init(&both_capturing, NULL, 2);
	for (int i = 0; i < 2; i++)
		OK(cu.StreamCreate(&thread_stream[i], 1));
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, thread_capture, (void *)(intptr_t)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
}

/* N allocations and frees, and launches of a 100-node graph, timed by the caller. */
static void bench_alloc(int n) {
	dptr p;
	for (int i = 0; i < n; i++) {
		cu.MemAlloc(&p, 4096);
		cu.MemFree(p);
	}
}

static void bench_launch(int n) {
	dptr a;
	CUstream s;
	void *g, *ex;
	OK(cu.MemAlloc(&a, 1 << 20));
	OK(cu.StreamCreate(&s, 1));
	OK(cu.BeginCapture(s, 0));
	for (int i = 0; i < 100; i++)
		OK(cu.MemsetD8Async(a + (dptr)i * 1024, (unsigned char)i, 1024, s));
	OK(cu.EndCapture(s, &g));
	OK(cu.Instantiate(&ex, g, 0));
	for (int i = 0; i < n; i++)
		cu.Launch(ex, s);
	OK(cu.StreamSync(s));
}

/* The legacy v1 names. cuMemAlloc's 32-bit pointer cannot name the fake's memory (above 4 GiB):
 * it fails, as cuMemFree of a live allocation's low 32 bits does; neither may touch the model.
 * Pinned host memory through cuMemAllocHost and cuMemHostAlloc; a capture begun by the v1
 * cuStreamBeginCapture, instantiated by cuGraphInstantiate and _v2 (the 5-argument ones). */
static void legacy(void) {
	dptr a;
	unsigned a1 = 0x1234;
	void *h1, *h2, *h3 = (void *)0x99, *g, *x1, *x2, *x3 = (void *)0x77, *node = NULL;
	CUstream s;
	char log[160] = "untouched";
	OK(cu.MemAlloc(&a, 256));
	OK(cu.StreamCreate(&s, 1));
	printf("a=0x%llx\nstream=%p\n", a, s);
	printf("rc_alloc_v1=%d\nalloc_v1=0x%x\n", cv.MemAllocV1(&a1, 256), a1);
	printf("rc_free_v1=%d\n", cv.MemFreeV1((unsigned)a));
	OK(cv.MemAllocHostV1(&h1, 128));
	OK(cv.HostAlloc(&h2, 64, 0));
	printf("host_v1=%p\nhost_alloc=%p\n", h1, h2);
	printf("rc_host_alloc_flags=%d\n", cv.HostAlloc(&h3, 64, 0x100));
	failing("cuMemAllocHost", 2);
	printf("rc_alloc_host_v1_injected=%d\n", cv.MemAllocHostV1(&h3, 64));
	failing(NULL, 0);
	printf("rc_host_untouched=%d\n", h3 == (void *)0x99);
	OK(cu.MemFreeHost(h1));
	OK(cu.MemFreeHost(h2));
	printf("rc_begin_legacy_stream=%d\n", cv.BeginV1(NULL));
	OK(cv.BeginV1(s));
	OK(cu.MemsetD8Async(a, 1, 256, s));
	OK(cu.EndCapture(s, &g));
	printf("graph=%p\n", g);
	printf("rc_instantiate_bad=%d\n", cv.InstantiateV1(&x3, (void *)0xbad, &node, log, sizeof log));
	printf("rc_log_bad=%s\n", log);
	failing("cuGraphInstantiate_v2", 1);
	printf("rc_instantiate_v2_injected=%d\n", cv.InstantiateV2(&x3, g, &node, log, sizeof log));
	failing(NULL, 0);
	printf("rc_exec_untouched=%d\n", x3 == (void *)0x77);
	OK(cv.InstantiateV1(&x1, g, &node, log, sizeof log));
	OK(cv.InstantiateV2(&x2, g, &node, log, sizeof log));
	printf("exec_v1=%p\nexec_v2=%p\n", x1, x2);
	OK(cu.Launch(x1, s)); /* not stale: the failed v1 free left a alone */
	OK(cu.StreamSync(s));
	OK(cu.MemFree(a));
	printf("rc_launch_v1=%d\n", cu.Launch(x1, s));
	printf("rc_launch_v2=%d\n", cu.Launch(x2, s));
}

/* cuMemAllocFromPoolAsync and its _ptsz on the per-thread stream; one failing injected, one on a
 * capturing stream (where the fake, as the driver would make a memory node, fails). */
static void frompool(void) {
	dptr x, y, w = 0x55;
	void *pool, *g;
	CUstream s;
	int props = 0;
	OK(cu.StreamCreate(&s, 1));
	OK(cu.PoolCreate(&pool, &props));
	OK(cv.AllocFromPool(&x, 512, pool, s));
	OK(cv.AllocFromPoolPtsz(&y, 256, pool, NULL));
	printf("pool=%p\nstream=%p\nx=0x%llx\ny=0x%llx\n", pool, s, x, y);
	failing("cuMemAllocFromPoolAsync_ptsz", 2);
	printf("rc_injected=%d\n", cv.AllocFromPoolPtsz(&w, 64, pool, NULL));
	failing(NULL, 0);
	OK(cu.MemFreeAsync(x, s));
	OK(cv.FreeAsyncPtsz(y, NULL));
	OK(cu.BeginCapture(s, 0));
	printf("rc_in_capture=%d\n", cv.AllocFromPool(&w, 64, pool, s));
	printf("rc_untouched=%d\n", w == 0x55);
	printf("rc_end=%d\n", cu.EndCapture(s, &g));
}

/* 16- and 32-bit memsets into a capture on a stream and, begun by the v1 _ptsz entry point, on
 * the per-thread stream; one of each kind failing (injected); none outside the captures. */
static void memsets(void) {
	dptr a, b;
	CUstream s;
	void *g1, *g2;
	OK(cu.MemAlloc(&a, 1024));
	OK(cu.MemAlloc(&b, 1024));
	OK(cu.StreamCreate(&s, 1));
	printf("a=0x%llx\nb=0x%llx\nstream=%p\n", a, b, s);
	OK(cu.BeginCapture(s, 0));
	OK(cv.MemsetD16(a, 0x1111, 64, s));
	OK(cu.MemsetD32Async(a + 256, 7, 16, s));
	failing("cuMemsetD16Async", 1);
	printf("rc_d16_injected=%d\n", cv.MemsetD16(a, 1, 8, s));
	failing(NULL, 0);
	OK(cu.EndCapture(s, &g1));
	OK(cv.BeginV1Ptsz(NULL));
	OK(cv.MemsetD16Ptsz(b, 2, 32, NULL));
	OK(cv.MemsetD32Ptsz(b + 64, 3, 8, (CUstream)0x2));
	failing("cuMemsetD32Async_ptsz", 1);
	printf("rc_d32_ptsz_injected=%d\n", cv.MemsetD32Ptsz(b, 1, 8, NULL));
	failing(NULL, 0);
	OK(cv.EndPtsz(NULL, &g2));
	OK(cv.MemsetD16(a, 0, 8, s));
	OK(cv.MemsetD32Ptsz(b, 0, 8, NULL));
	OK(cu.StreamSync(s));
}

/* cuEventRecordWithFlags forks a stream into a capture (and a failed one does not); after a
 * private pool's declaration it and its _ptsz send record events, failed ones none. */
static char record_tag;
static void record(void) {
	dptr a;
	CUstream s1, s2, s3;
	void *e1, *e2, *e3, *g;
	OK(cu.MemAlloc(&a, 256));
	OK(cu.StreamCreate(&s1, 1));
	OK(cu.StreamCreate(&s2, 1));
	OK(cu.StreamCreate(&s3, 1));
	OK(cu.EventCreate(&e1, 0));
	OK(cu.EventCreate(&e2, 0));
	OK(cu.EventCreate(&e3, 0));
	printf("s1=%p\ns2=%p\ns3=%p\ne1=%p\ne2=%p\ne3=%p\n", s1, s2, s3, e1, e2, e3);
	OK(cu.BeginCapture(s1, 0));
	OK(cv.RecordFlags(e1, s1, 0));
	OK(cu.StreamWaitEvent(s2, e1, 0));
	printf("rc_flags=%d\n", cv.RecordFlags(e3, s1, 0x4));
	printf("rc_wait_unrecorded=%d\n", cu.StreamWaitEvent(s3, e3, 0));
	OK(cu.MemsetD8Async(a, 1, 256, s2));
	OK(cv.RecordFlags(e2, s2, 0));
	OK(cu.StreamWaitEvent(s1, e2, 0));
	OK(cu.EndCapture(s1, &g));
	RC_WATCH_POOL_PRIVATE(&record_tag);
	OK(cv.RecordFlags(e1, s1, 1));
	OK(cv.RecordFlagsPtsz(e2, NULL, 0));
	printf("rc_flags_private=%d\n", cv.RecordFlags(e3, s1, 0x4));
	failing("cuEventRecordWithFlags_ptsz", 1);
	printf("rc_ptsz_injected=%d\n", cv.RecordFlagsPtsz(e3, NULL, 0));
	failing(NULL, 0);
}

/* The v1 cuGraphExecUpdate: one that fails (another topology) changes nothing, one that succeeds
 * moves the executable graph to the new graph's memory. */
static void update_v1(void) {
	dptr a, b, c;
	CUstream s;
	void *g1, *g2, *g3, *ex, *node = (void *)0x1;
	int result = -1;
	OK(cu.MemAlloc(&a, 256));
	OK(cu.MemAlloc(&b, 256));
	OK(cu.MemAlloc(&c, 256));
	OK(cu.StreamCreate(&s, 1));
	OK(cu.BeginCapture(s, 0));
	OK(cu.MemsetD8Async(a, 1, 256, s));
	OK(cu.EndCapture(s, &g1));
	OK(cu.BeginCapture(s, 0));
	OK(cu.MemsetD8Async(b, 1, 256, s));
	OK(cu.EndCapture(s, &g2));
	OK(cu.BeginCapture(s, 0));
	OK(cu.MemsetD8Async(c, 1, 128, s));
	OK(cu.MemsetD8Async(c + 128, 1, 128, s));
	OK(cu.EndCapture(s, &g3));
	OK(cu.Instantiate(&ex, g1, 0));
	printf("exec=%p\ng2=%p\ng3=%p\n", ex, g2, g3);
	printf("rc_update_bad=%d\n", cv.ExecUpdateV1(ex, g3, &node, &result));
	printf("rc_result_bad=%d\n", result);
	OK(cu.MemFree(c));
	printf("rc_launch_after_bad=%d\n", cu.Launch(ex, s));
	OK(cu.StreamSync(s));
	printf("rc_update=%d\n", cv.ExecUpdateV1(ex, g2, &node, &result));
	printf("rc_result=%d\n", result);
	OK(cu.MemFree(a));
	printf("rc_launch_a_freed=%d\n", cu.Launch(ex, s));
	OK(cu.StreamSync(s));
	OK(cu.MemFree(b));
	printf("rc_launch_b_freed=%d\n", cu.Launch(ex, s));
}

/* cuGraphInstantiateWithParams(_ptsz), which the fake lacks: linked (weakly) only the
 * interposer's wrappers are found; dlsym and cuGetProcAddress find nothing. */
static void withparams(const char *way) {
	CUstream s;
	void *g, *ex = (void *)0x77;
	dptr a;
	OK(cu.MemAlloc(&a, 256));
	OK(cu.StreamCreate(&s, 1));
	OK(cu.BeginCapture(s, 0));
	OK(cu.MemsetD8Async(a, 1, 256, s));
	OK(cu.EndCapture(s, &g));
#ifdef LINKED
	(void)way;
	unsigned long long params[4] = {0}; /* CUDA_GRAPH_INSTANTIATE_PARAMS */
	int (*with)(void **, void *, void *) = (int (*)(void **, void *, void *))cuGraphInstantiateWithParams;
	int (*with_ptsz)(void **, void *, void *) = (int (*)(void **, void *, void *))cuGraphInstantiateWithParams_ptsz;
	printf("withparams=%s\nwithparams_ptsz=%s\n", object_of((const void *)with), object_of((const void *)with_ptsz));
	if (with)
		printf("rc_withparams=%d\n", with(&ex, g, params));
	if (with_ptsz)
		printf("rc_withparams_ptsz=%d\n", with_ptsz(&ex, g, params));
#else
	if (!strcmp(way, "dlsym")) {
		printf("withparams=%s\n", object_of(dlsym(lib, "cuGraphInstantiateWithParams")));
		printf("withparams_ptsz=%s\n", object_of(dlsym(lib, "cuGraphInstantiateWithParams_ptsz")));
	} else {
		void *p = (void *)0x1;
		int st = -1;
		printf("rc_withparams_proc=%d\n", gpa("cuGraphInstantiateWithParams", &p, 12040, 0, &st));
		printf("withparams=%s\n", object_of(p));
		p = (void *)0x1;
		printf("rc_withparams_ptsz_proc=%d\n", gpa("cuGraphInstantiateWithParams", &p, 12040, 2, &st));
		printf("withparams_ptsz=%s\n", object_of(p));
	}
#endif
	printf("default_withparams=%s\n", object_of(dlsym(RTLD_DEFAULT, "cuGraphInstantiateWithParams")));
	printf("rc_exec_untouched=%d\n", ex == (void *)0x77);
}

/* Each variant's pointer as bound: whose object it lies in. */
static void via(void) {
#define VIA(f, sym, base, version, flags, type) printf("via_%s=%s\n", #sym, object_of((const void *)cv.f));
	CU_VARIANTS(VIA)
}

/* dlvsym answers, as "OBJECT+OFFSET" (ASLR moves bases, not offsets) or "null". */
static void show(const char *key, const void *p) {
	Dl_info info;
	if (!p || !dladdr(p, &info))
		printf("%s=%s\n", key, p ? "unknown" : "null");
	else
		printf("%s=%s+0x%lx\n", key, object_of(p), (unsigned long)((const char *)p - (const char *)info.dli_fbase));
}

static void dlvsym_before(void) {
	show("cu_default_before", dlvsym(RTLD_DEFAULT, "cuMemAlloc_v2", "ANY"));
	show("cu_next_before", dlvsym(RTLD_NEXT, "cuMemAlloc_v2", "ANY"));
}

static void dlvsyms(void) {
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	/* Whose dlvsym the program calls: the interposer's, preloaded. */
	printf("dlvsym_is=%s\n", object_of((const void *)dlvsym));
	show("cu_handle", dlvsym(lib, "cuMemAlloc_v2", "ANY"));
	show("cu_handle_glibc", dlvsym(lib, "cuMemAlloc_v2", "GLIBC_2.2.5"));
	show("cu_default", dlvsym(RTLD_DEFAULT, "cuMemAlloc_v2", "ANY"));
	show("cu_missing", dlvsym(lib, "cuGraphInstantiateWithParams", "ANY"));
	show("memcpy_next", dlvsym(RTLD_NEXT, "memcpy", "GLIBC_2.14"));
	show("memcpy_default", dlvsym(RTLD_DEFAULT, "memcpy", "GLIBC_2.14"));
	show("memcpy_libc", dlvsym(libc, "memcpy", "GLIBC_2.14"));
	show("memcpy_libc_old", dlvsym(libc, "memcpy", "GLIBC_2.2.5"));
	show("memcpy_libc_none", dlvsym(libc, "memcpy", "NO_SUCH_VERSION"));
	show("dlsym_libc", dlvsym(libc, "dlsym", "GLIBC_2.34"));
	show("dlvsym_libc", dlvsym(libc, "dlvsym", "GLIBC_2.34"));
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: cuda_prog linked|dlsym|proc|ptsz SCENARIO [N]\n");
		return 2;
	}
	const char *sc = argv[2];
	if (!strcmp(sc, "probe")) {
		/* Before any driver is loaded: a program probing for one must not find ours. */
		printf("cuInit=%s\n", dlsym(RTLD_DEFAULT, "cuInit") ? "found" : "null");
		printf("cuMemAlloc_v2=%s\n", dlsym(RTLD_DEFAULT, "cuMemAlloc_v2") ? "found" : "null");
		printf("next_cuMemAlloc_v2=%s\n", dlsym(RTLD_NEXT, "cuMemAlloc_v2") ? "found" : "null");
		void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
		printf("loaded_cuMemAlloc_v2=%s\n", h && dlsym(RTLD_DEFAULT, "cuMemAlloc_v2") ? "found" : "null");
		return 0;
	}
	if (!strcmp(sc, "dlvsym"))
		dlvsym_before();
	bind(argv[1]);
	init();
	int n = argc > 3 ? atoi(argv[3]) : 0;
	if (!strcmp(sc, "basic"))
		basic();
	else if (!strcmp(sc, "refuse"))
		refuse();
	else if (!strcmp(sc, "repeat"))
		repeat();
	else if (!strcmp(sc, "plain"))
		plain();
	else if (!strcmp(sc, "stacks"))
		stacks();
	else if (!strcmp(sc, "join"))
		join();
	else if (!strcmp(sc, "tcap"))
		tcap();
	else if (!strcmp(sc, "streams"))
		streams();
	else if (!strcmp(sc, "async"))
		async();
	else if (!strcmp(sc, "pool"))
		pool();
	else if (!strcmp(sc, "update"))
		update();
	else if (!strcmp(sc, "extra"))
		extra();
	else if (!strcmp(sc, "fork"))
		forked();
	else if (!strcmp(sc, "crash"))
		crash();
	else if (!strcmp(sc, "threads"))
		threads();
	else if (!strcmp(sc, "legacy"))
		legacy();
	else if (!strcmp(sc, "frompool"))
		frompool();
	else if (!strcmp(sc, "memsets"))
		memsets();
	else if (!strcmp(sc, "record"))
		record();
	else if (!strcmp(sc, "update-v1"))
		update_v1();
	else if (!strcmp(sc, "withparams"))
		withparams(argv[1]);
	else if (!strcmp(sc, "via"))
		via();
	else if (!strcmp(sc, "dlvsym"))
		dlvsyms();
	else if (!strcmp(sc, "bench-alloc"))
		bench_alloc(n);
	else if (!strcmp(sc, "bench-launch"))
		bench_launch(n);
	else {
		printf("FAIL unknown scenario %s\n", sc);
		return 2;
	}
	printf("ok %s\n", sc);
	return failures ? 1 : 0;
}
