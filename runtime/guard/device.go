package guard

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/replaycheck/replaycheck/runtime"
)

// Disabled removes individual kernel-mode guards. For negative-control tests only: each field lets
// a test show that the hazard its guard covers goes through without it. The zero value removes
// nothing.
type Disabled struct {
	// RetainedSlot: a Retained slot grows by free + malloc and may be released or freed, as in
	// program mode.
	RetainedSlot bool
	// ArenaBank: a committed Arena region re-bases above its capacity and may be released or freed,
	// as in program mode.
	ArenaBank bool
	// CaptureWatch: allocator calls and off-capture work during a capture go through.
	CaptureWatch bool
	// Residency: Launch replays whatever its captured ranges hold now.
	Residency bool
}

// Options configure a Device beyond its mode.
type Options struct {
	// Disabled removes guards; for negative-control tests only.
	Disabled Disabled
}

// Device is a runtime.Device with kernel-mode guards in front of an inner device. Build it with New.
type Device struct {
	inner runtime.Device
	latch Latch
	off   Disabled

	mu     sync.Mutex
	ledger ledger
	slots  map[string]*slotState
	// captures are the active captures begun through this Device, by the platform's capture ID.
	captures map[uint64]*capture
	// recordedIn maps an event last recorded on a stream of an active capture to that capture's ID:
	// a Wait on it forks a stream into the capture.
	recordedIn map[runtime.Event]uint64
	// graphs are the ranges each graph captured through this Device touches.
	graphs  map[runtime.Graph][]capturedRange
	retired bool
}

var _ runtime.Device = (*Device)(nil)

// New wraps inner and latches mode (Program or Kernel) as the Device's execution identity.
func New(inner runtime.Device, mode Mode) (*Device, error) {
	return NewWithOptions(inner, mode, Options{})
}

// NewWithOptions is New with Options; Options.Disabled is for negative-control tests only.
func NewWithOptions(inner runtime.Device, mode Mode, opts Options) (*Device, error) {
	if inner == nil {
		return nil, guardError(runtime.ClassInvalidValue, "New", "no inner device")
	}
	d := &Device{
		inner: inner, off: opts.Disabled,
		slots: map[string]*slotState{}, captures: map[uint64]*capture{},
		recordedIn: map[runtime.Event]uint64{}, graphs: map[runtime.Graph][]capturedRange{},
	}
	if err := d.latch.Latch(mode); err != nil {
		return nil, err
	}
	return d, nil
}

// Mode returns the Device's latched execution mode.
func (d *Device) Mode() Mode { return d.latch.Mode() }

// Latch latches m again: a no-op for the Device's own mode, refused (runtime.ClassInvalidState) for
// the other one.
func (d *Device) Latch(m Mode) error { return d.latch.Latch(m) }

// guarding reports whether a guard is on: kernel mode and not removed for a negative control.
func (d *Device) guarding(removed bool) bool { return !removed && d.latch.Mode() == Kernel }

// --- Pass-through calls: nothing to guard or to record. ---

func (d *Device) Backend() string                    { return d.inner.Backend() }
func (d *Device) Describe() string                   { return d.inner.Describe() }
func (d *Device) Capabilities() runtime.Capabilities { return d.inner.Capabilities() }
func (d *Device) Counters() runtime.Counters         { return d.inner.Counters() }
func (d *Device) Close() error                       { return d.inner.Close() }
func (d *Device) SyncDevice(t runtime.Thread) error  { return d.inner.SyncDevice(t) }
func (d *Device) CreateEvent(t runtime.Thread) (runtime.Event, error) {
	return d.inner.CreateEvent(t)
}
func (d *Device) CreateStream(t runtime.Thread) (runtime.Stream, error) {
	return d.inner.CreateStream(t)
}
func (d *Device) DestroyStream(t runtime.Thread, s runtime.Stream) error {
	return d.inner.DestroyStream(t, s)
}
func (d *Device) Write(t runtime.Thread, dst runtime.Ptr, src []byte) error {
	return d.inner.Write(t, dst, src)
}
func (d *Device) Read(t runtime.Thread, dst []byte, src runtime.Ptr) error {
	return d.inner.Read(t, dst, src)
}
func (d *Device) SyncStream(t runtime.Thread, s runtime.Stream) error {
	return d.inner.SyncStream(t, s)
}
func (d *Device) QueryEvent(t runtime.Thread, e runtime.Event) (bool, error) {
	return d.inner.QueryEvent(t, e)
}
func (d *Device) SyncEvent(t runtime.Thread, e runtime.Event) error {
	return d.inner.SyncEvent(t, e)
}
func (d *Device) CaptureInfo(t runtime.Thread, s runtime.Stream) (runtime.CaptureInfo, error) {
	return d.inner.CaptureInfo(t, s)
}
func (d *Device) GraphNodes(t runtime.Thread, g runtime.Graph) ([]runtime.GraphNode, error) {
	return d.inner.GraphNodes(t, g)
}

