//go:build cgo

package cuda_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/fingerprint"
)

// vectorsOn checks d's fingerprints (device.Fingerprinter) against internal/fingerprint's test
// vectors, each buffer written at offset at of an allocation of its own.
func vectorsOn(d device.Device, at int64) {
	GinkgoHelper()
	fp := device.ExtensionsOf(d).Fingerprint
	Expect(fp).NotTo(BeNil(), "the device states fingerprints")
	vs, err := fingerprint.Vectors()
	Expect(err).NotTo(HaveOccurred())
	for _, v := range vs {
		p, err := d.Malloc(device.Main, int64(v.Bytes)+at)
		Expect(err).NotTo(HaveOccurred())
		src := p.Slice(at, int64(v.Bytes))
		Expect(d.Write(device.Main, src, v.Input())).To(Succeed())
		out := make([]uint64, len(v.Chunks))
		Expect(fp.Fingerprints(device.Main, src, out)).To(Succeed(), v.Name)
		Expect(out).To(Equal(v.Chunks), "%s at offset %d", v.Name, at)
		Expect(d.Free(device.Main, p)).To(Succeed())
	}
}

var _ = Describe("Fingerprints, the verification's fingerprints (device.Fingerprinter)", func() {
	var d device.Device
	BeforeEach(func(ctx SpecContext) {
		_, d = open(ctx, libs.Full)
	})

	It("are the test vectors' by the fake's kernel, and by a read where the source is not 8-byte aligned", func() {
		vectorsOn(d, 0)
		vectorsOn(d, 3)
	})

	It("launch the kernel: a launch that fails fails them", func() {
		p, err := d.Malloc(device.Main, 4096)
		Expect(err).NotTo(HaveOccurred())
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "cuLaunchKernel=700")
		err = device.ExtensionsOf(d).Fingerprint.Fingerprints(device.Main, p, make([]uint64, 1))
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "")
		Expect(device.ClassOf(err)).To(Equal(device.ClassIllegalAddress), "%v", err)
		Expect(err.Error()).To(ContainSubstring("Fingerprints"))
	})

	It("answer as a synchronous Read would while a capture is in progress, and check their arguments", func() {
		fp := device.ExtensionsOf(d).Fingerprint
		p, err := d.Malloc(device.Main, 4096)
		Expect(err).NotTo(HaveOccurred())
		Expect(device.ClassOf(fp.Fingerprints(device.Main, p, make([]uint64, 2)))).To(Equal(device.ClassInvalidValue))
		Expect(device.ClassOf(fp.Fingerprints(device.Main, device.Ptr{Addr: p.Addr + 8192, Bytes: 8}, make([]uint64, 1)))).To(Equal(device.ClassInvalidValue))
		s, err := d.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		fpErr := fp.Fingerprints(device.Main, p, make([]uint64, 1))
		_, _ = d.EndCapture(device.Main, s)
		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		readErr := d.Read(device.Main, make([]byte, 4096), p)
		_, _ = d.EndCapture(device.Main, s)
		f, ok := device.AsError(fpErr)
		Expect(ok).To(BeTrue(), "the capture rules refuse a synchronous copy during a global capture: %v", fpErr)
		r, ok := device.AsError(readErr)
		Expect(ok).To(BeTrue())
		Expect([]any{f.Code, f.Class}).To(Equal([]any{r.Code, r.Class}))
	})
})

// With REPLAYCHECK_HARDWARE=cuda: the PTX kernel computes the test vectors' fingerprints on the
// GPU (make device-check).
var _ = onHardware && Describe("the fingerprint kernel on the hardware", Label("hardware"), func() {
	It("computes the test vectors' fingerprints", func(ctx SpecContext) {
		d, err := suite.Hardware.Open(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(d.Close)
		vectorsOn(d, 0)
		// scripts/device-check.sh reads this line in the suite's output.
		fmt.Printf("fingerprint kernel on the hardware: the test vectors' fingerprints, every one\n")
	})
})
