package sim_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

var _ = Describe("counters", func() {
	It("count every live object exactly and show leaks against a baseline", func() {
		d := onProfile("cann")
		base := d.Counters()
		Expect(base).To(Equal(device.Counters{}))

		a := malloc(d, 1000)
		b := malloc(d, 24)
		s, t := newStream(d), newStream(d)
		e := newEvent(d)
		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		Expect(d.Fill(main, s, a, 1)).To(Succeed())
		g, err := d.EndCapture(main, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Launch(main, g, t)).To(Succeed())
		Expect(d.Launch(main, g, s)).To(Succeed())
		Expect(d.Free(main, b)).To(Succeed())
		_, err = d.Malloc(main, 0) // failed calls count nothing
		Expect(err).To(HaveOccurred())

		c := d.Counters()
		Expect(c).To(Equal(device.Counters{
			Mallocs: 2, Frees: 1, LiveAllocs: 1, LiveBytes: 1000,
			LiveStreams: 2, LiveEvents: 1, LiveGraphs: 1, Launches: 2, CapturesDone: 1,
		}))
		Expect(c.Leaks(base)).To(ConsistOf(
			"allocations: 1 live, 0 before", "streams: 2 live, 0 before",
			"events: 1 live, 0 before", "graphs: 1 live, 0 before"))

		Expect(d.DestroyGraph(main, g)).To(Succeed())
		Expect(d.DestroyEvent(main, e)).To(Succeed())
		Expect(d.DestroyStream(main, s)).To(Succeed())
		Expect(d.DestroyStream(other, t)).To(Succeed())
		Expect(d.Free(other, a)).To(Succeed())
		Expect(d.Counters().Leaks(base)).To(BeEmpty())
	})

	It("are all zero live after Close, which releases everything and stops the device", func() {
		d := onProfile("cuda")
		p := malloc(d, 64*KiB)
		write(d, p, filled(p.Bytes, 1))
		s := newStream(d)
		newEvent(d)
		Expect(d.BeginCapture(main, s, device.Relaxed)).To(Succeed()) // left open on purpose
		Expect(d.ResidentBytes()).To(BeNumerically(">", 0))

		Expect(d.Close()).To(Succeed())
		c := d.Counters()
		Expect(c.Leaks(device.Counters{})).To(BeEmpty())
		Expect(c.LiveBytes).To(BeZero())
		Expect(c.Mallocs).To(Equal(int64(1)), "history is kept")
		Expect(d.ResidentBytes()).To(BeZero())

		_, err := d.Malloc(main, 512)
		e := expectError(err, 1, device.ClassInvalidValue)
		Expect(e.Detail).To(ContainSubstring("closed"))
		Expect(d.Close()).To(Succeed(), "closing twice is harmless")
	})

	It("count only captures that ended with a graph", func() {
		d := openDevice(sim.Options{Profile: "cuda"})
		s := newStream(d)
		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		Expect(d.SyncStream(main, s)).NotTo(Succeed())
		_, err := d.EndCapture(main, s)
		Expect(err).To(HaveOccurred())
		Expect(d.Counters().CapturesDone).To(BeZero())
		Expect(d.Counters().LiveGraphs).To(BeZero())
	})
})
