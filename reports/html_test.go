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
// class.
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
					counts[se.Name.Local+"."+a.Value]++
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

	It("escapes what the results say", func() {
		rep := sampleReport(reports.Options{})
		rep.Results[2].Reason = `<script>alert("x")</script> & more`
		out := string(write(rep))
		Expect(out).NotTo(ContainSubstring("<script>"))
		Expect(strings.Count(out, "&lt;script&gt;")).To(BeNumerically(">", 0))
	})
})
