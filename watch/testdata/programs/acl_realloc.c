/* acl_realloc: same-address re-allocation on Ascend, as cuda_realloc: b is freed and a bystander
 * allocates the same size at b's address (hazard), or b is kept (clean); the bystander writes its
 * bytes and the model RI replays its copy into b. Prints "launch=<status>
 * bystander=intact|overwritten". */
#define RC_ACL
#include "drv.h"

enum { N = 4096 };

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard", "clean", NULL};
	int clean = pick(argc, argv, variants);
	acl_open();
	aclrtStream s = acl_stream();
	void *src = acl_alloc(N), *b = acl_alloc(N);
	acl_fill(src, 0xC3, N);

	CK(acl.CaptureBegin(s, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
	CK(acl.MemcpyAsync(b, N, src, N, ACL_MEMCPY_DEVICE_TO_DEVICE, s));
	aclmdlRI ri = acl_end(s);
	CK(acl.ExecuteAsync(ri, s));
	CK(acl.SynchronizeStream(s));

	if (!clean)
		CK(acl.Free(b));
	void *bystander = acl_alloc(N);
	if ((bystander == b) == clean)
		die(clean ? "the bystander landing beside b" : "the bystander landing at b's address", (long long)(uintptr_t)bystander);
	acl_fill(bystander, 0x6B, N);
	int rc = acl.ExecuteAsync(ri, s);
	printf("launch=%d bystander=%s\n", rc, acl_holds(bystander, 0x6B, N) ? "intact" : "overwritten");

	CK(acl.RIDestroy(ri));
	CK(acl.Free(bystander));
	if (clean)
		CK(acl.Free(b));
	CK(acl.Free(src));
	return acl_launched(rc) ? 0 : 3;
}
