package guard_test

import (
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"math/rand/v2"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// pairwiseConflict is the replay-isolation check as defined: the first range of xs, in order, that
// overlaps a range of ys with at least one of the two written, and the first such range of ys.
func pairwiseConflict(xs, ys []guard.Touched) (guard.Touched, guard.Touched, bool) {
	for _, x := range xs {
		for _, y := range ys {
			if (x.Write || y.Write) && x.Ptr.Overlaps(y.Ptr) {
				return x, y, true
			}
		}
	}
	return guard.Touched{}, guard.Touched{}, false
}

var _ = Describe("Replay isolation's conflict between two graphs", func() {
	// touched draws n ranges in a window of span bytes: short and long, nested, adjacent and
	// overlapping, a share of them written.
	touched := func(rng *rand.Rand, n int, span uint64, writes float64) []guard.Touched {
		out := make([]guard.Touched, n)
		for i := range out {
			length := int64(rng.IntN(64) + 1)
			if rng.IntN(10) == 0 {
				length = int64(rng.IntN(4096) + 1)
			}
			out[i] = guard.Touched{Ptr: device.Ptr{Addr: 1<<40 + rng.Uint64N(span), Bytes: length}, Write: rng.Float64() < writes}
		}
		return out
	}

	It("reports the pair the pairwise definition reports, found through the index of the graph in flight", func() {
		rng := rand.New(rand.NewPCG(7, 13))
		found, clear := 0, 0
		for trial := range 3000 {
			// Dense windows conflict early, sparse ones late or never; mostly reads, some writes.
			span := uint64(256) << (trial % 12)
			xs := touched(rng, rng.IntN(60), span, rng.Float64()*0.3)
			ys := touched(rng, rng.IntN(60), span, rng.Float64()*0.3)
			wx, wy, wok := pairwiseConflict(xs, ys)
			x, y, ok := guard.Conflict(xs, ys)
			Expect(ok).To(Equal(wok), "trial %d", trial)
			Expect([]guard.Touched{x, y}).To(Equal([]guard.Touched{wx, wy}), "trial %d", trial)
			if ok {
				found++
			} else {
				clear++
			}
		}
		// Both answers occur often: the comparison means something either way.
		Expect(found).To(BeNumerically(">", 500))
		Expect(clear).To(BeNumerically(">", 500))
	})

	It("finds a read touching the end of a written range and misses ranges that only meet", func() {
		w := guard.Touched{Ptr: device.Ptr{Addr: 0x1000, Bytes: 0x100}, Write: true}
		longRead := guard.Touched{Ptr: device.Ptr{Addr: 0x0, Bytes: 0x10000}}
		meets := guard.Touched{Ptr: device.Ptr{Addr: 0x1100, Bytes: 0x10}, Write: true}
		last := guard.Touched{Ptr: device.Ptr{Addr: 0x10ff, Bytes: 1}}
		_, _, ok := guard.Conflict([]guard.Touched{meets}, []guard.Touched{w})
		Expect(ok).To(BeFalse(), "adjacent ranges share no byte")
		x, y, ok := guard.Conflict([]guard.Touched{last}, []guard.Touched{longRead, w})
		Expect(ok).To(BeTrue())
		Expect([]guard.Touched{x, y}).To(Equal([]guard.Touched{last, w}), "a read conflicts only with a write: the long read in flight does not count")
		_, _, ok = guard.Conflict([]guard.Touched{last}, []guard.Touched{longRead})
		Expect(ok).To(BeFalse(), "two reads never conflict")
	})
})

var _ = Describe("the ranges a graph keeps", func() {
	It("are each range its capture touched once, at its first occurrence, in order", func() {
		rng := rand.New(rand.NewPCG(21, 34))
		for trial := range 300 {
			// Few distinct ranges, many repeats, some differing only in access or generation.
			n := rng.IntN(400)
			ts, gens := make([]guard.Touched, n), make([]uint64, n)
			for i := range ts {
				ts[i] = guard.Touched{Ptr: device.Ptr{Addr: 1<<40 + uint64(rng.IntN(8))*64, Bytes: int64(rng.IntN(2)+1) * 32}, Write: rng.IntN(2) == 0}
				gens[i] = uint64(rng.IntN(2) + 1)
			}
			type key struct {
				t   guard.Touched
				gen uint64
			}
			seen := map[key]bool{}
			var want []guard.Touched
			for i, t := range ts {
				if k := (key{t, gens[i]}); !seen[k] {
					seen[k] = true
					want = append(want, t)
				}
			}
			Expect(guard.Kept(ts, gens)).To(Equal(want), "trial %d", trial)
		}
	})
})

var _ = Describe("Replay isolation among flights on several streams", func() {
	It("names the earliest launch a replay would race with, and forgets each stream's launches once they land", func() {
		d := guarded(openSim("cuda"), guard.Kernel)
		x, y, out := malloc(d, 512), malloc(d, 512), malloc(d, 512)
		s1, s2, s3 := stream(d), stream(d), stream(d)
		capture := func(s device.Stream, ops func()) device.Graph {
			GinkgoHelper()
			Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
			ops()
			g, err := d.EndCapture(device.Main, s)
			Expect(err).NotTo(HaveOccurred())
			return g
		}
		writesX := capture(s1, func() { Expect(d.Fill(device.Main, s1, x, 1)).To(Succeed()) })
		writesY := capture(s2, func() { Expect(d.Fill(device.Main, s2, y, 2)).To(Succeed()) })
		readsBoth := capture(s3, func() {
			Expect(d.Copy(device.Main, s3, out.Slice(0, 256), y.Slice(0, 256))).To(Succeed())
			Expect(d.Copy(device.Main, s3, out.Slice(256, 256), x.Slice(0, 256))).To(Succeed())
		})
		// Streams are kept in a map: repeat, so that an answer that depended on its order would
		// show.
		for range 20 {
			Expect(d.Launch(device.Main, writesY, s2)).To(Succeed())
			Expect(d.Launch(device.Main, writesX, s1)).To(Succeed(), "x and y share no byte")
			e := expectRefused(d.Launch(device.Main, readsBoth, s3), "Launch")
			Expect(e.Detail).To(ContainSubstring(fmt.Sprintf("%v, launched on %v", writesY, s2)), "the earlier of the two launches it races with")
			Expect(d.SyncStream(device.Main, s2)).To(Succeed())
			e = expectRefused(d.Launch(device.Main, readsBoth, s3), "Launch")
			Expect(e.Detail).To(ContainSubstring(fmt.Sprintf("%v, launched on %v", writesX, s1)), "s2's launch has landed")
			Expect(d.SyncStream(device.Main, s1)).To(Succeed())
			Expect(d.Launch(device.Main, readsBoth, s3)).To(Succeed(), "both have landed")
			Expect(d.SyncDevice(device.Main)).To(Succeed())
		}
	})
})

var _ = Describe("the slot log", func() {
	It("names exactly the slots whose holdings changed: provision, re-base, release, free, an arena commit, retirement", func() {
		d := guarded(openSim("cann"), guard.Program)
		keys := []string{"a", "b", "kv", "scratch"}
		type held struct {
			slot runtime.Slot
			ptr  device.Ptr
			ok   bool
		}
		state := func() map[string]held {
			out := map[string]held{}
			for _, k := range keys {
				s, p, ok := d.Holds(k)
				out[k] = held{s, p, ok}
			}
			return out
		}
		steps := []struct {
			what    string
			changes []string
			do      func()
		}{
			{"first allocation", []string{"a"}, func() {
				_, _, err := d.Provision(device.Main, runtime.Plain, "a", device.Ptr{}, 1024)
				Expect(err).NotTo(HaveOccurred())
			}},
			{"growth in place", nil, func() {
				_, p, _ := d.Holds("a")
				_, _, err := d.Provision(device.Main, runtime.Plain, "a", p, 512)
				Expect(err).NotTo(HaveOccurred())
			}},
			{"re-base", []string{"a"}, func() {
				_, p, _ := d.Holds("a")
				_, _, err := d.Provision(device.Main, runtime.Plain, "a", p, 8192)
				Expect(err).NotTo(HaveOccurred())
			}},
			{"another slot", []string{"b"}, func() {
				_, _, err := d.Provision(device.Main, runtime.Retained, "b", device.Ptr{}, 512)
				Expect(err).NotTo(HaveOccurred())
			}},
			{"a read of the slots", nil, func() { d.Holds("a") }},
			{"release", []string{"b"}, func() {
				_, p, _ := d.Holds("b")
				Expect(d.Release(device.Main, runtime.Retained, "b", p)).To(Succeed())
			}},
			{"arena commit", []string{"kv", "scratch"}, func() {
				_, err := d.CommitBank(device.Main, []runtime.Region{{Key: "kv", Bytes: 4096}, {Key: "scratch", Bytes: 1024}})
				Expect(err).NotTo(HaveOccurred())
			}},
			{"arena commit that re-bases one region", []string{"kv"}, func() {
				_, err := d.CommitBank(device.Main, []runtime.Region{{Key: "kv", Bytes: 65536}, {Key: "scratch", Bytes: 1024}})
				Expect(err).NotTo(HaveOccurred())
			}},
			{"free of a slot's buffer through the device", []string{"a"}, func() {
				_, p, _ := d.Holds("a")
				Expect(d.Free(device.Main, p)).To(Succeed())
			}},
			{"retirement", []string{"kv", "scratch"}, func() { Expect(d.Retire(device.Main)).To(Succeed()) }},
		}
		for _, st := range steps {
			before, v := state(), d.SlotsVersion()
			st.do()
			after := state()
			var changed []string
			for _, k := range keys {
				if after[k] != before[k] {
					changed = append(changed, k)
				}
			}
			Expect(changed).To(ConsistOf(st.changes), st.what)
			logged, now, ok := d.SlotsChangedSince(v)
			Expect(ok).To(BeTrue(), st.what)
			Expect(now).To(Equal(d.SlotsVersion()))
			Expect(slices.Compact(slices.Sorted(slices.Values(logged)))).To(Equal(slices.Compact(slices.Sorted(slices.Values(changed)))), st.what)
			Expect(now == v).To(Equal(len(changed) == 0), "%s: the version moves exactly when a slot changed", st.what)
		}
	})

	It("keeps the last changes only: a caller further behind is told to read every slot", func() {
		d := guarded(openSim("cann"), guard.Program)
		start := d.SlotsVersion()
		var p device.Ptr
		for i := range 3000 { // two changes each, a re-base: beyond what the log keeps
			var err error
			p, _, err = d.Provision(device.Main, runtime.Plain, "a", p, int64(512*(i+1)))
			Expect(err).NotTo(HaveOccurred())
		}
		_, now, ok := d.SlotsChangedSince(start)
		Expect(ok).To(BeFalse())
		Expect(now).To(Equal(start + 5999)) // the first provision allocates: one change
		recent, _, ok := d.SlotsChangedSince(now - 10)
		Expect(ok).To(BeTrue())
		Expect(recent).To(HaveLen(10))
		_, _, ok = d.SlotsChangedSince(now + 1)
		Expect(ok).To(BeFalse(), "not a version the Device gave")
	})
})
