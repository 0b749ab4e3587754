/* acl_free: replay after free on Ascend, as cuda_free: a model RI copies src to tmp and tmp to
 * out; tmp is freed before the next replay (hazard) or after the model RI is destroyed (clean).
 * Prints "launch=<status>" of the replay after the free. */
#define RC_ACL
#include "drv.h"

enum { N = 4096 };

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard", "clean", NULL};
	int clean = pick(argc, argv, variants);
	acl_open();
	aclrtStream s = acl_stream();
	void *src = acl_alloc(N), *tmp = acl_alloc(N), *out = acl_alloc(N);
	acl_fill(src, 0xC2, N);

	CK(acl.CaptureBegin(s, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
	CK(acl.MemcpyAsync(tmp, N, src, N, ACL_MEMCPY_DEVICE_TO_DEVICE, s));
	CK(acl.MemcpyAsync(out, N, tmp, N, ACL_MEMCPY_DEVICE_TO_DEVICE, s));
	aclmdlRI ri = acl_end(s);
	CK(acl.ExecuteAsync(ri, s));
	CK(acl.SynchronizeStream(s));

	if (!clean)
		CK(acl.Free(tmp));
	int rc = acl.ExecuteAsync(ri, s);
	CK(acl.SynchronizeStream(s));
	printf("launch=%d\n", rc);

	CK(acl.RIDestroy(ri));
	if (clean)
		CK(acl.Free(tmp));
	CK(acl.Free(src));
	CK(acl.Free(out));
	return acl_launched(rc) ? 0 : 3;
}
