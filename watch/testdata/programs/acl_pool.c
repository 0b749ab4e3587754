/* acl_pool: a pool block reused, with annotations, on Ascend, as cuda_pool: the program's own pool
 * over one aclrtMalloc segment, its blocks annotated; block a, which a model RI copies into, is
 * freed and handed to another tensor (hazard) or kept (clean). Without the interposer the
 * annotations are null and the program runs the same. Prints "launch=<status>
 * tensor=intact|overwritten". */
#define RC_ACL
#include "drv.h"

enum { N = 4096, SEGMENT = 16 * N };

static struct {
	char *segment;
	size_t used;
	char *cached;
} pool;

static void *block_alloc(void) {
	char *p;
	if (pool.cached) {
		p = pool.cached;
		pool.cached = NULL;
	} else {
		p = pool.segment + pool.used;
		pool.used += N;
	}
	RC_WATCH_POOL_ALLOC(&pool, p, N);
	return p;
}

static void block_free(void *p) {
	RC_WATCH_POOL_FREE(&pool, p);
	pool.cached = p;
}

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard", "clean", NULL};
	int clean = pick(argc, argv, variants);
	acl_open();
	aclrtStream s = acl_stream();
	pool.segment = acl_alloc(SEGMENT);
	void *src = acl_alloc(N), *a = block_alloc();
	acl_fill(src, 0xC4, N);

	CK(acl.CaptureBegin(s, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
	CK(acl.MemcpyAsync(a, N, src, N, ACL_MEMCPY_DEVICE_TO_DEVICE, s));
	aclmdlRI ri = acl_end(s);
	CK(acl.ExecuteAsync(ri, s));
	CK(acl.SynchronizeStream(s));

	if (!clean)
		block_free(a);
	void *tensor = block_alloc();
	if ((tensor == a) == clean)
		die("the pool's block choice", (long long)(uintptr_t)tensor);
	acl_fill(tensor, 0x6C, N);
	int rc = acl.ExecuteAsync(ri, s);
	printf("launch=%d tensor=%s\n", rc, acl_holds(tensor, 0x6C, N) ? "intact" : "overwritten");

	CK(acl.RIDestroy(ri));
	block_free(tensor);
	if (clean)
		block_free(a);
	CK(acl.Free(src));
	CK(acl.Free(pool.segment));
	return acl_launched(rc) ? 0 : 3;
}
