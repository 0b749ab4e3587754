/* acl_prog.c: a program on the (fake) ACL runtime that the interposer's tests run under
 * LD_PRELOAD. It reaches libascendcl.so as torch_npu does, one of two ways:
 *
 *   linked   the exported symbols (built with -DLINKED, linked to -lascendcl)
 *   dlsym    dlopen("libascendcl.so") + dlsym of each name
 *
 * Usage: acl_prog WAY SCENARIO. It prints what the tests compare ("key=value" lines) and exits 0,
 * or prints "FAIL ..." and exits 1. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void *aclrtStream;

/* field, name, signature */
#define ACL_FUNCS(F)                                                                              \
	F(Init, aclInit, int (*)(const char *))                                                   \
	F(SetDevice, aclrtSetDevice, int (*)(int32_t))                                            \
	F(CreateStream, aclrtCreateStream, int (*)(aclrtStream *))                                \
	F(Malloc, aclrtMalloc, int (*)(void **, size_t, int))                                     \
	F(Free, aclrtFree, int (*)(void *))                                                       \
	F(MallocHost, aclrtMallocHost, int (*)(void **, size_t))                                  \
	F(FreeHost, aclrtFreeHost, int (*)(void *))                                               \
	F(Memcpy, aclrtMemcpy, int (*)(void *, size_t, const void *, size_t, int))                \
	F(MemcpyAsync, aclrtMemcpyAsync, int (*)(void *, size_t, const void *, size_t, int, aclrtStream)) \
	F(MemsetAsync, aclrtMemsetAsync, int (*)(void *, size_t, int32_t, size_t, aclrtStream))  \
	F(CreateEvent, aclrtCreateEvent, int (*)(void **))                                        \
	F(RecordEvent, aclrtRecordEvent, int (*)(void *, aclrtStream))                            \
	F(StreamWaitEvent, aclrtStreamWaitEvent, int (*)(aclrtStream, void *))                    \
	F(SyncStream, aclrtSynchronizeStream, int (*)(aclrtStream))                               \
	F(SyncDevice, aclrtSynchronizeDevice, int (*)(void))                                      \
	F(SyncEvent, aclrtSynchronizeEvent, int (*)(void *))                                      \
	F(ExchangeMode, aclmdlRICaptureThreadExchangeMode, int (*)(int *))                        \
	F(CaptureBegin, aclmdlRICaptureBegin, int (*)(aclrtStream, int))                          \
	F(CaptureEnd, aclmdlRICaptureEnd, int (*)(aclrtStream, void **))                          \
	F(Execute, aclmdlRIExecuteAsync, int (*)(void *, aclrtStream))                            \
	F(Destroy, aclmdlRIDestroy, int (*)(void *))                                              \
	F(LaunchKernel, aclrtLaunchKernel, int (*)(void *, uint32_t, const void *, size_t, aclrtStream)) \
	F(BinaryLoadFromData, aclrtBinaryLoadFromData, int (*)(const void *, size_t, const void *, void **)) \
	F(BinaryGetFunction, aclrtBinaryGetFunction, int (*)(void *, const char *, void **))      \
	F(LaunchKernelV2, aclrtLaunchKernelV2, int (*)(void *, uint32_t, const void *, size_t, void *, aclrtStream)) \
	F(LaunchKernelWithHostArgs, aclrtLaunchKernelWithHostArgs,                                \
	  int (*)(void *, uint32_t, aclrtStream, void *, void *, size_t, void *, size_t))         \
	F(LaunchKernelWithConfig, aclrtLaunchKernelWithConfig, int (*)(void *, uint32_t, aclrtStream, void *, void *, void *)) \
	F(KernelArgsInit, aclrtKernelArgsInit, int (*)(void *, void **))                          \
	F(KernelArgsAppend, aclrtKernelArgsAppend, int (*)(void *, void *, size_t, void **))      \
	F(KernelArgsFinalize, aclrtKernelArgsFinalize, int (*)(void *))

#define FIELD(f, sym, type) __typeof__(type) f;
static struct {
	ACL_FUNCS(FIELD)
} acl;

