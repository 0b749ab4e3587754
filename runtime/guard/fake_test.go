package guard_test

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/replaycheck/replaycheck/device"
)

// fake is a small in-memory device.Device for the guard's unit specs. It has what the hazards need
// and nothing more: a caching allocator that reuses a freed block of the same rounded size LIFO (so
// free + malloc of one size returns the old address), capture that records ops on the origin stream
// and on streams forked into it through an event recorded inside it, eager execution of work on
// other streams, and replay against the captured addresses. It counts allocator calls, including
// failed ones, and can fail the n-th next Malloc.
type fake struct {
	mu       sync.Mutex
	bump     uint64
	mem      []byte // backing for [fakeBase, bump)
	cache    map[int64][]uint64
	live     map[uint64]int64 // address -> requested bytes
	rounded  map[uint64]int64
	streams  map[device.Stream]uint64 // stream -> capture ID (0: not capturing)
	events   map[device.Event]uint64  // event -> capture it was last recorded in
	captures map[uint64]*fakeCapture
	graphs   map[device.Graph][]func()
	handle   uint64
	counters device.Counters
	// mallocCalls counts every Malloc that reached the allocator, failed ones included.
	mallocCalls int
	failIn      int
	// blindInfo makes CaptureInfo fail, as a platform that cannot answer would.
	blindInfo bool
	// infoCalls counts the CaptureInfo calls.
	infoCalls int
}

type fakeCapture struct {
	origin device.Stream
	mode   device.CaptureMode
	nodes  []func()
}

const (
	fakeBase  = 0x1000_0000
	fakeGrain = 512
)

func newFake() *fake {
	return &fake{
		bump: fakeBase, cache: map[int64][]uint64{}, live: map[uint64]int64{}, rounded: map[uint64]int64{},
		streams: map[device.Stream]uint64{}, events: map[device.Event]uint64{},
		captures: map[uint64]*fakeCapture{}, graphs: map[device.Graph][]func(){},
	}
}

var _ device.Device = (*fake)(nil)

func fakeErr(op string, class device.Class, format string, args ...any) error {
	return &device.Error{Backend: "fake", Op: op, Class: class, Detail: fmt.Sprintf(format, args...)}
}

// FailMalloc makes the n-th next Malloc fail with out-of-memory.
func (f *fake) FailMalloc(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failIn = n
}

// Blind makes CaptureInfo fail (or answer again).
func (f *fake) Blind(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blindInfo = on
}

// InfoCalls counts the CaptureInfo calls.
func (f *fake) InfoCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.infoCalls
}

// MallocCalls counts the Malloc calls that reached the allocator, failed ones included.
func (f *fake) MallocCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mallocCalls
}

func (f *fake) Backend() string  { return "fake" }
func (f *fake) Describe() string { return "fake device" }
func (f *fake) Platform() string { return "fake" }
func (f *fake) Capabilities() device.Capabilities {
	return device.Capabilities{Kernels: true, FaultInjection: true}
}
func (f *fake) Close() error { return nil }

// Extensions: the fake is a plain device.
func (f *fake) Extensions() device.Extensions { return device.Extensions{Of: f} }

func (f *fake) Counters() device.Counters {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.counters
	c.LiveAllocs = int64(len(f.live))
	for _, n := range f.live {
		c.LiveBytes += n
	}
	c.LiveStreams = int64(len(f.streams))
	c.LiveEvents = int64(len(f.events))
	c.LiveGraphs = int64(len(f.graphs))
	return c
}

func (f *fake) Malloc(_ device.Thread, bytes int64) (device.Ptr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if bytes <= 0 {
		return device.Ptr{}, fakeErr("Malloc", device.ClassInvalidValue, "size %d", bytes)
	}
	f.mallocCalls++
	if f.failIn > 0 {
		f.failIn--
		if f.failIn == 0 {
			return device.Ptr{}, fakeErr("Malloc", device.ClassOutOfMemory, "injected failure")
		}
	}
	size := (bytes + fakeGrain - 1) / fakeGrain * fakeGrain
	var addr uint64
	if list := f.cache[size]; len(list) > 0 {
		addr = list[len(list)-1]
		f.cache[size] = list[:len(list)-1]
	} else {
		addr = f.bump
		f.bump += uint64(size)
		f.mem = append(f.mem, make([]byte, size)...)
	}
	f.live[addr] = bytes
	f.rounded[addr] = size
	f.counters.Mallocs++
	return device.Ptr{Addr: addr, Bytes: bytes}, nil
}

