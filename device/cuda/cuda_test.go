//go:build cgo

package cuda_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/conformance"
	"github.com/replaycheck/replaycheck/device/cuda"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/internal/dl"
)

// envHardware names the environment variable that turns on the specs on the real driver:
// REPLAYCHECK_HARDWARE=cuda (make device-check sets it). Without it no hardware is touched.
const envHardware = "REPLAYCHECK_HARDWARE"

var onHardware = os.Getenv(envHardware) == "cuda"

// libs are the fake libcuda.so.1 builds (device/fake) the suite shares, made once by
// BeforeSuite: the full library, a second copy of it for the specs that read the call log (the
// fake reads REPLAYCHECK_FAKE_LOG at a copy's first call), the stub (NVIDIA's stub library) and
// one without cuMemsetD8Async, a required symbol, and one without cuGraphMemcpyNodeGetParams, one
// of the optional graph-introspection symbols.
var libs struct{ full, logged, stub, missing, noIntrospection string }

// hardware is the real driver the binding's own search finds, with REPLAYCHECK_HARDWARE=cuda.
var hardware device.Backend

var _ = BeforeSuite(func() {
	if onHardware {
		// First, before any fake loads: a fake's soname is libcuda.so.1 too, and the dynamic
		// loader answers dlopen("libcuda.so.1") with a library of that soname already loaded.
		b, err := cuda.New(cuda.Options{})
		Expect(err).NotTo(HaveOccurred(), "%s=cuda, but the binding's search finds no usable CUDA driver", envHardware)
		hardware = b
		DeferCleanup(b.Close)
	}
	dir := GinkgoT().TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i, v := range []struct {
		out     *string
		name    string
		variant fake.Variant
	}{
		{&libs.full, "full", fake.Variant{}},
		{&libs.stub, "stub", fake.Variant{Stub: true}},
		{&libs.missing, "missing", fake.Variant{Omit: "cuMemsetD8Async"}},
		{&libs.noIntrospection, "no-introspection", fake.Variant{Omit: "cuGraphMemcpyNodeGetParams"}},
	} {
		wg.Go(func() { *v.out, errs[i] = fake.Build(filepath.Join(dir, v.name), fake.CUDA, v.variant) })
	}
	wg.Wait()
	Expect(errors.Join(errs...)).NotTo(HaveOccurred())
	// The logged copy is the full library's file under another name: a file of its own, loaded
	// apart from the full library's.
	data, err := os.ReadFile(libs.full)
	Expect(err).NotTo(HaveOccurred())
	libs.logged = filepath.Join(dir, "logged", filepath.Base(libs.full))
	Expect(os.MkdirAll(filepath.Dir(libs.logged), 0o755)).To(Succeed())
	Expect(os.WriteFile(libs.logged, data, 0o755)).To(Succeed())
})

