package sim_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

var _ = Describe("the caching allocator", func() {
	var d *sim.Device
	BeforeEach(func() { d = onProfile("cann") })

	It("hands out addresses far above zero, in 512-byte units", func() {
		a := malloc(d, 1)
		b := malloc(d, 1)
		c := malloc(d, 513)
		e := malloc(d, 512)
		Expect(a.Addr).To(BeNumerically(">=", uint64(0x100000000)))
		Expect(a.Addr % sim.Granularity).To(BeZero())
		Expect(a.Bytes).To(Equal(int64(1)), "the Ptr keeps the requested length")
		Expect(b.Addr - a.Addr).To(Equal(uint64(512)))
		Expect(c.Addr - b.Addr).To(Equal(uint64(512)))
		Expect(e.Addr-c.Addr).To(Equal(uint64(1024)), "513 bytes take two units")
	})

	It("returns the old address for free + malloc of the same rounded size", func() {
		p := malloc(d, 64*KiB)
		malloc(d, 4*KiB) // a neighbour, so reuse is not just the bump pointer rolling back
		Expect(d.Free(main, p)).To(Succeed())
		q := malloc(d, 64*KiB-100) // rounds to the same 64 KiB block
		Expect(q.Addr).To(Equal(p.Addr))
	})

	It("reuses freed blocks last-in first-out", func() {
		a := malloc(d, 4*KiB)
		b := malloc(d, 4*KiB)
		Expect(d.Free(main, a)).To(Succeed())
		Expect(d.Free(main, b)).To(Succeed())
		Expect(malloc(d, 4*KiB).Addr).To(Equal(b.Addr))
		Expect(malloc(d, 4*KiB).Addr).To(Equal(a.Addr))
	})

	It("puts a bystander allocated after a re-base on the address the old buffer had", func() {
		a := malloc(d, 64*KiB)
		Expect(d.Free(main, a)).To(Succeed())
		grown := malloc(d, 128*KiB)
		Expect(grown.Addr).NotTo(Equal(a.Addr), "a bigger block comes from fresh space")
		bystander := malloc(d, 64*KiB)
		Expect(bystander.Addr).To(Equal(a.Addr))
	})

	It("keeps the bytes of freed memory, as a caching allocator does", func() {
		p := malloc(d, 4*KiB)
		write(d, p, filled(p.Bytes, 0x5a))
		Expect(d.Free(main, p)).To(Succeed())
		q := malloc(d, 4*KiB)
		Expect(q.Addr).To(Equal(p.Addr))
		Expect(read(d, q)).To(Equal(filled(q.Bytes, 0x5a)))
	})

	It("fails out-of-memory with the profile's code when nothing fits", func() {
		for _, tc := range []struct {
			profile string
			code    int
		}{{"cann", 207001}, {"cuda", 2}} {
			d := openDevice(sim.Options{Profile: tc.profile, Memory: 1 * MiB})
			whole := malloc(d, 1*MiB)
			_, err := d.Malloc(main, 1)
			e := expectError(err, tc.code, device.ClassOutOfMemory)
			Expect(e.Op).To(Equal("Malloc"))
			_, err = d.Malloc(main, 2*MiB)
			expectError(err, tc.code, device.ClassOutOfMemory)

			// A cached block larger than the request is handed out whole when fresh space is gone.
			Expect(d.Free(main, whole)).To(Succeed())
			small := malloc(d, 512)
			Expect(small.Addr).To(Equal(whole.Addr))
			_, err = d.Malloc(main, 512)
			expectError(err, tc.code, device.ClassOutOfMemory)
		}
	})

	It("rejects empty allocations and frees of what is not a live allocation", func() {
		_, err := d.Malloc(main, 0)
		expectError(err, 107000, device.ClassInvalidValue)
		_, err = d.Malloc(main, -1)
		expectError(err, 107000, device.ClassInvalidValue)

		p := malloc(d, 4*KiB)
		expectError(d.Free(main, p.Slice(512, 512)), 107000, device.ClassInvalidValue)
		expectError(d.Free(main, p.Slice(0, 512)), 107000, device.ClassInvalidValue)
		Expect(d.Free(main, p)).To(Succeed())
		e := expectError(d.Free(main, p), 107000, device.ClassInvalidValue)
		Expect(e.Op).To(Equal("Free"))
		expectError(d.Free(main, device.Ptr{Addr: 0x1234, Bytes: 8}), 107000, device.ClassInvalidValue)
	})

	It("fails the n-th next Malloc on request, leaving the allocator untouched", func() {
		d.FailMalloc(2)
		first := malloc(d, 4*KiB)
		_, err := d.Malloc(main, 4*KiB)
		e := expectError(err, 207001, device.ClassOutOfMemory)
		Expect(e.Detail).To(ContainSubstring("FailMalloc"))
		third := malloc(d, 4*KiB)
		Expect(third.Addr-first.Addr).To(Equal(uint64(4*KiB)), "the failed call carved nothing")
		Expect(d.Counters().Mallocs).To(Equal(int64(2)))

		d.FailMalloc(1)
		d.FailMalloc(0) // cancels
		malloc(d, 4*KiB)
	})
})

var _ = Describe("sparse backing memory", func() {
	It("costs what is touched, not what the device has", func() {
		d := openDevice(sim.Options{}) // 16 GiB by default
		Expect(d.Describe()).To(ContainSubstring("16GiB"))
		big := malloc(d, 8*GiB)
		s := newStream(d)
		Expect(d.Fill(main, s, big, 0)).To(Succeed(), "zeros on untouched pages materialise nothing")
		Expect(d.ResidentBytes()).To(BeZero())

		chunk := filled(1*MiB, 0xee)
		for _, off := range []int64{0, 3 * GiB, 8*GiB - 1*MiB} {
			write(d, big.Slice(off, 1*MiB), chunk)
		}
		Expect(d.ResidentBytes()).To(BeNumerically(">=", 3*MiB))
		Expect(d.ResidentBytes()).To(BeNumerically("<=", 3*MiB+2*sim.PageSize))
		Expect(read(d, big.Slice(3*GiB, 1*MiB))).To(Equal(chunk))
		Expect(read(d, big.Slice(5*GiB, 64*KiB))).To(Equal(make([]byte, 64*KiB)), "untouched memory reads as zero")
	})

	It("materialises nothing for zeros written or copied from untouched memory", func() {
		d := openDevice(sim.Options{})
		a, b := malloc(d, 64*MiB), malloc(d, 64*MiB)
		write(d, a, make([]byte, a.Bytes)) // what a zero-initialised buffer costs
		Expect(d.Copy(main, newStream(d), b, a)).To(Succeed())
		Expect(d.ResidentBytes()).To(BeZero())
	})

	It("materialises a page on the first non-zero byte, wherever it falls", func() {
		d := openDevice(sim.Options{})
		p := malloc(d, 1*MiB)
		write(d, p.Slice(sim.PageSize-1, 2), []byte{1, 2}) // straddles two pages
		Expect(d.ResidentBytes()).To(Equal(int64(2 * sim.PageSize)))
		Expect(read(d, p.Slice(sim.PageSize-2, 4))).To(Equal([]byte{0, 1, 2, 0}))
	})
})