func (f *fake) Free(_ device.Thread, p device.Ptr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.live[p.Addr]; !ok {
		return fakeErr("Free", device.ClassInvalidValue, "%v is not live", p)
	}
	size := f.rounded[p.Addr]
	delete(f.live, p.Addr)
	delete(f.rounded, p.Addr)
	f.cache[size] = append(f.cache[size], p.Addr)
	f.counters.Frees++
	return nil
}

// bytesAt returns the backing bytes of p; freed memory stays addressable, as in a caching
// allocator.
func (f *fake) bytesAt(op string, p device.Ptr) ([]byte, error) {
	if p.Addr < fakeBase || p.End() > f.bump || p.Bytes < 0 {
		return nil, fakeErr(op, device.ClassInvalidValue, "%v is outside device memory", p)
	}
	off := p.Addr - fakeBase
	return f.mem[off : off+uint64(p.Bytes)], nil
}

func (f *fake) Write(_ device.Thread, dst device.Ptr, src []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.bytesAt("Write", dst)
	if err != nil {
		return err
	}
	copy(b, src)
	return nil
}

func (f *fake) Read(_ device.Thread, dst []byte, src device.Ptr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.bytesAt("Read", src)
	if err != nil {
		return err
	}
	copy(dst, b)
	return nil
}

func (f *fake) CreateStream(device.Thread, device.StreamFlags) (device.Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handle++
	s := device.Stream(f.handle)
	f.streams[s] = 0
	return s, nil
}

func (f *fake) DestroyStream(_ device.Thread, s device.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.streams, s)
	return nil
}

func (f *fake) CreateEvent(device.Thread) (device.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handle++
	e := device.Event(f.handle)
	f.events[e] = 0
	return e, nil
}

func (f *fake) DestroyEvent(_ device.Thread, e device.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.events, e)
	return nil
}

// enqueue runs op now, or appends it to the capture s belongs to. Ops resolve their addresses when
// they run: the backing slice moves as the device grows.
func (f *fake) enqueue(op string, s device.Stream, run func()) error {
	id, ok := f.streams[s]
	if !ok {
		return fakeErr(op, device.ClassInvalidValue, "%v does not exist", s)
	}
	if id != 0 {
		c := f.captures[id]
		c.nodes = append(c.nodes, run)
		return nil
	}
	run()
	return nil
}

func (f *fake) Fill(_ device.Thread, s device.Stream, dst device.Ptr, value byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.bytesAt("Fill", dst); err != nil {
		return err
	}
	return f.enqueue("Fill", s, func() {
		b, _ := f.bytesAt("Fill", dst)
		for i := range b {
			b[i] = value
		}
	})
}

func (f *fake) Copy(_ device.Thread, s device.Stream, dst, src device.Ptr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := min(dst.Bytes, src.Bytes)
	dst, src = dst.Slice(0, n), src.Slice(0, n)
	for _, p := range []device.Ptr{dst, src} {
		if _, err := f.bytesAt("Copy", p); err != nil {
			return err
		}
	}
	return f.enqueue("Copy", s, func() {
		d, _ := f.bytesAt("Copy", dst)
		r, _ := f.bytesAt("Copy", src)
		copy(d, r)
	})
}

func (f *fake) Axpy(_ device.Thread, s device.Stream, y, x device.Ptr, a uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if y.Bytes != x.Bytes || y.Bytes%4 != 0 {
		return fakeErr("Axpy", device.ClassInvalidValue, "sizes %d and %d", y.Bytes, x.Bytes)
	}
	for _, p := range []device.Ptr{y, x} {
		if _, err := f.bytesAt("Axpy", p); err != nil {
			return err
		}
	}
	return f.enqueue("Axpy", s, func() {
		yb, _ := f.bytesAt("Axpy", y)
		xb, _ := f.bytesAt("Axpy", x)
		for i := 0; i < len(yb); i += 4 {
			binary.LittleEndian.PutUint32(yb[i:], a*binary.LittleEndian.Uint32(xb[i:])+binary.LittleEndian.Uint32(yb[i:]))
		}
	})
}

