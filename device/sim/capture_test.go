package sim_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"slices"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

var _ = Describe("capture", func() {
	var (
		d            *sim.Device
		origin, side device.Stream
	)
	BeforeEach(func() {
		d = onProfile("cann")
		origin = newStream(d)
		side = newStream(d)
	})

	end := func() device.Graph {
		GinkgoHelper()
		g, err := d.EndCapture(main, origin)
		Expect(err).NotTo(HaveOccurred())
		Expect(g).NotTo(BeZero())
		return g
	}

	It("records work on the capturing stream instead of running it, and replays it", func() {
		x := malloc(d, 4*KiB)
		Expect(d.BeginCapture(main, origin, device.Global)).To(Succeed())
		info, err := d.CaptureInfo(other, origin)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Status).To(Equal(device.CaptureActive))
		Expect(info.Origin).To(Equal(origin))
		Expect(info.Mode).To(Equal(device.Global))
		Expect(info.ID).NotTo(BeZero())

		Expect(d.Fill(main, origin, x, 7)).To(Succeed())
		g := end()
		Expect(read(d, x)).To(Equal(filled(x.Bytes, 0)), "captured work did not run")
		Expect(status(d, origin)).To(Equal(device.CaptureNone))

		Expect(d.Launch(main, g, origin)).To(Succeed())
		Expect(read(d, x)).To(Equal(filled(x.Bytes, 7)))
		Expect(d.Counters().Launches).To(Equal(int64(1)))
		Expect(d.Counters().CapturesDone).To(Equal(int64(1)))
	})

	It("runs work on a stream outside the capture at once and leaves it out of the graph", func() {
		x := malloc(d, 4*KiB)
		y := malloc(d, 4*KiB)
		Expect(d.BeginCapture(main, origin, device.Global)).To(Succeed())
		Expect(d.Fill(main, origin, x, 1)).To(Succeed())
		Expect(d.Fill(main, side, y, 9)).To(Succeed()) // off-capture: eager
		Expect(status(d, side)).To(Equal(device.CaptureNone))
		g := end()
		Expect(read(d, y)).To(Equal(filled(y.Bytes, 9)), "the off-capture fill ran once, eagerly")

		nodes, err := d.GraphNodes(main, g)
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes).To(HaveLen(1))
		Expect(nodes[0].Writes).To(ConsistOf(x))

		Expect(d.Fill(main, side, y, 0)).To(Succeed())
		Expect(d.Launch(main, g, origin)).To(Succeed())
		Expect(read(d, y)).To(Equal(filled(y.Bytes, 0)), "replay does nothing for the off-capture work")
	})

	It("builds a DAG from fork and join through events", func() {
		a, b, c, out := malloc(d, 1*KiB), malloc(d, 1*KiB), malloc(d, 1*KiB), malloc(d, 1*KiB)
		fork, join := newEvent(d), newEvent(d)
		Expect(d.BeginCapture(main, origin, device.Global)).To(Succeed())
		Expect(d.Fill(main, origin, a, 1)).To(Succeed()) // node 0
		Expect(d.Record(main, fork, origin)).To(Succeed())
		Expect(d.Wait(main, side, fork)).To(Succeed()) // side joins the capture
		sideInfo, err := d.CaptureInfo(main, side)
		Expect(err).NotTo(HaveOccurred())
		originInfo, _ := d.CaptureInfo(main, origin)
		Expect(sideInfo).To(Equal(originInfo), "a forked stream shares the capture's id, origin and mode")

		Expect(d.Fill(main, side, b, 2)).To(Succeed())   // node 1 <- 0
		Expect(d.Fill(main, origin, c, 3)).To(Succeed()) // node 2 <- 0
		Expect(d.Record(main, join, side)).To(Succeed())
		Expect(d.Wait(main, origin, join)).To(Succeed())
		Expect(d.Copy(main, origin, out, b)).To(Succeed()) // node 3 <- 2, 1
		g := end()
		Expect(status(d, side)).To(Equal(device.CaptureNone), "every stream of the capture leaves it")

		Expect(d.GraphDeps(g)).To(Equal([][]int{{}, {0}, {0}, {2, 1}}))
		nodes, err := d.GraphNodes(main, g)
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes[3].Kind).To(Equal("memcpy"))
		Expect(nodes[3].Reads).To(ConsistOf(b))
		Expect(nodes[3].Writes).To(ConsistOf(out))

		Expect(d.Launch(main, g, origin)).To(Succeed())
		Expect(read(d, out)).To(Equal(filled(out.Bytes, 2)))
	})

	It("introspects node kinds and the ranges they touch", func() {
		x, y := malloc(d, 64), malloc(d, 64)
		Expect(d.BeginCapture(main, origin, device.Relaxed)).To(Succeed())
		Expect(d.Fill(main, origin, x, 1)).To(Succeed())
		Expect(d.Copy(main, origin, y.Slice(0, 32), x)).To(Succeed())
		Expect(d.Axpy(main, origin, y, x, 2)).To(Succeed())
		g := end()
		nodes, err := d.GraphNodes(other, g)
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes).To(Equal([]device.GraphNode{
			{Kind: "memset", Writes: []device.Ptr{x}},
			{Kind: "memcpy", Reads: []device.Ptr{x.Slice(0, 32)}, Writes: []device.Ptr{y.Slice(0, 32)}},
			{Kind: "kernel", Reads: []device.Ptr{x, y}, Writes: []device.Ptr{y}},
		}))

		// The walk visits the same nodes, in the same order, without listing them: each node
		// is copied out here because its ranges are only valid during the visit.
		var walked []device.GraphNode
		n, err := d.WalkGraph(other, g, func(gn device.GraphNode) {
			walked = append(walked, device.GraphNode{Kind: gn.Kind, Reads: slices.Clone(gn.Reads), Writes: slices.Clone(gn.Writes)})
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(3))
		Expect(walked).To(Equal(nodes))
	})

	It("refuses to end with a forked stream that never joined back, and makes no graph", func() {
		x := malloc(d, 1*KiB)
		fork := newEvent(d)
		Expect(d.BeginCapture(main, origin, device.Global)).To(Succeed())
		Expect(d.Record(main, fork, origin)).To(Succeed())
		Expect(d.Wait(main, side, fork)).To(Succeed())
		Expect(d.Fill(main, side, x, 1)).To(Succeed())
		g, err := d.EndCapture(main, origin)
		e := expectError(err, 107025, device.ClassCaptureUnjoined)
		Expect(e.Detail).To(ContainSubstring(side.String()))
		Expect(g).To(BeZero())
		Expect(d.Counters().LiveGraphs).To(BeZero())
		Expect(d.Counters().CapturesDone).To(BeZero())
		Expect(status(d, origin)).To(Equal(device.CaptureNone), "CANN tears the capture down")
		Expect(status(d, side)).To(Equal(device.CaptureNone))
		Expect(d.Fill(main, side, x, 5)).To(Succeed())
		Expect(read(d, x)).To(Equal(filled(x.Bytes, 5)), "the stream runs eagerly again")
	})

	It("ends normally once the fork is joined", func() {
		x := malloc(d, 1*KiB)
		fork, join := newEvent(d), newEvent(d)
		Expect(d.BeginCapture(main, origin, device.Global)).To(Succeed())
		Expect(d.Record(main, fork, origin)).To(Succeed())
		Expect(d.Wait(main, side, fork)).To(Succeed())
		Expect(d.Fill(main, side, x, 1)).To(Succeed())
		Expect(d.Record(main, join, side)).To(Succeed())
		Expect(d.Wait(main, origin, join)).To(Succeed())
		end()
	})

	It("replays the captured address after a re-base: the bystander now there is overwritten", func() {
		for _, profile := range []string{"cann", "cuda"} {
			d := onProfile(profile)
			s := newStream(d)
			a := malloc(d, 64*KiB)
			Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
			Expect(d.Fill(main, s, a, 0xaa)).To(Succeed())
			g, err := d.EndCapture(main, s)
			Expect(err).NotTo(HaveOccurred())

			Expect(d.Free(main, a)).To(Succeed())
			grown := malloc(d, 128*KiB)
			bystander := malloc(d, 64*KiB)
			Expect(bystander.Addr).To(Equal(a.Addr))
			write(d, bystander, filled(bystander.Bytes, 0x11))

			Expect(d.Launch(main, g, s)).To(Succeed(), "%s: the platform checks nothing", profile)
			Expect(read(d, bystander)).To(Equal(filled(bystander.Bytes, 0xaa)), "%s: silent corruption", profile)
			Expect(read(d, grown)).To(Equal(make([]byte, grown.Bytes)), "%s: the re-based buffer is never written", profile)
		}
	})

	It("replays into memory allocated during the capture and freed afterwards (CANN allows the malloc)", func() {
		Expect(d.BeginCapture(main, origin, device.Global)).To(Succeed())
		tmp, err := d.Malloc(main, 4*KiB)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Fill(main, origin, tmp, 0x42)).To(Succeed())
		g := end()
		Expect(d.Free(main, tmp)).To(Succeed())
		reuser := malloc(d, 4*KiB)
		Expect(reuser.Addr).To(Equal(tmp.Addr))
		Expect(d.Launch(main, g, origin)).To(Succeed())
		Expect(read(d, reuser)).To(Equal(filled(reuser.Bytes, 0x42)))
	})

	It("replays two graphs sharing device slots each with its own pattern", func() {
		x := malloc(d, 1*KiB)
		Expect(d.BeginCapture(main, origin, device.Global)).To(Succeed())
		Expect(d.Fill(main, origin, x, 1)).To(Succeed())
		g1 := end()
		Expect(d.BeginCapture(main, origin, device.Global)).To(Succeed())
		Expect(d.Fill(main, origin, x, 2)).To(Succeed())
		g2 := end()
		for _, step := range []struct {
			g    device.Graph
			want byte
		}{{g1, 1}, {g2, 2}, {g1, 1}, {g2, 2}} {
			Expect(d.Launch(main, step.g, origin)).To(Succeed())
			Expect(read(d, x)).To(Equal(filled(x.Bytes, step.want)))
		}
	})

	It("refuses to launch into a capturing stream, and destroyed graphs", func() {
		x := malloc(d, 1*KiB)
		Expect(d.BeginCapture(main, origin, device.Global)).To(Succeed())
		Expect(d.Fill(main, origin, x, 1)).To(Succeed())
		g := end()
		Expect(d.BeginCapture(main, side, device.Global)).To(Succeed())
		expectError(d.Launch(main, g, side), 207000, device.ClassNotSupported)
		_, err := d.EndCapture(main, side)
		Expect(err).NotTo(HaveOccurred())

		Expect(d.DestroyGraph(main, g)).To(Succeed())
		expectError(d.Launch(main, g, origin), 107000, device.ClassInvalidValue)
		_, err = d.GraphNodes(main, g)
		expectError(err, 107000, device.ClassInvalidValue)
		visited, err := d.WalkGraph(main, g, func(device.GraphNode) { Fail("a destroyed graph has no nodes to visit") })
		expectError(err, 107000, device.ClassInvalidValue)
		Expect(err.Error()).To(HavePrefix("sim: GraphNodes: "), "the walk is the same call as the list, by the same name")
		Expect(visited).To(BeZero())
	})

	It("ends a capture without a graph when one of its streams is destroyed", func() {
		fork := newEvent(d)
		Expect(d.BeginCapture(main, origin, device.Global)).To(Succeed())
		Expect(d.Record(main, fork, origin)).To(Succeed())
		Expect(d.Wait(main, side, fork)).To(Succeed())
		Expect(d.DestroyStream(main, side)).To(Succeed())
		Expect(status(d, origin)).To(Equal(device.CaptureNone))
		done, err := d.QueryEvent(main, fork)
		Expect(err).NotTo(HaveOccurred(), "events of the ended capture read as never recorded")
		Expect(done).To(BeTrue())
	})
})

