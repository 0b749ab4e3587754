package capture

import (
	"cmp"
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"slices"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// Buffers and their slots: each probe buffer name maps to the allocation the engine holds for it,
// provisioned where the probe places it (its slot, a pool of the runtime under test, host memory).

// allocation is a live buffer the engine holds for a probe buffer name.
type allocation struct {
	name  string // the probe buffer name
	ptr   device.Ptr
	gen   uint64 // the engine's allocation generation: a free and re-allocation is a new one
	init  probes.Pattern
	slot  runtime.Slot
	place probes.Place
	host  bool // host memory: the CPU reads and writes it, no driver call
	// ledgerOf is the capture whose residency ledger has an entry for this allocation, at index
	// inLedger: while that capture is in progress, an op that touches the buffer again widens the
	// entry's access rather than adding one (noteCaptured). A grow or re-allocation is a new
	// allocation, hence a new entry.
	ledgerOf string
	inLedger int
}

func (in *instance) buf(step probes.Step, name string) (*allocation, error) {
	a := in.live(name)
	if a == nil {
		at := step // a copy: taking step's address would put every call's step on the heap
		return nil, failf(ErrHarness, &at, "%s: buffer %q is not allocated on the device", step, name)
	}
	return a, nil
}

// setBuf and dropBuf change what the engine holds for a buffer name; while refusals are checked,
// the name is noted for the next snapshot (snap).
func (in *instance) setBuf(name string, a *allocation) {
	a.name = name
	in.bufs[name] = a
	in.resolved = in.resolved[:0]
	in.noteChanged(name)
	in.holdByID(name, a)
}

func (in *instance) dropBuf(name string) {
	delete(in.bufs, name)
	in.resolved = in.resolved[:0]
	in.noteChanged(name)
	in.holdByID(name, nil)
}

// holdByID keeps what name holds by its id in the probe's name table too (byID), where a batch of
// planned ops finds it (batches.go).
func (in *instance) holdByID(name string, a *allocation) {
	if id, ok := in.p.BufferID(name); ok {
		in.byID[id] = a
	}
}

func (in *instance) noteChanged(name string) {
	if in.checksRefusals() {
		in.changed = append(in.changed, name)
	}
}

// sizeOf is the size of the buffer name holds now, 0 when none; resolve's question, whose
// answers it keeps (resolved).
func (in *instance) sizeOf(name string) int64 {
	if a := in.bufs[name]; a != nil {
		in.resolved = append(in.resolved, a)
		return a.ptr.Bytes
	}
	return 0
}

// live is the allocation of a buffer of the op being issued: one resolve found, else the one the
// engine holds for name (nil when none).
func (in *instance) live(name string) *allocation {
	for _, a := range in.resolved {
		if a.name == name {
			return a
		}
	}
	return in.bufs[name]
}

// liveNames lists the engine's live buffers in allocation (generation) order.
func (in *instance) liveNames() []string {
	type live struct {
		name string
		gen  uint64
	}
	all := make([]live, 0, len(in.bufs))
	for name, a := range in.bufs {
		all = append(all, live{name, a.gen})
	}
	slices.SortFunc(all, func(a, b live) int { return cmp.Compare(a.gen, b.gen) })
	names := make([]string, len(all))
	for i, l := range all {
		names[i] = l.name
	}
	return names
}

// allocate provisions a buffer where its place says (its slot, its pool, or host memory) and
// writes its init pattern. step is nil for a declared buffer: setup, whose failure is fatal.
func (in *instance) allocate(step *probes.Step, t device.Thread, name string, n int64, init probes.Pattern, slot probes.Slot, place probes.Place) (bool, error) {
	gs, err := runtime.ParseSlot(string(slot))
	if err != nil {
		return false, fail(ErrHarness, step, err)
	}
	var ptr device.Ptr
	var desc string
	var f func() error
	switch {
	case place.Pool != "":
		desc = fmt.Sprintf("PoolAlloc(%s %s, %d)", place.Pool, name, n)
		f = func() (err error) { ptr, err = in.dev.PoolAlloc(t, place.Pool, n); return }
	case place.Host != 0:
		desc = fmt.Sprintf("AllocHost(%s %s, %d)", place.Host, name, n)
		f = func() (err error) { ptr, err = in.dev.AllocHost(t, n, place.Host); return }
	default:
		desc = fmt.Sprintf("Provision(%s %s, %d)", slot, name, n)
		f = func() (err error) { ptr, _, err = in.dev.Provision(t, gs, name, device.Ptr{}, n); return }
	}
	do := func() (string, error) {
		if err := f(); err != nil {
			return "", err
		}
		return ptr.String(), nil
	}
	if step == nil {
		if err := in.mustReturn(desc, do); err != nil {
			return false, err
		}
	} else if took, err := in.call(deviceCall{step: *step, desc: desc, thread: t}, do); !took || err != nil {
		return took, err
	}
	in.gen++
	in.notePrivate(in.gen, place)
	in.setBuf(name, &allocation{ptr: ptr, gen: in.gen, init: init, slot: gs, place: place, host: in.isHost(place)})
	return true, in.initialise(name, init)
}

// isHost reports whether a place is host memory: a host buffer, or a block of a host pool.
func (in *instance) isHost(place probes.Place) bool {
	if place.Pool != "" {
		pl := in.p.Pool(place.Pool)
		return pl != nil && pl.Host != 0
	}
	return place.Host != 0
}

// release returns the call that frees a buffer where its place says, and its description.
func (in *instance) release(t device.Thread, name string, a *allocation) (string, func() error) {
	switch {
	case a.place.Pool != "":
		return fmt.Sprintf("PoolFree(%s %s %v)", a.place.Pool, name, a.ptr), func() error { return in.dev.PoolFree(t, a.place.Pool, a.ptr) }
	case a.place.Host != 0:
		return fmt.Sprintf("FreeHost(%s %s %v)", a.place.Host, name, a.ptr), func() error { return in.dev.FreeHost(t, a.ptr) }
	}
	return fmt.Sprintf("Release(%s %s %v)", a.slot, name, a.ptr), func() error { return in.dev.Release(t, a.slot, name, a.ptr) }
}

// initialise writes a new allocation's init pattern: the CPU writes host memory; outside a capture
// a synchronous write; inside one a fill on the engine's own stream, which is never captured.
func (in *instance) initialise(name string, init probes.Pattern) error {
	a := in.bufs[name]
	if a.host {
		// The CPU writes host memory: no driver call, no capture rule.
		data := init.Bytes(a.ptr.Bytes)
		return in.must(fmt.Sprintf("HostWrite(%s %v, %s) (init)", name, a.ptr, init), func() error { return in.dev.HostWrite(a.ptr, data) })
	}
	if in.capture == "" {
		return in.must(fmt.Sprintf("Write(%s %v, %s) (init)", name, a.ptr, init), func() error { return in.writeInit(a.ptr, init) })
	}
	var value byte
	switch init.Kind {
	case probes.PatZero, "":
	case probes.PatFill:
		value = init.Byte
	default:
		return failf(ErrHarness, nil, "buffer %q is allocated inside a capture with init %s: only zero and fill:B can be initialised there without a synchronous copy", name, init)
	}
	return in.must(fmt.Sprintf("Fill(%s %v, %#02x) (init, engine stream)", name, a.ptr, value), func() error {
		return in.dev.Fill(device.Main, in.setup, a.ptr, value)
	})
}

// grow sends a growth request through the buffer's slot: served in place when it fits; otherwise
// re-provisioned by free then malloc at the new size and the buffer's init again (a re-base: the
// address may change), unless a kernel-mode guard refuses it first. A pooled or host buffer has no
// slot: it is served in place when it fits, and re-based by a free and an allocation otherwise.
func (in *instance) grow(step probes.Step, op *probes.Op) (bool, error) {
	t := op.Thread
	a, err := in.buf(step, op.Buffer)
	if err != nil {
		return false, err
	}
	if a.place != (probes.Place{}) {
		return in.regrow(step, t, op, a)
	}
	var ptr device.Ptr
	var served runtime.Served
	took, err := in.call(deviceCall{step: step, desc: fmt.Sprintf("Provision(%s %s %v, %d) (grow)", a.slot, op.Buffer, a.ptr, *op.Bytes), thread: t},
		func() (string, error) {
			var err error
			if ptr, served, err = in.dev.Provision(t, a.slot, op.Buffer, a.ptr, *op.Bytes); err != nil {
				return "", err
			}
			return fmt.Sprintf("%v [%v]", ptr, served), nil
		})
	if err != nil {
		return took, err
	}
	if !took {
		if held, _, ok := in.dev.Holds(op.Buffer); !ok || held != a.slot {
			return false, in.lostBuffer(step, op.Buffer)
		}
		return false, nil
	}
	if served == runtime.InPlace {
		return true, nil
	}
	in.gen++
	in.setBuf(op.Buffer, &allocation{ptr: ptr, gen: in.gen, init: a.init, slot: a.slot, place: a.place, host: a.host})
	return true, in.initialise(op.Buffer, a.init)
}

// regrow grows a pooled or host buffer: in place when the request fits, else free, then allocate at
// the new size and initialise again.
func (in *instance) regrow(step probes.Step, t device.Thread, op *probes.Op, a *allocation) (bool, error) {
	n := *op.Bytes
	if n <= a.ptr.Bytes {
		in.tl.record(Event{Step: &step, Call: fmt.Sprintf("grow(%s %v, %d)", op.Buffer, a.ptr, n), Returned: "in place [no call]", Thread: t}, nil)
		return true, nil
	}
	desc, free := in.release(t, op.Buffer, a)
	if took, err := in.call(deviceCall{step: step, desc: desc + " (grow)", thread: t}, exec(free)); !took || err != nil {
		return took, err
	}
	in.dropBuf(op.Buffer)
	took, err := in.allocate(&step, t, op.Buffer, n, a.init, probes.SlotPlain, a.place)
	if err == nil && !took {
		return false, in.lostBuffer(step, op.Buffer)
	}
	return took, err
}

// lostBuffer is the failure of a grow that freed the old allocation and could not make the new
// one: the probe has lost a buffer the oracle still holds, which no outcome but error describes
// honestly.
func (in *instance) lostBuffer(step probes.Step, name string) error {
	return failf(ErrSetup, &step, "%s: grow of %q freed the old allocation and the new one failed: %s", step, name, in.tl.lastErr())
}

// contents reads a buffer back: a synchronous device read, or the CPU's read of host memory.
func (in *instance) contents(a *allocation) ([]byte, error) {
	data := make([]byte, a.ptr.Bytes)
	if a.host {
		return data, in.dev.HostRead(data, a.ptr)
	}
	return data, in.dev.Read(device.Main, data, a.ptr)
}
