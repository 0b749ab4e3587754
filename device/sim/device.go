package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/bytesize"
)

// Device is one simulated device. It implements device.Device, device.FaultInjector,
// device.Abandoner, device.Comparer and device.ThreadRunner; the methods beyond those
// (ResidentBytes, FailMalloc) serve tests. A Device is the device itself, or the view of it that
// OnThread hands its session: both share the device's state (core).
type Device struct {
	*core
	// session is set on a view OnThread hands its session: while the session lasts, the view's
	// calls for the session's thread run inline with no check of the OS thread (a gettid per call),
	// since only the session, on that thread, may use it.
	session *session
}

// session is one OnThread session.
type session struct {
	t    device.Thread
	live atomic.Bool // until f returns
}

// core is a device's state.
type core struct {
	index   int
	size    int64
	profile *Profile
	// rulesFor lists, by call, the indexes of the profile's rules that name it, in profile order:
	// enforce looks at those only (the profile does not change under a device).
	rulesFor map[string][]int
	main     *device.Worker
	other    *device.Worker

	// life is held shared by every call while it is dispatched and exclusively by Close, so a call
	// never reaches a stopped worker.
	life   sync.RWMutex
	closed atomic.Bool // set under life

	// mu guards everything below; bodies run on the workers under it.
	mu       sync.Mutex
	mem      *memory
	streams  map[device.Stream]*stream
	events   map[device.Event]*event
	graphs   map[device.Graph]*graph
	spares   spareBlocks // the work blocks of destroyed graphs, for the next captures (maxSpares)
	captures []*capture  // in progress (active or invalidated), in the order they began
	// handles are never reused, so a destroyed handle stays invalid.
	lastHandle  uint64
	lastCapture uint64
	counters    device.Counters
	failMalloc  int
	rng         *rand.Rand // nil: replay in capture order
	hook        func(op string, t device.Thread)
	// lastOp and lastRules are the last call enforce looked up in rulesFor and its rules: a
	// capture of 100,000 fills asks 100,000 times in a row for the same call's.
	lastOp    string
	lastRules []int
	// threadModes are the capture interaction modes of the device's threads (ExchangeCaptureMode).
	threadModes [2]device.CaptureMode
	// pending is graph work launched and not run yet, one entry per stream in launch order: launches
	// on different streams run concurrently, interleaved when the device next has to settle them.
	pending []*pendingWork

	// faultMu guards faults (faults.go); it is taken after mu, never before.
	faultMu sync.Mutex
	faults  faults
	// never is never closed: a hung call waits on it.
	never chan struct{}
	// knobs are the device's internal switches (compare.go), set by tests only; guarded by mu.
	knobs knobs
	// fingerprints: Extensions states Fingerprint (Options.Fingerprints; fingerprint.go).
	fingerprints bool
}

var _ device.Device = (*Device)(nil)

func newDevice(index int, opts Options, p *Profile) *Device {
	d := &Device{core: &core{
		index:   index,
		size:    opts.Memory,
		profile: p,
		mem:     newMemory(index, opts.Memory),
		streams: map[device.Stream]*stream{device.DefaultStream: {id: device.DefaultStream}},
		events:  map[device.Event]*event{},
		graphs:  map[device.Graph]*graph{},
		spares:  spareBlocks{max: maxSpares},
		never:   make(chan struct{}),

		fingerprints: opts.Fingerprints,
	}}
	d.rulesFor = map[string][]int{}
	for i, r := range p.Rules {
		for _, c := range r.Calls {
			if !slices.Contains(d.rulesFor[c], i) {
				d.rulesFor[c] = append(d.rulesFor[c], i)
			}
		}
	}
	if opts.Seed != 0 {
		// The device index is part of the stream so that devices of one backend shuffle differently.
		d.rng = rand.New(rand.NewPCG(opts.Seed, uint64(index)))
	}
	d.main = device.StartWorker(nil)
	d.other = device.StartWorker(nil)
	return d
}

func (d *Device) Backend() string { return "sim" }

// Describe names the device, its profile and its memory, e.g.
// "sim device 0 (profile cann: Ascend ACL, CANN 9.0 a2a3 rules; 16GiB)".
func (d *Device) Describe() string {
	return fmt.Sprintf("sim device %d (profile %s: %s; %s)", d.index, d.profile.Name, d.profile.Description, bytesize.Format(d.size))
}

