package capture_test

import (
	"math/rand/v2"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// firstAlloc keeps the first buffer allocated on its device: the target of a tampered node.
type firstAlloc struct {
	device.Device
	target device.Ptr
}

func (d *firstAlloc) Malloc(t device.Thread, n int64) (device.Ptr, error) {
	p, err := d.Device.Malloc(t, n)
	if err == nil && d.target.IsZero() {
		d.target = p
	}
	return p, err
}

// tamperedGraphs reports one more node than each graph holds: a memset over the first buffer the
// probe allocated, as a runtime that slipped its own work into a capture would leave it. Without
// introspection it hides the capability.
type tamperedGraphs struct {
	firstAlloc
	introspection bool
}

func (d *tamperedGraphs) Capabilities() device.Capabilities {
	c := d.Device.Capabilities()
	c.GraphIntrospection = d.introspection
	return c
}

func (d *tamperedGraphs) GraphNodes(t device.Thread, g device.Graph) ([]device.GraphNode, error) {
	nodes, err := d.Device.GraphNodes(t, g)
	return append(nodes, device.GraphNode{Kind: "memset", Writes: []device.Ptr{d.target}}), err
}

// tamperedWalk is tamperedGraphs for the device's walk of a graph (device.GraphWalker), the way
// the engine reads a graph when the device has one: after the graph's own nodes it visits a
// memset over the first buffer the probe allocated. walks counts the walks.
type tamperedWalk struct {
	firstAlloc
	walks int
}

// Extensions states the walk, the tampered one.
func (d *tamperedWalk) Extensions() device.Extensions { return device.Extensions{Of: d, Walk: d} }

func (d *tamperedWalk) WalkGraph(t device.Thread, g device.Graph, visit func(device.GraphNode)) (int, error) {
	d.walks++
	n, err := device.WalkGraph(d.Device, t, g, visit)
	if err == nil {
		visit(device.GraphNode{Kind: "memset", Writes: []device.Ptr{d.target}})
		n++
	}
	return n, err
}

// The graph check finds work in a graph that the engine never captured; the same instance on a
// backend that cannot list nodes passes as exact, so the check is what finds it.
var _ = Describe("the graph check", func() {
	const probe = header + `
  - name: p
    hazard: none
    buffers:
      src: {bytes: 4KiB, init: iota32}
      dst: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - copy: {dst: dst, src: src}
    expect: {guarded: exact, unguarded: exact}
`
	It("records every graph as faithful when it holds what was captured", func() {
		dev := openSim("cann")
		defer dev.Close()
		res := runOn(dev, parseProbe(probe), device.Global, 2)
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(res.Graphs).To(ConsistOf(capture.GraphCheck{Capture: "main", Nodes: 1, Work: 1, Issued: 1}))
	})

	It("calls a graph holding work the engine did not capture corrupted, and is the only thing that sees it", func() {
		dev := openSim("cann")
		defer dev.Close()
		res := runOn(&tamperedGraphs{firstAlloc: firstAlloc{Device: dev}, introspection: true}, parseProbe(probe), device.Global, 2)
		Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
		Expect(res.Reason).To(MatchRegexp(`graph main holds a memset node that writes 0x[0-9a-f]+\+4096, which no buffer of the capture's ops writes`))
		Expect(res.Graphs).To(ConsistOf(SatisfyAll(
			HaveField("Work", 2), HaveField("Issued", 1),
			HaveField("Unrecorded", ConsistOf(HaveField("Access", capture.AccessWrite))))))
		Expect(res.Graphs[0].Faithful()).To(BeFalse())

		blind := runOn(&tamperedGraphs{firstAlloc: firstAlloc{Device: dev}}, parseProbe(probe), device.Global, 2)
		Expect(blind.Outcome).To(Equal(probes.Exact), "without introspection nothing shows the extra node")
		Expect(blind.Graphs).To(BeEmpty())
	})

	It("reads a graph by the device's walk where it has one, and finds the same as listing its nodes", func() {
		dev := openSim("cann")
		defer dev.Close()
		walked := &tamperedWalk{firstAlloc: firstAlloc{Device: dev}}
		res := runOn(walked, parseProbe(probe), device.Global, 2)
		Expect(walked.walks).To(Equal(1), "the engine walked the graph")
		Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
		Expect(res.Reason).To(MatchRegexp(`graph main holds a memset node that writes 0x[0-9a-f]+\+4096, which no buffer of the capture's ops writes`))
		Expect(res.Graphs).To(ConsistOf(SatisfyAll(HaveField("Nodes", 2), HaveField("Work", 2), HaveField("Issued", 1))))

		// Every capture of the catalog, checked by walking (the simulator's own walk) and by
		// listing: the same checks, node for node.
		cat, err := loadCatalog()
		Expect(err).NotTo(HaveOccurred())
		checked := 0
		for _, set := range cat.sets {
			for _, p := range set.Probes {
				byWalk := runOn(dev, p, device.Global, 2)
				byList := runOn(opaque{dev}, p, device.Global, 2)
				Expect(byWalk.Graphs).To(Equal(byList.Graphs), p.ID())
				Expect(byWalk.Outcome).To(Equal(byList.Outcome), p.ID())
				checked += len(byWalk.Graphs)
			}
		}
		Expect(checked).To(BeNumerically(">", 50))
	})
})

var _ = Describe("the graph check's index of the residency ledger", func() {
	// definedHolds is the check as defined: some entry of the capture holds p with an access that
	// allows how.
	definedHolds := func(ledger []capture.Residency, name string, p device.Ptr, how capture.Access) bool {
		for _, l := range ledger {
			if l.Capture == name && l.Range.Contains(p) && (l.Access == how || l.Access == capture.AccessReadWrite) {
				return true
			}
		}
		return false
	}

	It("answers as asking every entry would, over nested, adjacent and re-based entries of several captures", func() {
		rng := rand.New(rand.NewPCG(5, 8))
		accesses := []capture.Access{capture.AccessRead, capture.AccessWrite, capture.AccessReadWrite}
		held, missed := 0, 0
		for trial := range 500 {
			var ledger []capture.Residency
			for range rng.IntN(40) + 1 {
				// A window of 64 KiB: entries overlap as a freed buffer and its successor at the
				// same address do, nest, touch, or stand apart.
				ledger = append(ledger, capture.Residency{
					Capture: []string{"a", "b"}[rng.IntN(2)],
					Range:   device.Ptr{Addr: 0x7f0000000000 + rng.Uint64N(64<<10), Bytes: rng.Int64N(8<<10) + 1},
					Access:  accesses[rng.IntN(3)],
				})
			}
			for range 200 {
				p := device.Ptr{Addr: 0x7f0000000000 + rng.Uint64N(72<<10), Bytes: rng.Int64N(2<<10) + 1}
				if rng.IntN(4) == 0 {
					// A range exactly an entry's, or ending exactly at its end.
					l := ledger[rng.IntN(len(ledger))].Range
					p = device.Ptr{Addr: l.Addr + uint64(rng.Int64N(l.Bytes)), Bytes: 0}
					p.Bytes = int64(l.End() - p.Addr)
				}
				how := []capture.Access{capture.AccessRead, capture.AccessWrite}[rng.IntN(2)]
				want := definedHolds(ledger, "a", p, how)
				Expect(capture.LedgerHolds(ledger, "a", p, how)).To(Equal(want), "trial %d: %v %s in %v", trial, p, how, ledger)
				if want {
					held++
				} else {
					missed++
				}
			}
		}
		Expect(held).To(BeNumerically(">", 10000))
		Expect(missed).To(BeNumerically(">", 10000))
	})
})
