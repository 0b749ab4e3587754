package reports

import (
	"encoding/hex"
	"fmt"
	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/runtime"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/verdict"
)

// TextOptions tune WriteText.
type TextOptions struct {
	// Color marks verdicts with ANSI colors (green ok, red FAIL, yellow skip).
	Color bool
	// Verbose shows the detail block of every instance that has a finding to show (an expected
	// corruption, stale ranges, a graph holding unrecorded work) or a refusal (the runtime's message
	// and the side-effect checks, which the one-line reason leaves out); by default only instances
	// whose verdict failed show theirs.
	Verbose bool
}

// Marks: go test's own vocabulary, so FAIL is the word that stands out in a column of ok.
var marks = map[verdict.Status]string{
	verdict.Pass:            "ok",
	verdict.Fail:            "FAIL",
	verdict.Skip:            "skip",
	verdict.Uncharacterised: "?",
}

var markColors = map[verdict.Status]string{
	verdict.Pass:            "\x1b[32m",
	verdict.Fail:            "\x1b[1;31m",
	verdict.Skip:            "\x1b[33m",
	verdict.Uncharacterised: "\x1b[36m",
}

const (
	maxReason         = 100 // runes of the one-line reason; the detail block has the whole sentence
	maxTimelineEvents = 10  // timeline events shown under a detail block
	detailLabelWidth  = 10
	// shortMismatchBytes: mismatches up to this many shown bytes take one line.
	shortMismatchBytes = 4
)

// ExpectedBaseline is the EXPECTED cell of an instance whose probe sets no outcome on its
// platform: the platform baseline decides (an enforcement table's "-", CellNotRun, is an instance
// that did not run).
const ExpectedBaseline = "baseline"

// ExpectedLegend is the text report's line under its table when an EXPECTED cell is
// ExpectedBaseline.
const ExpectedLegend = "EXPECTED baseline: the probe sets no outcome here; the platform baseline decides (" + CellNotRun + " in the enforcement table: not run)"

// WriteText writes rep for a terminal: a header line, one aligned line per instance (verdict mark,
// probe, mode, guards, outcome, expected, short reason), a detail block under each instance whose
// verdict failed (with Verbose, also under every instance with a finding), a summary line per
// probe set when there are several, and the summary line.
//
// A watch report (Report.IsWatch) is its header (program, exit status or signal, backend,
// --refuse, processes), each finding as describe writes it, the suppressions that kept findings
// out (with counts), the suppressions nothing used, the interposer's notes, and WatchSummary.
func WriteText(w io.Writer, rep *Report, opt TextOptions) error {
	tw := &textWriter{w: w}
	if rep.IsWatch() {
		writeWatchText(tw, rep, opt)
		return tw.err
	}
	tw.printf("%s %s  backend %s", rep.Tool, rep.Version, rep.Backend)
	if rep.Profile != "" {
		tw.printf("  profile %s", rep.Profile)
	}
	if rep.Device != "" {
		tw.printf("  device %s", rep.Device)
	}
	if rep.Runtime != "" && rep.Runtime != runtime.Builtin {
		// The built-in guards are the default and go unsaid; a runtime under test is named.
		tw.printf("  runtime %s", rep.Runtime)
	}
	if rep.BaselineFile != "" {
		// A baseline is always the run's own platform's (verdict.Baseline.CheckPlatform).
		tw.printf("\nbaseline %s (%s)", rep.BaselineFile, RunName(rep))
	}
	tw.printf("\n\n")

	header := []string{"", "PROBE", "MODE", "GUARDS", "OUTCOME", "EXPECTED", "REASON"}
	rows := make([][]string, len(rep.Results))
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = utf8.RuneCountInString(h)
	}
	byBaseline := false
	for i, e := range rep.Results {
		expected := string(e.Expected)
		if expected == "" {
			expected, byBaseline = ExpectedBaseline, true
		}
		rows[i] = []string{markOf(e.Verdict.Status), e.Probe, e.Mode.String(), probes.GuardsName(e.Guarded), string(e.Outcome), expected, shortReason(e)}
		for j, cell := range rows[i] {
			widths[j] = max(widths[j], utf8.RuneCountInString(cell))
		}
	}
	indent := strings.Repeat(" ", widths[0]+2)
	if len(rows) > 0 {
		tw.row(header, widths, "")
	}
	for i, e := range rep.Results {
		color := ""
		if opt.Color {
			color = markColors[e.Verdict.Status]
		}
		tw.row(rows[i], widths, color)
		if e.Verdict.Status == verdict.Fail || (opt.Verbose && (hasFinding(e) || e.Refusal != nil)) {
			tw.detail(indent, e)
		}
	}
	if len(rows) > 0 {
		tw.printf("\n")
	}
	if byBaseline {
		tw.printf("%s\n", ExpectedLegend)
	}
	tw.sets(rep.Results)
	tw.printf("%s\n", summaryLine(rep.Summary))
	for _, line := range skipReasons(rep.Results, rep.Summary) {
		tw.printf("%s\n", line)
	}
	if len(rep.NotRun) > 0 {
		// Not passed and not in error: the run stopped before them (an interrupt), one id a line.
		tw.printf("not run: %s (the run was interrupted)\n", pluralInstances(len(rep.NotRun)))
		for _, id := range rep.NotRun {
			tw.printf("  %s\n", id)
		}
	}
	if rep.Summary.Uncharacterised > 0 {
		tw.printf("%s\n", uncharacterisedHint(rep))
	}
	if advice := crashAdvice(rep); advice != "" {
		tw.printf("%s\n", advice)
	}
	if rep.Enforcement != nil {
		tw.printf("\n")
		if tw.err == nil {
			tw.err = WriteTable(w, rep.Enforcement)
		}
	}
	return tw.err
}

