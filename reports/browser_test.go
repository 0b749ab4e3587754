package reports_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/internal/browser"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/run"
	"github.com/replaycheck/replaycheck/runtime/guard"
	"github.com/replaycheck/replaycheck/verdict"
)

// Environment of the browser test.
const (
	// envRequireBrowser makes a missing Chromium a failure instead of a skip (.ci/run sets it, after
	// installing Debian's chromium when it is missing).
	envRequireBrowser = "REPLAYCHECK_REQUIRE_BROWSER"
	// envScreenshots names a directory the test leaves its screenshots in, for a person to look at.
	envScreenshots = "REPLAYCHECK_SCREENSHOTS"
	// envSkipLog names a file a skipped browser test appends its one line to: go test shows a
	// passing package's output only with -v, so make test prints this file at its end.
	envSkipLog = "REPLAYCHECK_SKIP_LOG"
)

// The HTML report as a browser shows it: the whole catalog on both profiles, loaded in headless
// Chromium (internal/browser), its structure read from the DOM Chromium built (what --dump-dom
// prints) and a screenshot of each page kept for a person to look at: a spec that fails keeps its
// directory and names it in its report entries; REPLAYCHECK_SCREENSHOTS=DIR keeps a copy in DIR.
var _ = Describe("the HTML report in headless Chromium", Ordered, func() {
	var b *browser.Browser
	BeforeAll(func() {
		path, err := browser.Find()
		if err != nil {
			if os.Getenv(envRequireBrowser) != "" {
				Fail(fmt.Sprintf("%s is set: %v", envRequireBrowser, err))
			}
			line := fmt.Sprintf("SKIPPED the HTML report's browser test (reports/browser_test.go): %v; set %s=1 to make this a failure", err, envRequireBrowser)
			if log := os.Getenv(envSkipLog); log != "" {
				f, ferr := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
				Expect(ferr).NotTo(HaveOccurred())
				_, ferr = fmt.Fprintln(f, line)
				Expect(ferr).NotTo(HaveOccurred())
				Expect(f.Close()).To(Succeed())
			}
			Skip(line)
		}
		b, err = browser.Start(path, 1280, 900)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(b.Close)
	})

	// look writes page into a directory of its own, opens it, and keeps beside it the screenshot of
	// its first maxShot pixels and the DOM Chromium built (what --dump-dom prints), for a person to
	// look at: a failing spec keeps the directory and names the files in its report entries.
	look := func(name string, page []byte) *browser.Page {
		GinkgoHelper()
		dir, err := os.MkdirTemp("", "replaycheck-html-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			if !CurrentSpecReport().Failed() {
				Expect(os.RemoveAll(dir)).To(Succeed())
			}
		})
		file := filepath.Join(dir, name+".html")
		Expect(os.WriteFile(file, page, 0o644)).To(Succeed())
		p, err := b.Open(file)
		Expect(err).NotTo(HaveOccurred())
		shot, err := p.Screenshot(maxShot)
		Expect(err).NotTo(HaveOccurred())
		var dom string
		Expect(p.Eval(`document.documentElement.outerHTML`, &dom)).To(Succeed())
		files := map[string][]byte{name + ".png": shot, name + ".dom.html": []byte(dom), name + ".html": page}
		for f, data := range files {
			if f != name+".html" {
				Expect(os.WriteFile(filepath.Join(dir, f), data, 0o644)).To(Succeed())
			}
			if keep := os.Getenv(envScreenshots); keep != "" {
				Expect(os.MkdirAll(keep, 0o755)).To(Succeed())
				Expect(os.WriteFile(filepath.Join(keep, f), data, 0o644)).To(Succeed())
			}
		}
		AddReportEntry("screenshot of "+name, filepath.Join(dir, name+".png"))
		AddReportEntry("page and DOM of "+name, file+", "+filepath.Join(dir, name+".dom.html"))
		return p
	}

	It("opens on the summary, then the enforcement table with the text table's cells, then the matrix of the whole catalog", func() {
		runs := catalog(guard.Disabled{})
		p := look("catalog", htmlOf(runs...))
		Expect(p.Problems).To(BeEmpty(), "the console and the browser's log stay clean")

		var page struct {
			Sections []string
			Summary  [][]string // each row: run, result
			AllPass  string
			Table    domTable
			Cells    map[string]int     // matrix cells by run
			Visible  int                // cells the browser laid out at their size
			Dangling []string           // matrix links to no section
			Labels   map[string]float64 // each half of the matrix: the least room left of a probe's name
			Wide     float64            // how far the page is wider than the window
			Folded   []bool             // whether each expected finding's probe is folded
			Landed   bool               // a link to a folded instance opens it
		}
		Expect(p.Eval(`(() => {
			const matrix = document.querySelector('svg.matrix').getBoundingClientRect();
			const cells = [...document.querySelectorAll('svg.matrix rect.cell')];
			const byRun = {};
			cells.forEach(c => byRun[c.dataset.run] = (byRun[c.dataset.run] || 0) + 1);
			// Per half of the matrix (its rows' left edge): the room left of its names, the least of it.
			const labels = {};
			[...document.querySelectorAll('svg.matrix g.row')].forEach(g => {
				const t = g.querySelector('text').getBoundingClientRect(), bg = g.querySelector('rect.bg').getBoundingClientRect();
				const key = Math.round(bg.left - matrix.left);
				labels[key] = Math.min(labels[key] ?? Infinity, t.left - bg.left);
			});
			const folded = [...document.querySelectorAll('details.probe')].map(d => !d.open && !d.querySelector('pre.detail').checkVisibility());
			const link = document.querySelector('details.probe details.instance');
			location.hash = '#' + link.querySelector('.target').id;
			return {
				Sections: [...document.querySelectorAll('body > section')].map(s => s.id),
				Summary: [...document.querySelectorAll('table.summary tbody tr')].map(r => [r.querySelector('th').innerText, r.querySelector('.badge').innerText]),
				AllPass: (document.querySelector('.allpass') || {}).innerText || '',
				Table: `+readTable+`,
				Cells: byRun,
				Visible: cells.filter(c => { const r = c.getBoundingClientRect(); return r.width >= 12 && r.height >= 12 }).length,
				Dangling: [...document.querySelectorAll('a[href^="#"]')].map(a => a.getAttribute('href')).filter(h => !document.getElementById(h.slice(1))),
				Labels: labels,
				Wide: document.documentElement.scrollWidth - window.innerWidth,
				Folded: folded,
				Landed: link.querySelector('pre.detail').checkVisibility(),
			};
		})()`, &page)).To(Succeed())

		Expect(page.Sections).To(Equal(sectionsOf(runs)), "no failure: no failures section")
		for i, r := range runs {
			Expect(r.Summary.Failed()).To(BeFalse())
			Expect(page.Summary[i]).To(Equal([]string{reports.RunName(r), "PASS"}))
		}
		Expect(page.AllPass).To(HavePrefix("No verdict failed"))
		page.Table.expectModel(reports.EnforcementTable(runs...))

		total := 0
		for _, r := range runs {
			Expect(page.Cells[reports.RunName(r)]).To(Equal(len(r.Results)), "one cell per instance of %s", reports.RunName(r))
			total += len(r.Results)
		}
		Expect(page.Visible).To(Equal(total))
		Expect(page.Dangling).To(BeEmpty())
		Expect(page.Labels).NotTo(BeEmpty())
		for half, room := range page.Labels {
			Expect(room).To(BeNumerically(">=", -0.5), "half at %s: no name runs past its half's left edge", half)
			Expect(room).To(BeNumerically("<", 16), "half at %s: its longest name fills its room, no wide gutter", half)
		}
		Expect(page.Wide).To(BeNumerically("<=", 0), "nothing is wider than 1280 px")
		Expect(page.Folded).NotTo(BeEmpty())
		Expect(page.Folded).NotTo(ContainElement(false), "every expected finding is folded under its probe")
		Expect(page.Landed).To(BeTrue(), "a matrix link to a folded instance unfolds it")

		shot, err := p.Screenshot(maxShot)
		Expect(err).NotTo(HaveOccurred())
		img, err := png.Decode(bytes.NewReader(shot))
		Expect(err).NotTo(HaveOccurred())
		seen := colours(img)
		for outcome, n := range runs[0].Summary.ByOutcome {
			if n == 0 {
				continue
			}
			c, ok := reports.OutcomeColour(probes.Outcome(outcome))
			Expect(ok).To(BeTrue(), outcome)
			Expect(seen).To(HaveKey(c), "the screenshot shows %s cells in %s", outcome, c)
		}

		By("telling a table whose cell differs from the model (the comparison's negative control)")
		var changed domTable
		Expect(p.Eval(`(() => { document.querySelector('table.enforcement tr.row td.cell').textContent = 'x'; return `+readTable+`; })()`, &changed)).To(Succeed())
		Expect(InterceptGomegaFailure(func() { changed.expectModel(reports.EnforcementTable(runs...)) })).To(HaveOccurred())
	})

	It("names a failing run's failures at the top and lists them first, open and whole; the expected findings stay folded", func() {
		// Without the residency guard, a guarded replay over a stale range is not refused: those
		// instances corrupt where they were expected refused, and fail.
		runs := catalog(guard.Disabled{Residency: true})
		var failing []failed
		for _, r := range runs {
			for _, e := range r.Results {
				if e.Verdict.Status == verdict.Fail {
					failing = append(failing, failed{run: reports.RunName(r), e: e})
				}
			}
		}
		Expect(failing).NotTo(BeEmpty(), "the residency guard's removal fails instances")
		p := look("failing", htmlOf(runs...))
		Expect(p.Problems).To(BeEmpty())

		var page struct {
			Sections  []string
			Summary   [][]string
			Listed    []string // the summary's links to failures
			Instances []domInstance
			Clipped   []string // elements of open failures whose content is cut off
		}
		Expect(p.Eval(`(() => ({
			Sections: [...document.querySelectorAll('body > section')].map(s => s.id),
			Summary: [...document.querySelectorAll('table.summary tbody tr')].map(r => [r.querySelector('th').innerText, r.querySelector('.badge').innerText]),
			Listed: [...document.querySelectorAll('.failed li a')].map(a => a.getAttribute('href').slice(1)),
			Instances: [...document.querySelectorAll('details.instance')].map(d => ({
				ID: d.querySelector('summary code').innerText, Run: d.querySelector('summary .run').innerText, Anchor: d.querySelector('.target').id,
				Status: d.classList[1], Open: d.open, Shown: d.querySelector('pre.detail').checkVisibility(),
				Detail: d.querySelector('pre.detail').textContent,
				Bytes: d.querySelectorAll('table.bytes tbody').length, Bystanders: d.querySelectorAll('svg.memory rect.bystander').length,
				Legend: [...d.querySelectorAll('figure.memory li')].map(li => li.innerText),
			})),
			Clipped: `+clipped+`,
		}))()`, &page)).To(Succeed())

		Expect(page.Sections).To(Equal(sectionsOf(runs)))
		Expect(page.Sections).To(ContainElement("failures"))
		for i, r := range runs {
			want := "PASS"
			if r.Summary.Failed() {
				want = "FAIL"
			}
			Expect(page.Summary[i]).To(Equal([]string{reports.RunName(r), want}))
		}
		Expect(len(page.Instances)).To(BeNumerically(">", len(failing)), "expected findings follow the failures")
		expectFailuresFirst(page.Instances, failing)
		By("telling a page whose failure comes after a pass (the order check's negative control)")
		swapped := slices.Clone(page.Instances)
		swapped[0], swapped[len(swapped)-1] = swapped[len(swapped)-1], swapped[0]
		Expect(InterceptGomegaFailure(func() { expectFailuresFirst(swapped, failing) })).To(HaveOccurred())
		var first []string // each failing probe's first failure
		seen := map[string]bool{}
		for i, f := range failing {
			if !seen[f.e.Probe] {
				seen[f.e.Probe] = true
				first = append(first, page.Instances[i].Anchor)
			}
		}
		Expect(page.Listed).NotTo(BeEmpty())
		Expect(page.Listed).To(Equal(first[:len(page.Listed)]), "the summary names the failing probes, in order, each linking to its first failure")
		Expect(page.Clipped).To(BeEmpty(), "nothing in a failure is cut off behind a scroll bar")

		bystanders := 0
		for i, f := range failing {
			in := page.Instances[i]
			Expect(in.Bytes).To(Equal(len(f.e.Mismatches)), "one table row group per mismatch")
			Expect(in.Detail).NotTo(MatchRegexp(`(?m)^mismatch`), "the mismatches are shown once, in the table")
			owned := slices.ContainsFunc(f.e.Stale, func(s capture.StaleRange) bool { return len(s.Owners) > 0 })
			if owned {
				Expect(in.Bystanders).To(BeNumerically(">", 0), "%s: who holds the stale range now is drawn", f.e.ID)
				Expect(in.Legend).To(ContainElement(ContainSubstring("holds a stale range now")))
				bystanders++
			}
		}
		Expect(bystanders).To(BeNumerically(">", 0), "some failure has a bystander to draw")

		By("telling a failure whose text is cut off (the clipping check's negative control)")
		var cut []string
		Expect(p.Eval(`(() => {
			const pre = document.querySelector('details.instance[open] pre.detail');
			pre.style.whiteSpace = 'pre'; pre.style.overflowX = 'auto';
			pre.textContent = 'x'.repeat(2000);
			return `+clipped+`;
		})()`, &cut)).To(Succeed())
		Expect(cut).NotTo(BeEmpty())
	})

	It("shows an interrupted run's banner on the first screen, above its matrix, and lists what did not run", func() {
		p := look("incomplete", htmlOf(interrupted()))
		Expect(p.Problems).To(BeEmpty())
		var got struct {
			Banner            string
			Top, Height, Grid float64
			NotRun            []string
		}
		Expect(p.Eval(`(() => {
			const b = document.querySelector('p.incomplete').getBoundingClientRect();
			return {
				Banner: document.querySelector('p.incomplete').innerText, Top: b.top, Height: b.height,
				Grid: document.querySelector('svg.matrix').getBoundingClientRect().top,
				NotRun: [...document.querySelectorAll('details.not-run li')].filter(li => li.getBoundingClientRect().height > 0).map(li => li.innerText),
			};
		})()`, &got)).To(Succeed())
		Expect(got.Banner).To(HavePrefix("Incomplete: the run was interrupted: 2 of 4 instances not run"))
		Expect(got.Height).To(BeNumerically(">", 0))
		Expect(got.Top).To(BeNumerically("<", got.Grid))
		Expect(got.Top+got.Height).To(BeNumerically("<=", 900), "below the first screen")
		Expect(got.NotRun).To(Equal(interrupted().NotRun))
	})

	It("shows a watch report's findings as rows that open onto their stacks", func() {
		p := look("watch", htmlOf(watchReport()))
		Expect(p.Problems).To(BeEmpty())
		var got struct {
			Rows             []string
			Closed, Opened   bool // whether the first row's stacks show before and after a click
			Stacks           string
			TableTop, Screen float64
		}
		Expect(p.Eval(`(() => {
			const rows = [...document.querySelectorAll('table.findings tr[id]')];
			const pre = rows[0].querySelector('details.finding pre');
			const closed = pre.checkVisibility();
			rows[0].querySelector('details.finding summary').click();
			return {
				Rows: rows.map(r => r.querySelector('td.kind').innerText),
				Closed: closed, Opened: pre.checkVisibility(), Stacks: pre.innerText,
				TableTop: document.querySelector('table.findings').getBoundingClientRect().top, Screen: window.innerHeight,
			};
		})()`, &got)).To(Succeed())
		Expect(got.Rows).To(Equal([]string{"stale-replay", "alloc-in-capture"}))
		Expect(got.Closed).To(BeFalse(), "the stacks are folded until asked for")
		Expect(got.Opened).To(BeTrue())
		Expect(got.Stacks).To(ContainSubstring("step (serve.c:88)"))
		Expect(got.TableTop).To(BeNumerically("<", got.Screen), "the findings are on the first screen")
	})

	It("renders a watch report beside runs in the same page: a row of the summary, its findings after the runs", func() {
		runs := append(catalog(guard.Disabled{}), watchReport())
		p := look("runs-and-watch", htmlOf(runs...))
		Expect(p.Problems).To(BeEmpty())
		var got struct {
			Sections []string
			Summary  [][]string
			Rows     []string
			Link     bool     // the summary's row links to the watch's section
			Failed   []string // what the summary says failed
			Title    string
		}
		Expect(p.Eval(`(() => {
			const row = [...document.querySelectorAll('table.summary tbody tr')].pop();
			return {
				Sections: [...document.querySelectorAll('body > section')].map(s => s.id),
				Summary: [...document.querySelectorAll('table.summary tbody tr')].map(r => [r.querySelector('th').innerText, r.querySelector('.badge').innerText]),
				Rows: [...document.querySelectorAll('section.watch table.findings td.kind')].map(td => td.innerText),
				Link: !!document.getElementById(row.querySelector('a').getAttribute('href').slice(1)).querySelector('table.findings'),
				Failed: [...document.querySelectorAll('.failed li a')].map(a => a.getAttribute('href')),
				Title: document.title,
			};
		})()`, &got)).To(Succeed())
		Expect(got.Sections).To(Equal(append(sectionsOf(runs[:2]), "watch-1")))
		Expect(got.Summary).To(HaveLen(3))
		Expect(got.Summary[2]).To(Equal([]string{"watch ./serve --model 'tiny llama'", "FINDINGS"}))
		Expect(got.Rows).To(Equal([]string{"stale-replay", "alloc-in-capture"}))
		Expect(got.Link).To(BeTrue())
		Expect(got.Failed).To(Equal([]string{"#watch-1"}), "the watch's findings are what failed")
		Expect(got.Title).NotTo(ContainSubstring("watch"), "the page is not only a watch report")
	})

	It("hears a page that does complain (the check's negative control)", func() {
		p := look("broken", []byte(`<!DOCTYPE html><html><body><img src="missing.png"><script>console.error("boom")</script></body></html>`))
		Expect(p.Problems).To(ContainElement(ContainSubstring("console.error: boom")))
		Expect(p.Problems).To(ContainElement(SatisfyAll(ContainSubstring("log (network)"), ContainSubstring("missing.png"))))
	})
})

