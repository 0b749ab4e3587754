/* cuda_kernel: a kernel argument. A graph captures the axpy kernel (y = a*x + y) with y in buffer
 * b; b is freed and the same size allocated again, at b's address (hazard), or b is kept (clean).
 * The graph names b only through the kernel's arguments: the interposer reads them with the
 * driver's parameter layout, so the finding is a possible one, naming the argument. The kernel is
 * launched with cuLaunchKernel's kernelParams, with its extra (one packed argument buffer), or
 * with cuLaunchKernelEx: hazard, hazard-extra, hazard-ex and their clean twins.
 * Prints "launch=<status>". */
#define RC_CUDA
#include "drv.h"

enum { N = 4096 };

/* device/cuda's AxpyPTX, the kernel the binding loads, verbatim (watch/hardware_test.go checks):
 * a device runs it, the fake runs it by name. */
static const char axpy_ptx[] = ".version 7.0\n"
			       ".target sm_50\n"
			       ".address_size 64\n"
			       "\n"
			       ".visible .entry replaycheck_axpy(\n"
			       "\t.param .u64 replaycheck_axpy_y,\n"
			       "\t.param .u64 replaycheck_axpy_x,\n"
			       "\t.param .u32 replaycheck_axpy_a,\n"
			       "\t.param .u32 replaycheck_axpy_n\n"
			       ")\n"
			       "{\n"
			       "\t.reg .pred %p<2>;\n"
			       "\t.reg .b32 %r<9>;\n"
			       "\t.reg .b64 %rd<8>;\n"
			       "\n"
			       "\tld.param.u64 %rd1, [replaycheck_axpy_y];\n"
			       "\tld.param.u64 %rd2, [replaycheck_axpy_x];\n"
			       "\tld.param.u32 %r1, [replaycheck_axpy_a];\n"
			       "\tld.param.u32 %r2, [replaycheck_axpy_n];\n"
			       "\tmov.u32 %r3, %ctaid.x;\n"
			       "\tmov.u32 %r4, %ntid.x;\n"
			       "\tmov.u32 %r5, %tid.x;\n"
			       "\tmad.lo.u32 %r6, %r3, %r4, %r5;\n"
			       "\tsetp.ge.u32 %p1, %r6, %r2;\n"
			       "\t@%p1 bra DONE;\n"
			       "\tcvta.to.global.u64 %rd3, %rd1;\n"
			       "\tcvta.to.global.u64 %rd4, %rd2;\n"
			       "\tmul.wide.u32 %rd5, %r6, 4;\n"
			       "\tadd.s64 %rd6, %rd4, %rd5;\n"
			       "\tadd.s64 %rd7, %rd3, %rd5;\n"
			       "\tld.global.u32 %r7, [%rd6];\n"
			       "\tld.global.u32 %r8, [%rd7];\n"
			       "\tmad.lo.u32 %r8, %r7, %r1, %r8;\n"
			       "\tst.global.u32 [%rd7], %r8;\n"
			       "DONE:\n"
			       "\tret;\n"
			       "}\n";

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard", "clean", "hazard-extra", "clean-extra", "hazard-ex", "clean-ex", NULL};
	int v = pick(argc, argv, variants), clean = v % 2, how = v / 2;
	cu_open();
	CUstream s = cu_stream(), ls = cu_launch_stream(s);
	CUmodule m;
	CUfunction f;
	CK(cu.ModuleLoadData(&m, axpy_ptx));
	CK(cu.ModuleGetFunction(&f, m, "replaycheck_axpy"));
	CUdeviceptr x = cu_alloc(N), b = cu_alloc(N);
	cu_fill(x, 0x01, N);
	cu_fill(b, 0x00, N);

	unsigned int a = 2, lanes = N / 4;
	void *params[] = {&b, &x, &a, &lanes};
	/* the packed buffer: y at 0, x at 8, a at 16, n at 20 (cuFuncGetParamInfo's layout) */
	unsigned char packed[24];
	size_t packed_size = sizeof packed;
	memcpy(packed, &b, 8);
	memcpy(packed + 8, &x, 8);
	memcpy(packed + 16, &a, 4);
	memcpy(packed + 20, &lanes, 4);
	void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_size, CU_LAUNCH_PARAM_END};
	CUlaunchConfig config = {.gridDimX = lanes / 256, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 256, .blockDimY = 1, .blockDimZ = 1, .hStream = s};
	CK(cu.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	switch (how) {
	case 0:
		CK(cu.LaunchKernel(f, lanes / 256, 1, 1, 256, 1, 1, 0, s, params, NULL));
		break;
	case 1:
		CK(cu.LaunchKernel(f, lanes / 256, 1, 1, 256, 1, 1, 0, s, NULL, extra));
		break;
	default:
		CK(cu.LaunchKernelEx(&config, f, params, NULL));
	}
	cu_graph g = cu_end(s);
	CK(cu.GraphLaunch(g.x, ls));
	CK(cu.CtxSynchronize());

	CUdeviceptr old = b;
	if (!clean) {
		CK(cu.MemFree(b));
		b = cu_alloc(N);
		if (b != old)
			die("the re-allocation landing at b's address", (long long)b);
	}
	int rc = cu.GraphLaunch(g.x, ls);
	CK(cu.CtxSynchronize());
	printf("launch=%d\n", rc);

	cu_drop(g);
	CK(cu.MemFree(b));
	CK(cu.MemFree(x));
	return rc == 0 || rc == CUDA_ERROR_INVALID_VALUE ? 0 : 3;
}
