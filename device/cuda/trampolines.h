// The CUDA driver ABI as the binding assumes it (cuda.h), and the trampolines that call it
// (trampolines.c). CUresult, CUdevice and every enum are int; CUdeviceptr is unsigned long long
// (64 bits); contexts, streams, events, graphs, graph execs, modules, functions and graph nodes are
// pointers. No SDK header is included: every entry point is called through a pointer the dl
// package resolved (fn), by one of these. Every name starts rc_cuda_, apart from ACL's (device/acl)
// in a binary that links both.
#ifndef REPLAYCHECK_DEVICE_CUDA_TRAMPOLINES_H
#define REPLAYCHECK_DEVICE_CUDA_TRAMPOLINES_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;

// Entry points of one shape: f(v), f(), f(p), f(a, b), f(&out).
CUresult rc_cuda_call_uint(void *fn, unsigned v);
CUresult rc_cuda_call_int(void *fn, int v);
CUresult rc_cuda_call_void(void *fn);
CUresult rc_cuda_call_ptr(void *fn, void *p);
CUresult rc_cuda_call_ptr_ptr(void *fn, void *a, void *b);
CUresult rc_cuda_call_outint(void *fn, int *out);
// cuStreamCreate(CUstream *, unsigned flags), cuEventCreate(CUevent *, unsigned flags)
CUresult rc_cuda_create_flags(void *fn, void **out, unsigned flags);

// Devices and memory.
CUresult rc_cuda_cuDeviceGet(void *fn, int *dev, int ordinal);
CUresult rc_cuda_cuDeviceGetName(void *fn, char *name, int len, int dev);
CUresult rc_cuda_cuDeviceTotalMem(void *fn, size_t *bytes, int dev);
CUresult rc_cuda_cuDevicePrimaryCtxRetain(void *fn, void **ctx, int dev);
CUresult rc_cuda_cuMemAlloc(void *fn, uint64_t *addr, size_t n);
CUresult rc_cuda_cuMemFree(void *fn, uint64_t addr);
CUresult rc_cuda_cuMemAllocHost(void *fn, void **p, size_t n);
CUresult rc_cuda_cuMemcpyHtoD(void *fn, uint64_t dst, const void *src, size_t n);
CUresult rc_cuda_cuMemcpyDtoH(void *fn, void *dst, uint64_t src, size_t n);
CUresult rc_cuda_cuMemcpyDtoDAsync(void *fn, uint64_t dst, uint64_t src, size_t n, void *stream);
// The host side of these two is C memory, passed as an address.
CUresult rc_cuda_cuMemcpyHtoDAsync(void *fn, uint64_t dst, uint64_t src, size_t n, void *stream);
CUresult rc_cuda_cuMemcpyDtoHAsync(void *fn, uint64_t dst, uint64_t src, size_t n, void *stream);
CUresult rc_cuda_cuMemsetD8Async(void *fn, uint64_t dst, unsigned char v, size_t n, void *stream);

// Streams, capture and graphs.
CUresult rc_cuda_cuStreamWaitEvent(void *fn, void *stream, void *event);
CUresult rc_cuda_cuStreamBeginCapture(void *fn, void *stream, int mode);
CUresult rc_cuda_cuStreamEndCapture(void *fn, void *stream, void **graph);
CUresult rc_cuda_cuStreamIsCapturing(void *fn, void *stream, int *status);
CUresult rc_cuda_cuThreadExchangeStreamCaptureMode(void *fn, int *mode);
CUresult rc_cuda_cuGraphInstantiateWithFlags(void *fn, void **exec, void *graph);

// Modules and the two kernels' launches (cuLaunchKernel).
CUresult rc_cuda_cuModuleLoadData(void *fn, void **mod, const char *image);
CUresult rc_cuda_cuModuleGetFunction(void *fn, void **f, void *mod, const char *name);
CUresult rc_cuda_axpy(void *fn, void *f, void *stream, uint64_t y, uint64_t x, uint32_t a, uint32_t n, unsigned grid,
	unsigned block);
CUresult rc_cuda_fingerprint(void *fn, void *f, void *stream, uint64_t src, uint64_t n, uint64_t out, unsigned grid,
	unsigned block);

// One side of a graph's copy node, flattened for Go: the memory type (CUmemorytype), the address
// its type selects (srcHost or srcDevice; 0 for an array) and its offsets and pitches.
typedef struct {
	int type;
	uint64_t addr, x, y, z, pitch, height;
} rc_cuda_copy_side;

typedef struct {
	rc_cuda_copy_side src, dst;
	uint64_t width, height, depth;
} rc_cuda_copy_params;

// Graph introspection.
CUresult rc_cuda_cuGraphGetNodes(void *fn, void *graph, void **nodes, size_t *num);
CUresult rc_cuda_cuGraphNodeGetType(void *fn, void *node, int *type);
CUresult rc_cuda_cuGraphMemsetNodeGetParams(void *fn, void *node, uint64_t *dst, uint64_t *pitch, uint64_t *elem,
	uint64_t *width, uint64_t *height);
CUresult rc_cuda_cuGraphMemcpyNodeGetParams(void *fn, void *node, rc_cuda_copy_params *out);

// cuGetErrorString's text for code, NULL where the driver has none.
const char *rc_cuda_cuGetErrorString(void *fn, int code);

#endif
