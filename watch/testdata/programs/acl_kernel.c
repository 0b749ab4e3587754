/* acl_kernel: a kernel argument on Ascend. A model RI captures the axpy kernel
 * (aclrtLaunchKernel, y = a*x + y) whose packed argument block, in host memory, holds y = b; b is
 * freed and the same size allocated again at b's address (hazard), or b is kept (clean). The
 * finding is a possible one, naming the argument. With the argument block in device memory
 * (hazard-devargs) the interposer cannot read it: the hazard is a blind spot it notes.
 * Prints "launch=<status>". */
#define RC_ACL
#include "drv.h"

enum { N = 4096, ARGS = 24 };

/* Any binary naming the kernel: the fake runs replaycheck_axpy by name. */
static const char binary[] = "replaycheck-fake binary: replaycheck_axpy";

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard", "clean", "hazard-devargs", NULL};
	enum { HAZARD, CLEAN, DEVARGS };
	int v = pick(argc, argv, variants);
	acl_open();
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
	if (v == DEVARGS) {
		devargs = acl_alloc(ARGS);
		CK(acl.Memcpy(devargs, ARGS, args, ARGS, ACL_MEMCPY_HOST_TO_DEVICE));
		block = devargs;
	}
	CK(acl.CaptureBegin(s, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
	CK(acl.LaunchKernel(f, 4, block, ARGS, s));
	aclmdlRI ri = acl_end(s);
	CK(acl.ExecuteAsync(ri, s));
	CK(acl.SynchronizeStream(s));

	void *old = b;
	if (v != CLEAN) {
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