var _ = Describe("replay order", func() {
	// raceGraph captures two independent branches writing one buffer: the replay order decides
	// which value is left. In capture order the origin's fill (1) runs last.
	raceGraph := func(d *sim.Device) (device.Graph, device.Stream, device.Ptr) {
		GinkgoHelper()
		origin, side := newStream(d), newStream(d)
		x := malloc(d, 1*KiB)
		fork, join := newEvent(d), newEvent(d)
		Expect(d.BeginCapture(main, origin, device.Global)).To(Succeed())
		Expect(d.Record(main, fork, origin)).To(Succeed())
		Expect(d.Wait(main, side, fork)).To(Succeed())
		Expect(d.Fill(main, side, x, 2)).To(Succeed())
		Expect(d.Fill(main, origin, x, 1)).To(Succeed())
		Expect(d.Record(main, join, side)).To(Succeed())
		Expect(d.Wait(main, origin, join)).To(Succeed())
		g, err := d.EndCapture(main, origin)
		Expect(err).NotTo(HaveOccurred())
		return g, origin, x
	}
	// outcomes launches the race graph n times on a fresh device and returns the value left each time.
	outcomes := func(seed uint64, n int) []byte {
		GinkgoHelper()
		d := openDevice(sim.Options{Seed: seed})
		g, s, x := raceGraph(d)
		var out []byte
		for range n {
			Expect(d.Launch(main, g, s)).To(Succeed())
			out = append(out, read(d, x)[0])
		}
		return out
	}

	It("is capture order without a seed", func() {
		Expect(outcomes(0, 16)).To(Equal(filled(16, 1)))
	})

	It("is reproducible for one seed and differs from capture order for some seed", func() {
		Expect(outcomes(7, 32)).To(Equal(outcomes(7, 32)))
		differs := false
		for seed := uint64(1); seed <= 8 && !differs; seed++ {
			for _, v := range outcomes(seed, 16) {
				differs = differs || v == 2
			}
		}
		Expect(differs).To(BeTrue(), "a seed shuffles independent branches")
	})

	It("never runs a node before its dependencies", func() {
		// A chain: every seed must give the chain's result.
		d := openDevice(sim.Options{Seed: 99})
		s := newStream(d)
		x, y := malloc(d, 64), malloc(d, 64)
		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		Expect(d.Fill(main, s, x, 4)).To(Succeed())
		Expect(d.Copy(main, s, y, x)).To(Succeed())
		Expect(d.Fill(main, s, x, 5)).To(Succeed())
		g, err := d.EndCapture(main, s)
		Expect(err).NotTo(HaveOccurred())
		for range 20 {
			Expect(d.Launch(main, g, s)).To(Succeed())
			Expect(read(d, y)).To(Equal(filled(64, 4)))
		}
	})
})
