package capture_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/verdict"
)

// The regression set from the field (specs/incidents.yaml): every incident probe, on both
// platform profiles and with every guard setting it declares, passes against its expectation or
// the platform's baseline; none is left uncharacterised; and each says where it comes from.
var _ = Describe("the incidents regression set", func() {
	cat, err := loadCatalog()
	if err != nil {
		It("loads", func() { Expect(err).NotTo(HaveOccurred()) })
		return
	}
	var incidents *probes.Set
	for _, s := range cat.sets {
		if s.Name == "incidents" {
			incidents = s
		}
	}
	It("exists, and every probe cites its source and its mechanism", func() {
		Expect(incidents).NotTo(BeNil())
		Expect(len(incidents.Probes)).To(BeNumerically(">=", 12))
		for _, p := range incidents.Probes {
			Expect(p.Description).To(MatchRegexp(`[\w.-]+/[\w.-]+#\d+`), "%s names the report it models", p.ID())
			Expect(p.Description).To(ContainSubstring("Kept:"), "%s says what it keeps of the report", p.ID())
		}
	})
	for _, profile := range []string{"cann", "cuda"} {
		It("passes on sim/"+profile+", guarded and unguarded, against the baseline", func() {
			b, err := verdict.ReadBaseline(fmt.Sprintf("../specs/baselines/sim-%s.yaml", profile))
			Expect(err).NotTo(HaveOccurred())
			dev := openSim(profile)
			defer dev.Close()
			guardedRan := 0
			for _, in := range probes.Instances(incidents.Probes, probes.Matrix{}) {
				res := capture.Run(ctx(), dev, in, capture.Options{Runtime: builtin})
				v, why := judge(res, b)
				Expect(v).To(Equal(verdict.Pass), "%s: %s (%s)", in.ID(), why, res.Reason)
				if in.Guarded {
					guardedRan++
					Expect(res.Outcome).NotTo(Equal(probes.Corrupted), in.ID())
				}
			}
			Expect(guardedRan).To(BeNumerically(">", 0))
		})
	}
})
