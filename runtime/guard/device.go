package guard

import (
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/replaycheck/replaycheck/device"
)

// Disabled removes individual kernel-mode guards. For negative-control tests only: each field lets
// a test show that the hazard its guard covers goes through without it. The zero value removes
// nothing.
type Disabled struct {
	// RetainedSlot: a runtime.Retained slot grows by free + malloc and may be released or freed, as in
	// program mode.
	RetainedSlot bool
	// ArenaBank: a committed runtime.Arena region re-bases above its capacity and may be released
	// or freed, as in program mode.
	ArenaBank bool
	// CaptureWatch: allocator calls and off-capture work during a capture go through.
	CaptureWatch bool
	// Residency: Launch replays whatever its captured ranges hold now.
	Residency bool
	// ReplayIsolation: a graph is launched while another graph that shares its memory is still in
	// flight on another stream.
	ReplayIsolation bool
	// PrivatePools: a graph-private pool's blocks are judged as an ordinary pool's
	// (privatepool.go).
	PrivatePools bool
}

// Options configure a Device beyond its mode.
type Options struct {
	// Disabled removes guards; for negative-control tests only.
	Disabled Disabled
}

// Device is a device.Device with kernel-mode guards in front of an inner device. Build it with New.
type Device struct {
	inner device.Device
	latch Latch
	off   Disabled

	mu     sync.Mutex
	ledger ledger
	slots  map[string]*slotState
	// slotLog are the keys of the last changes of slots (hold, drop), the i-th at version
	// slotLogBase+i+1: see SlotsChangedSince.
	slotLog     []string
	slotLogBase uint64
	// captures are the active captures begun through this Device, by the sequence number the
	// Device assigned at BeginCapture (never reused, never 0). The platform's capture ID is only a
	// field of a capture, used to match streams; a platform may report none.
	captures map[uint64]*capture
	lastSeq  uint64
	// recordedIn maps an event last recorded on a stream of an active capture to that capture's
	// sequence number: a Wait on it forks a stream into the capture.
	recordedIn map[device.Event]uint64
	// graphs are what each graph captured through this Device touches.
	graphs  map[device.Graph]*footprint
	pools   map[string]*pool
	flights flights
	retired bool
	priv    privateState // graph-private pools (privatepool.go)
}

var _ device.Device = (*Device)(nil)

// Reference is replaycheck's reference runtime with opts' switches, as the engine opens it for
// each instance: kernel mode for a guarded instance, program mode otherwise.
func Reference(opts Options) *runtime.UnderTest {
	return &runtime.UnderTest{Name: runtime.Builtin, Direct: true, Open: func(dev device.Device, guarded bool) (runtime.Runtime, error) {
		mode := Program
		if guarded {
			mode = Kernel
		}
		return NewWithOptions(dev, mode, opts)
	}}
}

// New wraps inner and latches mode (Program or Kernel) as the Device's execution identity.
func New(inner device.Device, mode Mode) (*Device, error) {
	return NewWithOptions(inner, mode, Options{})
}

// NewWithOptions is New with Options; Options.Disabled is for negative-control tests only.
func NewWithOptions(inner device.Device, mode Mode, opts Options) (*Device, error) {
	if inner == nil {
		return nil, guardError(device.ClassInvalidValue, "New", "no inner device")
	}
	d := &Device{
		inner: inner, off: opts.Disabled,
		slots: map[string]*slotState{}, captures: map[uint64]*capture{},
		recordedIn: map[device.Event]uint64{}, graphs: map[device.Graph]*footprint{},
		pools: map[string]*pool{}, flights: newFlights(),
	}
	if err := d.latch.Latch(mode); err != nil {
		return nil, err
	}
	return d, nil
}

// Mode returns the Device's latched execution mode.
func (d *Device) Mode() Mode { return d.latch.Mode() }

// Latch latches m again: a no-op for the Device's own mode, refused (device.ClassInvalidState) for
// the other one.
func (d *Device) Latch(m Mode) error { return d.latch.Latch(m) }

// guarding reports whether a guard is on: kernel mode and not removed for a negative control.
func (d *Device) guarding(removed bool) bool { return !removed && d.latch.Mode() == Kernel }

