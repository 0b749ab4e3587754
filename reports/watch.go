package reports

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/verdict"
	"github.com/replaycheck/replaycheck/watch"
)

// A watch report is the Report of `replaycheck watch`: Watch says what ran and how it ended,
// Findings what the checker found (one entry per distinct site, with its count), Results is empty.
// Every writer renders it as a watch report (IsWatch): the header, each finding, what was
// suppressed, the suppressions no finding used, the interposer's notes and the line
// "N findings (K kinds), S suppressed".

// WatchRun is what `replaycheck watch` ran and how it went, besides its findings.
type WatchRun struct {
	// Program is the command line watched (argv).
	Program []string `json:"program"`
	// ExitCode is the program's own exit status; Signal names the signal that killed it
	// ("SIGSEGV"), "" when it exited.
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	// Backend is the driver family watched: cuda, acl or cuda,acl.
	Backend string `json:"backend"`
	// Refuse: stale launches were kept from the driver (--refuse).
	Refuse bool `json:"refuse"`
	// Processes are the processes the interposer reported from, in the order they appeared.
	Processes []WatchProcess `json:"processes,omitempty"`
	// Suppressed counts the findings each suppression (by name) kept from the report, every
	// time a site was met; UnusedSuppressions names the suppressions nothing matched.
	Suppressed         map[string]int `json:"suppressed,omitempty"`
	UnusedSuppressions []string       `json:"unused_suppressions,omitempty"`
	// Notes are what the interposer said once for the user to read ("kernel 0x... has no
	// parameter layout: skipped").
	Notes []string `json:"notes,omitempty"`
}

// WatchProcess is one process the interposer ran in (the program, a forked or exec'd child).
type WatchProcess struct {
	PID  int    `json:"pid"`
	PPID int    `json:"ppid,omitempty"`
	Exe  string `json:"exe"`
}

// IsWatch reports whether r is a watch report.
func (r *Report) IsWatch() bool { return r.Watch != nil || len(r.Findings) > 0 }

// watchRun is r's WatchRun, an empty one when a report has findings and no header.
func watchRun(r *Report) *WatchRun {
	if r.Watch != nil {
		return r.Watch
	}
	return &WatchRun{}
}

// allWatch reports whether runs are all watch reports (and there is one).
func allWatch(runs []*Report) bool {
	return len(runs) > 0 && !slices.ContainsFunc(runs, func(r *Report) bool { return !r.IsWatch() })
}

// describe is the text of one finding, as every format shows it (watch.Describe: the first line
// "watch: KIND in pid N: DETAIL", then indented lines, the top frames of each stack last).
var describe = watch.Describe

// oneLine keeps a line break in a field from breaking the layout.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

func rangeText(r *watch.Range) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%s+%d", r.Addr, r.Bytes)
}

// graphCell is a graph in a table: its handle and capture; "-" for none.
func graphCell(g *watch.Graph) string {
	if g == nil {
		return "-"
	}
	if g.Capture > 0 {
		return fmt.Sprintf("%s (capture %d)", g.Handle, g.Capture)
	}
	return g.Handle
}

