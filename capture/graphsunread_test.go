package capture_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// blindRuntime is the reference guards in front of a device that lists graph nodes, saying it
// cannot: a runtime under test without graph introspection of its own.
type blindRuntime struct{ *guard.Device }

func (r blindRuntime) Capabilities() device.Capabilities {
	c := r.Device.Capabilities()
	c.GraphIntrospection = false
	return c
}

// blindSayingWhy is a blindRuntime that says which capability it was asked about (runtime.Lacker).
type blindSayingWhy struct{ blindRuntime }

func (r blindSayingWhy) Lacks(capability string) string { return "asked about " + capability }

func (r blindSayingWhy) RuntimeExtensions() runtime.Extensions {
	return runtime.Extensions{Of: r, Lacks: r}
}

// A result says when its graphs were not read, and why: the graph check that finds work the engine
// never captured did not run, and a reader must not take the missing findings for a clean graph.
var _ = Describe("a result whose graphs were not read", func() {
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
	It("says nothing where the device reads every graph", func() {
		dev := openSim("cann")
		DeferCleanup(dev.Close)
		res := runOn(dev, parseProbe(probe), device.Global, 2)
		Expect(res.Graphs).To(HaveLen(1))
		Expect(res.GraphsUnread).To(BeEmpty())
	})

	It("names the backend that cannot list a graph's nodes", func() {
		dev := openSim("cann")
		DeferCleanup(dev.Close)
		res := runOn(&tamperedGraphs{firstAlloc: firstAlloc{Device: dev}}, parseProbe(probe), device.Global, 2)
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(res.Graphs).To(BeEmpty())
		Expect(res.GraphsUnread).To(Equal("the sim backend cannot list a graph's nodes on this device (replaycheck devices names what it lacks)"))
	})

	It("says nothing when no capture made a graph", func() {
		dev := openSim("cuda")
		DeferCleanup(dev.Close)
		res := runOn(&tamperedGraphs{firstAlloc: firstAlloc{Device: dev}}, parseProbe(header+`
  - name: p
    hazard: none
    buffers:
      a: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - sync: {stream: main}
    expect: {guarded: rejected, unguarded: rejected}
`), device.Global, 2)
		Expect(res.Outcome).To(Equal(probes.Rejected), res.Reason)
		Expect(res.Rejection.Invalidated).To(BeTrue(), "the capture made no graph")
		Expect(res.GraphsUnread).To(BeEmpty())
	})

	It("names the runtime under test that cannot, where its device can, with the runtime's why", func() {
		dev := openSim("cann")
		DeferCleanup(dev.Close)
		run := func(open func(g *guard.Device) runtime.Runtime) *capture.Result {
			rut := &runtime.UnderTest{Name: "plugin-like", Open: func(d device.Device, guarded bool) (runtime.Runtime, error) {
				g, err := guard.New(d, guard.Program)
				return open(g), err
			}}
			return capture.Run(context.Background(), dev, probes.Instance{Probe: parseProbe(probe), Mode: device.Global, Replays: 2}, capture.Options{Runtime: rut})
		}
		res := run(func(g *guard.Device) runtime.Runtime { return blindRuntime{g} })
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(res.Graphs).To(BeEmpty())
		Expect(res.GraphsUnread).To(Equal("runtime plugin-like cannot list a graph's nodes"))

		res = run(func(g *guard.Device) runtime.Runtime { return blindSayingWhy{blindRuntime{g}} })
		Expect(res.GraphsUnread).To(Equal("runtime plugin-like cannot list a graph's nodes: asked about graph-introspection"))
	})
})
