package capture_test

import (
	"encoding/json"
	"fmt"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/verdict"
)

// A result written as JSON and read back is the same result and judges the same: what a report
// reader, a merge of reports and a crash-isolated child's parent rely on. Every instance of the
// catalog, guarded and not, on both profiles.
var _ = Describe("a result through JSON", func() {
	cat, err := loadCatalog()
	if err != nil {
		It("loads the catalog", func() { Expect(err).NotTo(HaveOccurred()) })
		return
	}
	for _, profile := range []string{"cann", "cuda"} {
		It("reads back to the same result and the same verdict on sim/"+profile, func() {
			b, err := verdict.ReadBaseline(fmt.Sprintf("../specs/baselines/sim-%s.yaml", profile))
			Expect(err).NotTo(HaveOccurred())
			dev := openSim(profile)
			defer dev.Close()
			var all []*probes.Probe
			for _, s := range cat.sets {
				all = append(all, s.Probes...)
			}
			n := 0
			for _, in := range probes.Instances(all, probes.Matrix{Replays: 2}) {
				res := capture.Run(ctx(), dev, in, capture.Options{Runtime: builtin})
				data, err := json.Marshal(res)
				Expect(err).NotTo(HaveOccurred())
				var back capture.Result
				Expect(json.Unmarshal(data, &back)).To(Succeed(), "%s", data)
				Expect(cmp.Diff(res, &back, cmpopts.EquateEmpty())).To(BeEmpty(), "%s changed through JSON (-written +read)", in.ID())
				Expect(verdict.Judge(&back, b)).To(Equal(verdict.Judge(res, b)), in.ID())
				n++
			}
			Expect(n).To(BeNumerically(">", 250))
		})
	}
})
