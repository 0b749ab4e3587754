//go:build cgo

package cuda

// The binding's C is in trampolines.c, declared in trampolines.h: the trampolines that call the
// CUDA driver's entry points through the addresses dl resolved. The package's C, cgo's own
// included, is C11 with warnings as errors.

/*
#cgo CFLAGS: -std=c11 -Wall -Wextra -Werror
#include <stdlib.h>
#include "trampolines.h"
*/
import "C"

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/internal/bind"
	"github.com/replaycheck/replaycheck/internal/dl"
)

const (
	eventDisableTiming = 2 // CU_EVENT_DISABLE_TIMING
	streamNonBlocking  = 1 // CU_STREAM_NON_BLOCKING
	axpyBlock          = 256
	// KernelName is the entry point of the axpy kernel in AxpyPTX.
	KernelName = "replaycheck_axpy"
	// FingerprintName is the entry point of the fingerprint kernel in FingerprintPTX, launched
	// with FingerprintBlock threads per block, one block per chunk.
	FingerprintName  = "replaycheck_fingerprint"
	FingerprintBlock = 256
)

// AxpyPTX is the axpy kernel as PTX text, JIT-compiled by cuModuleLoadData when a device opens
// (no nvcc at build time): y[i] = a*x[i] + y[i] over uint32 lanes, wrapping, for i < n; one
// thread per lane. PTX ISA 7.0 (CUDA 11.0 drivers and later), sm_50 and later.
const AxpyPTX = `.version 7.0
.target sm_50
.address_size 64

.visible .entry replaycheck_axpy(
	.param .u64 replaycheck_axpy_y,
	.param .u64 replaycheck_axpy_x,
	.param .u32 replaycheck_axpy_a,
	.param .u32 replaycheck_axpy_n
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<9>;
	.reg .b64 %rd<8>;

	ld.param.u64 %rd1, [replaycheck_axpy_y];
	ld.param.u64 %rd2, [replaycheck_axpy_x];
	ld.param.u32 %r1, [replaycheck_axpy_a];
	ld.param.u32 %r2, [replaycheck_axpy_n];
	mov.u32 %r3, %ctaid.x;
	mov.u32 %r4, %ntid.x;
	mov.u32 %r5, %tid.x;
	mad.lo.u32 %r6, %r3, %r4, %r5;
	setp.ge.u32 %p1, %r6, %r2;
	@%p1 bra DONE;
	cvta.to.global.u64 %rd3, %rd1;
	cvta.to.global.u64 %rd4, %rd2;
	mul.wide.u32 %rd5, %r6, 4;
	add.s64 %rd6, %rd4, %rd5;
	add.s64 %rd7, %rd3, %rd5;
	ld.global.u32 %r7, [%rd6];
	ld.global.u32 %r8, [%rd7];
	mad.lo.u32 %r8, %r7, %r1, %r8;
	st.global.u32 [%rd7], %r8;
DONE:
	ret;
}
`

