//go:build cgo

package cuda_test

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/cuda"
)

var _ = Describe("Equal, the verification's comparison (runtime.Comparer)", func() {
	// Three pinned chunks' worth and a tail, with chunks of 4 MiB each compared by 4 goroutines of
	// 1 MiB: differences either side of a chunk's edge and of a goroutine's.
	const chunk = 4 << 20
	const n = 3*chunk + 4099
	var (
		d    runtime.Device
		cmp  runtime.Comparer
		p    runtime.Ptr
		want []byte
	)
	BeforeEach(func(ctx SpecContext) {
		DeferCleanup(cuda.SetCompareShape(chunk, 4))
		_, d = open(ctx, libs.full)
		var ok bool
		cmp, ok = d.(runtime.Comparer)
		Expect(ok).To(BeTrue())
		var err error
		p, err = d.Malloc(runtime.Main, n)
		Expect(err).NotTo(HaveOccurred())
		want = make([]byte, n)
		for i := range want {
			want[i] = byte(i*13 + 5)
		}
		Expect(d.Write(runtime.Main, p, want)).To(Succeed())
	})

	It("finds a buffer equal, and a difference wherever it lies: either side of each chunk's edge, the tail", func() {
		eq, err := cmp.Equal(runtime.Main, p, want)
		Expect(err).NotTo(HaveOccurred())
		Expect(eq).To(BeTrue())
		for _, at := range []int{0, 1<<20 - 1, 1 << 20, chunk - 1, chunk, 2*chunk + 77, 3*chunk - 1, 3 * chunk, n - 1} {
			planted := bytes.Clone(want)
			planted[at] ^= 0x80
			eq, err := cmp.Equal(runtime.Main, p, planted)
			Expect(err).NotTo(HaveOccurred())
			Expect(eq).To(BeFalse(), "difference at %d", at)
		}
		// A sub-range, from the other thread, ending inside a chunk.
		sub := p.Slice(5, 2*chunk+9)
		eq, err = cmp.Equal(runtime.Other, sub, want[5:5+2*chunk+9])
		Expect(err).NotTo(HaveOccurred())
		Expect(eq).To(BeTrue())
	})

	It("copies through the driver's asynchronous device-to-host copy into pinned chunks, not a synchronous read", func() {
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "cuMemcpyDtoHAsync_v2=700")
		_, err := cmp.Equal(runtime.Main, p, want)
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "")
		Expect(runtime.ClassOf(err)).To(Equal(runtime.ClassIllegalAddress))
		Expect(err.Error()).To(ContainSubstring("Equal"))
		got := make([]byte, n)
		Expect(d.Read(runtime.Main, got, p)).To(Succeed(), "a Read is not the copy that failed")
	})

	It("reads back through a synchronous read where the driver gives no pinned memory", func() {
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "cuMemAllocHost_v2=2")
		eq, err := cmp.Equal(runtime.Main, p, want)
		Expect(err).NotTo(HaveOccurred())
		Expect(eq).To(BeTrue())
		want[n-1]++
		eq, err = cmp.Equal(runtime.Main, p, want)
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(eq).To(BeFalse())
	})

	It("answers as a synchronous Read would while a capture is in progress", func() {
		s, err := d.CreateStream(runtime.Main, runtime.Blocking)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.BeginCapture(runtime.Main, s, runtime.Global)).To(Succeed())
		_, cmpErr := cmp.Equal(runtime.Main, p, want)
		e, ok := runtime.AsError(cmpErr)
		Expect(ok).To(BeTrue(), "the capture rules refuse a synchronous copy during a global capture")
		_, err = d.EndCapture(runtime.Main, s)
		Expect(runtime.ClassOf(err)).To(Equal(runtime.ClassCaptureInvalidated), "as a Read, Equal invalidated the capture")

		Expect(d.BeginCapture(runtime.Main, s, runtime.Global)).To(Succeed())
		readErr := d.Read(runtime.Main, make([]byte, n), p)
		r, ok := runtime.AsError(readErr)
		Expect(ok).To(BeTrue())
		Expect([]any{e.Code, e.Class}).To(Equal([]any{r.Code, r.Class}))
		_, _ = d.EndCapture(runtime.Main, s)
	})

	It("checks its arguments as Read does", func() {
		_, err := cmp.Equal(runtime.Main, p, want[:10])
		Expect(runtime.ClassOf(err)).To(Equal(runtime.ClassInvalidValue))
		_, err = cmp.Equal(runtime.Main, runtime.Ptr{Addr: p.Addr + n, Bytes: 8}, make([]byte, 8))
		Expect(runtime.ClassOf(err)).To(Equal(runtime.ClassInvalidValue))
	})
})
