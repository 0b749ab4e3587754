package sim_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

// How a capture records its nodes: the allocation a range lies in is remembered between calls,
// dependencies and owners are stored only where they differ from the node before, and works are
// kept in blocks that a destroyed graph hands to the next capture. Each spec fails when one of
// those shortcuts answers differently from looking everything up afresh.
var _ = Describe("recording a capture", func() {
	It("sees the new generation in a capture after a free and a malloc at the same address", func() {
		d := openDevice(sim.Options{ProfileYAML: []byte(staleLab)})
		s := newStream(d)
		x := malloc(d, 4*KiB)
		g1 := captureFills(d, s, x, 1)
		Expect(d.Free(main, x)).To(Succeed())
		y := malloc(d, 4*KiB)
		Expect(y).To(Equal(x), "LIFO reuse hands out the same address")
		g2 := captureFills(d, s, y, 1)
		Expect(d.Launch(main, g2, s)).To(Succeed(), "y's own capture recorded y, not the x it replaced")
		Expect(d.Launch(main, g1, s)).To(MatchError(ContainSubstring("LAB_STALE")))
	})

	It("refuses a range freed after a check found its allocation", func() {
		d := onProfile("cann")
		s := newStream(d)
		x := malloc(d, 4*KiB)
		Expect(d.Fill(main, s, x, 1)).To(Succeed())
		Expect(d.Free(main, x)).To(Succeed())
		e := expectError(d.Fill(main, s, x, 1), 107000, device.ClassInvalidValue)
		Expect(e.Detail).To(ContainSubstring("does not lie inside a live allocation"))
	})

	It("refuses a range that wraps past the top of the address space, whatever was found last", func() {
		d := onProfile("cann")
		s := newStream(d)
		x := malloc(d, 4*KiB)
		Expect(d.Fill(main, s, x, 1)).To(Succeed())
		wraps := device.Ptr{Addr: ^uint64(0) - 100, Bytes: 4 * KiB} // ends below x's end
		expectError(d.Fill(main, s, wraps, 1), 107000, device.ClassInvalidValue)
	})

	It("keeps the dependencies of streams whose work interleaves", func() {
		d := onProfile("cann")
		s1, s2 := newStream(d), newStream(d)
		e1, e2 := newEvent(d), newEvent(d)
		x := malloc(d, 4*KiB)
		fill := func(s device.Stream) { Expect(d.Fill(main, s, x.Slice(0, 512), 1)).To(Succeed()) }
		Expect(d.BeginCapture(main, s1, device.Global)).To(Succeed())
		fill(s1) // 0
		Expect(d.Record(main, e1, s1)).To(Succeed())
		Expect(d.Wait(main, s2, e1)).To(Succeed()) // s2 forks at node 0
		fill(s2)                                   // 1: after 0, the node before it
		fill(s1)                                   // 2: after 0
		fill(s2)                                   // 3: after 1
		fill(s1)                                   // 4: after 2
		fill(s1)                                   // 5: after 4, the node before it
		Expect(d.Record(main, e2, s2)).To(Succeed())
		Expect(d.Wait(main, s1, e2)).To(Succeed()) // s1 joins node 3
		fill(s1)                                   // 6: after 5 and 3
		fill(s1)                                   // 7: after 6
		g, err := d.EndCapture(main, s1)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.GraphDeps(g)).To(Equal([][]int{{}, {0}, {0}, {1}, {2}, {4}, {5, 3}, {6}}))
	})

	It("replays a capture of several blocks of nodes in capture order and lists every node", func() {
		const n = 10000 // more than two blocks
		d := onProfile("cann")
		s := newStream(d)
		x := malloc(d, n+1)
		// Node i writes bytes i and i+1: every byte ends as the later node left it, so two nodes
		// replayed out of order anywhere, a block boundary included, show.
		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		for i := range n {
			Expect(d.Fill(main, s, x.Slice(int64(i), 2), value(i))).To(Succeed())
		}
		g, err := d.EndCapture(main, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Launch(main, g, s)).To(Succeed())
		Expect(d.SyncStream(main, s)).To(Succeed())
		Expect(read(d, x)).To(Equal(rampOf(n)))
		nodes, err := d.GraphNodes(main, g)
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes).To(HaveLen(n))
		for _, i := range []int{0, 4095, 4096, 8191, 8192, n - 1} {
			Expect(nodes[i].Writes).To(Equal([]device.Ptr{x.Slice(int64(i), 2)}), "node %d", i)
		}
		deps := d.GraphDeps(g)
		Expect(deps[0]).To(BeEmpty())
		for i := 1; i < n; i++ {
			Expect(deps[i]).To(Equal([]int{i - 1}), "node %d", i)
		}
	})

	It("records a capture into a destroyed graph's blocks only after that graph's launches ran", func() {
		const n, shorter = 10000, 6000
		d := onProfile("cann")
		s := newStream(d)
		x := malloc(d, n*4)
		g1 := captureFills(d, s, x, n)
		Expect(d.Launch(main, g1, s)).To(Succeed()) // queued, not run yet
		Expect(d.DestroyGraph(main, g1)).To(Succeed())
		head := x.Slice(0, shorter*4)
		g2 := captureFillsOf(d, s, head, shorter, func(int) byte { return 0xee })
		Expect(read(d, x)).To(Equal(fillsOf(x.Bytes, n, value)), "the first graph ran its own nodes")
		Expect(d.Launch(main, g1, s)).To(MatchError(ContainSubstring("does not exist")))
		// The second graph is shorter than the first: what is left of the first's nodes in the
		// blocks it handed on must not run.
		write(d, x, make([]byte, x.Bytes))
		Expect(d.Launch(main, g2, s)).To(Succeed())
		Expect(d.SyncStream(main, s)).To(Succeed())
		want := make([]byte, x.Bytes)
		copy(want, filled(head.Bytes, 0xee))
		Expect(read(d, x)).To(Equal(want))
		nodes, err := d.GraphNodes(main, g2)
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes).To(HaveLen(shorter))
	})

	It("judges each captured range by the allocation it lay in, across runs of ranges on one buffer", func() {
		d := openDevice(sim.Options{ProfileYAML: []byte(staleLab)})
		s := newStream(d)
		a, b := malloc(d, 4*KiB), malloc(d, 8*KiB)
		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		Expect(d.Fill(main, s, a, 1)).To(Succeed())
		Expect(d.Fill(main, s, a, 2)).To(Succeed())
		Expect(d.Fill(main, s, b, 3)).To(Succeed())
		Expect(d.Copy(main, s, b, a)).To(Succeed()) // reads a, writes b's first 4 KiB
		Expect(d.Axpy(main, s, a, b.Slice(0, 4*KiB), 3)).To(Succeed())
		Expect(d.Fill(main, s, b, 4)).To(Succeed())
		g, err := d.EndCapture(main, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Free(main, b)).To(Succeed())
		err = d.Launch(main, g, s)
		Expect(err).To(MatchError(ContainSubstring("LAB_FREED")), "a's ranges are a's: none is stale")
		Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("%v is in no live allocation (of 8192 bytes at capture)", b))))
		Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("%v is in no live allocation (of 8192 bytes at capture)", b.Slice(0, 4*KiB)))))
		Expect(err).NotTo(MatchError(ContainSubstring("of 4096 bytes")))
	})
})

