package capture_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// Kernel calls are described without fmt (a capture of 100,000 ops describes 100,000 of them):
// the text must stay what fmt wrote, which reports and baselines quote.
var _ = Describe("The description of a fill, copy or axpy", func() {
	w, x := device.Ptr{Addr: 0x100000000, Bytes: 65536}, device.Ptr{Addr: 0xabc0, Bytes: 8}
	It("is what fmt writes, for every fill value", func() {
		for v := range 256 {
			op := &probes.Op{Kind: probes.OpFill, Dst: "dst", Value: byte(v), Stream: "main"}
			Expect(capture.DescribeKernel(op, w, x)).To(Equal(fmt.Sprintf("Fill(%s %v, %#02x) on %s", op.Dst, w, op.Value, op.Stream)))
		}
	})
	It("is what fmt writes for copies and axpys", func() {
		op := &probes.Op{Kind: probes.OpCopy, Dst: "out", Src: "in", Stream: "side"}
		Expect(capture.DescribeKernel(op, w, x)).To(Equal(fmt.Sprintf("Copy(%s %v <- %s %v) on %s", op.Dst, w, op.Src, x, op.Stream)))
		for _, a := range []uint32{0, 3, 1<<32 - 1} {
			op := &probes.Op{Kind: probes.OpAxpy, Y: "y", X: "x", A: a, Stream: "default"}
			Expect(capture.DescribeKernel(op, w, x)).To(Equal(fmt.Sprintf("Axpy(%s %v += %d * %s %v) on %s", op.Y, w, op.A, op.X, x, op.Stream)))
		}
	})
})

var _ = Describe("The timeline's texts", func() {
	It("stay intact however many are cut from its blocks of text, a long one included", func() {
		build := func(i int) string {
			if i == 5000 {
				return string(make([]byte, 200<<10)) // longer than a block
			}
			return fmt.Sprintf("call %d %s", i, string(make([]byte, i%97)))
		}
		texts := capture.TimelineTexts(20000, build)
		for i, s := range texts {
			Expect(s).To(Equal(build(i)), "text %d", i)
		}
	})
})
