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

// driftingRuntime is the reference guards, except that when the capture begins, the runtime moves
// src's slot on its own (a workspace it regrows, say): Holds says so from then on. When logged, its
// slot log names the move; otherwise the log misses it, as a plugin's slots_changed with a bug
// would. Its versions are the guards' in the low 32 bits and its own moves' count above them.
type driftingRuntime struct {
	*guard.Device
	logged  bool
	drifted bool
	mine    []string // the keys it moved, logged
}

func (d *driftingRuntime) BeginCapture(t device.Thread, s device.Stream, mode device.CaptureMode) error {
	if err := d.Device.BeginCapture(t, s, mode); err != nil {
		return err
	}
	d.drifted = true
	if d.logged {
		d.mine = append(d.mine, "src")
	}
	return nil
}

func (d *driftingRuntime) Holds(key string) (runtime.Slot, device.Ptr, bool) {
	slot, p, ok := d.Device.Holds(key)
	if key == "src" && d.drifted && ok {
		p.Addr += 1 << 20
	}
	return slot, p, ok
}

// RuntimeExtensions states the runtime's own slot log (the guards' is stated for the guards).
func (d *driftingRuntime) RuntimeExtensions() runtime.Extensions {
	return runtime.Extensions{Of: d, SlotLog: d}
}

func (d *driftingRuntime) SlotsVersion() uint64 {
	return uint64(len(d.mine))<<32 | d.Device.SlotsVersion()
}

func (d *driftingRuntime) SlotsChangedSince(v uint64) ([]string, uint64, bool) {
	keys, now, ok := d.Device.SlotsChangedSince(v & (1<<32 - 1))
	if !ok || int(v>>32) > len(d.mine) {
		return nil, 0, false
	}
	return append(keys, d.mine[v>>32:]...), uint64(len(d.mine))<<32 | now, true
}

func drifting(logged bool) *runtime.UnderTest {
	return &runtime.UnderTest{Name: "drifting", Open: func(dev device.Device, guarded bool) (runtime.Runtime, error) {
		g, err := guard.New(dev, guard.Kernel)
		if err != nil {
			return nil, err
		}
		return &driftingRuntime{Device: g, logged: logged}, nil
	}}
}

// The slot-log check (Options.CheckSlotLog) and its negative control: a runtime whose log misses a
// change of its own makes the engine's snapshot stale, and the next refusal, clean as it is, is
// then reported as a side effect. The check names the change the log missed instead.
var _ = Describe("the slot-log check", func() {
	run := func(rt *runtime.UnderTest, check bool) *capture.Result {
		return refusedGrowth(capture.Options{Runtime: rt, CheckSlotLog: check})
	}

	It("passes a runtime whose log names its own changes, and the refusal is clean", func() {
		for _, check := range []bool{false, true} {
			res := run(drifting(true), check)
			Expect(res.Outcome).To(Equal(probes.Refused), "check %v: %s", check, res.Reason)
		}
	})

	It("names the slot a runtime's log missed, where without the check a clean refusal looks dirty", func() {
		res := run(drifting(false), true)
		Expect(res.Outcome).To(Equal(probes.Errored), res.Reason)
		Expect(res.Error).To(HaveField("Kind", capture.ErrRuntime))
		Expect(res.Reason).To(SatisfyAll(
			ContainSubstring(`slot log: "src" changed without the runtime's slot log naming it, since the snapshot before BeginCapture`),
			ContainSubstring("it is slot plain 0x"), ContainSubstring("the log kept slot plain 0x")))

		without := run(drifting(false), false)
		Expect(without.Outcome).To(Equal(probes.Errored), without.Reason)
		Expect(without.Error).To(HaveField("Kind", capture.ErrSideEffect))
		Expect(without.Reason).To(ContainSubstring("src moved or resized"))
	})
})