func (d *Device) DestroyEvent(t runtime.Thread, e runtime.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.inner.DestroyEvent(t, e); err != nil {
		return err
	}
	delete(d.recordedIn, e)
	return nil
}

func (d *Device) DestroyGraph(t runtime.Thread, g runtime.Graph) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.inner.DestroyGraph(t, g); err != nil {
		return err
	}
	delete(d.graphs, g)
	return nil
}

// --- Allocator calls. ---

// Malloc allocates through the inner device and enters the allocation into the residency ledger.
// In kernel mode it is refused while a capture is active.
func (d *Device) Malloc(t runtime.Thread, bytes int64) (runtime.Ptr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.watchAllocator("Malloc"); err != nil {
		return runtime.Ptr{}, err
	}
	p, err := d.inner.Malloc(t, bytes)
	if err != nil {
		return p, err
	}
	d.ledger.add(p)
	return p, nil
}

// Free frees p through the inner device. In kernel mode it is refused while a capture is active,
// and for a pointer that a Retained slot or a committed Arena region holds (use Release). A slot
// that held p is empty afterwards.
func (d *Device) Free(t runtime.Thread, p runtime.Ptr) error {
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
		delete(d.slots, st.key)
	}
	return nil
}

// watchAllocator refuses an allocator call while a capture begun here is active: an allocation
// made inside the capture and freed later leaves the graph holding a dead address.
func (d *Device) watchAllocator(op string) error {
	if !d.guarding(d.off.CaptureWatch) || len(d.captures) == 0 {
		return nil
	}
	return refusal(op, "allocator call while %s is active: an allocation made or freed inside a capture leaves the graph holding an address it does not own", d.activeCaptures())
}

func (d *Device) activeCaptures() string {
	ids := make([]uint64, 0, len(d.captures))
	for id := range d.captures {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = d.captures[id].String()
	}
	return strings.Join(names, " and ")
}

// --- Capture. ---

// BeginCapture begins a capture through the inner device and starts watching it.
func (d *Device) BeginCapture(t runtime.Thread, s runtime.Stream, mode runtime.CaptureMode) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.inner.BeginCapture(t, s, mode); err != nil {
		return err
	}
	c := &capture{origin: s, mode: mode, seen: map[capturedRange]bool{}}
	// Without the platform's capture ID no stream can be shown to be part of the capture, so the
	// watch then refuses every stream: it fails closed.
	if info, err := d.inner.CaptureInfo(t, s); err == nil && info.Status != runtime.CaptureNone {
		c.id = info.ID
	}
	d.captures[c.id] = c
	return nil
}

// EndCapture ends the capture s belongs to through the inner device; on success the graph keeps
// the ranges the capture touched, for the residency check.
func (d *Device) EndCapture(t runtime.Thread, s runtime.Stream) (runtime.Graph, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var c *capture
	if info, err := d.inner.CaptureInfo(t, s); err == nil && info.Status != runtime.CaptureNone {
		c = d.captures[info.ID]
	}
	if c == nil {
		// A capture whose ID could not be learnt at begin is known by its origin.
		for _, k := range d.captures {
			if k.id == 0 && k.origin == s {
				c = k
			}
		}
	}
	g, err := d.inner.EndCapture(t, s)
	if c == nil {
		return g, err
	}
	if err == nil {
		d.graphs[g] = c.ranges
	}
	// A failed end may or may not terminate the capture (platforms differ): ask.
	if err == nil || !d.stillCapturing(t, c) {
		d.forget(c)
	}
	return g, err
}

func (d *Device) stillCapturing(t runtime.Thread, c *capture) bool {
	info, err := d.inner.CaptureInfo(t, c.origin)
	if err != nil {
		return true // keep watching: failing closed is the safe side
	}
	return info.Status != runtime.CaptureNone && info.ID == c.id
}

func (d *Device) forget(c *capture) {
	delete(d.captures, c.id)
	for e, id := range d.recordedIn {
		if id == c.id {
			delete(d.recordedIn, e)
		}
	}
}