// sets writes one summary line per probe set, when the results span more than one.
func (t *textWriter) sets(results []Entry) {
	var order []string
	by := map[string]*Summary{}
	for _, e := range results {
		s := by[e.Set]
		if s == nil {
			s = &Summary{}
			by[e.Set] = s
			order = append(order, e.Set)
		}
		s.count(e)
	}
	if len(order) < 2 {
		return
	}
	w := 0
	for _, set := range order {
		w = max(w, utf8.RuneCountInString(set))
	}
	for _, set := range order {
		t.printf("  %-*s  %s\n", w, set, summaryLine(*by[set]))
	}
}

// hasFinding: a passing corrupted instance (an unguarded probe expected to corrupt) has where the
// bytes went wrong to show, and any instance whose replays touched stale memory the ranges,
// because that is the finding the probe exists to demonstrate.
func hasFinding(e Entry) bool {
	if e.Verdict.Status == verdict.Fail || e.Outcome == probes.Corrupted || e.Outcome == probes.Errored || len(e.Stale) > 0 {
		return true
	}
	for _, g := range e.Graphs {
		if !g.Faithful() {
			return true
		}
	}
	return false
}

// maxSkipReasons is how many distinct reasons for skipping a report lists in full.
const maxSkipReasons = 8

// skipGroup is one reason for skipping instances (its first line), and how many it skipped.
type skipGroup struct {
	reason string
	n      int
}

// skipGroups groups the skipped instances of results by reason, in the order the reasons first
// appear.
func skipGroups(results []Entry) []skipGroup {
	var groups []skipGroup
	at := map[string]int{}
	for _, e := range results {
		if e.Outcome != probes.Skipped {
			continue
		}
		why, _, _ := strings.Cut(e.Reason, "\n")
		i, ok := at[why]
		if !ok {
			i = len(groups)
			at[why] = i
			groups = append(groups, skipGroup{reason: why})
		}
		groups[i].n++
	}
	return groups
}

// listedSkips splits groups into the first maxSkipReasons, listed, and the rest: how many reasons
// and instances they count.
func listedSkips(groups []skipGroup) (shown []skipGroup, rest, instances int) {
	if len(groups) <= maxSkipReasons {
		return groups, 0, 0
	}
	for _, g := range groups[maxSkipReasons:] {
		instances += g.n
	}
	return groups[:maxSkipReasons], len(groups) - maxSkipReasons, instances
}

