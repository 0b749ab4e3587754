//go:build cgo

// The trampolines of trampolines.h: each calls one CUDA driver entry point through the pointer fn
// the dl package resolved, cast to the entry point's type as cuda.h declares it.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trampolines.h"

typedef unsigned long long CUdeviceptr;

CUresult rc_cuda_call_uint(void *fn, unsigned v) { return ((CUresult (*)(unsigned))fn)(v); }
CUresult rc_cuda_call_int(void *fn, int v) { return ((CUresult (*)(int))fn)(v); }
CUresult rc_cuda_call_void(void *fn) { return ((CUresult (*)(void))fn)(); }
CUresult rc_cuda_call_ptr(void *fn, void *p) { return ((CUresult (*)(void *))fn)(p); }
CUresult rc_cuda_call_ptr_ptr(void *fn, void *a, void *b) { return ((CUresult (*)(void *, void *))fn)(a, b); }
CUresult rc_cuda_call_outint(void *fn, int *out) { return ((CUresult (*)(int *))fn)(out); }
// cuDeviceGet(CUdevice *, int ordinal)
CUresult rc_cuda_cuDeviceGet(void *fn, int *dev, int ordinal) { return ((CUresult (*)(int *, int))fn)(dev, ordinal); }
// cuDeviceGetName(char *name, int len, CUdevice)
CUresult rc_cuda_cuDeviceGetName(void *fn, char *name, int len, int dev) {
	return ((CUresult (*)(char *, int, int))fn)(name, len, dev);
}
// cuDeviceTotalMem_v2(size_t *bytes, CUdevice)
CUresult rc_cuda_cuDeviceTotalMem(void *fn, size_t *bytes, int dev) { return ((CUresult (*)(size_t *, int))fn)(bytes, dev); }
// cuDevicePrimaryCtxRetain(CUcontext *, CUdevice)
CUresult rc_cuda_cuDevicePrimaryCtxRetain(void *fn, void **ctx, int dev) {
	return ((CUresult (*)(void **, int))fn)(ctx, dev);
}
// cuMemAlloc_v2(CUdeviceptr *, size_t)
CUresult rc_cuda_cuMemAlloc(void *fn, uint64_t *addr, size_t n) {
	CUdeviceptr p = 0;
	CUresult rc = ((CUresult (*)(CUdeviceptr *, size_t))fn)(&p, n);
	*addr = (uint64_t)p;
	return rc;
}
CUresult rc_cuda_cuMemFree(void *fn, uint64_t addr) { return ((CUresult (*)(CUdeviceptr))fn)((CUdeviceptr)addr); }
// cuMemAllocHost_v2(void **, size_t)
CUresult rc_cuda_cuMemAllocHost(void *fn, void **p, size_t n) { return ((CUresult (*)(void **, size_t))fn)(p, n); }
// cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t)
CUresult rc_cuda_cuMemcpyHtoD(void *fn, uint64_t dst, const void *src, size_t n) {
	return ((CUresult (*)(CUdeviceptr, const void *, size_t))fn)((CUdeviceptr)dst, src, n);
}
// cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t)
CUresult rc_cuda_cuMemcpyDtoH(void *fn, void *dst, uint64_t src, size_t n) {
	return ((CUresult (*)(void *, CUdeviceptr, size_t))fn)(dst, (CUdeviceptr)src, n);
}
// cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t, CUstream)
CUresult rc_cuda_cuMemcpyDtoDAsync(void *fn, uint64_t dst, uint64_t src, size_t n, void *stream) {
	return ((CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, void *))fn)((CUdeviceptr)dst, (CUdeviceptr)src, n, stream);
}
// cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t, CUstream); src is C memory.
CUresult rc_cuda_cuMemcpyHtoDAsync(void *fn, uint64_t dst, uint64_t src, size_t n, void *stream) {
	return ((CUresult (*)(CUdeviceptr, const void *, size_t, void *))fn)((CUdeviceptr)dst, (const void *)(uintptr_t)src, n,
		stream);
}
// cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t, CUstream); dst is C memory.
CUresult rc_cuda_cuMemcpyDtoHAsync(void *fn, uint64_t dst, uint64_t src, size_t n, void *stream) {
	return ((CUresult (*)(void *, CUdeviceptr, size_t, void *))fn)((void *)(uintptr_t)dst, (CUdeviceptr)src, n, stream);
}
// cuMemsetD8Async(CUdeviceptr, unsigned char, size_t N, CUstream)
CUresult rc_cuda_cuMemsetD8Async(void *fn, uint64_t dst, unsigned char v, size_t n, void *stream) {
	return ((CUresult (*)(CUdeviceptr, unsigned char, size_t, void *))fn)((CUdeviceptr)dst, v, n, stream);
}
// cuStreamCreate(CUstream *, unsigned flags), cuEventCreate(CUevent *, unsigned flags)
CUresult rc_cuda_create_flags(void *fn, void **out, unsigned flags) { return ((CUresult (*)(void **, unsigned))fn)(out, flags); }
// cuStreamWaitEvent(CUstream, CUevent, unsigned flags)
CUresult rc_cuda_cuStreamWaitEvent(void *fn, void *stream, void *event) {
	return ((CUresult (*)(void *, void *, unsigned))fn)(stream, event, 0);
}
// cuStreamBeginCapture_v2(CUstream, CUstreamCaptureMode)
CUresult rc_cuda_cuStreamBeginCapture(void *fn, void *stream, int mode) { return ((CUresult (*)(void *, int))fn)(stream, mode); }
// cuStreamEndCapture(CUstream, CUgraph *)
CUresult rc_cuda_cuStreamEndCapture(void *fn, void *stream, void **graph) {
	return ((CUresult (*)(void *, void **))fn)(stream, graph);
}
// cuStreamIsCapturing(CUstream, CUstreamCaptureStatus *)
CUresult rc_cuda_cuStreamIsCapturing(void *fn, void *stream, int *status) {
	return ((CUresult (*)(void *, int *))fn)(stream, status);
}
// cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *)
CUresult rc_cuda_cuThreadExchangeStreamCaptureMode(void *fn, int *mode) { return ((CUresult (*)(int *))fn)(mode); }
// cuGraphInstantiateWithFlags(CUgraphExec *, CUgraph, unsigned long long flags)
CUresult rc_cuda_cuGraphInstantiateWithFlags(void *fn, void **exec, void *graph) {
	return ((CUresult (*)(void **, void *, unsigned long long))fn)(exec, graph, 0ULL);
}
// cuModuleLoadData(CUmodule *, const void *image): image is NUL-terminated PTX text.
CUresult rc_cuda_cuModuleLoadData(void *fn, void **mod, const char *image) {
	return ((CUresult (*)(void **, const void *))fn)(mod, image);
}
// cuModuleGetFunction(CUfunction *, CUmodule, const char *name)
CUresult rc_cuda_cuModuleGetFunction(void *fn, void **f, void *mod, const char *name) {
	return ((CUresult (*)(void **, void *, const char *))fn)(f, mod, name);
}