// --- Pass-through calls: nothing to guard or to record. ---

func (d *Device) Backend() string  { return d.inner.Backend() }
func (d *Device) Describe() string { return d.inner.Describe() }
func (d *Device) Platform() string { return d.inner.Platform() }

// Finish does nothing: the guards hold nothing beyond the inner device, which the caller owns and
// closes, and Retire already gave back what they allocated.
func (d *Device) Finish() error                     { return nil }
func (d *Device) Capabilities() device.Capabilities { return d.inner.Capabilities() }

// Extensions states the guards' one ability beyond device.Device: a batch of kernels
// (EnqueueKernels), which program mode passes on whole and kernel mode takes kernel by kernel.
// Nothing of the inner device's passes through: every call must meet the guards.
func (d *Device) Extensions() device.Extensions { return device.Extensions{Of: d, Kernels: d} }

// RuntimeExtensions states the guards' slot log (SlotsVersion, SlotsChangedSince).
func (d *Device) RuntimeExtensions() runtime.Extensions {
	return runtime.Extensions{Of: d, SlotLog: d, PrivatePools: d}
}
func (d *Device) Counters() device.Counters { return d.inner.Counters() }
func (d *Device) Close() error              { return d.inner.Close() }
func (d *Device) CreateEvent(t device.Thread) (device.Event, error) {
	return d.inner.CreateEvent(t)
}
func (d *Device) HostWrite(dst device.Ptr, src []byte) error { return d.inner.HostWrite(dst, src) }
func (d *Device) HostRead(dst []byte, src device.Ptr) error  { return d.inner.HostRead(dst, src) }
func (d *Device) ExchangeCaptureMode(t device.Thread, mode device.CaptureMode) (device.CaptureMode, error) {
	return d.inner.ExchangeCaptureMode(t, mode)
}
func (d *Device) CreateStream(t device.Thread, f device.StreamFlags) (device.Stream, error) {
	return d.inner.CreateStream(t, f)
}
func (d *Device) Write(t device.Thread, dst device.Ptr, src []byte) error {
	return d.inner.Write(t, dst, src)
}
func (d *Device) Read(t device.Thread, dst []byte, src device.Ptr) error {
	return d.inner.Read(t, dst, src)
}

// --- Synchronisation: passed through; what completes tells the replay-isolation check which
// launches are no longer in flight. ---

func (d *Device) SyncDevice(t device.Thread) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	err := d.inner.SyncDevice(t)
	if err == nil {
		d.flights.landAll()
	}
	return err
}

func (d *Device) SyncStream(t device.Thread, s device.Stream) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	err := d.inner.SyncStream(t, s)
	if err == nil {
		d.flights.land(s, d.flights.seq)
	}
	return err
}

func (d *Device) QueryEvent(t device.Thread, e device.Event) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	done, err := d.inner.QueryEvent(t, e)
	if err == nil && done {
		d.flights.landEvent(e)
	}
	return done, err
}

func (d *Device) SyncEvent(t device.Thread, e device.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	err := d.inner.SyncEvent(t, e)
	if err == nil {
		d.flights.landEvent(e)
	}
	return err
}
func (d *Device) CaptureInfo(t device.Thread, s device.Stream) (device.CaptureInfo, error) {
	return d.inner.CaptureInfo(t, s)
}
func (d *Device) GraphNodes(t device.Thread, g device.Graph) ([]device.GraphNode, error) {
	return d.inner.GraphNodes(t, g)
}

// DestroyStream destroys s through the inner device. In kernel mode it is refused while s is part
// of an active capture begun here: the platform would end or break the capture behind the guard's
// back. Once a destroy succeeds, a capture whose origin was s, and any other capture the inner
// device now reports ended, is no longer watched.
func (d *Device) DestroyStream(t device.Thread, s device.Stream) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.guarding(d.off.CaptureWatch) {
		if err := d.refuseDestroy(t, s); err != nil {
			return err
		}
	}
	if err := d.inner.DestroyStream(t, s); err != nil {
		return err
	}
	for _, c := range d.captures {
		// The origin is gone, so the platform cannot be asked about it any more.
		if c.origin == s || !d.stillCapturing(t, c) {
			d.forget(c)
		}
	}
	return nil
}

