package sim_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

func allocHost(d *sim.Device, n int64, kind device.HostMemory) device.Ptr {
	GinkgoHelper()
	p, err := d.AllocHost(main, n, kind)
	Expect(err).NotTo(HaveOccurred())
	return p
}

func hostRead(d *sim.Device, p device.Ptr) []byte {
	GinkgoHelper()
	out := make([]byte, p.Bytes)
	Expect(d.HostRead(out, p)).To(Succeed())
	return out
}

var _ = Describe("host memory", func() {
	var d *sim.Device
	BeforeEach(func() { d = onProfile("cann") })

	It("lives apart from device memory, is reused LIFO, and is counted", func() {
		dev := malloc(d, 4*KiB)
		h := allocHost(d, 4*KiB, device.Pinned)
		Expect(h.Overlaps(dev)).To(BeFalse())
		Expect(h.Addr).To(BeNumerically("<", dev.Addr), "host addresses sit below every device's")
		c := d.Counters()
		Expect(c.LiveHostAllocs).To(Equal(int64(1)))
		Expect(c.LiveAllocs).To(Equal(int64(1)), "host memory is not device memory")
		Expect(d.FreeHost(main, h)).To(Succeed())
		again := allocHost(d, 4*KiB, device.Pinned)
		Expect(again.Addr).To(Equal(h.Addr), "a freed host block of the same size and kind is handed out again")
		Expect(d.FreeHost(main, again)).To(Succeed())
		expectError(d.FreeHost(main, again), 107000, device.ClassInvalidValue)
		expectError(d.FreeHost(main, dev), 107000, device.ClassInvalidValue)
	})

	It("keeps pinned and pageable blocks apart: two allocators, whose caches never hand out each other's blocks", func() {
		pinned := allocHost(d, 4*KiB, device.Pinned)
		pageable := allocHost(d, 4*KiB, device.Pageable)
		Expect(d.FreeHost(main, pinned)).To(Succeed())
		Expect(d.FreeHost(main, pageable)).To(Succeed())
		p2 := allocHost(d, 4*KiB, device.Pinned)
		Expect(p2.Addr).To(Equal(pinned.Addr), "not the pageable block freed after it")
		g2 := allocHost(d, 4*KiB, device.Pageable)
		Expect(g2.Addr).To(Equal(pageable.Addr))
		Expect(d.FreeHost(main, g2)).To(Succeed())
		bigger := allocHost(d, 2*KiB, device.Pinned)
		Expect(bigger.Overlaps(g2)).To(BeFalse(), "nor a larger cached block of the other kind")
	})

	It("is the CPU's to write and read, with no driver call, even during a global capture", func() {
		h := allocHost(d, 1*KiB, device.Pageable)
		s := newStream(d)
		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		Expect(d.HostWrite(h, filled(h.Bytes, 0x5A))).To(Succeed())
		Expect(hostRead(d, h)).To(Equal(filled(h.Bytes, 0x5A)))
		_, err := d.EndCapture(main, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.HostWrite(h.Slice(0, 2*KiB), make([]byte, 2*KiB))).NotTo(Succeed(), "beyond the allocation")
		dev := malloc(d, 1*KiB)
		Expect(d.HostWrite(dev, make([]byte, dev.Bytes))).NotTo(Succeed(), "device memory is not the CPU's")
	})

	It("is copied to and from the device by a stream, never host to host, and never memset", func() {
		h := allocHost(d, 1*KiB, device.Pinned)
		h2 := allocHost(d, 1*KiB, device.Pinned)
		dev := malloc(d, 1*KiB)
		s := newStream(d)
		Expect(d.HostWrite(h, filled(h.Bytes, 3))).To(Succeed())
		Expect(d.Copy(main, s, dev, h)).To(Succeed())
		Expect(read(d, dev)).To(Equal(filled(dev.Bytes, 3)))
		Expect(d.Fill(main, s, dev, 9)).To(Succeed())
		Expect(d.Copy(main, s, h2, dev)).To(Succeed())
		Expect(hostRead(d, h2)).To(Equal(filled(h2.Bytes, 9)))
		expectError(d.Copy(main, s, h2, h), 107000, device.ClassInvalidValue)
		expectError(d.Fill(main, s, h, 1), 107000, device.ClassInvalidValue)
		expectError(d.Write(main, h, make([]byte, h.Bytes)), 107000, device.ClassInvalidValue)
	})

	It("is read again by every replay of a captured host-to-device copy, at the captured address", func() {
		stage := allocHost(d, 1*KiB, device.Pinned)
		dev := malloc(d, 1*KiB)
		s := newStream(d)
		Expect(d.HostWrite(stage, filled(stage.Bytes, 1))).To(Succeed())
		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		Expect(d.Copy(main, s, dev, stage)).To(Succeed())
		g, err := d.EndCapture(main, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(read(d, dev)).To(Equal(filled(dev.Bytes, 0)), "captured, not run")
		Expect(d.HostWrite(stage, filled(stage.Bytes, 2))).To(Succeed())
		Expect(d.Launch(main, g, s)).To(Succeed())
		Expect(read(d, dev)).To(Equal(filled(dev.Bytes, 2)), "the replay reads what the staging buffer holds now")
		nodes, err := d.GraphNodes(main, g)
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes).To(ConsistOf(HaveField("Reads", ConsistOf(stage))))
	})
})

