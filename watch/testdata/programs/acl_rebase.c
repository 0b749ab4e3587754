/* acl_rebase: re-base on Ascend, as cuda_rebase: a model RI captures a copy through buffer b; the
 * program frees b and allocates a larger one (hazard) or keeps b beside it (clean), then replays.
 * Prints "launch=<status>" of that replay (the fake fails a replay over freed memory 507011). */
#define RC_ACL
#include "drv.h"

enum { N = 4096 };

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard", "clean", NULL};
	int clean = pick(argc, argv, variants);
	acl_open();
	aclrtStream s = acl_stream();
	void *src = acl_alloc(N), *b = acl_alloc(N), *out = acl_alloc(N);
	acl_fill(src, 0xC1, N);

	CK(acl.CaptureBegin(s, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
	CK(acl.MemcpyAsync(b, N, src, N, ACL_MEMCPY_DEVICE_TO_DEVICE, s));
	CK(acl.MemcpyAsync(out, N, b, N, ACL_MEMCPY_DEVICE_TO_DEVICE, s));
	aclmdlRI ri = acl_end(s);
	CK(acl.ExecuteAsync(ri, s));
	CK(acl.SynchronizeStream(s));

	if (!clean)
		CK(acl.Free(b));
	void *grown = acl_alloc(2 * N);
	int rc = acl.ExecuteAsync(ri, s);
	CK(acl.SynchronizeStream(s));
	printf("launch=%d\n", rc);

	CK(acl.RIDestroy(ri));
	CK(acl.Free(grown));
	if (clean)
		CK(acl.Free(b));
	CK(acl.Free(src));
	CK(acl.Free(out));
	return acl_launched(rc) ? 0 : 3;
}
