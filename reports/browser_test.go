package reports_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/browser"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/run"
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
// Chromium (internal/browser).
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

	// load writes page into a file and opens it.
	load := func(name string, page []byte) *browser.Page {
		GinkgoHelper()
		file := filepath.Join(GinkgoT().TempDir(), name)
		Expect(os.WriteFile(file, page, 0o644)).To(Succeed())
		p, err := b.Open(file)
		Expect(err).NotTo(HaveOccurred())
		return p
	}

	It("renders the whole catalog: one visible matrix cell per instance in its outcome's colour, links that land, no complaint", func() {
		cfg := run.Defaults(func(string) string { return "" })
		cfg.Paths, cfg.Profile, cfg.Replays = []string{filepath.Join("..", "specs")}, "cann,cuda", 2
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
		var html bytes.Buffer
		Expect(reports.WriteHTML(&html, runs...)).To(Succeed())
		p := load("report.html", html.Bytes())
		Expect(p.Problems).To(BeEmpty(), "the console and the browser's log stay clean")

		var page struct {
			Cells    []int    // cells of each run's matrix
			Visible  int      // cells the browser laid out at their size
			Dangling []string // matrix links to no section
			Sections int
		}
		Expect(p.Eval(`(() => {
			const matrices = [...document.querySelectorAll('svg.matrix')];
			const cells = [...document.querySelectorAll('svg.matrix rect.cell')];
			return {
				Cells: matrices.map(m => m.querySelectorAll('rect.cell').length),
				Visible: cells.filter(c => { const r = c.getBoundingClientRect(); return r.width >= 12 && r.height >= 12 }).length,
				Dangling: [...document.querySelectorAll('svg.matrix a')].map(a => a.getAttribute('href')).filter(h => !document.getElementById(h.slice(1))),
				Sections: document.querySelectorAll('details.instance').length,
			};
		})()`, &page)).To(Succeed())
		total := 0
		for i, r := range runs {
			Expect(page.Cells[i]).To(Equal(len(r.Results)), "one cell per instance of %s", reports.RunName(r))
			total += len(r.Results)
		}
		Expect(page.Visible).To(Equal(total))
		Expect(page.Dangling).To(BeEmpty())
		Expect(page.Sections).To(BeNumerically(">", 0))

		shot, err := p.Screenshot(3000)
		Expect(err).NotTo(HaveOccurred())
		if dir := os.Getenv(envScreenshots); dir != "" {
			Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, "report.png"), shot, 0o644)).To(Succeed())
		}
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
	})

	It("shows an interrupted run's banner on the first screen, above its matrix, and lists what did not run", func() {
		var html bytes.Buffer
		Expect(reports.WriteHTML(&html, interrupted())).To(Succeed())
		p := load("incomplete.html", html.Bytes())
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
		var html bytes.Buffer
		Expect(reports.WriteHTML(&html, watchReport())).To(Succeed())
		p := load("watch.html", html.Bytes())
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

	It("hears a page that does complain (the check's negative control)", func() {
		p := load("broken.html", []byte(`<!DOCTYPE html><html><body><img src="missing.png"><script>console.error("boom")</script></body></html>`))
		Expect(p.Problems).To(ContainElement(ContainSubstring("console.error: boom")))
		Expect(p.Problems).To(ContainElement(SatisfyAll(ContainSubstring("log (network)"), ContainSubstring("missing.png"))))
	})
})

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
