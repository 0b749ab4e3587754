//go:build cgo

package acl_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/acl"
)

// Reading a captured graph through CANN 9.1's trial APIs (aclmdlRIGetStreams,
// aclmdlRIGetTasksByStream, aclmdlRITaskGetType), over the fake, whose tasks are its device model's
// graph nodes typed as the runtime types them.
var _ = Describe("reading a graph's tasks", func() {
	var d device.Device
	BeforeEach(func(ctx SpecContext) {
		if onHardware {
			Skip("the fake's tasks; on an NPU the conformance suite reads the graph")
		}
		_, d = open(ctx, libs.Full)
	})
	capture := func(ops func(s device.Stream)) device.Graph {
		GinkgoHelper()
		s, err := d.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		ops(s)
		g, err := d.EndCapture(device.Main, s)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(d.DestroyGraph(device.Main, g)).To(Succeed()) })
		return g
	}
	fillsAndCopies := func(s device.Stream) {
		x, _ := d.Malloc(device.Main, 256)
		y, _ := d.Malloc(device.Main, 256)
		pinned, err := d.AllocHost(device.Main, 64, device.Pinned)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Fill(device.Main, s, x, 7)).To(Succeed())
		Expect(d.Copy(device.Main, s, y, x)).To(Succeed())
		Expect(d.Copy(device.Main, s, pinned, y.Slice(0, 64))).To(Succeed())
	}

	It("lists one task node per captured fill and copy, without ranges: ACL gives no parameters for them", func() {
		g := capture(fillsAndCopies)
		nodes, err := d.GraphNodes(device.Other, g)
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes).To(Equal([]device.GraphNode{{Kind: "task"}, {Kind: "task"}, {Kind: "task"}}))
		n, err := device.WalkGraph(d, device.Main, g, func(device.GraphNode) {})
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(3))
	})

	It("lists an empty graph as no nodes", func() {
		nodes, err := d.GraphNodes(device.Main, capture(func(device.Stream) {}))
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes).To(BeEmpty())
	})

	It("lists what the runtime reports, a task it leaves out included", func() {
		g := capture(fillsAndCopies)
		GinkgoT().Setenv("REPLAYCHECK_FAKE_RI_DROP", "1")
		nodes, err := d.GraphNodes(device.Main, g)
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes).To(HaveLen(2), "the binding counts the tasks the runtime reports, not the ops it issued")
	})

	It("reports a failed task query with the runtime's code and the call that failed", func() {
		g := capture(fillsAndCopies)
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "aclmdlRITaskGetType=107000")
		_, err := d.GraphNodes(device.Main, g)
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue(), "%v", err)
		Expect([]any{e.Op, e.Code, e.Name}).To(Equal([]any{"GraphNodes", 107000, "ACL_ERROR_RT_PARAM_INVALID"}))
		Expect(e.Detail).To(Equal("aclmdlRITaskGetType: " + injected("aclmdlRITaskGetType", 107000)))
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "aclmdlRIGetStreams=107000")
		_, err = d.GraphNodes(device.Main, g)
		Expect(err).To(MatchError(ContainSubstring("aclmdlRIGetStreams: ")))
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "")
		_, err = d.GraphNodes(device.Main, g)
		Expect(err).NotTo(HaveOccurred())
	})

	It("is off, saying why, on a runtime without one of the entry points, which still opens and captures", func(ctx SpecContext) {
		b, d := open(ctx, libs.Extra["no-graph-reading"])
		Expect(d.Capabilities().GraphIntrospection).To(BeFalse())
		info, err := b.Info(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Lacks).To(Equal([]string{"graph reading: the runtime library lacks aclmdlRIGetTasksByStream (CANN 9.1 trial APIs)"}))
		x, _ := d.Malloc(device.Main, 64)
		s, _ := d.CreateStream(device.Main, device.Blocking)
		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		Expect(d.Fill(device.Main, s, x, 1)).To(Succeed())
		g, err := d.EndCapture(device.Main, s)
		Expect(err).NotTo(HaveOccurred())
		_, err = d.GraphNodes(device.Main, g)
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue(), "%v", err)
		Expect(e.Class).To(Equal(device.ClassNotSupported))
		Expect(e.Detail).To(Equal("the runtime library lacks aclmdlRIGetTasksByStream (CANN 9.1 trial APIs): the graph is not read"))
	})
})

var _ = Describe("task types", func() {
	It("name kernel and event tasks, and call every other type, a later runtime's included, a task", func() {
		kinds := map[int]string{}
		for t := range 8 {
			kinds[t] = acl.TaskKind(t)
		}
		Expect(kinds).To(Equal(map[int]string{0: "task", 1: "kernel", 2: "event-record", 3: "event-wait", 4: "task", 5: "task", 6: "task", 7: "task"}))
	})
})
