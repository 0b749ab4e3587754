//go:build cgo

package cuda_test

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/cuda"
)

var _ = Describe("Equal, the verification's comparison (device.Comparer)", func() {
	// Three pinned chunks' worth and a tail, with chunks of 4 MiB each compared by 4 goroutines of
	// 1 MiB: differences either side of a chunk's edge and of a goroutine's.
	const chunk = 4 << 20
	const n = 3*chunk + 4099
	var (
		d    device.Device
		cmp  device.Comparer
		p    device.Ptr
		want []byte
	)
	BeforeEach(func(ctx SpecContext) {
		DeferCleanup(cuda.SetCompareShape(chunk, 4))
		_, d = open(ctx, libs.Full)
		var ok bool
		cmp, ok = d.(device.Comparer)
		Expect(ok).To(BeTrue())
		var err error
		p, err = d.Malloc(device.Main, n)
		Expect(err).NotTo(HaveOccurred())
		want = make([]byte, n)
		for i := range want {
			want[i] = byte(i*13 + 5)
		}
		Expect(d.Write(device.Main, p, want)).To(Succeed())
	})

	It("finds a buffer equal, and a difference wherever it lies: either side of each chunk's edge, the tail", func() {
		eq, err := cmp.Equal(device.Main, p, want)
		Expect(err).NotTo(HaveOccurred())
		Expect(eq).To(BeTrue())
		for _, at := range []int{0, 1<<20 - 1, 1 << 20, chunk - 1, chunk, 2*chunk + 77, 3*chunk - 1, 3 * chunk, n - 1} {
			planted := bytes.Clone(want)
			planted[at] ^= 0x80
			eq, err := cmp.Equal(device.Main, p, planted)
			Expect(err).NotTo(HaveOccurred())
			Expect(eq).To(BeFalse(), "difference at %d", at)
		}
		// A sub-range, from the other thread, ending inside a chunk.
		sub := p.Slice(5, 2*chunk+9)
		eq, err = cmp.Equal(device.Other, sub, want[5:5+2*chunk+9])
		Expect(err).NotTo(HaveOccurred())
		Expect(eq).To(BeTrue())
	})

	It("copies through the driver's asynchronous device-to-host copy into pinned chunks, not a synchronous read", func() {
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "cuMemcpyDtoHAsync_v2=700")
		_, err := cmp.Equal(device.Main, p, want)
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "")
		Expect(device.ClassOf(err)).To(Equal(device.ClassIllegalAddress))
		Expect(err.Error()).To(ContainSubstring("Equal"))
		got := make([]byte, n)
		Expect(d.Read(device.Main, got, p)).To(Succeed(), "a Read is not the copy that failed")
	})

	It("reads back through a synchronous read where the driver gives no pinned memory", func() {
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "cuMemAllocHost_v2=2")
		eq, err := cmp.Equal(device.Main, p, want)
		Expect(err).NotTo(HaveOccurred())
		Expect(eq).To(BeTrue())
		want[n-1]++
		eq, err = cmp.Equal(device.Main, p, want)
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(eq).To(BeFalse())
	})

	It("answers as a synchronous Read would while a capture is in progress", func() {
		s, err := d.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		_, cmpErr := cmp.Equal(device.Main, p, want)
		e, ok := device.AsError(cmpErr)
		Expect(ok).To(BeTrue(), "the capture rules refuse a synchronous copy during a global capture")
		_, err = d.EndCapture(device.Main, s)
		Expect(device.ClassOf(err)).To(Equal(device.ClassCaptureInvalidated), "as a Read, Equal invalidated the capture")

		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		readErr := d.Read(device.Main, make([]byte, n), p)
		r, ok := device.AsError(readErr)
		Expect(ok).To(BeTrue())
		Expect([]any{e.Code, e.Class}).To(Equal([]any{r.Code, r.Class}))
		_, _ = d.EndCapture(device.Main, s)
	})

	It("checks its arguments as Read does", func() {
		_, err := cmp.Equal(device.Main, p, want[:10])
		Expect(device.ClassOf(err)).To(Equal(device.ClassInvalidValue))
		_, err = cmp.Equal(device.Main, device.Ptr{Addr: p.Addr + n, Bytes: 8}, make([]byte, 8))
		Expect(device.ClassOf(err)).To(Equal(device.ClassInvalidValue))
	})
})
