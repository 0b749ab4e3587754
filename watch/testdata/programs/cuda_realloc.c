/* cuda_realloc: same-address re-allocation. A graph copies src into b; b is freed and a bystander
 * allocates the same size, which the allocator's LIFO reuse places at b's address (hazard), or b
 * is kept and the bystander lands elsewhere (clean). The bystander writes its own bytes and the
 * graph is replayed: a stale replay overwrites them, unless the launch is refused.
 * Prints "launch=<status> bystander=intact|overwritten". */
#define RC_CUDA
#include "drv.h"

enum { N = 4096 };

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard", "clean", NULL};
	int clean = pick(argc, argv, variants);
	cu_open();
	CUstream s = cu_stream(), ls = cu_launch_stream(s);
	CUdeviceptr src = cu_alloc(N), b = cu_alloc(N);
	cu_fill(src, 0xA3, N);

	CK(cu.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cu.MemcpyDtoDAsync(b, src, N, s));
	cu_graph g = cu_end(s);
	CK(cu.GraphLaunch(g.x, ls));
	CK(cu.CtxSynchronize());

	if (!clean)
		CK(cu.MemFree(b));
	CUdeviceptr bystander = cu_alloc(N);
	if ((bystander == b) == clean)
		die(clean ? "the bystander landing beside b" : "the bystander landing at b's address", (long long)bystander);
	cu_fill(bystander, 0x5B, N);
	int rc = cu.GraphLaunch(g.x, ls);
	printf("launch=%d bystander=%s\n", rc, cu_holds(bystander, 0x5B, N) ? "intact" : "overwritten");

	cu_drop(g);
	CK(cu.MemFree(bystander));
	if (clean)
		CK(cu.MemFree(b));
	CK(cu.MemFree(src));
	return rc == 0 || rc == CUDA_ERROR_INVALID_VALUE ? 0 : 3;
}
