package capture_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/probes"
)

// The whole catalog through the real bindings (device/acl, device/cuda) and the fake driver
// libraries (device/fake), compared instance by instance with the simulator on the matching
// profile: a difference is a bug in a binding, a fake or the simulator. Only ACL's lack of kernels
// may differ: those instances are skipped there, and say so.
var _ = Describe("the catalog through the fake driver libraries", func() {
	cat, err := loadCatalog()
	if err != nil {
		It("loads the catalog", func() { Expect(err).NotTo(HaveOccurred()) })
		return
	}
	var all []*probes.Probe
	for _, s := range cat.sets {
		all = append(all, s.Probes...)
	}
	for _, lib := range []fake.Library{fake.ACL, fake.CUDA} {
		backend, profile := lib.String(), lib.Profile()
		It(fmt.Sprintf("gives on %s what the simulator gives with profile %s", backend, profile), func(ctx SpecContext) {
			if why := backends.Unavailable(backend); why != "" {
				Skip(why)
			}
			path, err := fake.Build(GinkgoT().TempDir(), lib, fake.Variant{})
			Expect(err).NotTo(HaveOccurred())
			b, err := backends.Open(backend, backends.Config{Library: path})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(b.Close)
			dev, err := b.Open(ctx, 0)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(dev.Close)
			ref := openSim(profile)
			DeferCleanup(ref.Close)
			// The bindings compare in place, through pinned chunks of their own (their chunk edges
			// are device/cuda/compare_test.go's); the engine's read-back chunk plays no part.

			same, skipped := 0, 0
			for _, in := range probes.Instances(all, probes.Matrix{Replays: 2}) {
				got := capture.Run(ctx, dev, in, capture.Options{Runtime: builtin})
				want := capture.Run(ctx, ref, in, capture.Options{Runtime: builtin})
				if got.Outcome == probes.Skipped {
					Expect(got.Reason).To(Equal(fmt.Sprintf("backend %s lacks capability %q", backend, "kernels")), in.ID())
					skipped++
					continue
				}
				Expect(behaviour(got)).To(Equal(behaviour(want)), "%s on %s: %s\nsimulator: %s", in.ID(), backend, got.Reason, want.Reason)
				same++
			}
			Expect(same).To(BeNumerically(">", 250))
			if lib == fake.CUDA {
				Expect(skipped).To(BeZero(), "the CUDA binding runs the axpy kernel")
			}
		})
	}
})

// behaviour is what must agree between a backend and the simulator: the outcome, the rejection
// (code, class, whether it invalidated the capture), and how many rounds ran and differed.
func behaviour(r *capture.Result) string {
	s := fmt.Sprintf("%s, %d rounds, %d corrupted", r.Outcome, r.Rounds, r.CorruptedRounds)
	if rej := r.Rejection; rej != nil {
		s += fmt.Sprintf(", rejected at %s with %d [%s] invalidated=%v", rej.Step, rej.Code, rej.Class, rej.Invalidated)
	}
	if r.Refusal != nil {
		s += ", refused at " + r.Refusal.Step.String()
	}
	return s
}