// captureOf returns the active capture (begun here) that s is part of, or nil.
func (d *Device) captureOf(t runtime.Thread, s runtime.Stream) (*capture, error) {
	if len(d.captures) == 0 {
		return nil, nil
	}
	info, err := d.inner.CaptureInfo(t, s)
	if err != nil {
		return nil, err
	}
	if info.Status == runtime.CaptureNone || info.ID == 0 {
		return nil, nil
	}
	return d.captures[info.ID], nil
}

// watchStream returns the active capture s is part of (nil when none), or a refusal when a capture
// begun here is active and s is not part of it: that work would run once, eagerly, and never replay.
func (d *Device) watchStream(t runtime.Thread, op string, s runtime.Stream) (*capture, error) {
	c, err := d.captureOf(t, s)
	if c != nil || len(d.captures) == 0 || !d.guarding(d.off.CaptureWatch) {
		return c, nil
	}
	if err != nil {
		return nil, refusal(op, "%s is active and membership of %v cannot be established: %v", d.activeCaptures(), s, err)
	}
	return nil, refusal(op, "%v is not part of %s: the work would run once, eagerly, and never replay", s, d.activeCaptures())
}

// --- Stream work. ---

// Fill enqueues a memset; in kernel mode it is refused on a stream outside an active capture.
func (d *Device) Fill(t runtime.Thread, s runtime.Stream, dst runtime.Ptr, value byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, err := d.watchStream(t, "Fill", s)
	if err != nil {
		return err
	}
	if err := d.inner.Fill(t, s, dst, value); err != nil {
		return err
	}
	if c != nil {
		c.touch(&d.ledger, dst)
	}
	return nil
}

// Copy enqueues a device-to-device copy; in kernel mode it is refused on a stream outside an
// active capture.
func (d *Device) Copy(t runtime.Thread, s runtime.Stream, dst, src runtime.Ptr) error {
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
		c.touch(&d.ledger, dst.Slice(0, n), src.Slice(0, n))
	}
	return nil
}

// Axpy enqueues the axpy kernel; in kernel mode it is refused on a stream outside an active
// capture.
func (d *Device) Axpy(t runtime.Thread, s runtime.Stream, y, x runtime.Ptr, a uint32) error {
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
		c.touch(&d.ledger, y, x)
	}
	return nil
}

// Record records e on s; in kernel mode it is refused on a stream outside an active capture. An
// event recorded inside a capture can fork another stream into it (see Wait).
func (d *Device) Record(t runtime.Thread, e runtime.Event, s runtime.Stream) error {
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
		d.recordedIn[e] = c.id
	} else {
		delete(d.recordedIn, e)
	}
	return nil
}

// Wait makes s wait for e. In kernel mode it is refused on a stream outside an active capture,
// except when e was recorded inside that capture: that Wait forks s into the capture.
func (d *Device) Wait(t runtime.Thread, s runtime.Stream, e runtime.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	id, recorded := d.recordedIn[e]
	_, active := d.captures[id]
	if forks := recorded && id != 0 && active; !forks {
		if _, err := d.watchStream(t, "Wait", s); err != nil {
			return err
		}
	}
	return d.inner.Wait(t, s, e)
}

// --- Replay. ---

// Launch replays g on s. In kernel mode it is refused on a stream outside an active capture, and
// when a range g captured is no longer live with the allocation generation it had at capture.
func (d *Device) Launch(t runtime.Thread, g runtime.Graph, s runtime.Stream) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, err := d.watchStream(t, "Launch", s)
	if err != nil {
		return err
	}
	ranges, known := d.graphs[g]
	if d.guarding(d.off.Residency) {
		if err := d.checkResidency(g, ranges, known); err != nil {
			return err
		}
	}
	if err := d.inner.Launch(t, g, s); err != nil {
		return err
	}
	if c != nil {
		// A graph launched into a capture replays its ranges as part of the new graph.
		for _, r := range ranges {
			c.add(r)
		}
	}
	return nil
}

func (d *Device) checkResidency(g runtime.Graph, ranges []capturedRange, known bool) error {
	if !known {
		return refusal("Launch", "%v was not captured through this guard: its captured ranges are unknown", g)
	}
	var first string
	stale := 0
	for _, r := range ranges {
		if why := d.ledger.stale(r, d.describeHolder); why != "" {
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
		return refusal("Launch", "replay of %v refused: %s", g, first)
	}
	return refusal("Launch", "replay of %v refused: %s (and %d more stale ranges)", g, first, stale-1)
}

// describeHolder names the slot holding a, for refusal details.
func (d *Device) describeHolder(a allocation) string {
	if st := d.holderOf(a.ptr.Addr); st != nil {
		return fmt.Sprintf(", held by %v slot %q", st.slot, st.key)
	}
	return ""
}