// skippedAll reports whether a run skipped every instance it has: it verified nothing.
func skippedAll(s Summary) bool { return s.Total > 0 && s.Skip == s.Total }

// nothingVerified says a run skipped every instance.
const nothingVerified = "nothing was verified: every instance was skipped"

// skipReasons lists why instances were skipped, whole (the table cuts a reason short), one line
// per reason with how many instances it skipped (the first maxSkipReasons, then a count of the
// rest); and says so when the run skipped every instance.
func skipReasons(results []Entry, s Summary) []string {
	shown, rest, instances := listedSkips(skipGroups(results))
	var lines []string
	for _, g := range shown {
		lines = append(lines, fmt.Sprintf("skipped: %s: %s", pluralInstances(g.n), g.reason))
	}
	if rest > 0 {
		lines = append(lines, fmt.Sprintf("skipped: %s for %s (the JSON report has each)", pluralInstances(instances), plural.Count(rest, "other reason")))
	}
	if skippedAll(s) {
		lines = append(lines, nothingVerified)
	}
	return lines
}

// uncharacterisedHint says how to give an uncharacterised instance a verdict.
func uncharacterisedHint(rep *Report) string {
	key := RunName(rep)
	profile := ""
	if rep.Profile != "" {
		profile = " --profile " + rep.Profile
	}
	return fmt.Sprintf("uncharacterised: no expect.unguarded and no baseline entry for %s; give the probe expect.unguarded, "+
		"or record the platform with `replaycheck baseline write%s --out DIR/baselines/%s FILE...` "+
		"(a baselines/ directory beside the probe files is found automatically)", key, profile, verdict.BaselineFile(key))
}

func markOf(s verdict.Status) string {
	if m, ok := marks[s]; ok {
		return m
	}
	return string(s)
}

// shortReason is the one-line explanation of an instance: what happened, in a few words.
func shortReason(e Entry) string {
	var s string
	switch {
	case e.Verdict.Status == verdict.Fail && (e.Verdict.Rule == verdict.RuleRejectedBy || e.Verdict.Rule == verdict.RuleRefusedBy):
		s = e.Verdict.Reason // the outcome matched; the rejection's class, or who refused where, did not
	case e.Verdict.Status == verdict.Fail && e.Verdict.Drift != nil:
		// The platform changed: what changed is the news, not the outcome alone.
		s = fmt.Sprintf("drift: baseline says %s, now %s", e.Verdict.Drift.Baseline, e.Verdict.Drift.Now)
	case e.Outcome == probes.Exact:
		s = fmt.Sprintf("%d/%s exact", e.Rounds, plural.Count(e.Replays, "round"))
	case e.Outcome == probes.Corrupted && e.CorruptedRounds == 0 && len(e.Stale) > 0:
		st := e.Stale[0]
		s = fmt.Sprintf("stale access in round %d: graph %s %s freed %s; no checked byte differs yet", st.Round, st.Capture, st.Access.Verb(), st.Buffer)
	case e.Outcome == probes.Corrupted:
		s = fmt.Sprintf("%d/%s corrupted, first at round %d", e.CorruptedRounds, plural.Count(e.Rounds, "round"), e.FirstCorrupted)
		if len(e.Stale) > 0 {
			var bufs []string
			for _, st := range e.Stale {
				if !slices.Contains(bufs, st.Buffer) {
					bufs = append(bufs, st.Buffer)
				}
			}
			s += "; graph holds stale " + strings.Join(bufs, ", ")
		}
	case e.Outcome == probes.Rejected && e.Rejection != nil:
		r := e.Rejection
		s = fmt.Sprintf("%s at %s: %d", r.Op, r.Step, r.Code)
		if r.Name != "" {
			s += " " + r.Name
		}
		s += " [" + string(r.Class) + "]"
		if r.Invalidated {
			s += ", invalidated"
		}
		switch n := len(e.Stale); {
		case n == 1:
			s += "; over a stale range"
		case n > 1:
			s += fmt.Sprintf("; over %d stale ranges", n)
		}
	case e.Outcome == probes.Refused && e.Refusal != nil:
		s = fmt.Sprintf("%s refused %s (%s)", e.Refusal.Who(), e.Refusal.Step, e.Refusal.Op)
	default:
		s, _, _ = strings.Cut(e.Reason, "\n")
	}
	return truncate(s, maxReason)
}

