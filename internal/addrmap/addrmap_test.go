package addrmap_test

import (
	"maps"
	"math/rand/v2"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/addrmap"
)

var _ = Describe("Map", func() {
	// Each pattern of keys an allocator produces: ascending (a bump allocator), descending (blocks
	// reused last freed first), and scattered; each run long enough to split chunks many times and
	// empty them again.
	DescribeTable("agrees with a plain map and a sorted list of its keys after every operation",
		func(key func(rng *rand.Rand, i int) uint64) {
			rng := rand.New(rand.NewPCG(3, 5))
			var m addrmap.Map[int]
			ref := map[uint64]int{}
			check := func() {
				GinkgoHelper()
				keys := slices.Sorted(maps.Keys(ref))
				Expect(m.Len()).To(Equal(len(ref)))
				var got []uint64
				for k, v := range m.All() {
					got = append(got, k)
					Expect(v).To(Equal(ref[k]))
				}
				Expect(got).To(Equal(keys))
				for range 50 {
					q := rng.Uint64N(1 << 22)
					if len(keys) > 0 && rng.IntN(2) == 0 {
						q = keys[rng.IntN(len(keys))] + uint64(rng.IntN(3)) - 1 // at, just below, just above a key
					}
					i, found := slices.BinarySearch(keys, q)
					if !found {
						i--
					}
					at, v, ok := m.Floor(q)
					Expect(ok).To(Equal(i >= 0), "Floor(%d)", q)
					if ok {
						Expect(at).To(Equal(keys[i]), "Floor(%d)", q)
						Expect(v).To(Equal(ref[keys[i]]))
					}
					// From(q): the keys at or above q, in order; the first ten, or all of them.
					first, _ := slices.BinarySearch(keys, q)
					want := slices.Clone(keys[first:min(len(keys), first+10)])
					if len(want) == 0 {
						want = nil
					}
					var from []uint64
					for k, v := range m.From(q) {
						Expect(v).To(Equal(ref[k]))
						if from = append(from, k); len(from) == 10 {
							break
						}
					}
					Expect(from).To(Equal(want), "From(%d)", q)
				}
				if len(keys) > 0 {
					Expect(slices.Collect(maps.Keys(maps.Collect(m.From(keys[0]))))).To(HaveLen(len(keys)), "From the first key yields every entry")
				}
			}
			for round := range 6 {
				// Fill, then empty most of it again, in an order of its own each round.
				for i := range 3000 {
					k := key(rng, round*3000+i)
					m.Put(k, i)
					ref[k] = i
				}
				check()
				keys := slices.Collect(maps.Keys(ref))
				rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
				for _, k := range keys[:len(keys)*9/10] {
					Expect(m.Delete(k)).To(BeTrue())
					delete(ref, k)
				}
				Expect(m.Delete(1<<40+1)).To(BeFalse(), "a key never put")
				check()
			}
			for k := range maps.Clone(ref) {
				Expect(m.Delete(k)).To(BeTrue())
				delete(ref, k)
			}
			check()
			_, _, ok := m.Floor(1 << 62)
			Expect(ok).To(BeFalse(), "an empty map has no floor")
		},
		Entry("ascending", func(_ *rand.Rand, i int) uint64 { return uint64(1<<20 + i*512) }),
		Entry("descending", func(_ *rand.Rand, i int) uint64 { return uint64(1<<21 - i*64) }),
		Entry("scattered, with repeats", func(rng *rand.Rand, _ int) uint64 { return rng.Uint64N(1 << 22) }),
	)

	It("replaces the value at a key already there", func() {
		var m addrmap.Map[string]
		m.Put(7, "a")
		m.Put(7, "b")
		Expect(m.Len()).To(Equal(1))
		at, v, ok := m.Floor(100)
		Expect([]any{at, v, ok}).To(Equal([]any{uint64(7), "b", true}))
	})
})
