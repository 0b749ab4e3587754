package reports_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/reports"
)

// page parses the HTML report as XML (it is written well-formed) and counts elements by name and
// by name and each of their classes ("details.instance", "details.fail").
func page(data []byte) (map[string]int, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	d.Entity = xml.HTMLEntity
	counts := map[string]int{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return counts, nil
		}
		if err != nil {
			return counts, err
		}
		if se, ok := tok.(xml.StartElement); ok {
			counts[se.Name.Local]++
			for _, a := range se.Attr {
				if a.Name.Local == "class" {
					for _, c := range strings.Fields(a.Value) {
						counts[se.Name.Local+"."+c]++
					}
				}
			}
		}
	}
}

var _ = Describe("the HTML report", func() {
	write := func(runs ...*reports.Report) []byte {
		GinkgoHelper()
		var buf bytes.Buffer
		Expect(reports.WriteHTML(&buf, runs...)).To(Succeed())
		return buf.Bytes()
	}

	It("matches its golden file (go test ./reports -update rewrites it)", func() {
		expectGolden("report.html", write(sampleReport(reports.Options{})))
	})

	It("is well-formed, self-contained, and has one matrix cell per instance and a section per finding", func() {
		rep := sampleReport(reports.Options{})
		out := write(rep)
		counts, err := page(out)
		Expect(err).NotTo(HaveOccurred(), "the page does not parse")
		Expect(counts["rect.cell"]).To(Equal(len(rep.Results)))
		Expect(counts["details.instance"]).To(Equal(5), "the two failures, the skip, the uncharacterised instance and the expected corruption")
		Expect(counts["svg.memory"]).To(BeNumerically(">", 0), "a picture of the captured ranges")
		Expect(counts["script"]).To(BeZero())
		Expect(string(out)).NotTo(MatchRegexp(`(src|href)="https?:`), "nothing is loaded from outside")
		Expect(string(out)).To(ContainSubstring("stale: now buffer bystander"))
	})

	It("lists the failures first and open, folds the rest, and shows each mismatch once, in its table", func() {
		out := string(write(sampleReport(reports.Options{})))
		expectInOrder(out, `<section id="summary">`, `<h3>What failed</h3>`, `<section id="enforcement">`, `<section id="matrix">`,
			`<section id="failures">`, `<details class="instance fail" open="open">`, `<details class="instance fail" open="open">`,
			`<section id="uncharacterised">`, `<section id="skipped">`, `<section id="expected">`, `<details class="probe">`)
		counts, err := page([]byte(out))
		Expect(err).NotTo(HaveOccurred())
		Expect(counts["details.fail"]).To(Equal(2))
		Expect(strings.Count(out, `open="open"`)).To(Equal(2), "only the failures are open")
		Expect(counts["table.enforcement"]).To(Equal(1))
		Expect(counts["tbody"]).To(Equal(1+3+4), "the summary, the enforcement table's three hazards, and a row group per mismatch: two corrupted instances of two each")
		Expect(out).NotTo(MatchRegexp(`(?m)^mismatch`), "the detail leaves the mismatches to the table")
		Expect(out).To(ContainSubstring(`<td class="words"><mark>07070707</mark>`), "the words that differ are marked")
	})

	It("draws who holds a stale range now, and says so in the picture's legend", func() {
		out := string(write(sampleReport(reports.Options{})))
		counts, err := page([]byte(out))
		Expect(err).NotTo(HaveOccurred())
		Expect(counts["rect.bystander"]).To(Equal(2), "the bystander of each corrupted instance")
		Expect(out).To(ContainSubstring(`<title>buffer bystander holds 0x100000000+64 now (generation 3)`))
		Expect(out).To(ContainSubstring("holds a stale range now"))

		By("drawing no bystander where the range is free (the control)")
		rep := sampleReport(reports.Options{})
		for i := range rep.Results {
			for j := range rep.Results[i].Stale {
				rep.Results[i].Stale[j].Now, rep.Results[i].Stale[j].Owners = "free (no live allocation of the probe)", nil
			}
		}
		out = string(write(rep))
		counts, err = page([]byte(out))
		Expect(err).NotTo(HaveOccurred())
		Expect(counts["rect.bystander"]).To(BeZero())
		Expect(counts["rect.stale"]).To(Equal(2))
		Expect(out).To(ContainSubstring(">now free</text>"))
	})

	It("escapes what the results say", func() {
		rep := sampleReport(reports.Options{})
		rep.Results[2].Reason = `<script>alert("x")</script> & more`
		out := string(write(rep))
		Expect(out).NotTo(ContainSubstring("<script>"))
		Expect(strings.Count(out, "&lt;script&gt;")).To(BeNumerically(">", 0))
	})
})