// FingerprintPTX is the fingerprint kernel (internal/fingerprint's definition) as a PTX entry,
// loaded in one module with AxpyPTX (whose header it shares): block b sums the terms
// Mix(word(i) ^ i*K) of chunk b's words, each thread every 256th word, adds the threads' sums in
// shared memory and writes the chunk's fingerprint to out[b]. out is pinned host memory (the
// binding's), which a device with unified addressing writes directly. src is 8-byte aligned; a
// buffer's partial last word is read a byte at a time. It needs blockDim.x a power of two, at most
// 256; a block past the last chunk writes nothing.
const FingerprintPTX = `
.visible .entry replaycheck_fingerprint(
	.param .u64 replaycheck_fingerprint_src,
	.param .u64 replaycheck_fingerprint_n,
	.param .u64 replaycheck_fingerprint_out
)
{
	.reg .pred %p<4>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<34>;
	.shared .align 8 .b64 fp_sums[256];

	ld.param.u64 %rd1, [replaycheck_fingerprint_src];
	ld.param.u64 %rd2, [replaycheck_fingerprint_n];
	ld.param.u64 %rd3, [replaycheck_fingerprint_out];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd3, %rd3;
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %tid.x;
	mov.u32 %r3, %ntid.x;
	cvt.u64.u32 %rd4, %r1;
	shl.b64 %rd5, %rd4, 17;
	shr.u64 %rd6, %rd2, 3;
	add.u64 %rd7, %rd2, 7;
	shr.u64 %rd7, %rd7, 3;
	setp.ge.u64 %p1, %rd5, %rd7;
	@%p1 bra FP_DONE;
	add.u64 %rd8, %rd5, 131072;
	min.u64 %rd8, %rd8, %rd7;
	cvt.u64.u32 %rd9, %r2;
	add.u64 %rd10, %rd5, %rd9;
	cvt.u64.u32 %rd11, %r3;
	mov.u64 %rd12, 0;
FP_LOOP:
	setp.ge.u64 %p1, %rd10, %rd8;
	@%p1 bra FP_REDUCE;
	shl.b64 %rd13, %rd10, 3;
	add.u64 %rd14, %rd1, %rd13;
	setp.lt.u64 %p2, %rd10, %rd6;
	@!%p2 bra FP_PARTIAL;
	ld.global.u64 %rd15, [%rd14];
	bra FP_MIX;
FP_PARTIAL:
	and.b64 %rd16, %rd2, 7;
	shl.b64 %rd15, %rd16, 56;
	mov.u64 %rd17, 0;
FP_BYTE:
	setp.ge.u64 %p3, %rd17, %rd16;
	@%p3 bra FP_MIX;
	add.u64 %rd18, %rd14, %rd17;
	ld.global.u8 %r4, [%rd18];
	cvt.u64.u32 %rd19, %r4;
	cvt.u32.u64 %r5, %rd17;
	shl.b32 %r5, %r5, 3;
	shl.b64 %rd19, %rd19, %r5;
	or.b64 %rd15, %rd15, %rd19;
	add.u64 %rd17, %rd17, 1;
	bra FP_BYTE;
FP_MIX:
	mul.lo.u64 %rd20, %rd10, 0x9E3779B97F4A7C15;
	xor.b64 %rd21, %rd15, %rd20;
	shr.u64 %rd22, %rd21, 33;
	xor.b64 %rd21, %rd21, %rd22;
	mul.lo.u64 %rd21, %rd21, 0xFF51AFD7ED558CCD;
	shr.u64 %rd22, %rd21, 33;
	xor.b64 %rd21, %rd21, %rd22;
	mul.lo.u64 %rd21, %rd21, 0xC4CEB9FE1A85EC53;
	shr.u64 %rd22, %rd21, 33;
	xor.b64 %rd21, %rd21, %rd22;
	add.u64 %rd12, %rd12, %rd21;
	add.u64 %rd10, %rd10, %rd11;
	bra FP_LOOP;
FP_REDUCE:
	mov.u64 %rd23, fp_sums;
	mul.wide.u32 %rd24, %r2, 8;
	add.u64 %rd25, %rd23, %rd24;
	st.shared.u64 [%rd25], %rd12;
	bar.sync 0;
	shr.u32 %r6, %r3, 1;
FP_HALVE:
	setp.eq.u32 %p1, %r6, 0;
	@%p1 bra FP_WRITE;
	setp.ge.u32 %p2, %r2, %r6;
	@%p2 bra FP_NEXT;
	mul.wide.u32 %rd26, %r6, 8;
	add.u64 %rd27, %rd25, %rd26;
	ld.shared.u64 %rd28, [%rd27];
	ld.shared.u64 %rd29, [%rd25];
	add.u64 %rd29, %rd29, %rd28;
	st.shared.u64 [%rd25], %rd29;
FP_NEXT:
	bar.sync 0;
	shr.u32 %r6, %r6, 1;
	bra FP_HALVE;
FP_WRITE:
	setp.ne.u32 %p1, %r2, 0;
	@%p1 bra FP_DONE;
	ld.shared.u64 %rd30, [%rd23];
	shl.b64 %rd31, %rd4, 3;
	add.u64 %rd32, %rd3, %rd31;
	st.global.u64 [%rd32], %rd30;
FP_DONE:
	ret;
}
`

// functions is the CUDA driver function table, resolved whole when the library opens. Exported
// names are bound exactly: several cuda.h names are macros for suffixed exports.
type functions struct {
	cuInit, cuDeviceGetCount, cuDeviceGet, cuDeviceGetName                        unsafe.Pointer
	cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRelease, cuCtxSetCurrent          unsafe.Pointer
	cuCtxSynchronize                                                              unsafe.Pointer
	cuMemAlloc, cuMemFree, cuMemAllocHost, cuMemFreeHost                          unsafe.Pointer
	cuMemcpyHtoD, cuMemcpyDtoH, cuMemcpyDtoDAsync, cuMemcpyHtoDAsync              unsafe.Pointer
	cuMemcpyDtoHAsync, cuMemsetD8Async                                            unsafe.Pointer
	cuStreamCreate, cuStreamDestroy, cuStreamSynchronize                          unsafe.Pointer
	cuEventCreate, cuEventRecord, cuStreamWaitEvent, cuEventQuery                 unsafe.Pointer
	cuEventSynchronize, cuEventDestroy                                            unsafe.Pointer
	cuModuleLoadData, cuModuleGetFunction, cuLaunchKernel                         unsafe.Pointer
	cuStreamBeginCapture, cuStreamEndCapture, cuStreamIsCapturing                 unsafe.Pointer
	cuThreadExchangeStreamCaptureMode, cuGraphInstantiateWithFlags, cuGraphLaunch unsafe.Pointer
	cuGraphExecDestroy, cuGraphDestroy, cuGetErrorString                          unsafe.Pointer
	// optional: naming and clean-up only
	cuDriverGetVersion, cuDeviceTotalMem, cuModuleUnload unsafe.Pointer
	// optional: graph introspection, all four or no capability graph-introspection
	cuGraphGetNodes, cuGraphNodeGetType, cuGraphMemsetNodeGetParams, cuGraphMemcpyNodeGetParams unsafe.Pointer
	// optional: the fake libraries' fault injection (bind.FakeFaults); a real driver has neither
	faults bind.FakeFaults
}