// cuLaunchKernel(f, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemBytes, stream,
// kernelParams, extra).
typedef CUresult (*launch_kernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
	void **, void **);

// The axpy kernel's launch. kernelParams points at one pointer per kernel parameter, in order, each
// pointing at the parameter's value: (u64 y, u64 x, u32 a, u32 n). The values live on this frame;
// the driver copies them before cuLaunchKernel returns.
CUresult rc_cuda_axpy(void *fn, void *f, void *stream, uint64_t y, uint64_t x, uint32_t a, uint32_t n, unsigned grid,
	unsigned block) {
	void *params[4] = {&y, &x, &a, &n};
	return ((launch_kernel)fn)(f, grid, 1, 1, block, 1, 1, 0, stream, params, NULL);
}
// The fingerprint kernel's launch: kernelParams (u64 src, u64 n, u64 out), one block per chunk.
CUresult rc_cuda_fingerprint(void *fn, void *f, void *stream, uint64_t src, uint64_t n, uint64_t out, unsigned grid,
	unsigned block) {
	void *params[3] = {&src, &n, &out};
	return ((launch_kernel)fn)(f, grid, 1, 1, block, 1, 1, 0, stream, params, NULL);
}

// Graph introspection, matched against NVIDIA's cuda.h of CUDA 12.6 (CUDA_VERSION 12060), where
// none of the four names is a macro for a versioned export:
//   cuGraphGetNodes(CUgraph, CUgraphNode *nodes, size_t *numNodes)
//   cuGraphNodeGetType(CUgraphNode, CUgraphNodeType *)
//   cuGraphMemsetNodeGetParams(CUgraphNode, CUDA_MEMSET_NODE_PARAMS *)  (CUDA_MEMSET_NODE_PARAMS_v1)
//   cuGraphMemcpyNodeGetParams(CUgraphNode, CUDA_MEMCPY3D *)            (CUDA_MEMCPY3D_v2)
// CUgraphNode is a pointer, CUgraphNodeType and CUmemorytype are int enums. The structs below
// copy the header's field for field (CUarray is a pointer); the asserts pin their LP64 sizes.
typedef struct {
	CUdeviceptr dst;
	size_t pitch;             // unused when height is 1
	unsigned int value;
	unsigned int elementSize; // 1, 2 or 4
	size_t width;             // of a row, in elements
	size_t height;            // rows
} memset_params;
_Static_assert(sizeof(memset_params) == 40, "CUDA_MEMSET_NODE_PARAMS is 40 bytes");