// Platform is "sim/" and the profile's name.
func (d *Device) Platform() string { return "sim/" + d.profile.Name }

func (d *Device) Capabilities() device.Capabilities {
	return device.Capabilities{Kernels: true, GraphIntrospection: true, ThreadRules: true, FaultInjection: true, NonBlockingStreams: true}
}

// Counters reports the allocator and live-object counters. Mallocs, Frees, Launches and
// CapturesDone count successful calls over the device's life; the live counts are what exists now
// (all zero after Close). LiveBytes sums the sizes callers asked for, not the rounded blocks.
func (d *Device) Counters() device.Counters {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.counters
	c.LiveAllocs = int64(d.mem.device.live.Len())
	c.LiveBytes = d.mem.device.liveBytes()
	c.LiveHostAllocs = int64(d.mem.host.live.Len())
	if len(d.streams) > 0 {
		c.LiveStreams = int64(len(d.streams)) - 1 // the default stream is never created
	}
	c.LiveEvents = int64(len(d.events))
	c.LiveGraphs = int64(len(d.graphs))
	return c
}

// ResidentBytes is the host memory backing the device's touched pages: what the simulation costs,
// whatever Memory says.
func (d *Device) ResidentBytes() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mem.residentBytes()
}

// FailMalloc makes the n-th next Malloc call that passes argument and capture checks fail with
// out-of-memory (n = 1: the very next one), leaving the allocator untouched. n <= 0 cancels a
// pending injection. One injection is pending at a time; a new call replaces it.
func (d *Device) FailMalloc(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failMalloc = max(n, 0)
}

// Close destroys every stream, event, graph, capture and allocation, drops the backing pages and
// stops both workers. Calls afterwards fail with invalid-value; Close again is a no-op. A lost
// device closes like any other; an abandoned one (Abandon) is left as it is.
func (d *Device) Close() error {
	if d.isAbandoned() {
		return nil
	}
	d.life.Lock()
	defer d.life.Unlock()
	if d.closed.Load() {
		return nil
	}
	d.closed.Store(true)
	d.main.Stop()
	d.other.Stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mem = newMemory(d.index, 0)
	clear(d.streams)
	d.pending = nil
	clear(d.events)
	clear(d.graphs)
	d.spares = spareBlocks{max: maxSpares}
	d.captures = nil
	return nil
}

// worker is the worker that serves t, nil for an unknown thread.
func (d *Device) worker(t device.Thread) *device.Worker {
	switch t {
	case device.Main:
		return d.main
	case device.Other:
		return d.other
	}
	return nil
}

// away returns the worker that serves t when the caller is not running on it: the call must be
// handed off (handOff), which makes it again on that worker. nil when the caller is on it already
// (inside a hand-off or a session, OnThread) or t is unknown: call makes the call, or fails it. A
// session's view asks nothing for the session's thread while the session lasts.
func (d *Device) away(t device.Thread) *device.Worker {
	if d.InSession(t) {
		return nil
	}
	if w := d.worker(t); w != nil && !w.OnOwnThread() {
		return w
	}
	return nil
}

// handOff runs f, the device method called again with the same arguments, on w and waits for it:
// every device call of the simulator comes from the OS thread its Thread names, as on hardware.
// The method hands off its own call rather than call handing off the body, so that the body's
// closure does not escape and a call on the worker's thread allocates nothing.
func handOff[T any](d *Device, w *device.Worker, op string, f func() (T, error)) (T, error) {
	var v T
	// life is held while the call is dispatched, so it never reaches a stopped worker. TryRLock:
	// the only writer is Close, and a call that meets it answers closed, as it would after it; a
	// call made inside a session (OnThread) that Close waits for must not wait for Close.
	if !d.life.TryRLock() {
		return v, d.fail(op, device.ClassInvalidValue, "the device is closed")
	}
	defer d.life.RUnlock()
	if err := d.unusable(op); err != nil {
		return v, err // an abandoned device's workers are let go: nothing may be handed to them
	}
	var err error
	w.Do(func() { v, err = f() })
	return v, err
}