// introspection is the table of the graph-introspection entry points, all optional.
func (f *functions) introspection() []dl.Symbol {
	opt := func(name string, slot *unsafe.Pointer) dl.Symbol {
		return dl.Symbol{Names: []string{name}, Slot: slot, Optional: true}
	}
	return []dl.Symbol{
		opt("cuGraphGetNodes", &f.cuGraphGetNodes),
		opt("cuGraphNodeGetType", &f.cuGraphNodeGetType),
		opt("cuGraphMemsetNodeGetParams", &f.cuGraphMemsetNodeGetParams),
		opt("cuGraphMemcpyNodeGetParams", &f.cuGraphMemcpyNodeGetParams),
	}
}

func (f *functions) table() []dl.Symbol {
	opt := func(name string, slot *unsafe.Pointer) dl.Symbol {
		return dl.Symbol{Names: []string{name}, Slot: slot, Optional: true}
	}
	syms := []dl.Symbol{
		dl.Sym("cuInit", &f.cuInit),
		dl.Sym("cuDeviceGetCount", &f.cuDeviceGetCount),
		dl.Sym("cuDeviceGet", &f.cuDeviceGet),
		dl.Sym("cuDeviceGetName", &f.cuDeviceGetName),
		dl.Sym("cuDevicePrimaryCtxRetain", &f.cuDevicePrimaryCtxRetain),
		// The _v2 export and the base one share a signature; cuda.h maps the name to _v2.
		{Names: []string{"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, Slot: &f.cuDevicePrimaryCtxRelease},
		dl.Sym("cuCtxSetCurrent", &f.cuCtxSetCurrent),
		dl.Sym("cuCtxSynchronize", &f.cuCtxSynchronize),
		dl.Sym("cuMemAlloc_v2", &f.cuMemAlloc),
		dl.Sym("cuMemFree_v2", &f.cuMemFree),
		dl.Sym("cuMemAllocHost_v2", &f.cuMemAllocHost),
		dl.Sym("cuMemFreeHost", &f.cuMemFreeHost),
		dl.Sym("cuMemcpyHtoD_v2", &f.cuMemcpyHtoD),
		dl.Sym("cuMemcpyDtoH_v2", &f.cuMemcpyDtoH),
		dl.Sym("cuMemcpyDtoDAsync_v2", &f.cuMemcpyDtoDAsync),
		dl.Sym("cuMemcpyHtoDAsync_v2", &f.cuMemcpyHtoDAsync),
		dl.Sym("cuMemcpyDtoHAsync_v2", &f.cuMemcpyDtoHAsync),
		dl.Sym("cuMemsetD8Async", &f.cuMemsetD8Async),
		dl.Sym("cuStreamCreate", &f.cuStreamCreate),
		{Names: []string{"cuStreamDestroy_v2", "cuStreamDestroy"}, Slot: &f.cuStreamDestroy},
		dl.Sym("cuStreamSynchronize", &f.cuStreamSynchronize),
		dl.Sym("cuEventCreate", &f.cuEventCreate),
		dl.Sym("cuEventRecord", &f.cuEventRecord),
		dl.Sym("cuStreamWaitEvent", &f.cuStreamWaitEvent),
		dl.Sym("cuEventQuery", &f.cuEventQuery),
		dl.Sym("cuEventSynchronize", &f.cuEventSynchronize),
		{Names: []string{"cuEventDestroy_v2", "cuEventDestroy"}, Slot: &f.cuEventDestroy},
		dl.Sym("cuModuleLoadData", &f.cuModuleLoadData),
		dl.Sym("cuModuleGetFunction", &f.cuModuleGetFunction),
		dl.Sym("cuLaunchKernel", &f.cuLaunchKernel),
		// Never the plain cuStreamBeginCapture: that export is the old one-argument form.
		dl.Sym("cuStreamBeginCapture_v2", &f.cuStreamBeginCapture),
		dl.Sym("cuStreamEndCapture", &f.cuStreamEndCapture),
		dl.Sym("cuStreamIsCapturing", &f.cuStreamIsCapturing),
		dl.Sym("cuThreadExchangeStreamCaptureMode", &f.cuThreadExchangeStreamCaptureMode),
		dl.Sym("cuGraphInstantiateWithFlags", &f.cuGraphInstantiateWithFlags),
		dl.Sym("cuGraphLaunch", &f.cuGraphLaunch),
		dl.Sym("cuGraphExecDestroy", &f.cuGraphExecDestroy),
		dl.Sym("cuGraphDestroy", &f.cuGraphDestroy),
		dl.Sym("cuGetErrorString", &f.cuGetErrorString),
		opt("cuDriverGetVersion", &f.cuDriverGetVersion),
		opt("cuDeviceTotalMem_v2", &f.cuDeviceTotalMem),
		opt("cuModuleUnload", &f.cuModuleUnload),
	}
	return slices.Concat(syms, f.introspection(), f.faults.Symbols())
}

// backend is an opened CUDA driver library.
type backend struct {
	lib *dl.Library
	fn  functions

	opened bind.Opened
}

// New loads the CUDA driver (Options.Library, else $REPLAYCHECK_CUDA_LIB, else libcuda.so.1),
// resolves its whole function table and calls cuInit(0). A library that cannot be found is a
// *NoLibraryError (ErrNoLibrary), one that lacks a required symbol a *dl.MissingError naming it,
// and a cuInit failure (the toolkit's stub library answers 34) wraps ErrNoDriver.
func New(opts Options) (device.Backend, error) {
	lib, tried, err := dl.OpenFirst(candidates(opts))
	if err != nil {
		return nil, library.NoLibrary(tried, err)
	}
	b := &backend{lib: lib}
	if err := lib.Resolve(b.fn.table()); err != nil {
		_ = lib.Close()
		return nil, fmt.Errorf("cuda: %w", err)
	}
	// cuInit at every open: it may be called again, and a library closed and loaded again starts
	// uninitialised.
	if code := int(C.rc_cuda_call_uint(b.fn.cuInit, 0)); code != 0 {
		e := driverError("New", code, b.errorString(code))
		_ = lib.Close()
		if code == codeStubLibrary {
			return nil, fmt.Errorf("%w: %s is the toolkit's stub library, not a driver: cuInit: %w", ErrNoDriver, lib.Path(), e)
		}
		return nil, fmt.Errorf("%w: %s: cuInit: %w", ErrNoDriver, lib.Path(), e)
	}
	// The fakes (the library that injects faults) reset their context when a device closes, sticky
	// errors included; NVIDIA's driver needs the process relaunched.
	b.opened.Resets = b.fn.faults.Present()
	return b, nil
}

func (b *backend) errorString(code int) string {
	if s := C.rc_cuda_cuGetErrorString(b.fn.cuGetErrorString, C.int(code)); s != nil {
		return C.GoString(s)
	}
	return ""
}

func (b *backend) Name() string { return backendName }

// Source is the path of the library the backend loaded.
func (b *backend) Source() string { return b.lib.Path() }

func (b *backend) Devices(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n C.int
	if code := int(C.rc_cuda_call_outint(b.fn.cuDeviceGetCount, &n)); code != 0 {
		return 0, driverError("Devices", code, b.errorString(code))
	}
	return int(n), nil
}

// device returns the CUdevice of index, checked against the device count.
func (b *backend) device(op string, ctx context.Context, index int) (C.int, error) {
	n, err := b.Devices(ctx)
	if err != nil {
		return 0, err
	}
	if index < 0 || index >= n {
		return 0, invalid(op, "device index %d out of range: the driver reports %d device(s)", index, n)
	}
	var dev C.int
	if code := int(C.rc_cuda_cuDeviceGet(b.fn.cuDeviceGet, &dev, C.int(index))); code != 0 {
		return 0, driverError(op, code, b.errorString(code))
	}
	return dev, nil
}

// Info names device index without opening it (no context is created).
func (b *backend) Info(ctx context.Context, index int) (device.DeviceInfo, error) {
	dev, err := b.device("Info", ctx, index)
	if err != nil {
		return device.DeviceInfo{}, err
	}
	info := b.info(dev)
	info.Index = index
	return info, nil
}

func (b *backend) info(dev C.int) device.DeviceInfo {
	var info device.DeviceInfo
	buf := (*C.char)(C.calloc(257, 1))
	defer C.free(unsafe.Pointer(buf))
	if C.rc_cuda_cuDeviceGetName(b.fn.cuDeviceGetName, buf, 256, dev) == 0 {
		info.Name = C.GoString(buf)
	}
	if b.fn.cuDeviceTotalMem != nil {
		var total C.size_t
		if C.rc_cuda_cuDeviceTotalMem(b.fn.cuDeviceTotalMem, &total, dev) == 0 {
			info.Memory = int64(total)
		}
	}
	if b.fn.cuDriverGetVersion != nil {
		var v C.int
		if C.rc_cuda_call_outint(b.fn.cuDriverGetVersion, &v) == 0 && v > 0 {
			info.Driver = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
			info.Runtime = info.Driver
		}
	}
	info.Platform = platformKey(info.Driver, info.Name)
	return info
}

// Open retains the device's primary context (never cuCtxCreate, whose ABI changed in 13), makes
// it current on both workers and loads the axpy kernel on Main. A kernel that does not load leaves
// the device without capability "kernels"; the reason is Axpy's error. A library without the four
// graph-introspection entry points leaves it without "graph-introspection"; GraphNodes says why.
func (b *backend) Open(ctx context.Context, index int) (device.Device, error) {
	return b.opened.Open(codes, func() (*bind.Device, func(), error) {
		dev, err := b.device("Open", ctx, index)
		if err != nil {
			return nil, nil, err
		}
		drv := &driverImpl{FakeFaults: &b.fn.faults, fn: &b.fn, dev: dev}
		if code := int(C.rc_cuda_cuDevicePrimaryCtxRetain(b.fn.cuDevicePrimaryCtxRetain, &drv.ctx, dev)); code != 0 {
			return nil, nil, driverError("Open", code, b.errorString(code))
		}
		release := func() { C.rc_cuda_call_int(b.fn.cuDevicePrimaryCtxRelease, dev) }
		caps := device.Capabilities{Kernels: false, GraphIntrospection: false, ThreadRules: true, FaultInjection: b.fn.faults.Present(), NonBlockingStreams: true}
		d, err := bind.NewDevice(codes, drv, caps)
		if err != nil {
			release()
			return nil, nil, err
		}
		info := b.info(dev)
		d.OnMain(drv.loadKernel)
		caps.Kernels, _ = drv.Kernels()
		caps.GraphIntrospection, _ = drv.Introspects()
		d.Identify(fmt.Sprintf("cuda device %d (%s, driver %s, %s)", index, bind.OrUnknown(info.Name), bind.OrUnknown(info.Driver), b.lib.Path()), info.Platform, caps)
		return d, release, nil
	})
}

// Recovers says whether a fresh device can replace a lost or an abandoned one
// (device.Recoverer).
func (b *backend) Recovers(abandoned bool) (bool, string) {
	return b.opened.Recovers(b.lib.Path(), abandoned)
}

// Close closes the devices still open, then the library.
func (b *backend) Close() error { return b.opened.Close(b.lib) }

// HostMalloc and HostFree are the C library's allocator: pageable host memory.
func (d *driverImpl) HostMalloc(n int64) unsafe.Pointer { return C.malloc(C.size_t(n)) }
func (d *driverImpl) HostFree(p unsafe.Pointer)         { C.free(p) }

// driverImpl is one device's CUDA calls.
type driverImpl struct {
	*bind.FakeFaults
	fn  *functions
	dev C.int
	ctx unsafe.Pointer // the retained primary context

	module, kernel unsafe.Pointer
	noKernel       string // why there is no kernel, "" when there is one
	// fingerprint is the fingerprint kernel (FingerprintPTX), nil with noFingerprint saying why.
	fingerprint   unsafe.Pointer
	noFingerprint string
}

// loadKernel JIT-compiles AxpyPTX and FingerprintPTX, one module, into the primary context, on the
// Main worker at open. A driver that refuses the two loads AxpyPTX alone, without fingerprints.
func (d *driverImpl) loadKernel() {
	// Locals, not the fields: cgo checks the whole struct a pointer passed through a variable
	// points into, and driverImpl holds Go pointers.
	load := func(text string) int {
		ptx := C.CString(text)
		defer C.free(unsafe.Pointer(ptx))
		var m unsafe.Pointer
		code := int(C.rc_cuda_cuModuleLoadData(d.fn.cuModuleLoadData, &m, ptx))
		d.module = m
		return code
	}
	if code := load(AxpyPTX + FingerprintPTX); code != 0 {
		d.noFingerprint = fmt.Sprintf("cuModuleLoadData of the axpy and fingerprint PTX failed: %s", describeCode(code, d.Detail(code)))
		d.module = nil
		if code := load(AxpyPTX); code != 0 {
			d.noKernel = fmt.Sprintf("cuModuleLoadData of the axpy PTX failed: %s", describeCode(code, d.Detail(code)))
			d.module = nil
			return
		}
	}
	function := func(entry string) (unsafe.Pointer, string) {
		name := C.CString(entry)
		defer C.free(unsafe.Pointer(name))
		var f unsafe.Pointer
		if code := int(C.rc_cuda_cuModuleGetFunction(d.fn.cuModuleGetFunction, &f, d.module, name)); code != 0 {
			return nil, fmt.Sprintf("cuModuleGetFunction(%s) failed: %s", entry, describeCode(code, d.Detail(code)))
		}
		return f, ""
	}
	d.kernel, d.noKernel = function(KernelName)
	if d.noFingerprint == "" {
		d.fingerprint, d.noFingerprint = function(FingerprintName)
	}
}

// Fingerprinting says whether the fingerprint kernel is loaded (bind.FingerprintDriver).
func (d *driverImpl) Fingerprinting() (bool, string) { return d.fingerprint != nil, d.noFingerprint }

// Fingerprint launches one block of FingerprintBlock threads per chunk.
func (d *driverImpl) Fingerprint(s unsafe.Pointer, src uint64, n int64, out unsafe.Pointer, chunks int) int {
	if chunks > 1<<31-1 {
		return codeInvalidValue
	}
	return int(C.rc_cuda_fingerprint(d.fn.cuLaunchKernel, d.fingerprint, s, C.uint64_t(src), C.uint64_t(n),
		C.uint64_t(uintptr(out)), C.unsigned(chunks), FingerprintBlock))
}

func describeCode(code int, detail string) string {
	name, _ := Lookup(code)
	if detail != "" {
		return fmt.Sprintf("%s (%d): %s", name, code, detail)
	}
	return fmt.Sprintf("%s (%d)", name, code)
}

func (d *driverImpl) Bind(device.Thread) int {
	return int(C.rc_cuda_call_ptr(d.fn.cuCtxSetCurrent, d.ctx))
}

// unbind makes no context current; on Main, which the device closes last, it unloads the kernel
// module first, while the context is still current.
func (d *driverImpl) Unbind(t device.Thread) int {
	if t == device.Main && d.module != nil && d.fn.cuModuleUnload != nil {
		C.rc_cuda_call_ptr(d.fn.cuModuleUnload, d.module)
		d.module, d.kernel, d.fingerprint = nil, nil, nil
	}
	return int(C.rc_cuda_call_ptr(d.fn.cuCtxSetCurrent, nil))
}

func (d *driverImpl) Malloc(n int64) (uint64, int) {
	var addr C.uint64_t
	code := int(C.rc_cuda_cuMemAlloc(d.fn.cuMemAlloc, &addr, C.size_t(n)))
	return uint64(addr), code
}

func (d *driverImpl) Free(addr uint64) int {
	return int(C.rc_cuda_cuMemFree(d.fn.cuMemFree, C.uint64_t(addr)))
}

func (d *driverImpl) Write(dst uint64, src []byte) int {
	return int(C.rc_cuda_cuMemcpyHtoD(d.fn.cuMemcpyHtoD, C.uint64_t(dst), unsafe.Pointer(unsafe.SliceData(src)), C.size_t(len(src))))
}

func (d *driverImpl) Read(dst []byte, src uint64) int {
	return int(C.rc_cuda_cuMemcpyDtoH(d.fn.cuMemcpyDtoH, unsafe.Pointer(unsafe.SliceData(dst)), C.uint64_t(src), C.size_t(len(dst))))
}

func (d *driverImpl) MallocHost(n int64) (unsafe.Pointer, int) {
	var p unsafe.Pointer
	code := int(C.rc_cuda_cuMemAllocHost(d.fn.cuMemAllocHost, &p, C.size_t(n)))
	return p, code
}

func (d *driverImpl) FreeHost(p unsafe.Pointer) int {
	return int(C.rc_cuda_call_ptr(d.fn.cuMemFreeHost, p))
}

func (d *driverImpl) Memset(s unsafe.Pointer, dst uint64, v byte, n int64) int {
	return int(C.rc_cuda_cuMemsetD8Async(d.fn.cuMemsetD8Async, C.uint64_t(dst), C.uchar(v), C.size_t(n), s))
}

func (d *driverImpl) Memcpy(s unsafe.Pointer, kind bind.CopyKind, dst, src uint64, n int64) int {
	cd, cs, cn := C.uint64_t(dst), C.uint64_t(src), C.size_t(n)
	switch kind {
	case bind.CopyH2D:
		return int(C.rc_cuda_cuMemcpyHtoDAsync(d.fn.cuMemcpyHtoDAsync, cd, cs, cn, s))
	case bind.CopyD2H:
		return int(C.rc_cuda_cuMemcpyDtoHAsync(d.fn.cuMemcpyDtoHAsync, cd, cs, cn, s))
	}
	return int(C.rc_cuda_cuMemcpyDtoDAsync(d.fn.cuMemcpyDtoDAsync, cd, cs, cn, s))
}

func (d *driverImpl) Kernels() (bool, string) { return d.kernel != nil, d.noKernel }

// axpy launches one thread per lane in blocks of 256.
func (d *driverImpl) Axpy(s unsafe.Pointer, y, x uint64, a uint32, lanes int64) int {
	if lanes > 1<<32-1 {
		return codeInvalidValue
	}
	grid := (lanes + axpyBlock - 1) / axpyBlock
	return int(C.rc_cuda_axpy(d.fn.cuLaunchKernel, d.kernel, s, C.uint64_t(y), C.uint64_t(x), C.uint32_t(a), C.uint32_t(lanes),
		C.unsigned(grid), axpyBlock))
}

// CreateStream makes a blocking stream (flags 0), which synchronises with the legacy default
// stream, or with nonBlocking one that does not (CU_STREAM_NON_BLOCKING).
func (d *driverImpl) CreateStream(nonBlocking bool) (unsafe.Pointer, int) {
	var s unsafe.Pointer
	flags := C.unsigned(0)
	if nonBlocking {
		flags = streamNonBlocking
	}
	code := int(C.rc_cuda_create_flags(d.fn.cuStreamCreate, &s, flags))
	return s, code
}

func (d *driverImpl) DestroyStream(s unsafe.Pointer) int {
	return int(C.rc_cuda_call_ptr(d.fn.cuStreamDestroy, s))
}

func (d *driverImpl) CreateEvent() (unsafe.Pointer, int) {
	var e unsafe.Pointer
	code := int(C.rc_cuda_create_flags(d.fn.cuEventCreate, &e, eventDisableTiming))
	return e, code
}

func (d *driverImpl) DestroyEvent(e unsafe.Pointer) int {
	return int(C.rc_cuda_call_ptr(d.fn.cuEventDestroy, e))
}

func (d *driverImpl) Record(e, s unsafe.Pointer) int {
	return int(C.rc_cuda_call_ptr_ptr(d.fn.cuEventRecord, e, s))
}

func (d *driverImpl) Wait(s, e unsafe.Pointer) int {
	return int(C.rc_cuda_cuStreamWaitEvent(d.fn.cuStreamWaitEvent, s, e))
}

func (d *driverImpl) SyncStream(s unsafe.Pointer) int {
	return int(C.rc_cuda_call_ptr(d.fn.cuStreamSynchronize, s))
}

func (d *driverImpl) SyncDevice() int { return int(C.rc_cuda_call_void(d.fn.cuCtxSynchronize)) }

// queryEvent: CUDA_ERROR_NOT_READY is the answer "not complete", not a failure.
func (d *driverImpl) QueryEvent(e unsafe.Pointer) (bool, int) {
	switch code := int(C.rc_cuda_call_ptr(d.fn.cuEventQuery, e)); code {
	case 0:
		return true, 0
	case codeNotReady:
		return false, 0
	default:
		return false, code
	}
}

func (d *driverImpl) SyncEvent(e unsafe.Pointer) int {
	return int(C.rc_cuda_call_ptr(d.fn.cuEventSynchronize, e))
}

func (d *driverImpl) ExchangeMode(m device.CaptureMode) (device.CaptureMode, int) {
	mode := C.int(m)
	code := int(C.rc_cuda_cuThreadExchangeStreamCaptureMode(d.fn.cuThreadExchangeStreamCaptureMode, &mode))
	return device.CaptureMode(mode), code
}

func (d *driverImpl) BeginCapture(s unsafe.Pointer, m device.CaptureMode) int {
	return int(C.rc_cuda_cuStreamBeginCapture(d.fn.cuStreamBeginCapture, s, C.int(m)))
}

// endCapture ends the capture and instantiates its graph: the device.Graph holds both the CUgraph
// (a) and the CUgraphExec (b). A graph that does not instantiate is destroyed, and its code is the
// end's.
func (d *driverImpl) EndCapture(s unsafe.Pointer) (bind.GraphRef, int) {
	var g bind.GraphRef
	if code := int(C.rc_cuda_cuStreamEndCapture(d.fn.cuStreamEndCapture, s, &g.A)); code != 0 {
		return bind.GraphRef{}, code
	}
	if code := int(C.rc_cuda_cuGraphInstantiateWithFlags(d.fn.cuGraphInstantiateWithFlags, &g.B, g.A)); code != 0 {
		C.rc_cuda_call_ptr(d.fn.cuGraphDestroy, g.A)
		return bind.GraphRef{}, code
	}
	return g, 0
}

func (d *driverImpl) CaptureStatus(s unsafe.Pointer) (device.CaptureStatus, int) {
	var st C.int
	code := int(C.rc_cuda_cuStreamIsCapturing(d.fn.cuStreamIsCapturing, s, &st))
	return device.CaptureStatus(st), code
}

func (d *driverImpl) Launch(g bind.GraphRef, s unsafe.Pointer) int {
	return int(C.rc_cuda_call_ptr_ptr(d.fn.cuGraphLaunch, g.B, s))
}

func (d *driverImpl) DestroyGraph(g bind.GraphRef) int {
	code := int(C.rc_cuda_call_ptr(d.fn.cuGraphExecDestroy, g.B))
	if c := int(C.rc_cuda_call_ptr(d.fn.cuGraphDestroy, g.A)); code == 0 {
		code = c
	}
	return code
}

// detail is cuGetErrorString's text for code.
func (d *driverImpl) Detail(code int) string {
	if s := C.rc_cuda_cuGetErrorString(d.fn.cuGetErrorString, C.int(code)); s != nil {
		return C.GoString(s)
	}
	return ""
}

// Introspects says whether the library has the four graph-introspection entry points, and names
// those it lacks.
func (d *driverImpl) Introspects() (bool, string) {
	var missing []string
	for _, s := range d.fn.introspection() {
		if *s.Slot == nil {
			missing = append(missing, s.Names[0])
		}
	}
	if len(missing) > 0 {
		return false, fmt.Sprintf("the driver library lacks %s: no graph introspection", strings.Join(missing, ", "))
	}
	return true, ""
}

// GraphNodes lists the nodes of the captured CUgraph (g.A) with cuGraphGetNodes and
// cuGraphNodeGetType. A memset node writes the rows cuGraphMemsetNodeGetParams describes; a
// memcpy node reads and writes what cuGraphMemcpyNodeGetParams describes (for replaycheck's 1-D
// copies: WidthInBytes from srcXInBytes of srcHost or srcDevice, by srcMemoryType, to the same of
// dst). A kernel node is listed with no ranges: cuGraphKernelNodeGetParams maps to a _v2 export
// whose struct grew in 12.0, and is not bound. Empty, event-wait and event-record nodes have no
// ranges; any other node type (host, child graph, ...) fails not-supported, as does a memcpy
// node with a CUDA array side: device.GraphNode cannot describe them.
func (d *driverImpl) GraphNodes(g bind.GraphRef) ([]device.GraphNode, int, string) {
	fail := func(call string, code int) ([]device.GraphNode, int, string) {
		return nil, code, fmt.Sprintf("%s: %s", call, describeCode(code, d.Detail(code)))
	}
	var count C.size_t
	if code := int(C.rc_cuda_cuGraphGetNodes(d.fn.cuGraphGetNodes, g.A, nil, &count)); code != 0 {
		return fail("cuGraphGetNodes", code)
	}
	out := []device.GraphNode{}
	if count == 0 {
		return out, 0, ""
	}
	buf := (*unsafe.Pointer)(C.calloc(count, C.size_t(unsafe.Sizeof(unsafe.Pointer(nil)))))
	defer C.free(unsafe.Pointer(buf))
	got := count
	if code := int(C.rc_cuda_cuGraphGetNodes(d.fn.cuGraphGetNodes, g.A, buf, &got)); code != 0 {
		return fail("cuGraphGetNodes", code)
	}
	for i, node := range unsafe.Slice(buf, int(count))[:min(got, count)] {
		if node == nil {
			continue
		}
		var typ C.int
		if code := int(C.rc_cuda_cuGraphNodeGetType(d.fn.cuGraphNodeGetType, node, &typ)); code != 0 {
			return fail("cuGraphNodeGetType", code)
		}
		kind, ok := nodeKinds[int(typ)]
		if !ok {
			return nil, codeNotSupported, fmt.Sprintf("node %d of the graph is a %s node, which device.GraphNode has no kind for", i, nodeTypeName(int(typ)))
		}
		n := device.GraphNode{Kind: kind}
		switch kind {
		case "memset":
			var dst, pitch, elem, width, height C.uint64_t
			if code := int(C.rc_cuda_cuGraphMemsetNodeGetParams(d.fn.cuGraphMemsetNodeGetParams, node, &dst, &pitch, &elem, &width, &height)); code != 0 {
				return fail("cuGraphMemsetNodeGetParams", code)
			}
			w, ok := memsetRanges(uint64(dst), uint64(pitch), uint64(elem), uint64(width), uint64(height))
			if !ok {
				return nil, codeNotSupported, fmt.Sprintf("memset node %d of the graph spans more than %d separate rows", i, maxRows)
			}
			n.Writes = w
		case "memcpy":
			var p C.rc_cuda_copy_params
			if code := int(C.rc_cuda_cuGraphMemcpyNodeGetParams(d.fn.cuGraphMemcpyNodeGetParams, node, &p)); code != 0 {
				return fail("cuGraphMemcpyNodeGetParams", code)
			}
			side := func(s C.rc_cuda_copy_side) copySide {
				return copySide{Type: int(s._type), Addr: uint64(s.addr), X: uint64(s.x), Y: uint64(s.y), Z: uint64(s.z),
					Pitch: uint64(s.pitch), Height: uint64(s.height)}
			}
			width, height, depth := uint64(p.width), uint64(p.height), uint64(p.depth)
			r, err := copyRanges("source", side(p.src), width, height, depth)
			if err == nil {
				n.Reads = r
				n.Writes, err = copyRanges("destination", side(p.dst), width, height, depth)
			}
			if err != nil {
				return nil, codeNotSupported, fmt.Sprintf("memcpy node %d of the graph: %v", i, err)
			}
		}
		out = append(out, n)
	}
	return out, 0, ""
}
