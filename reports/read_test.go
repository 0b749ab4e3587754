package reports_test

import (
	"bytes"
	"errors"
	"regexp"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/verdict"
)

// sampleJSON is the sample run as WriteJSON writes it, every timeline kept, with edit applied to
// its text.
func sampleJSON(edit func(string) string) []byte {
	GinkgoHelper()
	var buf bytes.Buffer
	Expect(reports.WriteJSON(&buf, sampleReport(reports.Options{AllTimelines: true}))).To(Succeed())
	out := edit(buf.String())
	Expect(out).NotTo(Equal(buf.String()), "the edit changed nothing")
	return []byte(out)
}

// lineOf is the 1-based line the n-th (0-based) occurrence of s in text begins on.
func lineOf(text []byte, s string, n int) int {
	GinkgoHelper()
	start, at := 0, 0
	for range n + 1 {
		i := bytes.Index(text[at:], []byte(s))
		Expect(i).To(BeNumerically(">=", 0), "%q occurs fewer than %d times", s, n+1)
		start, at = at+i, at+i+len(s)
	}
	return 1 + bytes.Count(text[:start], []byte("\n"))
}

// readErr is ReadDocument's error for data, which must be a *ReadError.
func readErr(data []byte) *reports.ReadError {
	GinkgoHelper()
	d, err := reports.ReadDocument(data)
	Expect(err).To(HaveOccurred())
	Expect(d).To(BeNil())
	var re *reports.ReadError
	Expect(errors.As(err, &re)).To(BeTrue(), "%T: %v", err, err)
	return re
}

var _ = Describe("reading a JSON report back", func() {
	identity := func(s string) string { return s + " " }

	It("reads what WriteJSON writes, every result as it was", func() {
		d, err := reports.ReadDocument(sampleJSON(identity))
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Results).To(HaveLen(7))
		runs, err := d.Reports()
		Expect(err).NotTo(HaveOccurred())
		Expect(runs[0].Summary).To(Equal(sampleReport(reports.Options{}).Summary))
	})

	It("ignores fields it does not know, as docs/report-format.md promises", func() {
		_, err := reports.ReadDocument(sampleJSON(func(s string) string {
			return strings.Replace(s, `"outcome": "exact",`, `"outcome": "exact", "colour": "blue",`, 1)
		}))
		Expect(err).NotTo(HaveOccurred())
	})

	DescribeTable("refuses a value outside the schema's vocabularies, naming its line and JSON path",
		func(from, to string, n int, path, problem string) {
			data := sampleJSON(func(s string) string {
				parts := strings.SplitAfterN(s, from, n+2)
				parts[n] = strings.TrimSuffix(parts[n], from) + to
				return strings.Join(parts, "")
			})
			re := readErr(data)
			Expect(re.NotReport).To(BeFalse())
			Expect(re.Path).To(Equal(path))
			Expect(re.Err.Error()).To(ContainSubstring(problem))
			Expect(re.Line).To(Equal(lineOf(data, to, 0)))
			Expect(re.Error()).To(MatchRegexp(`^line %d: instance \S+@\S+: %s: `, re.Line, regexp.QuoteMeta(path)))
		},
		Entry("an outcome", `"outcome": "exact"`, `"outcome": "bogus"`, 1, "results[5].outcome",
			`"bogus" is not one of exact, rejected, refused, corrupted, error, skipped (schema/report.schema.json)`),
		Entry("a verdict status", `"status": "pass"`, `"status": "bogus"`, 0, "results[0].verdict.status",
			`"bogus" is not one of pass, fail, skip, uncharacterised`),
		Entry("a verdict rule", `"rule": "outcome"`, `"rule": "vibes"`, 0, "results[0].verdict.rule", `"vibes" is not one of`),
		Entry("an error kind", `"kind": "leak"`, `"kind": "oops"`, 0, "results[6].error.kind", `"oops" is not one of setup, timeout`),
		Entry("a rejection class", `"class": "captured-stream",
        "during_capture"`, `"class": "nope",
        "during_capture"`, 0, "results[3].rejection.class", `"nope" is not one of`),
		Entry("a timeline event's phase", `"phase": "between"`, `"phase": "lunch"`, 0, "results[1].timeline[5].phase", `"lunch" is not one of setup, prepare`),
		Entry("a stale range's access", `"access": "write",
          "round"`, `"access": "scribble",
          "round"`, 0, "results[1].stale[0].access", `"scribble" is not one of read, write, read-write`),
		Entry("a hazard", `"hazard": "rebase"`, `"hazard": "gremlins"`, 0, "results[1].hazard", `"gremlins" is not one of none, rebase`),
		Entry("a required one left empty", `"outcome": "exact"`, `"outcome": ""`, 0, "results[0].outcome", "missing: want one of exact, rejected"),
	)

	It("refuses a verdict left out: its status is required", func() {
		data := sampleJSON(func(s string) string {
			return strings.Replace(s, `"verdict": {
        "status": "pass",
        "rule": "outcome"
      }`, `"verdict": {}`, 1)
		})
		re := readErr(data)
		Expect(re.Path).To(Equal("results[0].verdict.status"))
		Expect(re.Err.Error()).To(ContainSubstring("missing"))
	})

	It("refuses a value a type refuses without saying where, at its result's line", func() {
		data := sampleJSON(func(s string) string {
			return strings.Replace(s, `"mode": "thread-local"`, `"mode": "bogus"`, 1)
		})
		re := readErr(data)
		Expect(re.Path).To(Equal("results[3]"))
		Expect(re.ID).To(Equal("sync/sync-in-capture@thread-local/guards-off"))
		Expect(re.Err.Error()).To(Equal(`unknown capture mode "bogus" (want global, thread-local or relaxed)`))
		Expect(re.Line).To(Equal(lineOf(data, `"id": "sync/sync-in-capture@thread-local/guards-off"`, 0) - 1))
	})

	It("refuses an instance held twice by one platform, naming both places", func() {
		var buf bytes.Buffer
		rep := sampleReport(reports.Options{})
		rep.AddEntry(rep.Results[2])
		Expect(reports.WriteJSON(&buf, rep)).To(Succeed())
		re := readErr(buf.Bytes())
		Expect(re.Path).To(Equal("results[7]"))
		first := lineOf(buf.Bytes(), `"id": "rebase/promised-exact@relaxed/guards-off"`, 0) - 1
		Expect(re.ID).To(Equal("rebase/promised-exact@relaxed/guards-off"))
		Expect(re.Err.Error()).To(Equal("again on sim/cann (first at results[2], line " + itoa(first) + "): a run holds each instance once (builds before 2026-12-04 ran a probe given twice to --probe, or a profile to --profile, twice)"))
		Expect(re.Line).To(Equal(lineOf(buf.Bytes(), `"id": "rebase/promised-exact@relaxed/guards-off"`, 1) - 1))
	})

	It("reads the same instance on two platforms", func() {
		cuda := cudaReport()
		var buf bytes.Buffer
		Expect(reports.WriteJSON(&buf, sampleReport(reports.Options{}), cuda)).To(Succeed())
		_, err := reports.ReadDocument(buf.Bytes())
		Expect(err).NotTo(HaveOccurred())
	})

	It("refuses a result of a platform runs[] does not name", func() {
		re := readErr(sampleJSON(func(s string) string {
			return strings.Replace(s, `"platform": "sim/cann",
      "device"`, `"platform": "sim/tpu",
      "device"`, 1)
		}))
		Expect(re.Path).To(Equal("results[0].platform"))
		Expect(re.Error()).To(HaveSuffix(`: instance basic/copy@global/guards-off: results[0].platform: platform "sim/tpu", which no run in runs[] names`))
	})

	It("tells JSON that is not a report from a report with a value at fault", func() {
		re := readErr([]byte("{\n  \"runs\": [\n}"))
		Expect(re.NotReport).To(BeTrue())
		Expect(re.Line).To(Equal(3))
		re = readErr([]byte(`{"tool": "x"}`))
		Expect(re.NotReport).To(BeTrue())
		Expect(re.Err.Error()).To(Equal(`no "runs"`))
		re = readErr([]byte("{\n\"runs\": 5}"))
		Expect(re.NotReport).To(BeFalse())
		Expect(re.Line).To(Equal(2))
		Expect(re.Path).To(Equal("runs"))
	})
})

