package reports_test

import (
	"bytes"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
)

// interrupted is a run that stopped after two passing instances, two of its four not run: every
// verdict it holds passes, which is exactly when a report could pass it off as clean.
func interrupted() *reports.Report {
	rep := reports.New("replaycheck", "v0.0.0-test", reports.Options{})
	rep.Backend, rep.Platform, rep.Profile, rep.Device = "sim", "sim/cann", "cann", "sim device 0 (cann)"
	ran := exactResult()
	rep.Add(ran)
	on := exactResult()
	on.ID, on.Guarded = "basic/copy@global/guards-on", true
	rep.Add(on)
	rep.NotRun = []string{"basic/copy@relaxed/guards-on", "basic/copy@relaxed/guards-off"}
	Expect(rep.Summary.Failed()).To(BeFalse())
	return rep
}

var _ = Describe("an interrupted run", func() {
	It("is a JUnit testcase with an error of type not-run per instance not run, counted, so CI does not pass it", func() {
		d := parseJUnit(writeJUnit(interrupted()))
		s := d.Suites[0]
		Expect([]int{s.Tests, s.Failures, s.Errors, s.Skipped}).To(Equal([]int{4, 0, 2, 0}))
		Expect([]int{d.Tests, d.Failures, d.Errors, d.Skipped}).To(Equal([]int{4, 0, 2, 0}))
		c := caseNamed(s, "basic/copy@relaxed/guards-off")
		Expect(c.Classname).To(Equal("basic/copy"))
		Expect(c.Skipped).To(BeNil())
		Expect(c.Error).NotTo(BeNil())
		Expect(c.Error.Type).To(Equal("not-run"))
		Expect(c.Error.Message).To(Equal("not run: the run was interrupted before this instance (2 of 4 instances not run)"))
		Expect(caseNamed(s, "basic/copy@global/guards-on").Error).To(BeNil())
	})

	It("has no ✅ in Markdown: a warning on its verdict line and a section listing what did not run", func() {
		out := string(writeMarkdown(interrupted()))
		Expect(out).To(ContainSubstring("- ⚠️ **sim/cann**: 2 instances: 2 pass, 0 fail, 0 skip (exact 2); **incomplete**: 2 of 4 instances not run (the run was interrupted)<br>"))
		Expect(out).NotTo(ContainSubstring("- ✅"))
		Expect(out).To(ContainSubstring("## ⚠️ Not run (2)\n"))
		Expect(out).To(ContainSubstring("- `basic/copy@relaxed/guards-on` on sim/cann\n- `basic/copy@relaxed/guards-off` on sim/cann\n"))
	})

	It("keeps ❌ in Markdown when a verdict failed too", func() {
		rep := sampleReport(reports.Options{})
		rep.NotRun = []string{"basic/copy@relaxed/guards-on"}
		out := string(writeMarkdown(rep))
		Expect(out).To(ContainSubstring("- ❌ **sim/cann**: 7 instances: 3 pass, 2 fail"))
		Expect(out).To(ContainSubstring("**incomplete**: 1 of 8 instances not run"))
	})

	It("folds a long list of instances not run in Markdown", func() {
		rep := interrupted()
		for range 20 {
			rep.NotRun = append(rep.NotRun, "basic/copy@global/guards-off")
		}
		Expect(string(writeMarkdown(rep))).To(ContainSubstring("## ⚠️ Not run (22)\n\nThe run was interrupted before these instances: they have no verdict, and the run is incomplete.\n\n<details><summary>22 instances</summary>\n\n- `basic/copy@relaxed/guards-on`"))
	})

	It("has a banner and the list of instances not run on the HTML page, and says so in its title", func() {
		var buf bytes.Buffer
		Expect(reports.WriteHTML(&buf, interrupted())).To(Succeed())
		out := buf.String()
		counts, err := page(buf.Bytes())
		Expect(err).NotTo(HaveOccurred(), "the page does not parse")
		Expect(counts["p.incomplete"]).To(Equal(1))
		Expect(counts["details.not-run"]).To(Equal(1))
		Expect(out).To(ContainSubstring("<title>replaycheck v0.0.0-test report (incomplete)</title>"))
		Expect(out).To(ContainSubstring(`<p class="incomplete" role="alert">Incomplete: the run was interrupted: 2 of 4 instances not run, listed below; they have no verdict.</p>`))
		Expect(out).To(ContainSubstring("<li>basic/copy@relaxed/guards-on</li>\n<li>basic/copy@relaxed/guards-off</li>"))
	})

	It("lists the instances not run in text", func() {
		out := string(writeText(interrupted(), reports.TextOptions{}))
		Expect(out).To(ContainSubstring("not run: 2 instances (the run was interrupted)\n  basic/copy@relaxed/guards-on\n  basic/copy@relaxed/guards-off\n"))
	})

	It("is not said of a run that finished", func() {
		rep := interrupted()
		rep.NotRun = nil
		var html bytes.Buffer
		Expect(reports.WriteHTML(&html, rep)).To(Succeed())
		Expect(html.String()).NotTo(ContainSubstring(`class="incomplete"`))
		Expect(html.String()).NotTo(ContainSubstring("not-run"))
		Expect(html.String()).NotTo(ContainSubstring("(incomplete)"))
		Expect(string(writeMarkdown(rep))).NotTo(ContainSubstring("ncomplete"))
		Expect(string(writeMarkdown(rep))).To(ContainSubstring("- ✅ **sim/cann**"))
		Expect(string(writeJUnit(rep))).NotTo(ContainSubstring("not-run"))
	})
})