// open opens device 0 of the library at path; both close when the spec ends.
func open(ctx context.Context, path string) (device.Backend, device.Device) {
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

// openLogged opens device 0 of the logged copy of the fake with its calls appended to a fresh
// file, which calls reads.
func openLogged(ctx context.Context) (device.Device, string) {
	GinkgoHelper()
	log := filepath.Join(GinkgoT().TempDir(), "calls.log")
	GinkgoT().Setenv("REPLAYCHECK_FAKE_LOG", log)
	_, d := open(ctx, libs.logged)
	Expect(calls(log)).To(HaveKey("cuInit"), "the logged fake was loaded before this spec set REPLAYCHECK_FAKE_LOG")
	return d, log
}

// calls reads a call log (fake.ReadLog): for each entry point, the kernel thread ids of its
// calls, in order.
func calls(path string) map[string][]int {
	GinkgoHelper()
	entries, err := fake.ReadLog(path)
	Expect(err).NotTo(HaveOccurred())
	return fake.Callers(entries)
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
		b, d := open(ctx, libs.full)
		Expect(b.Source()).To(Equal(libs.full))
		Expect(b.Name()).To(Equal("cuda"))
		Expect(d.Platform()).To(Equal("cuda/12.4-replaycheck-fake"))
		Expect(d.Describe()).To(Equal(fmt.Sprintf("cuda device 0 (replaycheck fake, driver 12.4, %s)", libs.full)))
		info, err := b.Info(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(info).To(Equal(device.DeviceInfo{Name: "replaycheck fake", Memory: 1 << 30, Driver: "12.4", Runtime: "12.4",
			Platform: "cuda/12.4-replaycheck-fake"}))
		Expect(d.Capabilities().Kernels).To(BeTrue(), "the fake accepted the PTX")
		Expect(d.Capabilities().ThreadRules).To(BeTrue())
		Expect(d.Capabilities().GraphIntrospection).To(BeTrue(), "the fake exports the four introspection calls")
		Expect(d.Capabilities().FaultInjection).To(BeTrue(), "the fake exports its fault-injection entry points (the conformance suite's fault specs need them)")
		_, err = b.Open(ctx, 1)
		Expect(device.ClassOf(err)).To(Equal(device.ClassInvalidValue))
	})

	It("loads the library named by $REPLAYCHECK_CUDA_LIB", func() {
		GinkgoT().Setenv(cuda.EnvLibrary, libs.full)
		b, err := cuda.New(cuda.Options{})
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Source()).To(Equal(libs.full))
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
		_, err := cuda.New(cuda.Options{Library: libs.missing})
		var missing *dl.MissingError
		Expect(errors.As(err, &missing)).To(BeTrue(), "%v", err)
		Expect(missing.Symbols).To(Equal([]string{"cuMemsetD8Async"}))
		Expect(errors.Is(err, cuda.ErrNoLibrary)).To(BeFalse())
	})

	It("reports the toolkit's stub library (cuInit 34) as no driver, not as no library", func() {
		_, err := cuda.New(cuda.Options{Library: libs.stub})
		Expect(errors.Is(err, cuda.ErrNoDriver)).To(BeTrue(), "%v", err)
		Expect(errors.Is(err, cuda.ErrNoLibrary)).To(BeFalse())
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue())
		Expect(e.Code).To(Equal(34))
		Expect(e.Name).To(Equal("CUDA_ERROR_STUB_LIBRARY"))
		Expect(e.Detail).To(Equal("CUDA driver is a stub library"))
		Expect(err.Error()).To(ContainSubstring(libs.stub + " is the toolkit's stub library"))
	})

	It("reports any other cuInit failure as no driver", func() {
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "cuInit=100")
		_, err := cuda.New(cuda.Options{Library: libs.full})
		Expect(errors.Is(err, cuda.ErrNoDriver)).To(BeTrue(), "%v", err)
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue())
		Expect(e.Code).To(Equal(100))
		Expect(e.Name).To(Equal("CUDA_ERROR_NO_DEVICE"))
		Expect(err.Error()).To(ContainSubstring(libs.full + ": cuInit: "))
	})
})

