package guard_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/replaycheck/replaycheck/runtime"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

var _ = Describe("Retained buffer", func() {
	var f *fake

	provision := func(d *guard.Device, slot runtime.Slot, key string, cur device.Ptr, n int64, want runtime.Served) device.Ptr {
		GinkgoHelper()
		p, served, err := d.Provision(device.Main, slot, key, cur, n)
		Expect(err).NotTo(HaveOccurred())
		Expect(served).To(Equal(want))
		return p
	}

	BeforeEach(func() { f = newFake() })

	Context("in kernel mode", func() {
		var d *guard.Device
		BeforeEach(func() { d = guarded(f, guard.Kernel) })

		It("allocates an empty slot once, then refuses to grow it before anything is freed", func() {
			w := provision(d, runtime.Retained, "workspace", device.Ptr{}, 1024, runtime.Allocated)
			Expect(w.Bytes).To(Equal(int64(1024)))
			before := snapshot(f, d, "workspace")

			p, served, err := d.Provision(device.Main, runtime.Retained, "workspace", w, 2048)
			e := expectRefused(err, "Provision")
			Expect(served).To(Equal(runtime.NotServed))
			Expect(p).To(Equal(w), "the caller keeps its buffer")
			Expect(e.Detail).To(And(ContainSubstring(`retained slot "workspace"`), ContainSubstring("1024"), ContainSubstring("2048")))
			Expect(snapshot(f, d, "workspace")).To(Equal(before), "no free, no malloc")
		})

		It("leaves the buffer usable at the same address with its contents after a refusal", func() {
			w := provision(d, runtime.Retained, "workspace", device.Ptr{}, 1024, runtime.Allocated)
			write(d, w, 0x3C)
			_, _, err := d.Provision(device.Main, runtime.Retained, "workspace", w, 4096)
			expectRefused(err, "Provision")

			_, held, _ := d.Holds("workspace")
			Expect(held).To(Equal(w))
			Expect(read(d, w)).To(Equal(filled(w, 0x3C)))
			s := stream(d)
			Expect(d.Fill(device.Main, s, w, 0x7E)).To(Succeed())
			Expect(read(d, w)).To(Equal(filled(w, 0x7E)))
		})

		It("holds one address across repeated runs", func() {
			w := provision(d, runtime.Retained, "workspace", device.Ptr{}, 1024, runtime.Allocated)
			for run := range 10 {
				// Each run asks for what it needs this time, never more than the first run took.
				got := provision(d, runtime.Retained, "workspace", w, int64(1024-run*100), runtime.InPlace)
				Expect(got).To(Equal(w))
			}
			Expect(f.MallocCalls()).To(Equal(1))
			Expect(f.Counters().Frees).To(BeZero())
		})

		It("refuses to release or free the retained buffer", func() {
			w := provision(d, runtime.Retained, "workspace", device.Ptr{}, 1024, runtime.Allocated)
			before := snapshot(f, d, "workspace")
			expectRefused(d.Release(device.Main, runtime.Retained, "workspace", w), "Release")
			expectRefused(d.Free(device.Main, w), "Free")
			Expect(snapshot(f, d, "workspace")).To(Equal(before))
		})

		It("re-provisions a plain slot as program mode does", func() {
			p := provision(d, runtime.Plain, "x", device.Ptr{}, 1024, runtime.Allocated)
			q := provision(d, runtime.Plain, "x", p, 2048, runtime.Rebased)
			Expect(q.Bytes).To(Equal(int64(2048)))
			Expect(f.Counters().Frees).To(Equal(int64(1)))
			Expect(d.Release(device.Main, runtime.Plain, "x", q)).To(Succeed())
			Expect(f.Counters().LiveAllocs).To(BeZero())
		})

		It("rejects a caller's stale view of a slot without side effect", func() {
			w := provision(d, runtime.Retained, "workspace", device.Ptr{}, 1024, runtime.Allocated)
			before := snapshot(f, d, "workspace")
			_, _, err := d.Provision(device.Main, runtime.Retained, "workspace", device.Ptr{}, 512)
			expectClass(err, device.ClassInvalidValue, "Provision")
			_, _, err = d.Provision(device.Main, runtime.Plain, "workspace", w, 512)
			expectClass(err, device.ClassInvalidValue, "Provision")
			_, _, err = d.Provision(device.Main, runtime.Retained, "workspace", w, -1)
			expectClass(err, device.ClassInvalidValue, "Provision")
			Expect(snapshot(f, d, "workspace")).To(Equal(before))
		})

		It("frees every slot on Retire and then refuses to provision", func() {
			provision(d, runtime.Retained, "workspace", device.Ptr{}, 1024, runtime.Allocated)
			_, err := d.CommitBank(device.Main, []runtime.Region{{Key: "kv", Bytes: 512}})
			Expect(err).NotTo(HaveOccurred())
			Expect(d.Retire(device.Main)).To(Succeed())
			Expect(f.Counters().LiveAllocs).To(BeZero())
			_, _, err = d.Provision(device.Main, runtime.Retained, "workspace", device.Ptr{}, 1024)
			expectClass(err, device.ClassInvalidState, "Provision")
			Expect(d.Retire(device.Main)).To(Succeed())
		})
	})

	Context("in program mode", func() {
		It("still grows, by free then malloc", func() {
			d := guarded(f, guard.Program)
			w := provision(d, runtime.Retained, "workspace", device.Ptr{}, 1024, runtime.Allocated)
			g := provision(d, runtime.Retained, "workspace", w, 4096, runtime.Rebased)
			Expect(g.Bytes).To(Equal(int64(4096)))
			c := f.Counters()
			Expect(c.Frees).To(Equal(int64(1)))
			Expect(c.LiveAllocs).To(Equal(int64(1)))
			Expect(d.Release(device.Main, runtime.Retained, "workspace", g)).To(Succeed())
			Expect(f.Counters().LiveAllocs).To(BeZero())
		})

		It("empties the slot when its buffer is freed directly", func() {
			d := guarded(f, guard.Program)
			w := provision(d, runtime.Retained, "workspace", device.Ptr{}, 1024, runtime.Allocated)
			Expect(d.Free(device.Main, w)).To(Succeed())
			_, _, ok := d.Holds("workspace")
			Expect(ok).To(BeFalse())
			provision(d, runtime.Retained, "workspace", device.Ptr{}, 1024, runtime.Allocated)
		})

		It("reports a re-base whose allocation failed, with the slot left empty", func() {
			d := guarded(f, guard.Program)
			w := provision(d, runtime.Retained, "workspace", device.Ptr{}, 1024, runtime.Allocated)
			f.FailMalloc(1)
			_, served, err := d.Provision(device.Main, runtime.Retained, "workspace", w, 4096)
			expectClass(err, device.ClassOutOfMemory, "Malloc")
			Expect(served).To(Equal(runtime.NotServed))
			Expect(err.Error()).To(ContainSubstring("the slot is empty"))
			_, _, ok := d.Holds("workspace")
			Expect(ok).To(BeFalse())
		})
	})
})
