package sim_test

import (
	"encoding/binary"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

func lanes(vs ...uint32) []byte {
	out := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(out[4*i:], v)
	}
	return out
}

var _ = Describe("streams", func() {
	var (
		d *sim.Device
		s device.Stream
	)
	BeforeEach(func() {
		d = onProfile("cann")
		s = newStream(d)
	})

	It("runs work in enqueue order", func() {
		x := malloc(d, 4*KiB)
		y := malloc(d, 4*KiB)
		Expect(d.Fill(main, s, x, 1)).To(Succeed())
		Expect(d.Copy(main, s, y, x)).To(Succeed())
		Expect(d.Fill(main, s, x, 2)).To(Succeed())
		Expect(read(d, y)).To(Equal(filled(y.Bytes, 1)))
		Expect(read(d, x)).To(Equal(filled(x.Bytes, 2)))
	})

	It("fills a sub-range only", func() {
		x := malloc(d, 2*KiB)
		Expect(d.Fill(main, s, x.Slice(512, 512), 9)).To(Succeed())
		got := read(d, x)
		Expect(got[511]).To(BeZero())
		Expect(got[512:1024]).To(Equal(filled(512, 9)))
		Expect(got[1024]).To(BeZero())
	})

	It("copies the smaller of the two lengths", func() {
		src := malloc(d, 1*KiB)
		dst := malloc(d, 2*KiB)
		write(d, src, filled(src.Bytes, 7))
		Expect(d.Copy(main, s, dst, src)).To(Succeed())
		got := read(d, dst)
		Expect(got[:1*KiB]).To(Equal(filled(1*KiB, 7)))
		Expect(got[1*KiB:]).To(Equal(make([]byte, 1*KiB)))
	})

	It("copies overlapping ranges as memmove does, in both directions and across pages", func() {
		buf := malloc(d, 3*sim.PageSize)
		pattern := make([]byte, buf.Bytes)
		for i := range pattern {
			pattern[i] = byte(i % 251)
		}
		n := int64(2*sim.PageSize + 100)

		write(d, buf, pattern)
		Expect(d.Copy(main, s, buf.Slice(10, n), buf.Slice(0, n))).To(Succeed()) // destination above source
		Expect(read(d, buf)[10 : 10+n]).To(Equal(pattern[:n]))

		write(d, buf, pattern)
		Expect(d.Copy(main, s, buf.Slice(0, n), buf.Slice(10, n))).To(Succeed()) // destination below source
		Expect(read(d, buf)[:n]).To(Equal(pattern[10 : 10+n]))
	})

	It("runs axpy over little-endian uint32 lanes, wrapping", func() {
		x := malloc(d, 12)
		y := malloc(d, 12)
		write(d, x, lanes(0xffffffff, 2, 0x80000000))
		write(d, y, lanes(5, 0xffffffff, 1))
		Expect(d.Axpy(main, s, y, x, 3)).To(Succeed())
		// 3*0xffffffff+5 = 0x3_00000002; 3*2+0xffffffff = 0x1_00000005; 3*0x80000000+1 = 0x1_80000001
		Expect(read(d, y)).To(Equal(lanes(2, 5, 0x80000001)))
		Expect(read(d, x)).To(Equal(lanes(0xffffffff, 2, 0x80000000)), "x is only read")
	})

	It("refuses axpy on mismatched or unaligned sizes", func() {
		x := malloc(d, 16)
		y := malloc(d, 16)
		expectError(d.Axpy(main, s, y.Slice(0, 8), x.Slice(0, 12), 1), 107000, device.ClassInvalidValue)
		expectError(d.Axpy(main, s, y.Slice(0, 6), x.Slice(0, 6), 1), 107000, device.ClassInvalidValue)
	})

	It("validates at enqueue that every range lies inside one live allocation", func() {
		a := malloc(d, 1*KiB)
		b := malloc(d, 1*KiB) // adjacent to a
		Expect(b.Addr).To(Equal(a.End()))
		spanning := device.Ptr{Addr: a.Addr + 512, Bytes: 1 * KiB}
		e := expectError(d.Fill(main, s, spanning, 1), 107000, device.ClassInvalidValue)
		Expect(e.Op).To(Equal("Fill"))
		expectError(d.Fill(main, s, a.Slice(0, 0), 1), 107000, device.ClassInvalidValue)
		expectError(d.Copy(main, s, a, device.Ptr{Addr: 0x10, Bytes: 4}), 107000, device.ClassInvalidValue)
		Expect(d.Free(main, b)).To(Succeed())
		expectError(d.Fill(main, s, b, 1), 107000, device.ClassInvalidValue)
		expectError(d.Record(main, newEvent(d), device.Stream(999)), 107000, device.ClassInvalidValue)
	})

	It("has a default stream that takes work and is never destroyed", func() {
		a := malloc(d, 1*KiB)
		Expect(d.Fill(main, device.DefaultStream, a, 7)).To(Succeed())
		Expect(read(d, a)).To(Equal(filled(a.Bytes, 7)))
		expectError(d.DestroyStream(main, device.DefaultStream), 107000, device.ClassInvalidValue)
		Expect(d.Counters().LiveStreams).To(Equal(int64(1)), "the default stream is not counted: only s is")
	})

	It("orders work across streams with events", func() {
		t := newStream(d)
		e := newEvent(d)
		x := malloc(d, 4*KiB)
		y := malloc(d, 4*KiB)
		Expect(d.Fill(main, s, x, 3)).To(Succeed())
		Expect(d.Record(main, e, s)).To(Succeed())
		Expect(d.Wait(main, t, e)).To(Succeed())
		Expect(d.Copy(other, t, y, x)).To(Succeed())
		Expect(d.SyncStream(main, t)).To(Succeed())
		Expect(read(d, y)).To(Equal(filled(y.Bytes, 3)))
		done, err := d.QueryEvent(main, e)
		Expect(err).NotTo(HaveOccurred())
		Expect(done).To(BeTrue())
		Expect(d.SyncEvent(other, e)).To(Succeed())
		Expect(d.SyncDevice(main)).To(Succeed())

		never := newEvent(d)
		done, err = d.QueryEvent(main, never)
		Expect(err).NotTo(HaveOccurred())
		Expect(done).To(BeTrue(), "an event never recorded names no work")
	})

	It("requires host buffers of the exact length for synchronous copies", func() {
		x := malloc(d, 1*KiB)
		expectError(d.Write(main, x, make([]byte, 10)), 107000, device.ClassInvalidValue)
		expectError(d.Read(main, make([]byte, 2*KiB), x), 107000, device.ClassInvalidValue)
	})

	It("rejects destroyed handles and an unknown thread", func() {
		e := newEvent(d)
		Expect(d.DestroyEvent(main, e)).To(Succeed())
		expectError(d.DestroyEvent(main, e), 107000, device.ClassInvalidValue)
		Expect(d.DestroyStream(main, s)).To(Succeed())
		expectError(d.SyncStream(main, s), 107000, device.ClassInvalidValue)
		next := newStream(d)
		Expect(next).NotTo(Equal(s), "handles are never reused")
		_, err := d.Malloc(device.Thread(7), 512)
		expectError(err, 107000, device.ClassInvalidValue)
	})
})
