package cuda_test

import (
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/runtime"
)

// With REPLAYCHECK_HARDWARE=cuda: what the driver answers where the conformance suite leaves the
// platform a choice, asserted as measured on an H200 (driver 13.0), so that a driver that answers
// otherwise shows up in make device-check.
var _ = onHardware && Describe("the hardware's answers", Label("hardware"), func() {
	var d runtime.Device
	BeforeEach(func(ctx SpecContext) {
		var err error
		d, err = hardware.Open(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(d.Close)
	})
	stream := func() runtime.Stream {
		GinkgoHelper()
		s, err := d.CreateStream(runtime.Main)
		Expect(err).NotTo(HaveOccurred())
		return s
	}

	for _, mode := range []runtime.CaptureMode{runtime.Global, runtime.ThreadLocal} {
		It("ends a capture while another "+mode.String()+" capture of the thread is open: the graph's instantiation is refused and the open capture invalidated", func() {
			x, err := d.Malloc(runtime.Main, 4096)
			Expect(err).NotTo(HaveOccurred())
			s1, s2 := stream(), stream()
			Expect(d.BeginCapture(runtime.Main, s1, mode)).To(Succeed())
			Expect(d.Fill(runtime.Main, s1, x, 1)).To(Succeed())
			Expect(d.BeginCapture(runtime.Main, s2, mode)).To(Succeed())
			Expect(d.Fill(runtime.Main, s2, x, 2)).To(Succeed())
			g, err := d.EndCapture(runtime.Main, s1)
			Expect(runtime.ClassOf(err)).To(Equal(runtime.ClassCaptureUnsupported), "%v", err)
			Expect(g).To(BeZero())
			i1, err := d.CaptureInfo(runtime.Main, s1)
			Expect(err).NotTo(HaveOccurred())
			Expect(i1.Status).To(Equal(runtime.CaptureNone), "the first capture ended")
			i2, err := d.CaptureInfo(runtime.Main, s2)
			Expect(err).NotTo(HaveOccurred())
			Expect(i2.Status).To(Equal(runtime.CaptureInvalidated), "the capture still open")
			_, err = d.EndCapture(runtime.Main, s2)
			Expect(runtime.ClassOf(err)).To(Equal(runtime.ClassCaptureInvalidated), "%v", err)
		})
	}

	It("lets the other thread end its capture while this thread's relaxed capture is open", func() {
		x, err := d.Malloc(runtime.Main, 4096)
		Expect(err).NotTo(HaveOccurred())
		s1, s2 := stream(), stream()
		Expect(d.BeginCapture(runtime.Other, s1, runtime.Global)).To(Succeed())
		Expect(d.Fill(runtime.Other, s1, x, 1)).To(Succeed())
		Expect(d.BeginCapture(runtime.Main, s2, runtime.Relaxed)).To(Succeed())
		Expect(d.Fill(runtime.Main, s2, x, 2)).To(Succeed())
		g1, err := d.EndCapture(runtime.Other, s1)
		Expect(err).NotTo(HaveOccurred())
		g2, err := d.EndCapture(runtime.Main, s2)
		Expect(err).NotTo(HaveOccurred())
		Expect(errors.Join(d.DestroyGraph(runtime.Main, g1), d.DestroyGraph(runtime.Main, g2))).To(Succeed())
	})
})
