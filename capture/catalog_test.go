package capture_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/verdict"
)

// The catalog on sim/cann, unguarded: positives come out exact and hazards corrupted, and the
// result shows why (the stale range's new owner, the op that ran eagerly).
var _ = Describe("the catalog on sim/cann", func() {
	cat, err := loadCatalog()
	if err != nil {
		// A load failure is reported by a spec rather than a panic during tree construction.
		It("loads", func() { Expect(err).NotTo(HaveOccurred()) })
		return
	}
	sets, find := cat.sets, cat.find
	var dev device.Device
	BeforeEach(func() {
		dev = openSim("cann")
		DeferCleanup(dev.Close)
	})

	for _, mode := range device.CaptureModes() {
		Context("in "+mode.String()+" mode", func() {
			It("replays every positive probe exactly", func() {
				for _, s := range sets {
					for _, p := range s.Probes {
						if p.Hazard != "none" {
							continue
						}
						res := runOn(dev, p, mode, p.Replays)
						Expect(res.Outcome).To(Equal(probes.Exact), "%s: %s", p.ID(), res.Reason)
					}
				}
			})

			It("shows a re-base writing into the bystander that took the old address", func() {
				res := runOn(dev, find("hazards/rebase-after-capture"), mode, 3)
				Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
				Expect(res.Stale).To(ConsistOf(SatisfyAll(
					HaveField("Buffer", "dst"), HaveField("Owners", ConsistOf("bystander")))))
				Expect(res.Mismatches).To(ContainElement(HaveField("Buffer", "bystander")))
				Expect(res.Rejection).To(BeNil())
			})

			It("shows off-capture work running once, eagerly, and missing from every replay", func() {
				res := runOn(dev, find("hazards/off-capture-stream"), mode, 3)
				Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
				Expect(res.CorruptedRounds).To(Equal(3))
				Expect(res.Mismatches).To(ConsistOf(HaveField("Buffer", "side-out")))
				Expect(res.Timeline.Events()).To(ContainElement(SatisfyAll(
					HaveField("Phase", capture.PhaseCapture), HaveField("Captured", false), HaveField("Eager", true),
					HaveField("Call", ContainSubstring("on side")))))
				Expect(res.Reason).To(ContainSubstring("ran eagerly outside the capture"))
				Expect(res.Rejection).To(BeNil())
			})

			It("shows a scratch allocation from inside the capture replayed into its next owner", func() {
				res := runOn(dev, find("hazards/alloc-in-capture-reused"), mode, 3)
				Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
				Expect(res.Stale).To(ContainElement(SatisfyAll(
					HaveField("Buffer", "scratch"), HaveField("Owners", ConsistOf("bystander")))))
				Expect(res.Mismatches).To(ConsistOf(HaveField("Buffer", "bystander")))
				Expect(res.Rejection).To(BeNil())
			})
		})
	}

	It("replays every positive probe exactly in any order its graph's dependencies allow", func() {
		for seed := uint64(1); seed <= 16; seed++ {
			b, err := sim.New(sim.Options{Profile: "cann", Seed: seed})
			Expect(err).NotTo(HaveOccurred())
			d, err := b.Open(ctx(), 0)
			Expect(err).NotTo(HaveOccurred())
			for _, s := range sets {
				for _, p := range s.Probes {
					if p.Hazard == "none" {
						res := runOn(d, p, device.Global, 3)
						Expect(res.Outcome).To(Equal(probes.Exact), "seed %d, %s: %s", seed, p.ID(), res.Reason)
					}
				}
			}
			Expect(d.Close()).To(Succeed())
		}
	})

	for _, profile := range []string{"cann", "cuda"} {
		It("judges every instance of the catalog on sim/"+profile+" as passing or uncharacterised", func() {
			// Guarded instances included: the engine's own calls (snapshots before guarded calls)
			// must never perturb a capture, which only the invalidating cuda profile would show.
			d := openSim(profile)
			defer d.Close()
			var all []*probes.Probe
			for _, s := range sets {
				all = append(all, s.Probes...)
			}
			for _, in := range probes.Instances(all, probes.Matrix{Replays: 3}) {
				res := capture.Run(ctx(), d, in, capture.Options{Runtime: builtin})
				v, why := judge(res, nil)
				Expect(v).To(BeElementOf(verdict.Pass, verdict.Uncharacterised), "%s: %s", in.ID(), why)
			}
		})
	}
})