func (f *fake) Record(_ device.Thread, e device.Event, s device.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.streams[s]
	if !ok {
		return fakeErr("Record", device.ClassInvalidValue, "%v does not exist", s)
	}
	f.events[e] = id
	return nil
}

// Wait forks s into the capture e was recorded in.
func (f *fake) Wait(_ device.Thread, s device.Stream, e device.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.streams[s]
	if !ok {
		return fakeErr("Wait", device.ClassInvalidValue, "%v does not exist", s)
	}
	if ev := f.events[e]; ev != 0 && id == 0 {
		f.streams[s] = ev
	}
	return nil
}

func (f *fake) SyncStream(device.Thread, device.Stream) error        { return nil }
func (f *fake) SyncDevice(device.Thread) error                       { return nil }
func (f *fake) QueryEvent(device.Thread, device.Event) (bool, error) { return true, nil }
func (f *fake) SyncEvent(device.Thread, device.Event) error          { return nil }

func (f *fake) BeginCapture(_ device.Thread, s device.Stream, mode device.CaptureMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id, ok := f.streams[s]; !ok || id != 0 {
		return fakeErr("BeginCapture", device.ClassCaptureConflict, "%v is capturing or does not exist", s)
	}
	f.handle++
	f.captures[f.handle] = &fakeCapture{origin: s, mode: mode}
	f.streams[s] = f.handle
	return nil
}

func (f *fake) EndCapture(_ device.Thread, s device.Stream) (device.Graph, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.streams[s]
	if id == 0 {
		return 0, fakeErr("EndCapture", device.ClassCaptureNotCapturing, "%v is not capturing", s)
	}
	c := f.captures[id]
	if c.origin != s {
		// As on both platforms: the capture goes on.
		return 0, fakeErr("EndCapture", device.ClassCaptureUnmatched, "%v is not the origin", s)
	}
	for st, sid := range f.streams {
		if sid == id {
			f.streams[st] = 0
		}
	}
	delete(f.captures, id)
	f.handle++
	g := device.Graph(f.handle)
	f.graphs[g] = c.nodes
	f.counters.CapturesDone++
	return g, nil
}

func (f *fake) CaptureInfo(_ device.Thread, s device.Stream) (device.CaptureInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.infoCalls++
	id, ok := f.streams[s]
	if !ok || f.blindInfo {
		return device.CaptureInfo{}, fakeErr("CaptureInfo", device.ClassInvalidValue, "%v does not exist or cannot be asked", s)
	}
	if id == 0 {
		return device.CaptureInfo{}, nil
	}
	c := f.captures[id]
	return device.CaptureInfo{Status: device.CaptureActive, ID: id, Origin: c.origin, Mode: c.mode}, nil
}

// Launch replays g's nodes against the addresses they captured, whatever those hold now.
func (f *fake) Launch(_ device.Thread, g device.Graph, _ device.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	nodes, ok := f.graphs[g]
	if !ok {
		return fakeErr("Launch", device.ClassInvalidValue, "%v does not exist", g)
	}
	for _, run := range nodes {
		run()
	}
	f.counters.Launches++
	return nil
}

func (f *fake) DestroyGraph(_ device.Thread, g device.Graph) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.graphs, g)
	return nil
}

func (f *fake) GraphNodes(device.Thread, device.Graph) ([]device.GraphNode, error) {
	return nil, fakeErr("GraphNodes", device.ClassNotSupported, "no introspection")
}

// The guard's host-memory and thread-mode paths are plain pass-through plus ledger entries; their
// specs run on the simulator (sim_test.go), so the fake does not model host memory.
func (f *fake) AllocHost(device.Thread, int64, device.HostMemory) (device.Ptr, error) {
	return device.Ptr{}, fakeErr("AllocHost", device.ClassNotSupported, "the fake has no host memory")
}
func (f *fake) FreeHost(device.Thread, device.Ptr) error {
	return fakeErr("FreeHost", device.ClassNotSupported, "the fake has no host memory")
}
func (f *fake) HostWrite(device.Ptr, []byte) error {
	return fakeErr("HostWrite", device.ClassNotSupported, "the fake has no host memory")
}
func (f *fake) HostRead([]byte, device.Ptr) error {
	return fakeErr("HostRead", device.ClassNotSupported, "the fake has no host memory")
}
func (f *fake) ExchangeCaptureMode(device.Thread, device.CaptureMode) (device.CaptureMode, error) {
	return device.Global, nil
}
