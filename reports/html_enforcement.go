package reports

import (
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/probes"
)

// htmlEnforcement is the enforcement table (EnforcementTable's model, its cells unchanged) as the
// HTML page shows it: a column group per platform, a row group per hazard, each cell coloured by
// what the platform did and titled with what its code means and what the instance saw.
type htmlEnforcement struct {
	Runs      []htmlColumnGroup
	Modes     []htmlMode // every column's mode, in column order
	Groups    []htmlHazardGroup
	Legend    []htmlLegendItem
	Positives string // how many unguarded instances of positive probes the table leaves out
	Columns   int    // hazard, probe and the cells
}

// htmlMode is a column's capture mode and what it means.
type htmlMode struct{ Name, Title string }

// modeTitles say what each capture mode prohibits (CUDA's CUstreamCaptureMode; ACL's
// aclmdlRICaptureMode numbers and names them the same way).
var modeTitles = map[string]string{
	"global":       "capture mode global: while the capture runs, a potentially unsafe call from any thread is an error",
	"thread-local": "capture mode thread-local: only the capturing thread's potentially unsafe calls are errors",
	"relaxed":      "capture mode relaxed: potentially unsafe calls are not prohibited",
}

type htmlColumnGroup struct {
	Run  string
	Span int
}

type htmlHazardGroup struct {
	Hazard string
	Rows   []htmlTableRow
}

type htmlTableRow struct {
	Hazard, Probe string
	Cells         []htmlTableCell
}

// htmlTableCell is one cell: Text is the model's cell word, Kind its colour (an outcome, crash, or unrun).
type htmlTableCell struct {
	Text, Kind, Title, Href string
	First                   bool // the first column of a platform's group
}

// htmlLegendItem is one entry of a legend: a swatch of a kind and what it means.
type htmlLegendItem struct {
	Kind, Mark, Meaning string
}

// cellKinds are the enforcement cells' colours by kind, in legend order, with what each mark means.
var cellKinds = []htmlLegendItem{
	{Kind: "rejected", Mark: "N", Meaning: "a platform error code: the platform rejected the call with it; +inv: and invalidated the capture"},
	{Kind: "corrupted", Mark: CellSilent, Meaning: "wrong data and no error (with a code before it, +" + CellSilent + ": rejected, and the bytes were wrong all the same)"},
	{Kind: "exact", Mark: CellAllowed, Meaning: "no error, exact data"},
	{Kind: "refused", Mark: CellRefused, Meaning: "a guard refused the call"},
	{Kind: "error", Mark: CellError, Meaning: "the instance ended in error"},
	{Kind: "crash", Mark: CellCrash, Meaning: "the platform's process died in a call (on a device, run with --isolate)"},
	{Kind: "skipped", Mark: CellSkipped, Meaning: "skipped"},
	{Kind: "unrun", Mark: CellNotRun, Meaning: "not run: the probe has no instance in this mode on this platform"},
}

// cellKind is the colour of an unguarded entry's cell: its outcome, crash for an error that was one.
func cellKind(e Entry) string {
	if crashed(e) {
		return "crash"
	}
	return string(e.Outcome)
}

// cellTitleOf says what a cell means, then what the instance saw.
func cellTitleOf(run string, col TableColumn, e Entry) string {
	var meaning string
	switch {
	case e.Rejection != nil:
		r := e.Rejection
		meaning = fmt.Sprintf("rejected with code %d", r.Code)
		if r.Name != "" {
			meaning += " " + r.Name
		}
		meaning += " [" + string(r.Class) + "]"
		if r.Invalidated {
			meaning += "; +inv: the capture was invalidated"
		}
		if e.Outcome == probes.Corrupted {
			meaning += "; +" + CellSilent + ": and the bytes were wrong all the same"
		}
		meaning += "\n" + rejectionText(r)
	default:
		for _, k := range cellKinds {
			if k.Kind == cellKind(e) {
				meaning = k.Meaning
			}
		}
		if s := shortReason(e); s != "" {
			meaning += "\n" + s
		}
	}
	return fmt.Sprintf("%s on %s, %s: %s", e.Probe, run, col.Mode, meaning)
}

// unguardedEntries indexes the entries the enforcement table's cells stand for, by column and probe.
func unguardedEntries(runs []*Report) map[TableColumn]map[string]Entry {
	out := map[TableColumn]map[string]Entry{}
	tabulated(runs, func(c TableColumn, e Entry) {
		if out[c] == nil {
			out[c] = map[string]Entry{}
		}
		out[c][e.Probe] = e
	})
	return out
}

// htmlEnforcementOf lays out the enforcement table of runs; nil when no run has results.
func htmlEnforcementOf(runs []*Report) *htmlEnforcement {
	if len(runs) == 0 {
		return nil
	}
	t := EnforcementTable(runs...)
	entries := unguardedEntries(runs)
	h := &htmlEnforcement{Columns: 2 + len(t.Columns)}
	if t.Positives > 0 {
		h.Positives = fmt.Sprintf("%s of positive probes (hazard none) are left out: they say nothing about what a platform enforces.",
			plural.Count(t.Positives, "unguarded instance"))
	}
	for i, c := range t.Columns {
		h.Modes = append(h.Modes, htmlMode{Name: c.Mode, Title: modeTitles[c.Mode]})
		if i == 0 || t.Columns[i-1].Run != c.Run {
			h.Runs = append(h.Runs, htmlColumnGroup{Run: c.Run})
		}
		h.Runs[len(h.Runs)-1].Span++
	}
	kinds := map[string]bool{}
	for _, r := range t.Rows {
		row := htmlTableRow{Hazard: r.Hazard, Probe: r.Probe}
		for i, text := range r.Cells {
			col := t.Columns[i]
			cell := htmlTableCell{Text: text, Kind: "unrun", Title: fmt.Sprintf("%s on %s, %s: not run", r.Probe, col.Run, col.Mode),
				First: i == 0 || t.Columns[i-1].Run != col.Run}
			if e, ok := entries[col][r.Probe]; ok {
				cell.Kind, cell.Title = cellKind(e), cellTitleOf(col.Run, col, e)
				if hasSection(e) {
					cell.Href = "#" + anchorOf(col.Run, e.ID)
				}
			}
			if strings.HasSuffix(text, "+"+CellSilent) {
				cell.Kind = "corrupted"
			}
			kinds[cell.Kind] = true
			row.Cells = append(row.Cells, cell)
		}
		if n := len(h.Groups); n == 0 || h.Groups[n-1].Hazard != r.Hazard {
			h.Groups = append(h.Groups, htmlHazardGroup{Hazard: r.Hazard})
		}
		g := &h.Groups[len(h.Groups)-1]
		g.Rows = append(g.Rows, row)
	}
	for _, k := range cellKinds {
		if kinds[k.Kind] {
			h.Legend = append(h.Legend, k)
		}
	}
	if len(h.Groups) == 0 && h.Positives == "" {
		return nil
	}
	return h
}

// hazardCount says how many probes a hazard group holds.
func (g htmlHazardGroup) Count() string { return plural.Count(len(g.Rows), "probe") }