#ifdef LINKED
#define DECL(f, sym, type) extern int sym();
ACL_FUNCS(DECL)
#endif

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
#define OK(call)                                                    \
	do {                                                        \
		int rc_ = (call);                                   \
		CHECK(rc_ == 0, "%s = %d", #call, rc_);             \
	} while (0)

enum { H2D = 1, D2H = 2, D2D = 3 };

static void bind(const char *way) {
	void *h = dlopen("libascendcl.so", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("FAIL dlopen: %s\n", dlerror());
		exit(1);
	}
#ifdef LINKED
	(void)way;
#define LINK(f, sym, type) acl.f = (type)sym;
	ACL_FUNCS(LINK)
#else
	(void)way;
#define SYM(f, sym, type) acl.f = (type)dlsym(h, #sym);
	ACL_FUNCS(SYM)
#endif
#define NEED(f, sym, type)                                 \
	if (!acl.f) {                                      \
		printf("FAIL no %s\n", #sym);              \
		exit(1);                                   \
	}
	ACL_FUNCS(NEED)
}

/* Two buffers, a model RI that sets a and copies it to b; executed, then b freed and executed
 * again; destroyed. */
static void basic(void) {
	void *a, *b, *ri;
	aclrtStream s;
	OK(acl.Malloc(&a, 4096, 0));
	OK(acl.Malloc(&b, 4096, 0));
	OK(acl.CreateStream(&s));
	printf("a=%p\nb=%p\nstream=%p\n", a, b, s);
	OK(acl.CaptureBegin(s, 0));
	OK(acl.MemsetAsync(a, 4096, 1, 4096, s));
	OK(acl.MemcpyAsync(b, 4096, a, 4096, D2D, s));
	OK(acl.CaptureEnd(s, &ri));
	printf("ri=%p\n", ri);
	OK(acl.Execute(ri, s));
	OK(acl.SyncStream(s));
	OK(acl.Free(b));
	/* The fake answers a replay over freed memory 507011, as the runtime does. */
	printf("stale_launch=%d\n", acl.Execute(ri, s));
	OK(acl.Destroy(ri));
	OK(acl.Free(a));
}

/* A model RI that sets a; a freed and its bytes handed to a bystander, then the RI executed. */
static void refuse(void) {
	void *a, *by, *ri;
	aclrtStream s;
	unsigned char host[64];
	OK(acl.Malloc(&a, 64, 0));
	OK(acl.CreateStream(&s));
	OK(acl.CaptureBegin(s, 0));
	OK(acl.MemsetAsync(a, 64, 0xaa, 64, s));
	OK(acl.CaptureEnd(s, &ri));
	OK(acl.Free(a));
	OK(acl.Malloc(&by, 64, 0));
	printf("a=%p\nbystander=%p\n", a, by);
	memset(host, 0x11, sizeof host);
	OK(acl.Memcpy(by, 64, host, 64, H2D));
	printf("launch=%d\n", acl.Execute(ri, s));
	OK(acl.SyncStream(s));
	memset(host, 0, sizeof host);
	OK(acl.Memcpy(host, 64, by, 64, D2H));
	printf("bystander_byte=%02x\n", host[0]);
}

/* A second stream forked into the capture and joined back; an allocation inside the capture; host
 * memory; the mode exchange. */
static void join(void) {
	void *a, *b, *h, *e1, *e2, *ri;
	aclrtStream s1, s2;
	int mode = 2;
	OK(acl.ExchangeMode(&mode));
	OK(acl.Malloc(&a, 256, 0));
	OK(acl.CreateStream(&s1));
	OK(acl.CreateStream(&s2));
	OK(acl.CreateEvent(&e1));
	OK(acl.CreateEvent(&e2));
	printf("s1=%p\ns2=%p\ne1=%p\n", s1, s2, e1);
	OK(acl.CaptureBegin(s1, 2));
	OK(acl.Malloc(&b, 256, 0));
	OK(acl.RecordEvent(e1, s1));
	OK(acl.StreamWaitEvent(s2, e1));
	OK(acl.MemsetAsync(a, 256, 7, 256, s2));
	OK(acl.RecordEvent(e2, s2));
	OK(acl.StreamWaitEvent(s1, e2));
	OK(acl.Free(b));
	OK(acl.CaptureEnd(s1, &ri));
	OK(acl.MemsetAsync(a, 256, 8, 256, s2));
	OK(acl.SyncDevice());
	OK(acl.MallocHost(&h, 128));
	OK(acl.FreeHost(h));
}

/* The axpy kernel with its packed arguments {y, x, a, n} in host memory (y = a, x = a + 16: an
 * interior pointer), then the same block in device memory, which the interposer must not read. */
static void kernel(void) {
	void *a, *dev, *bin, *fn, *ri;
	aclrtStream s;
	static const char binary[] = "\x7f" "ELF replaycheck_axpy";
	OK(acl.BinaryLoadFromData(binary, sizeof binary, NULL, &bin));
	OK(acl.BinaryGetFunction(bin, "replaycheck_axpy", &fn));
	OK(acl.Malloc(&a, 256, 0));
	OK(acl.Malloc(&dev, 64, 0));
	OK(acl.CreateStream(&s));
	printf("a=%p\nfunc=%p\nargs_dev=%p\n", a, fn, dev);
	unsigned char args[24];
	uint64_t y = (uint64_t)(uintptr_t)a, x = y + 16;
	uint32_t k = 1, n = 4;
	memcpy(args, &y, 8);
	memcpy(args + 8, &x, 8);
	memcpy(args + 16, &k, 4);
	memcpy(args + 20, &n, 4);
	OK(acl.Memcpy(dev, 64, args, sizeof args, H2D));
	OK(acl.CaptureBegin(s, 0));
	OK(acl.LaunchKernel(fn, 1, args, sizeof args, s));
	OK(acl.LaunchKernel(fn, 1, dev, sizeof args, s));
	OK(acl.CaptureEnd(s, &ri));
}

static void pack(unsigned char *args, void *y, uint32_t n) {
	uint64_t yv = (uint64_t)(uintptr_t)y, xv = yv + 16;
	uint32_t k = 1;
	memcpy(args, &yv, 8);
	memcpy(args + 8, &xv, 8);
	memcpy(args + 16, &k, 4);
	memcpy(args + 20, &n, 4);
}

/* The other launch entry points, each with the packed {y, x, a, n} (y = a buffer, x = y + 16),
 * inside one capture after one eager launch (no op): aclrtLaunchKernelV2 with the block in host
 * memory, then in device memory (not read; named as r=); aclrtLaunchKernelWithHostArgs with a
 * block whose bytes past argsSize hold another pointer (never scanned); two argument lists, b's
 * launched before a's, each naming its own buffer. */
static void launches(void) {
	void *a, *b, *c, *dev, *bin, *fn, *ri, *la, *lb, *ph;
	aclrtStream s;
	static const char binary[] = "\x7f" "ELF replaycheck_axpy";
	OK(acl.BinaryLoadFromData(binary, sizeof binary, NULL, &bin));
	OK(acl.BinaryGetFunction(bin, "replaycheck_axpy", &fn));
	OK(acl.Malloc(&a, 256, 0));
	OK(acl.Malloc(&b, 256, 0));
	OK(acl.Malloc(&c, 256, 0));
	OK(acl.Malloc(&dev, 64, 0));
	OK(acl.CreateStream(&s));
	printf("a=%p\nb=%p\nc=%p\nfunc=%p\nargs_dev=%p\n", a, b, c, fn, dev);
	unsigned char args[32];
	pack(args, a, 4);
	uint64_t cv = (uint64_t)(uintptr_t)c;
	memcpy(args + 24, &cv, 8); /* past argsSize */
	OK(acl.Memcpy(dev, 64, args, 24, H2D));
	OK(acl.LaunchKernelV2(fn, 1, args, 24, NULL, s)); /* eager: no op */

	OK(acl.KernelArgsInit(fn, &la));
	OK(acl.KernelArgsInit(fn, &lb));
	uint64_t av = (uint64_t)(uintptr_t)a, bv = (uint64_t)(uintptr_t)b, ax = av + 16, bx = bv + 16;
	uint32_t k = 1, n = 4;
	OK(acl.KernelArgsAppend(la, &av, 8, &ph));
	OK(acl.KernelArgsAppend(lb, &bv, 8, &ph));
	OK(acl.KernelArgsAppend(la, &ax, 8, &ph));
	OK(acl.KernelArgsAppend(lb, &bx, 8, &ph));
	OK(acl.KernelArgsAppend(la, &k, 4, &ph));
	OK(acl.KernelArgsAppend(lb, &k, 4, &ph));
	OK(acl.KernelArgsAppend(la, &n, 4, &ph));
	OK(acl.KernelArgsAppend(lb, &n, 4, &ph));
	OK(acl.KernelArgsFinalize(la));
	OK(acl.KernelArgsFinalize(lb));
	av = bv = cv; /* appended values were copied */

	OK(acl.CaptureBegin(s, 0));
	OK(acl.LaunchKernelV2(fn, 1, args, 24, NULL, s));
	OK(acl.LaunchKernelV2(fn, 1, dev, 24, NULL, s));
	OK(acl.LaunchKernelWithHostArgs(fn, 1, s, NULL, args, 24, NULL, 0));
	OK(acl.LaunchKernelWithConfig(fn, 1, s, NULL, lb, NULL));
	OK(acl.LaunchKernelWithConfig(fn, 1, s, NULL, la, NULL));
	OK(acl.CaptureEnd(s, &ri));
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: acl_prog linked|dlsym SCENARIO\n");
		return 2;
	}
	bind(argv[1]);
	OK(acl.Init(NULL));
	OK(acl.SetDevice(0));
	const char *sc = argv[2];
	if (!strcmp(sc, "basic"))
		basic();
	else if (!strcmp(sc, "refuse"))
		refuse();
	else if (!strcmp(sc, "join"))
		join();
	else if (!strcmp(sc, "kernel"))
		kernel();
	else if (!strcmp(sc, "launches"))
		launches();
	else {
		printf("FAIL unknown scenario %s\n", sc);
		return 2;
	}
	printf("ok %s\n", sc);
	return failures ? 1 : 0;
}
