package reports

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/verdict"
)

// WriteHTML writes runs as one self-contained HTML page (no script, no outside resource): per run
// an SVG matrix of probes by (mode, guards), one cell per instance coloured by outcome and outlined
// when its verdict failed, each cell linking to the instance; then every instance that did not
// pass or has a finding, with its detail (the text report's), its mismatches as want/got byte
// rows, and a picture of memory: the ranges each graph captured, the stale ones marked with the
// buffers that hold them now. A run that did not reach every instance it selected (Report.NotRun:
// it was interrupted) has a banner under its heading and the list of those instances at its end,
// and the page's title says "(incomplete)".
//
// A watch report (Report.IsWatch) is its header, a Findings table (kind, count, pid, graph, range,
// detail, refused), each row opening onto the finding's text with its call stacks, the
// suppressions and the interposer's notes; a page of watch reports only has no outcome legend.
func WriteHTML(w io.Writer, runs ...*Report) error {
	page := htmlPage{Title: "replaycheck report", Watch: allWatch(runs)}
	incomplete := false
	for _, r := range runs {
		page.Title = fmt.Sprintf("replaycheck %s report", r.Version)
		if r.IsWatch() {
			page.Title = fmt.Sprintf("replaycheck %s watch report", r.Version)
			page.Runs = append(page.Runs, htmlWatchRunOf(r))
			continue
		}
		page.Runs = append(page.Runs, htmlRunOf(r))
		incomplete = incomplete || len(r.NotRun) > 0
	}
	if incomplete {
		page.Title += " (incomplete)"
	}
	return htmlTemplate.Execute(w, page)
}

type htmlPage struct {
	Title string
	Runs  []htmlRun
	// Watch: every run is a watch report; the outcome legend says nothing of them.
	Watch bool
}

type htmlRun struct {
	Name, Summary, Device, Runtime string
	Matrix                         template.HTML
	Instances                      []htmlInstance
	// Incomplete says how many selected instances the run did not reach, NotRun lists them.
	Incomplete string
	NotRun     []string
	// Skipped says why instances were skipped, a line per reason (skipReasons).
	Skipped []string
	// Watch is a watch report's section; the fields above are then unused.
	Watch *htmlWatch
}

type htmlInstance struct {
	Anchor, ID, Mark, Outcome, Verdict string
	Detail                             string
	Mismatches                         []capture.Mismatch
	Memory                             template.HTML
}

// outcomeColours are the matrix's cell colours.
var outcomeColours = map[probes.Outcome]string{
	probes.Exact: "#2e7d32", probes.Refused: "#1565c0", probes.Rejected: "#ef8f00",
	probes.Corrupted: "#c62828", probes.Errored: "#6a1b9a", probes.Skipped: "#9e9e9e",
}

func anchorOf(platform, id string) string {
	r := strings.NewReplacer("/", "-", "@", "-", ".", "-")
	return "i-" + r.Replace(platform) + "-" + r.Replace(id)
}

func htmlRunOf(r *Report) htmlRun {
	run := htmlRun{Name: RunName(r), Summary: summaryLine(r.Summary), Device: r.Device, Runtime: r.runtime(),
		Skipped: skipReasons(r.Results, r.Summary)}
	run.Matrix = matrixSVG(r)
	if n := len(r.NotRun); n > 0 {
		run.Incomplete = fmt.Sprintf("the run was interrupted: %d of %d instances not run, listed below; they have no verdict", n, n+len(r.Results))
		run.NotRun = r.NotRun
	}
	for _, e := range r.Results {
		if !hasSection(e) {
			continue
		}
		var detail strings.Builder
		_ = WriteDetail(&detail, e)
		run.Instances = append(run.Instances, htmlInstance{
			Anchor: anchorOf(run.Name, e.ID), ID: e.ID, Mark: markOf(e.Verdict.Status), Outcome: string(e.Outcome),
			Verdict: e.Verdict.Reason, Detail: detail.String(), Mismatches: e.Mismatches, Memory: memorySVG(e),
		})
	}
	return run
}