// handOff is the generic handOff for a method that returns only an error.
func (d *Device) handOff(w *device.Worker, op string, f func() error) error {
	_, err := handOff(d, w, op, func() (struct{}, error) { return struct{}{}, f() })
	return err
}

// unusable fails op on a device that is closed or was abandoned.
func (d *Device) unusable(op string) error {
	switch {
	case d.closed.Load():
		return d.fail(op, device.ClassInvalidValue, "the device is closed")
	case d.isAbandoned():
		return d.fail(op, device.ClassInvalidValue, "the device was abandoned (a call hung)")
	}
	return nil
}

// call runs body under the device lock, on the worker's thread that serves t (the method handed
// itself off first when the caller was elsewhere: away, handOff).
func (d *Device) call(t device.Thread, op string, body func() error) error {
	if d.worker(t) == nil {
		return d.fail(op, device.ClassInvalidValue, "unknown thread %v: the device has threads main and other", t)
	}
	// A call on a worker's thread runs inside a hand-off or a session that holds life: closed
	// cannot change under it.
	if err := d.unusable(op); err != nil {
		return err
	}
	err, hang := d.preempt(op)
	if err != nil {
		return err
	}
	if hang {
		d.hang() // the worker is left blocked, as a driver call that never returns leaves it
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.hook != nil {
		d.hook(op, t)
	}
	if op != "Launch" && op != "CaptureInfo" {
		// Every call but another launch, or a question about capture state, needs the graph work
		// launched before it done.
		d.settle()
	}
	return body()
}

// Extensions states every ability the simulator has beyond device.Device, for d itself: a
// session's view (OnThread's) states them for the view.
func (d *Device) Extensions() device.Extensions {
	e := device.Extensions{Of: d, Faults: d, Abandon: d, Threads: d, Session: d, Compare: d, Walk: d, Kernels: d}
	if d.fingerprints {
		e.Fingerprint = d
	}
	return e
}

// InSession reports whether d is a session's view for t and the session is running
// (device.SessionView): then d's calls for t run inline, on the calling goroutine.
func (d *Device) InSession(t device.Thread) bool {
	b := d.session
	return b != nil && b.t == t && b.live.Load()
}

// OnThread runs f on the worker that serves t (device.ThreadRunner) and hands it on, a view of the
// device whose calls for t run there inline: one hand-off for the whole session, and no check of
// the OS thread per call. life is held for the session as for one call, so Close waits for it; f
// must not Close the device.
func (d *Device) OnThread(t device.Thread, f func(on device.Device)) error {
	w := d.worker(t)
	if w == nil {
		return d.fail("OnThread", device.ClassInvalidValue, "unknown thread %v: the device has threads main and other", t)
	}
	on := &Device{core: d.core, session: &session{t: t}}
	run := func() {
		on.session.live.Store(true)
		defer on.session.live.Store(false)
		f(on)
	}
	if w.OnOwnThread() {
		run()
		return nil
	}
	_, err := handOff(d, w, "OnThread", func() (struct{}, error) { run(); return struct{}{}, nil })
	return err
}

// hostAccess runs body, a CPU access to host memory, under the device lock: no driver call, so no
// worker thread and no rule; graph work launched before it is settled first.
func (d *Device) hostAccess(op string, body func() error) error {
	// TryRLock: see handOff (a host access inside a session that Close waits for).
	if !d.life.TryRLock() {
		return d.fail(op, device.ClassInvalidValue, "the device is closed")
	}
	defer d.life.RUnlock()
	if d.closed.Load() {
		return d.fail(op, device.ClassInvalidValue, "the device is closed")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.settle()
	return body()
}

// fail builds the error for a failure no rule covers, with the profile's code for class.
func (d *Device) fail(op string, class device.Class, format string, args ...any) error {
	code := d.profile.Errors[class]
	return &device.Error{Backend: "sim", Op: op, Code: code.Code, Name: code.Name, Class: class, Detail: fmt.Sprintf(format, args...)}
}

func (d *Device) newHandle() uint64 {
	d.lastHandle++
	return d.lastHandle
}

// checkRange verifies that p is a non-empty range inside one live device allocation, or, when
// host is true, inside one live device or host allocation. It returns that allocation.
func (d *Device) checkRange(op, what string, p device.Ptr, host bool) (*allocation, error) {
	if p.Bytes <= 0 {
		return nil, d.fail(op, device.ClassInvalidValue, "%s %v is empty", what, p)
	}
	a := d.mem.containing(p)
	switch {
	case a == nil:
		return nil, d.fail(op, device.ClassInvalidValue, "%s %v does not lie inside a live allocation", what, p)
	case a.host != 0 && !host:
		return nil, d.fail(op, device.ClassInvalidValue, "%s %v is %v host memory: %s needs device memory", what, p, a.host, op)
	}
	return a, nil
}

func (d *Device) lookupStream(op string, s device.Stream) (*stream, error) {
	if st, ok := d.streams[s]; ok {
		return st, nil
	}
	return nil, d.fail(op, device.ClassInvalidValue, "%v does not exist (never created or destroyed)", s)
}

func (d *Device) lookupEvent(op string, e device.Event) (*event, error) {
	if ev, ok := d.events[e]; ok {
		return ev, nil
	}
	return nil, d.fail(op, device.ClassInvalidValue, "%v does not exist (never created or destroyed)", e)
}

func (d *Device) lookupGraph(op string, g device.Graph) (*graph, error) {
	if gr, ok := d.graphs[g]; ok {
		return gr, nil
	}
	return nil, d.fail(op, device.ClassInvalidValue, "%v does not exist (never captured or destroyed)", g)
}

func (d *Device) Malloc(t device.Thread, bytes int64) (device.Ptr, error) {
	if w := d.away(t); w != nil {
		return handOff(d, w, "Malloc", func() (device.Ptr, error) { return d.Malloc(t, bytes) })
	}
	var p device.Ptr
	err := d.call(t, "Malloc", func() error {
		if bytes <= 0 {
			return d.fail("Malloc", device.ClassInvalidValue, "cannot allocate %d bytes: the size must be positive", bytes)
		}
		if err := d.enforce(&call{op: "Malloc", thread: t}); err != nil {
			return err
		}
		if d.failMalloc > 0 {
			d.failMalloc--
			if d.failMalloc == 0 {
				return d.fail("Malloc", device.ClassOutOfMemory, "allocation of %d bytes failed by injection (FailMalloc)", bytes)
			}
		}
		if err := d.allocFault(bytes); err != nil {
			return err
		}
		a := d.mem.alloc(d.mem.device, 0, bytes)
		if a == nil {
			return d.fail("Malloc", device.ClassOutOfMemory,
				"cannot allocate %d bytes: %s of %s are carved out and no cached block is large enough",
				bytes, bytesize.Format(int64(d.mem.device.bump-d.mem.device.base)), bytesize.Format(d.size))
		}
		d.counters.Mallocs++
		p = a.ptr
		return nil
	})
	return p, err
}

func (d *Device) Free(t device.Thread, p device.Ptr) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "Free", func() error { return d.Free(t, p) })
	}
	return d.call(t, "Free", func() error {
		a, err := d.liveAt("Free", d.mem.device, p)
		if err != nil {
			return err
		}
		if err := d.enforce(&call{op: "Free", thread: t}); err != nil {
			return err
		}
		d.mem.device.release(a)
		d.counters.Frees++
		return nil
	})
}

