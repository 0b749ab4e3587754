package guard_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/replaycheck/replaycheck/runtime"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

var _ = Describe("Capture watch", func() {
	var (
		f            *fake
		d            *guard.Device
		origin, side device.Stream
		x, y         device.Ptr
	)

	BeforeEach(func() {
		f = newFake()
		d = guarded(f, guard.Kernel)
		origin, side = stream(d), stream(d)
		x, y = malloc(d, 1024), malloc(d, 1024)
		Expect(d.BeginCapture(device.Main, origin, device.Global)).To(Succeed())
	})

	It("refuses malloc and free during the capture, and allows them after it", func() {
		before := f.Counters()
		_, err := d.Malloc(device.Main, 512)
		e := expectRefused(err, "Malloc")
		Expect(e.Detail).To(ContainSubstring("capture"))
		expectRefused(d.Free(device.Main, x), "Free")
		_, err = d.Malloc(device.Other, 512)
		expectRefused(err, "Malloc")
		Expect(f.Counters()).To(Equal(before))
		Expect(f.MallocCalls()).To(Equal(2))

		_, err = d.EndCapture(device.Main, origin)
		Expect(err).NotTo(HaveOccurred())
		malloc(d, 512)
		Expect(d.Free(device.Main, x)).To(Succeed())
	})

	It("refuses slot calls that would reach the allocator, and serves in place ones", func() {
		_, _, err := d.Provision(device.Main, runtime.Plain, "fresh", device.Ptr{}, 512)
		expectRefused(err, "Provision")
		_, err = d.CommitBank(device.Main, []runtime.Region{{Key: "kv", Bytes: 512}})
		expectRefused(err, "CommitBank")
		expectRefused(d.Retire(device.Main), "Retire")
		_, err = d.CommitBank(device.Main, []runtime.Region{{Key: "kv", Bytes: 0}})
		Expect(err).NotTo(HaveOccurred(), "a zero request calls no allocator")
		Expect(f.MallocCalls()).To(Equal(2))
	})

	It("refuses every op enqueued on a stream outside the capture, with no effect", func() {
		write(d, x, 0x11)
		e := event(d)
		expectRefused(d.Fill(device.Main, side, x, 0xFF), "Fill")
		expectRefused(d.Copy(device.Main, side, x, y), "Copy")
		expectRefused(d.Axpy(device.Main, side, x, y, 3), "Axpy")
		expectRefused(d.Record(device.Main, e, side), "Record")
		refusal := expectRefused(d.Wait(device.Main, side, e), "Wait")
		Expect(refusal.Detail).To(ContainSubstring(side.String()))
		Expect(read(d, x)).To(Equal(filled(x, 0x11)))
		info, err := d.CaptureInfo(device.Main, side)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Status).To(Equal(device.CaptureNone), "the refused Wait forked nothing")
	})

	It("allows the Wait that forks a stream into the capture, and what the fork then enqueues", func() {
		fork, join := event(d), event(d)
		Expect(d.Record(device.Main, fork, origin)).To(Succeed())
		Expect(d.Wait(device.Main, side, fork)).To(Succeed())
		Expect(d.Fill(device.Main, side, y, 0x22)).To(Succeed())
		Expect(d.Record(device.Main, join, side)).To(Succeed())
		Expect(d.Wait(device.Main, origin, join)).To(Succeed())
		Expect(d.Fill(device.Main, origin, x, 0x33)).To(Succeed())
		g, err := d.EndCapture(device.Main, origin)
		Expect(err).NotTo(HaveOccurred())

		Expect(d.Launch(device.Main, g, origin)).To(Succeed())
		Expect(read(d, x)).To(Equal(filled(x, 0x33)))
		Expect(read(d, y)).To(Equal(filled(y, 0x22)), "the forked stream's work replays")
	})

	It("does not treat an event recorded before the capture as a fork", func() {
		_, err := d.EndCapture(device.Main, origin)
		Expect(err).NotTo(HaveOccurred())
		early := event(d)
		Expect(d.Record(device.Main, early, origin)).To(Succeed())
		Expect(d.BeginCapture(device.Main, origin, device.Global)).To(Succeed())
		expectRefused(d.Wait(device.Main, side, early), "Wait")
	})

	It("keeps watching after an EndCapture that fails and leaves the capture active", func() {
		fork := event(d)
		Expect(d.Record(device.Main, fork, origin)).To(Succeed())
		Expect(d.Wait(device.Main, side, fork)).To(Succeed())
		_, err := d.EndCapture(device.Main, side)
		expectClass(err, device.ClassCaptureUnmatched, "EndCapture")
		_, err = d.Malloc(device.Main, 512)
		expectRefused(err, "Malloc")
		_, err = d.EndCapture(device.Main, origin)
		Expect(err).NotTo(HaveOccurred())
		malloc(d, 512)
	})

	It("fails closed when the platform cannot say which streams are capturing", func() {
		f.Blind(true)
		e := expectRefused(d.Fill(device.Main, origin, x, 1), "Fill")
		Expect(e.Detail).To(ContainSubstring("cannot be established"))
		f.Blind(false)
		Expect(d.Fill(device.Main, origin, x, 1)).To(Succeed())
	})

	It("keeps watching, and ends cleanly, a capture whose ID it could not learn", func() {
		_, err := d.EndCapture(device.Main, origin)
		Expect(err).NotTo(HaveOccurred())
		f.Blind(true)
		Expect(d.BeginCapture(device.Main, origin, device.Global)).To(Succeed())
		f.Blind(false)
		expectRefused(d.Fill(device.Main, origin, x, 1), "Fill")
		_, err = d.Malloc(device.Main, 512)
		expectRefused(err, "Malloc")
		_, err = d.EndCapture(device.Main, origin)
		Expect(err).NotTo(HaveOccurred())
		malloc(d, 512)
	})

	It("lets everything through in program mode", func() {
		p := guarded(newFake(), guard.Program)
		s, other := stream(p), stream(p)
		buf := malloc(p, 512)
		Expect(p.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		extra := malloc(p, 512)
		Expect(p.Fill(device.Main, other, buf, 1)).To(Succeed())
		Expect(p.Free(device.Main, extra)).To(Succeed())
	})
})

var _ = Describe("Stream work in program mode", func() {
	It("asks the platform nothing about capture state, where kernel mode asks once per op", func() {
		asked := func(mode guard.Mode) int {
			f := newFake()
			d := guarded(f, mode)
			origin := stream(d)
			x, y := malloc(d, 1024), malloc(d, 1024)
			Expect(d.BeginCapture(device.Main, origin, device.Global)).To(Succeed())
			before := f.InfoCalls()
			Expect(d.Fill(device.Main, origin, x, 1)).To(Succeed())
			Expect(d.Copy(device.Main, origin, y, x)).To(Succeed())
			Expect(d.Axpy(device.Main, origin, y, x, 2)).To(Succeed())
			n := f.InfoCalls() - before
			_, err := d.EndCapture(device.Main, origin)
			Expect(err).NotTo(HaveOccurred())
			return n
		}
		// Program mode keeps no ranges (nothing reads them), so a capture of 100,000 ops costs no
		// capture-state question per op; kernel mode needs each answer for the watch.
		Expect(asked(guard.Program)).To(BeZero())
		Expect(asked(guard.Kernel)).To(Equal(3))
	})
})
