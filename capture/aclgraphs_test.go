package capture_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/probes"
)

// An Ascend graph read through CANN 9.1's trial APIs (device/acl over the fake libascendcl):
// ACL names no kind for a fill or a copy task, so the graph check counts its tasks against the
// captured ops. A runtime that leaves a task out is found; one without the entry points is not
// read at all, and its results say so.
var _ = Describe("the graph check on ACL", func() {
	const probe = header + `
  - name: p
    hazard: none
    buffers:
      src: {bytes: 4KiB, init: iota32}
      dst: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - fill: {dst: dst, value: 3}
        - copy: {dst: dst, src: src}
    expect: {guarded: exact, unguarded: exact}
`
	openACL := func(ctx SpecContext, v fake.Variant) device.Device {
		GinkgoHelper()
		if why := backends.Unavailable("acl"); why != "" {
			Skip(why)
		}
		path, err := fake.Build(GinkgoT().TempDir(), fake.ACL, v)
		Expect(err).NotTo(HaveOccurred())
		b, err := backends.Open("acl", backends.Config{Library: path})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(b.Close)
		dev, err := b.Open(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(dev.Close)
		return dev
	}

	It("records each graph's tasks, faithful when they can hold the captured ops", func(ctx SpecContext) {
		res := runOn(openACL(ctx, fake.Variant{}), parseProbe(probe), device.Global, 2)
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(res.Graphs).To(ConsistOf(capture.GraphCheck{Capture: "main", Nodes: 2, Work: 0, Issued: 2, Opaque: 2}))
		Expect(res.GraphsUnread).To(BeEmpty(), "the graph was read")
	})

	It("calls a graph whose runtime leaves a task out corrupted, and only the check sees it", func(ctx SpecContext) {
		dev := openACL(ctx, fake.Variant{})
		GinkgoT().Setenv("REPLAYCHECK_FAKE_RI_DROP", "0")
		res := runOn(dev, parseProbe(probe), device.Global, 2)
		Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
		Expect(res.Reason).To(ContainSubstring("graph main holds 0 work nodes and 1 task of no named kind, which cannot hold the 2 fill, copy or axpy ops captured"))
		Expect(res.Graphs).To(ConsistOf(capture.GraphCheck{Capture: "main", Nodes: 1, Work: 0, Issued: 2, Opaque: 1}))
		Expect(res.CorruptedRounds).To(BeZero(), "every byte is right: the fake replays the whole graph")
	})

	It("reads no graph on a runtime without the entry points", func(ctx SpecContext) {
		dev := openACL(ctx, fake.Variant{Omit: "aclmdlRIGetStreams"})
		Expect(dev.Capabilities().GraphIntrospection).To(BeFalse())
		GinkgoT().Setenv("REPLAYCHECK_FAKE_RI_DROP", "0")
		res := runOn(dev, parseProbe(probe), device.Global, 2)
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(res.Graphs).To(BeEmpty())
		Expect(res.GraphsUnread).To(Equal("the acl backend cannot list a graph's nodes on this device (replaycheck devices names what it lacks)"),
			"the result says the graph the runtime dropped a task of was not read")
	})
})
