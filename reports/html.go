package reports

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/verdict"
)

// WriteHTML writes runs as one self-contained HTML page (no script, no outside resource), in the
// order a reader needs it:
//
//   - a summary: one row per run (pass or fail, its counts, device, runtime, baseline), then what
//     failed, each linking to its detail; an interrupted run's banner (Report.NotRun), a run's
//     reasons for skipping, and how to give uncharacterised instances a verdict;
//   - the enforcement table of every run (EnforcementTable's cells, coloured, each titled with what
//     its code means and what the instance saw), with its legend;
//   - the matrix: every instance as a cell coloured by outcome, outlined when its verdict failed,
//     a row per probe under its set, a column group per run; its legends;
//   - the failures, open, each with its detail (the text report's, wrapped), its mismatches once, as
//     want/got words with the differing ones marked, and a picture of memory: the ranges each graph
//     captured, the stale ones, and the buffers that hold them now, with a legend;
//   - the instances that need a verdict (uncharacterised) and the skipped ones, folded;
//   - the expected findings (instances that passed with something to show, as a probe that
//     demonstrates a hazard does), folded under their probe;
//   - the instances an interrupted run did not reach; the page's title then says "(incomplete)".
//
// A watch report (Report.IsWatch) has a row in the summary and a section of its own: its header, a
// Findings table (kind, count, pid, graph, range, detail, refused), each row opening onto the
// finding's text with its call stacks, the suppressions and the interposer's notes. It may share a
// page with runs.
func WriteHTML(w io.Writer, runs ...*Report) error {
	return htmlTemplate.Execute(w, htmlPageOf(runs))
}

type htmlPage struct {
	Title, Meta string
	Nav         []htmlLink
	Summary     []htmlSummaryRow
	// Failed lists the probes that failed for the summary (the first maxFailedListed), FailedMore
	// says how many more there are.
	Failed             []htmlFailedProbe
	failedProbes       map[string]int
	watchFailed        []htmlFailedProbe // watch reports with findings, listed after the failing probes
	FailedMore         string
	AllPassed          string
	Notes              []htmlRunNotes
	Enforcement        *htmlEnforcement
	Matrix             template.HTML
	OutcomeLegend      []htmlLegendItem
	Failures           []htmlInstance
	Uncharacterised    []htmlInstance
	Skipped            []htmlInstance
	Expected           []htmlProbeGroup
	ExpectedInstances  int
	NotRun             []htmlNotRun
	Watches            []htmlRun
	HasRuns, OnlyWatch bool
}

type htmlLink struct {
	Href, Text string
}

// htmlFailedProbe is a probe that failed, in the summary's list.
type htmlFailedProbe struct {
	Href, Probe, Note string
	n                 int
	runs              []string
}

// htmlSummaryRow is one run in the summary table.
type htmlSummaryRow struct {
	Run, Href, Status, Class                 string
	Total, Pass, Fail, Skip, Uncharacterised int
	Outcomes, Device, Runtime, Baseline      string
	Watch                                    string // a watch report's summary, instead of the counts
	// Silent counts the run's cells of the enforcement table that say the platform let a hazard
	// through with wrong data and no error, of Unguarded cells that ran.
	Silent, Unguarded int
}

// htmlRunNotes are what the summary says of one run under the table.
type htmlRunNotes struct {
	Run, Incomplete, Hint, Crash string
	Skipped                      []string
}

type htmlNotRun struct {
	Run string
	IDs []string
}

// htmlRun is a watch report's section (the name is the one WatchRun's writer fills in).
type htmlRun struct {
	Name  string
	Watch *htmlWatch
}

type htmlInstance struct {
	Anchor, Run, ID, Mark, Status, Outcome, Expected, Reason string
	Open                                                     bool
	Detail                                                   string
	Bytes                                                    []htmlMismatch
	Differs                                                  []string
	Memory                                                   template.HTML
	MemoryLegend                                             []htmlLegendItem
}