// refuseDestroy refuses the destruction of a stream that is part of an active capture begun here,
// or whose membership cannot be established while one is active.
func (d *Device) refuseDestroy(t device.Thread, s device.Stream) error {
	if c := d.capturedFrom(s); c != nil {
		return refusal(runtime.GuardCaptureWatch, "DestroyStream", "%v is the origin of %s: destroying it would end the capture behind the guard's back", s, c)
	}
	c, err := d.captureOf(t, s)
	switch {
	case c != nil:
		return refusal(runtime.GuardCaptureWatch, "DestroyStream", "%v is part of %s: destroying it would end the capture behind the guard's back", s, c)
	case err != nil:
		return refusal(runtime.GuardCaptureWatch, "DestroyStream", "%s is active and membership of %v cannot be established: %v", d.activeCaptures(), s, err)
	}
	return nil
}

func (d *Device) DestroyEvent(t device.Thread, e device.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.inner.DestroyEvent(t, e); err != nil {
		return err
	}
	delete(d.recordedIn, e)
	delete(d.flights.fences, e)
	return nil
}

func (d *Device) DestroyGraph(t device.Thread, g device.Graph) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.inner.DestroyGraph(t, g); err != nil {
		return err
	}
	delete(d.graphs, g)
	d.dropped(g)
	return nil
}

// --- Allocator calls. ---

// Malloc allocates through the inner device and enters the allocation into the residency ledger.
// In kernel mode it is refused while a capture is active.
func (d *Device) Malloc(t device.Thread, bytes int64) (device.Ptr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.watchAllocator("Malloc"); err != nil {
		return device.Ptr{}, err
	}
	p, err := d.inner.Malloc(t, bytes)
	if err != nil {
		return p, err
	}
	d.ledger.add(p)
	return p, nil
}

// AllocHost allocates host memory through the inner device and enters it into the residency
// ledger: a captured copy reads or writes it on every replay. In kernel mode it is refused while a
// capture is active, pageable memory included: the hazard of an allocation made inside a capture
// and freed later does not depend on who hands the memory out.
func (d *Device) AllocHost(t device.Thread, bytes int64, kind device.HostMemory) (device.Ptr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.watchAllocator("AllocHost"); err != nil {
		return device.Ptr{}, err
	}
	p, err := d.inner.AllocHost(t, bytes, kind)
	if err != nil {
		return p, err
	}
	d.ledger.add(p)
	return p, nil
}

// FreeHost frees host memory through the inner device. In kernel mode it is refused while a
// capture is active.
func (d *Device) FreeHost(t device.Thread, p device.Ptr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.watchAllocator("FreeHost"); err != nil {
		return err
	}
	if err := d.inner.FreeHost(t, p); err != nil {
		return err
	}
	d.ledger.remove(p.Addr)
	return nil
}

// Free frees p through the inner device. In kernel mode it is refused while a capture is active,
// and for a pointer that a runtime.Retained slot or a committed runtime.Arena region holds (use
// Release). A slot that held p is empty afterwards.
func (d *Device) Free(t device.Thread, p device.Ptr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.holderOf(p.Addr)
	if st != nil {
		if err := d.refuseRelease("Free", st); err != nil {
			return err
		}
	}
	if err := d.watchAllocator("Free"); err != nil {
		return err
	}
	if err := d.inner.Free(t, p); err != nil {
		return err
	}
	d.ledger.remove(p.Addr)
	if st != nil {
		d.drop(st.key)
	}
	return nil
}

// watchAllocator refuses an allocator call while a capture begun here is active: an allocation
// made inside the capture and freed later leaves the graph holding a dead address.
func (d *Device) watchAllocator(op string) error {
	if !d.guarding(d.off.CaptureWatch) || len(d.captures) == 0 {
		return nil
	}
	return refusal(runtime.GuardCaptureWatch, op, "allocator call while %s is active: an allocation made or freed inside a capture leaves the graph holding an address it does not own", d.activeCaptures())
}

