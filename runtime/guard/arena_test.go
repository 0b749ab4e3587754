package guard_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/replaycheck/replaycheck/runtime"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

var _ = Describe("Arena bank", func() {
	var (
		f    *fake
		d    *guard.Device
		bank []runtime.Region
	)

	// commit commits regions and expects success.
	commit := func(regions ...runtime.Region) []device.Ptr {
		GinkgoHelper()
		ptrs, err := d.CommitBank(device.Main, regions)
		Expect(err).NotTo(HaveOccurred())
		Expect(ptrs).To(HaveLen(len(regions)))
		return ptrs
	}

	BeforeEach(func() {
		f = newFake()
		d = guarded(f, guard.Kernel)
		bank = []runtime.Region{{Key: "kv", Bytes: 4096}, {Key: "scratch", Bytes: 1024}}
	})

	Context("in kernel mode", func() {
		It("takes the first commit of empty regions", func() {
			ptrs := commit(bank...)
			for i, p := range ptrs {
				Expect(p.Bytes).To(Equal(bank[i].Bytes))
				slot, held, ok := d.Holds(bank[i].Key)
				Expect(ok).To(BeTrue())
				Expect(slot).To(Equal(runtime.Arena))
				Expect(held).To(Equal(p))
			}
			Expect(f.Counters().Mallocs).To(Equal(int64(2)))
		})

		It("moves no base and calls no allocator on repeated commits", func() {
			first := commit(bank...)
			before := snapshot(f, d, "kv", "scratch")
			for range 5 {
				Expect(commit(bank...)).To(Equal(first))
			}
			Expect(snapshot(f, d, "kv", "scratch")).To(Equal(before))
		})

		It("serves exact and smaller requests in place", func() {
			first := commit(bank...)
			before := snapshot(f, d, "kv", "scratch")
			Expect(commit(runtime.Region{Key: "kv", Bytes: 4096}, runtime.Region{Key: "scratch", Bytes: 1})).To(Equal(first))
			p, served, err := d.Provision(device.Main, runtime.Arena, "kv", first[0], 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(served).To(Equal(runtime.InPlace))
			Expect(p).To(Equal(first[0]), "address and size unchanged")
			Expect(snapshot(f, d, "kv", "scratch")).To(Equal(before))
		})

		It("refuses a request one byte over capacity and changes nothing", func() {
			ptrs := commit(bank...)
			write(d, ptrs[0], 0x5A)
			before := snapshot(f, d, "kv", "scratch")

			got, err := d.CommitBank(device.Main, []runtime.Region{{Key: "kv", Bytes: 4097}, {Key: "scratch", Bytes: 1024}})
			e := expectRefused(err, "CommitBank")
			Expect(got).To(BeNil())
			Expect(e.Detail).To(And(ContainSubstring(`"kv"`), ContainSubstring("4096"), ContainSubstring("4097")))
			Expect(snapshot(f, d, "kv", "scratch")).To(Equal(before))
			Expect(read(d, ptrs[0])).To(Equal(filled(ptrs[0], 0x5A)))

			_, served, err := d.Provision(device.Main, runtime.Arena, "kv", ptrs[0], 4097)
			expectRefused(err, "Provision")
			Expect(served).To(Equal(runtime.NotServed))
			Expect(snapshot(f, d, "kv", "scratch")).To(Equal(before))
		})

		It("keeps the peers committed when a later region is refused", func() {
			ptrs := commit(bank...)
			before := snapshot(f, d, "kv", "scratch", "new")

			_, err := d.CommitBank(device.Main, []runtime.Region{
				{Key: "kv", Bytes: 4096}, {Key: "new", Bytes: 512}, {Key: "scratch", Bytes: 1025},
			})
			e := expectRefused(err, "CommitBank")
			Expect(e.Detail).To(ContainSubstring(`"scratch"`))
			Expect(snapshot(f, d, "kv", "scratch", "new")).To(Equal(before), "nothing allocated, nothing freed")
			_, _, ok := d.Holds("new")
			Expect(ok).To(BeFalse(), "a refused commit publishes no region")
			Expect(commit(bank...)).To(Equal(ptrs), "the peers are committed as they were")
		})

		It("refuses to release a committed region, by Release or by Free", func() {
			ptrs := commit(bank...)
			before := snapshot(f, d, "kv", "scratch")
			expectRefused(d.Release(device.Main, runtime.Arena, "kv", ptrs[0]), "Release")
			expectRefused(d.Free(device.Main, ptrs[0]), "Free")
			Expect(snapshot(f, d, "kv", "scratch")).To(Equal(before))
		})

		It("permits a zero request for an uncommitted region and allocates nothing", func() {
			ptrs := commit(runtime.Region{Key: "later", Bytes: 0})
			Expect(ptrs[0].IsZero()).To(BeTrue())
			_, _, ok := d.Holds("later")
			Expect(ok).To(BeFalse())
			Expect(f.MallocCalls()).To(BeZero())

			p, served, err := d.Provision(device.Main, runtime.Arena, "later", device.Ptr{}, 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.IsZero()).To(BeTrue())
			Expect(served).To(Equal(runtime.InPlace))
			Expect(f.MallocCalls()).To(BeZero())
		})

		It("rolls the whole bank back when an allocation fails on the first commit", func() {
			f.FailMalloc(2)
			_, err := d.CommitBank(device.Main, append(bank, runtime.Region{Key: "third", Bytes: 512}))
			expectClass(err, device.ClassOutOfMemory, "Malloc")
			Expect(err.Error()).To(ContainSubstring("rolled back 1 allocation"))
			for _, k := range []string{"kv", "scratch", "third"} {
				_, _, ok := d.Holds(k)
				Expect(ok).To(BeFalse(), "region %s published", k)
			}
			c := f.Counters()
			Expect(c.LiveAllocs).To(BeZero(), "every allocation of the commit is freed")
			Expect(c.Frees).To(Equal(int64(1)))

			// Nothing was poisoned: the same commit goes through once the allocator recovers.
			commit(bank...)
		})

		It("rolls back a later commit and leaves the committed regions as they were", func() {
			ptrs := commit(bank...)
			live := f.Counters().LiveAllocs
			f.FailMalloc(2)
			_, err := d.CommitBank(device.Main, []runtime.Region{
				{Key: "kv", Bytes: 4096}, {Key: "a", Bytes: 512}, {Key: "b", Bytes: 512},
			})
			expectClass(err, device.ClassOutOfMemory, "Malloc")
			Expect(f.Counters().LiveAllocs).To(Equal(live))
			Expect(commit(bank...)).To(Equal(ptrs))
		})

		It("rejects malformed banks without side effect", func() {
			_, err := d.CommitBank(device.Main, []runtime.Region{{Key: "kv", Bytes: 1}, {Key: "kv", Bytes: 2}})
			expectClass(err, device.ClassInvalidValue, "CommitBank")
			_, err = d.CommitBank(device.Main, []runtime.Region{{Key: "kv", Bytes: -1}})
			expectClass(err, device.ClassInvalidValue, "CommitBank")
			_, err = d.CommitBank(device.Main, []runtime.Region{{Key: "", Bytes: 1}})
			expectClass(err, device.ClassInvalidValue, "CommitBank")
			Expect(f.MallocCalls()).To(BeZero())
		})
	})

	Context("in program mode", func() {
		BeforeEach(func() { d = guarded(f, guard.Program) })

		It("re-bases a region that grows, and frees the old block after the bank is published", func() {
			ptrs := commit(bank...)
			grown := commit(runtime.Region{Key: "kv", Bytes: 8192}, runtime.Region{Key: "scratch", Bytes: 1024})
			Expect(grown[0].Addr).NotTo(Equal(ptrs[0].Addr), "the base moved")
			Expect(grown[0].Bytes).To(Equal(int64(8192)))
			Expect(grown[1]).To(Equal(ptrs[1]))
			c := f.Counters()
			Expect(c.Frees).To(Equal(int64(1)))
			Expect(c.LiveAllocs).To(Equal(int64(2)))

			p, served, err := d.Provision(device.Main, runtime.Arena, "kv", grown[0], 10000)
			Expect(err).NotTo(HaveOccurred())
			Expect(served).To(Equal(runtime.Rebased))
			Expect(p.Bytes).To(Equal(int64(10000)))
		})

		It("releases a committed region as asked", func() {
			ptrs := commit(bank...)
			Expect(d.Release(device.Main, runtime.Arena, "kv", ptrs[0])).To(Succeed())
			_, _, ok := d.Holds("kv")
			Expect(ok).To(BeFalse())
			Expect(f.Counters().LiveAllocs).To(Equal(int64(1)))
		})

		It("rolls the whole bank back when an allocation fails, growth included", func() {
			ptrs := commit(bank...)
			before := snapshot(f, d, "kv", "scratch")
			f.FailMalloc(2)
			_, err := d.CommitBank(device.Main, []runtime.Region{
				{Key: "kv", Bytes: 8192}, {Key: "fresh", Bytes: 512}, {Key: "scratch", Bytes: 1024},
			})
			expectClass(err, device.ClassOutOfMemory, "Malloc")
			after := snapshot(f, d, "kv", "scratch")
			Expect(after.slots).To(Equal(before.slots), "the growing region keeps its old block")
			Expect(after.counters.LiveAllocs).To(Equal(before.counters.LiveAllocs))
			_, _, ok := d.Holds("fresh")
			Expect(ok).To(BeFalse())
			Expect(commit(bank...)).To(Equal(ptrs))
		})
	})
})
