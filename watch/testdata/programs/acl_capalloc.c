/* acl_capalloc: allocation and free while a capture is active, on Ascend (aclrtMalloc and aclrtFree
 * check no capture, so the runtime lets them through in every mode). During a GLOBAL capture
 * (hazard): the capturing thread allocates, another thread allocates, a block of an annotated
 * (not private) pool is allocated and freed, and a buffer the model RI does not name is freed. The
 * clean twin makes the same calls before the capture begins. */
#define RC_ACL
#include "drv.h"

#include <pthread.h>

enum { N = 4096 };

static struct {
	void *segment;
} pool;

static void *other;

static void *other_thread(void *arg) {
	(void)arg;
	CK(acl.SetDevice(0));
	other = acl_alloc(N);
	return NULL;
}

static void churn(void *victim, void **mine) {
	*mine = acl_alloc(N);
	pthread_t t;
	if (pthread_create(&t, NULL, other_thread, NULL) || pthread_join(t, NULL))
		die("pthread", 0);
	RC_WATCH_POOL_ALLOC(&pool, pool.segment, N);
	RC_WATCH_POOL_FREE(&pool, pool.segment);
	CK(acl.Free(victim));
}

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard", "clean", NULL};
	int clean = pick(argc, argv, variants);
	acl_open();
	aclrtStream s = acl_stream();
	pool.segment = acl_alloc(16 * N);
	void *buf = acl_alloc(N), *victim = acl_alloc(N), *mine;

	if (clean)
		churn(victim, &mine);
	CK(acl.CaptureBegin(s, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
	CK(acl.MemsetAsync(buf, N, 0x21, N, s));
	if (!clean)
		churn(victim, &mine);
	aclmdlRI ri = acl_end(s);
	CK(acl.ExecuteAsync(ri, s));
	CK(acl.SynchronizeStream(s));

	CK(acl.RIDestroy(ri));
	CK(acl.Free(buf));
	CK(acl.Free(mine));
	CK(acl.Free(other));
	CK(acl.Free(pool.segment));
	return 0;
}