// maxShot is how much of a page a screenshot keeps, in CSS pixels from its top.
const maxShot = 6000

// catalogRuns are the whole catalog's runs on both profiles, by the guards they ran without.
var catalogRuns = map[guard.Disabled][]*reports.Report{}

// catalog runs the whole catalog on both profiles, two replays each, once per setting of the
// built-in guards (disabled removes some: a runtime that misses a hazard, so verdicts fail).
func catalog(disabled guard.Disabled) []*reports.Report {
	GinkgoHelper()
	if runs, ok := catalogRuns[disabled]; ok {
		return runs
	}
	cfg := run.Defaults(func(string) string { return "" })
	cfg.Paths, cfg.Profile, cfg.Replays = []string{filepath.Join("..", "specs")}, "cann,cuda", 2
	cfg.Guard.Disabled = disabled
	ps, err := run.Load(cfg.Paths...)
	Expect(err).NotTo(HaveOccurred())
	instances, err := run.Select(ps, cfg)
	Expect(err).NotTo(HaveOccurred())
	var runs []*reports.Report
	run.ExecutePlan(context.Background(), cfg, instances, func(rep *reports.Report, err error) {
		Expect(err).NotTo(HaveOccurred())
		runs = append(runs, rep)
	})
	Expect(runs).To(HaveLen(2))
	catalogRuns[disabled] = runs
	return runs
}