func rejectionText(r *capture.Rejection) string {
	s := fmt.Sprintf("%s: %s returned %d", r.Step, r.Op, r.Code)
	if r.Name != "" {
		s += " " + r.Name
	}
	s += " [" + string(r.Class) + "]"
	switch {
	case !r.DuringCapture:
		// Outside a capture there is no capture to invalidate.
	case r.Invalidated:
		s += ", capture invalidated"
	case r.EndedCapture():
		s += ", no graph"
	default:
		s += ", capture not invalidated"
		if r.ReplaysExact != nil {
			if *r.ReplaysExact {
				s += ", later replays exact"
			} else {
				s += ", later replays corrupted"
			}
		}
	}
	return s
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-3]) + "..."
}

// summaryLine reads like "48 instances: 40 pass, 0 fail, 8 skip (exact 24, corrupted 16, skipped
// 8)".
func summaryLine(s Summary) string {
	noun := "instances"
	if s.Total == 1 {
		noun = "instance"
	}
	if s.Total == 0 {
		return "0 instances"
	}
	line := fmt.Sprintf("%d %s: %d pass, %d fail, %d skip", s.Total, noun, s.Pass, s.Fail, s.Skip)
	if s.Uncharacterised > 0 {
		line += fmt.Sprintf(", %d uncharacterised", s.Uncharacterised)
	}
	var parts []string
	for _, o := range outcomeOrder(s.ByOutcome) {
		parts = append(parts, fmt.Sprintf("%s %d", o, s.ByOutcome[o]))
	}
	if len(parts) > 0 {
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	return line
}

// outcomeOrder lists the outcomes present in precedence order, skipped last, unknown names after.
func outcomeOrder(by map[string]int) []string {
	known := []probes.Outcome{probes.Exact, probes.Refused, probes.Rejected, probes.Corrupted, probes.Errored, probes.Skipped}
	var out, rest []string
	for _, o := range known {
		if by[string(o)] > 0 {
			out = append(out, string(o))
		}
	}
	for o, n := range by {
		if n > 0 && !slices.Contains(known, probes.Outcome(o)) {
			rest = append(rest, o)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// textWriter keeps the first write error so the layout code stays linear.
type textWriter struct {
	w   io.Writer
	err error
}

func (t *textWriter) printf(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

// row prints cells padded to widths; the last cell is not padded. color, when set, wraps the first
// cell (the mark) after its padding is computed, so escape codes never skew the columns.
func (t *textWriter) row(cells []string, widths []int, color string) {
	var b strings.Builder
	for i, c := range cells {
		pad := widths[i] - utf8.RuneCountInString(c)
		if i == 0 && color != "" && c != "" {
			c = color + c + "\x1b[0m"
		}
		b.WriteString(c)
		if i < len(cells)-1 {
			b.WriteString(strings.Repeat(" ", pad+2))
		}
	}
	t.printf("%s\n", strings.TrimRight(b.String(), " "))
}

// label prints one labelled detail line; follow-up lines of the same item use an empty label.
func (t *textWriter) label(indent, label, text string) {
	t.printf("%s%-*s%s\n", indent, detailLabelWidth, label, text)
}

func (t *textWriter) detail(indent string, e Entry) {
	switch v := e.Verdict; {
	case v.Status != verdict.Fail:
	case v.Rule == verdict.RuleOutcome:
		// The verdict's whole sentence would repeat the reason printed below.
		t.label(indent, "verdict", fmt.Sprintf("expected %s, got %s", e.Expected, e.Outcome))
	case v.Rule == verdict.RuleError && e.Error != nil:
		t.label(indent, "verdict", fmt.Sprintf("the run ended in error (%s)", e.Error.Kind))
	case v.Rule != verdict.RuleError:
		t.label(indent, "verdict", v.Reason)
	}
	for i, line := range strings.Split(e.Reason, "\n") {
		if i == 0 && refusalReason(e) {
			break // the refusal line below says it all
		}
		l := ""
		if i == 0 {
			l = "reason"
		}
		t.label(indent, l, line)
	}
	for _, m := range e.Mismatches {
		where := fmt.Sprintf("round %d  %s  offset %d  length %d", m.Round, m.Buffer, m.Offset, m.Length)
		if len(m.Want) <= shortMismatchBytes && len(m.Got) <= shortMismatchBytes {
			// Short runs (a lane's low byte, a few bytes of a fill) read best on one line each.
			t.label(indent, "mismatch", fmt.Sprintf("%s  want %s  got %s", where, words(m.Want), words(m.Got)))
			continue
		}
		t.label(indent, "mismatch", where)
		shown := ""
		if n := int64(len(m.Want)); n < m.Length {
			shown = "  (first " + plural.Count(int(n), "byte") + ")"
		}
		t.label(indent, "", "  want "+words(m.Want)+shown)
		t.label(indent, "", "  got  "+words(m.Got))
	}
	for _, d := range e.Differences {
		// Only where the mismatches above leave ranges out: how much of the buffer differs in all.
		shown := 0
		for _, m := range e.Mismatches {
			if m.Round == d.Round && m.Buffer == d.Buffer {
				shown++
			}
		}
		if int64(shown) < d.Ranges {
			which := fmt.Sprintf("%d of them shown", shown)
			if shown == 0 {
				which = "none shown"
			}
			t.label(indent, "differs", fmt.Sprintf("round %d  %s  %s, %d of %s (%s), %s",
				d.Round, d.Buffer, plural.Count(int(d.Ranges), "range"), d.Bytes, plural.Count(int(d.BufferBytes), "byte"), share(d.Bytes, d.BufferBytes), which))
		}
	}
	for _, s := range e.Stale {
		t.label(indent, "stale", fmt.Sprintf("graph %s captured %s at %v (generation %d)", s.Capture, s.Buffer, s.Range, s.Generation))
		t.label(indent, "", "  now "+s.Now)
		if s.Round > 0 {
			what := "ran over it"
			if !s.Ran {
				what = "was rejected by the platform"
			}
			t.label(indent, "", fmt.Sprintf("  round %d's launch %s (the graph %s it)", s.Round, what, s.Access.Verb()))
		}
	}
	for _, g := range e.Graphs {
		if g.Faithful() {
			continue
		}
		held := fmt.Sprintf("%d of them work", g.Work)
		if g.Opaque > 0 {
			held += fmt.Sprintf(" and %s of no named kind", plural.Count(g.Opaque, "task"))
		}
		t.label(indent, "graph", fmt.Sprintf("of capture %s: %s, %s, for %s", g.Capture, plural.Count(g.Nodes, "node"), held, plural.Count(g.Issued, "captured fill, copy or axpy op")))
		for _, n := range g.Unrecorded {
			t.label(indent, "", fmt.Sprintf("  a %s node %s %v, which no buffer of the capture's ops %s", n.Kind, n.Access.Verb(), n.Range, n.Access.Verb()))
		}
	}
	if e.GraphsUnread != "" {
		// Where the graph check's findings would be: their absence is no clean graph.
		t.label(indent, "graphs", "not read: "+e.GraphsUnread)
	}
	if r := e.Rejection; r != nil {
		t.label(indent, "rejection", rejectionText(r))
	}
	if r := e.Refusal; r != nil {
		text := fmt.Sprintf("%s: %s", r.Step, r.Op)
		if r.Guard != "" {
			text += ", by guard " + r.Guard
		}
		if r.Detail != "" {
			text += ": " + r.Detail
		}
		t.label(indent, "refusal", text)
		for _, c := range r.Checked {
			held := "held"
			if !c.Held {
				held = "VIOLATED"
			}
			t.label(indent, "", fmt.Sprintf("  %s unchanged: %s", c.What, held))
		}
	}
	if len(e.Skipped) > 0 {
		steps := make([]string, len(e.Skipped))
		for i, st := range e.Skipped {
			steps[i] = st.String()
		}
		t.label(indent, "skipped", strings.Join(steps, ", "))
	}
	for _, l := range e.Leaks {
		t.label(indent, "leak", l)
	}
	for _, f := range e.Faults {
		t.label(indent, "fault", f.Fault+": "+faultDetail(f.Detail, e.Reason))
	}
	if c := e.DeviceChange; c != nil {
		t.label(indent, "device", DeviceChangeText(c))
	}
	t.timeline(indent, e.Timeline.Events())
}

// refusalReason reports whether e's reason is only its refusal, as the engine words it
// (capture.Refusal.Reason: "guard GUARD refused STEP (OP): DETAIL"), which the refusal line of the
// detail block already shows.
func refusalReason(e Entry) bool {
	r := e.Refusal
	return r != nil && e.Reason == r.Reason()
}

// faultDetail is a fault's detail without the device's error when the reason already quotes it
// ("fired in the device call Launch: <error>" under a reason that ends in the same error).
func faultDetail(detail, reason string) string {
	if where, err, ok := strings.Cut(detail, ": "); ok && err != "" && strings.Contains(reason, err) {
		return where + " (error in the reason)"
	}
	return detail
}

// DeviceChangeText says in a sentence what a run did with a device an instance lost or abandoned.
func DeviceChangeText(c *DeviceChange) string {
	s := "lost: closed"
	if c.State == capture.DeviceAbandoned {
		s = "abandoned: a call never returned; its worker is left blocked and the device is never called again"
	}
	if c.Replacement != "" {
		if c.State != capture.DeviceAbandoned {
			s += " (a reset)"
		}
		s += "; the instances that follow run on a fresh device"
	} else {
		s += "; no device replaced it, so every instance that follows is skipped"
	}
	if c.Detail != "" {
		s += " (" + c.Detail + ")"
	}
	return s
}

// timeline shows the last events that explain a failure: the probe's captured and eager ops, the
// ops between capture and replay, the ops of the eager entries of a phases list (the work between
// two captures), and every call that returned an error or was skipped. Engine bookkeeping (setup,
// verify reads, teardown) and the successful replay launches are left out.
func (t *textWriter) timeline(indent string, events []capture.Event) {
	var keep []capture.Event
	phases := false // an eager entry of a phases list is kept: the head says so
	for _, ev := range events {
		shown := ev.Step != nil && (ev.Phase == capture.PhaseCapture || ev.Phase == capture.PhaseBetween || ev.Phase == capture.PhaseEager)
		if ev.Err != "" || ev.Skipped != "" || shown {
			keep = append(keep, ev)
			phases = phases || ev.Phase == capture.PhaseEager
		}
	}
	if len(keep) == 0 {
		return
	}
	calls := 0 // the calls of elided replay rounds included (capture.Event.Elided)
	for _, ev := range events {
		if ev.Elided != nil {
			calls += ev.Elided.Calls
		} else {
			calls++
		}
	}
	kinds, in := "capture, between, errors", "capture, between or with errors"
	if phases {
		kinds, in = "capture, eager phases, between, errors", "capture, eager phases, between or with errors"
	}
	head := fmt.Sprintf("%d of %s (%s)", len(keep), plural.Count(calls, "call"), kinds)
	if len(keep) > maxTimelineEvents {
		head = fmt.Sprintf("last %d of the %d calls in %s (%d calls in all)", maxTimelineEvents, len(keep), in, calls)
		keep = keep[len(keep)-maxTimelineEvents:]
	}
	t.label(indent, "timeline", head)
	stepW, seqW := 0, 0
	for _, ev := range keep {
		stepW = max(stepW, utf8.RuneCountInString(stepOf(ev)))
		seqW = max(seqW, len(fmt.Sprint(ev.Seq)))
	}
	for _, ev := range keep {
		tag := ""
		call := ev.Call
		switch {
		case ev.Skipped != "":
			tag = "skipped"
			call += " (" + ev.Skipped + ")"
		case ev.Err != "":
			tag = "error"
		case ev.Captured:
			tag = "captured"
		case ev.Eager:
			tag = "eager"
			call += " (its stream is not part of the capture)"
		}
		if ev.Returned != "" {
			call += " = " + ev.Returned
		}
		if ev.Thread != device.Main {
			call += " (thread " + ev.Thread.String() + ")"
		}
		if ev.Err != "" {
			call += " -> " + errorText(ev)
		}
		line := fmt.Sprintf("  #%-*d  %-*s  %-8s  %s", seqW, ev.Seq, stepW, stepOf(ev), tag, call)
		t.label(indent, "", strings.TrimRight(line, " "))
	}
}

func stepOf(ev capture.Event) string {
	if ev.Step != nil {
		return ev.Step.String()
	}
	return string(ev.Phase)
}

func errorText(ev capture.Event) string {
	if ev.Code != 0 {
		return fmt.Sprintf("%d [%s]", ev.Code, ev.Class)
	}
	if ev.Class != "" {
		return "[" + string(ev.Class) + "]"
	}
	return ev.Err
}

// words writes bytes in hex grouped in 4-byte words, so a reader can line want up against got.
func words(data capture.Bytes) string {
	h := hex.EncodeToString(data)
	if h == "" {
		return "(none)"
	}
	var b strings.Builder
	for i := 0; i < len(h); i += 8 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(h[i:min(i+8, len(h))])
	}
	return b.String()
}

// WriteTexts writes the reports of several runs as one text, each as WriteText writes it, a blank
// line between them and the enforcement table of every run (EnforcementTable) as the last run's
// last section. The reports are not changed.
func WriteTexts(w io.Writer, opt TextOptions, runs ...*Report) error {
	for i, r := range runs {
		if i == len(runs)-1 {
			last := *r
			last.Enforcement = EnforcementTable(runs...)
			r = &last
		}
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := WriteText(w, r, opt); err != nil {
			return err
		}
	}
	return nil
}

// WriteDetail writes the detail block of one entry (reason, mismatches, stale ranges, rejection or
// refusal, leaks, the timeline calls that matter), as WriteText prints it under an instance.
func WriteDetail(w io.Writer, e Entry) error {
	tw := &textWriter{w: w}
	tw.detail("", e)
	return tw.err
}

// WriteFailures writes one line per instance whose verdict failed, in every run, with its
// platform and the verdict's reason; nothing when none failed. Output that shows only a summary
// (the enforcement table) ends with it, so a failing exit status always says why.
func WriteFailures(w io.Writer, runs ...*Report) error {
	tw := &textWriter{w: w}
	var lines []string
	for _, r := range runs {
		for _, e := range r.Results {
			if e.Verdict.Status == verdict.Fail {
				lines = append(lines, fmt.Sprintf("FAIL  %s  (%s)  %s", e.ID, RunName(r), e.Verdict.Reason))
			}
		}
	}
	if len(lines) == 0 {
		return nil
	}
	tw.printf("\n%s:\n", plural.Count(len(lines), "failing instance"))
	for _, l := range lines {
		tw.printf("%s\n", l)
	}
	return tw.err
}

// share is part of whole as a percentage, to two significant figures and never rounded to 0% or
// 100% when it is neither.
func share(part, whole int64) string {
	if whole <= 0 {
		return "-"
	}
	p := 100 * float64(part) / float64(whole)
	switch {
	case part == 0:
		return "0%"
	case part == whole:
		return "100%"
	case p < 0.01:
		return "<0.01%"
	case p > 99.9:
		return ">99.9%"
	case p >= 99:
		// Two significant figures would round these to 1e+02: one decimal keeps them below 100.
		return strconv.FormatFloat(p, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(p, 'g', 2, 64) + "%"
}

// pluralInstances counts instances, the noun most of the reports' counts are of.
func pluralInstances(n int) string { return plural.Count(n, "instance") }
