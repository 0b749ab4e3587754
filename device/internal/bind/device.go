// Package bind is the driver-neutral half of a device backend that binds a C Driver (device/acl,
// device/cuda): handles, the Go-side bookkeeping of allocations and captures, counters, thread
// dispatch to the two locked workers (and sessions on one of them: device.ThreadRunner), and
// error building. A backend supplies a Driver (its calls
// into the library, each returning the platform's status code) and its Codes (the one table that
// names and classes them); NewDevice makes a device.Device of them. The package calls no driver
// entry point itself, the Driver does; its only C is the trampolines of the fake libraries'
// fault-injection ABI (FakeFaults, fakefaults_cgo.go), which no real driver has and which the
// loader (internal/dl) knows nothing of. The errors of a library that cannot be loaded, or whose
// driver is not usable, are one type for every binding (Library, NoLibraryError).
//
// One piece of memory management is the binding's own: host memory that a live graph's copy, or a
// capture in progress, names is kept when freed and handed to the next allocation of its kind and
// size, as a runtime's caching host allocator does, because a replay over host memory returned to
// the platform can crash the process (hosts.go).
package bind

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/addrmap"
)

// CopyKind is the direction of a stream copy.
type CopyKind uint8

const (
	CopyD2D CopyKind = iota
	CopyH2D
	CopyD2H
)

// GraphRef is what the Driver holds for one graph: ACL uses a (the model RI); CUDA a (CUgraph)
// and b (CUgraphExec).
type GraphRef struct{ A, B unsafe.Pointer }

// Driver is one opened device's calls, each made on the calling worker's OS thread, each
// returning the platform's status code (0 for success). detail explains a failed call and must
// be asked right after it, on the same thread.
type Driver interface {
	Bind(t device.Thread) int   // make the device current on this worker's thread
	Unbind(t device.Thread) int // undo bind, when the device closes
	Malloc(n int64) (uint64, int)
	Free(addr uint64) int
	Write(dst uint64, src []byte) int // synchronous host to device
	Read(dst []byte, src uint64) int  // synchronous device to host
	MallocHost(n int64) (unsafe.Pointer, int)
	FreeHost(p unsafe.Pointer) int
	Memset(s unsafe.Pointer, dst uint64, v byte, n int64) int
	Memcpy(s unsafe.Pointer, kind CopyKind, dst, src uint64, n int64) int
	// axpy enqueues the kernel; kernels says whether it exists, and why not.
	Axpy(s unsafe.Pointer, y, x uint64, a uint32, lanes int64) int
	Kernels() (bool, string)
	// CreateStream makes a stream; nonBlocking: one the platform's default stream does not
	// synchronise with.
	CreateStream(nonBlocking bool) (unsafe.Pointer, int)
	DestroyStream(s unsafe.Pointer) int
	CreateEvent() (unsafe.Pointer, int)
	DestroyEvent(e unsafe.Pointer) int
	Record(e, s unsafe.Pointer) int
	Wait(s, e unsafe.Pointer) int
	SyncStream(s unsafe.Pointer) int
	SyncDevice() int
	QueryEvent(e unsafe.Pointer) (bool, int)
	SyncEvent(e unsafe.Pointer) int
	ExchangeMode(m device.CaptureMode) (device.CaptureMode, int)
	BeginCapture(s unsafe.Pointer, m device.CaptureMode) int
	EndCapture(s unsafe.Pointer) (GraphRef, int)
	CaptureStatus(s unsafe.Pointer) (device.CaptureStatus, int)
	Launch(g GraphRef, s unsafe.Pointer) int
	DestroyGraph(g GraphRef) int
	Detail(code int) string
	// HostMalloc and HostFree are the C library's allocator: pageable host memory, no driver call.
	HostMalloc(n int64) unsafe.Pointer
	HostFree(p unsafe.Pointer)
}

// GraphLister is an optional extension of a Driver that can list a captured graph's nodes
// (device/cuda's; ACL's Driver has none). Device.GraphNodes uses it when the Driver implements it
// and the device's capabilities say GraphIntrospection.
type GraphLister interface {
	// Introspects says whether GraphNodes works on this device, and why not when it does not.
	Introspects() (bool, string)
	// GraphNodes lists the nodes of g, on the calling worker's thread. A failure returns the
	// platform's code and, when not "", a detail that replaces Driver.Detail's (a node the
	// binding cannot describe, where no driver call failed).
	GraphNodes(g GraphRef) ([]device.GraphNode, int, string)
}

type allocation struct {
	ptr  device.Ptr
	host device.HostMemory // 0: device memory
	base unsafe.Pointer    // host memory: the C pointer
	// graphs and captures count the live graphs and the captures in progress whose copies name
	// this host allocation (hosts.go).
	graphs, captures int
}

type stream struct {
	h       unsafe.Pointer // nil: the default stream
	capture *capture
}

type event struct {
	h unsafe.Pointer
	// capture is the capture in progress the event's last record belongs to: a wait on it forks
	// the waiting stream into that capture.
	capture *capture
}

