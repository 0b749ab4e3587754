//go:build cgo

package cuda_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/conformance"
	"github.com/replaycheck/replaycheck/runtime/cuda"
	"github.com/replaycheck/replaycheck/runtime/internal/dl"
)

// fake compiles testdata/fake_cuda.c (a small CUDA driver double) with extra flags.
func fake(flags ...string) string {
	GinkgoHelper()
	out := filepath.Join(GinkgoT().TempDir(), "libcuda.so.1")
	args := append([]string{"-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-pthread", "-Itestdata", "-o", out}, flags...)
	msg, err := exec.Command("cc", append(args, "testdata/fake_cuda.c")...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(msg))
	return out
}

// lib is the double every spec shares, built once for the suite.
var lib string

var _ = BeforeSuite(func() { lib = fake() })

func open(ctx context.Context, path string) (runtime.Backend, runtime.Device) {
	GinkgoHelper()
	b, err := cuda.New(cuda.Options{Library: path})
	Expect(err).NotTo(HaveOccurred())
	d, err := b.Open(ctx, 0)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		Expect(d.Close()).To(Succeed())
		Expect(b.Close()).To(Succeed())
	})
	return b, d
}

// calls reads a FAKE_LOG file: the threads each function was called from, in order.
func calls(path string) map[string][]string {
	GinkgoHelper()
	raw, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	out := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Fields(line)
		out[f[0]] = append(out[f[0]], f[1])
	}
	return out
}