// liveAt returns the live allocation of h that p is exactly.
func (d *Device) liveAt(op string, h *heap, p device.Ptr) (*allocation, error) {
	at, a, ok := h.live.Floor(p.Addr)
	if !ok || at != p.Addr {
		return nil, d.fail(op, device.ClassInvalidValue, "%v is not a live allocation (never allocated or already freed)", p)
	}
	if a.ptr != p {
		return nil, d.fail(op, device.ClassInvalidValue, "%v does not match the live allocation %v at that address", p, a.ptr)
	}
	return a, nil
}

// AllocHost allocates host memory. Pinned memory comes from the driver (aclrtMallocHost,
// cuMemAllocHost) and is subject to the profile's rules; pageable memory is the program's own
// malloc: no driver call, no rule.
func (d *Device) AllocHost(t device.Thread, bytes int64, kind device.HostMemory) (device.Ptr, error) {
	if w := d.away(t); w != nil {
		return handOff(d, w, "AllocHost", func() (device.Ptr, error) { return d.AllocHost(t, bytes, kind) })
	}
	var p device.Ptr
	err := d.call(t, "AllocHost", func() error {
		if !slices.Contains(device.HostMemories(), kind) {
			return d.fail("AllocHost", device.ClassInvalidValue, "unknown %v", kind)
		}
		if bytes <= 0 {
			return d.fail("AllocHost", device.ClassInvalidValue, "cannot allocate %d bytes: the size must be positive", bytes)
		}
		if kind == device.Pinned {
			if err := d.enforce(&call{op: "AllocHost", thread: t}); err != nil {
				return err
			}
		}
		a := d.mem.alloc(d.mem.host, kind, bytes)
		if a == nil {
			return d.fail("AllocHost", device.ClassOutOfMemory, "cannot allocate %d bytes of %v host memory", bytes, kind)
		}
		d.counters.HostAllocs++
		p = a.ptr
		return nil
	})
	return p, err
}