func htmlOf(runs ...*reports.Report) []byte {
	GinkgoHelper()
	var html bytes.Buffer
	Expect(reports.WriteHTML(&html, runs...)).To(Succeed())
	return html.Bytes()
}

// clipped is the expression that lists what in an open failure is cut off: wider than its box.
const clipped = `[...document.querySelectorAll('details.instance[open] pre, details.instance[open] td, details.instance[open] .why')]
	.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.className + ': ' + e.textContent.slice(0, 80))`

// expectFailuresFirst checks the instances' order on the page: every failure, in run order, open,
// then the rest, folded.
func expectFailuresFirst(ins []domInstance, failing []failed) {
	GinkgoHelper()
	for i, in := range ins {
		fail := i < len(failing)
		if fail {
			Expect([]string{in.Run, in.ID}).To(Equal([]string{failing[i].run, failing[i].e.ID}), "the failures come first, in run order")
			Expect(in.Status).To(Equal("fail"))
		} else {
			Expect(in.Status).NotTo(Equal("fail"), "%s %s is listed after a pass", in.Run, in.ID)
		}
		Expect(in.Open).To(Equal(fail), "failures are open, the rest folded")
		Expect(in.Shown).To(Equal(fail))
	}
}

// sectionsOf are the sections a page of runs has, in order: the summary, the enforcement table and
// the matrix, then the failures, the uncharacterised and the skipped instances where there are
// some, and the expected findings (the catalog always has some).
func sectionsOf(runs []*reports.Report) []string {
	out := []string{"summary", "enforcement", "matrix"}
	var s reports.Summary
	for _, r := range runs {
		s.Fail += r.Summary.Fail
		s.Uncharacterised += r.Summary.Uncharacterised
		s.Skip += r.Summary.Skip
	}
	for _, sec := range []struct {
		n    int
		name string
	}{{s.Fail, "failures"}, {s.Uncharacterised, "uncharacterised"}, {s.Skip, "skipped"}} {
		if sec.n > 0 {
			out = append(out, sec.name)
		}
	}
	return append(out, "expected")
}

