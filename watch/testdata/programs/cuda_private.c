/* cuda_private: PyTorch's graph-private pool (rc_watch_pool_private). Capture 1 allocates an
 * intermediate block x from the private pool, uses it and drops it inside the capture; graph 1 is
 * replayed with x free in the pool. Then:
 *   clean       capture 2 takes x for its own output; both graphs replay in capture order on one
 *               stream: sharing, not staleness ("Sharing memory across captures");
 *   ordered     the same, graph 2 on a second stream that waits on an event recorded after graph 1;
 *   concurrent  the same, graph 2 on a second stream with nothing ordering it after graph 1: both
 *               may be in flight at once (shared-concurrent);
 *   eager       no capture 2: an eager (outside-capture) allocation takes x and writes it, then
 *               graph 1 replays over it (stale-replay). Prints "tensor=intact|overwritten". */
#define RC_CUDA
#include "drv.h"

enum { N = 4096, SEGMENT = 16 * N };

static struct {
	CUdeviceptr segment;
} pool;

int main(int argc, char **argv) {
	static const char *const variants[] = {"clean", "ordered", "concurrent", "eager", NULL};
	enum { CLEAN, ORDERED, CONCURRENT, EAGER };
	int v = pick(argc, argv, variants);
	cu_open();
	CUstream s = cu_stream(), s2 = cu_stream();
	pool.segment = cu_alloc(SEGMENT);
	RC_WATCH_POOL_PRIVATE(&pool);
	CUdeviceptr src1 = cu_alloc(N), src2 = cu_alloc(N), out1 = cu_alloc(N), out2 = cu_alloc(N);
	cu_fill(src1, 0xA5, N);
	cu_fill(src2, 0xB5, N);

	/* capture 1: x is an intermediate, dropped inside the capture */
	CUdeviceptr x = pool.segment;
	CK(cu.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	RC_WATCH_POOL_ALLOC(&pool, (void *)(uintptr_t)x, N);
	CK(cu.MemcpyDtoDAsync(x, src1, N, s));
	CK(cu.MemcpyDtoDAsync(out1, x, N, s));
	RC_WATCH_POOL_FREE(&pool, (void *)(uintptr_t)x);
	cu_graph g1 = cu_end(s);
	CK(cu.GraphLaunch(g1.x, s));
	CK(cu.CtxSynchronize());

	if (v == EAGER) {
		RC_WATCH_POOL_ALLOC(&pool, (void *)(uintptr_t)x, N);
		cu_fill(x, 0x5D, N);
		CK(cu.GraphLaunch(g1.x, s));
		printf("tensor=%s\n", cu_holds(x, 0x5D, N) ? "intact" : "overwritten");
		RC_WATCH_POOL_FREE(&pool, (void *)(uintptr_t)x);
		cu_drop(g1);
	} else {
		/* capture 2 takes the block capture 1 dropped, for its output */
		CUdeviceptr y = pool.segment;
		CK(cu.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
		RC_WATCH_POOL_ALLOC(&pool, (void *)(uintptr_t)y, N);
		CK(cu.MemcpyDtoDAsync(y, src2, N, s));
		CK(cu.MemcpyDtoDAsync(out2, y, N, s));
		cu_graph g2 = cu_end(s);
		for (int i = 0; i < 2; i++) {
			CK(cu.GraphLaunch(g1.x, s));
			switch (v) {
			case CLEAN:
				CK(cu.GraphLaunch(g2.x, s));
				break;
			case ORDERED: {
				CUevent e;
				CK(cu.EventCreate(&e, 0));
				CK(cu.EventRecord(e, s));
				CK(cu.StreamWaitEvent(s2, e, 0));
				CK(cu.GraphLaunch(g2.x, s2));
				break;
			}
			case CONCURRENT:
				CK(cu.GraphLaunch(g2.x, s2));
				break;
			}
			CK(cu.CtxSynchronize());
		}
		cu_drop(g1);
		cu_drop(g2);
		RC_WATCH_POOL_FREE(&pool, (void *)(uintptr_t)y);
	}
	CK(cu.MemFree(src1));
	CK(cu.MemFree(src2));
	CK(cu.MemFree(out1));
	CK(cu.MemFree(out2));
	CK(cu.MemFree(pool.segment));
	return 0;
}
