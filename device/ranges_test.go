package device_test

import (
	"math/rand/v2"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
)

var _ = Describe("Ranges", func() {
	It("answers Overlaps, Contains and Overlapping as asking every range would: nested, adjacent, equal and disjoint ranges", func() {
		rng := rand.New(rand.NewPCG(11, 17))
		at := func(span uint64) device.Ptr {
			return device.Ptr{Addr: 1<<40 + rng.Uint64N(span), Bytes: rng.Int64N(512) + 1}
		}
		overlapping, containing := 0, 0
		for trial := range 400 {
			span := uint64(1024) << (trial % 8)
			set := make([]device.Ptr, rng.IntN(50))
			for i := range set {
				set[i] = at(span)
			}
			x := device.NewRanges(set)
			for range 100 {
				p := at(span + 1024)
				if len(set) > 0 && rng.IntN(3) == 0 {
					// Inside, at the edges of, or just past a range of the set.
					q := set[rng.IntN(len(set))]
					p.Addr = q.Addr + uint64(rng.Int64N(q.Bytes+1))
					p.Bytes = int64(q.End()-p.Addr) + rng.Int64N(3) - 1
					p.Bytes = max(p.Bytes, 1)
				}
				over := slices.ContainsFunc(set, p.Overlaps)
				in := slices.ContainsFunc(set, func(q device.Ptr) bool { return q.Contains(p) })
				Expect(x.Overlaps(p)).To(Equal(over), "trial %d: %v over %v", trial, p, set)
				Expect(x.Contains(p)).To(Equal(in), "trial %d: %v in %v", trial, p, set)
				var want, got []int
				for i, q := range set {
					if q.Overlaps(p) {
						want = append(want, i)
					}
				}
				x.Overlapping(p, func(i int) { got = append(got, i) })
				slices.Sort(got)
				Expect(got).To(Equal(want), "trial %d: the ranges of %v over %v", trial, p, set)
				if over {
					overlapping++
				}
				if in {
					containing++
				}
			}
		}
		// Both answers occur often, for both questions.
		Expect(overlapping).To(And(BeNumerically(">", 5000), BeNumerically("<", 35000)))
		Expect(containing).To(And(BeNumerically(">", 3000), BeNumerically("<", 35000)))
	})

	It("holds nothing when empty", func() {
		x := device.NewRanges(nil)
		Expect(x.Overlaps(device.Ptr{Addr: 1, Bytes: 1})).To(BeFalse())
		Expect(x.Contains(device.Ptr{Addr: 1, Bytes: 1})).To(BeFalse())
		x.Overlapping(device.Ptr{Addr: 1, Bytes: 1}, func(int) { Fail("nothing to list") })
	})
})
