/* cuda_offcapture: off-capture work. While its capture on s is active, the capturing thread
 * enqueues a copy on s2, a stream that is not capturing: out of b, a buffer the capture writes
 * (hazard), or out of c, which the capture does not use (clean). The driver runs that copy at
 * once, outside the graph: a warning, since it may be meant. */
#define RC_CUDA
#include "drv.h"

enum { N = 4096 };

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard", "clean", NULL};
	int clean = pick(argc, argv, variants);
	cu_open();
	CUstream s = cu_stream(), s2 = cu_stream();
	CUdeviceptr src = cu_alloc(N), b = cu_alloc(N), c = cu_alloc(N), out = cu_alloc(N);
	cu_fill(src, 0xA6, N);
	cu_fill(c, 0xB6, N);

	CK(cu.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cu.MemcpyDtoDAsync(b, src, N, s));
	CK(cu.MemcpyDtoDAsync(out, clean ? c : b, N, s2));
	cu_graph g = cu_end(s);
	CK(cu.GraphLaunch(g.x, cu_launch_stream(s)));
	CK(cu.CtxSynchronize());

	cu_drop(g);
	CK(cu.MemFree(src));
	CK(cu.MemFree(b));
	CK(cu.MemFree(c));
	CK(cu.MemFree(out));
	return 0;
}