// htmlMismatch is one mismatch: want over got, in words, the differing words marked.
type htmlMismatch struct {
	Round          int
	Buffer         string
	Offset, Length int64
	Want, Got      template.HTML
	Shown          string
}

// htmlProbeGroup is a probe's expected findings, folded under one line.
type htmlProbeGroup struct {
	Probe, Hazard, Summary string
	Instances              []htmlInstance
}

// maxFailedListed is how many failing probes the summary names; the Failures section has them all.
const maxFailedListed = 12

// outcomeMeanings say what each outcome colour of the matrix means, in legend order.
var outcomeMeanings = []htmlLegendItem{
	{Kind: string(probes.Exact), Meaning: "every replay byte-identical, no error"},
	{Kind: string(probes.Refused), Meaning: "a guard refused the hazard"},
	{Kind: string(probes.Rejected), Meaning: "the platform returned an error"},
	{Kind: string(probes.Corrupted), Meaning: "wrong data, or a replay touched stale memory"},
	{Kind: string(probes.Errored), Meaning: "the instance could not finish"},
	{Kind: string(probes.Skipped), Meaning: "not run here (the cell's title says why)"},
}

// outcomeColours are the matrix's cell colours.
var outcomeColours = map[probes.Outcome]string{
	probes.Exact: "#2e7d32", probes.Refused: "#1565c0", probes.Rejected: "#ef8f00",
	probes.Corrupted: "#c62828", probes.Errored: "#6a1b9a", probes.Skipped: "#9e9e9e",
}

// OutcomeColour is the colour (#rrggbb) the HTML report fills an outcome's matrix cells with.
func OutcomeColour(o probes.Outcome) (string, bool) {
	c, ok := outcomeColours[o]
	return c, ok
}

func anchorOf(platform, id string) string {
	r := strings.NewReplacer("/", "-", "@", "-", ".", "-")
	return "i-" + r.Replace(platform) + "-" + r.Replace(id)
}

// hasSection reports whether the page has a section for e: every instance that did not pass or
// has a finding.
func hasSection(e Entry) bool { return e.Verdict.Status != verdict.Pass || hasFinding(e) }

func htmlPageOf(all []*Report) htmlPage {
	page := htmlPage{Title: "replaycheck report", OnlyWatch: allWatch(all)}
	var runs []*Report
	incomplete := false
	for _, r := range all {
		page.Title = fmt.Sprintf("replaycheck %s report", r.Version)
		if r.IsWatch() {
			if page.OnlyWatch {
				page.Title = fmt.Sprintf("replaycheck %s watch report", r.Version)
			}
			wr := htmlWatchRunOf(r)
			anchor := fmt.Sprintf("watch-%d", len(page.Watches)+1)
			page.Watches = append(page.Watches, htmlRun{Name: wr.Name, Watch: wr.Watch})
			status, class := "CLEAN", "pass"
			if len(r.Findings) > 0 {
				status, class = "FINDINGS", "fail"
			}
			page.Summary = append(page.Summary, htmlSummaryRow{Run: wr.Name, Href: "#" + anchor, Status: status, Class: class,
				Watch: WatchSummary(r) + "; " + wr.Watch.Exit, Device: "backend " + wr.Watch.Backend})
			if len(r.Findings) > 0 {
				page.watchFailed = append(page.watchFailed, htmlFailedProbe{Href: "#" + anchor, Probe: wr.Name, Note: WatchSummary(r)})
			}
			continue
		}
		runs = append(runs, r)
		page.Summary = append(page.Summary, summaryRowOf(r))
		incomplete = incomplete || len(r.NotRun) > 0
	}
	if incomplete {
		page.Title += " (incomplete)"
	}
	page.HasRuns = len(runs) > 0
	page.Meta = pageMeta(all)
	for _, r := range runs {
		notes := htmlRunNotes{Run: RunName(r), Skipped: skipReasons(r.Results, r.Summary), Crash: crashAdvice(r)}
		if n := len(r.NotRun); n > 0 {
			notes.Incomplete = fmt.Sprintf("the run was interrupted: %d of %d instances not run, listed below; they have no verdict", n, n+len(r.Results))
			page.NotRun = append(page.NotRun, htmlNotRun{Run: RunName(r), IDs: r.NotRun})
		}
		if r.Summary.Uncharacterised > 0 {
			notes.Hint = uncharacterisedHint(r)
		}
		if notes.Incomplete != "" || notes.Hint != "" || notes.Crash != "" || len(notes.Skipped) > 0 {
			page.Notes = append(page.Notes, notes)
		}
	}
	if page.HasRuns {
		page.Enforcement = htmlEnforcementOf(runs)
		page.countSilent(runs)
		page.Matrix = matrixSVG(runs)
		page.OutcomeLegend = outcomeMeanings
	}
	page.sections(runs)
	page.Failed = append(page.Failed, page.watchFailed...)
	if page.HasRuns && len(page.Failed) == 0 {
		total := 0
		for _, r := range runs {
			total += r.Summary.Total
		}
		page.AllPassed = fmt.Sprintf("No verdict failed: %s on %s.", pluralInstances(total), plural.Count(len(runs), "platform run"))
	}
	page.Nav = page.nav()
	return page
}

