/* cuda_capalloc: allocation and free while a capture is active. The capture is RELAXED, so the
 * driver lets cuMemAlloc and cuMemFree through (GLOBAL and THREAD_LOCAL refuse them from the
 * capturing thread). During it (hazard): the capturing thread allocates, another thread
 * allocates, a block of an annotated (not private) pool is allocated and freed, and a buffer the
 * graph does not name is freed. The clean twin makes the same calls before the capture begins. */
#define RC_CUDA
#include "drv.h"

#include <pthread.h>

enum { N = 4096 };

static struct {
	CUdeviceptr segment;
} pool;

static CUcontext ctx;
static CUdeviceptr other;

static void *other_thread(void *arg) {
	(void)arg;
	CK(cu.CtxSetCurrent(ctx));
	other = cu_alloc(N);
	return NULL;
}

static void churn(CUdeviceptr victim, CUdeviceptr *mine) {
	*mine = cu_alloc(N);
	pthread_t t;
	if (pthread_create(&t, NULL, other_thread, NULL) || pthread_join(t, NULL))
		die("pthread", 0);
	RC_WATCH_POOL_ALLOC(&pool, (void *)(uintptr_t)pool.segment, N);
	RC_WATCH_POOL_FREE(&pool, (void *)(uintptr_t)pool.segment);
	CK(cu.MemFree(victim));
}

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard", "clean", NULL};
	int clean = pick(argc, argv, variants);
	ctx = cu_open();
	CUstream s = cu_stream();
	pool.segment = cu_alloc(16 * N);
	CUdeviceptr buf = cu_alloc(N), victim = cu_alloc(N), mine;

	if (clean)
		churn(victim, &mine);
	CK(cu.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	CK(cu.MemsetD8Async(buf, 0x11, N, s));
	if (!clean)
		churn(victim, &mine);
	cu_graph g = cu_end(s);
	CK(cu.GraphLaunch(g.x, cu_launch_stream(s)));
	CK(cu.CtxSynchronize());

	cu_drop(g);
	CK(cu.MemFree(buf));
	CK(cu.MemFree(mine));
	CK(cu.MemFree(other));
	CK(cu.MemFree(pool.segment));
	return 0;
}
