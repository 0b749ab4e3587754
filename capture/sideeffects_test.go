package capture_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/replaycheck/replaycheck/runtime"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// dirtyRuntime is a runtime under test whose refusals are not clean: it is replaycheck's reference
// guards, except that when they refuse a growth it does something first, as a runtime that updates
// its bookkeeping or touches memory before deciding to refuse would.
type dirtyRuntime struct {
	*guard.Device
	inner device.Device
	dirt  string // what the refusal does: allocator, moved, resized, slot, contents
	// holds overrides what Holds reports for a key once the refusal moved it.
	holds map[string]device.Ptr
	slot  map[string]runtime.Slot
	// served is every buffer the runtime served, by key.
	served map[string]device.Ptr
}

func (d *dirtyRuntime) Provision(t device.Thread, slot runtime.Slot, key string, cur device.Ptr, bytes int64) (device.Ptr, runtime.Served, error) {
	p, served, err := d.Device.Provision(t, slot, key, cur, bytes)
	if err == nil {
		d.served[key] = p
	}
	if !device.IsRefusal(err) {
		return p, served, err
	}
	switch d.dirt {
	case "allocator":
		// A driver allocation made and given back: nothing leaks, but the driver was called.
		if q, merr := d.inner.Malloc(t, bytes); merr == nil {
			_ = d.inner.Free(t, q)
		}
	case "moved":
		d.holds[key] = device.Ptr{Addr: cur.Addr + 4096, Bytes: cur.Bytes}
	case "resized":
		d.holds[key] = device.Ptr{Addr: cur.Addr, Bytes: bytes}
	case "slot":
		// Another buffer's slot changes: the growth itself looks refused as it should.
		for other := range d.served {
			if other != key {
				d.slot[other] = runtime.Retained
			}
		}
	case "contents":
		// Every other buffer is zeroed: the graph reads them on the next replay.
		for other, q := range d.served {
			if other != key {
				_ = d.inner.Write(t, q, make([]byte, q.Bytes))
			}
		}
	}
	return p, served, err
}

func (d *dirtyRuntime) Holds(key string) (runtime.Slot, device.Ptr, bool) {
	slot, p, ok := d.Device.Holds(key)
	if q, moved := d.holds[key]; moved && ok {
		p = q
	}
	if s, changed := d.slot[key]; changed && ok {
		slot = s
	}
	return slot, p, ok
}

func dirty(what string) *runtime.UnderTest {
	return &runtime.UnderTest{Name: "dirty-" + what, Open: func(dev device.Device, guarded bool) (runtime.Runtime, error) {
		mode := guard.Program
		if guarded {
			mode = guard.Kernel
		}
		g, err := guard.New(dev, mode)
		if err != nil {
			return nil, err
		}
		return &dirtyRuntime{Device: g, inner: dev, dirt: what, holds: map[string]device.Ptr{}, slot: map[string]runtime.Slot{}, served: map[string]device.Ptr{}}, nil
	}}
}

// refusedGrowth runs hazards/rebase-after-capture guarded (the guards refuse dst's growth between
// the capture and the replays) on a fresh simulator, with opt.
func refusedGrowth(opt capture.Options) *capture.Result {
	GinkgoHelper()
	cat, err := loadCatalog()
	Expect(err).NotTo(HaveOccurred())
	dev := openSim("cann")
	DeferCleanup(dev.Close)
	in := probes.Instance{Probe: cat.find("hazards/rebase-after-capture"), Mode: device.Global, Guarded: true, Replays: 2}
	return capture.Run(ctx(), dev, in, opt)
}

