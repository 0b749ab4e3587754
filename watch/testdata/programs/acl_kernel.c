/* acl_kernel: a kernel argument on Ascend, through each launch entry point CANN offers. A model RI
 * captures the axpy kernel (y = a*x + y) whose packed arguments {y, x, a, n} hold y = b:
 *
 *   hazard, clean              aclrtLaunchKernel, the block in host memory
 *   hazard-hostargs, clean-... aclrtLaunchKernelWithHostArgs (host memory the runtime copies)
 *   hazard-config, clean-...   aclrtLaunchKernelWithConfig over an argument list built with
 *                              aclrtKernelArgsInit, Append (one per parameter), Finalize
 *
 * then b is freed and the same size allocated again at b's address (hazard) or b is kept (clean).
 * Those findings are possible ones, naming the argument. With the block in device memory the
 * interposer cannot read it:
 *
 *   hazard-devargs             aclrtLaunchKernel, b re-allocated: a blind spot, noted
 *   hazard-v2-devargs, clean-. aclrtLaunchKernelV2, b kept, and the argument block itself freed
 *                              and allocated again at its address (hazard): the graph reads the
 *                              block when it runs, so that is a stale replay of its own.
 *
 * Prints "launch=<status>". */
#define RC_ACL
#include "drv.h"

/* The launch entry points drv.h does not bind, reached the same way (RC_ATTACH). */
typedef void *aclrtArgsHandle;
typedef void *aclrtParamHandle;
#define RC_KERNEL_ENTRY_POINTS(X)                                                                                         \
	X(LaunchKernelV2, aclrtLaunchKernelV2, (aclrtFuncHandle, uint32_t, const void *, size_t, void *, aclrtStream))    \
	X(LaunchKernelWithHostArgs, aclrtLaunchKernelWithHostArgs,                                                        \
	  (aclrtFuncHandle, uint32_t, aclrtStream, void *, void *, size_t, void *, size_t))                               \
	X(LaunchKernelWithConfig, aclrtLaunchKernelWithConfig, (aclrtFuncHandle, uint32_t, aclrtStream, void *, aclrtArgsHandle, void *)) \
	X(KernelArgsInit, aclrtKernelArgsInit, (aclrtFuncHandle, aclrtArgsHandle *))                                      \
	X(KernelArgsAppend, aclrtKernelArgsAppend, (aclrtArgsHandle, void *, size_t, aclrtParamHandle *))                 \
	X(KernelArgsFinalize, aclrtKernelArgsFinalize, (aclrtArgsHandle))

#define RC_KERNEL_FIELD(f, sym, params) aclError(*f) params;
static struct {
	RC_KERNEL_ENTRY_POINTS(RC_KERNEL_FIELD)
} kl;

#if RC_ATTACH == RC_ATTACH_LINKED
#define RC_KERNEL_DECLARE(f, sym, params) extern aclError sym params;
RC_KERNEL_ENTRY_POINTS(RC_KERNEL_DECLARE)
#endif

static void kernel_load(void) {
#if RC_ATTACH == RC_ATTACH_LINKED
#define RC_KERNEL_SET(f, sym, params) kl.f = sym;
	RC_KERNEL_ENTRY_POINTS(RC_KERNEL_SET)
#else
	void *lib = dlopen("libascendcl.so", RTLD_NOW | RTLD_LOCAL), *fp;
	if (!lib)
		die(dlerror(), 0);
#define RC_KERNEL_SET(f, sym, params)         \
	if (!(fp = dlsym(lib, RC_STR(sym))))  \
		die("dlsym " RC_STR(sym), 0); \
	memcpy(&kl.f, &fp, sizeof fp);
	RC_KERNEL_ENTRY_POINTS(RC_KERNEL_SET)
#endif
}

enum { N = 4096, ARGS = 24 };