// capture is the engine-visible bookkeeping of one capture sequence, which neither Driver can
// report in full: the ID (one per BeginCapture), the origin, the mode and the beginning thread.
// The Driver stays the authority on the status.
type capture struct {
	id          uint64
	origin      device.Stream
	mode        device.CaptureMode
	thread      device.Thread
	invalidated bool
	members     []device.Stream
	// hosts are the host allocations the capture's copies name (hosts.go).
	hosts []*allocation
}

// Device implements device.Device over a driver.
type Device struct {
	codes    Codes
	drv      Driver
	describe string
	platform string
	caps     device.Capabilities
	workers  [2]*device.Worker
	onClose  func() // tells the backend, when set
	// onAbandon tells the backend the device was abandoned (Abandon), when set; onSticky that a
	// call answered a sticky error.
	onAbandon func()
	onSticky  func(*device.Error)
	inj       injection

	// life is held shared while a call is dispatched and exclusively by Close.
	life   sync.RWMutex
	closed bool

	// mu guards what follows; call bodies run under it, on the workers.
	mu sync.Mutex
	// allocs and hosts are device and host memory by address, in address order, so that the
	// allocation holding a range is one floor lookup (holding): asking every allocation made a
	// probe of n buffers check each op's ranges against all n. liveBytes is the bytes of allocs.
	allocs, hosts addrmap.Map[*allocation]
	liveBytes     int64
	streams       map[device.Stream]*stream
	events        map[device.Event]*event
	graphs        map[device.Graph]GraphRef
	// graphHosts are the host allocations each live graph's copies name, and kept the host blocks
	// freed while a live graph named them, by kind and size (hosts.go).
	graphHosts map[device.Graph][]*allocation
	kept       map[hostKey][]*allocation
	captures   []*capture // in progress, in the order they began
	readback   *readback  // Equal's stream and pinned chunks, from its first call
	fps        *fpScratch // Fingerprints' stream and pinned output, from its first call
	lastHandle uint64
	lastID     uint64
	counters   device.Counters
	// lost: the driver answered device-lost; Close then releases the device without asking the
	// driver to destroy each object, which a lost device refuses.
	lost bool
}

var _ device.Device = (*Device)(nil)

// NewDevice starts the two workers and binds the device on each. A failed bind undoes the binds
// that took (aclrtSetDevice holds the device until its aclrtResetDevice) and stops the workers.
func NewDevice(codes Codes, drv Driver, caps device.Capabilities) (*Device, error) {
	d := &Device{
		codes: codes, drv: drv, caps: caps,
		streams:    map[device.Stream]*stream{device.DefaultStream: {}},
		events:     map[device.Event]*event{},
		graphs:     map[device.Graph]GraphRef{},
		graphHosts: map[device.Graph][]*allocation{},
		kept:       map[hostKey][]*allocation{},
	}
	var errs []error
	var bound []device.Thread
	for _, t := range []device.Thread{device.Main, device.Other} {
		var code int
		var detail string
		d.workers[t] = device.StartWorker(func() {
			if code = drv.Bind(t); code != 0 {
				detail = drv.Detail(code)
			}
		})
		if code != 0 {
			errs = append(errs, d.codes.Error("Open", code, fmt.Sprintf("binding the device on the %v thread: %s", t, detail)))
		} else {
			bound = append(bound, t)
		}
	}
	if len(errs) > 0 {
		for _, t := range bound {
			d.workers[t].Do(func() { drv.Unbind(t) }) // the bind's error is the one to report
		}
		for _, w := range d.workers {
			w.Stop()
		}
		return nil, errs[0]
	}
	return d, nil
}

func (d *Device) Backend() string                   { return d.codes.Backend }
func (d *Device) Describe() string                  { return d.describe }
func (d *Device) Platform() string                  { return d.platform }
func (d *Device) Capabilities() device.Capabilities { return d.caps }

// Extensions states what a bound device can do beyond device.Device: fault injection (which
// answers why not on a library without the fakes' entry points), abandoning, sessions on a
// worker thread, comparing in place through pinned chunks, and fingerprints where the driver's
// kernel for them is loaded (fingerprint.go).
func (d *Device) Extensions() device.Extensions {
	e := device.Extensions{Of: d, Faults: d, Abandon: d, Threads: d, Compare: d}
	if d.fingerprinter() != nil {
		e.Fingerprint = d
	}
	return e
}

// Counters are kept in Go: Mallocs, Frees, HostAllocs, HostFrees, Launches and CapturesDone count
// successful calls; the live counts are the handles and allocations the device holds now.
func (d *Device) Counters() device.Counters {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.counters
	c.LiveAllocs = int64(d.allocs.Len())
	c.LiveBytes = d.liveBytes
	c.LiveHostAllocs = int64(d.hosts.Len())
	c.LiveStreams = int64(len(d.streams) - 1)
	c.LiveEvents = int64(len(d.events))
	c.LiveGraphs = int64(len(d.graphs))
	return c
}

