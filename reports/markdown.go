package reports

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/verdict"
)

// Marks of the Markdown summary: one symbol per verdict, in front of the outcome word.
var mdMarks = map[verdict.Status]string{
	verdict.Pass:            "✅",
	verdict.Fail:            "❌",
	verdict.Skip:            "⏭️",
	verdict.Uncharacterised: "❔",
}

// mdIncomplete marks the verdict line of a run that did not run every instance it selected.
const mdIncomplete = "⚠️"

// mdLegend explains the outcome matrix's cells.
const mdLegend = "✅ pass · ❌ fail · ⏭️ skip · ❔ uncharacterised (no expectation: recorded, not judged) · - not run; " +
	"the word is the outcome, and a failing cell says what was expected instead"

// mdDetailOpenLines: a failure's detail block up to this many lines is shown as it is; a longer one
// is folded under <details>, so a summary with many failures stays a page one can scroll.
const mdDetailOpenLines = 12

// WriteMarkdown writes runs as a CI job summary in GitHub-flavoured Markdown (for
// $GITHUB_STEP_SUMMARY and the like): a heading with the tool, version and platforms, one verdict
// line per run, the outcome matrix (a row per probe, a column per run, mode and guard setting),
// a section per failing instance with its verdict and the text report's detail block (WriteDetail)
// in a fenced code block, the instances an interrupted run did not reach (its verdict line is then
// marked ⚠️, or ❌ when a verdict failed, never ✅; so is a run that skipped every instance), why
// instances were skipped, and the enforcement table (EnforcementTable) with WriteTable's cells.
// Text from results is escaped: it never turns into markup, a table cell or HTML.
//
// Watch reports (Report.IsWatch) are written by writeMarkdownWatch instead, one after another:
// the verdict line and header, the table of findings (kind, count, pid, graph, range, detail,
// refused), each finding's text, the suppressions and notes.
func WriteMarkdown(w io.Writer, runs ...*Report) error {
	tw := &textWriter{w: w}
	if allWatch(runs) {
		for i, r := range runs {
			if i > 0 {
				tw.printf("\n")
			}
			writeMarkdownWatch(tw, r, "#")
		}
		return tw.err
	}
	var names []string
	for _, r := range runs {
		if n := RunName(r); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	title := "replaycheck"
	if len(runs) > 0 {
		title = strings.TrimSpace(runs[0].Tool + " " + runs[0].Version)
	}
	tw.printf("# %s", mdText(title))
	if len(names) > 0 {
		tw.printf(": %s", mdText(strings.Join(names, ", ")))
	}
	tw.printf("\n\n")
	if len(runs) == 0 {
		tw.printf("No runs.\n")
		return tw.err
	}

	for _, r := range runs {
		mark, incomplete := mdMarks[verdict.Pass], ""
		if n := len(r.NotRun); n > 0 {
			// Never ✅: a run that stopped early passed nothing about the instances it did not reach.
			mark = mdIncomplete
			incomplete = "; **incomplete**: " + mdText(fmt.Sprintf("%d of %s not run (the run was interrupted)", n, plural.Count(n+len(r.Results), "instance")))
		}
		if skippedAll(r.Summary) {
			// Never ✅ either: a run that skipped everything verified nothing.
			mark = mdIncomplete
			incomplete += "; **" + nothingVerified + "**"
		}
		if r.Summary.Failed() {
			mark = mdMarks[verdict.Fail]
		}
		where := []string{}
		if r.Device != "" {
			where = append(where, "device "+r.Device)
		}
		where = append(where, "runtime "+r.runtime())
		if r.BaselineFile != "" {
			where = append(where, "baseline "+r.BaselineFile)
		}
		tw.printf("- %s **%s**: %s%s<br><sub>%s</sub>\n", mark, mdText(RunName(r)), mdText(summaryLine(r.Summary)), incomplete, mdText(strings.Join(where, ", ")))
	}

	tw.printf("\n## Outcomes\n\n")
	writeMarkdownMatrix(tw, runs)

	var failing int
	for _, r := range runs {
		for _, e := range r.Results {
			if e.Verdict.Status == verdict.Fail {
				failing++
			}
		}
	}
	if failing > 0 {
		tw.printf("\n## Failures (%d)\n", failing)
		for _, r := range runs {
			for _, e := range r.Results {
				if e.Verdict.Status == verdict.Fail {
					writeMarkdownFailure(tw, r, e)
				}
			}
		}
	}

	writeMarkdownNotRun(tw, runs)
	writeMarkdownSkipped(tw, runs)

	tw.printf("\n## Enforcement\n\n")
	if tw.err == nil {
		tw.err = WriteMarkdownTable(w, EnforcementTable(runs...))
	}
	return tw.err
}

// mdColumn is one column of the outcome matrix: a run's instances in one mode and guard setting.
type mdColumn struct {
	run     int
	mode    device.CaptureMode
	guarded bool
}

// writeMarkdownMatrix writes the outcome matrix: probes in the order they first ran, and for each
// run the (mode, guards) columns it has, modes in platform order, guards off before on.
func writeMarkdownMatrix(tw *textWriter, runs []*Report) {
	var probeOrder []string
	cells := map[string]map[mdColumn]string{}
	present := map[mdColumn]bool{}
	for i, r := range runs {
		for _, e := range r.Results {
			if _, ok := cells[e.Probe]; !ok {
				probeOrder = append(probeOrder, e.Probe)
				cells[e.Probe] = map[mdColumn]string{}
			}
			col := mdColumn{run: i, mode: e.Mode, guarded: e.Guarded}
			present[col] = true
			cells[e.Probe][col] = mdCell(e)
		}
	}
	if len(probeOrder) == 0 {
		tw.printf("No instances ran.\n")
		return
	}
	var cols []mdColumn
	for i := range runs {
		for _, m := range device.CaptureModes() {
			for _, g := range []bool{false, true} {
				if c := (mdColumn{run: i, mode: m, guarded: g}); present[c] {
					cols = append(cols, c)
				}
			}
		}
	}
	tw.printf("%s\n\n", mdText(mdLegend))
	tw.printf("| Probe |")
	for _, c := range cols {
		tw.printf(" %s<br>%s<br>guards %s |", mdText(RunName(runs[c.run])), mdText(c.mode.String()), probes.GuardsName(c.guarded))
	}
	tw.printf("\n| --- |%s\n", strings.Repeat(" :---: |", len(cols)))
	for _, p := range probeOrder {
		tw.printf("| %s |", mdText(p))
		for _, c := range cols {
			cell, ok := cells[p][c]
			if !ok {
				cell = CellNotRun
			}
			tw.printf(" %s |", cell)
		}
		tw.printf("\n")
	}
}

// mdCell is one instance in the outcome matrix: its verdict's mark and its outcome, and for a
// failure what was expected instead, already escaped.
func mdCell(e Entry) string {
	mark, ok := mdMarks[e.Verdict.Status]
	if !ok {
		mark = string(e.Verdict.Status)
	}
	cell := mark + " " + mdText(string(e.Outcome))
	if e.Verdict.Status != verdict.Fail {
		return cell
	}
	var why string
	switch {
	case e.Outcome == probes.Errored && e.Error != nil:
		why = string(e.Error.Kind)
	case e.Verdict.Rule == verdict.RuleOutcome && e.Expected != "":
		why = "expected " + string(e.Expected)
	case e.Verdict.Rule == verdict.RuleRejectedBy && e.Rejection != nil:
		why = "class " + string(e.Rejection.Class)
	case e.Verdict.Rule == verdict.RuleRefusedBy && e.Refusal != nil:
		why = "refused by " + e.Refusal.Who() + " at " + e.Refusal.Step.String()
	case e.Verdict.Rule == verdict.RuleDrift:
		why = "drift from baseline"
	default:
		why = string(e.Verdict.Rule)
	}
	return "**" + cell + "** (" + mdText(why) + ")"
}

// writeMarkdownFailure writes one failing instance: a heading with its id and platform, the
// verdict's reason, and the detail block in a fenced code block, folded when long.
func writeMarkdownFailure(tw *textWriter, r *Report, e Entry) {
	tw.printf("\n### %s `%s` on %s\n\n", mdMarks[verdict.Fail], mdCode(e.ID), mdText(RunName(r)))
	reason := e.Verdict.Reason
	if reason == "" {
		reason = e.Reason
	}
	tw.printf("%s\n", mdText(reason))
	var b strings.Builder
	if err := WriteDetail(&b, e); err != nil {
		tw.err = err
		return
	}
	detail := safeChars(strings.TrimRight(b.String(), "\n"))
	if detail == "" {
		return
	}
	fence := mdFence(detail)
	lines := strings.Count(detail, "\n") + 1
	if lines > mdDetailOpenLines {
		tw.printf("\n<details><summary>detail (%d lines)</summary>\n\n%stext\n%s\n%s\n\n</details>\n", lines, fence, detail, fence)
		return
	}
	tw.printf("\n%stext\n%s\n%s\n", fence, detail, fence)
}

// writeMarkdownNotRun writes the instances each run never reached (Report.NotRun): a section
// that says the run was interrupted, its list folded when long.
func writeMarkdownNotRun(tw *textWriter, runs []*Report) {
	var lines []string
	for _, r := range runs {
		for _, id := range r.NotRun {
			lines = append(lines, fmt.Sprintf("- `%s` on %s\n", mdCode(id), mdText(RunName(r))))
		}
	}
	if len(lines) == 0 {
		return
	}
	tw.printf("\n## %s Not run (%d)\n\n", mdIncomplete, len(lines))
	tw.printf("The run was interrupted before these instances: they have no verdict, and the run is incomplete.\n\n")
	if len(lines) > mdDetailOpenLines {
		tw.printf("<details><summary>%s</summary>\n\n%s\n</details>\n", pluralInstances(len(lines)), strings.Join(lines, ""))
		return
	}
	tw.printf("%s", strings.Join(lines, ""))
}

// writeMarkdownSkipped writes why instances were skipped: a line per run and reason, with how
// many instances it skipped (the matrix says only "skipped").
func writeMarkdownSkipped(tw *textWriter, runs []*Report) {
	var lines []string
	total := 0
	for _, r := range runs {
		shown, rest, instances := listedSkips(skipGroups(r.Results))
		total += instances
		for _, g := range shown {
			total += g.n
			lines = append(lines, fmt.Sprintf("- %s on %s: %s\n", pluralInstances(g.n), mdText(RunName(r)), mdText(g.reason)))
		}
		if rest > 0 {
			lines = append(lines, fmt.Sprintf("- on %s, %s (the JSON report has each)\n", mdText(RunName(r)), plural.Count(rest, "other reason")))
		}
	}
	if len(lines) == 0 {
		return
	}
	tw.printf("\n## %s Skipped (%d)\n\n", mdMarks[verdict.Skip], total)
	if len(lines) > mdDetailOpenLines {
		tw.printf("<details><summary>%d reasons</summary>\n\n%s\n</details>\n", len(lines), strings.Join(lines, ""))
		return
	}
	tw.printf("%s", strings.Join(lines, ""))
}

// WriteMarkdownTable writes the enforcement table as a Markdown table: WriteTable's legend and
// cells, one column per run and mode.
func WriteMarkdownTable(w io.Writer, t *Table) error {
	tw := &textWriter{w: w}
	tw.printf("What the platform did with each unguarded probe.\n\nCells: %s\n\n", mdText(TableLegend))
	if len(t.Rows) == 0 {
		if t.Positives > 0 {
			tw.printf("No unguarded hazard instances: %s of positive probes not shown.\n", plural.Count(t.Positives, "unguarded instance"))
		} else {
			tw.printf("No unguarded instances.\n")
		}
		return tw.err
	}
	tw.printf("| Hazard | Probe |")
	for _, c := range t.Columns {
		tw.printf(" %s<br>%s |", mdText(c.Run), mdText(c.Mode))
	}
	tw.printf("\n| --- | --- |%s\n", strings.Repeat(" --- |", len(t.Columns)))
	for _, r := range t.Rows {
		tw.printf("| %s | %s |", mdText(r.Hazard), mdText(r.Probe))
		for _, c := range r.Cells {
			tw.printf(" %s |", mdText(c))
		}
		tw.printf("\n")
	}
	return tw.err
}

// mdReplacer escapes text for Markdown: the HTML specials as entities (GitHub renders inline
// HTML), Markdown's inline punctuation with a backslash, and pipes, so that text in a table cell
// stays in its cell. Line breaks become spaces: every use is one line or one cell.
var mdReplacer = strings.NewReplacer(
	"&", "&amp;", "<", "&lt;", ">", "&gt;",
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "~", `\~`, "|", `\|`,
	"\r\n", " ", "\n", " ", "\r", " ",
)

func mdText(s string) string { return mdReplacer.Replace(safeChars(s)) }

// mdCode is text for an inline code span outside a table, where everything but a backtick (which
// would end the span) and a line break is literal.
func mdCode(s string) string {
	return strings.NewReplacer("`", "'", "\n", " ").Replace(safeChars(s))
}

// mdFence is a code fence longer than any run of backticks in text.
func mdFence(text string) string {
	longest, run := 0, 0
	for _, r := range text {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}
