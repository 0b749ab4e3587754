package reports_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
)

// cudaReport is the sample run on sim/cuda: the same probes, the sync rejected with CUDA's code
// (invalidating the capture), and no leak instance.
func cudaReport() *reports.Report {
	rep := reports.New("replaycheck", "v0.0.0-test", reports.Options{})
	rep.Started = sampleReport(reports.Options{}).Started
	rep.Backend, rep.Platform, rep.Profile, rep.Device = "sim", "sim/cuda", "cuda", "sim device 0 (cuda)"
	for _, r := range []*capture.Result{
		exactResult(), corruptedResult(probes.Corrupted), corruptedResult(probes.Exact),
		rejectedResult(), skippedResult(), uncharacterisedResult(),
	} {
		r.Platform, r.Device = rep.Platform, rep.Device
		if r.Rejection != nil {
			r.Rejection.Code, r.Rejection.Name, r.Rejection.Invalidated, r.Rejection.ReplaysExact = 900, "cudaErrorStreamCaptureUnsupported", true, nil
			r.Reason = "platform rejected capture main op 2 (SyncStream) with 900 cudaErrorStreamCaptureUnsupported [captured-stream], capture invalidated"
		}
		rep.Add(r)
	}
	return rep
}

func writeJUnit(runs ...*reports.Report) []byte {
	GinkgoHelper()
	var buf bytes.Buffer
	Expect(reports.WriteJUnit(&buf, runs...)).To(Succeed())
	return buf.Bytes()
}

func writeMarkdown(runs ...*reports.Report) []byte {
	GinkgoHelper()
	var buf bytes.Buffer
	Expect(reports.WriteMarkdown(&buf, runs...)).To(Succeed())
	return buf.Bytes()
}

// The JUnit shape as a CI reader sees it: only what the tests look at.
type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
	Skipped   *junitProblem `xml:"skipped"`
	SystemOut *string       `xml:"system-out"`
}

type junitSuite struct {
	Name       string `xml:"name,attr"`
	Tests      int    `xml:"tests,attr"`
	Failures   int    `xml:"failures,attr"`
	Errors     int    `xml:"errors,attr"`
	Skipped    int    `xml:"skipped,attr"`
	Time       string `xml:"time,attr"`
	Timestamp  string `xml:"timestamp,attr"`
	Properties []struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	} `xml:"properties>property"`
	Cases []junitCase `xml:"testcase"`
}

type junitDoc struct {
	XMLName  xml.Name
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

// expectWellFormed reads every token of data: it must parse to the end with one root element and
// nothing but whitespace beside it.
func expectWellFormed(data []byte) {
	GinkgoHelper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	depth, roots := 0, 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		Expect(err).NotTo(HaveOccurred(), "JUnit output is not well-formed XML")
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
			}
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 {
				Expect(strings.TrimSpace(string(t))).To(BeEmpty(), "text outside the root element")
			}
		}
	}
	Expect(depth).To(Equal(0), "unclosed elements")
	Expect(roots).To(Equal(1), "a JUnit document has exactly one root")
}

func parseJUnit(data []byte) junitDoc {
	GinkgoHelper()
	expectWellFormed(data)
	var d junitDoc
	Expect(xml.Unmarshal(data, &d)).To(Succeed())
	return d
}

func caseNamed(s junitSuite, name string) junitCase {
	GinkgoHelper()
	for _, c := range s.Cases {
		if c.Name == name {
			return c
		}
	}
	Fail("no testcase named " + name)
	return junitCase{}
}

var _ = Describe("the CI writers' output", func() {
	It("matches the JUnit golden file (go test ./reports -update rewrites it)", func() {
		expectGolden("junit.xml", writeJUnit(sampleReport(reports.Options{})))
	})

	It("matches the Markdown golden file of two runs (go test ./reports -update rewrites it)", func() {
		expectGolden("summary.md", writeMarkdown(sampleReport(reports.Options{}), cudaReport()))
	})

	It("is the same bytes every time", func() {
		Expect(writeJUnit(sampleReport(reports.Options{}), cudaReport())).To(Equal(writeJUnit(sampleReport(reports.Options{}), cudaReport())))
		Expect(writeMarkdown(sampleReport(reports.Options{}), cudaReport())).To(Equal(writeMarkdown(sampleReport(reports.Options{}), cudaReport())))
	})
})

