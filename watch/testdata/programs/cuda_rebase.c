/* cuda_rebase: re-base. A graph captures a copy through buffer b; the program then grows b: it
 * frees b and allocates a larger one (hazard), or keeps b and allocates the larger one beside it
 * (clean). The graph still names the old b: the replay after a re-base is stale.
 * Prints "launch=<status>" of that replay. */
#define RC_CUDA
#include "drv.h"

enum { N = 4096 };

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard", "clean", NULL};
	int clean = pick(argc, argv, variants);
	cu_open();
	CUstream s = cu_stream(), ls = cu_launch_stream(s);
	CUdeviceptr src = cu_alloc(N), b = cu_alloc(N), out = cu_alloc(N);
	cu_fill(src, 0xA1, N);

	CK(cu.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cu.MemcpyDtoDAsync(b, src, N, s));
	CK(cu.MemcpyDtoDAsync(out, b, N, s));
	cu_graph g = cu_end(s);
	CK(cu.GraphLaunch(g.x, ls));
	CK(cu.CtxSynchronize());

	if (!clean)
		CK(cu.MemFree(b));
	CUdeviceptr grown = cu_alloc(2 * N);
	int rc = cu.GraphLaunch(g.x, ls);
	CK(cu.CtxSynchronize());
	printf("launch=%d\n", rc);

	cu_drop(g);
	CK(cu.MemFree(grown));
	if (clean)
		CK(cu.MemFree(b));
	CK(cu.MemFree(src));
	CK(cu.MemFree(out));
	return rc == 0 || rc == CUDA_ERROR_INVALID_VALUE ? 0 : 3;
}