// Identify sets what the device says it is once the backend asked the driver (which needs the
// device current, so after NewDevice): its description, platform key and capabilities.
func (d *Device) Identify(describe, platform string, caps device.Capabilities) {
	d.describe, d.platform, d.caps = describe, platform, caps
}

// OnMain runs f on the Main worker's thread, where the device is current.
func (d *Device) OnMain(f func()) { d.workers[device.Main].Do(f) }

// OnClose tells the backend, through f, when the device closes.
func (d *Device) OnClose(f func()) { d.onClose = f }

// KeyPart makes s fit a platform key (device.Device.Platform) and a file name: lower case,
// letters, digits and dots, every other run of characters one "-"; "unknown" when nothing is left.
func KeyPart(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '.' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return "unknown"
	}
	return b.String()
}

// Codes names and classes one platform's status codes.
type Codes struct {
	// Backend is the backend's name, in every error (device.Error.Backend).
	Backend string
	// Lookup names and classes a platform code; it needs no library.
	Lookup func(code int) (name string, class device.Class)
	// Sticky says whether a code poisons the process's context (device.Error.Sticky); nil: none
	// does.
	Sticky func(code int) bool
	// InvalidValue, NotSupported and OutOfMemory are the platform's codes for failures found in
	// Go before a call reaches the driver.
	InvalidValue, NotSupported, OutOfMemory int
}

// Error is the *device.Error of a platform code, named and classed by the table.
func (c Codes) Error(op string, code int, detail string) *device.Error {
	name, class := c.Lookup(code)
	return &device.Error{Backend: c.Backend, Op: op, Code: code, Name: name, Class: class, Detail: detail}
}

// Invalid is a call refused in Go before it reaches the driver (a bad handle, length or range),
// reported with the platform's invalid-value code.
func (c Codes) Invalid(op, format string, args ...any) *device.Error {
	e := c.Error(op, c.InvalidValue, fmt.Sprintf(format, args...))
	e.Class = device.ClassInvalidValue
	return e
}

// Unsupported is a call the backend cannot make, with the platform's not-supported code.
func (c Codes) Unsupported(op, format string, args ...any) *device.Error {
	e := c.Error(op, c.NotSupported, fmt.Sprintf(format, args...))
	e.Class = device.ClassNotSupported
	return e
}

// failed builds the error of a Driver call that returned code, on the worker thread that made it:
// the detail first (ACL keeps its message per thread), then whether the call invalidated a
// capture in progress, by asking the Driver for the status of every capture the device tracks.
// A capture the Driver reports ended (a failed end that tears it down) is dropped.
func (d *Device) failed(op string, code int) error {
	return d.failedWith(op, code, d.drv.Detail(code))
}

// failedWith is failed with the detail given: asked of the Driver already, or the binding's own.
func (d *Device) failedWith(op string, code int, detail string) error {
	e := d.codes.Error(op, code, detail)
	if e.Class == device.ClassDeviceLost {
		d.lost = true
	}
	if d.codes.Sticky != nil && d.codes.Sticky(code) {
		// Every later call fails with it: nothing can be destroyed or freed one by one any more.
		e.Sticky, d.lost = true, true
		if d.onSticky != nil {
			d.onSticky(e)
		}
	}
	for _, c := range slices.Clone(d.captures) {
		st, sc := d.drv.CaptureStatus(d.streams[c.origin].h)
		if sc != 0 {
			continue
		}
		switch st {
		case device.CaptureNone:
			d.endCapture(c)
		case device.CaptureInvalidated:
			if !c.invalidated {
				c.invalidated = true
				e.Invalidated = true
			}
		}
	}
	return e
}

// call runs body on the worker that serves t, under the device lock: handed to the worker's
// thread, or inline when the caller is on it already (inside OnThread's session).
func (d *Device) call(t device.Thread, op string, body func() error) error {
	if err := d.usable(op, t); err != nil {
		return err
	}
	defer d.life.RUnlock()
	var err error
	d.workers[t].Do(func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		err = body()
	})
	return err
}

// usable checks t and that the device is open and not abandoned, and holds life shared for the
// caller, who releases it. TryRLock: the only writer is Close, and a call that meets it answers
// closed, as it would after it; a call inside a session (OnThread) that Close waits for must not
// wait for Close.
func (d *Device) usable(op string, t device.Thread) error {
	if t != device.Main && t != device.Other {
		return d.codes.Invalid(op, "unknown thread %v: the device has threads main and other", t)
	}
	if !d.life.TryRLock() {
		return d.codes.Invalid(op, "the device is closed")
	}
	switch {
	case d.closed:
		d.life.RUnlock()
		return d.codes.Invalid(op, "the device is closed")
	case d.isAbandoned():
		d.life.RUnlock()
		return d.codes.Invalid(op, "the device was abandoned (a call hung)")
	}
	return nil
}

var _ device.ThreadRunner = (*Device)(nil)