func (d *Device) activeCaptures() string {
	seqs := sortedSeqs(d.captures)
	names := make([]string, len(seqs))
	for i, seq := range seqs {
		names[i] = d.captures[seq].String()
	}
	return strings.Join(names, " and ")
}

// sortedSeqs returns the keys of captures in the order the captures began.
func sortedSeqs(captures map[uint64]*capture) []uint64 {
	return slices.Sorted(maps.Keys(captures))
}

// --- Capture. ---

// BeginCapture begins a capture through the inner device and starts watching it.
func (d *Device) BeginCapture(t device.Thread, s device.Stream, mode device.CaptureMode) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.inner.BeginCapture(t, s, mode); err != nil {
		return err
	}
	d.lastSeq++
	c := &capture{seq: d.lastSeq, origin: s, mode: mode}
	// Without the platform's capture ID no stream can be shown to be part of the capture, so the
	// watch then refuses every stream: it fails closed. Such a capture is known by its origin.
	if info, err := d.inner.CaptureInfo(t, s); err == nil && info.Status != device.CaptureNone {
		c.id = info.ID
	}
	d.captures[c.seq] = c
	d.begun(c.seq)
	return nil
}

// EndCapture ends the capture s belongs to through the inner device; on success the graph keeps
// the ranges the capture touched, for the residency check.
func (d *Device) EndCapture(t device.Thread, s device.Stream) (device.Graph, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.ending(t, s)
	g, err := d.inner.EndCapture(t, s)
	if c == nil {
		return g, err
	}
	if err == nil {
		d.graphs[g] = &footprint{ranges: distinct(c.ranges)}
		d.ended(c.seq, g)
	}
	// A failed end may or may not terminate the capture (platforms differ): ask.
	if err == nil || !d.stillCapturing(t, c) {
		d.forget(c)
	}
	return g, err
}

// ending returns the active capture (begun here) that an EndCapture on s would end, or nil.
func (d *Device) ending(t device.Thread, s device.Stream) *capture {
	info, err := d.inner.CaptureInfo(t, s)
	if err == nil && info.Status != device.CaptureNone && info.ID != 0 {
		if c, _ := d.byID(info.ID); c != nil {
			return c
		}
		// A capture whose ID could not be learnt at begin, or one of several claiming the ID, is
		// known by its origin.
		if c := d.capturedFrom(s); c != nil && (c.id == 0 || c.id == info.ID) {
			return c
		}
		return nil
	}
	// The platform cannot be asked, reports no capture ID, or reports s not capturing (a capture
	// that ended behind the guard's back: the failing end then forgets it). Known by its origin.
	return d.capturedFrom(s)
}

func (d *Device) stillCapturing(t device.Thread, c *capture) bool {
	info, err := d.inner.CaptureInfo(t, c.origin)
	if err != nil {
		return true // keep watching: failing closed is the safe side
	}
	if c.id == 0 {
		return info.Status != device.CaptureNone
	}
	return info.Status != device.CaptureNone && info.ID == c.id
}

func (d *Device) forget(c *capture) {
	delete(d.captures, c.seq)
	for e, seq := range d.recordedIn {
		if seq == c.seq {
			delete(d.recordedIn, e)
		}
	}
}

// capturedFrom returns the latest active capture begun here on origin s, or nil.
func (d *Device) capturedFrom(s device.Stream) *capture {
	var found *capture
	for _, c := range d.captures {
		if c.origin == s && (found == nil || c.seq > found.seq) {
			found = c
		}
	}
	return found
}

// byID returns the active capture with platform capture ID id (non-zero), nil when none, and an
// error when several claim it: the platform's answer then proves membership of neither.
func (d *Device) byID(id uint64) (*capture, error) {
	var found *capture
	for _, c := range d.captures {
		if c.id != id {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("%s and %s both report platform capture ID %d", found, c, id)
		}
		found = c
	}
	return found, nil
}

