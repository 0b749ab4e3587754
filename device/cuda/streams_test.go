//go:build cgo

package cuda_test

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/fake"
)

var _ = Describe("blocking and non-blocking streams", func() {
	It("creates a Blocking stream with cuStreamCreate flags 0 and a NonBlocking one with CU_STREAM_NON_BLOCKING (1), and refuses other flags in Go", func(ctx SpecContext) {
		d, log := openLogged(ctx)
		Expect(d.Capabilities().NonBlockingStreams).To(BeTrue())
		_, err := d.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		_, err = d.CreateStream(device.Other, device.NonBlocking)
		Expect(err).NotTo(HaveOccurred())
		_, err = d.CreateStream(device.Main, device.StreamFlags(2))
		Expect(device.ClassOf(err)).To(Equal(device.ClassInvalidValue))
		entries, err := fake.ReadLog(log)
		Expect(err).NotTo(HaveOccurred())
		var flags []string
		for _, e := range entries {
			if e.Kind == "call" && e.Entry == "cuStreamCreate" {
				flags = append(flags, e.Args)
			}
		}
		Expect(flags).To(Equal([]string{"flags=0", "flags=1"}), "one driver call per stream made, none for the refused flags")
	})

	Context("work on the default stream during a capture", func() {
		var (
			d    device.Device
			x, y device.Ptr
		)
		BeforeEach(func(ctx SpecContext) {
			_, d = open(ctx, libs.Full)
			var err error
			x, err = d.Malloc(device.Main, 64)
			Expect(err).NotTo(HaveOccurred())
			y, err = d.Malloc(device.Main, 64)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.Write(device.Main, x, make([]byte, 64))).To(Succeed())
			Expect(d.Write(device.Main, y, make([]byte, 64))).To(Succeed())
		})
		read := func(p device.Ptr) []byte {
			GinkgoHelper()
			out := make([]byte, p.Bytes)
			Expect(d.Read(device.Main, out, p)).To(Succeed())
			return out
		}

		It("runs at once and stays out of the graph while a NonBlocking stream captures", func() {
			s, err := d.CreateStream(device.Main, device.NonBlocking)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
			Expect(d.Fill(device.Main, s, x, 1)).To(Succeed())
			Expect(d.Fill(device.Main, device.DefaultStream, y, 2)).To(Succeed())
			Expect(read(y)).To(Equal(bytes.Repeat([]byte{2}, 64)), "visible at once, to a synchronous copy the capture allows")
			Expect(read(x)).To(Equal(make([]byte, 64)), "the captured fill has not run")
			info, err := d.CaptureInfo(device.Main, s)
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Status).To(Equal(device.CaptureActive))
			g, err := d.EndCapture(device.Main, s)
			Expect(err).NotTo(HaveOccurred())
			nodes, err := d.GraphNodes(device.Main, g)
			Expect(err).NotTo(HaveOccurred())
			Expect(nodes).To(Equal([]device.GraphNode{{Kind: "memset", Writes: []device.Ptr{x}}}), "the default stream's fill is not in the graph")
			Expect(d.Write(device.Main, y, make([]byte, 64))).To(Succeed())
			Expect(d.Launch(device.Main, g, s)).To(Succeed())
			Expect(d.SyncStream(device.Main, s)).To(Succeed())
			Expect(read(x)).To(Equal(bytes.Repeat([]byte{1}, 64)))
			Expect(read(y)).To(Equal(make([]byte, 64)), "the replay does not fill y")
			Expect(d.DestroyGraph(device.Main, g)).To(Succeed())
		})

		It("fails 906 and invalidates the capture while a Blocking stream captures", func() {
			s, err := d.CreateStream(device.Main, device.Blocking)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
			Expect(d.Fill(device.Main, s, x, 1)).To(Succeed())
			e, ok := device.AsError(d.Fill(device.Main, device.DefaultStream, y, 2))
			Expect(ok).To(BeTrue())
			Expect([]any{e.Code, e.Name, e.Class, e.Invalidated}).To(Equal([]any{906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", device.ClassCaptureImplicit, true}))
			info, err := d.CaptureInfo(device.Main, s)
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Status).To(Equal(device.CaptureInvalidated))
			_, err = d.EndCapture(device.Main, s)
			Expect(device.ClassOf(err)).To(Equal(device.ClassCaptureInvalidated))
			Expect(read(y)).To(Equal(make([]byte, 64)), "the refused fill did not run")
		})
	})
})