var _ = Describe("the JUnit report", func() {
	var doc junitDoc
	var suite junitSuite
	BeforeEach(func() {
		doc = parseJUnit(writeJUnit(sampleReport(reports.Options{})))
		Expect(doc.Suites).To(HaveLen(1))
		suite = doc.Suites[0]
	})

	It("is one testsuites root with one testsuite named after the platform", func() {
		Expect(doc.XMLName.Local).To(Equal("testsuites"))
		Expect(suite.Name).To(Equal("sim/cann"))
		Expect(suite.Timestamp).To(Equal("2026-01-02T03:04:05"))
		Expect(suite.Properties).To(ContainElement(SatisfyAll(
			HaveField("Name", "device"), HaveField("Value", "sim device 0 (cann)"))))
	})

	It("counts tests, failures, errors and skips as CI readers do: each instance once", func() {
		Expect(suite.Cases).To(HaveLen(7))
		Expect([]int{suite.Tests, suite.Failures, suite.Errors, suite.Skipped}).To(Equal([]int{7, 1, 1, 1}))
		Expect([]int{doc.Tests, doc.Failures, doc.Errors, doc.Skipped}).To(Equal([]int{7, 1, 1, 1}))
		var failures, errs, skips int
		for _, c := range suite.Cases {
			if c.Failure != nil {
				failures++
			}
			if c.Error != nil {
				errs++
			}
			if c.Skipped != nil {
				skips++
			}
		}
		Expect([]int{failures, errs, skips}).To(Equal([]int{suite.Failures, suite.Errors, suite.Skipped}), "elements disagree with the counts")
	})

	It("names a testcase by its instance id, in the class of its probe, timed in seconds", func() {
		c := caseNamed(suite, "basic/copy@global/guards-off")
		Expect(c.Classname).To(Equal("basic/copy"))
		Expect(c.Time).To(Equal("0.002"))
		Expect(c.Failure).To(BeNil())
		Expect(suite.Time).To(Equal("0.007"))
	})

	It("gives a failing verdict a failure with the verdict's reason and rule, and the detail as its body", func() {
		f := caseNamed(suite, "rebase/promised-exact@relaxed/guards-off").Failure
		Expect(f).NotTo(BeNil())
		Expect(f.Message).To(HavePrefix("expected exact, got corrupted: 2 of 2 rounds differ"))
		Expect(f.Type).To(Equal("outcome"))
		Expect(f.Body).To(ContainSubstring("verdict   expected exact, got corrupted"))
		Expect(f.Body).To(ContainSubstring("want 07070707"))
		Expect(f.Body).To(ContainSubstring("got  00000000"))
		Expect(f.Body).To(ContainSubstring("stale     graph main captured dst at 0x100000000+64 (generation 1)"))
		Expect(f.Body).To(ContainSubstring("Malloc(bystander, 64) = 0x100000000+64 (thread other)"))
	})

	It("gives a run that ended in error an error of its kind, not a failure", func() {
		c := caseNamed(suite, "leak/forgotten-graph@global/guards-off")
		Expect(c.Failure).To(BeNil())
		Expect(c.Error).NotTo(BeNil())
		Expect(c.Error.Type).To(Equal("leak"))
		Expect(c.Error.Message).To(Equal("the run ended in error (leak): leaked after teardown: graphs: 1 live, 0 before"))
		Expect(c.Error.Body).To(ContainSubstring("leak      graphs: 1 live, 0 before"))
	})

	It("skips a skipped instance with its reason", func() {
		c := caseNamed(suite, "rebase/grow-after-capture@global/guards-on")
		Expect(c.Skipped).NotTo(BeNil())
		Expect(c.Skipped.Message).To(Equal("guards on needs runtime/guard, which this build does not have yet"))
	})

	It("passes an uncharacterised instance with a note, as the exit status does", func() {
		c := caseNamed(suite, "offcap/side-stream@global/guards-off")
		Expect(c.Failure).To(BeNil())
		Expect(c.Error).To(BeNil())
		Expect(c.Skipped).To(BeNil())
		Expect(c.SystemOut).NotTo(BeNil())
		Expect(*c.SystemOut).To(ContainSubstring("no expect.unguarded and no baseline entry for sim/cann"))
	})

	It("keeps the detail of an expected corruption as output of its passing testcase", func() {
		c := caseNamed(suite, "rebase/grow-after-capture@global/guards-off")
		Expect(c.Failure).To(BeNil())
		Expect(c.SystemOut).NotTo(BeNil())
		Expect(*c.SystemOut).To(ContainSubstring("mismatch  round 1  bystander  offset 4  length 2  want 0000  got 0707"))
	})

	It("has one testsuite per run and totals over them", func() {
		d := parseJUnit(writeJUnit(sampleReport(reports.Options{}), cudaReport()))
		Expect(d.Suites).To(HaveLen(2))
		Expect(d.Suites[1].Name).To(Equal("sim/cuda"))
		Expect([]int{d.Suites[1].Tests, d.Suites[1].Failures, d.Suites[1].Errors, d.Suites[1].Skipped}).To(Equal([]int{6, 1, 0, 1}))
		Expect([]int{d.Tests, d.Failures, d.Errors, d.Skipped}).To(Equal([]int{13, 2, 1, 2}))
	})

	It("is a well-formed empty document for an empty run", func() {
		rep := reports.New("replaycheck", "dev", reports.Options{})
		rep.Backend = "sim"
		d := parseJUnit(writeJUnit(rep))
		Expect(d.Suites).To(HaveLen(1))
		Expect(d.Tests).To(Equal(0))
	})
})