// FreeHost frees host memory from AllocHost; freeing pinned memory is a driver call.
func (d *Device) FreeHost(t device.Thread, p device.Ptr) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "FreeHost", func() error { return d.FreeHost(t, p) })
	}
	return d.call(t, "FreeHost", func() error {
		a, err := d.liveAt("FreeHost", d.mem.host, p)
		if err != nil {
			return err
		}
		if a.host == device.Pinned {
			if err := d.enforce(&call{op: "FreeHost", thread: t}); err != nil {
				return err
			}
		}
		d.mem.host.release(a)
		d.counters.HostFrees++
		return nil
	})
}

// hostRange checks that p lies in one live host allocation.
func (d *Device) hostRange(op string, p device.Ptr, n int) error {
	if int64(n) != p.Bytes {
		return d.fail(op, device.ClassInvalidValue, "%d bytes for host range %v: the lengths must match", n, p)
	}
	if a := d.mem.host.containing(p); a == nil || p.Bytes <= 0 {
		return d.fail(op, device.ClassInvalidValue, "%v does not lie inside a live host allocation", p)
	}
	return nil
}

func (d *Device) HostWrite(dst device.Ptr, src []byte) error {
	return d.hostAccess("HostWrite", func() error {
		if err := d.hostRange("HostWrite", dst, len(src)); err != nil {
			return err
		}
		d.mem.write(dst.Addr, src)
		return nil
	})
}

func (d *Device) HostRead(dst []byte, src device.Ptr) error {
	return d.hostAccess("HostRead", func() error {
		if err := d.hostRange("HostRead", src, len(dst)); err != nil {
			return err
		}
		d.mem.read(dst, src.Addr)
		return nil
	})
}

func (d *Device) Write(t device.Thread, dst device.Ptr, src []byte) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "Write", func() error { return d.Write(t, dst, src) })
	}
	return d.call(t, "Write", func() error {
		if int64(len(src)) != dst.Bytes {
			return d.fail("Write", device.ClassInvalidValue, "%d host bytes for destination %v: the lengths must match", len(src), dst)
		}
		if _, err := d.checkRange("Write", "destination", dst, false); err != nil {
			return err
		}
		if err := d.enforce(&call{op: "Write", thread: t}); err != nil {
			return err
		}
		d.mem.write(dst.Addr, src)
		return nil
	})
}

func (d *Device) Read(t device.Thread, dst []byte, src device.Ptr) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "Read", func() error { return d.Read(t, dst, src) })
	}
	return d.call(t, "Read", func() error {
		if int64(len(dst)) != src.Bytes {
			return d.fail("Read", device.ClassInvalidValue, "%d host bytes for source %v: the lengths must match", len(dst), src)
		}
		if _, err := d.checkRange("Read", "source", src, false); err != nil {
			return err
		}
		if err := d.enforce(&call{op: "Read", thread: t}); err != nil {
			return err
		}
		d.mem.read(dst, src.Addr)
		return nil
	})
}

