package seed_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/guard"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/internal/dl"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime/plugin"
	"github.com/replaycheck/replaycheck/runtime/plugin/seed"
	"github.com/replaycheck/replaycheck/verdict"
)

// exposing names, for each defective plugin, the catalog probe whose guarded instances must fail
// through it (the reference refuses them cleanly), and what the verdict must then name.
var exposing = map[string]struct{ probe, effect string }{
	// The refusal released the region: the side-effect check names the slot and counters that moved.
	"arena-rollback-on-refusal": {"guards/arena-grow-over-capacity", "the refusal had side effects"},
	// The refusal freed the retained buffer first: the same check names the free.
	"retained-free-before-refuse": {"hazards/rebase-after-capture", "the refusal had side effects"},
	// Nothing refuses the off-capture work: the replays miss it.
	"no-capture-watch": {"hazards/off-capture-stream", "corrupted"},
	// The replay after free + same-address re-allocation goes through into the bystander.
	"pointer-equality-residency": {"guards/same-address-reallocation", "corrupted"},
	// The retained slot re-bases; the residency check refuses the replay instead: still refused,
	// by the wrong guard at the wrong step, which the probe's refused-by names.
	"no-retained-slot": {"hazards/rebase-after-capture", "refused by guard residency at replay 1 main (Launch), expected refused by guard retained at between op 1"},
}

var _ = Describe("the plugins on the catalog", func() {
	sets, err := probes.Load(probes.DefaultLimits(), "../../../specs")

	It("has, for every defect, a catalog probe the reference refuses when guarded", func() {
		Expect(err).NotTo(HaveOccurred())
		byID := map[string]*probes.Probe{}
		for _, s := range sets {
			for _, p := range s.Probes {
				byID[p.ID()] = p
			}
		}
		Expect(exposing).To(HaveLen(len(seed.Defects())))
		for _, name := range seed.Defects() {
			Expect(exposing).To(HaveKey(name))
			p := byID[exposing[name].probe]
			Expect(p).NotTo(BeNil(), "%s: no probe %s in the catalog", name, exposing[name].probe)
			Expect(p.Expect.Guarded).To(Equal(probes.Refused), "%s: %s", name, p.ID())
		}
	})

	// The reference plugin is replaycheck's own guards written in C against the ABI: through the
	// loader, every instance of the catalog, guards on and off, must come out as through the
	// built-in Go guards, on the simulator and on both fake driver libraries.
	on := func(platform string) (device.Device, func()) {
		GinkgoHelper()
		var b device.Backend
		var err error
		switch platform {
		case "sim/cann", "sim/cuda":
			b, err = backends.Open("sim", backends.Config{Profile: strings.TrimPrefix(platform, "sim/")})
		default:
			lib := map[string]fake.Library{"acl": fake.ACL, "cuda": fake.CUDA}[platform]
			if why := backends.Unavailable(platform); why != "" {
				Skip(why)
			}
			path, berr := fake.Build(GinkgoT().TempDir(), lib, fake.Variant{})
			Expect(berr).NotTo(HaveOccurred())
			b, err = backends.Open(platform, backends.Config{Library: path})
		}
		Expect(err).NotTo(HaveOccurred())
		dev, err := b.Open(context.Background(), 0)
		Expect(err).NotTo(HaveOccurred())
		return dev, func() { Expect(dev.Close()).To(Succeed()); Expect(b.Close()).To(Succeed()) }
	}
	load := func(name string) *plugin.Plugin {
		GinkgoHelper()
		path, err := seed.Build(GinkgoT().TempDir(), name)
		Expect(err).NotTo(HaveOccurred())
		p, err := plugin.Load(path)
		if errors.Is(err, dl.ErrNoCgo) {
			Skip("runtime plugins need a cgo build")
		}
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(p.Close)
		return p
	}
	under := func(p *plugin.Plugin) *runtime.UnderTest {
		return &runtime.UnderTest{Name: p.Name(), Open: func(dev device.Device, guarded bool) (runtime.Runtime, error) {
			return p.Open(dev, guarded)
		}}
	}
	var all []*probes.Probe
	for _, s := range sets {
		all = append(all, s.Probes...)
	}

	for _, platform := range []string{"sim/cann", "sim/cuda", "acl", "cuda"} {
		It("gives through the reference the built-in guards' outcome for every catalog instance, on "+platform, func() {
			Expect(err).NotTo(HaveOccurred())
			ref := load("reference")
			dev, done := on(platform)
			defer done()
			n, skipped, private := 0, 0, 0
			for _, in := range probes.Instances(all, probes.Matrix{Replays: 2}) {
				want := capture.Run(context.Background(), dev, in, capture.Options{Runtime: guard.Reference(guard.Options{})})
				if in.Guarded && len(in.Probe.PrivatePools()) > 0 && want.Outcome != probes.Skipped {
					private++ // one the guards ran (the fake ACL library has no kernels, which they need)
				}
				got := capture.Run(context.Background(), dev, in, capture.Options{Runtime: under(ref), CheckSlotLog: true})
				Expect(got.Runtime).To(Equal("reference"))
				if lacksPrivatePools(in, got) {
					// The ABI has no private pools: the guards' outcome is not the plugin's to give.
					skipped++
					continue
				}
				Expect(behaviour(got)).To(Equal(behaviour(want)), "%s on %s through reference: %s\nbuilt-in guards: %s", in.ID(), platform, got.Reason, want.Reason)
				n++
			}
			Expect(n).To(BeNumerically(">", 250))
			// Every guarded instance with private pools that the guards ran is skipped, and nothing
			// else is let off.
			Expect(skipped).To(Equal(private))
		})
	}

	It("lets a plugin off only the guarded instances that need private pools, for that reason", func() {
		Expect(err).NotTo(HaveOccurred())
		var pooled, plain *probes.Probe
		for _, p := range all {
			if len(p.PrivatePools()) > 0 && pooled == nil {
				pooled = p
			}
			if len(p.PrivatePools()) == 0 && plain == nil {
				plain = p
			}
		}
		Expect(pooled).NotTo(BeNil())
		Expect(plain).NotTo(BeNil())
		ref := load("reference")
		dev, done := on("sim/cann")
		defer done()
		guarded := probes.Instance{Probe: pooled, Mode: device.Global, Guarded: true, Replays: 2}
		got := capture.Run(context.Background(), dev, guarded, capture.Options{Runtime: under(ref)})
		Expect(got.Outcome).To(Equal(probes.Skipped), got.Reason)
		Expect(lacksPrivatePools(guarded, got)).To(BeTrue(), got.Reason)

		// Negative controls: another skip reason, an unguarded instance, a probe without private
		// pools, an instance that ran.
		other := *got
		other.Reason = `runtime reference lacks capability "non-blocking-streams", which the probe's non-blocking streams need (side)`
		Expect(lacksPrivatePools(guarded, &other)).To(BeFalse())
		unguarded := guarded
		unguarded.Guarded = false
		Expect(lacksPrivatePools(unguarded, got)).To(BeFalse())
		Expect(lacksPrivatePools(probes.Instance{Probe: plain, Mode: device.Global, Guarded: true, Replays: 2}, got)).To(BeFalse())
		ran := *got
		ran.Outcome = probes.Exact
		Expect(lacksPrivatePools(guarded, &ran)).To(BeFalse())
	})

	It("fails every defective plugin on the probe that exposes it, naming the effect", func() {
		Expect(err).NotTo(HaveOccurred())
		byID := map[string]*probes.Probe{}
		for _, p := range all {
			byID[p.ID()] = p
		}
		dev, done := on("sim/cann")
		defer done()
		for _, name := range seed.Defects() {
			p := load(name)
			ex := exposing[name]
			failed := 0
			for _, in := range probes.Instances([]*probes.Probe{byID[ex.probe]}, probes.Matrix{Guards: []bool{true}, Replays: 2}) {
				res := capture.Run(context.Background(), dev, in, capture.Options{Runtime: under(p), CheckSlotLog: true})
				v := verdict.Judge(res, nil)
				if v.Status == verdict.Fail {
					failed++
					Expect(v.Reason).To(ContainSubstring(ex.effect), "%s on %s", name, in.ID())
				}
			}
			Expect(failed).To(BeNumerically(">", 0), "%s passed %s in every mode", name, ex.probe)
		}
	})
})

