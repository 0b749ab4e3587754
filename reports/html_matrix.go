package reports

import (
	"fmt"
	"html/template"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/verdict"
)

// The matrix: every instance of every run as one cell, a row per probe (grouped under its set,
// named without it) and a column group per run, a column per (capture mode, guards) pair. A long
// matrix is laid out in two halves side by side, split at a set, so it fits 1280 px without a
// wide gutter of names. Probe names are monospace, so their width is known.

const (
	mxCell   = 16
	mxCharW  = 6.6 // an 11px monospace character
	mxHeadH  = 136 // the slanted column heads, below the runs' names
	mxGroupG = 10  // between two runs' column groups
	mxHalfG  = 24  // between the two halves (the first half's heads slant over the second's names)
	mxTail   = 56  // the last column head slants past the last column
	// mxSplit: a matrix of more rows than this is laid out in two halves when they fit mxMaxW.
	mxSplit = 30
	mxMaxW  = 1230
)

type mxCol struct {
	run     int
	mode    device.CaptureMode
	guarded bool
}

// mxRow is a set heading (set only) or a probe's row.
type mxRow struct {
	set, probe string
}

type mxLayout struct {
	runs  []*Report
	cols  []mxCol
	cell  map[string]map[mxCol]Entry
	halfs [][]mxRow
}

func layoutMatrix(runs []*Report) mxLayout {
	l := mxLayout{runs: runs, cell: map[string]map[mxCol]Entry{}}
	var rows []mxRow
	seen := map[string]bool{}
	for ri, r := range runs {
		for _, e := range r.Results {
			c := mxCol{ri, e.Mode, e.Guarded}
			if !slices.Contains(l.cols, c) {
				l.cols = append(l.cols, c)
			}
			if l.cell[e.Probe] == nil {
				l.cell[e.Probe] = map[mxCol]Entry{}
			}
			l.cell[e.Probe][c] = e
			if !seen[e.Probe] {
				seen[e.Probe] = true
				rows = append(rows, mxRow{set: e.Set, probe: e.Probe})
			}
		}
	}
	slices.SortFunc(l.cols, func(a, b mxCol) int {
		if a.run != b.run {
			return a.run - b.run
		}
		if a.mode != b.mode {
			return int(a.mode) - int(b.mode)
		}
		switch {
		case a.guarded == b.guarded:
			return 0
		case a.guarded:
			return 1
		}
		return -1
	})
	// The rows keep the runs' order, gathered by set in the order the sets first appear.
	var sets []string
	bySet := map[string][]mxRow{}
	for _, r := range rows {
		if _, ok := bySet[r.set]; !ok {
			sets = append(sets, r.set)
		}
		bySet[r.set] = append(bySet[r.set], r)
	}
	var all []mxRow
	for _, s := range sets {
		all = append(all, mxRow{set: s})
		all = append(all, bySet[s]...)
	}
	l.halfs = [][]mxRow{all}
	if len(all) > mxSplit {
		// Split at the set heading nearest the middle.
		best := -1
		for i, r := range all {
			if i > 0 && r.probe == "" && (best < 0 || abs(i-len(all)/2) < abs(best-len(all)/2)) {
				best = i
			}
		}
		if best > 0 {
			halfs := [][]mxRow{all[:best], all[best:]}
			if l.halfWidth(halfs[0])-mxTail+mxHalfG+l.halfWidth(halfs[1]) <= mxMaxW {
				l.halfs = halfs
			}
		}
	}
	return l
}

func abs(n int) int { return max(n, -n) }

// label is a row's name: the probe without its set, or the set.
func (r mxRow) label() string {
	if r.probe == "" {
		return r.set + "/"
	}
	if name, ok := strings.CutPrefix(r.probe, r.set+"/"); ok {
		return name
	}
	return r.probe
}

func (l mxLayout) labelW(rows []mxRow) int {
	n := 0
	for _, r := range rows {
		n = max(n, len(r.label()))
	}
	return int(float64(n)*mxCharW) + 10
}