// OutcomeColour is the colour (#rrggbb) the HTML report fills an outcome's matrix cells with.
func OutcomeColour(o probes.Outcome) (string, bool) {
	c, ok := outcomeColours[o]
	return c, ok
}

// hasSection reports whether the page has a section for e: every instance that did not pass or
// has a finding.
func hasSection(e Entry) bool { return e.Verdict.Status != verdict.Pass || hasFinding(e) }

// matrixSVG draws one row per probe and one column per (mode, guards) pair the run holds.
func matrixSVG(r *Report) template.HTML {
	type col struct {
		mode    device.CaptureMode
		guarded bool
	}
	var cols []col
	var rows []string
	cell := map[string]map[col]Entry{}
	for _, e := range r.Results {
		c := col{e.Mode, e.Guarded}
		if !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
		if cell[e.Probe] == nil {
			cell[e.Probe] = map[col]Entry{}
			rows = append(rows, e.Probe)
		}
		cell[e.Probe][c] = e
	}
	slices.SortFunc(cols, func(a, b col) int {
		if a.mode != b.mode {
			return int(a.mode) - int(b.mode)
		}
		if a.guarded == b.guarded {
			return 0
		}
		if a.guarded {
			return 1
		}
		return -1
	})
	const size, labelW, headH = 16, 420, 130
	// The column heads slant up to the right, past the last column.
	width, height := labelW+len(cols)*size+130, headH+len(rows)*size+10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="matrix" width="%d" height="%d" role="img" aria-label="outcome matrix">`, width, height)
	for i, c := range cols {
		x := labelW + i*size + size/2
		fmt.Fprintf(&b, `<text x="%d" y="%d" transform="rotate(-60 %d %d)" font-size="10">%s, guards %s</text>`,
			x, headH-4, x, headH-4, c.mode, probes.GuardsName(c.guarded))
	}
	for j, p := range rows {
		y := headH + j*size
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="end">%s</text>`, labelW-6, y+size-4, template.HTMLEscapeString(p))
		for i, c := range cols {
			e, ok := cell[p][c]
			if !ok {
				continue
			}
			x := labelW + i*size
			stroke := ""
			if e.Verdict.Status == verdict.Fail {
				stroke = ` stroke="#000" stroke-width="2"`
			}
			rect := fmt.Sprintf(`<rect class="cell" x="%d" y="%d" width="%d" height="%d" fill="%s"%s><title>%s</title></rect>`,
				x+1, y+1, size-2, size-2, outcomeColours[e.Outcome], stroke,
				template.HTMLEscapeString(cellTitle(e)))
			if hasSection(e) { // a clean pass has nothing below to link to
				rect = fmt.Sprintf(`<a href="#%s">%s</a>`, anchorOf(RunName(r), e.ID), rect)
			}
			b.WriteString(rect)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// memorySVG draws the address space a result's ledger spans: one bar per captured buffer, stale
// ranges in red with what holds them now. Nothing when the result has no ledger.
func memorySVG(e Entry) template.HTML {
	if len(e.Ledger) == 0 {
		return ""
	}
	lo, hi := e.Ledger[0].Range.Addr, e.Ledger[0].Range.End()
	for _, l := range e.Ledger {
		lo, hi = min(lo, l.Range.Addr), max(hi, l.Range.End())
	}
	span := float64(max(hi-lo, 1))
	const width, barH, labelW = 640.0, 18, 200
	x := func(a uint64) float64 { return labelW + float64(a-lo)/span*width }
	stale := map[string]capture.StaleRange{}
	for _, s := range e.Stale {
		stale[fmt.Sprintf("%s/%s/%d", s.Capture, s.Buffer, s.Generation)] = s
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="memory" width="%d" height="%d" role="img" aria-label="captured ranges">`,
		int(labelW+width+20), (len(e.Ledger)+1)*(barH+6)+10)
	for i, l := range e.Ledger {
		y := i*(barH+6) + 4
		fill, note := "#90a4ae", fmt.Sprintf("%s %v generation %d, %s", l.Buffer, l.Range, l.Generation, l.Access.Verb())
		if s, ok := stale[fmt.Sprintf("%s/%s/%d", l.Capture, l.Buffer, l.Generation)]; ok {
			fill, note = "#c62828", note+"; stale: now "+s.Now
		}
		w := max(x(l.Range.End())-x(l.Range.Addr), 2)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="end">graph %s: %s</text>`, labelW-6, y+barH-5,
			template.HTMLEscapeString(l.Capture), template.HTMLEscapeString(l.Buffer))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`,
			x(l.Range.Addr), y, w, barH, fill, template.HTMLEscapeString(note))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10">%#x</text><text x="%d" y="%d" font-size="10" text-anchor="end">%#x</text>`,
		labelW, len(e.Ledger)*(barH+6)+16, lo, int(labelW+width), len(e.Ledger)*(barH+6)+16, hi)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

var htmlTemplate = template.Must(template.Must(template.New("report").Funcs(template.FuncMap{"words": words}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<title>{{.Title}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
pre { background: #f6f8fa; padding: 0.8em; overflow-x: auto; font-size: 12px; }
svg { font-family: system-ui, sans-serif; }
table.bytes td { font-family: monospace; padding: 0 0.8em; }
.legend span { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; vertical-align: middle; }
.incomplete { background: #fff3e0; border-left: 6px solid #ef8f00; padding: 0.6em 1em; font-weight: bold; }
{{if .Watch}}table.findings { border-collapse: collapse; }
table.findings th, table.findings td { border-bottom: 1px solid #ddd; padding: 0.3em 0.8em; text-align: left; vertical-align: top; }
table.findings td.kind { font-weight: bold; color: #c62828; white-space: nowrap; }
table.findings summary { cursor: pointer; }
.clean { background: #e8f5e9; border-left: 6px solid #2e7d32; padding: 0.6em 1em; font-weight: bold; }
{{end}}</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{if not .Watch}}<p class="legend">
<span style="background:#2e7d32"></span>exact<span style="background:#1565c0"></span>refused<span style="background:#ef8f00"></span>rejected<span style="background:#c62828"></span>corrupted<span style="background:#6a1b9a"></span>error<span style="background:#9e9e9e"></span>skipped; an outlined cell failed its verdict
</p>
{{end}}{{range .Runs}}
<section class="run">
<h2>{{.Name}}</h2>
{{if .Watch}}{{template "watch" .Watch}}{{else}}{{if .Incomplete}}<p class="incomplete" role="alert">Incomplete: {{.Incomplete}}.</p>
{{end}}<p>{{.Summary}}<br/>device {{.Device}}, runtime {{.Runtime}}</p>
{{if .Skipped}}<ul class="skipped">{{range .Skipped}}
<li>{{.}}</li>{{end}}
</ul>
{{end}}{{.Matrix}}
{{range .Instances}}
<details class="instance" id="{{.Anchor}}"{{if eq .Mark "FAIL"}} open="open"{{end}}>
<summary><b>{{.Mark}}</b> {{.ID}}: {{.Outcome}}{{if .Verdict}}, {{.Verdict}}{{end}}</summary>
<pre>{{.Detail}}</pre>
{{if .Mismatches}}<table class="bytes">
<tr><th>round</th><th>buffer</th><th>offset</th><th>length</th><th>want</th><th>got</th></tr>
{{range .Mismatches}}<tr><td>{{.Round}}</td><td>{{.Buffer}}</td><td>{{.Offset}}</td><td>{{.Length}}</td><td>{{words .Want}}</td><td>{{words .Got}}</td></tr>
{{end}}</table>{{end}}
{{.Memory}}
</details>
{{end}}
{{if .NotRun}}<details class="not-run" open="open">
<summary><b>NOT RUN</b> {{len .NotRun}} instances: the run was interrupted before them</summary>
<ul>{{range .NotRun}}
<li>{{.}}</li>{{end}}
</ul>
</details>
{{end}}{{end}}</section>
{{end}}
</body>
</html>
`)).Parse(`{{define "watch"}}` + htmlWatchTemplate + `{{end}}`))

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