var _ = Describe("checking an entry against the schema's vocabularies", func() {
	It("passes every entry the writers render", func() {
		for _, e := range append(sampleReport(reports.Options{AllTimelines: true}).Results, cudaReport().Results...) {
			Expect(reports.CheckEntry(&e)).To(Succeed(), e.ID)
		}
	})

	It("names the first value at fault by its JSON path", func() {
		e := reports.Entry{Result: *corruptedResult(probes.Corrupted), Verdict: verdict.Verdict{Status: verdict.Pass, Rule: verdict.RuleOutcome}}
		e.Stale[0].Access = "sideways"
		err := reports.CheckEntry(&e)
		var fe *reports.FieldError
		Expect(errors.As(err, &fe)).To(BeTrue())
		Expect(fe.Path).To(Equal([]any{"stale", 0, "access"}))
		Expect(err.Error()).To(Equal(`stale[0].access: "sideways" is not one of read, write, read-write (schema/report.schema.json)`))

		e = reports.Entry{Result: *exactResult(), Verdict: verdict.Verdict{Status: verdict.Pass, Rule: verdict.RuleOutcome}}
		e.Timeline = capture.TimelineOf(capture.Event{Seq: 1, Phase: "capture"}, capture.Event{Seq: 2, Phase: "elsewhere"})
		Expect(reports.CheckEntry(&e)).To(MatchError(HavePrefix(`timeline[1].phase: "elsewhere" is not one of`)))
	})

	It("lets an optional field be left out, and not a required one", func() {
		e := reports.Entry{Result: *uncharacterisedResult(), Verdict: verdict.Verdict{Status: verdict.Uncharacterised, Rule: verdict.RuleNoExpectation}}
		Expect(e.Expected).To(BeEmpty())
		Expect(reports.CheckEntry(&e)).To(Succeed())
		e.Verdict.Rule = ""
		Expect(reports.CheckEntry(&e)).To(MatchError(HavePrefix("verdict.rule: missing: want one of")))
	})
})

func itoa(n int) string { return strconv.Itoa(n) }
