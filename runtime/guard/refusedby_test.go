package guard_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// Each refusal names the guard that made it (runtime.RefusedBy), and only that one: with a guard
// removed, the hazard it covers reaches the next layer, whose refusal names itself. That is how a
// probe's expect.refused-by tells a regression in one layer from the layer behind it.
var _ = Describe("Who refused", func() {
	var f *fake
	BeforeEach(func() { f = newFake() })

	refusedBy := func(err error, op, guard string) {
		GinkgoHelper()
		expectRefused(err, op)
		Expect(runtime.RefusedBy(err)).To(Equal(guard), "%v", err)
	}
	// rebaseRetained captures a fill of a retained slot's buffer, grows the slot and allocates a
	// bystander where the old buffer was; it returns the growth's error and the graph.
	rebaseRetained := func(d *guard.Device, s device.Stream) (error, device.Graph) {
		GinkgoHelper()
		w, _, err := d.Provision(device.Main, runtime.Retained, "kv", device.Ptr{}, 1024)
		Expect(err).NotTo(HaveOccurred())
		g := captureFill(d, s, w, 0xAB)
		_, _, grow := d.Provision(device.Main, runtime.Retained, "kv", w, 2048)
		if grow == nil {
			malloc(d, 1024)
		}
		return grow, g
	}

	It("the retained slot names retained for a growth, a release and a free", func() {
		d := guarded(f, guard.Kernel)
		grow, _ := rebaseRetained(d, stream(d))
		refusedBy(grow, "Provision", runtime.GuardRetained)
		_, w, _ := d.Holds("kv")
		refusedBy(d.Release(device.Main, runtime.Retained, "kv", w), "Release", runtime.GuardRetained)
		refusedBy(d.Free(device.Main, w), "Free", runtime.GuardRetained)
	})

	It("without the retained slot, the re-based buffer's replay is refused by residency instead", func() {
		d := guarded(f, guard.Kernel, guard.Disabled{RetainedSlot: true})
		s := stream(d)
		grow, g := rebaseRetained(d, s)
		Expect(grow).NotTo(HaveOccurred())
		refusedBy(d.Launch(device.Main, g, s), "Launch", runtime.GuardResidency)
	})

	It("the arena names arena for a growth over capacity and a release", func() {
		d := guarded(f, guard.Kernel)
		ptrs, err := d.CommitBank(device.Main, []runtime.Region{{Key: "ws", Bytes: 4096}})
		Expect(err).NotTo(HaveOccurred())
		_, err = d.CommitBank(device.Main, []runtime.Region{{Key: "ws", Bytes: 4097}})
		refusedBy(err, "CommitBank", runtime.GuardArena)
		refusedBy(d.Release(device.Main, runtime.Arena, "ws", ptrs[0]), "Release", runtime.GuardArena)
	})

	It("the capture watch names capture-watch for an allocation, off-capture work and a captured stream's destruction", func() {
		d := guarded(f, guard.Kernel)
		origin, side := stream(d), stream(d)
		x := malloc(d, 1024)
		Expect(d.BeginCapture(device.Main, origin, device.Global)).To(Succeed())
		_, err := d.Malloc(device.Main, 512)
		refusedBy(err, "Malloc", runtime.GuardCaptureWatch)
		refusedBy(d.Fill(device.Main, side, x, 1), "Fill", runtime.GuardCaptureWatch)
		refusedBy(d.DestroyStream(device.Main, origin), "DestroyStream", runtime.GuardCaptureWatch)
	})

	It("without the capture watch, the allocation goes through and names nobody", func() {
		d := guarded(f, guard.Kernel, guard.Disabled{CaptureWatch: true})
		origin := stream(d)
		Expect(d.BeginCapture(device.Main, origin, device.Global)).To(Succeed())
		_, err := d.Malloc(device.Main, 512)
		Expect(err).NotTo(HaveOccurred())
		Expect(runtime.RefusedBy(err)).To(BeEmpty())
	})

	It("the residency check names residency for a same-address re-allocation", func() {
		d := guarded(f, guard.Kernel)
		s := stream(d)
		x := malloc(d, 1024)
		g := captureFill(d, s, x, 0xAB)
		Expect(d.Free(device.Main, x)).To(Succeed())
		malloc(d, 1024)
		refusedBy(d.Launch(device.Main, g, s), "Launch", runtime.GuardResidency)
	})

	It("replay isolation names isolation, and without it the racing launch goes through", func() {
		for _, off := range []bool{false, true} {
			d := guarded(openSim("cuda"), guard.Kernel, guard.Disabled{ReplayIsolation: off})
			x := malloc(d, 512)
			s1, s2 := stream(d), stream(d)
			g1, g2 := captureFill(d, s1, x, 1), captureFill(d, s2, x, 2)
			Expect(d.Launch(device.Main, g1, s1)).To(Succeed())
			err := d.Launch(device.Main, g2, s2)
			if off {
				Expect(err).NotTo(HaveOccurred())
			} else {
				refusedBy(err, "Launch", runtime.GuardIsolation)
			}
			Expect(d.SyncDevice(device.Main)).To(Succeed())
		}
	})

	It("names nothing for an error that is no refusal", func() {
		d := guarded(f, guard.Kernel)
		_, _, err := d.Provision(device.Main, runtime.Retained, "kv", device.Ptr{}, -1)
		Expect(err).To(HaveOccurred())
		Expect(runtime.RefusedBy(err)).To(BeEmpty())
	})
})
