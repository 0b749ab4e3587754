//go:build cgo

package acl

// The binding's C is in trampolines.c, declared in trampolines.h: the trampolines that call the
// ACL runtime's entry points through the addresses dl resolved. The package's C, cgo's own
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
	"runtime"
	"strings"
	"unsafe"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/internal/bind"
	"github.com/replaycheck/replaycheck/internal/dl"
)

// ACL enum values the binding passes (docs/platforms.md, acl_rt.h).
const (
	mallocHugeFirst = 0 // ACL_MEM_MALLOC_HUGE_FIRST
	memcpyH2D       = 1
	memcpyD2H       = 2
	memcpyD2D       = 3
	eventSync       = 0x1 // ACL_EVENT_SYNC: an event that cross-stream capture accepts
	eventComplete   = 1   // ACL_EVENT_RECORDED_STATUS_COMPLETE
	hbmMem          = 1   // ACL_HBM_MEM, for aclrtGetMemInfo
	pkgVersionMax   = 128 // ACL_PKG_VERSION_MAX_SIZE
)

// functions is the ACL function table, resolved whole when the library opens.
type functions struct {
	aclInit, aclGetRecentErrMsg                                              unsafe.Pointer
	aclrtSetDevice, aclrtResetDevice, aclrtGetDeviceCount                    unsafe.Pointer
	aclrtMalloc, aclrtFree, aclrtMemcpy, aclrtMemcpyAsync, aclrtMemsetAsync  unsafe.Pointer
	aclrtMallocHost, aclrtFreeHost                                           unsafe.Pointer
	aclrtCreateStream, aclrtDestroyStream, aclrtSynchronizeStream            unsafe.Pointer
	aclrtSynchronizeDevice                                                   unsafe.Pointer
	aclrtCreateEventExWithFlag, aclrtDestroyEvent, aclrtRecordEvent          unsafe.Pointer
	aclrtStreamWaitEvent, aclrtQueryEventStatus, aclrtSynchronizeEvent       unsafe.Pointer
	aclmdlRICaptureBegin, aclmdlRICaptureGetInfo, aclmdlRICaptureEnd         unsafe.Pointer
	aclmdlRICaptureThreadExchangeMode, aclmdlRIExecuteAsync, aclmdlRIDestroy unsafe.Pointer
	aclrtGetSocName, aclrtGetMemInfo, aclsysGetVersionStr                    unsafe.Pointer // optional: naming only
	// optional: graph reading (CANN 9.1 trial entry points), all three or no graph-introspection
	aclmdlRIGetStreams, aclmdlRIGetTasksByStream, aclmdlRITaskGetType unsafe.Pointer
	// optional: the fake libraries' fault injection (bind.FakeFaults); a real driver has neither
	faults bind.FakeFaults
}