var _ = Describe("the Markdown summary", func() {
	var out string
	BeforeEach(func() {
		out = string(writeMarkdown(sampleReport(reports.Options{}), cudaReport()))
	})

	DescribeTable("shows",
		func(want string) {
			Expect(out).To(ContainSubstring(want))
		},
		Entry("the tool, version and platforms", "# replaycheck v0.0.0-test: sim/cann, sim/cuda\n"),
		Entry("a verdict line per run", "- ❌ **sim/cuda**: 6 instances: 3 pass, 1 fail, 1 skip, 1 uncharacterised"),
		Entry("a column per run, mode and guards", "| sim/cuda<br>relaxed<br>guards off |"),
		Entry("a failing cell with what was expected", "**❌ corrupted** (expected exact)"),
		Entry("a section per failure", "### ❌ `rebase/promised-exact@relaxed/guards-off` on sim/cuda"),
		Entry("the detail in a fenced block", "```text\nverdict   the run ended in error (leak)\n"),
		Entry("a long detail folded", "<details><summary>detail (16 lines)</summary>"),
		Entry("the enforcement table with WriteTable's cells", "| sync-in-capture | sync/sync-in-capture | - | 107027 | - | - | 900+inv | - |"),
		Entry("why instances were skipped, a line per run and reason", "## ⏭️ Skipped (2)\n\n- 1 instance on sim/cann: guards on needs runtime/guard, which this build does not have yet\n"),
	)

	It("marks a run that skipped every instance ⚠️, never ✅, saying it verified nothing", func() {
		rep := reports.New("replaycheck", "v0.0.0-test", reports.Options{})
		rep.Backend, rep.Platform, rep.Profile = "sim", "sim/cann", "cann"
		rep.Add(skippedResult())
		md := string(writeMarkdown(rep))
		Expect(md).To(ContainSubstring("- ⚠️ **sim/cann**: 1 instance: 0 pass, 0 fail, 1 skip (skipped 1); **nothing was verified: every instance was skipped**<br>"))
		Expect(md).NotTo(ContainSubstring("✅ **"))
		Expect(out).NotTo(ContainSubstring("nothing was verified"), "a run that ran any instance")
	})

	It("has a row per probe with a cell per column", func() {
		var rows []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "| Probe |") || strings.HasPrefix(l, "| basic/copy |") || strings.HasPrefix(l, "| leak/forgotten-graph |") {
				rows = append(rows, l)
			}
		}
		Expect(rows).To(HaveLen(3), "header, basic/copy and leak rows:\n%s", out)
		// Each run has instances in global (guards off and on), thread-local and relaxed (off).
		Expect(cellCount(rows[0])).To(Equal(1+4+4), "probe column + 4 columns per run")
		Expect(cellCount(rows[1])).To(Equal(cellCount(rows[0])))
		Expect(rows[2]).To(HaveSuffix("| - | - | - | - |"), "sim/cuda did not run the leak probe")
	})
})