func lanes(vs ...uint32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

var _ = Describe("opening", func() {
	It("loads the library named explicitly, reports where from, and names the platform", func(ctx SpecContext) {
		b, d := open(ctx, lib)
		Expect(b.Source()).To(Equal(lib))
		Expect(d.Platform()).To(Equal("cuda/12.4-h200"))
		Expect(d.Describe()).To(ContainSubstring("NVIDIA H200"))
		info, err := b.Info(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(info).To(Equal(runtime.DeviceInfo{Name: "NVIDIA H200", Memory: 141 << 30, Driver: "12.4", Runtime: "12.4", Platform: "cuda/12.4-h200"}))
		Expect(d.Capabilities().Kernels).To(BeTrue(), "the double accepted the PTX")
		_, err = b.Open(ctx, 1)
		Expect(runtime.ClassOf(err)).To(Equal(runtime.ClassInvalidValue))
	})

	It("loads the library named by $REPLAYCHECK_CUDA_LIB", func() {
		GinkgoT().Setenv(cuda.EnvLibrary, lib)
		b, err := cuda.New(cuda.Options{})
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Source()).To(Equal(lib))
		Expect(b.Close()).To(Succeed())
	})

	It("fails without a library, listing the path it tried", func() {
		_, err := cuda.New(cuda.Options{Library: "/nonexistent/libcuda.so.1"})
		Expect(errors.Is(err, cuda.ErrNoLibrary)).To(BeTrue())
		Expect(errors.Is(err, cuda.ErrNoDriver)).To(BeFalse())
		var nl *cuda.NoLibraryError
		Expect(errors.As(err, &nl)).To(BeTrue())
		Expect(nl.Tried).To(HaveLen(1))
		Expect(err.Error()).To(ContainSubstring("/nonexistent/libcuda.so.1"))
	})

	It("fails on a library without a required symbol, naming it", func() {
		_, err := cuda.New(cuda.Options{Library: fake("-DOMIT_MEMSET")})
		var missing *dl.MissingError
		Expect(errors.As(err, &missing)).To(BeTrue())
		Expect(missing.Symbols).To(Equal([]string{"cuMemsetD8Async"}))
	})

	It("reports the toolkit's stub library (cuInit 34) as no driver, not as no library", func() {
		_, err := cuda.New(cuda.Options{Library: fake("-DSTUB")})
		Expect(errors.Is(err, cuda.ErrNoDriver)).To(BeTrue(), "%v", err)
		Expect(errors.Is(err, cuda.ErrNoLibrary)).To(BeFalse())
		e, ok := runtime.AsError(err)
		Expect(ok).To(BeTrue())
		Expect(e.Code).To(Equal(34))
		Expect(e.Name).To(Equal("CUDA_ERROR_STUB_LIBRARY"))
		Expect(err.Error()).To(ContainSubstring("stub"))
	})
})

var _ = Describe("a device", func() {
	var d runtime.Device
	BeforeEach(func(ctx SpecContext) { _, d = open(ctx, lib) })

	It("round-trips data through Write, Fill, Copy, host memory and Read", func() {
		x, err := d.Malloc(runtime.Main, 64)
		Expect(err).NotTo(HaveOccurred())
		y, err := d.Malloc(runtime.Other, 64)
		Expect(err).NotTo(HaveOccurred())
		s, err := d.CreateStream(runtime.Main)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Write(runtime.Main, x, bytes.Repeat([]byte{3}, 64))).To(Succeed())
		Expect(d.Fill(runtime.Main, s, x.Slice(0, 16), 9)).To(Succeed())
		Expect(d.Copy(runtime.Main, s, y, x)).To(Succeed())
		got := make([]byte, 64)
		Expect(d.Read(runtime.Other, got, y)).To(Succeed())
		Expect(got).To(Equal(append(bytes.Repeat([]byte{9}, 16), bytes.Repeat([]byte{3}, 48)...)))
		for _, kind := range runtime.HostMemories() {
			h, err := d.AllocHost(runtime.Main, 32, kind)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.HostWrite(h, bytes.Repeat([]byte{7}, 32))).To(Succeed())
			Expect(d.Copy(runtime.Main, s, x, h)).To(Succeed())
			Expect(d.Fill(runtime.Main, s, x, 1)).To(Succeed())
			Expect(d.Copy(runtime.Main, s, h.Slice(0, 8), x)).To(Succeed())
			out := make([]byte, 32)
			Expect(d.HostRead(out, h)).To(Succeed())
			Expect(out).To(Equal(append(bytes.Repeat([]byte{1}, 8), bytes.Repeat([]byte{7}, 24)...)))
			Expect(d.FreeHost(runtime.Other, h)).To(Succeed())
		}
	})

	It("launches the PTX axpy with (y, x, a, n) and one thread per lane, eagerly and in a graph", func() {
		logFile := filepath.Join(GinkgoT().TempDir(), "calls.log")
		x, _ := d.Malloc(runtime.Main, 12)
		y, _ := d.Malloc(runtime.Main, 12)
		s, _ := d.CreateStream(runtime.Main)
		Expect(d.Write(runtime.Main, x, lanes(1, 2, 0xffffffff))).To(Succeed())
		Expect(d.Write(runtime.Main, y, lanes(10, 20, 5))).To(Succeed())
		GinkgoT().Setenv("FAKE_LOG", logFile)
		Expect(d.Axpy(runtime.Other, s, y, x, 3)).To(Succeed())
		GinkgoT().Setenv("FAKE_LOG", "")
		got := make([]byte, 12)
		Expect(d.Read(runtime.Main, got, y)).To(Succeed())
		Expect(got).To(Equal(lanes(13, 26, 2)), "wrapping uint32 lanes")
		Expect(calls(logFile)["cuLaunchKernel"]).To(HaveLen(1))

		Expect(d.BeginCapture(runtime.Main, s, runtime.Global)).To(Succeed())
		Expect(d.Axpy(runtime.Main, s, y, x, 1)).To(Succeed())
		g, err := d.EndCapture(runtime.Main, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Launch(runtime.Main, g, s)).To(Succeed())
		Expect(d.Launch(runtime.Main, g, s)).To(Succeed())
		Expect(d.Read(runtime.Main, got, y)).To(Succeed())
		Expect(got).To(Equal(lanes(15, 30, 0)))
		Expect(d.Axpy(runtime.Main, s, y, x.Slice(0, 8), 1)).To(MatchError(ContainSubstring("invalid-value")))
	})

	for _, m := range runtime.CaptureModes() {
		It("captures, reports and replays in "+m.String()+" mode", func() {
			s, _ := d.CreateStream(runtime.Main)
			x, _ := d.Malloc(runtime.Main, 16)
			Expect(d.Write(runtime.Main, x, make([]byte, 16))).To(Succeed())
			Expect(d.BeginCapture(runtime.Main, s, m)).To(Succeed())
			info, err := d.CaptureInfo(runtime.Other, s)
			Expect(err).NotTo(HaveOccurred())
			Expect(info).To(Equal(runtime.CaptureInfo{Status: runtime.CaptureActive, ID: info.ID, Origin: s, Mode: m}))
			Expect(info.ID).NotTo(BeZero())
			Expect(d.Fill(runtime.Main, s, x, 5)).To(Succeed())
			g, err := d.EndCapture(runtime.Main, s)
			Expect(err).NotTo(HaveOccurred())
			got := make([]byte, 16)
			Expect(d.Read(runtime.Main, got, x)).To(Succeed())
			Expect(got).To(Equal(make([]byte, 16)), "captured work did not run")
			Expect(d.Launch(runtime.Other, g, s)).To(Succeed())
			Expect(d.Read(runtime.Main, got, x)).To(Succeed())
			Expect(got).To(Equal(bytes.Repeat([]byte{5}, 16)))
			Expect(d.DestroyGraph(runtime.Main, g)).To(Succeed())
		})
	}

	It("maps codes to name and class with cuGetErrorString's detail, and says when the capture was invalidated", func() {
		s, _ := d.CreateStream(runtime.Main)
		x, _ := d.Malloc(runtime.Main, 16)
		Expect(d.BeginCapture(runtime.Main, s, runtime.Global)).To(Succeed())
		err := d.SyncStream(runtime.Main, s)
		e, ok := err.(*runtime.Error)
		Expect(ok).To(BeTrue(), "%v", err)
		Expect(*e).To(Equal(runtime.Error{Backend: "cuda", Op: "SyncStream", Code: 900, Name: "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
			Class: runtime.ClassCaptureUnsupported, Invalidated: true, Detail: "fake: cuStreamSynchronize: the stream is capturing (900)"}))
		err = d.Fill(runtime.Main, s, x, 1)
		e, _ = runtime.AsError(err)
		Expect(e.Code).To(Equal(901))
		Expect(e.Invalidated).To(BeFalse(), "invalidated before, not by this call")
		info, _ := d.CaptureInfo(runtime.Main, s)
		Expect(info.Status).To(Equal(runtime.CaptureInvalidated))
		g, err := d.EndCapture(runtime.Main, s)
		Expect(runtime.ClassOf(err)).To(Equal(runtime.ClassCaptureInvalidated))
		Expect(g).To(BeZero())
		info, _ = d.CaptureInfo(runtime.Main, s)
		Expect(info).To(Equal(runtime.CaptureInfo{}))

		for code, want := range map[int]runtime.Class{
			2: runtime.ClassOutOfMemory, 700: runtime.ClassIllegalAddress, 902: runtime.ClassCaptureConflict,
			903: runtime.ClassCaptureUnmatched, 904: runtime.ClassCaptureUnjoined, 905: runtime.ClassCaptureDependency,
			906: runtime.ClassCaptureImplicit, 907: runtime.ClassCapturedEvent, 908: runtime.ClassWrongThread,
			801: runtime.ClassNotSupported, 4242: runtime.ClassInternal,
		} {
			GinkgoT().Setenv("FAKE_FAIL", "cuMemAlloc_v2="+strconv.Itoa(code))
			_, err := d.Malloc(runtime.Main, 8)
			e, ok := runtime.AsError(err)
			Expect(ok).To(BeTrue())
			Expect(e.Code).To(Equal(code))
			Expect(e.Class).To(Equal(want), "code %d", code)
		}
	})

	It("issues every call from the OS thread its Thread names, with the context current there", func() {
		logFile := filepath.Join(GinkgoT().TempDir(), "calls.log")
		GinkgoT().Setenv("FAKE_LOG", logFile)
		s, _ := d.CreateStream(runtime.Main)
		x, _ := d.Malloc(runtime.Other, 16)
		Expect(d.Fill(runtime.Other, s, x, 1)).To(Succeed())
		Expect(d.BeginCapture(runtime.Main, s, runtime.Relaxed)).To(Succeed())
		Expect(d.Fill(runtime.Other, s, x, 2)).To(Succeed())
		_, err := d.EndCapture(runtime.Other, s)
		Expect(err).NotTo(HaveOccurred())
		GinkgoT().Setenv("FAKE_LOG", "")
		c := calls(logFile)
		main, other := c["cuStreamCreate"][0], c["cuMemAlloc_v2"][0]
		Expect(main).NotTo(Equal(other))
		Expect(c["cuMemsetD8Async"]).To(Equal([]string{other, other}))
		Expect(c["cuStreamBeginCapture_v2"]).To(Equal([]string{main}))
		Expect(c["cuStreamEndCapture"]).To(Equal([]string{other}))
	})
})

// The conformance suite runs on the double; the backend is left open for the process.
var _ = conformance.Describe("cuda double", func(ctx context.Context) (runtime.Device, error) {
	b, err := cuda.New(cuda.Options{Library: lib})
	if err != nil {
		return nil, err
	}
	return b.Open(ctx, 0)
}, conformance.Options{Memory: 1 << 30, Labels: []string{"double"}})