func (f *functions) table() []dl.Symbol {
	syms := []dl.Symbol{
		dl.Sym("aclInit", &f.aclInit),
		dl.Sym("aclGetRecentErrMsg", &f.aclGetRecentErrMsg),
		dl.Sym("aclrtSetDevice", &f.aclrtSetDevice),
		dl.Sym("aclrtResetDevice", &f.aclrtResetDevice),
		dl.Sym("aclrtGetDeviceCount", &f.aclrtGetDeviceCount),
		dl.Sym("aclrtMalloc", &f.aclrtMalloc),
		dl.Sym("aclrtFree", &f.aclrtFree),
		dl.Sym("aclrtMemcpy", &f.aclrtMemcpy),
		dl.Sym("aclrtMemcpyAsync", &f.aclrtMemcpyAsync),
		dl.Sym("aclrtMemsetAsync", &f.aclrtMemsetAsync),
		dl.Sym("aclrtMallocHost", &f.aclrtMallocHost),
		dl.Sym("aclrtFreeHost", &f.aclrtFreeHost),
		dl.Sym("aclrtCreateStream", &f.aclrtCreateStream),
		dl.Sym("aclrtDestroyStream", &f.aclrtDestroyStream),
		dl.Sym("aclrtSynchronizeStream", &f.aclrtSynchronizeStream),
		dl.Sym("aclrtSynchronizeDevice", &f.aclrtSynchronizeDevice),
		dl.Sym("aclrtCreateEventExWithFlag", &f.aclrtCreateEventExWithFlag),
		dl.Sym("aclrtDestroyEvent", &f.aclrtDestroyEvent),
		dl.Sym("aclrtRecordEvent", &f.aclrtRecordEvent),
		dl.Sym("aclrtStreamWaitEvent", &f.aclrtStreamWaitEvent),
		dl.Sym("aclrtQueryEventStatus", &f.aclrtQueryEventStatus),
		dl.Sym("aclrtSynchronizeEvent", &f.aclrtSynchronizeEvent),
		dl.Sym("aclmdlRICaptureBegin", &f.aclmdlRICaptureBegin),
		dl.Sym("aclmdlRICaptureGetInfo", &f.aclmdlRICaptureGetInfo),
		dl.Sym("aclmdlRICaptureEnd", &f.aclmdlRICaptureEnd),
		dl.Sym("aclmdlRICaptureThreadExchangeMode", &f.aclmdlRICaptureThreadExchangeMode),
		dl.Sym("aclmdlRIExecuteAsync", &f.aclmdlRIExecuteAsync),
		dl.Sym("aclmdlRIDestroy", &f.aclmdlRIDestroy),
		{Names: []string{"aclrtGetSocName"}, Slot: &f.aclrtGetSocName, Optional: true},
		{Names: []string{"aclrtGetMemInfo"}, Slot: &f.aclrtGetMemInfo, Optional: true},
		{Names: []string{"aclsysGetVersionStr"}, Slot: &f.aclsysGetVersionStr, Optional: true},
	}
	syms = append(syms, f.graphReading()...)
	return append(syms, f.faults.Symbols()...)
}

// graphReading is the table of the graph-reading entry points, all optional: CANN 9.1 added them
// as trial APIs for Atlas A2 and A3, and older runtimes lack them.
func (f *functions) graphReading() []dl.Symbol {
	opt := func(name string, slot *unsafe.Pointer) dl.Symbol {
		return dl.Symbol{Names: []string{name}, Slot: slot, Optional: true}
	}
	return []dl.Symbol{
		opt("aclmdlRIGetStreams", &f.aclmdlRIGetStreams),
		opt("aclmdlRIGetTasksByStream", &f.aclmdlRIGetTasksByStream),
		opt("aclmdlRITaskGetType", &f.aclmdlRITaskGetType),
	}
}

// missingGraphReading names the graph-reading entry points the library lacks, none when it has
// all three.
func (f *functions) missingGraphReading() []string {
	var missing []string
	for _, s := range f.graphReading() {
		if *s.Slot == nil {
			missing = append(missing, s.Names[0])
		}
	}
	return missing
}

// backend is an opened ACL runtime library.
type backend struct {
	lib *dl.Library
	fn  functions

	opened bind.Opened
}

// New loads the ACL runtime (Options.Library, else $REPLAYCHECK_ACL_LIB, else SearchPaths),
// resolves its whole function table, initialises it with aclInit and asks aclrtGetDeviceCount. A
// library that cannot be found is a *NoLibraryError (ErrNoLibrary), one that lacks a required
// symbol a *dl.MissingError naming it, and a failure of aclInit or of aclrtGetDeviceCount (a
// runtime without its driver: ACL_ERROR_RT_NO_DEVICE) wraps ErrNoDriver.
func New(opts Options) (device.Backend, error) {
	lib, tried, err := dl.OpenFirst(candidates(opts))
	if err != nil {
		return nil, library.NoLibrary(tried, err)
	}
	b := &backend{lib: lib}
	if err := lib.Resolve(b.fn.table()); err != nil {
		_ = lib.Close()
		return nil, fmt.Errorf("acl: %w", err)
	}
	// aclInit at every open: a library closed and loaded again starts uninitialised, and one that
	// stayed loaded answers a second aclInit with 100002, repeat-initialize, which is success.
	// Then the device count: a runtime without a usable driver initialises but cannot count its
	// devices (ACL_ERROR_RT_NO_DEVICE, 207004, and the driver's own codes), which is no driver, as
	// CUDA's cuInit failure is; a count of 0 is a driver without a device, for Devices to report.
	var step string
	var code int
	var detail string
	onThread(func() {
		step = "aclInit"
		if code = int(C.rc_acl_call_cstr(b.fn.aclInit, nil)); code == codeRepeatInitialize {
			code = 0
		}
		if code == 0 {
			var n C.uint32_t
			step = "aclrtGetDeviceCount"
			code = int(C.rc_acl_call_outu32(b.fn.aclrtGetDeviceCount, &n))
		}
		if code != 0 {
			detail = b.errMsg()
		}
	})
	if code != 0 {
		_ = lib.Close()
		return nil, fmt.Errorf("%w: %s: %s: %w", ErrNoDriver, lib.Path(), step, driverError("New", code, detail))
	}
	return b, nil
}