// OnThread runs f on the worker that serves t and hands it the device itself (device.ThreadRunner):
// every call f makes for t finds itself on that worker's OS thread, where the driver has the device
// current, and runs there inline: one hand-off for the whole session instead of one per call. Calls
// for the other thread are handed off as usual. life is held for the session as for one call, so
// Close waits for it; f must not Close the device. A call for t from another goroutine while f runs
// is handed to t's worker and waits for f: the driver binds capture modes and contexts to OS
// threads, so it may not run elsewhere. The device is therefore no device.SessionView, and the
// engine runs only its built-in runtime in a session here.
func (d *Device) OnThread(t device.Thread, f func(on device.Device)) error {
	if err := d.usable("OnThread", t); err != nil {
		return err
	}
	defer d.life.RUnlock()
	d.workers[t].Do(func() { f(d) })
	return nil
}

func (d *Device) newHandle() uint64 {
	d.lastHandle++
	return d.lastHandle
}

// holding returns the live allocation of the index that holds all of p: the one at or below p's
// address, since live allocations do not overlap.
func holding(index *addrmap.Map[*allocation], p device.Ptr) *allocation {
	if _, a, ok := index.Floor(p.Addr); ok && a.ptr.Contains(p) {
		return a
	}
	return nil
}

// checkRange verifies that p is a non-empty range inside one live device allocation or, when host
// is true, inside one live device or host allocation.
func (d *Device) checkRange(op, what string, p device.Ptr, host bool) (*allocation, error) {
	if p.Bytes <= 0 {
		return nil, d.codes.Invalid(op, "%s %v is empty", what, p)
	}
	if a := holding(&d.allocs, p); a != nil {
		return a, nil
	}
	if a := holding(&d.hosts, p); a != nil {
		if !host {
			return nil, d.codes.Invalid(op, "%s %v is %v host memory: %s needs device memory", what, p, a.host, op)
		}
		return a, nil
	}
	return nil, d.codes.Invalid(op, "%s %v does not lie inside a live allocation", what, p)
}

func (d *Device) lookupStream(op string, s device.Stream) (*stream, error) {
	if st, ok := d.streams[s]; ok {
		return st, nil
	}
	return nil, d.codes.Invalid(op, "%v does not exist (never created or destroyed)", s)
}

func (d *Device) lookupEvent(op string, e device.Event) (*event, error) {
	if ev, ok := d.events[e]; ok {
		return ev, nil
	}
	return nil, d.codes.Invalid(op, "%v does not exist (never created or destroyed)", e)
}

func (d *Device) lookupGraph(op string, g device.Graph) (GraphRef, error) {
	if gr, ok := d.graphs[g]; ok {
		return gr, nil
	}
	return GraphRef{}, d.codes.Invalid(op, "%v does not exist (never captured or destroyed)", g)
}

// --- Memory ---

func (d *Device) Malloc(t device.Thread, bytes int64) (device.Ptr, error) {
	var p device.Ptr
	err := d.call(t, "Malloc", func() error {
		if bytes <= 0 {
			return d.codes.Invalid("Malloc", "cannot allocate %d bytes: the size must be positive", bytes)
		}
		addr, code := d.drv.Malloc(bytes)
		d.noteFired()
		if code != 0 {
			return d.failed("Malloc", code)
		}
		p = device.Ptr{Addr: addr, Bytes: bytes}
		d.allocs.Put(addr, &allocation{ptr: p})
		d.liveBytes += bytes
		d.counters.Mallocs++
		return nil
	})
	return p, err
}

// liveAt returns the live allocation of m that p is exactly.
func (d *Device) liveAt(op string, m *addrmap.Map[*allocation], p device.Ptr) (*allocation, error) {
	at, a, ok := m.Floor(p.Addr)
	if !ok || at != p.Addr {
		return nil, d.codes.Invalid(op, "%v is not a live allocation (never allocated or already freed)", p)
	}
	if a.ptr != p {
		return nil, d.codes.Invalid(op, "%v does not match the live allocation %v at that address", p, a.ptr)
	}
	return a, nil
}

func (d *Device) Free(t device.Thread, p device.Ptr) error {
	return d.call(t, "Free", func() error {
		if _, err := d.liveAt("Free", &d.allocs, p); err != nil {
			return err
		}
		if code := d.drv.Free(p.Addr); code != 0 {
			return d.failed("Free", code)
		}
		d.allocs.Delete(p.Addr)
		d.liveBytes -= p.Bytes
		d.counters.Frees++
		return nil
	})
}

func (d *Device) Write(t device.Thread, dst device.Ptr, src []byte) error {
	return d.call(t, "Write", func() error {
		if int64(len(src)) != dst.Bytes {
			return d.codes.Invalid("Write", "%d host bytes for destination %v: the lengths must match", len(src), dst)
		}
		if _, err := d.checkRange("Write", "destination", dst, false); err != nil {
			return err
		}
		if code := d.drv.Write(dst.Addr, src); code != 0 {
			return d.failed("Write", code)
		}
		return nil
	})
}

