package conformance

import (
	"fmt"

	g "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
)

func replaySpecs(h *harness) {
	g.Context("replay", func() {
		for _, m := range device.CaptureModes() {
			g.It(inMode("launches one graph N times back to back, each launch running the whole graph after the one before", m), func() {
				// The graph shifts buf right by one byte through tmp (two copies that do not overlap):
				// after k launches the first k+1 bytes are 1.
				const n = 64
				n64 := int64(n)
				s := h.stream()
				buf, tmp := h.malloc(n), h.malloc(n)
				h.write(buf, append([]byte{1}, make([]byte, n-1)...))
				h.begin(main, s, m)
				h.copy(s, tmp.Slice(0, n64-1), buf.Slice(0, n64-1))
				h.copy(s, buf.Slice(1, n64-1), tmp.Slice(0, n64-1))
				graph := h.end(main, s)
				base := h.dev.Counters()
				for range h.opts.Replays {
					h.launch(graph, s)
				}
				h.sync(s)
				want := make([]byte, n)
				for i := range min(h.opts.Replays+1, n) {
					want[i] = 1
				}
				Expect(h.read(buf)).To(Equal(want), "%d launches", h.opts.Replays)
				Expect(h.dev.Counters().Launches - base.Launches).To(Equal(int64(h.opts.Replays)))
			})

			g.It(inMode("replays against the captured addresses: data written into a captured buffer between launches is what the graph reads", m), func() {
				s := h.stream()
				src, dst := h.malloc(4*kib), h.malloc(4*kib)
				h.zeroed(dst)
				h.begin(main, s, m)
				h.copy(s, dst, src)
				graph := h.end(main, s)
				for i := range h.opts.Replays {
					h.write(src, pattern(src.Bytes, byte(i+1)))
					h.launch(graph, s)
					h.sync(s)
					Expect(h.read(dst)).To(Equal(pattern(dst.Bytes, byte(i+1))), "launch %d", i+1)
				}
			})

			g.It(inMode("replays a captured copy from pinned host memory, reading the host buffer again on every launch", m), func() {
				s := h.stream()
				stage := h.allocHost(4*kib, device.Pinned)
				dev := h.malloc(4 * kib)
				h.zeroed(dev)
				h.hostWrite(stage, filled(stage.Bytes, 0xff))
				h.begin(main, s, m)
				h.copy(s, dev, stage)
				graph := h.end(main, s)
				h.sync(s)
				Expect(h.read(dev)).To(Equal(make([]byte, dev.Bytes)), "captured, not run")
				for i := range h.opts.Replays {
					h.hostWrite(stage, pattern(stage.Bytes, byte(i+1)))
					h.launch(graph, s)
					h.sync(s)
					Expect(h.read(dev)).To(Equal(pattern(dev.Bytes, byte(i+1))), "launch %d reads what the staging buffer holds now", i+1)
				}
			})

			g.It(inMode("replays a captured copy to pinned host memory, writing the host buffer again on every launch", m), func() {
				s := h.stream()
				dev := h.malloc(4 * kib)
				out := h.allocHost(4*kib, device.Pinned)
				h.hostWrite(out, make([]byte, out.Bytes))
				h.begin(main, s, m)
				h.copy(s, out, dev)
				graph := h.end(main, s)
				h.sync(s)
				Expect(h.hostRead(out)).To(Equal(make([]byte, out.Bytes)), "captured, not run")
				for i := range h.opts.Replays {
					h.write(dev, pattern(dev.Bytes, byte(i+1)))
					h.hostWrite(out, make([]byte, out.Bytes))
					h.launch(graph, s)
					h.sync(s)
					Expect(h.hostRead(out)).To(Equal(pattern(out.Bytes, byte(i+1))), "launch %d", i+1)
				}
			})
		}

		g.It("accumulates with the axpy kernel: N launches add N*a*x", func() {
			h.need("kernels")
			s := h.stream()
			x, y := h.malloc(16), h.malloc(16)
			hi := uint32(0x80000000)
			h.write(x, lanes(1, 2, 3, hi))
			h.write(y, lanes(10, 20, 30, 0))
			h.begin(main, s, device.Global)
			Expect(h.dev.Axpy(main, s, y, x, 3)).To(Succeed())
			graph := h.end(main, s)
			n := uint32(h.opts.Replays)
			for range n {
				h.launch(graph, s)
			}
			h.sync(s)
			Expect(h.read(y)).To(Equal(lanes(10+3*n, 20+6*n, 30+9*n, hi*3*n)))
		})

		g.It("runs launches on one stream in launch order", func() {
			s := h.stream()
			scratch, out1, out2 := h.malloc(64*kib), h.malloc(64*kib), h.malloc(64*kib)
			g1 := captureFillCopy(h, scratch, 0x11, out1)
			g2 := captureFillCopy(h, scratch, 0x22, out2)
			h.launch(g1, s)
			h.launch(g2, s)
			h.sync(s)
			Expect(h.read(out1)).To(Equal(filled(out1.Bytes, 0x11)))
			Expect(h.read(out2)).To(Equal(filled(out2.Bytes, 0x22)))
			Expect(h.read(scratch)).To(Equal(filled(scratch.Bytes, 0x22)))
		})

		g.It("orders launches on two streams by an event recorded after the first and waited before the second", func() {
			s1, s2 := h.stream(), h.stream()
			e := h.event()
			scratch, out1, out2 := h.malloc(64*kib), h.malloc(64*kib), h.malloc(64*kib)
			g1 := captureFillCopy(h, scratch, 0x11, out1)
			g2 := captureFillCopy(h, scratch, 0x22, out2)
			h.launch(g1, s1)
			h.record(e, s1)
			h.wait(s2, e)
			h.launch(g2, s2)
			h.sync(s2)
			Expect(h.read(out1)).To(Equal(filled(out1.Bytes, 0x11)))
			Expect(h.read(out2)).To(Equal(filled(out2.Bytes, 0x22)))
		})

		g.It("replays two graphs over the same buffer alternately, each with its own work", func() {
			s := h.stream()
			x := h.malloc(4 * kib)
			graphs := map[byte]device.Graph{}
			for _, v := range []byte{1, 2} {
				h.begin(main, s, device.Global)
				h.fill(s, x, v)
				graphs[v] = h.end(main, s)
			}
			for _, v := range []byte{1, 2, 1, 2} {
				h.launch(graphs[v], s)
				h.sync(s)
				Expect(h.read(x)).To(Equal(filled(x.Bytes, v)), fmt.Sprintf("graph %d", v))
			}
		})

		g.It("keeps a graph after its capture stream is destroyed", func() {
			s, t := h.stream(), h.stream()
			x := h.malloc(4 * kib)
			h.zeroed(x)
			h.begin(main, s, device.Global)
			h.fill(s, x, 0x3c)
			graph := h.end(main, s)
			Expect(h.dev.DestroyStream(main, s)).To(Succeed())
			h.launch(graph, t)
			h.sync(t)
			Expect(h.read(x)).To(Equal(filled(x.Bytes, 0x3c)))
		})
	})
}

// captureFillCopy captures, on a fresh stream, a fill of scratch with v and a copy of scratch into
// out, and returns the graph.
func captureFillCopy(h *harness, scratch device.Ptr, v byte, out device.Ptr) device.Graph {
	g.GinkgoHelper()
	s := h.stream()
	h.begin(main, s, device.Global)
	h.fill(s, scratch, v)
	h.copy(s, out, scratch)
	return h.end(main, s)
}