var _ = Describe("a device", func() {
	var d device.Device
	BeforeEach(func(ctx SpecContext) { _, d = open(ctx, libs.full) })

	It("round-trips data through Write, Fill, Copy, pinned and pageable host memory and Read", func() {
		x, err := d.Malloc(device.Main, 64)
		Expect(err).NotTo(HaveOccurred())
		y, err := d.Malloc(device.Other, 64)
		Expect(err).NotTo(HaveOccurred())
		s, err := d.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Write(device.Main, x, bytes.Repeat([]byte{3}, 64))).To(Succeed())
		Expect(d.Fill(device.Main, s, x.Slice(0, 16), 9)).To(Succeed())
		Expect(d.Copy(device.Main, s, y, x)).To(Succeed())
		got := make([]byte, 64)
		Expect(d.Read(device.Other, got, y)).To(Succeed())
		Expect(got).To(Equal(append(bytes.Repeat([]byte{9}, 16), bytes.Repeat([]byte{3}, 48)...)))
		Expect(device.HostMemories()).To(ConsistOf(device.Pinned, device.Pageable))
		for _, kind := range device.HostMemories() {
			h, err := d.AllocHost(device.Main, 32, kind)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.HostWrite(h, bytes.Repeat([]byte{7}, 32))).To(Succeed())
			Expect(d.Copy(device.Main, s, x, h)).To(Succeed())
			Expect(d.Fill(device.Main, s, x, 1)).To(Succeed())
			Expect(d.Copy(device.Main, s, h.Slice(0, 8), x)).To(Succeed())
			Expect(d.SyncStream(device.Main, s)).To(Succeed())
			out := make([]byte, 32)
			Expect(d.HostRead(out, h)).To(Succeed())
			Expect(out).To(Equal(append(bytes.Repeat([]byte{1}, 8), bytes.Repeat([]byte{7}, 24)...)), "%v", kind)
			Expect(d.FreeHost(device.Other, h)).To(Succeed())
		}
		c := d.Counters()
		Expect(c.LiveAllocs).To(Equal(int64(2)))
		Expect(c.LiveBytes).To(Equal(int64(128)))
		Expect(c.HostAllocs).To(Equal(int64(2)))
		Expect(c.LiveHostAllocs).To(BeZero())
	})

	It("maps codes to name and class with cuGetErrorString's text, and says when the capture was invalidated", func() {
		s, _ := d.CreateStream(device.Main, device.Blocking)
		x, _ := d.Malloc(device.Main, 16)
		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		err := d.SyncStream(device.Main, s)
		e, ok := err.(*device.Error)
		Expect(ok).To(BeTrue(), "%v", err)
		Expect(*e).To(Equal(device.Error{Backend: "cuda", Op: "SyncStream", Code: 900, Name: "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
			Class: device.ClassCaptureUnsupported, Invalidated: true, Detail: "operation not permitted when stream is capturing"}))
		err = d.Fill(device.Main, s, x, 1)
		e, _ = device.AsError(err)
		Expect(e.Code).To(Equal(901))
		Expect(e.Invalidated).To(BeFalse(), "invalidated before, not by this call")
		info, _ := d.CaptureInfo(device.Main, s)
		Expect(info.Status).To(Equal(device.CaptureInvalidated))
		g, err := d.EndCapture(device.Main, s)
		Expect(device.ClassOf(err)).To(Equal(device.ClassCaptureInvalidated))
		Expect(g).To(BeZero())
		info, _ = d.CaptureInfo(device.Main, s)
		Expect(info).To(Equal(device.CaptureInfo{}))

		// Invalidated is what the driver reports afterwards, not a property of the code: an injected
		// 900 leaves the capture active.
		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "cuStreamSynchronize=900")
		e, _ = device.AsError(d.SyncStream(device.Main, s))
		Expect([]any{e.Code, e.Invalidated}).To(Equal([]any{900, false}))
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "")
		info, _ = d.CaptureInfo(device.Main, s)
		Expect(info.Status).To(Equal(device.CaptureActive))
		g, err = d.EndCapture(device.Main, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.DestroyGraph(device.Main, g)).To(Succeed())
	})

	It("answers injected codes through the one table", func() {
		for code, want := range map[int]device.Class{
			2: device.ClassOutOfMemory, 700: device.ClassIllegalAddress, 902: device.ClassCaptureConflict,
			903: device.ClassCaptureUnmatched, 904: device.ClassCaptureUnjoined, 905: device.ClassCaptureDependency,
			906: device.ClassCaptureImplicit, 907: device.ClassCapturedEvent, 908: device.ClassWrongThread,
			801: device.ClassNotSupported, 4242: device.ClassInternal,
		} {
			GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "cuMemAlloc_v2="+strconv.Itoa(code))
			_, err := d.Malloc(device.Main, 8)
			e, ok := device.AsError(err)
			Expect(ok).To(BeTrue())
			Expect(e.Code).To(Equal(code))
			name, _ := cuda.Lookup(code)
			Expect(e.Name).To(Equal(name))
			Expect(e.Class).To(Equal(want), "code %d", code)
			if code == 4242 {
				Expect(e.Detail).To(BeEmpty(), "cuGetErrorString knows no text for %d", code)
			} else {
				Expect(e.Detail).NotTo(BeEmpty(), "cuGetErrorString's text for %d", code)
			}
		}
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "")
		Expect(d.Counters().Mallocs).To(BeZero())
		_, err := d.Malloc(device.Main, 8)
		Expect(err).NotTo(HaveOccurred())
	})

	for _, m := range device.CaptureModes() {
		It("captures, reports and replays in "+m.String()+" mode", func() {
			s, _ := d.CreateStream(device.Main, device.Blocking)
			x, _ := d.Malloc(device.Main, 16)
			Expect(d.Write(device.Main, x, make([]byte, 16))).To(Succeed())
			Expect(d.BeginCapture(device.Main, s, m)).To(Succeed())
			info, err := d.CaptureInfo(device.Other, s)
			Expect(err).NotTo(HaveOccurred())
			Expect(info).To(Equal(device.CaptureInfo{Status: device.CaptureActive, ID: info.ID, Origin: s, Mode: m}))
			Expect(info.ID).NotTo(BeZero())
			Expect(d.Fill(device.Main, s, x, 5)).To(Succeed())
			g, err := d.EndCapture(device.Main, s)
			Expect(err).NotTo(HaveOccurred())
			got := make([]byte, 16)
			Expect(d.Read(device.Main, got, x)).To(Succeed())
			Expect(got).To(Equal(make([]byte, 16)), "captured work did not run")
			Expect(d.Launch(device.Other, g, s)).To(Succeed())
			Expect(d.Read(device.Main, got, x)).To(Succeed())
			Expect(got).To(Equal(bytes.Repeat([]byte{5}, 16)))
			Expect(d.DestroyGraph(device.Main, g)).To(Succeed())
			Expect(d.Counters().Launches).To(Equal(int64(1)))
		})
	}
})