func (d *Device) Read(t device.Thread, dst []byte, src device.Ptr) error {
	return d.call(t, "Read", func() error {
		if int64(len(dst)) != src.Bytes {
			return d.codes.Invalid("Read", "%d host bytes for source %v: the lengths must match", len(dst), src)
		}
		if _, err := d.checkRange("Read", "source", src, false); err != nil {
			return err
		}
		if code := d.drv.Read(dst, src.Addr); code != 0 {
			return d.failed("Read", code)
		}
		return nil
	})
}

// AllocHost allocates pinned memory through the Driver and pageable memory with the C library's
// malloc (the program's own memory: no Driver call). Either is C memory, so async copies may keep
// using it after the call that named it returns.
func (d *Device) AllocHost(t device.Thread, bytes int64, kind device.HostMemory) (device.Ptr, error) {
	var p device.Ptr
	err := d.call(t, "AllocHost", func() error {
		if !slices.Contains(device.HostMemories(), kind) {
			return d.codes.Invalid("AllocHost", "unknown %v", kind)
		}
		if bytes <= 0 {
			return d.codes.Invalid("AllocHost", "cannot allocate %d bytes: the size must be positive", bytes)
		}
		if a, ok := d.reuse(kind, bytes); ok {
			p = a.ptr
			d.counters.HostAllocs++
			return nil
		}
		var base unsafe.Pointer
		if kind == device.Pinned {
			var code int
			if base, code = d.drv.MallocHost(bytes); code != 0 {
				return d.failed("AllocHost", code)
			}
		} else if base = d.drv.HostMalloc(bytes); base == nil {
			e := d.codes.Error("AllocHost", d.codes.OutOfMemory, fmt.Sprintf("malloc of %d bytes failed", bytes))
			e.Class = device.ClassOutOfMemory
			return e
		}
		p = device.Ptr{Addr: uint64(uintptr(base)), Bytes: bytes}
		d.hosts.Put(p.Addr, &allocation{ptr: p, host: kind, base: base})
		d.counters.HostAllocs++
		return nil
	})
	return p, err
}

func (d *Device) FreeHost(t device.Thread, p device.Ptr) error {
	return d.call(t, "FreeHost", func() error {
		a, err := d.liveAt("FreeHost", &d.hosts, p)
		if err != nil {
			return err
		}
		if a.named() {
			if a.host == device.Pinned && len(d.captures) > 0 {
				if err := d.judgePinned("FreeHost"); err != nil {
					return err // refused as cuMemFreeHost would be: the block stays allocated
				}
			}
			d.keep(a)
			d.counters.HostFrees++
			return nil
		}
		if code := d.giveBack(a); code != 0 {
			return d.failed("FreeHost", code)
		}
		d.hosts.Delete(p.Addr)
		d.counters.HostFrees++
		return nil
	})
}

// hostBytes returns the C memory of p, which must lie in one live host allocation and be n long.
func (d *Device) hostBytes(op string, p device.Ptr, n int) ([]byte, error) {
	if int64(n) != p.Bytes {
		return nil, d.codes.Invalid(op, "%d bytes for host range %v: the lengths must match", n, p)
	}
	a := holding(&d.hosts, p)
	if a == nil || p.Bytes <= 0 {
		return nil, d.codes.Invalid(op, "%v does not lie inside a live host allocation", p)
	}
	return unsafe.Slice((*byte)(unsafe.Add(a.base, p.Addr-a.ptr.Addr)), n), nil
}

// HostWrite is a CPU store: no Driver call, no worker.
func (d *Device) HostWrite(dst device.Ptr, src []byte) error {
	return d.hostAccess("HostWrite", func() error {
		b, err := d.hostBytes("HostWrite", dst, len(src))
		if err == nil {
			copy(b, src)
		}
		return err
	})
}

// HostRead is a CPU load: no Driver call, no worker.
func (d *Device) HostRead(dst []byte, src device.Ptr) error {
	return d.hostAccess("HostRead", func() error {
		b, err := d.hostBytes("HostRead", src, len(dst))
		if err == nil {
			copy(dst, b)
		}
		return err
	})
}

