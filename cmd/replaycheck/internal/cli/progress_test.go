package cli

import (
	"bytes"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/run"
	"github.com/replaycheck/replaycheck/verdict"
)

var _ = Describe("the progress line", func() {
	It("is left out when the output is not a terminal", func() {
		Expect(newProgress(&bytes.Buffer{})).To(BeNil())
		f, err := os.CreateTemp(GinkgoT().TempDir(), "log")
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		Expect(newProgress(f)).To(BeNil(), "a file is not a terminal")
	})

	It("redraws one line with the count, the failures and the last instance, and clears it", func() {
		var buf bytes.Buffer
		p := &progress{w: &buf}
		Expect(p.Start(run.Header{Platform: "sim/cann", Instances: []string{"a", "b", "c"}})).To(Succeed())
		Expect(p.Result(reports.Entry{Result: capture.Result{ID: "a"}, Verdict: verdict.Verdict{Status: verdict.Pass}})).To(Succeed())
		Expect(p.Result(reports.Entry{Result: capture.Result{ID: "b"}, Verdict: verdict.Verdict{Status: verdict.Fail}})).To(Succeed())
		Expect(buf.String()).To(HaveSuffix("\r\x1b[2Ksim/cann [2/3] 1 failed  b"))
		p.clear()
		Expect(buf.String()).To(HaveSuffix("\r\x1b[2K"))
		var none *progress
		none.clear() // a run without a terminal has no line to clear
	})
})
