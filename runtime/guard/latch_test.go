package guard_test

import (
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

var _ = Describe("ExecutionModeLatch", func() {
	It("starts unlatched", func() {
		var l guard.Latch
		Expect(l.Mode()).To(Equal(guard.Unlatched))
	})

	DescribeTable("latching the held mode again is idempotent",
		func(m guard.Mode) {
			var l guard.Latch
			Expect(l.Latch(m)).To(Succeed())
			Expect(l.Latch(m)).To(Succeed())
			Expect(l.Mode()).To(Equal(m))
		},
		Entry("program", guard.Program),
		Entry("kernel", guard.Kernel),
	)

	DescribeTable("the modes are exclusive in both directions",
		func(held, other guard.Mode) {
			var l guard.Latch
			Expect(l.Latch(held)).To(Succeed())
			e := expectClass(l.Latch(other), device.ClassInvalidState, "Latch")
			Expect(e.Detail).To(ContainSubstring(held.String()))
			Expect(l.Mode()).To(Equal(held))
		},
		Entry("program, then kernel", guard.Program, guard.Kernel),
		Entry("kernel, then program", guard.Kernel, guard.Program),
	)

	It("has no unlatch", func() {
		var l guard.Latch
		Expect(l.Latch(guard.Kernel)).To(Succeed())
		expectClass(l.Latch(guard.Unlatched), device.ClassInvalidValue, "Latch")
		expectClass(l.Latch(guard.Mode(9)), device.ClassInvalidValue, "Latch")
		Expect(l.Mode()).To(Equal(guard.Kernel))
	})

	It("lets exactly one of two racing modes win", func() {
		for range 50 {
			var l guard.Latch
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, m := range []guard.Mode{guard.Program, guard.Kernel} {
				wg.Go(func() { errs[i] = l.Latch(m) })
			}
			wg.Wait()
			failed := 0
			for _, err := range errs {
				if err != nil {
					failed++
				}
			}
			Expect(failed).To(Equal(1))
		}
	})

	It("is latched by New, for the Device's whole life", func() {
		d := guarded(newFake(), guard.Kernel)
		Expect(d.Mode()).To(Equal(guard.Kernel))
		Expect(d.Latch(guard.Kernel)).To(Succeed())
		expectClass(d.Latch(guard.Program), device.ClassInvalidState, "Latch")
		Expect(d.Mode()).To(Equal(guard.Kernel))

		p := guarded(newFake(), guard.Program)
		expectClass(p.Latch(guard.Kernel), device.ClassInvalidState, "Latch")
		Expect(p.Mode()).To(Equal(guard.Program))
	})

	It("refuses to build a Device without a mode or an inner device", func() {
		_, err := guard.New(newFake(), guard.Unlatched)
		expectClass(err, device.ClassInvalidValue, "Latch")
		_, err = guard.New(nil, guard.Kernel)
		expectClass(err, device.ClassInvalidValue, "New")
	})
})
