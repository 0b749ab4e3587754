//go:build cgo

package cuda_test

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/fake"
)

var _ = Describe("blocking and non-blocking streams", func() {
	It("creates a Blocking stream with cuStreamCreate flags 0 and a NonBlocking one with CU_STREAM_NON_BLOCKING (1), and refuses other flags in Go", func(ctx SpecContext) {
		d, log := openLogged(ctx)
		Expect(d.Capabilities().NonBlockingStreams).To(BeTrue())
		_, err := d.CreateStream(runtime.Main, runtime.Blocking)
		Expect(err).NotTo(HaveOccurred())
		_, err = d.CreateStream(runtime.Other, runtime.NonBlocking)
		Expect(err).NotTo(HaveOccurred())
		_, err = d.CreateStream(runtime.Main, runtime.StreamFlags(2))
		Expect(runtime.ClassOf(err)).To(Equal(runtime.ClassInvalidValue))
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
			d    runtime.Device
			x, y runtime.Ptr
		)
		BeforeEach(func(ctx SpecContext) {
			_, d = open(ctx, libs.full)
			var err error
			x, err = d.Malloc(runtime.Main, 64)
			Expect(err).NotTo(HaveOccurred())
			y, err = d.Malloc(runtime.Main, 64)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.Write(runtime.Main, x, make([]byte, 64))).To(Succeed())
			Expect(d.Write(runtime.Main, y, make([]byte, 64))).To(Succeed())
		})
		read := func(p runtime.Ptr) []byte {
			GinkgoHelper()
			out := make([]byte, p.Bytes)
			Expect(d.Read(runtime.Main, out, p)).To(Succeed())
			return out
		}

		It("runs at once and stays out of the graph while a NonBlocking stream captures", func() {
			s, err := d.CreateStream(runtime.Main, runtime.NonBlocking)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.BeginCapture(runtime.Main, s, runtime.Global)).To(Succeed())
			Expect(d.Fill(runtime.Main, s, x, 1)).To(Succeed())
			Expect(d.Fill(runtime.Main, runtime.DefaultStream, y, 2)).To(Succeed())
			Expect(read(y)).To(Equal(bytes.Repeat([]byte{2}, 64)), "visible at once, to a synchronous copy the capture allows")
			Expect(read(x)).To(Equal(make([]byte, 64)), "the captured fill has not run")
			info, err := d.CaptureInfo(runtime.Main, s)
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Status).To(Equal(runtime.CaptureActive))
			g, err := d.EndCapture(runtime.Main, s)
			Expect(err).NotTo(HaveOccurred())
			nodes, err := d.GraphNodes(runtime.Main, g)
			Expect(err).NotTo(HaveOccurred())
			Expect(nodes).To(Equal([]runtime.GraphNode{{Kind: "memset", Writes: []runtime.Ptr{x}}}), "the default stream's fill is not in the graph")
			Expect(d.Write(runtime.Main, y, make([]byte, 64))).To(Succeed())
			Expect(d.Launch(runtime.Main, g, s)).To(Succeed())
			Expect(d.SyncStream(runtime.Main, s)).To(Succeed())
			Expect(read(x)).To(Equal(bytes.Repeat([]byte{1}, 64)))
			Expect(read(y)).To(Equal(make([]byte, 64)), "the replay does not fill y")
			Expect(d.DestroyGraph(runtime.Main, g)).To(Succeed())
		})

		It("fails 906 and invalidates the capture while a Blocking stream captures", func() {
			s, err := d.CreateStream(runtime.Main, runtime.Blocking)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.BeginCapture(runtime.Main, s, runtime.Global)).To(Succeed())
			Expect(d.Fill(runtime.Main, s, x, 1)).To(Succeed())
			e, ok := runtime.AsError(d.Fill(runtime.Main, runtime.DefaultStream, y, 2))
			Expect(ok).To(BeTrue())
			Expect([]any{e.Code, e.Name, e.Class, e.Invalidated}).To(Equal([]any{906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", runtime.ClassCaptureImplicit, true}))
			info, err := d.CaptureInfo(runtime.Main, s)
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Status).To(Equal(runtime.CaptureInvalidated))
			_, err = d.EndCapture(runtime.Main, s)
			Expect(runtime.ClassOf(err)).To(Equal(runtime.ClassCaptureInvalidated))
			Expect(read(y)).To(Equal(make([]byte, 64)), "the refused fill did not run")
		})
	})
})
