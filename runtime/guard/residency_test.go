package guard_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/replaycheck/replaycheck/runtime"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

var _ = Describe("Residency check", func() {
	var (
		f *fake
		d *guard.Device
		s device.Stream
	)

	BeforeEach(func() {
		f = newFake()
		d = guarded(f, guard.Kernel)
		s = stream(d)
	})

	It("launches an untouched graph, every time", func() {
		x := malloc(d, 1024)
		y, _, err := d.Provision(device.Main, runtime.Retained, "y", device.Ptr{}, 1024)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		Expect(d.Fill(device.Main, s, x, 2)).To(Succeed())
		Expect(d.Axpy(device.Main, s, y, x, 1)).To(Succeed())
		Expect(d.Copy(device.Main, s, x, y)).To(Succeed())
		g, err := d.EndCapture(device.Main, s)
		Expect(err).NotTo(HaveOccurred())
		for range 5 {
			Expect(d.Launch(device.Main, g, s)).To(Succeed())
		}
		Expect(f.Counters().Launches).To(Equal(int64(5)))
	})

	It("refuses the replay after a plain buffer was re-based", func() {
		x, _, err := d.Provision(device.Main, runtime.Plain, "x", device.Ptr{}, 1024)
		Expect(err).NotTo(HaveOccurred())
		g := captureFill(d, s, x, 0xAB)
		grown, served, err := d.Provision(device.Main, runtime.Plain, "x", x, 2048)
		Expect(err).NotTo(HaveOccurred())
		Expect(served).To(Equal(runtime.Rebased))
		// A bystander of the old size lands on the address the graph still holds.
		bystander := malloc(d, 1024)
		Expect(bystander.Addr).To(Equal(x.Addr))
		write(d, bystander, 0)
		write(d, grown, 0)

		e := expectRefused(d.Launch(device.Main, g, s), "Launch")
		Expect(e.Detail).To(And(ContainSubstring(x.String()), ContainSubstring("generation 1 at capture"), ContainSubstring("generation 3")))
		Expect(f.Counters().Launches).To(BeZero())
		Expect(read(d, bystander)).To(Equal(filled(bystander, 0)), "the refused replay wrote nothing")
	})

	It("refuses the replay after a same-size free and re-allocation at the same address", func() {
		x := malloc(d, 1024)
		g := captureFill(d, s, x, 0xAB)
		Expect(d.Free(device.Main, x)).To(Succeed())
		again := malloc(d, 1024)
		Expect(again).To(Equal(x), "the pointer is equal")

		e := expectRefused(d.Launch(device.Main, g, s), "Launch")
		Expect(e.Detail).To(ContainSubstring("same address, different allocation"))
	})

	It("refuses the replay of a graph whose buffer was freed", func() {
		x := malloc(d, 1024)
		g := captureFill(d, s, x, 1)
		Expect(d.Free(device.Main, x)).To(Succeed())
		e := expectRefused(d.Launch(device.Main, g, s), "Launch")
		Expect(e.Detail).To(ContainSubstring("freed"))
	})

	It("names the slot that holds a stale range now", func() {
		x := malloc(d, 1024)
		g := captureFill(d, s, x, 1)
		Expect(d.Free(device.Main, x)).To(Succeed())
		_, _, err := d.Provision(device.Main, runtime.Retained, "w", device.Ptr{}, 1024)
		Expect(err).NotTo(HaveOccurred())
		e := expectRefused(d.Launch(device.Main, g, s), "Launch")
		Expect(e.Detail).To(ContainSubstring(`retained slot "w"`))
	})

	It("refuses a graph it did not see captured", func() {
		x := malloc(d, 1024)
		g := captureFill(f, s, x, 1) // straight on the inner device
		e := expectRefused(d.Launch(device.Main, g, s), "Launch")
		Expect(e.Detail).To(ContainSubstring("not captured through this guard"))
	})

	It("refuses a captured range that lay in no allocation made through the guard", func() {
		outside := malloc(f, 1024)
		g := captureFill(d, s, outside, 1)
		e := expectRefused(d.Launch(device.Main, g, s), "Launch")
		Expect(e.Detail).To(ContainSubstring("cannot vouch"))
	})

	It("carries a graph's ranges into a capture that launches it", func() {
		x := malloc(d, 1024)
		inner := captureFill(d, s, x, 1)
		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		Expect(d.Launch(device.Main, inner, s)).To(Succeed())
		outer, err := d.EndCapture(device.Main, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Free(device.Main, x)).To(Succeed())
		expectRefused(d.Launch(device.Main, outer, s), "Launch")
	})

	It("lets every replay through in program mode", func() {
		p := guarded(f, guard.Program)
		x := malloc(p, 1024)
		g := captureFill(p, s, x, 1)
		Expect(p.Free(device.Main, x)).To(Succeed())
		malloc(p, 1024)
		Expect(p.Launch(device.Main, g, s)).To(Succeed())
	})
})