// onThread runs f on a goroutine locked to its OS thread, for calls whose error message is kept
// per thread.
func onThread(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		f()
	}()
	<-done
}

func (b *backend) errMsg() string {
	if s := C.rc_acl_call_str(b.fn.aclGetRecentErrMsg); s != nil {
		return strings.TrimSpace(C.GoString(s))
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
	var n C.uint32_t
	var err error
	onThread(func() {
		if code := int(C.rc_acl_call_outu32(b.fn.aclrtGetDeviceCount, &n)); code != 0 {
			err = driverError("Devices", code, b.errMsg())
		}
	})
	return int(n), err
}

func (b *backend) checkIndex(op string, ctx context.Context, index int) error {
	n, err := b.Devices(ctx)
	if err != nil {
		return err
	}
	if index < 0 || index >= n {
		return invalid(op, "device index %d out of range: the runtime reports %d device(s)", index, n)
	}
	return nil
}

// Info names device index without opening it: it sets the device on a thread of its own, asks,
// and resets it.
func (b *backend) Info(ctx context.Context, index int) (device.DeviceInfo, error) {
	if err := b.checkIndex("Info", ctx, index); err != nil {
		return device.DeviceInfo{}, err
	}
	var info device.DeviceInfo
	var err error
	onThread(func() {
		if code := int(C.rc_acl_call_i32(b.fn.aclrtSetDevice, C.int32_t(index))); code != 0 {
			err = driverError("Info", code, b.errMsg())
			return
		}
		defer C.rc_acl_call_i32(b.fn.aclrtResetDevice, C.int32_t(index))
		info = b.info()
	})
	info.Index = index
	return info, err
}

// info asks what names the current device; the optional entry points that are missing leave
// their fields empty.
func (b *backend) info() device.DeviceInfo {
	var info device.DeviceInfo
	if b.fn.aclrtGetSocName != nil {
		if s := C.rc_acl_call_str(b.fn.aclrtGetSocName); s != nil {
			info.Name = C.GoString(s)
		}
	}
	if b.fn.aclrtGetMemInfo != nil {
		var free, total C.size_t
		if C.rc_acl_aclrtGetMemInfo(b.fn.aclrtGetMemInfo, hbmMem, &free, &total) == 0 {
			info.Memory = int64(total)
		}
	}
	if missing := b.fn.missingGraphReading(); len(missing) > 0 {
		info.Lacks = append(info.Lacks, fmt.Sprintf("graph reading: the runtime library lacks %s (CANN 9.1 trial APIs)", strings.Join(missing, ", ")))
	}
	info.Runtime = b.version("runtime")
	info.Driver = b.version("driver")
	info.Platform = platformKey(info.Runtime, info.Name)
	return info
}

func (b *backend) version(pkg string) string {
	if b.fn.aclsysGetVersionStr == nil {
		return ""
	}
	cpkg := C.CString(pkg)
	defer C.free(unsafe.Pointer(cpkg))
	buf := (*C.char)(C.calloc(pkgVersionMax+1, 1))
	defer C.free(unsafe.Pointer(buf))
	if C.rc_acl_aclsysGetVersionStr(b.fn.aclsysGetVersionStr, cpkg, buf) != 0 {
		return ""
	}
	return strings.TrimSpace(C.GoString(buf))
}

func (b *backend) Open(ctx context.Context, index int) (device.Device, error) {
	return b.opened.Open(codes, func() (*bind.Device, func(), error) {
		if err := b.checkIndex("Open", ctx, index); err != nil {
			return nil, nil, err
		}
		drv := &driverImpl{FakeFaults: &b.fn.faults, fn: &b.fn, index: int32(index)}
		caps := device.Capabilities{Kernels: false, GraphIntrospection: false, ThreadRules: true, FaultInjection: b.fn.faults.Present(), NonBlockingStreams: true}
		caps.GraphIntrospection, _ = drv.Introspects()
		d, err := bind.NewDevice(codes, drv, caps)
		if err != nil {
			return nil, nil, err
		}
		d.OnMain(func() {
			info := b.info()
			d.Identify(fmt.Sprintf("acl device %d (%s, CANN runtime %s, %s)", index, bind.OrUnknown(info.Name), bind.OrUnknown(info.Runtime), b.lib.Path()), info.Platform, caps)
		})
		return d, nil, nil
	})
}

// Recovers says whether a fresh device can replace a lost or an abandoned one
// (device.Recoverer).
func (b *backend) Recovers(abandoned bool) (bool, string) {
	return b.opened.Recovers(b.lib.Path(), abandoned)
}

// Close closes the devices still open, then the library. aclFinalize is never called: aclInit
// holds for the process.
func (b *backend) Close() error { return b.opened.Close(b.lib) }

// HostMalloc and HostFree are the C library's allocator: pageable host memory.
func (d *driverImpl) HostMalloc(n int64) unsafe.Pointer { return C.malloc(C.size_t(n)) }
func (d *driverImpl) HostFree(p unsafe.Pointer)         { C.free(p) }

// driverImpl is one device's ACL calls.
type driverImpl struct {
	*bind.FakeFaults
	fn    *functions
	index int32
}

func (d *driverImpl) Bind(device.Thread) int {
	return int(C.rc_acl_call_i32(d.fn.aclrtSetDevice, C.int32_t(d.index)))
}

func (d *driverImpl) Unbind(device.Thread) int {
	return int(C.rc_acl_call_i32(d.fn.aclrtResetDevice, C.int32_t(d.index)))
}

func (d *driverImpl) Malloc(n int64) (uint64, int) {
	var addr C.uint64_t
	code := int(C.rc_acl_aclrtMalloc(d.fn.aclrtMalloc, &addr, C.size_t(n), mallocHugeFirst))
	return uint64(addr), code
}

func (d *driverImpl) Free(addr uint64) int {
	return int(C.rc_acl_aclrtFree(d.fn.aclrtFree, C.uint64_t(addr)))
}

func (d *driverImpl) Write(dst uint64, src []byte) int {
	return int(C.rc_acl_aclrtMemcpy_h2d(d.fn.aclrtMemcpy, C.uint64_t(dst), unsafe.Pointer(unsafe.SliceData(src)), C.size_t(len(src))))
}

func (d *driverImpl) Read(dst []byte, src uint64) int {
	return int(C.rc_acl_aclrtMemcpy_d2h(d.fn.aclrtMemcpy, unsafe.Pointer(unsafe.SliceData(dst)), C.uint64_t(src), C.size_t(len(dst))))
}

func (d *driverImpl) MallocHost(n int64) (unsafe.Pointer, int) {
	var p unsafe.Pointer
	code := int(C.rc_acl_aclrtMallocHost(d.fn.aclrtMallocHost, &p, C.size_t(n)))
	return p, code
}

func (d *driverImpl) FreeHost(p unsafe.Pointer) int {
	return int(C.rc_acl_call_ptr(d.fn.aclrtFreeHost, p))
}

func (d *driverImpl) Memset(s unsafe.Pointer, dst uint64, v byte, n int64) int {
	return int(C.rc_acl_aclrtMemsetAsync(d.fn.aclrtMemsetAsync, C.uint64_t(dst), C.int32_t(v), C.size_t(n), s))
}

func (d *driverImpl) Memcpy(s unsafe.Pointer, kind bind.CopyKind, dst, src uint64, n int64) int {
	k := memcpyD2D
	switch kind {
	case bind.CopyH2D:
		k = memcpyH2D
	case bind.CopyD2H:
		k = memcpyD2H
	}
	return int(C.rc_acl_aclrtMemcpyAsync(d.fn.aclrtMemcpyAsync, C.uint64_t(dst), C.uint64_t(src), C.size_t(n), C.int(k), s))
}

func (d *driverImpl) Axpy(unsafe.Pointer, uint64, uint64, uint32, int64) int { return codeNotSupported }

func (d *driverImpl) Kernels() (bool, string) {
	return false, "the ACL binding has no kernel: ACL launches only compiled operator binaries"
}

// CreateStream makes a stream: every ACL stream is non-blocking (the default stream never
// synchronises with it implicitly), so there is nothing to ask for.
func (d *driverImpl) CreateStream(bool) (unsafe.Pointer, int) {
	var s unsafe.Pointer
	code := int(C.rc_acl_call_outptr(d.fn.aclrtCreateStream, &s))
	return s, code
}

func (d *driverImpl) DestroyStream(s unsafe.Pointer) int {
	return int(C.rc_acl_call_ptr(d.fn.aclrtDestroyStream, s))
}

// createEvent makes an ACL_EVENT_SYNC event: a plain aclrtCreateEvent event recorded into a
// capture fails 207000, and cross-stream capture (fork and join) needs the flag.
func (d *driverImpl) CreateEvent() (unsafe.Pointer, int) {
	var e unsafe.Pointer
	code := int(C.rc_acl_aclrtCreateEventExWithFlag(d.fn.aclrtCreateEventExWithFlag, &e, eventSync))
	return e, code
}

func (d *driverImpl) DestroyEvent(e unsafe.Pointer) int {
	return int(C.rc_acl_call_ptr(d.fn.aclrtDestroyEvent, e))
}

func (d *driverImpl) Record(e, s unsafe.Pointer) int {
	return int(C.rc_acl_call_ptr_ptr(d.fn.aclrtRecordEvent, e, s))
}

func (d *driverImpl) Wait(s, e unsafe.Pointer) int {
	return int(C.rc_acl_call_ptr_ptr(d.fn.aclrtStreamWaitEvent, s, e))
}

func (d *driverImpl) SyncStream(s unsafe.Pointer) int {
	return int(C.rc_acl_call_ptr(d.fn.aclrtSynchronizeStream, s))
}

func (d *driverImpl) SyncDevice() int { return int(C.rc_acl_call_void(d.fn.aclrtSynchronizeDevice)) }

func (d *driverImpl) QueryEvent(e unsafe.Pointer) (bool, int) {
	var st C.int
	code := int(C.rc_acl_aclrtQueryEventStatus(d.fn.aclrtQueryEventStatus, e, &st))
	return st == eventComplete, code
}

func (d *driverImpl) SyncEvent(e unsafe.Pointer) int {
	return int(C.rc_acl_call_ptr(d.fn.aclrtSynchronizeEvent, e))
}

func (d *driverImpl) ExchangeMode(m device.CaptureMode) (device.CaptureMode, int) {
	mode := C.int(m)
	code := int(C.rc_acl_aclmdlRICaptureThreadExchangeMode(d.fn.aclmdlRICaptureThreadExchangeMode, &mode))
	return device.CaptureMode(mode), code
}

func (d *driverImpl) BeginCapture(s unsafe.Pointer, m device.CaptureMode) int {
	return int(C.rc_acl_aclmdlRICaptureBegin(d.fn.aclmdlRICaptureBegin, s, C.int(m)))
}

func (d *driverImpl) EndCapture(s unsafe.Pointer) (bind.GraphRef, int) {
	var ri unsafe.Pointer
	code := int(C.rc_acl_aclmdlRICaptureEnd(d.fn.aclmdlRICaptureEnd, s, &ri))
	return bind.GraphRef{A: ri}, code
}

func (d *driverImpl) CaptureStatus(s unsafe.Pointer) (device.CaptureStatus, int) {
	var st C.int
	var ri unsafe.Pointer
	code := int(C.rc_acl_aclmdlRICaptureGetInfo(d.fn.aclmdlRICaptureGetInfo, s, &st, &ri))
	return device.CaptureStatus(st), code
}

func (d *driverImpl) Launch(g bind.GraphRef, s unsafe.Pointer) int {
	return int(C.rc_acl_call_ptr_ptr(d.fn.aclmdlRIExecuteAsync, g.A, s))
}

func (d *driverImpl) DestroyGraph(g bind.GraphRef) int {
	return int(C.rc_acl_call_ptr(d.fn.aclmdlRIDestroy, g.A))
}

// detail is aclGetRecentErrMsg's text: the runtime keeps it per thread, so it is read on the
// worker that made the failing call, right after it.
func (d *driverImpl) Detail(int) string {
	if s := C.rc_acl_call_str(d.fn.aclGetRecentErrMsg); s != nil {
		return strings.TrimSpace(C.GoString(s))
	}
	return ""
}

// Introspects says whether the library has the three graph-reading entry points, and names those
// it lacks.
func (d *driverImpl) Introspects() (bool, string) {
	if missing := d.fn.missingGraphReading(); len(missing) > 0 {
		return false, fmt.Sprintf("the runtime library lacks %s (CANN 9.1 trial APIs): the graph is not read", strings.Join(missing, ", "))
	}
	return true, ""
}

// GraphNodes reads the tasks of the model RI (g.A) a capture made: its streams
// (aclmdlRIGetStreams), each stream's tasks in order (aclmdlRIGetTasksByStream) and each task's
// type (aclmdlRITaskGetType), one node per task, stream after stream. Types map as taskKind says:
// a kernel task is a kernel node without ranges, an event record or wait task its event node,
// and every other task a "task" node, which names neither its work nor its memory. CANN types a
// fill or a copy ACL_MODEL_RI_TASK_DEFAULT and answers aclmdlRITaskGetParams only for kernel,
// event and value tasks (hicann/runtime src/runtime/core/src/kernel/kernel_utils.cc
// ConvertTaskType, src/runtime/api/impl/api_impl.cc ApiImpl::TaskGetParams), so no task of a
// graph replaycheck captures on ACL carries a range.
func (d *driverImpl) GraphNodes(g bind.GraphRef) ([]device.GraphNode, int, string) {
	fail := func(call string, code int) ([]device.GraphNode, int, string) {
		detail := d.Detail(code)
		if detail == "" {
			detail = fmt.Sprintf("error %d", code)
		}
		return nil, code, fmt.Sprintf("%s: %s", call, detail)
	}
	streams, code := d.list(d.fn.aclmdlRIGetStreams, g.A)
	if code != 0 {
		return fail("aclmdlRIGetStreams", code)
	}
	out := []device.GraphNode{}
	for _, s := range streams {
		tasks, code := d.list(d.fn.aclmdlRIGetTasksByStream, s)
		if code != 0 {
			return fail("aclmdlRIGetTasksByStream", code)
		}
		for _, t := range tasks {
			var typ C.int
			if code := int(C.rc_acl_aclmdlRITaskGetType(d.fn.aclmdlRITaskGetType, t, &typ)); code != 0 {
				return fail("aclmdlRITaskGetType", code)
			}
			out = append(out, device.GraphNode{Kind: taskKind(int(typ))})
		}
	}
	return out, 0, ""
}

// list asks fn (aclmdlRIGetStreams or aclmdlRIGetTasksByStream) for owner's count, then for that
// many entries; entries the runtime left NULL are dropped.
func (d *driverImpl) list(fn, owner unsafe.Pointer) ([]unsafe.Pointer, int) {
	var n C.uint32_t
	if code := int(C.rc_acl_aclmdlRIGetList(fn, owner, nil, &n)); code != 0 || n == 0 {
		return nil, code
	}
	buf := (*unsafe.Pointer)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(unsafe.Pointer(nil)))))
	defer C.free(unsafe.Pointer(buf))
	got := n
	if code := int(C.rc_acl_aclmdlRIGetList(fn, owner, buf, &got)); code != 0 {
		return nil, code
	}
	var out []unsafe.Pointer
	for _, p := range unsafe.Slice(buf, int(n))[:min(got, n)] {
		if p != nil {
			out = append(out, p)
		}
	}
	return out, 0
}