// The side-effect detector's negative control: a runtime that refuses a growth after changing
// something. With the detector, the instance ends in error naming the change; without it (the
// test-only switch), the same run passes for a clean refusal, so the detector is what catches it.
var _ = Describe("the refusal side-effect detector", func() {
	run := func(rt *runtime.UnderTest, noCheck bool) *capture.Result {
		return refusedGrowth(capture.Options{Runtime: rt, NoSideEffectCheck: noCheck})
	}

	It("passes a clean refusal and says what it checked", func() {
		res := run(builtin, false)
		Expect(res.Outcome).To(Equal(probes.Refused), res.Reason)
		Expect(res.Refusal.Checked).NotTo(BeEmpty())
		for _, c := range res.Refusal.Checked {
			Expect(c.Held).To(BeTrue(), c.What)
		}
	})

	DescribeTable("catches a refusal that changed state",
		func(what, check string) {
			res := run(dirty(what), false)
			Expect(res.Outcome).To(Equal(probes.Errored), res.Reason)
			Expect(res.Error).To(HaveField("Kind", capture.ErrSideEffect))
			Expect(res.Error.Step.String()).To(Equal("between op 1"))
			Expect(res.Reason).To(ContainSubstring("the refusal had side effects: " + check))
			Expect(res.Refusal.Checked).To(ContainElement(capture.SideEffectCheck{What: check, Held: false}))
			Expect(res.Runtime).To(Equal("dirty-" + what))

			without := run(dirty(what), true)
			Expect(without.Outcome).To(Equal(probes.Refused), "without the detector the dirty refusal passes for a clean one: %s", without.Reason)
		},
		Entry("an allocator call", "allocator", "device counters (allocations, host allocations, streams, events, graphs, launches, captures)"),
		Entry("a moved address", "moved", "buffer addresses and sizes"),
		Entry("a changed size", "resized", "buffer addresses and sizes"),
		Entry("a buffer moved to another slot", "slot", "slots"),
	)

	It("leaves touched contents to the oracle, which finds them after the round", func() {
		res := run(dirty("contents"), false)
		Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
		Expect(res.Refusal).NotTo(BeNil(), "the runtime did refuse")
		Expect(res.Mismatches).To(ContainElement(HaveField("Buffer", "src")))
	})
})

// movingRuntime is the reference guards in front of a runtime that moves buffers on its own
// between calls (a workspace it regrows, say) and logs each move as the guards log their slots:
// what the engine's snapshot must follow without asking about every buffer before every call.
type movingRuntime struct {
	*guard.Device
	held  map[string]device.Ptr
	log   []string // the keys moved, the i-th at version i+1
	asked int      // Holds calls
}

func (m *movingRuntime) move(key string, p device.Ptr) {
	m.held[key] = p
	m.log = append(m.log, key)
}

func (m *movingRuntime) Holds(key string) (runtime.Slot, device.Ptr, bool) {
	m.asked++
	p, ok := m.held[key]
	return runtime.Plain, p, ok
}

// RuntimeExtensions states the runtime's own log (the guards' is stated for the guards).
func (m *movingRuntime) RuntimeExtensions() runtime.Extensions {
	return runtime.Extensions{Of: m, SlotLog: m}
}

func (m *movingRuntime) SlotsVersion() uint64 { return uint64(len(m.log)) }

func (m *movingRuntime) SlotsChangedSince(v uint64) ([]string, uint64, bool) {
	now := uint64(len(m.log))
	if v > now {
		return nil, now, false
	}
	return m.log[v:], now, true
}

var _ = Describe("the snapshot a guarded call is checked against", func() {
	It("follows the runtime's logged moves and the engine's own buffers without reading every buffer each time", func() {
		dev := openSim("cann")
		DeferCleanup(dev.Close)
		g, err := guard.New(dev, guard.Program)
		Expect(err).NotTo(HaveOccurred())
		rt := &movingRuntime{Device: g, held: map[string]device.Ptr{}}
		s := capture.NewSnapshots(rt)
		at := func(n uint64) device.Ptr { return device.Ptr{Addr: 0x7f0000000000 + n<<12, Bytes: 4096} }
		steps := []struct {
			what string
			do   func()
		}{
			{"three buffers", func() {
				for i, name := range []string{"a", "b", "c"} {
					rt.move(name, at(uint64(i)))
					s.Set(name, at(uint64(i)))
				}
			}},
			{"nothing changed", func() {}},
			{"the runtime moves b on its own", func() { rt.move("b", at(10)) }},
			{"the runtime moves a twice and c once", func() { rt.move("a", at(11)); rt.move("c", at(12)); rt.move("a", at(13)) }},
			{"the engine grows c", func() { rt.move("c", at(14)); s.Set("c", at(14)) }},
			{"the engine frees b", func() { delete(rt.held, "b"); s.Drop("b") }},
			{"the engine allocates d, the runtime moves a", func() { rt.move("d", at(15)); s.Set("d", at(15)); rt.move("a", at(16)) }},
		}
		for _, st := range steps {
			st.do()
			asked := rt.asked
			kept, full := s.Take()
			Expect(kept).To(Equal(full), st.what)
			if st.what == "nothing changed" {
				// Only the full read asked, a question per buffer: the snapshot kept followed the
				// log (the runtime states it) and asked about nothing.
				Expect(rt.asked-asked).To(Equal(len(full)), "the snapshot asked the runtime about buffers its log did not name")
			}
		}
	})
})