var _ = Describe("the kernel and threads", func() {
	It("launches the PTX axpy with (y, x, a, n) and one thread per lane, eagerly and in a graph", func(ctx SpecContext) {
		d, log := openLogged(ctx)
		const n = 300 // more lanes than one block of 256 threads
		xs, ys, want := make([]uint32, n), make([]uint32, n), make([]uint32, n)
		for i := range xs {
			xs[i], ys[i] = uint32(i)+1, 10*uint32(i)
		}
		xs[n-1] = 0xffffffff
		x, _ := d.Malloc(device.Main, 4*n)
		y, _ := d.Malloc(device.Main, 4*n)
		s, _ := d.CreateStream(device.Main, device.Blocking)
		Expect(d.Write(device.Main, x, lanes(xs...))).To(Succeed())
		Expect(d.Write(device.Main, y, lanes(ys...))).To(Succeed())
		Expect(d.Axpy(device.Other, s, y, x, 3)).To(Succeed())
		got := make([]byte, 4*n)
		Expect(d.Read(device.Main, got, y)).To(Succeed())
		for i := range want {
			want[i] = 3*xs[i] + ys[i]
		}
		Expect(got).To(Equal(lanes(want...)), "every lane, the last wrapping")
		Expect(calls(log)["cuLaunchKernel"]).To(HaveLen(1))

		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		Expect(d.Axpy(device.Main, s, y, x, 1)).To(Succeed())
		g, err := d.EndCapture(device.Main, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(calls(log)["cuLaunchKernel"]).To(HaveLen(2), "captured once")
		Expect(d.Read(device.Main, got, y)).To(Succeed())
		Expect(got).To(Equal(lanes(want...)), "captured work did not run")
		Expect(d.Launch(device.Main, g, s)).To(Succeed())
		Expect(d.Launch(device.Main, g, s)).To(Succeed())
		Expect(d.Read(device.Main, got, y)).To(Succeed())
		for i := range want {
			want[i] += 2 * xs[i]
		}
		Expect(got).To(Equal(lanes(want...)))
		c := calls(log)
		Expect(c["cuLaunchKernel"]).To(HaveLen(2), "a replay launches no kernel of its own")
		Expect(c["cuGraphLaunch"]).To(HaveLen(2))
		Expect(d.Axpy(device.Main, s, y, x.Slice(0, 8), 1)).To(MatchError(ContainSubstring("invalid-value")))
	})

	It("issues every call from the OS thread its Thread names, with the context current there", func(ctx SpecContext) {
		d, log := openLogged(ctx)
		s, _ := d.CreateStream(device.Main, device.Blocking)
		x, _ := d.Malloc(device.Other, 16)
		Expect(d.Fill(device.Other, s, x, 1)).To(Succeed())
		Expect(d.BeginCapture(device.Main, s, device.Relaxed)).To(Succeed())
		Expect(d.Fill(device.Other, s, x, 2)).To(Succeed())
		_, err := d.EndCapture(device.Other, s)
		Expect(err).NotTo(HaveOccurred())
		c := calls(log)
		main, other := c["cuStreamCreate"][0], c["cuMemAlloc_v2"][0]
		Expect(main).NotTo(Equal(other))
		Expect(c["cuCtxSetCurrent"]).To(ContainElements(main, other), "each worker made the context current on its own thread")
		Expect(c["cuModuleLoadData"]).To(Equal([]int{main}))
		Expect(c["cuMemsetD8Async"]).To(Equal([]int{other, other}))
		Expect(c["cuStreamBeginCapture_v2"]).To(Equal([]int{main}))
		Expect(c["cuStreamEndCapture"]).To(Equal([]int{other}))
	})
})

var _ = Describe("graph introspection", func() {
	var d device.Device
	BeforeEach(func(ctx SpecContext) { _, d = open(ctx, libs.full) })

	// capture captures work on a fresh stream and returns the graph, destroyed when the spec ends.
	capture := func(work func(s device.Stream)) device.Graph {
		GinkgoHelper()
		s, err := d.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		work(s)
		g, err := d.EndCapture(device.Main, s)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(d.DestroyGraph(device.Main, g)).To(Succeed()) })
		return g
	}

	It("lists memset and memcpy nodes with the exact ranges, device and host memory alike", func() {
		x, _ := d.Malloc(device.Main, 256)
		y, _ := d.Malloc(device.Main, 256)
		pinned, err := d.AllocHost(device.Main, 128, device.Pinned)
		Expect(err).NotTo(HaveOccurred())
		pageable, err := d.AllocHost(device.Main, 64, device.Pageable)
		Expect(err).NotTo(HaveOccurred())
		g := capture(func(s device.Stream) {
			Expect(d.Fill(device.Main, s, x.Slice(16, 32), 7)).To(Succeed())
			Expect(d.Copy(device.Main, s, y.Slice(100, 32), x.Slice(16, 32))).To(Succeed())   // device to device
			Expect(d.Copy(device.Main, s, x.Slice(128, 128), pinned)).To(Succeed())           // pinned host to device
			Expect(d.Copy(device.Main, s, pinned.Slice(8, 16), y.Slice(0, 16))).To(Succeed()) // device to pinned host
			Expect(d.Copy(device.Main, s, y.Slice(192, 64), pageable)).To(Succeed())          // pageable host to device
		})
		nodes, err := d.GraphNodes(device.Other, g)
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes).To(ConsistOf(
			device.GraphNode{Kind: "memset", Writes: []device.Ptr{x.Slice(16, 32)}},
			device.GraphNode{Kind: "memcpy", Reads: []device.Ptr{x.Slice(16, 32)}, Writes: []device.Ptr{y.Slice(100, 32)}},
			device.GraphNode{Kind: "memcpy", Reads: []device.Ptr{pinned}, Writes: []device.Ptr{x.Slice(128, 128)}},
			device.GraphNode{Kind: "memcpy", Reads: []device.Ptr{y.Slice(0, 16)}, Writes: []device.Ptr{pinned.Slice(8, 16)}},
			device.GraphNode{Kind: "memcpy", Reads: []device.Ptr{pageable}, Writes: []device.Ptr{y.Slice(192, 64)}},
		))
	})

	It("lists the axpy kernel node as a kernel, without ranges (kernel-node parameters are not bound)", func() {
		x, _ := d.Malloc(device.Main, 64)
		y, _ := d.Malloc(device.Main, 64)
		g := capture(func(s device.Stream) {
			Expect(d.Axpy(device.Main, s, y, x, 2)).To(Succeed())
			Expect(d.Fill(device.Main, s, x, 1)).To(Succeed())
		})
		nodes, err := d.GraphNodes(device.Main, g)
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes).To(ConsistOf(
			device.GraphNode{Kind: "kernel"},
			device.GraphNode{Kind: "memset", Writes: []device.Ptr{x}},
		))
	})

	It("lists an empty graph as no nodes", func() {
		nodes, err := d.GraphNodes(device.Main, capture(func(device.Stream) {}))
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes).To(BeEmpty())
	})

	It("reports a failed node query with the driver's code and the call that failed", func() {
		x, _ := d.Malloc(device.Main, 64)
		y, _ := d.Malloc(device.Main, 64)
		g := capture(func(s device.Stream) { Expect(d.Copy(device.Main, s, y, x)).To(Succeed()) })
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "cuGraphMemcpyNodeGetParams=400")
		_, err := d.GraphNodes(device.Main, g)
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue(), "%v", err)
		Expect([]any{e.Op, e.Code, e.Name, e.Class}).To(Equal([]any{"GraphNodes", 400, "CUDA_ERROR_INVALID_HANDLE", device.ClassInvalidValue}))
		Expect(e.Detail).To(HavePrefix("cuGraphMemcpyNodeGetParams: CUDA_ERROR_INVALID_HANDLE (400)"))
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "")
		_, err = d.GraphNodes(device.Main, g)
		Expect(err).NotTo(HaveOccurred())
	})

	It("is off, saying why, on a library without one of its entry points, which still opens and captures", func(ctx SpecContext) {
		_, d := open(ctx, libs.noIntrospection)
		Expect(d.Capabilities().GraphIntrospection).To(BeFalse())
		Expect(d.Capabilities().Kernels).To(BeTrue())
		x, _ := d.Malloc(device.Main, 64)
		s, _ := d.CreateStream(device.Main, device.Blocking)
		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		Expect(d.Fill(device.Main, s, x, 1)).To(Succeed())
		g, err := d.EndCapture(device.Main, s)
		Expect(err).NotTo(HaveOccurred())
		_, err = d.GraphNodes(device.Main, g)
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue(), "%v", err)
		Expect(e.Class).To(Equal(device.ClassNotSupported))
		Expect(e.Detail).To(Equal("the driver library lacks cuGraphMemcpyNodeGetParams: no graph introspection"))
	})
})

