package capture_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// gpuFaults reports a launch's fault as a GPU does: the launch returns, and the fault surfaces at
// the next synchronising call (measured on an H200: a replay over 2 MiB freed since capture
// returned from cuGraphLaunch, and cuCtxSynchronize answered 700). sticky makes every later call
// answer it too, as CUDA's 700 does.
type gpuFaults struct {
	device.Device
	sticky  bool
	pending *device.Error
}

func (d *gpuFaults) Launch(t device.Thread, g device.Graph, s device.Stream) error {
	if d.pending != nil {
		return d.answer("Launch")
	}
	err := d.Device.Launch(t, g, s)
	if e, ok := device.AsError(err); ok && e.Class == device.ClassIllegalAddress {
		c := *e
		c.Sticky = d.sticky
		d.pending = &c
		return nil
	}
	return err
}

func (d *gpuFaults) SyncDevice(t device.Thread) error {
	if d.pending != nil {
		return d.answer("SyncDevice")
	}
	return d.Device.SyncDevice(t)
}

// answer is the pending fault as op's error; a fault that is not sticky is answered once.
func (d *gpuFaults) answer(op string) error {
	e := *d.pending
	e.Op = op
	if !d.sticky {
		d.pending = nil
	}
	return &e
}

// replayOverFreed captures copies through tmp, frees tmp, then replays: 4 MiB, which the
// simulator's cuda profile answers with 700 on the launch, as an H200 faulted (asynchronously).
const replayOverFreed = `version: replaycheck/v1
set: async
probes:
  - name: replay-over-freed
    hazard: replay-after-free
    buffers:
      src: {bytes: 4KiB, init: iota32}
      tmp: {bytes: 4MiB}
      out: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - copy: {dst: tmp, src: src}
        - copy: {dst: out, src: tmp}
    between:
      - free: {buffer: tmp}
    expect: {guarded: refused}
`

var _ = Describe("a replay the device faults after its launch returned", func() {
	p := parseProbe(replayOverFreed)

	It("is the launch's rejection, reported by the round's synchronisation, as the launch's own would be", func() {
		sync := openSim("cuda")
		DeferCleanup(sync.Close)
		want := runOn(sync, p, device.Global, 3)
		Expect(want.Outcome).To(Equal(probes.Rejected), want.Reason)

		dev := &gpuFaults{Device: openSim("cuda"), sticky: true}
		DeferCleanup(dev.Close)
		res := runOn(dev, p, device.Global, 3)
		Expect(res.Outcome).To(Equal(probes.Rejected), res.Reason)
		Expect(res.Rejection).To(PointTo(MatchFields(IgnoreExtras, Fields{
			"Step": Equal(probes.LaunchStep(1, "main")), "Op": Equal("SyncDevice"),
			"Code": Equal(want.Rejection.Code), "Class": Equal(want.Rejection.Class),
			"Asynchronous": BeTrue(), "Sticky": BeTrue(),
		})))
		Expect(res.Reason).To(SatisfyAll(ContainSubstring("reported by the synchronisation after the launch"),
			ContainSubstring("sticky"), ContainSubstring("graph main reads and writes tmp")))
		Expect(res.Stale).To(ConsistOf(SatisfyAll(HaveField("Buffer", "tmp"), HaveField("Ran", BeFalse()))),
			"the faulted launch did not run over tmp as the probe meant")
		Expect(res.Rounds).To(BeZero(), "no round was verified")
		// Sticky: the device runs nothing more, as if lost; teardown makes no call.
		Expect(res.DeviceState).To(Equal(capture.DeviceLost))
		Expect(res.Timeline.Events()).To(ContainElement(HaveField("Skipped", ContainSubstring("the device is lost"))))
		Expect(res.Error).To(BeNil())
	})

	It("leaves a device whose fault was not sticky in use: teardown runs and nothing leaks", func() {
		dev := &gpuFaults{Device: openSim("cuda")}
		DeferCleanup(dev.Close)
		res := runOn(dev, p, device.Global, 3)
		Expect(res.Outcome).To(Equal(probes.Rejected), res.Reason)
		Expect(res.Rejection.Asynchronous).To(BeTrue())
		Expect(res.Rejection.Sticky).To(BeFalse())
		Expect(res.DeviceState).To(BeEmpty())
		Expect(res.Leaks).To(BeEmpty())
	})

	It("stays a setup error when no launch of the round took: nothing to charge it to", func() {
		// The guards refuse the launch over freed memory, so the round launched nothing; a sync
		// failure then is the device's, not a replay's.
		dev := &gpuFaults{Device: openSim("cuda"), sticky: true, pending: &device.Error{Backend: "cuda", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Class: device.ClassIllegalAddress, Sticky: true}}
		DeferCleanup(dev.Close)
		res := runInstance(dev, p, device.Global, true, 3)
		Expect(res.Outcome).To(Equal(probes.Errored), res.Reason)
	})
})