typedef struct {
	size_t srcXInBytes, srcY, srcZ, srcLOD;
	int srcMemoryType;        // CUmemorytype
	const void *srcHost;
	CUdeviceptr srcDevice;
	void *srcArray;           // CUarray
	void *reserved0;
	size_t srcPitch, srcHeight;

	size_t dstXInBytes, dstY, dstZ, dstLOD;
	int dstMemoryType;
	void *dstHost;
	CUdeviceptr dstDevice;
	void *dstArray;
	void *reserved1;
	size_t dstPitch, dstHeight;

	size_t WidthInBytes, Height, Depth;
} memcpy3d;
_Static_assert(sizeof(memcpy3d) == 200, "CUDA_MEMCPY3D is 200 bytes");
_Static_assert(offsetof(memcpy3d, dstXInBytes) == 88, "CUDA_MEMCPY3D's destination half starts at byte 88");
_Static_assert(offsetof(memcpy3d, WidthInBytes) == 176, "CUDA_MEMCPY3D's extent starts at byte 176");

CUresult rc_cuda_cuGraphGetNodes(void *fn, void *graph, void **nodes, size_t *num) {
	return ((CUresult (*)(void *, void **, size_t *))fn)(graph, nodes, num);
}
CUresult rc_cuda_cuGraphNodeGetType(void *fn, void *node, int *type) { return ((CUresult (*)(void *, int *))fn)(node, type); }
CUresult rc_cuda_cuGraphMemsetNodeGetParams(void *fn, void *node, uint64_t *dst, uint64_t *pitch, uint64_t *elem,
	uint64_t *width, uint64_t *height) {
	memset_params p = {0};
	CUresult rc = ((CUresult (*)(void *, memset_params *))fn)(node, &p);
	*dst = p.dst;
	*pitch = p.pitch;
	*elem = p.elementSize;
	*width = p.width;
	*height = p.height;
	return rc;
}
// CU_MEMORYTYPE_HOST (1) names the host pointer, DEVICE (2) and UNIFIED (4) the device pointer;
// an ARRAY (3) side has no address.
static uint64_t side_addr(int type, const void *host, CUdeviceptr dev) {
	return type == 1 ? (uint64_t)(uintptr_t)host : (type == 2 || type == 4) ? (uint64_t)dev : 0;
}
CUresult rc_cuda_cuGraphMemcpyNodeGetParams(void *fn, void *node, rc_cuda_copy_params *out) {
	memcpy3d p;
	memset(&p, 0, sizeof p);
	CUresult rc = ((CUresult (*)(void *, memcpy3d *))fn)(node, &p);
	out->src = (rc_cuda_copy_side){p.srcMemoryType, side_addr(p.srcMemoryType, p.srcHost, p.srcDevice), p.srcXInBytes,
		p.srcY, p.srcZ, p.srcPitch, p.srcHeight};
	out->dst = (rc_cuda_copy_side){p.dstMemoryType, side_addr(p.dstMemoryType, p.dstHost, p.dstDevice), p.dstXInBytes,
		p.dstY, p.dstZ, p.dstPitch, p.dstHeight};
	out->width = p.WidthInBytes;
	out->height = p.Height;
	out->depth = p.Depth;
	return rc;
}
// cuGetErrorString(CUresult, const char **)
const char *rc_cuda_cuGetErrorString(void *fn, int code) {
	const char *s = NULL;
	if (((CUresult (*)(int, const char **))fn)(code, &s) != 0) {
		return NULL;
	}
	return s;
}
