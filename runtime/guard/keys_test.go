package guard_test

import (
	"context"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// noIDs wraps a device whose CaptureInfo cannot name a capture: while fail is set it fails, as a
// platform that cannot answer does; while zero is set it answers with capture ID 0, as a platform
// without numeric capture IDs (ACL's model handles) might.
type noIDs struct {
	device.Device
	fail, zero atomic.Bool
}

func (n *noIDs) CaptureInfo(t device.Thread, s device.Stream) (device.CaptureInfo, error) {
	if n.fail.Load() {
		return device.CaptureInfo{}, &device.Error{Backend: "noids", Op: "CaptureInfo", Class: device.ClassNotSupported, Detail: "no capture info"}
	}
	info, err := n.Device.CaptureInfo(t, s)
	if n.zero.Load() {
		info.ID = 0
	}
	return info, err
}

func openSim(profile string) *sim.Device {
	GinkgoHelper()
	b, err := sim.New(sim.Options{Profile: profile})
	Expect(err).NotTo(HaveOccurred())
	dev, err := b.Open(context.Background(), 0)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(dev.Close)
	return dev.(*sim.Device)
}

func capturing(d device.Device, s device.Stream) bool {
	GinkgoHelper()
	info, err := d.CaptureInfo(device.Main, s)
	Expect(err).NotTo(HaveOccurred())
	return info.Status != device.CaptureNone
}

var _ = Describe("Captures the platform reports no ID for", func() {
	for _, profile := range []string{"cann", "cuda"} {
		for _, how := range []string{"CaptureInfo fails", "CaptureInfo reports ID 0"} {
			Context("profile "+profile+", "+how, func() {
				var (
					inner *sim.Device
					w     *noIDs
					d     *guard.Device
					a, b  device.Stream
					x     device.Ptr
				)

				BeforeEach(func() {
					inner = openSim(profile)
					w = &noIDs{Device: inner}
					if how == "CaptureInfo fails" {
						w.fail.Store(true)
					} else {
						w.zero.Store(true)
					}
					d = guarded(w, guard.Kernel)
					a, b = stream(d), stream(d)
					x = malloc(d, 1024)
					// Relaxed: on CUDA, ending one of two Global or ThreadLocal captures of a thread
					// fails, its graph's instantiation refused (measured on an H200).
					Expect(d.BeginCapture(device.Main, a, device.Relaxed)).To(Succeed())
					Expect(d.BeginCapture(device.Main, b, device.Relaxed)).To(Succeed())
				})

				It("watches both, and ending one leaves the other watched", func() {
					_, err := d.Malloc(device.Main, 512)
					e := expectRefused(err, "Malloc")
					Expect(e.Detail).To(And(ContainSubstring("origin "+a.String()), ContainSubstring("origin "+b.String())))

					_, err = d.EndCapture(device.Main, b)
					Expect(err).NotTo(HaveOccurred())
					Expect(capturing(inner, a)).To(BeTrue(), "the platform still captures on a")
					before := inner.Counters()
					_, err = d.Malloc(device.Main, 512)
					e = expectRefused(err, "Malloc")
					Expect(e.Detail).To(And(ContainSubstring("origin "+a.String()), Not(ContainSubstring("origin "+b.String()))))
					expectRefused(d.Free(device.Main, x), "Free")
					Expect(inner.Counters()).To(Equal(before))

					_, err = d.EndCapture(device.Main, a)
					Expect(err).NotTo(HaveOccurred())
					malloc(d, 512)
					Expect(d.Free(device.Main, x)).To(Succeed())
				})

				It("ends them in either order", func() {
					_, err := d.EndCapture(device.Main, a)
					Expect(err).NotTo(HaveOccurred())
					_, err = d.Malloc(device.Main, 512)
					e := expectRefused(err, "Malloc")
					Expect(e.Detail).To(ContainSubstring("origin " + b.String()))
					_, err = d.EndCapture(device.Main, b)
					Expect(err).NotTo(HaveOccurred())
					malloc(d, 512)
				})

				It("refuses destroying the origin of one, with no side effect", func() {
					before := inner.Counters()
					e := expectRefused(d.DestroyStream(device.Main, a), "DestroyStream")
					Expect(e.Detail).To(ContainSubstring("origin " + a.String()))
					Expect(inner.Counters()).To(Equal(before))
					Expect(capturing(inner, a)).To(BeTrue())
					captures, _ := d.Watched()
					Expect(captures).To(HaveLen(2))
				})
			})
		}

		It("profile "+profile+": keeps an ID-less capture watched exactly while a failed end leaves it active", func() {
			inner := openSim(profile)
			w := &noIDs{Device: inner}
			d := guarded(w, guard.Kernel)
			s := stream(d)
			w.fail.Store(true)
			Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
			w.fail.Store(false) // the platform answers again, with an ID the guard never learnt
			_, err := d.EndCapture(device.Other, s)
			expectClass(err, device.ClassWrongThread, "EndCapture")
			_, err = d.Malloc(device.Main, 512)
			if capturing(inner, s) {
				expectRefused(err, "Malloc")
			} else {
				Expect(err).NotTo(HaveOccurred(), "the failed end ended the capture on this platform")
			}
		})
	}

	It("refuses a DestroyStream whose membership it cannot establish", func() {
		inner := openSim("cann")
		w := &noIDs{Device: inner}
		w.fail.Store(true)
		d := guarded(w, guard.Kernel)
		s, other := stream(d), stream(d)
		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		e := expectRefused(d.DestroyStream(device.Main, other), "DestroyStream")
		Expect(e.Detail).To(ContainSubstring("cannot be established"))
		Expect(inner.Counters().LiveStreams).To(Equal(int64(2)))
	})
})

var _ = Describe("DestroyStream during a capture", func() {
	for _, profile := range []string{"cann", "cuda"} {
		Context("profile "+profile, func() {
			var inner *sim.Device

			BeforeEach(func() { inner = openSim(profile) })

			It("kernel mode: destroying the origin is refused with no side effect, and the capture ends cleanly", func() {
				d := guarded(inner, guard.Kernel)
				s, other := stream(d), stream(d)
				x := malloc(d, 1024)
				write(d, x, 0)
				Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
				Expect(d.Fill(device.Main, s, x, 0x5A)).To(Succeed())
				before := inner.Counters()
				e := expectRefused(d.DestroyStream(device.Main, s), "DestroyStream")
				Expect(e.Detail).To(And(ContainSubstring("capture #1"), ContainSubstring(s.String())))
				Expect(inner.Counters()).To(Equal(before))
				Expect(capturing(inner, s)).To(BeTrue(), "the capture goes on")

				g, err := d.EndCapture(device.Main, s)
				Expect(err).NotTo(HaveOccurred())
				Expect(d.DestroyStream(device.Main, s)).To(Succeed())
				Expect(d.Launch(device.Main, g, other)).To(Succeed())
				Expect(d.SyncStream(device.Main, other)).To(Succeed())
				Expect(read(d, x)).To(Equal(filled(x, 0x5A)))
				Expect(d.Fill(device.Main, other, x, 1)).To(Succeed())
				Expect(d.Free(device.Main, malloc(d, 512))).To(Succeed())
				Expect(d.Retire(device.Main)).To(Succeed())
			})

			It("kernel mode: destroying a stream forked into the capture is refused; an unrelated one may go", func() {
				d := guarded(inner, guard.Kernel)
				origin, side, stray := stream(d), stream(d), stream(d)
				fork, join := event(d), event(d)
				Expect(d.BeginCapture(device.Main, origin, device.Global)).To(Succeed())
				Expect(d.Record(device.Main, fork, origin)).To(Succeed())
				Expect(d.Wait(device.Main, side, fork)).To(Succeed())
				e := expectRefused(d.DestroyStream(device.Main, side), "DestroyStream")
				Expect(e.Detail).To(And(ContainSubstring("capture #1"), ContainSubstring(side.String())))
				Expect(capturing(inner, side)).To(BeTrue())
				Expect(d.DestroyStream(device.Main, stray)).To(Succeed())

				Expect(d.Record(device.Main, join, side)).To(Succeed())
				Expect(d.Wait(device.Main, origin, join)).To(Succeed())
				_, err := d.EndCapture(device.Main, origin)
				Expect(err).NotTo(HaveOccurred())
				Expect(d.DestroyStream(device.Main, side)).To(Succeed())
				malloc(d, 512)
			})

			It("program mode: destroying the origin goes through and the capture is no longer watched", func() {
				d := guarded(inner, guard.Program)
				s, other := stream(d), stream(d)
				e := event(d)
				Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
				Expect(d.Record(device.Main, e, s)).To(Succeed())
				captures, forks := d.Watched()
				Expect(captures).To(HaveLen(1))
				Expect(forks).To(Equal(1))

				Expect(d.DestroyStream(device.Main, s)).To(Succeed())
				captures, forks = d.Watched()
				Expect(captures).To(BeEmpty())
				Expect(forks).To(BeZero(), "the event no longer forks into anything")
				Expect(capturing(inner, other)).To(BeFalse())
			})

			It("program mode: a capture the platform ends when a forked stream is destroyed is no longer watched", func() {
				d := guarded(inner, guard.Program)
				origin, side := stream(d), stream(d)
				fork := event(d)
				Expect(d.BeginCapture(device.Main, origin, device.Global)).To(Succeed())
				Expect(d.Record(device.Main, fork, origin)).To(Succeed())
				Expect(d.Wait(device.Main, side, fork)).To(Succeed())
				Expect(d.DestroyStream(device.Main, side)).To(Succeed())
				Expect(capturing(inner, origin)).To(BeFalse(), "the simulator ends a capture when one of its streams is destroyed")
				captures, forks := d.Watched()
				Expect(captures).To(BeEmpty())
				Expect(forks).To(BeZero())
			})

			It("kernel mode without the capture watch (negative control): the destroy goes through and is forgotten", func() {
				d := guarded(inner, guard.Kernel, guard.Disabled{CaptureWatch: true})
				s := stream(d)
				Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
				Expect(d.DestroyStream(device.Main, s)).To(Succeed())
				captures, _ := d.Watched()
				Expect(captures).To(BeEmpty())
			})
		})
	}
})
