package seed_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"math/rand/v2"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/internal/dl"
	"github.com/replaycheck/replaycheck/runtime/plugin"
)

// The reference plugin's slot log (ABI 2's slots_changed), through the loader: after every
// allocator call, the keys it names since the call before are exactly the slots whose holding
// changed, as holds answers about every key the spec ever used.
var _ = Describe("the reference plugin's slot log", func() {
	var (
		rt   *plugin.Runtime
		keys []string // every key used so far
		was  map[string]string
		at   uint64
	)
	holding := func(key string) string {
		slot, p, ok := rt.Holds(key)
		if !ok {
			return "empty"
		}
		return fmt.Sprintf("%v %v", slot, p)
	}
	// step does f, then checks the log since the last step against holds, and returns the keys.
	step := func(what string, f func()) []string {
		GinkgoHelper()
		f()
		logged, now, ok := rt.SlotsChangedSince(at)
		Expect(ok).To(BeTrue(), what)
		var changed []string
		for _, k := range keys {
			if h := holding(k); h != was[k] {
				changed = append(changed, k)
				was[k] = h
			}
		}
		Expect(sorted(logged)).To(Equal(changed), "%s: the log against holds", what)
		Expect(now).To(Equal(at+uint64(len(logged))), "%s: one version per change", what)
		at = now
		return logged
	}
	use := func(ks ...string) {
		for _, k := range ks {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
				slices.Sort(keys)
				was[k] = "empty"
			}
		}
	}
	provision := func(slot runtime.Slot, key string, bytes int64) device.Ptr {
		GinkgoHelper()
		use(key)
		_, cur, _ := rt.Holds(key)
		p, _, err := rt.Provision(device.Main, slot, key, cur, bytes)
		Expect(err).NotTo(HaveOccurred())
		return p
	}

	BeforeEach(func() {
		p, err := plugin.Load(built.plugins["reference"])
		if errors.Is(err, dl.ErrNoCgo) {
			Skip("runtime plugins need a cgo build")
		}
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(p.Close)
		Expect(p.Version()).To(BeEquivalentTo(4))
		b, err := sim.New(sim.Options{Profile: "cann"})
		Expect(err).NotTo(HaveOccurred())
		dev, err := b.Open(context.Background(), 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(dev.Close)
		rt, err = p.Open(dev, true)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(rt.Close)
		keys, was, at = nil, map[string]string{}, rt.SlotsVersion()
	})

	It("names every slot whose holding changed, and only those, after every kind of allocator call", func() {
		Expect(step("first allocations", func() {
			provision(runtime.Plain, "a", 512)
			provision(runtime.Retained, "r", 1024)
		})).To(Equal([]string{"a", "r"}))
		Expect(step("nothing", func() {})).To(BeEmpty())
		Expect(step("a plain slot grows (a re-base: emptied, then held again)", func() { provision(runtime.Plain, "a", 4096) })).To(Equal([]string{"a", "a"}))
		Expect(step("a provision served in place", func() { provision(runtime.Plain, "a", 1024) })).To(BeEmpty())
		Expect(step("a release", func() {
			_, p, _ := rt.Holds("a")
			Expect(rt.Release(device.Main, runtime.Plain, "a", p)).To(Succeed())
		})).To(Equal([]string{"a"}))
		Expect(step("an arena bank", func() {
			use("x", "y")
			_, err := rt.CommitBank(device.Main, []runtime.Region{{Key: "x", Bytes: 512}, {Key: "y", Bytes: 512}})
			Expect(err).NotTo(HaveOccurred())
		})).To(ConsistOf("x", "y"))
		Expect(step("a pool and a block from it (no slot)", func() {
			Expect(rt.ReservePool(device.Main, "pool", 4096, 0)).To(Succeed())
			_, err := rt.PoolAlloc(device.Main, "pool", 512)
			Expect(err).NotTo(HaveOccurred())
		})).To(BeEmpty())
		many := make([]string, 100)
		for i := range many {
			many[i] = fmt.Sprintf("k%03d", i)
		}
		Expect(step("a hundred allocations, more than the loader's first room for keys", func() {
			for _, k := range many {
				provision(runtime.Plain, k, 512)
			}
		})).To(Equal(many), "in the order they changed")
		Expect(step("retire", func() { Expect(rt.Retire(device.Main)).To(Succeed()) })).To(HaveLen(len(many) + 3))
	})

	// The reference finds a slot by its key through a hash index (a search of every slot made a
	// probe of n buffers quadratic): after thousands of provisions, releases in scattered order,
	// re-bases and reuses of keys, it holds exactly what a plain map says, and its log agrees.
	It("holds what a map of keys says through thousands of scattered provisions and releases", func() {
		const n = 3000
		model := map[string]device.Ptr{}
		names := make([]string, n)
		step("the first provisions", func() {
			for i := range names {
				names[i] = fmt.Sprintf("s%d", i)
				model[names[i]] = provision(runtime.Plain, names[i], 512)
			}
		})
		rng := rand.New(rand.NewPCG(7, 7))
		check := func(what string) {
			GinkgoHelper()
			for _, k := range names {
				_, p, ok := rt.Holds(k)
				want, held := model[k]
				Expect(ok).To(Equal(held), "%s: %q held", what, k)
				Expect(p).To(Equal(want), "%s: %q", what, k)
			}
		}
		step("scattered releases and growths", func() {
			for _, i := range rng.Perm(n)[:2*n/3] {
				k := names[i]
				Expect(rt.Release(device.Main, runtime.Plain, k, model[k])).To(Succeed())
				delete(model, k)
			}
			for _, i := range rng.Perm(n)[:n/3] {
				if k := names[i]; model[k].Bytes != 0 {
					model[k] = provision(runtime.Plain, k, 4096) // a re-base: the key moves
				}
			}
		})
		check("after the releases")
		step("keys used again", func() {
			for _, i := range rng.Perm(n)[:n/2] {
				if k := names[i]; model[k].Bytes == 0 {
					model[k] = provision(runtime.Plain, k, 1024)
				}
			}
		})
		check("after the reuses")
		Expect(step("retire", func() { Expect(rt.Retire(device.Main)).To(Succeed()) })).To(HaveLen(len(model)))
		clear(model)
		check("after retire")
	})

	It("answers that it cannot reach back once it dropped the changes asked about, and reaches back to what it kept", func() {
		from := at
		for range 2100 {
			provision(runtime.Plain, "a", 512)
			_, p, _ := rt.Holds("a")
			Expect(rt.Release(device.Main, runtime.Plain, "a", p)).To(Succeed())
		}
		_, now, ok := rt.SlotsChangedSince(from)
		Expect(ok).To(BeFalse(), "4,200 changes: the log keeps 4,096")
		Expect(now).To(Equal(from + 4200))
		logged, _, ok := rt.SlotsChangedSince(now - 10)
		Expect(ok).To(BeTrue())
		Expect(logged).To(HaveLen(10))
		_, _, ok = rt.SlotsChangedSince(now + 1)
		Expect(ok).To(BeFalse(), "a version it never gave")
	})
})

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