// failed is a failing instance and its run.
type failed struct {
	run string
	e   reports.Entry
}

// domInstance is an instance's section as the DOM has it.
type domInstance struct {
	ID, Run, Anchor, Status string
	Open, Shown             bool // whether it is unfolded, and its detail shows
	Detail                  string
	Bytes, Bystanders       int // its mismatches' row groups, the bystanders its memory picture draws
	Legend                  []string
}

// domTable is the enforcement table as the DOM has it: each column's run (a group's heading
// repeated over its columns), each column's mode, and each row's hazard, probe and cells.
type domTable struct {
	Runs, Modes []string
	Rows        [][]string
	Titles      [][]string
}

// readTable is the expression that reads a domTable from the page.
const readTable = `(() => {
	const t = document.querySelector('table.enforcement');
	return {
		Runs: [...t.querySelectorAll('thead th.run')].flatMap(th => Array(th.colSpan).fill(th.innerText)),
		Modes: [...t.querySelectorAll('thead th.mode')].map(th => th.innerText),
		Rows: [...t.querySelectorAll('tr.row')].map(tr => [tr.dataset.hazard, tr.querySelector('th.probe').innerText, ...[...tr.querySelectorAll('td.cell')].map(td => td.textContent)]),
		Titles: [...t.querySelectorAll('tr.row')].map(tr => [...tr.querySelectorAll('td.cell')].map(td => td.title)),
	};
})()`

