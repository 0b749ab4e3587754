package reports

import (
	"html/template"

	"github.com/replaycheck/replaycheck/internal/plural"
)

// htmlStyle is the page's whole style: no font, image or script is loaded from anywhere. Colours
// of the outcomes are outcomeColours'; the enforcement cells are lighter shades of the same.
const htmlStyle = `
:root { --exact: #2e7d32; --refused: #1565c0; --rejected: #ef8f00; --corrupted: #c62828; --error: #6a1b9a; --skipped: #9e9e9e; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; padding: 1em 1em 3em; max-width: 1280px; color: #1f2328; background: #fff; }
h1 { font-size: 1.6em; margin: 0 0 0.1em; }
h2 { font-size: 1.3em; margin: 1.6em 0 0.5em; padding-bottom: 0.2em; border-bottom: 1px solid #d0d7de; }
h3 { font-size: 1.05em; margin: 1em 0 0.4em; }
p.meta { color: #57606a; margin: 0 0 0.6em; }
nav { display: flex; flex-wrap: wrap; gap: 0.3em 1.2em; padding: 0.4em 0; border-bottom: 1px solid #d0d7de; }
nav a { text-decoration: none; color: #0969da; }
code, pre, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
a { color: #0969da; }
table { border-collapse: collapse; }
th, td { text-align: left; vertical-align: top; }
.badge { display: inline-block; padding: 0.1em 0.6em; border-radius: 1em; font-weight: 700; font-size: 12px; color: #fff; white-space: nowrap; }
.badge.pass { background: var(--exact); }
.badge.fail { background: var(--corrupted); }
.badge.warn { background: #9a6700; }
table.summary th, table.summary td { padding: 0.35em 0.7em; border-bottom: 1px solid #d0d7de; }
table.summary thead th { font-size: 12px; color: #57606a; font-weight: 600; border-bottom: 2px solid #d0d7de; }
table.summary td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.summary tr.fail td.fail { color: var(--corrupted); font-weight: 700; }
table.summary .small { font-size: 12px; color: #57606a; }
.failed { border-left: 5px solid var(--corrupted); background: #fff5f5; padding: 0.4em 1em 0.6em; margin: 1em 0; }
.failed h3 { margin-top: 0.3em; color: #a40e26; }
.failed ol { margin: 0; padding-left: 1.6em; }
.failed li { margin: 0.2em 0; }
.allpass { border-left: 5px solid var(--exact); background: #f0fff4; padding: 0.6em 1em; font-weight: 600; }
.notes h3 { margin-bottom: 0.2em; }
.notes ul { margin: 0.2em 0; }
.incomplete { background: #fff3e0; border-left: 6px solid var(--rejected); padding: 0.6em 1em; font-weight: bold; }
.hint { color: #57606a; }
ul.legend { list-style: none; padding: 0; margin: 0.4em 0 0.8em; display: flex; flex-wrap: wrap; gap: 0.3em 1.4em; font-size: 13px; }
ul.legend li { display: flex; align-items: center; gap: 0.45em; }
ul.legend.rows { display: block; }
ul.legend.rows li { margin: 0.2em 0; }
.sw { display: inline-block; width: 13px; height: 13px; border-radius: 2px; flex: none; }
.sw.outline { background: #fff; border: 2.5px solid #000; }
.k-exact.sw { background: var(--exact); } .k-refused.sw { background: var(--refused); } .k-rejected.sw { background: var(--rejected); }
.k-corrupted.sw { background: var(--corrupted); } .k-error.sw { background: var(--error); } .k-skipped.sw { background: var(--skipped); }
.k-held.sw { background: #90a4ae; } .k-stale.sw { background: #c62828; } .k-bystander.sw { background: #ef8f00; } .k-band.sw { background: #ffebee; border: 1px solid #f4c7cc; }
.scroll { overflow-x: auto; }
table.enforcement { font-size: 13px; }
table.enforcement th, table.enforcement td { padding: 0.2em 0.6em; border-bottom: 1px solid #eaeef2; white-space: nowrap; }
table.enforcement thead th { position: sticky; top: 0; background: #fff; z-index: 1; }
table.enforcement thead th.run { text-align: center; border-bottom: 2px solid #57606a; font-size: 14px; }
table.enforcement thead th.mode { font-weight: 500; color: #57606a; font-size: 12px; }
table.enforcement tr.group th { background: #f6f8fa; padding-top: 0.5em; font-size: 12px; text-transform: uppercase; letter-spacing: 0.04em; color: #57606a; }
table.enforcement tr.group th span { text-transform: none; letter-spacing: 0; font-weight: 400; }
table.enforcement th.probe { font-weight: 400; }
table.enforcement td.cell { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; text-align: center; min-width: 6.5em; }
table.enforcement .first { border-left: 2px solid #57606a; }
table.enforcement td.cell a { color: inherit; text-decoration: none; display: block; }
table.enforcement td.cell a:hover { text-decoration: underline; }
.cellmark { display: inline-block; min-width: 4.5em; text-align: center; font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; padding: 0 0.3em; border: 1px solid #d0d7de; }
.c-exact { background: #e6f4ea; color: #1b5e20; }
.c-rejected { background: #fff0d9; color: #7a4100; }
.c-corrupted { background: #ffd6d6; color: #a40e26; font-weight: 700; }
.c-refused { background: #e3f0ff; color: #0d47a1; }
.c-error { background: #f3e5f5; color: #4a148c; }
.c-crash { background: #4a148c; color: #fff; font-weight: 700; }
.c-skipped { background: #eeeeee; color: #555; }
.c-unrun { background: #fff; color: #8c959f; }
svg { font-family: system-ui, sans-serif; max-width: 100%; height: auto; }
svg.matrix g.row rect.bg { fill: transparent; }
svg.matrix g.row:hover rect.bg { fill: #eaeef2; }
details.instance { border: 1px solid #d0d7de; border-radius: 6px; margin: 0.5em 0; background: #fff; }
details.instance > summary { cursor: pointer; padding: 0.45em 0.8em; list-style-position: outside; margin-left: 1em; }
details.instance.fail { border-left: 5px solid var(--corrupted); }
details.instance[open] > summary { border-bottom: 1px solid #eaeef2; }
details.instance .body { padding: 0.4em 0.9em 0.8em; }
.target { display: block; scroll-margin-top: 4em; }
.mark { font-weight: 800; margin-right: 0.3em; }
.mark.fail { color: var(--corrupted); }
.mark.pass { color: var(--exact); }
.mark.skip { color: #9a6700; }
.mark.uncharacterised { color: #0a7ea4; }
.run { color: #57606a; margin-right: 0.3em; }
.pill { display: inline-block; font-size: 12px; padding: 0 0.5em; border-radius: 1em; margin-left: 0.3em; }
.why { display: block; color: #3d444d; margin-top: 0.15em; overflow-wrap: anywhere; }
pre.detail { background: #f6f8fa; padding: 0.7em 0.9em; margin: 0.4em 0; white-space: pre-wrap; overflow-wrap: anywhere; }
table.bytes { margin: 0.6em 0; font-size: 12.5px; }
table.bytes th, table.bytes td { padding: 0.15em 0.6em; border-bottom: 1px solid #eaeef2; }
table.bytes thead th { font-size: 12px; color: #57606a; }
table.bytes td.words { font-family: ui-monospace, "DejaVu Sans Mono", monospace; white-space: normal; overflow-wrap: anywhere; max-width: 62em; }
table.bytes mark { background: #ffd6d6; color: #a40e26; }
ul.differs { margin: 0.2em 0 0.6em; padding-left: 1.4em; font-size: 13px; }
figure.memory { margin: 0.6em 0; }
figure.memory figcaption { font-size: 12.5px; }
details.probe { border-bottom: 1px solid #eaeef2; padding: 0.15em 0; }
details.probe > summary { cursor: pointer; padding: 0.25em 0; }
details.probe > summary .count { color: #57606a; }
details.probe > .inner { padding-left: 1.4em; }
details.group > summary { cursor: pointer; font-weight: 600; }
table.findings { border-collapse: collapse; }
table.findings th, table.findings td { border-bottom: 1px solid #ddd; padding: 0.3em 0.8em; text-align: left; vertical-align: top; }
table.findings td.kind { font-weight: bold; color: #c62828; white-space: nowrap; }
table.findings summary { cursor: pointer; }
table.findings pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f8fa; padding: 0.6em; }
.clean { background: #e8f5e9; border-left: 6px solid #2e7d32; padding: 0.6em 1em; font-weight: bold; }
@media print {
  @page { size: A4; margin: 12mm; }
  body { max-width: none; padding: 0; font-size: 9.5pt; }
  nav { display: none; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  a { color: inherit; text-decoration: none; }
  h2 { break-after: avoid; }
  code, pre { font-size: 8pt; }
  table.summary { font-size: 8pt; }
  table.summary th, table.summary td { padding: 0.2em 0.35em; }
  table.summary td.small { min-width: 8em; font-size: 7.5pt; }
  table.enforcement { font-size: 8pt; }
  table.enforcement thead th { position: static; }
  table.enforcement th, table.enforcement td { padding: 0.05em 0.35em; }
  table.enforcement td.cell { min-width: 0; font-size: 7.5pt; }
  table.enforcement th.probe { white-space: normal; overflow-wrap: anywhere; }
  table.enforcement th.probe code { font-size: 7.5pt; }
  table.enforcement thead th.mode, table.enforcement thead th.run { font-size: 7.5pt; }
  tr, details.instance, figure.memory, .failed li { break-inside: avoid; }
  .scroll { overflow: visible; }
}
`