func (d *Device) CreateStream(t device.Thread, f device.StreamFlags) (device.Stream, error) {
	if w := d.away(t); w != nil {
		return handOff(d, w, "CreateStream", func() (device.Stream, error) { return d.CreateStream(t, f) })
	}
	var s device.Stream
	err := d.call(t, "CreateStream", func() error {
		if f&^device.NonBlocking != 0 {
			return d.fail("CreateStream", device.ClassInvalidValue, "unknown stream flags %#x", uint32(f))
		}
		s = device.Stream(d.newHandle())
		d.streams[s] = &stream{id: s, nonBlocking: f&device.NonBlocking != 0}
		return nil
	})
	return s, err
}

// DestroyStream destroys s. A stream that belongs to a capture ends that capture without a graph
// (the platforms differ here; no probe depends on it). The default stream is never destroyed.
func (d *Device) DestroyStream(t device.Thread, s device.Stream) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "DestroyStream", func() error { return d.DestroyStream(t, s) })
	}
	return d.call(t, "DestroyStream", func() error {
		if s == device.DefaultStream {
			return d.fail("DestroyStream", device.ClassInvalidValue, "the default stream is never destroyed")
		}
		st, err := d.lookupStream("DestroyStream", s)
		if err != nil {
			return err
		}
		if st.capture != nil {
			d.terminate(st.capture)
		}
		delete(d.streams, s)
		return nil
	})
}

func (d *Device) CreateEvent(t device.Thread) (device.Event, error) {
	if w := d.away(t); w != nil {
		return handOff(d, w, "CreateEvent", func() (device.Event, error) { return d.CreateEvent(t) })
	}
	var e device.Event
	err := d.call(t, "CreateEvent", func() error {
		e = device.Event(d.newHandle())
		d.events[e] = &event{id: e}
		return nil
	})
	return e, err
}

func (d *Device) DestroyEvent(t device.Thread, e device.Event) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "DestroyEvent", func() error { return d.DestroyEvent(t, e) })
	}
	return d.call(t, "DestroyEvent", func() error {
		if _, err := d.lookupEvent("DestroyEvent", e); err != nil {
			return err
		}
		delete(d.events, e)
		return nil
	})
}

func (d *Device) Fill(t device.Thread, s device.Stream, dst device.Ptr, value byte) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "Fill", func() error { return d.Fill(t, s, dst, value) })
	}
	return d.call(t, "Fill", func() error {
		st, err := d.lookupStream("Fill", s)
		if err != nil {
			return err
		}
		return d.fill(t, st, dst, value)
	})
}

func (d *Device) Copy(t device.Thread, s device.Stream, dst, src device.Ptr) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "Copy", func() error { return d.Copy(t, s, dst, src) })
	}
	return d.call(t, "Copy", func() error {
		st, err := d.lookupStream("Copy", s)
		if err != nil {
			return err
		}
		return d.copy(t, st, dst, src)
	})
}

func (d *Device) Axpy(t device.Thread, s device.Stream, y, x device.Ptr, a uint32) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "Axpy", func() error { return d.Axpy(t, s, y, x, a) })
	}
	return d.call(t, "Axpy", func() error {
		st, err := d.lookupStream("Axpy", s)
		if err != nil {
			return err
		}
		return d.axpy(t, st, y, x, a)
	})
}

var _ device.KernelEnqueuer = (*Device)(nil)