// cellCount counts the cells of a Markdown table row: its unescaped pipes, less one.
func cellCount(row string) int {
	return len(regexp.MustCompile(`(^|[^\\])\|`).FindAllString(row, -1)) - 1
}

var _ = Describe("text from a result", func() {
	const reason = "bytes differ | see <dst> & \"src\" ]]> 'x' \x1b[0m"
	var rep *reports.Report
	BeforeEach(func() {
		res := corruptedResult(probes.Exact)
		res.Reason = reason
		res.ID, res.Probe = "odd/pi|pe@relaxed/guards-off", "odd/pi|pe"
		res.Hazard = "rebase"
		rep = reports.New("replaycheck", "dev", reports.Options{})
		rep.Backend, rep.Platform = "sim", "sim/cann"
		rep.Add(res)
	})

	It("reads back from JUnit as it was, and leaves the document well-formed", func() {
		data := writeJUnit(rep)
		Expect(string(data)).To(ContainSubstring("see &lt;dst&gt; &amp; &#34;src&#34;"), "the message attribute is not escaped")
		d := parseJUnit(data)
		c := d.Suites[0].Cases[0]
		Expect(c.Classname).To(Equal("odd/pi|pe"))
		Expect(c.Failure).NotTo(BeNil())
		// The escape character cannot be carried by XML 1.0 at all: it reads back as U+FFFD.
		clean := strings.ReplaceAll(reason, "\x1b", "\uFFFD")
		Expect(c.Failure.Message).To(Equal("expected exact, got corrupted: " + clean))
		Expect(c.Failure.Body).To(ContainSubstring("reason    "+clean+"\n"), "the CDATA body lost text")
	})

	It("is escaped in Markdown: no pipe leaves its cell, no HTML gets through", func() {
		out := string(writeMarkdown(rep))
		Expect(out).To(ContainSubstring("expected exact, got corrupted: bytes differ \\| see &lt;dst&gt; &amp; \"src\" \\]\\]&gt; 'x' \uFFFD\\[0m\n"))
		Expect(out).NotTo(ContainSubstring("\x1b"), "a terminal escape reached the summary")
		Expect(out).To(ContainSubstring("| odd/pi\\|pe | **❌ corrupted** (expected exact) |\n"))
		Expect(out).To(ContainSubstring(`| rebase | odd/pi\|pe | - | - | silent |`))
		// Raw, the reason appears only inside the fenced detail block.
		Expect(strings.Count(out, "<dst>")).To(Equal(1))
		Expect(out).To(MatchRegexp("(?s)```text\n[^`]*reason    bytes differ \\| see <dst>"))
	})
})

var _ = Describe("write errors of the CI writers", func() {
	It("surface from WriteJUnit", func() {
		Expect(reports.WriteJUnit(&failingWriter{n: 1}, sampleReport(reports.Options{}))).NotTo(Succeed())
	})

	It("surface from WriteMarkdown", func() {
		Expect(reports.WriteMarkdown(&failingWriter{n: 3}, sampleReport(reports.Options{}))).NotTo(Succeed())
	})
})