var _ = Describe("graph node ranges", func() {
	p := func(addr uint64, n int64) device.Ptr { return device.Ptr{Addr: addr, Bytes: n} }

	It("is one range for a 1-D memset, whatever the pitch", func() {
		r, ok := cuda.MemsetRanges(0x1000, 0, 1, 64, 1)
		Expect(ok).To(BeTrue())
		Expect(r).To(Equal([]device.Ptr{p(0x1000, 64)}))
		r, _ = cuda.MemsetRanges(0x1000, 7, 4, 16, 1)
		Expect(r).To(Equal([]device.Ptr{p(0x1000, 64)}), "width counts elements of elementSize bytes")
	})

	It("is one range per row for a pitched 2-D memset, merged where rows touch", func() {
		r, _ := cuda.MemsetRanges(0x1000, 256, 2, 32, 3)
		Expect(r).To(Equal([]device.Ptr{p(0x1000, 64), p(0x1100, 64), p(0x1200, 64)}))
		r, _ = cuda.MemsetRanges(0x1000, 64, 2, 32, 3)
		Expect(r).To(Equal([]device.Ptr{p(0x1000, 192)}))
	})

	It("offsets a copy side by its X, Y and Z, and lists each row of a 3-D copy", func() {
		side := cuda.CopySide{Type: 2, Addr: 0x10000, X: 8}
		r, err := cuda.CopyRanges("source", side, 32, 1, 1)
		Expect(err).NotTo(HaveOccurred())
		Expect(r).To(Equal([]device.Ptr{p(0x10008, 32)}))
		side = cuda.CopySide{Type: 1, Addr: 0x10000, X: 8, Y: 1, Z: 1, Pitch: 0x100, Height: 4}
		r, _ = cuda.CopyRanges("destination", side, 32, 2, 2)
		Expect(r).To(Equal([]device.Ptr{p(0x10508, 32), p(0x10608, 32), p(0x10908, 32), p(0x10a08, 32)}))
	})

	It("refuses a CUDA array side and a memory type cuda.h does not define", func() {
		_, err := cuda.CopyRanges("source", cuda.CopySide{Type: 3}, 8, 1, 1)
		Expect(err).To(MatchError("its source is a CUDA array, which has no address range"))
		_, err = cuda.CopyRanges("destination", cuda.CopySide{Type: 9}, 8, 1, 1)
		Expect(err).To(MatchError(ContainSubstring("memory type 9")))
	})

	It("refuses a region of too many separate rows", func() {
		_, ok := cuda.Pitched(0, 1, 2, 1<<17, 1, 1)
		Expect(ok).To(BeFalse())
		r, ok := cuda.Pitched(0, 2, 2, 1<<17, 1, 1)
		Expect(ok).To(BeTrue(), "touching rows merge")
		Expect(r).To(Equal([]device.Ptr{p(0, 1<<18)}))
	})
})

