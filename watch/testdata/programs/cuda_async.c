/* cuda_async: a stream-ordered allocation baked into a graph (kekzl/imp#1648). Each step takes
 * its scratch buffer from cuMemAllocAsync and returns it with cuMemFreeAsync (hazard); step 1's
 * graph copies through the scratch, and step 2 replays it after taking a new scratch, which the
 * allocator places at the same address. The clean twin keeps one scratch for both steps.
 * Prints "launch=<status>" of step 2's replay. */
#define RC_CUDA
#include "drv.h"

enum { N = 4096 };

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard", "clean", NULL};
	int clean = pick(argc, argv, variants);
	cu_open();
	CUstream s = cu_stream(), ls = cu_launch_stream(s);
	CUdeviceptr src = cu_alloc(N), out = cu_alloc(N), scratch;
	cu_fill(src, 0xA9, N);

	/* step 1: capture through this step's scratch */
	CK(cu.MemAllocAsync(&scratch, N, s));
	CK(cu.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cu.MemcpyDtoDAsync(scratch, src, N, s));
	CK(cu.MemcpyDtoDAsync(out, scratch, N, s));
	cu_graph g = cu_end(s);
	CK(cu.GraphLaunch(g.x, ls));
	CK(cu.CtxSynchronize());
	CUdeviceptr first = scratch;

	/* step 2: a new scratch, unless the program keeps it */
	if (!clean) {
		CK(cu.MemFreeAsync(scratch, s));
		CK(cu.MemAllocAsync(&scratch, N, s));
		if (scratch != first)
			die("the new scratch landing at the old one's address", (long long)scratch);
	}
	int rc = cu.GraphLaunch(g.x, ls);
	CK(cu.CtxSynchronize());
	printf("launch=%d\n", rc);

	cu_drop(g);
	CK(cu.MemFreeAsync(scratch, s));
	CK(cu.StreamSynchronize(s));
	CK(cu.MemFree(src));
	CK(cu.MemFree(out));
	return rc == 0 || rc == CUDA_ERROR_INVALID_VALUE ? 0 : 3;
}
