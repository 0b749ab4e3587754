/* bench.c: the workloads of watch's benchmarks (watch/bench_test.go), linked to a CUDA driver
 * library (the fake's libcuda.so.1 in the benchmarks). It times itself with CLOCK_MONOTONIC, so
 * the figure leaves out starting the process and the interposer's constructor, and prints
 * "ns=<time> ops=<count>".
 *
 *   bench launch N      capture a 100-node graph (memsets), then N launches, a sync every 100
 *   bench allocfree N   N pairs of cuMemAlloc_v2 / cuMemFree_v2 of 4 KiB
 *   bench nocapture N   N rounds of a memset, a copy and a sync every 100, no capture ever
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUgraph;
typedef void *CUgraphExec;
typedef unsigned long long CUdeviceptr;

CUresult cuInit(unsigned int);
CUresult cuDeviceGet(CUdevice *, int);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, CUdevice);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuStreamCreate(CUstream *, unsigned int);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream);
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult cuStreamSynchronize(CUstream);
CUresult cuStreamBeginCapture_v2(CUstream, int);
CUresult cuStreamEndCapture(CUstream, CUgraph *);
CUresult cuGraphInstantiateWithFlags(CUgraphExec *, CUgraph, unsigned long long);
CUresult cuGraphLaunch(CUgraphExec, CUstream);

#define CHECK(call)                                                                  \
	do {                                                                         \
		CUresult r_ = (call);                                                \
		if (r_ != 0) {                                                       \
			fprintf(stderr, "bench: %s failed: %d\n", #call, r_);       \
			exit(3);                                                     \
		}                                                                    \
	} while (0)

static int64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: bench launch|allocfree|nocapture N\n");
		return 2;
	}
	long n = strtol(argv[2], NULL, 10);
	CUdevice dev;
	CUcontext ctx;
	CUstream s;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuStreamCreate(&s, 1));
	CUdeviceptr a, b;
	CHECK(cuMemAlloc_v2(&a, 100 * 256));
	CHECK(cuMemAlloc_v2(&b, 100 * 256));
	int64_t t0 = 0, t1 = 0;
	if (strcmp(argv[1], "launch") == 0) {
		CUgraph g;
		CUgraphExec e;
		CHECK(cuStreamBeginCapture_v2(s, 0));
		for (int i = 0; i < 100; i++)
			CHECK(cuMemsetD8Async(a + (CUdeviceptr)i * 256, (unsigned char)i, 256, s));
		CHECK(cuStreamEndCapture(s, &g));
		CHECK(cuGraphInstantiateWithFlags(&e, g, 0));
		t0 = now_ns();
		for (long i = 0; i < n; i++) {
			CHECK(cuGraphLaunch(e, s));
			if (i % 100 == 99)
				CHECK(cuStreamSynchronize(s));
		}
		CHECK(cuStreamSynchronize(s));
		t1 = now_ns();
	} else if (strcmp(argv[1], "allocfree") == 0) {
		t0 = now_ns();
		for (long i = 0; i < n; i++) {
			CUdeviceptr p;
			CHECK(cuMemAlloc_v2(&p, 4096));
			CHECK(cuMemFree_v2(p));
		}
		t1 = now_ns();
	} else if (strcmp(argv[1], "nocapture") == 0) {
		t0 = now_ns();
		for (long i = 0; i < n; i++) {
			CHECK(cuMemsetD8Async(a, (unsigned char)i, 256, s));
			CHECK(cuMemcpyDtoDAsync_v2(b, a, 256, s));
			if (i % 100 == 99)
				CHECK(cuStreamSynchronize(s));
		}
		CHECK(cuStreamSynchronize(s));
		t1 = now_ns();
	} else {
		fprintf(stderr, "bench: unknown workload %s\n", argv[1]);
		return 2;
	}
	printf("ns=%lld ops=%ld\n", (long long)(t1 - t0), n);
	return 0;
}