var htmlTemplate = template.Must(template.Must(template.Must(template.New("report").Funcs(template.FuncMap{"inc": func(i int) int { return i + 1 }, "count": plural.Count[int]}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>{{.Title}}</title>
<style>` + htmlStyle + `</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
{{if .Meta}}<p class="meta">{{.Meta}}</p>
{{end}}{{if .Nav}}<nav>{{range .Nav}}<a href="{{.Href}}">{{.Text}}</a>{{end}}</nav>
{{end}}</header>
{{if not .OnlyWatch}}<section id="summary">
<h2>Summary</h2>
<div class="scroll"><table class="summary">
<thead><tr><th>run</th><th>result</th><th>instances</th><th>pass</th><th>fail</th><th>skip</th><th title="uncharacterised: no expectation and no baseline entry">?</th><th title="unguarded hazard instances the platform let through with wrong data and no error (the enforcement table's silent cells), of those that ran">silent</th><th>outcomes</th><th>device</th><th>runtime</th><th>baseline</th></tr></thead>
<tbody>
{{range .Summary}}<tr class="{{.Class}}" data-run="{{.Run}}"><th>{{if .Href}}<a href="{{.Href}}">{{.Run}}</a>{{else}}{{.Run}}{{end}}</th><td><span class="badge {{.Class}}">{{.Status}}</span></td>{{if .Watch}}<td colspan="7">{{.Watch}}</td><td class="small">{{.Device}}</td><td></td><td></td>{{else}}<td class="n">{{.Total}}</td><td class="n">{{.Pass}}</td><td class="n fail">{{.Fail}}</td><td class="n">{{.Skip}}</td><td class="n">{{.Uncharacterised}}</td><td class="n">{{if .Unguarded}}{{.Silent}} of {{.Unguarded}}{{end}}</td><td class="small">{{.Outcomes}}</td><td class="small">{{.Device}}</td><td class="small">{{.Runtime}}</td><td class="small">{{if .Baseline}}{{.Baseline}}{{else}}none{{end}}</td>{{end}}</tr>
{{end}}</tbody>
</table></div>
{{if .Failed}}<div class="failed">
<h3>What failed</h3>
<ol>
{{range .Failed}}<li><a href="{{.Href}}"><code>{{.Probe}}</code></a>: {{.Note}}</li>
{{end}}</ol>
{{if .FailedMore}}<p>{{.FailedMore}}</p>
{{end}}</div>
{{else if .AllPassed}}<p class="allpass">{{.AllPassed}}</p>
{{end}}{{range .Notes}}<div class="notes" data-run="{{.Run}}">
<h3>{{.Run}}</h3>
{{if .Incomplete}}<p class="incomplete" role="alert">Incomplete: {{.Incomplete}}.</p>
{{end}}{{if .Skipped}}<ul class="skipped">{{range .Skipped}}
<li>{{.}}</li>{{end}}
</ul>
{{end}}{{if .Hint}}<p class="hint">{{.Hint}}</p>
{{end}}{{if .Crash}}<p class="hint">{{.Crash}}</p>
{{end}}</div>
{{end}}</section>
{{end}}{{with .Enforcement}}<section id="enforcement">
<h2>Enforcement: what each platform did with each unguarded hazard probe</h2>
<ul class="legend">{{range .Legend}}<li><span class="cellmark c-{{.Kind}}">{{.Mark}}</span>{{.Meaning}}</li>{{end}}</ul>
{{if .Groups}}<div class="scroll"><table class="enforcement">
<thead><tr><th rowspan="2">probe</th>{{range .Runs}}<th class="run first" colspan="{{.Span}}">{{.Run}}</th>{{end}}</tr>
<tr>{{range .Modes}}<th class="mode"{{if .Title}} title="{{.Title}}"{{end}}>{{.Name}}</th>{{end}}</tr></thead>
{{range .Groups}}<tbody>
<tr class="group"><th colspan="{{$.Enforcement.Columns}}">{{.Hazard}} <span>({{.Count}})</span></th></tr>
{{range .Rows}}<tr class="row" data-hazard="{{.Hazard}}"><th class="probe"><code>{{.Probe}}</code></th>{{range .Cells}}<td class="cell c-{{.Kind}}{{if .First}} first{{end}}" title="{{.Title}}">{{if .Href}}<a href="{{.Href}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}</td>{{end}}</tr>
{{end}}</tbody>
{{end}}</table></div>
{{end}}{{if .Positives}}<p class="hint">{{.Positives}}</p>
{{end}}</section>
{{end}}{{if .Matrix}}<section id="matrix">
<h2>Every instance</h2>
<ul class="legend">{{range .OutcomeLegend}}<li><span class="sw k-{{.Kind}}"></span><b>{{.Kind}}</b> {{.Meaning}}</li>{{end}}</ul>
<ul class="legend"><li><span class="sw outline"></span>an outlined cell failed its verdict</li><li>columns: capture mode, guards off (the platform alone) or on (the runtime's guards); a cell links to the instance's detail where there is one</li></ul>
{{.Matrix}}
</section>
{{end}}{{if .Failures}}<section id="failures">
<h2>Failures ({{len .Failures}})</h2>
{{range .Failures}}{{template "instance" .}}{{end}}</section>
{{end}}{{if .Uncharacterised}}<section id="uncharacterised">
<h2>Uncharacterised ({{len .Uncharacterised}})</h2>
<p class="hint">No expectation and no baseline entry: these instances have no verdict yet (the summary says how to give them one).</p>
{{range .Uncharacterised}}{{template "instance" .}}{{end}}</section>
{{end}}{{if .Skipped}}<section id="skipped">
<h2>Skipped ({{len .Skipped}})</h2>
<details class="group"><summary>{{count (len .Skipped) "skipped instance"}} (the summary says why)</summary>
{{range .Skipped}}{{template "instance" .}}{{end}}</details>
</section>
{{end}}{{if .Expected}}<section id="expected">
<h2>Expected findings ({{.ExpectedInstances}})</h2>
<p class="hint">Instances that passed with something to show: a probe that demonstrates a hazard corrupts, is rejected or touches stale memory as expected. Folded under their probe.</p>
{{range .Expected}}<details class="probe"><summary><code>{{.Probe}}</code> <span class="count">{{.Hazard}}; {{.Summary}}</span></summary>
<div class="inner">
{{range .Instances}}{{template "instance" .}}{{end}}</div>
</details>
{{end}}</section>
{{end}}{{if .NotRun}}<section id="not-run">
<h2>Not run</h2>
{{range .NotRun}}<details class="not-run" open="open">
<summary><b>NOT RUN</b> {{.Run}}: {{len .IDs}} instances: the run was interrupted before them</summary>
<ul>{{range .IDs}}
<li>{{.}}</li>{{end}}
</ul>
</details>
{{end}}</section>
{{end}}{{range $i, $w := .Watches}}<section class="watch" id="watch-{{inc $i}}">
<h2>{{.Name}}</h2>
{{template "watch" .Watch}}</section>
{{end}}</body>
</html>
`)).Parse(`{{define "instance"}}<details class="instance {{.Status}}"{{if .Open}} open="open"{{end}}>
<summary><span class="mark {{.Status}}">{{.Mark}}</span> <span class="run">{{.Run}}</span> <code>{{.ID}}</code> <span class="pill c-{{.Outcome}}">{{.Outcome}}</span>{{if and .Expected (not .Open)}} <span class="run">expected {{.Expected}}</span>{{end}}<span class="why">{{.Reason}}</span></summary>
<div class="body"><span class="target" id="{{.Anchor}}"></span>
<pre class="detail">{{.Detail}}</pre>
{{if .Bytes}}<table class="bytes">
<thead><tr><th>round</th><th>buffer</th><th>offset</th><th>length</th><th></th><th>bytes (4-byte words in hex; the words that differ are marked)</th></tr></thead>
{{range .Bytes}}<tbody><tr><td rowspan="2">{{.Round}}</td><td rowspan="2"><code>{{.Buffer}}</code></td><td rowspan="2">{{.Offset}}</td><td rowspan="2">{{.Length}}{{if .Shown}}<br/><small>{{.Shown}}</small>{{end}}</td><th>want</th><td class="words">{{.Want}}</td></tr>
<tr><th>got</th><td class="words">{{.Got}}</td></tr></tbody>
{{end}}</table>
{{end}}{{if .Differs}}<ul class="differs">{{range .Differs}}<li>{{.}}</li>{{end}}</ul>
{{end}}{{if .Memory}}<figure class="memory">
{{.Memory}}
<figcaption><ul class="legend">{{range .MemoryLegend}}<li><span class="sw k-{{.Kind}}"></span>{{.Meaning}}</li>{{end}}</ul></figcaption>
</figure>
{{end}}</div>
</details>
{{end}}`)).Parse(`{{define "watch"}}` + htmlWatchTemplate + `{{end}}`))
