package bind_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/internal/bind"
)

var _ = Describe("FakeFaults over a library without the fakes' entry points", func() {
	It("says it cannot inject, and every call returns an error instead of calling through nil", func() {
		var f bind.FakeFaults
		Expect(f.Symbols()).To(HaveLen(2))
		for _, s := range f.Symbols() {
			Expect(s.Optional).To(BeTrue(), "a real driver exports neither: %v", s.Names)
		}
		Expect(f.Present()).To(BeFalse())
		can, why := f.Injects()
		Expect(can).To(BeFalse())
		Expect(why).To(ContainSubstring("exports no replaycheck_fake_inject"))
		Expect(func() {
			Expect(f.InjectFault(device.Fault{Kind: device.FaultAllocFail, N: 1})).To(HaveOccurred())
			Expect(f.ClearFaults()).To(HaveOccurred())
			_, ok, err := f.FiredFault(0)
			Expect(err).To(HaveOccurred())
			Expect(ok).To(BeFalse())
		}).NotTo(Panic())
	})
})