// profile is the simulator's profile the fake's tables are generated from.
func profile(name string) *sim.Profile {
	p, err := sim.LoadProfile(name)
	if err != nil {
		panic(err)
	}
	return p
}

// The conformance suite on the full fake. Each spec closes its backend after its device (the
// cleanups run last registered first), so that it leaves no library loaded.
var _ = conformance.Describe("cuda fake", func(ctx context.Context) (device.Device, error) {
	b, err := cuda.New(cuda.Options{Library: libs.full})
	if err != nil {
		return nil, err
	}
	d, err := b.Open(ctx, 0)
	if err != nil {
		return nil, errors.Join(err, b.Close())
	}
	DeferCleanup(b.Close)
	return d, nil
}, conformance.Options{Memory: 1 << 30, Labels: []string{"fake"}, SyncCopiesOnLegacyStream: true, EndCaptureInstantiates: true,
	ErrorCode: profile("cuda").ErrorCode})

// With REPLAYCHECK_HARDWARE=cuda: the conformance suite on device 0 of the driver the binding's
// own search finds (Options{}: $REPLAYCHECK_CUDA_LIB, else libcuda.so.1), opened by BeforeSuite.
// The suite's captures are of Blocking streams but for its non-blocking spec, so its synchronous
// copies are legacy-stream work (measured on an H200, driver 13.0: 906 during any capture of a
// blocking stream), and the fake's too. The binding's EndCapture instantiates the graph
// (cuGraphInstantiateWithFlags), an unsafe call the other captures in progress may refuse
// (measured on the same H200: 900), in the fake too.
var _ = onHardware && conformance.Describe("cuda hardware", func(ctx context.Context) (device.Device, error) {
	if hardware == nil {
		return nil, errors.New("no hardware backend: BeforeSuite did not open it")
	}
	d, err := hardware.Open(ctx, 0)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(d.Platform(), "-replaycheck-fake") {
		return nil, errors.Join(fmt.Errorf("%s is the fake, not hardware", hardware.Source()), d.Close())
	}
	return d, nil
}, conformance.Options{Labels: []string{"hardware"}, SyncCopiesOnLegacyStream: true, EndCaptureInstantiates: true})