func (d *Device) hostAccess(op string, body func() error) error {
	// TryRLock: see usable (a host access inside a session that Close waits for).
	if !d.life.TryRLock() {
		return d.codes.Invalid(op, "the device is closed")
	}
	defer d.life.RUnlock()
	if d.closed {
		return d.codes.Invalid(op, "the device is closed")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return body()
}

// --- Streams and events ---

func (d *Device) CreateStream(t device.Thread, f device.StreamFlags) (device.Stream, error) {
	var s device.Stream
	err := d.call(t, "CreateStream", func() error {
		if f&^device.NonBlocking != 0 {
			return d.codes.Invalid("CreateStream", "unknown stream flags %#x", uint32(f))
		}
		h, code := d.drv.CreateStream(f&device.NonBlocking != 0)
		if code != 0 {
			return d.failed("CreateStream", code)
		}
		s = device.Stream(d.newHandle())
		d.streams[s] = &stream{h: h}
		return nil
	})
	return s, err
}

// DestroyStream destroys s. A stream that belongs to a capture leaves it in the bookkeeping; the
// Driver decides what becomes of the capture.
func (d *Device) DestroyStream(t device.Thread, s device.Stream) error {
	return d.call(t, "DestroyStream", func() error {
		if s == device.DefaultStream {
			return d.codes.Invalid("DestroyStream", "the default stream is never destroyed")
		}
		st, err := d.lookupStream("DestroyStream", s)
		if err != nil {
			return err
		}
		if code := d.drv.DestroyStream(st.h); code != 0 {
			return d.failed("DestroyStream", code)
		}
		if c := st.capture; c != nil {
			if c.origin == s {
				d.endCapture(c)
			} else {
				c.members = slices.DeleteFunc(c.members, func(m device.Stream) bool { return m == s })
			}
		}
		delete(d.streams, s)
		return nil
	})
}

func (d *Device) CreateEvent(t device.Thread) (device.Event, error) {
	var e device.Event
	err := d.call(t, "CreateEvent", func() error {
		h, code := d.drv.CreateEvent()
		if code != 0 {
			return d.failed("CreateEvent", code)
		}
		e = device.Event(d.newHandle())
		d.events[e] = &event{h: h}
		return nil
	})
	return e, err
}

func (d *Device) DestroyEvent(t device.Thread, e device.Event) error {
	return d.call(t, "DestroyEvent", func() error {
		ev, err := d.lookupEvent("DestroyEvent", e)
		if err != nil {
			return err
		}
		if code := d.drv.DestroyEvent(ev.h); code != 0 {
			return d.failed("DestroyEvent", code)
		}
		delete(d.events, e)
		return nil
	})
}

func (d *Device) Fill(t device.Thread, s device.Stream, dst device.Ptr, value byte) error {
	return d.call(t, "Fill", func() error {
		st, err := d.lookupStream("Fill", s)
		if err != nil {
			return err
		}
		if _, err := d.checkRange("Fill", "destination", dst, false); err != nil {
			return err
		}
		if code := d.drv.Memset(st.h, dst.Addr, value, dst.Bytes); code != 0 {
			return d.failed("Fill", code)
		}
		return nil
	})
}

func (d *Device) Copy(t device.Thread, s device.Stream, dst, src device.Ptr) error {
	return d.call(t, "Copy", func() error {
		st, err := d.lookupStream("Copy", s)
		if err != nil {
			return err
		}
		da, err := d.checkRange("Copy", "destination", dst, true)
		if err != nil {
			return err
		}
		sa, err := d.checkRange("Copy", "source", src, true)
		if err != nil {
			return err
		}
		kind := CopyD2D
		switch {
		case da.host != 0 && sa.host != 0:
			return d.codes.Invalid("Copy", "destination %v and source %v are both host memory: a copy between host buffers is the CPU's, not a stream's", dst, src)
		case da.host != 0:
			kind = CopyD2H
		case sa.host != 0:
			kind = CopyH2D
		}
		if code := d.drv.Memcpy(st.h, kind, dst.Addr, src.Addr, min(dst.Bytes, src.Bytes)); code != 0 {
			return d.failed("Copy", code)
		}
		if st.capture != nil {
			st.capture.nameHosts(da, sa)
		}
		return nil
	})
}

func (d *Device) Axpy(t device.Thread, s device.Stream, y, x device.Ptr, a uint32) error {
	return d.call(t, "Axpy", func() error {
		st, err := d.lookupStream("Axpy", s)
		if err != nil {
			return err
		}
		if ok, why := d.drv.Kernels(); !ok {
			return d.codes.Unsupported("Axpy", "%s", why)
		}
		if x.Bytes != y.Bytes || y.Bytes%4 != 0 {
			return d.codes.Invalid("Axpy", "y %v and x %v must have the same size, a multiple of 4 bytes", y, x)
		}
		if _, err := d.checkRange("Axpy", "y", y, false); err != nil {
			return err
		}
		if _, err := d.checkRange("Axpy", "x", x, false); err != nil {
			return err
		}
		if code := d.drv.Axpy(st.h, y.Addr, x.Addr, a, y.Bytes/4); code != 0 {
			return d.failed("Axpy", code)
		}
		return nil
	})
}

// Record marks e with the work on s so far; on a capturing stream the record joins the capture,
// and a later Wait on e forks the waiting stream into it.
func (d *Device) Record(t device.Thread, e device.Event, s device.Stream) error {
	return d.call(t, "Record", func() error {
		st, err := d.lookupStream("Record", s)
		if err != nil {
			return err
		}
		ev, err := d.lookupEvent("Record", e)
		if err != nil {
			return err
		}
		if code := d.drv.Record(ev.h, st.h); code != 0 {
			return d.failed("Record", code)
		}
		ev.capture = st.capture
		return nil
	})
}

func (d *Device) Wait(t device.Thread, s device.Stream, e device.Event) error {
	return d.call(t, "Wait", func() error {
		st, err := d.lookupStream("Wait", s)
		if err != nil {
			return err
		}
		ev, err := d.lookupEvent("Wait", e)
		if err != nil {
			return err
		}
		if code := d.drv.Wait(st.h, ev.h); code != 0 {
			return d.failed("Wait", code)
		}
		if c := ev.capture; c != nil && st.capture == nil {
			st.capture = c
			c.members = append(c.members, s)
		}
		return nil
	})
}

func (d *Device) SyncStream(t device.Thread, s device.Stream) error {
	return d.call(t, "SyncStream", func() error {
		st, err := d.lookupStream("SyncStream", s)
		if err != nil {
			return err
		}
		if code := d.drv.SyncStream(st.h); code != 0 {
			return d.failed("SyncStream", code)
		}
		return nil
	})
}

func (d *Device) SyncDevice(t device.Thread) error {
	return d.call(t, "SyncDevice", func() error {
		if code := d.drv.SyncDevice(); code != 0 {
			return d.failed("SyncDevice", code)
		}
		return nil
	})
}

func (d *Device) QueryEvent(t device.Thread, e device.Event) (bool, error) {
	var done bool
	err := d.call(t, "QueryEvent", func() error {
		ev, err := d.lookupEvent("QueryEvent", e)
		if err != nil {
			return err
		}
		var code int
		if done, code = d.drv.QueryEvent(ev.h); code != 0 {
			return d.failed("QueryEvent", code)
		}
		return nil
	})
	return done, err
}

func (d *Device) SyncEvent(t device.Thread, e device.Event) error {
	return d.call(t, "SyncEvent", func() error {
		ev, err := d.lookupEvent("SyncEvent", e)
		if err != nil {
			return err
		}
		if code := d.drv.SyncEvent(ev.h); code != 0 {
			return d.failed("SyncEvent", code)
		}
		return nil
	})
}

// --- Capture ---

func (d *Device) ExchangeCaptureMode(t device.Thread, mode device.CaptureMode) (device.CaptureMode, error) {
	var old device.CaptureMode
	err := d.call(t, "ExchangeCaptureMode", func() error {
		if !slices.Contains(device.CaptureModes(), mode) {
			return d.codes.Invalid("ExchangeCaptureMode", "unknown capture mode %v", mode)
		}
		var code int
		if old, code = d.drv.ExchangeMode(mode); code != 0 {
			return d.failed("ExchangeCaptureMode", code)
		}
		return nil
	})
	return old, err
}

func (d *Device) BeginCapture(t device.Thread, s device.Stream, mode device.CaptureMode) error {
	return d.call(t, "BeginCapture", func() error {
		if !slices.Contains(device.CaptureModes(), mode) {
			return d.codes.Invalid("BeginCapture", "unknown capture mode %v", mode)
		}
		st, err := d.lookupStream("BeginCapture", s)
		if err != nil {
			return err
		}
		if code := d.drv.BeginCapture(st.h, mode); code != 0 {
			return d.failed("BeginCapture", code)
		}
		if st.capture != nil {
			d.endCapture(st.capture)
		}
		d.lastID++
		c := &capture{id: d.lastID, origin: s, mode: mode, thread: t, members: []device.Stream{s}}
		st.capture = c
		d.captures = append(d.captures, c)
		return nil
	})
}

// endCapture drops c from the bookkeeping: its streams and events are outside every capture.
func (d *Device) endCapture(c *capture) {
	for _, s := range c.members {
		if st := d.streams[s]; st != nil && st.capture == c {
			st.capture = nil
		}
	}
	for _, ev := range d.events {
		if ev.capture == c {
			ev.capture = nil
		}
	}
	d.captures = slices.DeleteFunc(d.captures, func(x *capture) bool { return x == c })
	c.unnameHosts()
}

func (d *Device) EndCapture(t device.Thread, s device.Stream) (device.Graph, error) {
	var g device.Graph
	err := d.call(t, "EndCapture", func() error {
		st, err := d.lookupStream("EndCapture", s)
		if err != nil {
			return err
		}
		ref, code := d.drv.EndCapture(st.h)
		if code != 0 {
			return d.failed("EndCapture", code)
		}
		g = device.Graph(d.newHandle())
		d.graphs[g] = ref
		if c := st.capture; c != nil {
			d.graphNames(g, c)
			d.endCapture(c)
		}
		d.counters.CapturesDone++
		return nil
	})
	return g, err
}

// CaptureInfo asks the Driver for the stream's status and completes it from the bookkeeping. A
// stream the Driver reports in no capture leaves the capture it was tracked in.
func (d *Device) CaptureInfo(t device.Thread, s device.Stream) (device.CaptureInfo, error) {
	var info device.CaptureInfo
	err := d.call(t, "CaptureInfo", func() error {
		st, err := d.lookupStream("CaptureInfo", s)
		if err != nil {
			return err
		}
		status, code := d.drv.CaptureStatus(st.h)
		if code != 0 {
			return d.failed("CaptureInfo", code)
		}
		c := st.capture
		if status == device.CaptureNone {
			if c != nil {
				if c.origin == s {
					d.endCapture(c)
				} else {
					st.capture = nil
					c.members = slices.DeleteFunc(c.members, func(m device.Stream) bool { return m == s })
				}
			}
			return nil
		}
		info.Status = status
		if c != nil {
			c.invalidated = c.invalidated || status == device.CaptureInvalidated
			info.ID, info.Origin, info.Mode = c.id, c.origin, c.mode
		}
		return nil
	})
	return info, err
}

func (d *Device) Launch(t device.Thread, g device.Graph, s device.Stream) error {
	return d.call(t, "Launch", func() error {
		ref, err := d.lookupGraph("Launch", g)
		if err != nil {
			return err
		}
		st, err := d.lookupStream("Launch", s)
		if err != nil {
			return err
		}
		code := d.drv.Launch(ref, st.h)
		d.noteFired()
		if code != 0 {
			return d.failed("Launch", code)
		}
		d.counters.Launches++
		return nil
	})
}

func (d *Device) DestroyGraph(t device.Thread, g device.Graph) error {
	return d.call(t, "DestroyGraph", func() error {
		ref, err := d.lookupGraph("DestroyGraph", g)
		if err != nil {
			return err
		}
		if code := d.drv.DestroyGraph(ref); code != 0 {
			return d.failed("DestroyGraph", code)
		}
		delete(d.graphs, g)
		d.graphGone(g)
		return nil
	})
}

// GraphNodes lists g's nodes through the Driver's GraphLister, on a device whose capabilities
// say GraphIntrospection; anywhere else it fails not-supported, saying why.
func (d *Device) GraphNodes(t device.Thread, g device.Graph) ([]device.GraphNode, error) {
	var nodes []device.GraphNode
	err := d.call(t, "GraphNodes", func() error {
		ref, err := d.lookupGraph("GraphNodes", g)
		if err != nil {
			return err
		}
		lister, ok := d.drv.(GraphLister)
		if !ok {
			return d.codes.Unsupported("GraphNodes", "the %s binding does not introspect graphs", d.codes.Backend)
		}
		if !d.caps.GraphIntrospection {
			why := "the device has no graph-introspection capability"
			if can, reason := lister.Introspects(); !can && reason != "" {
				why = reason
			}
			return d.codes.Unsupported("GraphNodes", "%s", why)
		}
		list, code, detail := lister.GraphNodes(ref)
		if code != 0 {
			if detail == "" {
				detail = d.drv.Detail(code)
			}
			return d.failedWith("GraphNodes", code, detail)
		}
		nodes = list
		return nil
	})
	if err != nil {
		return nil, err
	}
	return nodes, nil
}

// Close ends the captures in progress (from the thread that began each), destroys every graph,
// event and stream, frees all memory, unbinds the device from both workers and stops them. Calls
// afterwards fail with invalid-value; Close again is a no-op. Every failure is reported, joined.
// A lost device (one that answered device-lost) is only released: the driver's reset frees what it
// held. An abandoned device (Abandon) is left as it is: Close returns at once.
func (d *Device) Close() error {
	if d.isAbandoned() {
		return nil
	}
	d.life.Lock()
	defer d.life.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	if d.onClose != nil {
		defer d.onClose()
	}
	var errs []error
	note := func(op string, code int) {
		if code != 0 {
			errs = append(errs, d.codes.Error("Close", code, op+": "+d.drv.Detail(code)))
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range slices.Clone(d.captures) {
		if d.lost {
			d.endCapture(c)
			continue
		}
		d.workers[c.thread].Do(func() {
			if ref, code := d.drv.EndCapture(d.streams[c.origin].h); code == 0 {
				note("destroying the graph of a capture in progress", d.drv.DestroyGraph(ref))
			}
		})
		d.endCapture(c)
	}
	d.workers[device.Main].Do(func() {
		if d.lost {
			// A lost device refuses every call; releasing it (unbind) is the reset that frees
			// what it held. Pageable host memory is the program's own.
			d.releaseHosts(note)
			return
		}
		d.releaseReadback(note)
		d.releaseFingerprints(note)
		for g, ref := range d.graphs {
			note("destroying "+g.String(), d.drv.DestroyGraph(ref))
		}
		for e, ev := range d.events {
			note("destroying "+e.String(), d.drv.DestroyEvent(ev.h))
		}
		for s, st := range d.streams {
			if s != device.DefaultStream {
				note("destroying "+s.String(), d.drv.DestroyStream(st.h))
			}
		}
		for _, a := range d.allocs.All() {
			note("freeing "+a.ptr.String(), d.drv.Free(a.ptr.Addr))
		}
		d.releaseHosts(note)
	})
	d.readback = nil
	clear(d.graphs)
	clear(d.graphHosts)
	clear(d.events)
	d.allocs, d.hosts, d.liveBytes = addrmap.Map[*allocation]{}, addrmap.Map[*allocation]{}, 0
	d.streams = map[device.Stream]*stream{device.DefaultStream: {}}
	for _, t := range []device.Thread{device.Other, device.Main} {
		d.workers[t].Do(func() { note("unbinding the "+t.String()+" thread", d.drv.Unbind(t)) })
		d.workers[t].Stop()
	}
	return errors.Join(errs...)
}