// countSilent counts each run's silent cells of the enforcement table, of those that ran.
func (page *htmlPage) countSilent(runs []*Report) {
	t := EnforcementTable(runs...)
	row := map[string]*htmlSummaryRow{}
	for i := range page.Summary {
		row[page.Summary[i].Run] = &page.Summary[i]
	}
	for _, r := range t.Rows {
		for i, c := range r.Cells {
			sr := row[t.Columns[i].Run]
			if sr == nil || c == CellNotRun {
				continue
			}
			sr.Unguarded++
			if c == CellSilent || strings.HasSuffix(c, "+"+CellSilent) {
				sr.Silent++
			}
		}
	}
}

// pageMeta says which replaycheck wrote the page, when its first run started and where.
func pageMeta(runs []*Report) string {
	if len(runs) == 0 {
		return ""
	}
	r := runs[0]
	s := "replaycheck " + r.Version
	if !r.Started.IsZero() {
		s += ", started " + r.Started.UTC().Format("2006-01-02 15:04 UTC")
	}
	if r.Host != "" {
		s += " on " + r.Host
	}
	return s
}

func summaryRowOf(r *Report) htmlSummaryRow {
	s := r.Summary
	row := htmlSummaryRow{Run: RunName(r), Total: s.Total, Pass: s.Pass, Fail: s.Fail, Skip: s.Skip, Uncharacterised: s.Uncharacterised,
		Device: r.Device, Runtime: r.runtime(), Baseline: r.BaselineFile, Status: "PASS", Class: "pass"}
	var parts []string
	for _, o := range outcomeOrder(s.ByOutcome) {
		parts = append(parts, fmt.Sprintf("%s %d", o, s.ByOutcome[o]))
	}
	row.Outcomes = strings.Join(parts, ", ")
	switch {
	case s.Failed():
		row.Status, row.Class = "FAIL", "fail"
	case len(r.NotRun) > 0:
		row.Status, row.Class = "INCOMPLETE", "fail"
	case skippedAll(s):
		row.Status, row.Class = "NOTHING VERIFIED", "warn"
	case s.Uncharacterised > 0:
		row.Status, row.Class = "PASS, "+fmt.Sprint(s.Uncharacterised)+" ?", "warn"
	}
	return row
}