var _ = onHardware && Describe("the hardware", Label("hardware"), func() {
	It("is what the binding's search finds, a real device with a platform key of its own", func(ctx SpecContext) {
		n, err := hardware.Devices(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(BeNumerically(">", 0))
		info, err := hardware.Info(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("device 0", fmt.Sprintf("%+v from %s", info, hardware.Source()))
		Expect(info.Name).NotTo(BeEmpty())
		Expect(info.Platform).To(HavePrefix("cuda/"))
		Expect(info.Platform).NotTo(HaveSuffix("-replaycheck-fake"))
		d, err := hardware.Open(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(d.Close)
		Expect(d.Capabilities().Kernels).To(BeTrue(), "the driver JIT-compiles the axpy PTX")
	})
})

// With REPLAYCHECK_HARDWARE=cuda, one line says what ran on the hardware, for make device-check's
// summary: "hardware specs: N passed, N failed, N skipped".
var _ = ReportAfterSuite("hardware specs", func(r Report) {
	if !onHardware {
		return
	}
	var passed, failed, skipped int
	for _, s := range r.SpecReports {
		switch {
		case s.LeafNodeType != types.NodeTypeIt || !slices.Contains(s.Labels(), "hardware"):
		case s.State.Is(types.SpecStatePassed):
			passed++
		case s.State.Is(types.SpecStateSkipped | types.SpecStatePending):
			skipped++
		default:
			failed++
		}
	}
	fmt.Printf("\nhardware specs: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
})