// colX is the x of column i from the start of the cells.
func (l mxLayout) colX(i int) int {
	gaps := 0
	for j := 1; j <= i; j++ {
		if l.cols[j].run != l.cols[j-1].run {
			gaps++
		}
	}
	return i*mxCell + gaps*mxGroupG
}

func (l mxLayout) cellsW() int {
	if len(l.cols) == 0 {
		return 0
	}
	return l.colX(len(l.cols)-1) + mxCell
}

func (l mxLayout) halfWidth(rows []mxRow) int { return l.labelW(rows) + l.cellsW() + mxTail }

// matrixSVG draws the matrix of runs.
func matrixSVG(runs []*Report) template.HTML {
	l := layoutMatrix(runs)
	if len(l.cols) == 0 {
		return ""
	}
	width, height := 0, 0
	for i, h := range l.halfs {
		if i > 0 {
			width += mxHalfG - mxTail
		}
		width += l.halfWidth(h)
		height = max(height, mxHeadH+len(h)*mxCell+6)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="matrix" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="outcome matrix">`,
		width, height, width, height)
	x0 := 0
	for _, rows := range l.halfs {
		l.drawHalf(&b, x0, rows)
		x0 += l.halfWidth(rows) - mxTail + mxHalfG
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func (l mxLayout) drawHalf(b *strings.Builder, x0 int, rows []mxRow) {
	lw := l.labelW(rows)
	cx := x0 + lw
	// Run names over their column groups, then the slanted heads.
	for i, c := range l.cols {
		if i == 0 || l.cols[i-1].run != c.run {
			fmt.Fprintf(b, `<text x="%d" y="12" font-size="11" font-weight="bold">%s</text>`, cx+l.colX(i), template.HTMLEscapeString(RunName(l.runs[c.run])))
		}
		x := cx + l.colX(i) + mxCell/2
		fmt.Fprintf(b, `<text x="%d" y="%d" transform="rotate(-60 %d %d)" font-size="10">%s, guards %s</text>`,
			x, mxHeadH-4, x, mxHeadH-4, c.mode, probes.GuardsName(c.guarded))
	}
	for j, r := range rows {
		y := mxHeadH + j*mxCell
		if r.probe == "" {
			fmt.Fprintf(b, `<text x="%d" y="%d" font-size="11" font-weight="bold" font-family="monospace">%s</text>`, x0, y+mxCell-4, template.HTMLEscapeString(r.label()))
			fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ccc"/>`, x0+len(r.label())*7+4, y+mxCell/2, cx+l.cellsW(), y+mxCell/2)
			continue
		}
		fmt.Fprintf(b, `<g class="row"><rect class="bg" x="%d" y="%d" width="%d" height="%d"/><text x="%d" y="%d" font-size="11" font-family="monospace" text-anchor="end">%s<title>%s</title></text>`,
			x0, y, lw+l.cellsW(), mxCell, cx-6, y+mxCell-4, template.HTMLEscapeString(r.label()), template.HTMLEscapeString(r.probe))
		for i, c := range l.cols {
			e, ok := l.cell[r.probe][c]
			if !ok {
				continue
			}
			run := RunName(l.runs[c.run])
			stroke := ""
			if e.Verdict.Status == verdict.Fail {
				stroke = ` stroke="#000" stroke-width="2.5"`
			}
			rect := fmt.Sprintf(`<rect class="cell" data-run="%s" x="%d" y="%d" width="%d" height="%d" fill="%s"%s><title>%s</title></rect>`,
				template.HTMLEscapeString(run), cx+l.colX(i)+1, y+1, mxCell-2, mxCell-2, outcomeColours[e.Outcome], stroke,
				template.HTMLEscapeString(run+": "+cellTitle(e)))
			if hasSection(e) { // a clean pass has nothing below to link to
				rect = fmt.Sprintf(`<a href="#%s">%s</a>`, anchorOf(run, e.ID), rect)
			}
			b.WriteString(rect)
		}
		b.WriteString(`</g>`)
	}
}
