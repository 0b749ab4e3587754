package conformance

import (
	g "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
)

func handleSpecs(h *harness) {
	g.Context("handles", func() {
		// Each call that names a stream, an event or a graph, given one that is not live.
		type badHandles struct {
			s device.Stream
			e device.Event
			g device.Graph
		}
		callsNaming := func(x device.Ptr, good device.Stream, goodEvent device.Event, goodGraph device.Graph, bad badHandles) map[string]error {
			d := h.dev
			out := map[string]error{}
			if bad.s != device.DefaultStream {
				out["Fill"] = d.Fill(main, bad.s, x, 1)
				out["Copy"] = d.Copy(main, bad.s, x, x)
				out["Record"] = d.Record(main, goodEvent, bad.s)
				out["Wait"] = d.Wait(main, bad.s, goodEvent)
				out["SyncStream"] = d.SyncStream(main, bad.s)
				out["DestroyStream"] = d.DestroyStream(main, bad.s)
				out["BeginCapture"] = d.BeginCapture(main, bad.s, device.Relaxed)
				_, out["EndCapture"] = d.EndCapture(main, bad.s)
				_, out["CaptureInfo"] = d.CaptureInfo(main, bad.s)
				out["Launch (stream)"] = d.Launch(main, goodGraph, bad.s)
				if h.caps.Kernels {
					out["Axpy"] = d.Axpy(main, bad.s, x.Slice(0, 4), x.Slice(4, 4), 1)
				}
			}
			out["Record (event)"] = d.Record(main, bad.e, good)
			out["Wait (event)"] = d.Wait(main, good, bad.e)
			_, out["QueryEvent"] = d.QueryEvent(main, bad.e)
			out["SyncEvent"] = d.SyncEvent(main, bad.e)
			out["DestroyEvent"] = d.DestroyEvent(main, bad.e)
			out["Launch"] = d.Launch(main, bad.g, good)
			out["DestroyGraph"] = d.DestroyGraph(main, bad.g)
			_, out["GraphNodes"] = d.GraphNodes(main, bad.g)
			return out
		}
		setup := func() (device.Ptr, device.Stream, device.Event, device.Graph) {
			g.GinkgoHelper()
			x := h.malloc(1 * kib)
			s := h.stream()
			e := h.event()
			h.begin(main, s, device.Global)
			h.fill(s, x, 1)
			graph := h.end(main, s)
			return x, s, e, graph
		}
		expectAllFail := func(errs map[string]error) {
			g.GinkgoHelper()
			for call, err := range errs {
				g.By(call)
				h.failed(err)
			}
		}

		g.It("a destroyed stream, event or graph is refused by every call that names it, and nothing is counted", func() {
			x, s, e, graph := setup()
			ds, de := h.stream(), h.event()
			h.begin(main, ds, device.Global)
			h.fill(ds, x, 2)
			dg := h.end(main, ds)
			Expect(h.dev.DestroyStream(main, ds)).To(Succeed())
			Expect(h.dev.DestroyEvent(main, de)).To(Succeed())
			Expect(h.dev.DestroyGraph(main, dg)).To(Succeed())
			base := h.dev.Counters()
			expectAllFail(callsNaming(x, s, e, graph, badHandles{ds, de, dg}))
			Expect(h.dev.Counters()).To(Equal(base), "refused calls create, destroy, launch and capture nothing")
			h.notCapturing(s)
		})

		g.It("a handle the device never issued is refused likewise, and so are the zero Event and Graph", func() {
			x, s, e, graph := setup()
			base := h.dev.Counters()
			expectAllFail(callsNaming(x, s, e, graph, badHandles{device.Stream(1 << 40), device.Event(1 << 40), device.Graph(1 << 40)}))
			expectAllFail(callsNaming(x, s, e, graph, badHandles{device.DefaultStream, 0, 0}))
			Expect(h.dev.Counters()).To(Equal(base))
		})

		g.It("the live handles still work after the refusals", func() {
			x, s, e, graph := setup()
			expectAllFail(callsNaming(x, s, e, graph, badHandles{device.Stream(1 << 40), device.Event(1 << 40), device.Graph(1 << 40)}))
			h.zeroed(x)
			h.launch(graph, s)
			h.record(e, s)
			Expect(h.dev.SyncEvent(main, e)).To(Succeed())
			Expect(h.read(x)).To(Equal(filled(x.Bytes, 1)))
		})
	})
}

func lifecycleSpecs(h *harness) {
	g.Context("the device's life", func() {
		g.It("starts with nothing live", func() {
			c := h.dev.Counters()
			Expect(c.Leaks(device.Counters{})).To(BeEmpty(), "a freshly opened device holds no allocation, stream, event or graph of its caller's")
			Expect(c.LiveBytes).To(BeZero())
		})

		g.It("counts one live object of every kind while it lives, and Leaks names each kind left", func() {
			base := h.dev.Counters()
			p := h.malloc(100)
			hp := h.allocHost(100, device.Pinned)
			s := h.stream()
			e := h.event()
			h.begin(main, s, device.Global)
			h.fill(s, p, 1)
			graph := h.end(main, s)
			h.launch(graph, s)
			h.launch(graph, s)
			h.sync(s)

			c := h.dev.Counters()
			Expect(c.LiveAllocs - base.LiveAllocs).To(Equal(int64(1)))
			Expect(c.LiveBytes - base.LiveBytes).To(Equal(int64(100)))
			Expect(c.LiveHostAllocs - base.LiveHostAllocs).To(Equal(int64(1)))
			Expect(c.LiveStreams - base.LiveStreams).To(Equal(int64(1)))
			Expect(c.LiveEvents - base.LiveEvents).To(Equal(int64(1)))
			Expect(c.LiveGraphs - base.LiveGraphs).To(Equal(int64(1)))
			Expect(c.Launches - base.Launches).To(Equal(int64(2)))
			Expect(c.CapturesDone - base.CapturesDone).To(Equal(int64(1)))
			Expect(c.Leaks(base)).To(ConsistOf(
				"allocations: 1 live, 0 before", "host allocations: 1 live, 0 before",
				"streams: 1 live, 0 before", "events: 1 live, 0 before", "graphs: 1 live, 0 before"))

			Expect(h.dev.DestroyGraph(main, graph)).To(Succeed())
			Expect(h.dev.DestroyEvent(main, e)).To(Succeed())
			Expect(h.dev.DestroyStream(main, s)).To(Succeed())
			Expect(h.dev.FreeHost(main, hp)).To(Succeed())
			h.free(p)
			c = h.dev.Counters()
			Expect(c.Leaks(base)).To(BeEmpty())
			Expect(c.LiveBytes).To(Equal(base.LiveBytes))
			Expect(c.Launches-base.Launches).To(Equal(int64(2)), "history is kept")
		})

		g.It("describes itself and names its backend", func() {
			Expect(h.dev.Backend()).NotTo(BeEmpty())
			Expect(h.dev.Describe()).NotTo(BeEmpty())
		})

		g.It("Close destroys what is left, a capture in progress included; afterwards calls fail", func() {
			p := h.malloc(64 * kib)
			h.allocHost(1*kib, device.Pinned)
			s := h.stream()
			h.event()
			h.begin(main, s, device.Relaxed)
			h.fill(s, p, 1)
			h.closed = true
			Expect(h.dev.Close()).To(Succeed())
			_, err := h.dev.Malloc(main, 512)
			h.failed(err)
			_, err = h.dev.CreateStream(other, device.Blocking)
			h.failed(err)
			h.failed(h.dev.SyncDevice(main))
		})
	})
}