// EnqueueKernels enqueues a batch of kernels (device.KernelEnqueuer) under one
// hand-off and one hold of the device lock: each kernel is checked, and recorded or run, exactly
// as its own call would be, and the batch stops at the first that fails. Of what call does before a
// call, only what can change between two kernels of a batch is done again for each: the device-lost
// check and a test's hook (nothing in a batch launches, so nothing needs settling again).
func (d *Device) EnqueueKernels(t device.Thread, s device.Stream, ks []device.Kernel) (int, error) {
	if len(ks) == 0 {
		return 0, nil
	}
	if w := d.away(t); w != nil {
		return handOff(d, w, ks[0].Kind.String(), func() (int, error) { return d.EnqueueKernels(t, s, ks) })
	}
	n := 0
	err := d.call(t, ks[0].Kind.String(), func() error {
		// The stream is looked up once: nothing in a batch can destroy it.
		st, err := d.lookupStream(ks[0].Kind.String(), s)
		if err != nil {
			return err
		}
		for i := range ks {
			k := &ks[i]
			// preempt answers a kernel only on a lost device: the name is made only then, or for
			// a hook.
			if i > 0 && (d.lost() || d.hook != nil) {
				op := k.Kind.String()
				if err, _ := d.preempt(op); err != nil {
					return err
				}
				if d.hook != nil {
					d.hook(op, t)
				}
			}
			var err error
			switch k.Kind {
			case device.KernelFill:
				err = d.fill(t, st, k.Dst, k.Value)
			case device.KernelCopy:
				err = d.copy(t, st, k.Dst, k.Src)
			case device.KernelAxpy:
				err = d.axpy(t, st, k.Dst, k.Src, k.A)
			default:
				err = d.fail("EnqueueKernels", device.ClassInvalidValue, "unknown kernel kind %v", k.Kind)
			}
			if err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// fill, copy and axpy are the bodies of Fill, Copy and Axpy on stream st, under the device lock.
func (d *Device) fill(t device.Thread, st *stream, dst device.Ptr, value byte) error {
	da, err := d.checkRange("Fill", "destination", dst, false)
	if err != nil {
		return err
	}
	return d.enqueue(&call{op: "Fill", thread: t, stream: st}, work{kind: kindMemset, dst: dst, value: value}, [3]*allocation{da})
}

func (d *Device) copy(t device.Thread, st *stream, dst, src device.Ptr) error {
	da, err := d.checkRange("Copy", "destination", dst, true)
	if err != nil {
		return err
	}
	sa, err := d.checkRange("Copy", "source", src, true)
	if err != nil {
		return err
	}
	if da.host != 0 && sa.host != 0 {
		return d.fail("Copy", device.ClassInvalidValue, "destination %v and source %v are both host memory: a copy between host buffers is the CPU's, not a stream's", dst, src)
	}
	n := min(dst.Bytes, src.Bytes)
	c := &call{op: "Copy", thread: t, stream: st, pageable: da.host == device.Pageable || sa.host == device.Pageable}
	return d.enqueue(c, work{kind: kindMemcpy, dst: dst.Slice(0, n), src: src.Addr}, [3]*allocation{sa, da})
}

func (d *Device) axpy(t device.Thread, st *stream, y, x device.Ptr, a uint32) error {
	if x.Bytes != y.Bytes || y.Bytes%4 != 0 {
		return d.fail("Axpy", device.ClassInvalidValue, "y %v and x %v must have the same size, a multiple of 4 bytes", y, x)
	}
	ya, err := d.checkRange("Axpy", "y", y, false)
	if err != nil {
		return err
	}
	xa, err := d.checkRange("Axpy", "x", x, false)
	if err != nil {
		return err
	}
	return d.enqueue(&call{op: "Axpy", thread: t, stream: st}, work{kind: kindKernel, dst: y, src: x.Addr, a: a}, [3]*allocation{xa, ya, ya})
}

// enqueue records w into the capture the stream belongs to, or runs it now: a stream executes its
// work in enqueue order, and running it at once is a valid linearisation of every stream. held are
// the allocations of w's touched ranges, in touched order (work.touched), that the range checks
// found.
func (d *Device) enqueue(c *call, w work, held [3]*allocation) error {
	if err := d.enforce(c); err != nil {
		return err
	}
	if cp := c.stream.capture; cp != nil {
		cp.add(c.stream, w, held, &d.spares)
		return nil
	}
	d.execute(w)
	return nil
}

func (d *Device) execute(w work) {
	switch w.kind {
	case kindMemset:
		d.mem.fill(w.dst.Addr, w.dst.Bytes, w.value)
	case kindMemcpy:
		d.mem.move(w.dst.Addr, w.src, w.dst.Bytes)
	case kindKernel:
		d.mem.axpy(w.dst.Addr, w.src, w.dst.Bytes, w.a)
	}
}

// Record marks e with the work enqueued on s so far. On a capturing stream the event becomes
// part of the capture: it names the stream's current last nodes.
func (d *Device) Record(t device.Thread, e device.Event, s device.Stream) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "Record", func() error { return d.Record(t, e, s) })
	}
	return d.call(t, "Record", func() error {
		st, err := d.lookupStream("Record", s)
		if err != nil {
			return err
		}
		ev, err := d.lookupEvent("Record", e)
		if err != nil {
			return err
		}
		if err := d.enforce(&call{op: "Record", thread: t, stream: st, event: ev}); err != nil {
			return err
		}
		if cp := st.capture; cp != nil {
			// eager is kept: the captured record does not touch the event outside the graph.
			ev.capture, ev.nodes = cp, append([]int(nil), st.tail...)
		} else {
			ev.capture, ev.nodes, ev.eager = nil, nil, true
		}
		return nil
	})
}

// Wait makes s wait for e. For an event recorded in a capture: a stream of that capture joins the
// event's nodes; a stream outside every capture is forked into it. An event recorded eagerly (or
// never) names finished work, so waiting on it outside a capture does nothing.
func (d *Device) Wait(t device.Thread, s device.Stream, e device.Event) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "Wait", func() error { return d.Wait(t, s, e) })
	}
	return d.call(t, "Wait", func() error {
		st, err := d.lookupStream("Wait", s)
		if err != nil {
			return err
		}
		ev, err := d.lookupEvent("Wait", e)
		if err != nil {
			return err
		}
		if err := d.enforce(&call{op: "Wait", thread: t, stream: st, event: ev}); err != nil {
			return err
		}
		switch {
		case ev.capture == nil:
			return nil
		case st.capture == ev.capture:
			st.tail = union(st.tail, ev.nodes)
		case st.capture == nil:
			ev.capture.fork(st, ev.nodes)
		default:
			return d.fail("Wait", device.ClassNotSupported,
				"%v is in capture %d and %v was recorded in capture %d: merging captures is not modelled", s, st.capture.id, e, ev.capture.id)
		}
		return nil
	})
}

