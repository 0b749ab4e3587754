//go:build cgo

package cuda_test

import (
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/cuda"
	"github.com/replaycheck/replaycheck/device/fake"
)

// A sticky error (cuda.h: "the process must be terminated and relaunched"; an H200 answered 700 to
// every call after a replay over freed memory): the error says so, the device closes without
// destroying its objects one by one, and no device opens again in the process. The fake without
// the fault-injection entry points stands in for NVIDIA's driver, which does not reset; the fakes
// that inject faults reset their context when a device closes.
var _ = Describe("a sticky error", func() {
	It("poisons the process on a driver that does not reset: no fresh device, and --isolate is named", func(ctx SpecContext) {
		path, err := fake.Build(filepath.Join(GinkgoT().TempDir(), "no-inject"), fake.CUDA, fake.Variant{Omit: fake.FaultEntryPoints[0]})
		Expect(err).NotTo(HaveOccurred())
		b, d := open(ctx, path)
		_, err = d.Malloc(device.Main, 4096)
		Expect(err).NotTo(HaveOccurred())
		ok, why := b.(device.Recoverer).Recovers(false)
		Expect(ok).To(BeTrue(), why)

		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "cuCtxSynchronize=700")
		e, isErr := device.AsError(d.SyncDevice(device.Main))
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "")
		Expect(isErr).To(BeTrue())
		Expect([]any{e.Code, e.Class, e.Sticky}).To(Equal([]any{700, device.ClassIllegalAddress, true}))
		Expect(e.Error()).To(ContainSubstring("sticky"))

		ok, why = b.(device.Recoverer).Recovers(false)
		Expect(ok).To(BeFalse())
		Expect(why).To(SatisfyAll(ContainSubstring("illegal-address in SyncDevice (700 CUDA_ERROR_ILLEGAL_ADDRESS)"),
			ContainSubstring("relaunched"), ContainSubstring("--isolate")))
		_, err = b.Open(ctx, 0)
		Expect(err).To(MatchError(ContainSubstring("--isolate")))
		// Closing releases the device, allocation included, without a call per object (each would
		// answer 700 on hardware).
		Expect(d.Close()).To(Succeed())
	})

	It("is cleared by a library that resets when the device closes (the fakes that inject faults)", func(ctx SpecContext) {
		b, d := open(ctx, libs.Full)
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "cuCtxSynchronize=700")
		e, _ := device.AsError(d.SyncDevice(device.Main))
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "")
		Expect(e.Sticky).To(BeTrue())
		ok, why := b.(device.Recoverer).Recovers(false)
		Expect(ok).To(BeTrue(), why)
	})

	It("is what cuda.h says needs a relaunch, and nothing else", func() {
		for _, code := range []int{700, 702, 710, 714, 715, 716, 717, 718, 719} {
			Expect(cuda.Sticky(code)).To(BeTrue(), "%d", code)
		}
		for _, code := range []int{1, 2, 401, 801, 900, 901, 906, 999} {
			Expect(cuda.Sticky(code)).To(BeFalse(), "%d", code)
		}
	})
})