// refusedResult is a guarded instance a runtime refused cleanly, as its probe expects: the
// runtime's message is in the refusal's detail, and the reason says it again.
func refusedResult() *capture.Result {
	const detail = `retained slot "dst" holds 65536 bytes; growth to 131072 would re-base it: refused before anything was freed`
	return &capture.Result{
		ID: "hazards/rebase-after-capture@global/guards-on", Probe: "hazards/rebase-after-capture", Set: "hazards",
		Hazard: "rebase", Mode: device.Global, Guarded: true, Replays: 2, Backend: "sim", Platform: "sim/cann", Runtime: "tiny_runtime",
		Outcome: probes.Refused, Expected: probes.Refused,
		Reason: "guard refused between op 1 (Provision): " + detail,
		Refusal: &capture.Refusal{Step: mustStep("between op 1"), Op: "Provision", Detail: detail,
			Checked: []capture.SideEffectCheck{{What: "slots", Held: true}}},
	}
}

var _ = Describe("a refusal in the text report", func() {
	report := func() *reports.Report {
		rep := reports.New("replaycheck", "dev", reports.Options{})
		rep.Backend, rep.Platform = "sim", "sim/cann"
		rep.Add(refusedResult())
		return rep
	}

	It("shows the runtime's message and the side-effect checks under a passing instance with -v, once", func() {
		out := string(writeText(report(), reports.TextOptions{Verbose: true}))
		Expect(out).To(ContainSubstring("\nok  hazards/rebase-after-capture  global  on      refused  refused   guard refused between op 1 (Provision)\n" +
			`    refusal   between op 1: Provision: retained slot "dst" holds 65536 bytes; growth to 131072 would re-base it: refused before anything was freed` + "\n" +
			"                slots unchanged: held\n"))
		Expect(strings.Count(out, "would re-base it")).To(Equal(1), "the reason repeats the refusal line:\n%s", out)
	})

	It("keeps a passing refusal to its line without -v", func() {
		Expect(string(writeText(report(), reports.TextOptions{}))).NotTo(ContainSubstring("would re-base it"))
	})
})

var _ = Describe("merging a run that never began", func() {
	// An interrupted plan's later profile: no device was opened, every instance not run.
	neverBegan := func(notRun ...string) *reports.Report {
		rep := reports.New("replaycheck", "v0.0.0-test", reports.Options{})
		rep.Backend, rep.Platform, rep.Profile = "sim", "sim/cann", "cann"
		rep.NotRun = notRun
		return rep
	}

	It("takes the header of the shard that did begin, in either order, and keeps its instances not run", func() {
		for _, order := range [][2]int{{0, 1}, {1, 0}} {
			sources := []reports.Source{
				{Name: "s1", Runs: []*reports.Report{neverBegan("basic/copy@relaxed/guards-on", "basic/copy@global/guards-on")}},
				{Name: "s2", Runs: []*reports.Report{interrupted()}},
			}
			merged, err := reports.Merge([]reports.Source{sources[order[0]], sources[order[1]]})
			Expect(err).NotTo(HaveOccurred())
			Expect(merged).To(HaveLen(1))
			Expect(merged[0].Device).To(Equal("sim device 0 (cann)"))
			Expect(merged[0].Results).To(HaveLen(2))
			Expect(merged[0].NotRun).To(ConsistOf("basic/copy@relaxed/guards-on", "basic/copy@relaxed/guards-off"),
				"what s2 ran is not 'not run'; what neither ran is")
		}
	})

	It("still refuses two runs that began on different devices", func() {
		other := interrupted()
		other.Device = "another device"
		_, err := reports.Merge([]reports.Source{{Name: "a", Runs: []*reports.Report{interrupted()}}, {Name: "b", Runs: []*reports.Report{other}}})
		Expect(err).To(MatchError(ContainSubstring("the runs disagree on device")))
	})
})
