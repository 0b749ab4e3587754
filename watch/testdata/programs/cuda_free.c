/* cuda_free: replay after free, as hazards/replay-after-free. A graph copies src to tmp and tmp to
 * out; tmp is freed (hazard) before the next replay, or only after the graph is destroyed
 * (clean). Prints "launch=<status>" of the replay after the free. */
#define RC_CUDA
#include "drv.h"

enum { N = 4096 };

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard", "clean", NULL};
	int clean = pick(argc, argv, variants);
	cu_open();
	CUstream s = cu_stream(), ls = cu_launch_stream(s);
	CUdeviceptr src = cu_alloc(N), tmp = cu_alloc(N), out = cu_alloc(N);
	cu_fill(src, 0xA2, N);

	CK(cu.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cu.MemcpyDtoDAsync(tmp, src, N, s));
	CK(cu.MemcpyDtoDAsync(out, tmp, N, s));
	cu_graph g = cu_end(s);
	CK(cu.GraphLaunch(g.x, ls));
	CK(cu.CtxSynchronize());

	if (!clean)
		CK(cu.MemFree(tmp));
	int rc = cu.GraphLaunch(g.x, ls);
	CK(cu.CtxSynchronize());
	printf("launch=%d\n", rc);

	cu_drop(g);
	if (clean)
		CK(cu.MemFree(tmp));
	CK(cu.MemFree(src));
	CK(cu.MemFree(out));
	return rc == 0 || rc == CUDA_ERROR_INVALID_VALUE ? 0 : 3;
}