func value(i int) byte { return byte(i%251 + 1) }

// rampOf is what nodes i = 0..n-1, each filling bytes i and i+1 with value(i), leave in n+1 bytes.
func rampOf(n int) []byte {
	out := make([]byte, n+1)
	for i := range n {
		out[i], out[i+1] = value(i), value(i)
	}
	return out
}

// captureFills captures n fills of x, each of a slice of x filled with value(i) (see fillsOf).
func captureFills(d *sim.Device, s device.Stream, x device.Ptr, n int) device.Graph {
	GinkgoHelper()
	return captureFillsOf(d, s, x, n, value)
}

func captureFillsOf(d *sim.Device, s device.Stream, x device.Ptr, n int, v func(int) byte) device.Graph {
	GinkgoHelper()
	each := x.Bytes / int64(n)
	Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
	for i := range n {
		Expect(d.Fill(main, s, x.Slice(int64(i)*each, each), v(i))).To(Succeed())
	}
	g, err := d.EndCapture(main, s)
	Expect(err).NotTo(HaveOccurred())
	return g
}

// fillsOf is what n fills of equal slices of size bytes, the i-th with v(i), leave.
func fillsOf(size int64, n int, v func(int) byte) []byte {
	out := make([]byte, size)
	each := size / int64(n)
	for i := range n {
		for j := range each {
			out[int64(i)*each+j] = v(i)
		}
	}
	return out
}
