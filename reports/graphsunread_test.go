package reports_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/verdict"
)

// An Ascend result: a graph's tasks of no named kind (GraphCheck.Opaque), and a device that read
// no graph at all (Result.GraphsUnread).
var _ = Describe("an Ascend graph in the text detail", func() {
	const unread = "the acl backend cannot list a graph's nodes on this device (replaycheck devices names what it lacks)"
	ascend := func() *capture.Result {
		res := exactResult()
		res.Backend, res.Platform = "acl", "acl/cann-9.1-a2a3"
		return res
	}

	It("counts the tasks of no named kind on the graph line", func() {
		res := ascend()
		res.Outcome, res.Reason = probes.Corrupted, "every byte is right, but graph main holds 0 work nodes and 1 task of no named kind, which cannot hold the 2 fill, copy or axpy ops captured"
		res.Graphs = []capture.GraphCheck{{Capture: "main", Nodes: 1, Work: 0, Issued: 2, Opaque: 1}}
		rep := reports.New("replaycheck", "dev", reports.Options{})
		rep.Add(res)
		out := string(writeText(rep, reports.TextOptions{}))
		Expect(out).To(ContainSubstring("graph     of capture main: 1 node, 0 of them work and 1 task of no named kind, for 2 captured fill, copy or axpy ops"))

		// A graph without opaque tasks says nothing of them.
		res.Graphs = []capture.GraphCheck{{Capture: "main", Nodes: 3, Work: 3, Issued: 2}}
		rep = reports.New("replaycheck", "dev", reports.Options{})
		rep.Add(res)
		out = string(writeText(rep, reports.TextOptions{}))
		Expect(out).To(ContainSubstring("graph     of capture main: 3 nodes, 3 of them work, for 2 captured fill, copy or axpy ops"))
		Expect(out).NotTo(ContainSubstring("no named kind, for"))
	})

	It("says once in an instance's detail that its graphs were not read, and why", func() {
		res := ascend()
		res.GraphsUnread = unread
		rep := reports.New("replaycheck", "dev", reports.Options{})
		rep.Add(res)
		Expect(string(writeText(rep, reports.TextOptions{}))).NotTo(ContainSubstring("not read"), "a passing instance shows no detail")

		rep.Results[0].Verdict = verdict.Verdict{Status: verdict.Fail, Rule: verdict.RuleOutcome}
		out := string(writeText(rep, reports.TextOptions{}))
		Expect(strings.Count(out, "not read")).To(Equal(1), out)
		Expect(out).To(ContainSubstring("graphs    not read: " + unread))

		// The same failing instance with its graphs read says nothing of it.
		rep.Results[0].GraphsUnread = ""
		Expect(string(writeText(rep, reports.TextOptions{}))).NotTo(ContainSubstring("not read"))
	})

	It("is graphs_unread in the JSON, and reads back", func() {
		res := ascend()
		res.GraphsUnread = unread
		rep := reports.New("replaycheck", "dev", reports.Options{})
		rep.Backend, rep.Platform = res.Backend, res.Platform
		rep.Add(res)
		out := writeJSON(rep)
		Expect(string(out)).To(ContainSubstring(`"graphs_unread": "` + unread + `"`))
		doc, err := reports.ReadDocument(out)
		Expect(err).NotTo(HaveOccurred())
		Expect(doc.Results).To(HaveLen(1))
		Expect(doc.Results[0].GraphsUnread).To(Equal(unread))

		rep.Results[0].GraphsUnread = ""
		Expect(string(writeJSON(rep))).NotTo(ContainSubstring("graphs_unread"))
	})
})
