/* cuda_pool: a pool block reused, with annotations. The program runs its own caching pool over one
 * cuMemAlloc segment and annotates its blocks (rc_watch_pool_alloc/free): the driver sees one live
 * segment throughout. A graph copies src into block a; the program frees a and hands the block to
 * another tensor (hazard), or gives the tensor the next block (clean). The tensor writes its bytes
 * and the graph is replayed. Without the interposer the annotations are null and the program runs
 * the same. Prints "launch=<status> tensor=intact|overwritten". */
#define RC_CUDA
#include "drv.h"

enum { N = 4096, SEGMENT = 16 * N };

/* The pool: a segment and a bump pointer; a freed block goes back on a one-entry free list. */
static struct {
	CUdeviceptr segment;
	size_t used;
	CUdeviceptr cached;
} pool;

static CUdeviceptr block_alloc(void) {
	CUdeviceptr p;
	if (pool.cached) {
		p = pool.cached;
		pool.cached = 0;
	} else {
		p = pool.segment + pool.used;
		pool.used += N;
	}
	RC_WATCH_POOL_ALLOC(&pool, (void *)(uintptr_t)p, N);
	return p;
}

static void block_free(CUdeviceptr p) {
	RC_WATCH_POOL_FREE(&pool, (void *)(uintptr_t)p);
	pool.cached = p;
}

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard", "clean", NULL};
	int clean = pick(argc, argv, variants);
	cu_open();
	CUstream s = cu_stream(), ls = cu_launch_stream(s);
	pool.segment = cu_alloc(SEGMENT);
	CUdeviceptr src = cu_alloc(N), a = block_alloc();
	cu_fill(src, 0xA4, N);

	CK(cu.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cu.MemcpyDtoDAsync(a, src, N, s));
	cu_graph g = cu_end(s);
	CK(cu.GraphLaunch(g.x, ls));
	CK(cu.CtxSynchronize());

	if (!clean)
		block_free(a);
	CUdeviceptr tensor = block_alloc();
	if ((tensor == a) == clean)
		die("the pool's block choice", (long long)tensor);
	cu_fill(tensor, 0x5C, N);
	int rc = cu.GraphLaunch(g.x, ls);
	printf("launch=%d tensor=%s\n", rc, cu_holds(tensor, 0x5C, N) ? "intact" : "overwritten");

	cu_drop(g);
	block_free(tensor);
	if (clean)
		block_free(a);
	CK(cu.MemFree(src));
	CK(cu.MemFree(pool.segment));
	return rc == 0 || rc == CUDA_ERROR_INVALID_VALUE ? 0 : 3;
}
