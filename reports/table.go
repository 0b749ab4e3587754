package reports

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/verdict"
)

// Table is the enforcement table: for every unguarded hazard probe (grouped by hazard) and capture
// mode, what each platform run did — rejected with a code, let through silently (wrong data), or
// allowed (exact). One column per run and mode.
type Table struct {
	Columns []TableColumn `json:"columns"`
	Rows    []TableRow    `json:"rows"`
	// Positives counts the unguarded instances of positive probes (hazard none), which the table
	// leaves out: they say nothing about what a platform enforces.
	Positives int `json:"positives_left_out"`
}

// TableColumn is one run (a platform: backend and profile) in one capture mode.
type TableColumn struct {
	Run  string `json:"run"`
	Mode string `json:"mode"`
}

// TableRow is one probe; Cells follow Columns.
type TableRow struct {
	Hazard string   `json:"hazard"`
	Probe  string   `json:"probe"`
	Cells  []string `json:"cells"`
}

// Cell words. A rejection is its platform code, with "+inv" when it invalidated the capture.
const (
	CellSilent  = "silent"  // corrupted: wrong data, no error
	CellAllowed = "allowed" // exact: no error, right data
	CellRefused = "refused" // a guard refused (only when guards ran)
	CellError   = "error"
	CellCrash   = "crash" // the platform's process died inside a call (run a device with --isolate)
	CellSkipped = "skip"
	CellNotRun  = "-"
)

// TableLegend explains the cells.
const TableLegend = "a number: rejected with that platform code (+inv: the capture was invalidated; +silent: and the bytes were wrong all the same); silent: wrong data and no error; allowed: no error, exact; crash: the platform's process dies in a call (on a device, run with --isolate); -: not run"

// RunName labels a report's column group: backend/profile.
func RunName(r *Report) string {
	if r.Platform != "" {
		return r.Platform
	}
	return verdict.PlatformKey(r.Backend, r.Profile)
}

// cellOf is what one unguarded entry shows.
func cellOf(e Entry) string {
	switch e.Outcome {
	case probes.Rejected:
		if e.Rejection == nil {
			return "rejected"
		}
		return rejectionCell(e.Rejection)
	case probes.Corrupted:
		if e.Rejection != nil {
			// The platform returned an error and the data was wrong anyway: both are the finding.
			return rejectionCell(e.Rejection) + "+" + CellSilent
		}
		return CellSilent
	case probes.Exact:
		return CellAllowed
	case probes.Refused:
		return CellRefused
	case probes.Errored:
		if crashed(e) {
			return CellCrash
		}
		return CellError
	case probes.Skipped:
		return CellSkipped
	}
	return string(e.Outcome)
}

// tabulated calls visit with each entry of runs the enforcement table has a cell for, and the
// cell's column, and returns how many it left out as positive. Positive probes (hazard none) say
// nothing about enforcement; guarded runs are the runtime's, not the platform's.
func tabulated(runs []*Report, visit func(TableColumn, Entry)) (positives int) {
	for _, r := range runs {
		for _, e := range r.Results {
			switch {
			case e.Guarded:
			case e.Hazard == "none":
				positives++
			default:
				visit(TableColumn{Run: RunName(r), Mode: e.Mode.String()}, e)
			}
		}
	}
	return positives
}

func rejectionCell(r *capture.Rejection) string {
	c := fmt.Sprint(r.Code)
	if r.Invalidated {
		c += "+inv"
	}
	return c
}

// EnforcementTable builds the table from the unguarded entries of one or more runs.
func EnforcementTable(runs ...*Report) *Table {
	t := &Table{}
	modes := make([]string, len(device.CaptureModes()))
	for i, m := range device.CaptureModes() {
		modes[i] = m.String()
	}
	col := map[TableColumn]int{}
	for _, r := range runs {
		for _, m := range modes {
			c := TableColumn{Run: RunName(r), Mode: m}
			if _, dup := col[c]; !dup {
				col[c] = len(t.Columns)
				t.Columns = append(t.Columns, c)
			}
		}
	}
	row := map[string]*TableRow{}
	t.Positives = tabulated(runs, func(c TableColumn, e Entry) {
		tr := row[e.Probe]
		if tr == nil {
			tr = &TableRow{Hazard: string(e.Hazard), Probe: e.Probe, Cells: slices.Repeat([]string{CellNotRun}, len(t.Columns))}
			row[e.Probe] = tr
		}
		tr.Cells[col[c]] = cellOf(e)
	})
	for _, tr := range row {
		t.Rows = append(t.Rows, *tr)
	}
	hazardRank := func(h string) int {
		if i := slices.Index(probes.Hazards(), probes.Hazard(h)); i >= 0 {
			return i
		}
		return len(probes.Hazards())
	}
	slices.SortFunc(t.Rows, func(a, b TableRow) int {
		if d := hazardRank(a.Hazard) - hazardRank(b.Hazard); d != 0 {
			return d
		}
		return strings.Compare(a.Probe, b.Probe)
	})
	return t
}

// WriteTable writes the table for a terminal: a run header over its modes, one line per probe.
func WriteTable(w io.Writer, t *Table) error {
	tw := &textWriter{w: w}
	tw.printf("enforcement: what the platform did with each unguarded probe\n")
	tw.printf("  %s\n\n", TableLegend)
	if len(t.Rows) == 0 {
		if t.Positives > 0 {
			tw.printf("  (no unguarded hazard instances: %s of positive probes not shown)\n", plural.Count(t.Positives, "unguarded instance"))
		} else {
			tw.printf("  (no unguarded instances)\n")
		}
		return tw.err
	}
	head := []string{"HAZARD", "PROBE"}
	widths := []int{len(head[0]), len(head[1])}
	for _, r := range t.Rows {
		widths[0] = max(widths[0], utf8.RuneCountInString(r.Hazard))
		widths[1] = max(widths[1], utf8.RuneCountInString(r.Probe))
	}
	cw := make([]int, len(t.Columns))
	for i, c := range t.Columns {
		cw[i] = utf8.RuneCountInString(c.Mode)
		if i == 0 || t.Columns[i-1].Run != c.Run {
			cw[i] = max(cw[i], utf8.RuneCountInString(c.Run))
		}
		for _, r := range t.Rows {
			cw[i] = max(cw[i], utf8.RuneCountInString(r.Cells[i]))
		}
	}
	// The run line names each group of mode columns once, over its first column.
	line1 := fmt.Sprintf("%-*s  %-*s", widths[0], "", widths[1], "")
	line2 := fmt.Sprintf("%-*s  %-*s", widths[0], head[0], widths[1], head[1])
	for i, c := range t.Columns {
		sep := "  "
		if i > 0 && t.Columns[i-1].Run != c.Run {
			sep = " | "
		}
		group := ""
		if i == 0 || t.Columns[i-1].Run != c.Run {
			group = c.Run
		}
		line1 += sep + fmt.Sprintf("%-*s", cw[i], group)
		line2 += sep + fmt.Sprintf("%-*s", cw[i], c.Mode)
	}
	tw.printf("%s\n%s\n", strings.TrimRight(line1, " "), strings.TrimRight(line2, " "))
	for _, r := range t.Rows {
		l := fmt.Sprintf("%-*s  %-*s", widths[0], r.Hazard, widths[1], r.Probe)
		for i, c := range r.Cells {
			sep := "  "
			if i > 0 && t.Columns[i-1].Run != t.Columns[i].Run {
				sep = " | "
			}
			l += sep + fmt.Sprintf("%-*s", cw[i], c)
		}
		tw.printf("%s\n", strings.TrimRight(l, " "))
	}
	return tw.err
}