var _ = Describe("graph launches on different streams", func() {
	// Each graph fills a shared scratch buffer, then copies it into its own output: run one after
	// the other each output gets its own value; run concurrently the second fill lands between the
	// first graph's fill and its copy.
	var (
		d                   *sim.Device
		scratch, out1, out2 device.Ptr
		s1, s2              device.Stream
		g1, g2              device.Graph
	)
	capture := func(s device.Stream, value byte, out device.Ptr) device.Graph {
		GinkgoHelper()
		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		Expect(d.Fill(main, s, scratch, value)).To(Succeed())
		Expect(d.Copy(main, s, out, scratch)).To(Succeed())
		g, err := d.EndCapture(main, s)
		Expect(err).NotTo(HaveOccurred())
		return g
	}
	BeforeEach(func() {
		d = onProfile("cuda")
		scratch, out1, out2 = malloc(d, 1*KiB), malloc(d, 1*KiB), malloc(d, 1*KiB)
		s1, s2 = newStream(d), newStream(d)
		g1, g2 = capture(s1, 0x11, out1), capture(s2, 0x22, out2)
	})

	It("run concurrently when nothing orders them: their nodes interleave", func() {
		Expect(d.Launch(main, g1, s1)).To(Succeed())
		Expect(d.Launch(main, g2, s2)).To(Succeed())
		Expect(d.SyncDevice(main)).To(Succeed())
		Expect(read(d, out1)).To(Equal(filled(out1.Bytes, 0x22)), "graph 1 copied graph 2's scratch")
		Expect(read(d, out2)).To(Equal(filled(out2.Bytes, 0x22)))
	})

	It("run one after the other on one stream", func() {
		Expect(d.Launch(main, g1, s1)).To(Succeed())
		Expect(d.Launch(main, g2, s1)).To(Succeed())
		Expect(read(d, out1)).To(Equal(filled(out1.Bytes, 0x11)))
		Expect(read(d, out2)).To(Equal(filled(out2.Bytes, 0x22)))
	})

	It("are ordered by an event recorded after the first and waited before the second", func() {
		e := newEvent(d)
		Expect(d.Launch(main, g1, s1)).To(Succeed())
		Expect(d.Record(main, e, s1)).To(Succeed())
		Expect(d.Wait(main, s2, e)).To(Succeed())
		Expect(d.Launch(main, g2, s2)).To(Succeed())
		Expect(read(d, out1)).To(Equal(filled(out1.Bytes, 0x11)))
		Expect(read(d, out2)).To(Equal(filled(out2.Bytes, 0x22)))
	})
})

var _ = Describe("capture interaction modes of threads", func() {
	It("start global, and an exchange returns the mode it replaces", func() {
		d := onProfile("cuda")
		old, err := d.ExchangeCaptureMode(other, device.Relaxed)
		Expect(err).NotTo(HaveOccurred())
		Expect(old).To(Equal(device.Global))
		old, err = d.ExchangeCaptureMode(other, device.Global)
		Expect(err).NotTo(HaveOccurred())
		Expect(old).To(Equal(device.Relaxed))
		_, err = d.ExchangeCaptureMode(main, device.CaptureMode(7))
		expectError(err, 1, device.ClassInvalidValue)
	})

	It("let a relaxed thread allocate during another thread's global capture (cuda)", func() {
		d := onProfile("cuda")
		s := newStream(d)
		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		_, err := d.Malloc(other, 4*KiB)
		expectError(err, 900, device.ClassCaptureUnsupported)
		Expect(d.EndCapture(main, s)).Error().To(HaveOccurred(), "the 900 invalidated the capture")

		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		_, err = d.ExchangeCaptureMode(other, device.Relaxed)
		Expect(err).NotTo(HaveOccurred())
		_, err = d.Malloc(other, 4*KiB)
		Expect(err).NotTo(HaveOccurred(), "a relaxed thread's unsafe call is allowed")
		_, err = d.EndCapture(main, s)
		Expect(err).NotTo(HaveOccurred())
	})
})
