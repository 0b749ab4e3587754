package conformance

import (
	g "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
)

func captureSpecs(h *harness) {
	g.Context("capture", func() {
		for _, m := range device.CaptureModes() {
			g.It(inMode("BeginCapture makes the stream's capture active, with an ID, the origin and the mode, as CaptureInfo reports from either thread", m), func() {
				s := h.stream()
				h.notCapturing(s)
				h.begin(main, s, m)
				for _, t := range []device.Thread{main, other} {
					info, err := h.dev.CaptureInfo(t, s)
					Expect(err).NotTo(HaveOccurred())
					Expect(info.Status).To(Equal(device.CaptureActive), "from %v", t)
					Expect(info.ID).NotTo(BeZero(), "from %v: an active capture has an ID", t)
					Expect(info.Origin).To(Equal(s), "from %v", t)
					Expect(info.Mode).To(Equal(m), "from %v", t)
				}
				h.end(main, s)
				h.notCapturing(s)
			})

			g.It(inMode("captured work does not run at capture time; Launch runs it", m), func() {
				s := h.stream()
				x, y := h.malloc(64*kib), h.malloc(64*kib)
				h.zeroed(x)
				h.zeroed(y)
				base := h.dev.Counters()
				h.begin(main, s, m)
				h.fill(s, x, 7)
				h.copy(s, y, x)
				graph := h.end(main, s)
				h.sync(s)
				Expect(h.read(x)).To(Equal(make([]byte, x.Bytes)), "the captured fill did not run")
				Expect(h.read(y)).To(Equal(make([]byte, y.Bytes)), "the captured copy did not run")
				c := h.dev.Counters()
				Expect(c.CapturesDone - base.CapturesDone).To(Equal(int64(1)))
				Expect(c.LiveGraphs - base.LiveGraphs).To(Equal(int64(1)))
				Expect(c.Launches - base.Launches).To(BeZero())

				h.launch(graph, s)
				h.sync(s)
				Expect(h.read(x)).To(Equal(filled(x.Bytes, 7)))
				Expect(h.read(y)).To(Equal(filled(y.Bytes, 7)), "the copy ran after the fill, as captured")
				Expect(h.dev.Counters().Launches - base.Launches).To(Equal(int64(1)))
			})

			g.It(inMode("a capture begun and ended on the other thread yields a graph either thread can launch", m), func() {
				s, t := h.stream(), h.stream()
				x := h.malloc(4 * kib)
				h.zeroed(x)
				h.begin(other, s, m)
				Expect(h.dev.Fill(other, s, x, 0x5c)).To(Succeed())
				graph := h.end(other, s)
				Expect(h.dev.Launch(other, graph, t)).To(Succeed())
				h.sync(t)
				Expect(h.read(x)).To(Equal(filled(x.Bytes, 0x5c)))
				h.fill(t, x, 0)
				h.launch(graph, s)
				h.sync(s)
				Expect(h.read(x)).To(Equal(filled(x.Bytes, 0x5c)))
			})

			g.It(inMode("a fork (record on the origin, wait on a side stream) pulls the side stream into the capture; a join brings it back", m), func() {
				origin, side := h.stream(), h.stream()
				fork, join := h.event(), h.event()
				a, b, c, out := h.malloc(4*kib), h.malloc(4*kib), h.malloc(4*kib), h.malloc(4*kib)
				for _, p := range []device.Ptr{a, b, c, out} {
					h.zeroed(p)
				}
				h.begin(main, origin, m)
				h.fill(origin, a, 1)
				h.record(fork, origin)
				h.wait(side, fork)
				originInfo, sideInfo := h.info(origin), h.info(side)
				Expect(sideInfo.Status).To(Equal(device.CaptureActive), "the wait forked the side stream into the capture")
				Expect(sideInfo.ID).To(Equal(originInfo.ID), "a forked stream shares the capture's ID")
				Expect(sideInfo.Origin).To(Equal(origin))
				Expect(sideInfo.Mode).To(Equal(m))

				h.fill(side, b, 2)
				h.copy(side, out.Slice(0, 2*kib), a.Slice(0, 2*kib)) // after the fork: sees a's fill
				h.fill(origin, c, 3)
				h.record(join, side)
				h.wait(origin, join)
				h.copy(origin, out.Slice(2*kib, 2*kib), b.Slice(0, 2*kib)) // after the join: sees b's fill
				graph := h.end(main, origin)
				h.notCapturing(side)
				h.notCapturing(origin)
				h.sync(origin, side)
				for _, p := range []device.Ptr{a, b, c, out} {
					Expect(h.read(p)).To(Equal(make([]byte, p.Bytes)), "nothing ran at capture time: %v", p)
				}

				h.launch(graph, origin)
				h.sync(origin)
				Expect(h.read(a)).To(Equal(filled(a.Bytes, 1)))
				Expect(h.read(b)).To(Equal(filled(b.Bytes, 2)), "the side stream's work is in the graph")
				Expect(h.read(c)).To(Equal(filled(c.Bytes, 3)))
				Expect(h.read(out)).To(Equal(append(filled(2*kib, 1), filled(2*kib, 2)...)), "the fork and the join order the graph")

				// The side stream runs eagerly again.
				h.fill(side, c, 9)
				h.sync(side)
				Expect(h.read(c)).To(Equal(filled(c.Bytes, 9)))
			})

			g.It(inMode("work on a stream outside the capture runs once, at once, and is not in the graph", m), func() {
				origin, outside := h.stream(), h.stream()
				x, y := h.malloc(4*kib), h.malloc(4*kib)
				h.zeroed(x)
				h.zeroed(y)
				h.begin(main, origin, m)
				h.fill(origin, x, 1)
				h.fill(outside, y, 9)
				h.notCapturing(outside)
				graph := h.end(main, origin)
				h.sync(outside)
				Expect(h.read(y)).To(Equal(filled(y.Bytes, 9)), "the outside fill ran")
				h.fill(outside, y, 0)
				h.sync(outside)
				h.launch(graph, origin)
				h.sync(origin)
				Expect(h.read(x)).To(Equal(filled(x.Bytes, 1)))
				Expect(h.read(y)).To(Equal(make([]byte, y.Bytes)), "the replay did not repeat the outside fill")
			})

			if h.opts.EndCaptureInstantiates && minds(m, device.Global, true) {
				// The instantiation of the first graph is an unsafe call the second capture, the
				// thread's own, forbids.
				g.It(inMode("two captures in progress at once have distinct IDs; ending one fails capture-unsupported with no graph and invalidates the other", m), func() {
					s, t := h.stream(), h.stream()
					x, y := h.malloc(4*kib), h.malloc(4*kib)
					h.begin(main, s, m)
					h.begin(main, t, m)
					Expect(h.info(s).ID).NotTo(Equal(h.info(t).ID))
					h.fill(s, x, 1)
					h.fill(t, y, 2)
					base := h.dev.Counters()
					graph, err := h.dev.EndCapture(main, s)
					h.instantiationRefused(graph, err, s, t, base)
					Expect(h.dev.Counters().CapturesDone).To(Equal(base.CapturesDone))
					h.finish(main, t)
				})
			} else {
				g.It(inMode("two captures in progress at once have distinct IDs and end with their own graphs", m), func() {
					s, t := h.stream(), h.stream()
					x, y := h.malloc(4*kib), h.malloc(4*kib)
					h.zeroed(x)
					h.zeroed(y)
					h.begin(main, s, m)
					h.begin(main, t, m)
					Expect(h.info(s).ID).NotTo(Equal(h.info(t).ID))
					h.fill(s, x, 1)
					h.fill(t, y, 2)
					gs := h.end(main, s)
					Expect(h.status(t)).To(Equal(device.CaptureActive), "ending one capture leaves the other")
					gt := h.end(main, t)
					Expect(gs).NotTo(Equal(gt))
					h.launch(gt, t)
					h.sync(t)
					Expect(h.read(x)).To(Equal(make([]byte, x.Bytes)), "each graph holds its own capture's work")
					Expect(h.read(y)).To(Equal(filled(y.Bytes, 2)))
					h.launch(gs, s)
					h.sync(s)
					Expect(h.read(x)).To(Equal(filled(x.Bytes, 1)))
				})
			}

			g.It(inMode("HostWrite and HostRead are the CPU's: allowed during the capture", m), func() {
				s := h.stream()
				p := h.allocHost(1*kib, device.Pinned)
				q := h.allocHost(1*kib, device.Pageable)
				h.begin(main, s, m)
				h.hostWrite(p, filled(p.Bytes, 0x5a))
				h.hostWrite(q, filled(q.Bytes, 0xa5))
				Expect(h.hostRead(p)).To(Equal(filled(p.Bytes, 0x5a)))
				Expect(h.hostRead(q)).To(Equal(filled(q.Bytes, 0xa5)))
				Expect(h.status(s)).To(Equal(device.CaptureActive))
				h.end(main, s)
			})
		}

		g.It("lists the captured nodes with the ranges they touch, or says not-supported without introspection", func() {
			s := h.stream()
			x, y := h.malloc(64), h.malloc(64)
			h.begin(main, s, device.Global)
			h.fill(s, x, 1)
			h.copy(s, y.Slice(0, 32), x)
			graph := h.end(main, s)
			nodes, err := h.dev.GraphNodes(main, graph)
			if !h.caps.GraphIntrospection {
				h.failed(err, device.ClassNotSupported)
				return
			}
			Expect(err).NotTo(HaveOccurred())
			var memsets, memcpys []device.GraphNode
			tasks := 0
			for _, n := range nodes {
				Expect(n.Kind).To(BeElementOf("memset", "memcpy", "kernel", "event-record", "event-wait", "empty", "task"))
				switch n.Kind {
				case "memset":
					memsets = append(memsets, n)
				case "memcpy":
					memcpys = append(memcpys, n)
				case "task":
					Expect(n.Reads).To(BeEmpty())
					Expect(n.Writes).To(BeEmpty())
					tasks++
				}
			}
			if tasks > 0 {
				// A platform that names no kind for a fill or a copy (ACL) lists them as tasks:
				// at least one node for each of the two ops.
				Expect(len(memsets) + len(memcpys) + tasks).To(BeNumerically(">=", 2))
				return
			}
			Expect(memsets).To(ConsistOf(HaveField("Writes", ConsistOf(x))))
			Expect(memcpys).To(ConsistOf(And(
				HaveField("Reads", ConsistOf(x.Slice(0, 32))),
				HaveField("Writes", ConsistOf(y.Slice(0, 32))))))
		})

		g.It("lists a kernel node, with the ranges it reads and writes when the backend knows them", func() {
			h.need("kernels")
			h.need("graph-introspection")
			s := h.stream()
			x, y := h.malloc(64), h.malloc(64)
			h.begin(main, s, device.Global)
			Expect(h.dev.Axpy(main, s, y, x, 2)).To(Succeed())
			graph := h.end(main, s)
			nodes, err := h.dev.GraphNodes(other, graph)
			Expect(err).NotTo(HaveOccurred())
			// A backend that cannot read a kernel node's parameters lists it without ranges; one
			// that lists ranges must list the right ones.
			Expect(nodes).To(ContainElement(And(
				HaveField("Kind", "kernel"),
				Or(
					And(HaveField("Reads", BeEmpty()), HaveField("Writes", BeEmpty())),
					And(HaveField("Reads", ConsistOf(x, y)), HaveField("Writes", ConsistOf(y)))))))
		})

		g.It("DestroyGraph releases the graph; the destroyed handle is refused everywhere", func() {
			s := h.stream()
			x := h.malloc(1 * kib)
			base := h.dev.Counters()
			h.begin(main, s, device.Global)
			h.fill(s, x, 1)
			graph := h.end(main, s)
			Expect(h.dev.Counters().LiveGraphs - base.LiveGraphs).To(Equal(int64(1)))
			Expect(h.dev.DestroyGraph(other, graph)).To(Succeed())
			c := h.dev.Counters()
			Expect(c.LiveGraphs).To(Equal(base.LiveGraphs))
			h.failed(h.dev.Launch(main, graph, s))
			h.failed(h.dev.DestroyGraph(main, graph))
			_, err := h.dev.GraphNodes(main, graph)
			h.failed(err)
			Expect(h.dev.Counters().Launches).To(Equal(c.Launches), "a refused launch is not counted")
		})
	})
}