// expectModel compares the table with the model's columns and cells, and every cell's title with
// what it must say: the probe, the platform and the mode, and what a code means.
func (d domTable) expectModel(t *reports.Table) {
	GinkgoHelper()
	var runs, modes []string
	for _, c := range t.Columns {
		runs, modes = append(runs, c.Run), append(modes, c.Mode)
	}
	Expect(d.Runs).To(Equal(runs))
	Expect(d.Modes).To(Equal(modes))
	var rows [][]string
	for _, r := range t.Rows {
		rows = append(rows, append([]string{r.Hazard, r.Probe}, r.Cells...))
	}
	Expect(d.Rows).To(Equal(rows), "the same cells as the text table")
	for i, r := range t.Rows {
		for j, cell := range r.Cells {
			title := d.Titles[i][j]
			Expect(title).To(HavePrefix(fmt.Sprintf("%s on %s, %s: ", r.Probe, t.Columns[j].Run, t.Columns[j].Mode)))
			if code, _, _ := strings.Cut(cell, "+"); code != "" && strings.Trim(code, "0123456789") == "" {
				Expect(title).To(ContainSubstring("rejected with code "+code), "a code's title says what it is")
			}
		}
	}
}

// colours are the colours img shows, as #rrggbb.
func colours(img image.Image) map[string]bool {
	out := map[string]bool{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			out[fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)] = true
		}
	}
	return out
}
