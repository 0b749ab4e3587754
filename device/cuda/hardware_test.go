//go:build cgo

package cuda_test

import (
	"errors"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
)

// With REPLAYCHECK_HARDWARE=cuda: what the driver answers where the conformance suite leaves the
// platform a choice, asserted as measured on an H200 (driver 13.0), so that a driver that answers
// otherwise shows up in make device-check.
var _ = onHardware && Describe("the hardware's answers", Label("hardware"), func() {
	var d device.Device
	BeforeEach(func(ctx SpecContext) {
		var err error
		d, err = suite.Hardware.Open(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(d.Close)
	})
	stream := func() device.Stream {
		GinkgoHelper()
		s, err := d.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		return s
	}

	for _, mode := range []device.CaptureMode{device.Global, device.ThreadLocal} {
		It("ends a capture while another "+mode.String()+" capture of the thread is open: the graph's instantiation is refused and the open capture invalidated", func() {
			x, err := d.Malloc(device.Main, 4096)
			Expect(err).NotTo(HaveOccurred())
			s1, s2 := stream(), stream()
			Expect(d.BeginCapture(device.Main, s1, mode)).To(Succeed())
			Expect(d.Fill(device.Main, s1, x, 1)).To(Succeed())
			Expect(d.BeginCapture(device.Main, s2, mode)).To(Succeed())
			Expect(d.Fill(device.Main, s2, x, 2)).To(Succeed())
			g, err := d.EndCapture(device.Main, s1)
			Expect(device.ClassOf(err)).To(Equal(device.ClassCaptureUnsupported), "%v", err)
			Expect(g).To(BeZero())
			i1, err := d.CaptureInfo(device.Main, s1)
			Expect(err).NotTo(HaveOccurred())
			Expect(i1.Status).To(Equal(device.CaptureNone), "the first capture ended")
			i2, err := d.CaptureInfo(device.Main, s2)
			Expect(err).NotTo(HaveOccurred())
			Expect(i2.Status).To(Equal(device.CaptureInvalidated), "the capture still open")
			_, err = d.EndCapture(device.Main, s2)
			Expect(device.ClassOf(err)).To(Equal(device.ClassCaptureInvalidated), "%v", err)
		})
	}

	It("lets the other thread end its capture while this thread's relaxed capture is open", func() {
		x, err := d.Malloc(device.Main, 4096)
		Expect(err).NotTo(HaveOccurred())
		s1, s2 := stream(), stream()
		Expect(d.BeginCapture(device.Other, s1, device.Global)).To(Succeed())
		Expect(d.Fill(device.Other, s1, x, 1)).To(Succeed())
		Expect(d.BeginCapture(device.Main, s2, device.Relaxed)).To(Succeed())
		Expect(d.Fill(device.Main, s2, x, 2)).To(Succeed())
		g1, err := d.EndCapture(device.Other, s1)
		Expect(err).NotTo(HaveOccurred())
		g2, err := d.EndCapture(device.Main, s2)
		Expect(err).NotTo(HaveOccurred())
		Expect(errors.Join(d.DestroyGraph(device.Main, g1), d.DestroyGraph(device.Main, g2))).To(Succeed())
	})

	It("answers cuMemAllocHost and cuMemFreeHost in a capture as the profile's measured rows: 900 and the capture invalidated where the capture minds the caller", func() {
		for _, alloc := range []bool{true, false} {
			for _, mode := range device.CaptureModes() {
				for _, t := range []device.Thread{device.Main, device.Other} {
					at := fmt.Sprintf("alloc %v, %v capture, by %v", alloc, mode, t)
					x, err := d.Malloc(device.Main, 4096)
					Expect(err).NotTo(HaveOccurred())
					h, err := d.AllocHost(device.Main, 4096, device.Pinned)
					Expect(err).NotTo(HaveOccurred())
					s := stream()
					Expect(d.BeginCapture(device.Main, s, mode)).To(Succeed())
					Expect(d.Fill(device.Main, s, x, 1)).To(Succeed())
					var got device.Ptr
					if alloc {
						got, err = d.AllocHost(t, 4096, device.Pinned)
					} else {
						err = d.FreeHost(t, h)
					}
					info, ierr := d.CaptureInfo(device.Main, s)
					Expect(ierr).NotTo(HaveOccurred())
					g, end := d.EndCapture(device.Main, s)
					if mode == device.Global || (mode == device.ThreadLocal && t == device.Main) {
						Expect(device.ClassOf(err)).To(Equal(device.ClassCaptureUnsupported), "%s: %v", at, err)
						Expect(info.Status).To(Equal(device.CaptureInvalidated), at)
						Expect(device.ClassOf(end)).To(Equal(device.ClassCaptureInvalidated), "%s: %v", at, end)
					} else {
						Expect(err).NotTo(HaveOccurred(), at)
						Expect(info.Status).To(Equal(device.CaptureActive), at)
						Expect(end).NotTo(HaveOccurred(), at)
						Expect(d.DestroyGraph(device.Main, g)).To(Succeed())
					}
					if alloc && err == nil {
						Expect(d.FreeHost(device.Main, got)).To(Succeed())
					}
					if alloc || err != nil {
						Expect(d.FreeHost(device.Main, h)).To(Succeed())
					}
					Expect(d.Free(device.Main, x)).To(Succeed())
				}
			}
		}
	})

	It("refuses the end of a capture holding a fill of memory freed during it (1, no graph), and makes the graph once the memory is allocated again at its address", func() {
		for _, n := range []int64{4 << 10, 4 << 20} {
			for _, again := range []bool{false, true} {
				at := fmt.Sprintf("%d bytes, allocated again %v", n, again)
				s := stream()
				x, err := d.Malloc(device.Main, n)
				Expect(err).NotTo(HaveOccurred())
				Expect(d.BeginCapture(device.Main, s, device.Relaxed)).To(Succeed())
				Expect(d.Fill(device.Main, s, x, 1)).To(Succeed())
				Expect(d.Free(device.Main, x)).To(Succeed())
				var y device.Ptr
				if again {
					y, err = d.Malloc(device.Main, n)
					Expect(err).NotTo(HaveOccurred())
					if y.Addr != x.Addr {
						// Measured on the H200: the same address for both sizes. Another driver may
						// place it elsewhere, and the end is then refused as without it.
						fmt.Fprintf(GinkgoWriter, "%s: the driver handed out %v, not the freed address %v\n", at, y, x)
						_, err := d.EndCapture(device.Main, s)
						Expect(device.ClassOf(err)).To(Equal(device.ClassInvalidValue), "%s: %v", at, err)
						Expect(d.Free(device.Main, y)).To(Succeed())
						continue
					}
				}
				g, err := d.EndCapture(device.Main, s)
				info, ierr := d.CaptureInfo(device.Main, s)
				Expect(ierr).NotTo(HaveOccurred())
				Expect(info.Status).To(Equal(device.CaptureNone), at)
				if again {
					Expect(err).NotTo(HaveOccurred(), at)
					Expect(errors.Join(d.DestroyGraph(device.Main, g), d.Free(device.Main, y))).To(Succeed())
					continue
				}
				Expect(device.ClassOf(err)).To(Equal(device.ClassInvalidValue), "%s: %v", at, err)
				Expect(g).To(BeZero(), at)
			}
		}
	})
})
