/* cuda_crash: a program killed by SIGSEGV (a real invalid access) right after a replay, which is
 * stale (hazard: a captured buffer was freed) or not (clean). What was found before the crash is
 * still reported. */
#define RC_CUDA
#include "drv.h"

enum { N = 4096 };

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard", "clean", NULL};
	int clean = pick(argc, argv, variants);
	cu_open();
	CUstream s = cu_stream();
	CUdeviceptr src = cu_alloc(N), b = cu_alloc(N);
	cu_fill(src, 0xA8, N);
	CK(cu.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cu.MemcpyDtoDAsync(b, src, N, s));
	cu_graph g = cu_end(s);
	if (!clean)
		CK(cu.MemFree(b));
	CK(cu.GraphLaunch(g.x, cu_launch_stream(s)));
	fflush(stdout);
	*(volatile int *)(uintptr_t)8 = 1;
	return 0;
}