// captureOf returns the active capture (begun here) that s is part of, or nil.
func (d *Device) captureOf(t device.Thread, s device.Stream) (*capture, error) {
	if len(d.captures) == 0 {
		return nil, nil
	}
	info, err := d.inner.CaptureInfo(t, s)
	if err != nil {
		return nil, err
	}
	if info.Status == device.CaptureNone || info.ID == 0 {
		return nil, nil
	}
	return d.byID(info.ID)
}

// watchStream returns the active capture s is part of (nil when none), or a refusal when a capture
// begun here is active and s is not part of it: that work would run once, eagerly, and never
// replay.
func (d *Device) watchStream(t device.Thread, op string, s device.Stream) (*capture, error) {
	c, err := d.captureOf(t, s)
	if c != nil || len(d.captures) == 0 || !d.guarding(d.off.CaptureWatch) {
		return c, nil
	}
	if err != nil {
		return nil, refusal(runtime.GuardCaptureWatch, op, "%s is active and membership of %v cannot be established: %v", d.activeCaptures(), s, err)
	}
	return nil, refusal(runtime.GuardCaptureWatch, op, "%v is not part of %s: the work would run once, eagerly, and never replay", s, d.activeCaptures())
}

// --- Stream work. ---

// tracksWork reports whether stream work is matched to the captures begun here and its ranges kept:
// in kernel mode, where the capture watch refuses work off a capture and the residency and
// replay-isolation checks read the ranges each graph touched. Program mode reads none of it, and a
// capture of 100,000 ops would pay a capture-state question and a range entry for every one; it
// passes stream work on without taking the guard's lock (the mode is latched once, read
// atomically).
func (d *Device) tracksWork() bool { return d.latch.Mode() == Kernel }

// Fill enqueues a memset; in kernel mode it is refused on a stream outside an active capture.
func (d *Device) Fill(t device.Thread, s device.Stream, dst device.Ptr, value byte) error {
	if !d.tracksWork() {
		return d.inner.Fill(t, s, dst, value) // program mode: no state of the guard's to lock (tracksWork)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.initialising(dst) {
		return d.inner.Fill(t, s, dst, value)
	}
	c, err := d.watchStream(t, "Fill", s)
	if err != nil {
		return err
	}
	if err := d.inner.Fill(t, s, dst, value); err != nil {
		return err
	}
	if c != nil {
		c.touch(&d.ledger, true, dst)
	}
	return nil
}