// lacksPrivatePools reports whether got, in's result through a runtime plugin, is the skip of a
// guarded instance whose probe has graph-private pools, which no plugin keeps (the ABI has no
// entry for them; the engine skips such an instance, capture/privatepool.go).
func lacksPrivatePools(in probes.Instance, got *capture.Result) bool {
	return got.Outcome == probes.Skipped && in.Guarded && len(in.Probe.PrivatePools()) > 0 &&
		strings.HasPrefix(got.Reason, fmt.Sprintf("runtime %s lacks capability %q, which the probe's private pools need in a guarded instance", got.Runtime, "graph-private-pools"))
}

// behaviour is what must agree between two runtimes on one instance: the outcome, the rejection,
// the refusal's step and the guard that made it, and how many rounds ran and differed.
func behaviour(r *capture.Result) string {
	s := fmt.Sprintf("%s, %d rounds, %d corrupted", r.Outcome, r.Rounds, r.CorruptedRounds)
	if rej := r.Rejection; rej != nil {
		s += fmt.Sprintf(", rejected at %s with %d [%s] invalidated=%v", rej.Step, rej.Code, rej.Class, rej.Invalidated)
	}
	if r.Refusal != nil {
		s += ", refused at " + r.Refusal.Step.String() + " by " + r.Refusal.Who()
	}
	if r.Error != nil {
		s += ", error " + string(r.Error.Kind)
	}
	return s
}