func (d *Device) SyncStream(t device.Thread, s device.Stream) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "SyncStream", func() error { return d.SyncStream(t, s) })
	}
	return d.call(t, "SyncStream", func() error {
		st, err := d.lookupStream("SyncStream", s)
		if err != nil {
			return err
		}
		return d.enforce(&call{op: "SyncStream", thread: t, stream: st})
	})
}

// ExchangeCaptureMode sets the calling thread's capture interaction mode and returns its old one.
func (d *Device) ExchangeCaptureMode(t device.Thread, mode device.CaptureMode) (device.CaptureMode, error) {
	if w := d.away(t); w != nil {
		return handOff(d, w, "ExchangeCaptureMode", func() (device.CaptureMode, error) { return d.ExchangeCaptureMode(t, mode) })
	}
	var old device.CaptureMode
	err := d.call(t, "ExchangeCaptureMode", func() error {
		if !slices.Contains(device.CaptureModes(), mode) {
			return d.fail("ExchangeCaptureMode", device.ClassInvalidValue, "unknown capture mode %v", mode)
		}
		old, d.threadModes[t] = d.threadModes[t], mode
		return nil
	})
	return old, err
}

func (d *Device) SyncDevice(t device.Thread) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "SyncDevice", func() error { return d.SyncDevice(t) })
	}
	return d.call(t, "SyncDevice", func() error {
		return d.enforce(&call{op: "SyncDevice", thread: t})
	})
}

// QueryEvent reports true whenever the profile lets it through: work runs at enqueue, so all work
// an eagerly recorded event names is complete, and a never-recorded event names no work.
func (d *Device) QueryEvent(t device.Thread, e device.Event) (bool, error) {
	if w := d.away(t); w != nil {
		return handOff(d, w, "QueryEvent", func() (bool, error) { return d.QueryEvent(t, e) })
	}
	err := d.call(t, "QueryEvent", func() error {
		ev, err := d.lookupEvent("QueryEvent", e)
		if err != nil {
			return err
		}
		return d.enforce(&call{op: "QueryEvent", thread: t, event: ev})
	})
	return err == nil, err
}

func (d *Device) SyncEvent(t device.Thread, e device.Event) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "SyncEvent", func() error { return d.SyncEvent(t, e) })
	}
	return d.call(t, "SyncEvent", func() error {
		ev, err := d.lookupEvent("SyncEvent", e)
		if err != nil {
			return err
		}
		return d.enforce(&call{op: "SyncEvent", thread: t, event: ev})
	})
}