// Copy enqueues a device-to-device copy; in kernel mode it is refused on a stream outside an
// active capture.
func (d *Device) Copy(t device.Thread, s device.Stream, dst, src device.Ptr) error {
	if !d.tracksWork() {
		return d.inner.Copy(t, s, dst, src) // program mode: no state of the guard's to lock (tracksWork)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c, err := d.watchStream(t, "Copy", s)
	if err != nil {
		return err
	}
	if err := d.inner.Copy(t, s, dst, src); err != nil {
		return err
	}
	if c != nil {
		n := min(dst.Bytes, src.Bytes)
		c.touch(&d.ledger, true, dst.Slice(0, n))
		c.touch(&d.ledger, false, src.Slice(0, n))
	}
	return nil
}

// Axpy enqueues the axpy kernel; in kernel mode it is refused on a stream outside an active
// capture.
func (d *Device) Axpy(t device.Thread, s device.Stream, y, x device.Ptr, a uint32) error {
	if !d.tracksWork() {
		return d.inner.Axpy(t, s, y, x, a) // program mode: no state of the guard's to lock (tracksWork)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c, err := d.watchStream(t, "Axpy", s)
	if err != nil {
		return err
	}
	if err := d.inner.Axpy(t, s, y, x, a); err != nil {
		return err
	}
	if c != nil {
		c.touch(&d.ledger, true, y)
		c.touch(&d.ledger, false, x)
	}
	return nil
}

var _ device.KernelEnqueuer = (*Device)(nil)

// EnqueueKernels enqueues a batch of kernels (device.KernelEnqueuer). Program mode passes the batch
// on as it passes each kernel on, untouched; kernel mode watches each kernel as its own call (Fill,
// Copy, Axpy).
func (d *Device) EnqueueKernels(t device.Thread, s device.Stream, ks []device.Kernel) (int, error) {
	if !d.tracksWork() {
		return device.EnqueueKernels(d.inner, t, s, ks)
	}
	return device.EnqueueEach(d, t, s, ks)
}

// Record records e on s; in kernel mode it is refused on a stream outside an active capture. An
// event recorded inside a capture can fork another stream into it (see Wait).
func (d *Device) Record(t device.Thread, e device.Event, s device.Stream) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, err := d.watchStream(t, "Record", s)
	if err != nil {
		return err
	}
	if err := d.inner.Record(t, e, s); err != nil {
		return err
	}
	if c != nil {
		d.recordedIn[e] = c.seq
		delete(d.flights.fences, e) // a record inside a capture is a graph node, not a fence
	} else {
		delete(d.recordedIn, e)
		d.flights.record(e, s)
	}
	return nil
}

// Wait makes s wait for e. In kernel mode it is refused on a stream outside an active capture,
// except when e was recorded inside that capture: that Wait forks s into the capture.
func (d *Device) Wait(t device.Thread, s device.Stream, e device.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	seq, recorded := d.recordedIn[e]
	_, active := d.captures[seq]
	if forks := recorded && active; !forks {
		if _, err := d.watchStream(t, "Wait", s); err != nil {
			return err
		}
	}
	if err := d.inner.Wait(t, s, e); err != nil {
		return err
	}
	d.flights.wait(s, e)
	return nil
}

// --- Replay. ---

// Launch replays g on s. In kernel mode it is refused on a stream outside an active capture, when
// a range g captured is no longer live with the allocation generation it had at capture, and when
// a graph still in flight on another stream shares memory with g (see flights).
func (d *Device) Launch(t device.Thread, g device.Graph, s device.Stream) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, err := d.watchStream(t, "Launch", s)
	if err != nil {
		return err
	}
	fp, known := d.graphs[g]
	var ranges []capturedRange
	if known {
		ranges = fp.ranges
	}
	if d.guarding(d.off.Residency) {
		if err := d.checkResidency(g, ranges, known); err != nil {
			return err
		}
		if err := d.checkShared(g, ranges); err != nil {
			return err
		}
	}
	if d.guarding(d.off.ReplayIsolation) {
		if err := d.flights.isolated(g, s, ranges); err != nil {
			return err
		}
	}
	if err := d.inner.Launch(t, g, s); err != nil {
		return err
	}
	d.flights.launch(g, s, fp)
	d.launchedPrivate(ranges)
	if c != nil {
		// A graph launched into a capture replays its ranges as part of the new graph.
		for _, r := range ranges {
			c.add(r)
		}
	}
	return nil
}

func (d *Device) checkResidency(g device.Graph, ranges []capturedRange, known bool) error {
	if !known {
		return refusal(runtime.GuardResidency, "Launch", "%v was not captured through this guard: its captured ranges are unknown", g)
	}
	var first string
	stale := 0
	for _, r := range ranges {
		if why := d.ledger.stale(r, d.describeHolder, d.describeFree); why != "" && !d.heldPrivately(r) {
			if stale == 0 {
				first = why
			}
			stale++
		}
	}
	switch stale {
	case 0:
		return nil
	case 1:
		return refusal(runtime.GuardResidency, "Launch", "replay of %v refused: %s", g, first)
	}
	more := "ranges"
	if stale == 2 {
		more = "range"
	}
	return refusal(runtime.GuardResidency, "Launch", "replay of %v refused: %s (and %d more stale %s)", g, first, stale-1, more)
}

// describeHolder names the slot or pool holding a, for refusal details.
func (d *Device) describeHolder(a allocation) string {
	if st := d.holderOf(a.ptr.Addr); st != nil {
		return fmt.Sprintf(", held by %v slot %q", st.slot, st.key)
	}
	if p := d.poolAt(a.ptr); p != nil {
		return fmt.Sprintf(", a block of %v", p)
	}
	return ""
}

// describeFree says where a freed range lies when a pool's segment still holds it.
func (d *Device) describeFree(r device.Ptr) string {
	if p := d.poolAt(r); p != nil {
		return fmt.Sprintf(" back in the free space of %v", p)
	}
	return ""
}