// sections sorts every instance with something to show into the page's sections: failures first.
func (page *htmlPage) sections(runs []*Report) {
	groups := map[string]*htmlProbeGroup{}
	var order []string
	for _, r := range runs {
		run := RunName(r)
		for _, e := range r.Results {
			if !hasSection(e) {
				continue
			}
			in := htmlInstanceOf(run, e)
			switch e.Verdict.Status {
			case verdict.Fail:
				in.Open = true
				page.Failures = append(page.Failures, in)
				page.failed(run, e, in)
			case verdict.Uncharacterised:
				page.Uncharacterised = append(page.Uncharacterised, in)
			case verdict.Skip:
				page.Skipped = append(page.Skipped, in)
			default:
				g := groups[e.Probe]
				if g == nil {
					g = &htmlProbeGroup{Probe: e.Probe, Hazard: string(e.Hazard)}
					groups[e.Probe] = g
					order = append(order, e.Probe)
				}
				g.Instances = append(g.Instances, in)
				page.ExpectedInstances++
			}
		}
	}
	if n := len(page.failedProbes) - len(page.Failed); n > 0 {
		page.FailedMore = fmt.Sprintf("and %s more, under Failures below", plural.Count(n, "probe"))
	}
	for i := range page.Failed {
		f := &page.Failed[i]
		f.Note = fmt.Sprintf("%s on %s: %s", pluralInstances(f.n), strings.Join(f.runs, ", "), f.Note)
	}
	for _, p := range order {
		g := groups[p]
		g.Summary = probeGroupSummary(g.Instances)
		page.Expected = append(page.Expected, *g)
	}
}

// failed counts a failure under its probe in the summary's list (the first maxFailedListed
// probes): a link to its first failure, how many failed on which runs, and the first one's verdict.
func (page *htmlPage) failed(run string, e Entry, in htmlInstance) {
	if page.failedProbes == nil {
		page.failedProbes = map[string]int{}
	}
	i, ok := page.failedProbes[e.Probe]
	if !ok {
		i = len(page.failedProbes)
		page.failedProbes[e.Probe] = i
		if i < maxFailedListed {
			page.Failed = append(page.Failed, htmlFailedProbe{Href: "#" + in.Anchor, Probe: e.Probe, Note: in.Reason})
		}
	}
	if i >= maxFailedListed {
		return
	}
	f := &page.Failed[i]
	f.n++
	if !slices.Contains(f.runs, run) {
		f.runs = append(f.runs, run)
	}
}

// probeGroupSummary says what a probe's expected findings are: "6 instances: corrupted 6 (sim/cann
// 3, sim/cuda 3)".
func probeGroupSummary(ins []htmlInstance) string {
	var outcomes, runs []string
	byOutcome, byRun := map[string]int{}, map[string]int{}
	for _, in := range ins {
		if byOutcome[in.Outcome] == 0 {
			outcomes = append(outcomes, in.Outcome)
		}
		byOutcome[in.Outcome]++
		if byRun[in.Run] == 0 {
			runs = append(runs, in.Run)
		}
		byRun[in.Run]++
	}
	var o, r []string
	for _, k := range outcomes {
		o = append(o, fmt.Sprintf("%s %d", k, byOutcome[k]))
	}
	for _, k := range runs {
		r = append(r, fmt.Sprintf("%s %d", k, byRun[k]))
	}
	return fmt.Sprintf("%s: %s (%s)", pluralInstances(len(ins)), strings.Join(o, ", "), strings.Join(r, ", "))
}

