/* cuda_grow: PyTorch grows a graph's private pool during its capture: the allocator takes a new
 * segment from the driver inside the capture and serves the capture's block from it. The capture
 * is RELAXED (GLOBAL and THREAD_LOCAL refuse cuMemAlloc from the capturing thread).
 *   clean   the block is annotated in the declared private pool: the segment is the pool's, no
 *           finding;
 *   hazard  the same segment is taken and used with no block annotated in it: alloc-in-capture. */
#define RC_CUDA
#include "drv.h"

enum { N = 4096, SEGMENT = 16 * N };

static struct {
	int graph;
} pool;

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard", "clean", NULL};
	int clean = pick(argc, argv, variants);
	cu_open();
	CUstream s = cu_stream();
	RC_WATCH_POOL_PRIVATE(&pool);
	CUdeviceptr src = cu_alloc(N), out = cu_alloc(N);
	cu_fill(src, 0xA5, N);

	CK(cu.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	CUdeviceptr segment = cu_alloc(SEGMENT);
	if (clean)
		RC_WATCH_POOL_ALLOC(&pool, (void *)(uintptr_t)segment, N);
	CK(cu.MemcpyDtoDAsync(segment, src, N, s));
	CK(cu.MemcpyDtoDAsync(out, segment, N, s));
	cu_graph g = cu_end(s);
	CK(cu.GraphLaunch(g.x, s));
	CK(cu.CtxSynchronize());

	cu_drop(g);
	if (clean)
		RC_WATCH_POOL_FREE(&pool, (void *)(uintptr_t)segment);
	CK(cu.MemFree(segment));
	CK(cu.MemFree(out));
	CK(cu.MemFree(src));
	return 0;
}