// exitText says how the program ended.
func exitText(w *WatchRun) string {
	if w.Signal != "" {
		return "killed by " + w.Signal
	}
	return fmt.Sprintf("exit status %d", w.ExitCode)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// commandLine is argv as a shell would take it: words with anything but safe characters quoted.
func commandLine(argv []string) string {
	if len(argv) == 0 {
		return "(unknown)"
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		safe := a != "" && !strings.ContainsFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		})
		if safe {
			words[i] = a
		} else {
			words[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return oneLine(strings.Join(words, " "))
}

// suppressedTotal is how many findings the suppressions kept out.
func suppressedTotal(w *WatchRun) int {
	n := 0
	for _, c := range w.Suppressed {
		n += c
	}
	return n
}

// suppressedNames are the suppressions that kept something out, sorted.
func suppressedNames(w *WatchRun) []string {
	var names []string
	for name, n := range w.Suppressed {
		if n > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// kindsOf lists the kinds of findings present, in watch.Kinds order, unknown kinds after.
func kindsOf(findings []watch.Finding) []watch.Kind {
	var out []watch.Kind
	for _, k := range watch.Kinds {
		if slices.ContainsFunc(findings, func(f watch.Finding) bool { return f.Kind == k }) {
			out = append(out, k)
		}
	}
	for _, f := range findings {
		if !slices.Contains(out, f.Kind) {
			out = append(out, f.Kind)
		}
	}
	return out
}

// WatchSummary is a watch report's last line: "N findings (K kinds), S suppressed", N the
// distinct findings (sites), K their kinds and S the findings suppressions kept out.
func WatchSummary(r *Report) string {
	return fmt.Sprintf("%s (%s), %d suppressed", plural.Count(len(r.Findings), "finding"),
		plural.Count(len(kindsOf(r.Findings)), "kind"), suppressedTotal(watchRun(r)))
}

// findingName names a finding in a list: its kind, graph and range ("stale-replay graph 0x5
// range 0x7f00+64").
func findingName(f watch.Finding) string {
	s := string(f.Kind)
	if f.Graph != nil {
		s += " graph " + f.Graph.Handle
	}
	if f.Range != nil {
		s += " range " + rangeText(f.Range)
	}
	return s
}

// firstLine is the first line of s.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// findingAsWritten is f as report.json holds it: stacks and frames are arrays, never null.
func findingAsWritten(f watch.Finding) watch.Finding {
	stacks := make([]watch.Stack, len(f.Stacks))
	for i, s := range f.Stacks {
		if s.Frames == nil {
			s.Frames = []watch.Frame{}
		}
		stacks[i] = s
	}
	f.Stacks = stacks
	return f
}

// writeWatchText writes a watch report for a terminal (WriteText).
func writeWatchText(tw *textWriter, rep *Report, opt TextOptions) {
	w := watchRun(rep)
	tw.printf("%s %s watch  backend %s  refuse %s\n", rep.Tool, rep.Version, orDash(w.Backend), onOff(w.Refuse))
	tw.label("", "program", commandLine(w.Program))
	tw.label("", "exit", exitText(w))
	for i, p := range w.Processes {
		l := ""
		if i == 0 {
			l = "processes"
		}
		s := fmt.Sprintf("%d %s", p.PID, oneLine(p.Exe))
		if p.PPID != 0 && i > 0 {
			s += fmt.Sprintf(" (child of %d)", p.PPID)
		}
		tw.label("", l, s)
	}
	for _, f := range rep.Findings {
		tw.printf("\n")
		text := describe(f)
		if opt.Color {
			head, rest, _ := strings.Cut(text, "\n")
			text = markColors[verdict.Fail] + head + "\x1b[0m\n" + rest
		}
		tw.printf("%s", text)
		if !strings.HasSuffix(text, "\n") {
			tw.printf("\n")
		}
	}
	if names := suppressedNames(w); len(names) > 0 || len(w.UnusedSuppressions) > 0 || len(w.Notes) > 0 {
		tw.printf("\n")
		for _, name := range names {
			tw.printf("suppressed: %s: %d\n", oneLine(name), w.Suppressed[name])
		}
		for _, name := range w.UnusedSuppressions {
			tw.printf("unused suppression: %s\n", oneLine(name))
		}
		for _, n := range w.Notes {
			tw.printf("note: %s\n", oneLine(n))
		}
	}
	tw.printf("\n%s\n", WatchSummary(rep))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// mdWatchMark is a watch report's mark: ❌ with findings, ⚠️ when a signal killed the program
// and nothing was found (what it would have done next was not watched), ✅ otherwise.
func mdWatchMark(r *Report) string {
	switch {
	case len(r.Findings) > 0:
		return mdMarks[verdict.Fail]
	case watchRun(r).Signal != "":
		return mdIncomplete
	}
	return mdMarks[verdict.Pass]
}

// writeMarkdownWatch writes one watch report as a CI job summary: its verdict line and header, a
// table of the findings, each finding's text in a fenced block (folded when long), the
// suppressions and the interposer's notes.
func writeMarkdownWatch(tw *textWriter, r *Report, heading string) {
	w := watchRun(r)
	tw.printf("%s %s `%s`\n\n", heading, mdText(strings.TrimSpace(r.Tool+" "+r.Version+" watch")), mdCode(commandLine(w.Program)))
	tw.printf("- %s **%s**<br><sub>%s</sub>\n", mdWatchMark(r), mdText(WatchSummary(r)),
		mdText(fmt.Sprintf("%s, backend %s, refuse %s", exitText(w), orDash(w.Backend), onOff(w.Refuse))))
	if len(w.Processes) > 0 {
		var ps []string
		for _, p := range w.Processes {
			ps = append(ps, fmt.Sprintf("%d `%s`", p.PID, mdCode(p.Exe)))
		}
		tw.printf("- processes: %s\n", strings.Join(ps, ", "))
	}
	sub := heading + "#"
	tw.printf("\n%s Findings (%d)\n\n", sub, len(r.Findings))
	if len(r.Findings) == 0 {
		tw.printf("No findings.\n")
	} else {
		tw.printf("| Kind | Count | PID | Graph | Range | Detail | Refused |\n| --- | ---: | ---: | --- | --- | --- | :---: |\n")
		for _, f := range r.Findings {
			refused := "-"
			if f.Refused {
				refused = "yes"
			}
			rng := rangeText(f.Range)
			if f.Possible {
				rng += " (possible)"
			}
			tw.printf("| %s | %d | %d | %s | %s | %s | %s |\n", mdText(string(f.Kind)), f.Count, f.PID,
				mdText(graphCell(f.Graph)), mdText(rng), mdText(f.Detail), refused)
		}
		for i, f := range r.Findings {
			text := safeChars(strings.TrimRight(describe(f), "\n"))
			tw.printf("\n%s# %s %d. %s in pid %d\n\n", sub, mdMarks[verdict.Fail], i+1, mdText(string(f.Kind)), f.PID)
			fence := mdFence(text)
			if lines := strings.Count(text, "\n") + 1; lines > mdDetailOpenLines {
				tw.printf("%s\n\n<details><summary>the finding (%d lines)</summary>\n\n%stext\n%s\n%s\n\n</details>\n",
					mdText(firstLine(text)), lines, fence, text, fence)
				continue
			}
			tw.printf("%stext\n%s\n%s\n", fence, text, fence)
		}
	}
	if names := suppressedNames(w); len(names) > 0 {
		tw.printf("\n%s Suppressed (%d)\n\n", sub, suppressedTotal(w))
		for _, name := range names {
			tw.printf("- %s: %d\n", mdText(name), w.Suppressed[name])
		}
	}
	if len(w.UnusedSuppressions) > 0 {
		tw.printf("\n%s Unused suppressions (%d)\n\n", sub, len(w.UnusedSuppressions))
		for _, name := range w.UnusedSuppressions {
			tw.printf("- %s\n", mdText(name))
		}
	}
	if len(w.Notes) > 0 {
		tw.printf("\n%s Notes (%d)\n\n", sub, len(w.Notes))
		for _, n := range w.Notes {
			tw.printf("- %s\n", mdText(n))
		}
	}
}

// WatchSuite is the name of a watch report's JUnit testsuite.
const WatchSuite = "replaycheck watch"

// junitWatchSuite is a watch report as one testsuite: a testcase per distinct finding (named by
// kind, graph and range; classname its kind), failing with the finding's first line as message
// and its whole text as body; a program killed by a signal adds a testcase with an <error>; a
// clean watch is one passing testcase "no findings".
func junitWatchSuite(r *Report) (junitSuite, time.Duration) {
	w := watchRun(r)
	s := junitSuite{Name: WatchSuite, Cases: []junitCase{}}
	if !r.Started.IsZero() {
		s.Timestamp = r.Started.UTC().Format("2006-01-02T15:04:05")
	}
	prop := func(name, value string) {
		if value != "" {
			s.Properties = append(s.Properties, junitProperty{Name: name, Value: safeChars(value)})
		}
	}
	prop("tool", strings.TrimSpace(r.Tool+" "+r.Version))
	prop("program", commandLine(w.Program))
	prop("exit", exitText(w))
	prop("backend", w.Backend)
	prop("refuse", onOff(w.Refuse))
	prop("suppressed", fmt.Sprint(suppressedTotal(w)))
	for _, name := range w.UnusedSuppressions {
		prop("unused suppression", name)
	}
	for _, n := range w.Notes {
		prop("note", n)
	}
	names := map[string]int{}
	for _, f := range r.Findings {
		name := findingName(f)
		if names[name]++; names[name] > 1 {
			name += fmt.Sprintf(" #%d", names[name]) // distinct sites at one graph and range
		}
		text := describe(f)
		s.Cases = append(s.Cases, junitCase{Name: safeChars(name), Classname: safeChars(string(f.Kind)), Time: junitSeconds(0),
			Failure: &junitProblem{Message: safeChars(firstLine(text)), Type: safeChars(string(f.Kind)), Body: safeChars(text)}})
		s.Failures++
	}
	if w.Signal != "" {
		s.Cases = append(s.Cases, junitCase{Name: safeChars("program " + exitText(w)), Classname: WatchSuite, Time: junitSeconds(0),
			Error: &junitProblem{Message: safeChars(fmt.Sprintf("%s was %s; findings made before it died are reported", commandLine(w.Program), exitText(w))), Type: "signal"}})
		s.Errors++
	}
	if len(r.Findings) == 0 {
		s.Cases = append(s.Cases, junitCase{Name: "no findings", Classname: WatchSuite, Time: junitSeconds(0)})
	}
	s.Tests = len(s.Cases)
	var d time.Duration
	if !r.Ended.IsZero() && r.Ended.After(r.Started) {
		d = r.Ended.Sub(r.Started)
	}
	s.Time = junitSeconds(d)
	return s, d
}

// htmlWatch is a watch report as the HTML page shows it.
type htmlWatch struct {
	Summary, Program, Exit, Backend, Refuse string
	Clean                                   bool
	Processes                               []string
	Findings                                []htmlFinding
	Suppressed, Unused, Notes               []string
}

// htmlFinding is one row of the Findings table; Text (describe's) opens under it.
type htmlFinding struct {
	Anchor, Kind, Graph, Range, Detail, Text string
	Count, PID                               int
	Refused                                  bool
}

func htmlWatchRunOf(r *Report) htmlRun {
	w := watchRun(r)
	hw := &htmlWatch{Summary: WatchSummary(r), Program: commandLine(w.Program), Exit: exitText(w),
		Backend: orDash(w.Backend), Refuse: onOff(w.Refuse), Clean: len(r.Findings) == 0,
		Unused: w.UnusedSuppressions, Notes: w.Notes}
	for _, p := range w.Processes {
		hw.Processes = append(hw.Processes, fmt.Sprintf("%d %s", p.PID, p.Exe))
	}
	for _, name := range suppressedNames(w) {
		hw.Suppressed = append(hw.Suppressed, fmt.Sprintf("%s: %d", name, w.Suppressed[name]))
	}
	for i, f := range r.Findings {
		rng := rangeText(f.Range)
		if f.Possible {
			rng += " (possible)"
		}
		hw.Findings = append(hw.Findings, htmlFinding{Anchor: fmt.Sprintf("finding-%d", i+1), Kind: string(f.Kind),
			Graph: graphCell(f.Graph), Range: rng, Detail: f.Detail, Text: describe(f),
			Count: f.Count, PID: f.PID, Refused: f.Refused})
	}
	return htmlRun{Name: "watch " + hw.Program, Watch: hw}
}

// htmlWatchTemplate is a watch report's section of the page.
const htmlWatchTemplate = `<p>{{.Summary}}<br/>{{.Exit}}, backend {{.Backend}}, refuse {{.Refuse}}</p>
{{if .Processes}}<p>processes: {{range $i, $p := .Processes}}{{if $i}}, {{end}}{{$p}}{{end}}</p>
{{end}}<h3>Findings</h3>
{{if .Clean}}<p class="clean">No findings.</p>
{{else}}<table class="findings">
<tr><th>kind</th><th>count</th><th>pid</th><th>graph</th><th>range</th><th>detail (open for the stacks)</th><th>refused</th></tr>
{{range .Findings}}<tr id="{{.Anchor}}"><td class="kind">{{.Kind}}</td><td>{{.Count}}</td><td>{{.PID}}</td><td>{{.Graph}}</td><td>{{.Range}}</td><td><details class="finding"><summary>{{.Detail}}</summary>
<pre>{{.Text}}</pre>
</details></td><td>{{if .Refused}}refused{{else}}-{{end}}</td></tr>
{{end}}</table>
{{end}}{{if .Suppressed}}<h3>Suppressed</h3>
<ul class="suppressed">{{range .Suppressed}}
<li>{{.}}</li>{{end}}
</ul>
{{end}}{{if .Unused}}<h3>Unused suppressions</h3>
<ul class="unused">{{range .Unused}}
<li>{{.}}</li>{{end}}
</ul>
{{end}}{{if .Notes}}<h3>Notes</h3>
<ul class="notes">{{range .Notes}}
<li>{{.}}</li>{{end}}
</ul>
{{end}}`