/* Any binary naming the kernel: the fake runs replaycheck_axpy by name. */
static const char binary[] = "replaycheck-fake binary: replaycheck_axpy";

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard",        "clean",        "hazard-devargs",    "hazard-hostargs",  "clean-hostargs",
					       "hazard-config", "clean-config", "hazard-v2-devargs", "clean-v2-devargs", NULL};
	enum { HAZARD, CLEAN, DEVARGS, HOSTARGS, CLEAN_HOSTARGS, CONFIG, CLEAN_CONFIG, V2_DEVARGS, CLEAN_V2_DEVARGS };
	int v = pick(argc, argv, variants);
	int clean = v == CLEAN || v == CLEAN_HOSTARGS || v == CLEAN_CONFIG || v == CLEAN_V2_DEVARGS;
	int v2 = v == V2_DEVARGS || v == CLEAN_V2_DEVARGS;
	acl_open();
	kernel_load();
	aclrtStream s = acl_stream();
	aclrtBinHandle bin;
	aclrtFuncHandle f;
	CK(acl.BinaryLoadFromData(binary, sizeof binary, NULL, &bin));
	CK(acl.BinaryGetFunction(bin, "replaycheck_axpy", &f));
	void *x = acl_alloc(N), *b = acl_alloc(N);
	acl_fill(x, 0x01, N);
	acl_fill(b, 0x00, N);

	/* the packed arguments {void *y; void *x; uint32_t a; uint32_t n;} */
	uint32_t a = 2, lanes = N / 4;
	unsigned char args[ARGS];
	memcpy(args, &b, 8);
	memcpy(args + 8, &x, 8);
	memcpy(args + 16, &a, 4);
	memcpy(args + 20, &lanes, 4);
	const void *block = args;
	void *devargs = NULL;
	if (v == DEVARGS || v2) {
		devargs = acl_alloc(ARGS);
		CK(acl.Memcpy(devargs, ARGS, args, ARGS, ACL_MEMCPY_HOST_TO_DEVICE));
		block = devargs;
	}
	aclrtArgsHandle list = NULL;
	if (v == CONFIG || v == CLEAN_CONFIG) {
		aclrtParamHandle p;
		CK(kl.KernelArgsInit(f, &list));
		CK(kl.KernelArgsAppend(list, &b, 8, &p));
		CK(kl.KernelArgsAppend(list, &x, 8, &p));
		CK(kl.KernelArgsAppend(list, &a, 4, &p));
		CK(kl.KernelArgsAppend(list, &lanes, 4, &p));
		CK(kl.KernelArgsFinalize(list));
	}
	CK(acl.CaptureBegin(s, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
	if (v == HOSTARGS || v == CLEAN_HOSTARGS)
		CK(kl.LaunchKernelWithHostArgs(f, 4, s, NULL, args, ARGS, NULL, 0));
	else if (list)
		CK(kl.LaunchKernelWithConfig(f, 4, s, NULL, list, NULL));
	else if (v2)
		CK(kl.LaunchKernelV2(f, 4, block, ARGS, NULL, s));
	else
		CK(acl.LaunchKernel(f, 4, block, ARGS, s));
	aclmdlRI ri = acl_end(s);
	CK(acl.ExecuteAsync(ri, s));
	CK(acl.SynchronizeStream(s));

	if (v2 && !clean) {
		void *old = devargs;
		CK(acl.Free(devargs));
		devargs = acl_alloc(ARGS);
		if (devargs != old)
			die("the re-allocation landing at the argument block's address", (long long)(uintptr_t)devargs);
	} else if (!v2 && !clean) {
		void *old = b;
		CK(acl.Free(b));
		b = acl_alloc(N);
		if (b != old)
			die("the re-allocation landing at b's address", (long long)(uintptr_t)b);
	}
	int rc = acl.ExecuteAsync(ri, s);
	CK(acl.SynchronizeStream(s));
	printf("launch=%d\n", rc);

	CK(acl.RIDestroy(ri));
	if (devargs)
		CK(acl.Free(devargs));
	CK(acl.Free(b));
	CK(acl.Free(x));
	return acl_launched(rc) ? 0 : 3;
}
