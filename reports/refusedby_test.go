package reports_test

import (
	"bytes"
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/verdict"
)

// namedRefusal is refusedResult with the refusing guard named and the probe naming it.
func namedRefusal() reports.Entry {
	res := refusedResult()
	res.Refusal.Guard = "retained"
	res.Reason = res.Refusal.Reason()
	res.RefusedBy = &probes.RefusedBy{Guard: "retained", Step: "between op 1"}
	return reports.Entry{Result: *res, Verdict: verdict.Judge(res, nil)}
}

// wrongGuard is the same instance refused by the residency check at the replay instead: the
// retained slot's refusal went missing.
func wrongGuard() reports.Entry {
	res := refusedResult()
	res.Refusal.Guard, res.Refusal.Step, res.Refusal.Op = "residency", mustStep("replay 1 main"), "Launch"
	res.Refusal.Detail = "replay of graph 1 refused: dst was re-based"
	res.Reason = res.Refusal.Reason()
	res.RefusedBy = &probes.RefusedBy{Guard: "retained", Step: "between op 1"}
	return reports.Entry{Result: *res, Verdict: verdict.Judge(res, nil)}
}

var _ = Describe("who refused, in the reports", func() {
	report := func(es ...reports.Entry) *reports.Report {
		rep := reports.New("replaycheck", "dev", reports.Options{})
		rep.Backend, rep.Platform = "sim", "sim/cann"
		for _, e := range es {
			rep.AddEntry(e)
		}
		return rep
	}

	It("names the guard on the instance's line and its refusal line, and says the reason once", func() {
		e := namedRefusal()
		Expect(e.Verdict).To(Equal(verdict.Verdict{Status: verdict.Pass, Rule: verdict.RuleRefusedBy}))
		out := string(writeText(report(e), reports.TextOptions{Verbose: true}))
		Expect(out).To(ContainSubstring("refused  refused   guard retained refused between op 1 (Provision)\n" +
			`    refusal   between op 1: Provision, by guard retained: retained slot "dst" holds`))
		Expect(strings.Count(out, "would re-base it")).To(Equal(1), "the reason repeats the refusal line:\n%s", out)
	})

	It("fails the wrong guard, saying which refused where and which was expected, in text and markdown", func() {
		e := wrongGuard()
		Expect(e.Verdict.Status).To(Equal(verdict.Fail))
		out := string(writeText(report(e), reports.TextOptions{}))
		Expect(out).To(ContainSubstring("refused by guard residency at replay 1 main (Launch), expected refused by guard retained at between op 1"))
		Expect(out).To(ContainSubstring("refusal   replay 1 main: Launch, by guard residency: replay of graph 1 refused"))
		md := string(writeMarkdown(report(e)))
		Expect(md).To(ContainSubstring("(refused by guard residency at replay 1 main)"))
		Expect(md).To(ContainSubstring("expected refused by guard retained at between op 1"))
	})

	It("says in the HTML page's list of failures, whole, which guard refused where and which was expected", func() {
		var buf bytes.Buffer
		Expect(reports.WriteHTML(&buf, report(wrongGuard()))).To(Succeed())
		Expect(strings.Count(buf.String(), "refused by guard residency at replay 1 main (Launch), expected refused by guard retained at between op 1")).
			To(BeNumerically(">=", 2), "in What failed and on the failure's own line, not cut before the step expected")
	})

	It("keeps the guard and the expectation in the JSON report, and reads them back", func() {
		rep := report(wrongGuard())
		data := writeJSON(rep)
		Expect(string(data)).To(ContainSubstring(`"refused_by": {`))
		Expect(string(data)).To(ContainSubstring(`"guard": "residency"`))
		var doc struct {
			Results []struct {
				RefusedBy *probes.RefusedBy `json:"refused_by"`
				Refusal   struct {
					Guard string `json:"guard"`
				} `json:"refusal"`
				Verdict verdict.Verdict `json:"verdict"`
			} `json:"results"`
		}
		Expect(json.Unmarshal(data, &doc)).To(Succeed())
		Expect(doc.Results).To(HaveLen(1))
		Expect(doc.Results[0].RefusedBy).To(Equal(&probes.RefusedBy{Guard: "retained", Step: "between op 1"}))
		Expect(doc.Results[0].Refusal.Guard).To(Equal("residency"))
		Expect(doc.Results[0].Verdict.Rule).To(Equal(verdict.RuleRefusedBy))
	})
})