func htmlInstanceOf(run string, e Entry) htmlInstance {
	in := htmlInstance{Anchor: anchorOf(run, e.ID), Run: run, ID: e.ID, Mark: markOf(e.Verdict.Status),
		Status: string(e.Verdict.Status), Outcome: string(e.Outcome), Expected: string(e.Expected)}
	in.Reason = shortReason(e)
	if e.Verdict.Status == verdict.Fail {
		in.Reason = verdictShort(e) // the detail below has the reason
	}
	// The mismatches and the differences are shown once, as a table; the detail has the rest.
	rest := e
	rest.Mismatches, rest.Differences = nil, nil
	var detail strings.Builder
	_ = WriteDetail(&detail, rest)
	in.Detail = strings.TrimRight(detail.String(), "\n")
	for _, m := range e.Mismatches {
		want, got := markedWords(m.Want, m.Got)
		hm := htmlMismatch{Round: m.Round, Buffer: m.Buffer, Offset: m.Offset, Length: m.Length, Want: want, Got: got}
		if n := int64(len(m.Want)); n < m.Length {
			hm.Shown = fmt.Sprintf("first %d of %d bytes", n, m.Length)
		}
		in.Bytes = append(in.Bytes, hm)
	}
	for _, d := range e.Differences {
		in.Differs = append(in.Differs, fmt.Sprintf("round %d, %s: %d of %d bytes differ (%s), in %s",
			d.Round, d.Buffer, d.Bytes, d.BufferBytes, share(d.Bytes, d.BufferBytes), plural.Count(int(d.Ranges), "range")))
	}
	in.Memory, in.MemoryLegend = memoryPicture(e)
	return in
}

// verdictShort says why e failed in a few words, as the text report's verdict line does.
func verdictShort(e Entry) string {
	v := e.Verdict
	switch {
	case v.Rule == verdict.RuleOutcome:
		return fmt.Sprintf("expected %s, got %s", e.Expected, e.Outcome)
	case v.Rule == verdict.RuleError && e.Error != nil:
		return fmt.Sprintf("the run ended in error (%s)", e.Error.Kind)
	case v.Drift != nil:
		return shortReason(e)
	case v.Rule == verdict.RuleRefusedBy:
		// Cut short, it would end before the guard and step expected: the words that say why.
		return v.Reason
	case v.Reason != "":
		return truncate(v.Reason, maxReason)
	}
	return shortReason(e)
}

// markedWords writes want and got as words (4 bytes each, in hex), the words that differ marked.
func markedWords(want, got capture.Bytes) (template.HTML, template.HTML) {
	w, g := strings.Fields(words(want)), strings.Fields(words(got))
	mark := func(ws, other []string) template.HTML {
		var b strings.Builder
		for i, x := range ws {
			if i > 0 {
				b.WriteByte(' ')
			}
			if i >= len(other) || other[i] != x {
				b.WriteString("<mark>" + template.HTMLEscapeString(x) + "</mark>")
				continue
			}
			b.WriteString(template.HTMLEscapeString(x))
		}
		return template.HTML(b.String())
	}
	return mark(w, g), mark(g, w)
}

func (page *htmlPage) nav() []htmlLink {
	var nav []htmlLink
	add := func(href, text string, n int) {
		if n > 0 {
			nav = append(nav, htmlLink{Href: href, Text: text})
		}
	}
	add("#summary", "Summary", 1)
	if page.Enforcement != nil {
		add("#enforcement", "Enforcement", 1)
	}
	if page.Matrix != "" {
		add("#matrix", "Matrix", 1)
	}
	add("#failures", fmt.Sprintf("Failures (%d)", len(page.Failures)), len(page.Failures))
	add("#uncharacterised", fmt.Sprintf("Uncharacterised (%d)", len(page.Uncharacterised)), len(page.Uncharacterised))
	add("#skipped", fmt.Sprintf("Skipped (%d)", len(page.Skipped)), len(page.Skipped))
	add("#expected", fmt.Sprintf("Expected findings (%d)", page.ExpectedInstances), page.ExpectedInstances)
	add("#not-run", "Not run", len(page.NotRun))
	for i, w := range page.Watches {
		add(fmt.Sprintf("#watch-%d", i+1), w.Name, 1)
	}
	if len(nav) < 3 {
		return nil
	}
	return nav
}

// cellTitle is what a matrix cell says on hover: the instance, its outcome and verdict, and why
// when it was skipped (a skipped instance has no section below).
func cellTitle(e Entry) string {
	t := fmt.Sprintf("%s: %s (%s)", e.ID, e.Outcome, e.Verdict.Status)
	if e.Outcome == probes.Skipped {
		why, _, _ := strings.Cut(e.Reason, "\n")
		t += ": " + why
	}
	return t
}
