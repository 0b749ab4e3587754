//go:build cgo

package cuda_test

import (
	"encoding/binary"
	"errors"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/conformance"
	"github.com/replaycheck/replaycheck/device/cuda"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/device/internal/bind/bindtest"
)

// suite runs the specs both bindings share (bindtest) over the fake libcuda.so.1 builds (with one
// more: without cuGraphMemcpyNodeGetParams, one of the optional graph-introspection symbols) and,
// with REPLAYCHECK_HARDWARE=cuda, over the real driver.
var suite = bindtest.Run(bindtest.Binding{
	Fake:         fake.CUDA,
	New:          func(library string) (device.Backend, error) { return cuda.New(cuda.Options{Library: library}) },
	EnvLibrary:   cuda.EnvLibrary,
	ErrNoLibrary: cuda.ErrNoLibrary,
	Lookup:       cuda.Lookup,
	Missing:      "cuMemsetD8Async",
	Variants:     map[string]fake.Variant{"no-introspection": {Omit: "cuGraphMemcpyNodeGetParams"}},
	Kernels:      true,
	Calls: bindtest.Entries{
		Init: "cuInit", Bind: "cuCtxSetCurrent", CreateStream: "cuStreamCreate", Malloc: "cuMemAlloc_v2",
		Fill: "cuMemsetD8Async", BeginCapture: "cuStreamBeginCapture_v2", EndCapture: "cuStreamEndCapture",
		OnMain: []string{"cuModuleLoadData"},
	},
	Injected: map[int]device.Class{
		2: device.ClassOutOfMemory, 700: device.ClassIllegalAddress, 902: device.ClassCaptureConflict,
		903: device.ClassCaptureUnmatched, 904: device.ClassCaptureUnjoined, 905: device.ClassCaptureDependency,
		906: device.ClassCaptureImplicit, 907: device.ClassCapturedEvent, 908: device.ClassWrongThread,
		801: device.ClassNotSupported, 4242: device.ClassInternal,
	},
	Detail: func(code int) (types.GomegaMatcher, string) {
		if code == 4242 {
			return BeEmpty(), fmt.Sprintf("cuGetErrorString knows no text for %d", code)
		}
		return Not(BeEmpty()), fmt.Sprintf("cuGetErrorString's text for %d", code)
	},
	// The conformance suite's captures are of Blocking streams but for its non-blocking spec, so
	// its synchronous copies are legacy-stream work (measured on an H200, driver 13.0: 906 during
	// any capture of a blocking stream), and the fake's too. The binding's EndCapture
	// instantiates the graph (cuGraphInstantiateWithFlags), an unsafe call the other captures in
	// progress may refuse (measured on the same H200: 900), in the fake too.
	Conformance:    conformance.Options{SyncCopiesOnLegacyStream: true, EndCaptureInstantiates: true},
	PlatformPrefix: "cuda/",
})

var (
	onHardware = suite.OnHardware
	libs       = &suite.Libs
	open       = suite.Open
	openLogged = suite.OpenLogged
	calls      = bindtest.Calls
	profile    = bindtest.Profile
)

func lanes(vs ...uint32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

var _ = Describe("opening", func() {
	It("loads the library named explicitly, reports where from, and names the platform", func(ctx SpecContext) {
		b, d := open(ctx, libs.Full)
		Expect(b.Source()).To(Equal(libs.Full))
		Expect(b.Name()).To(Equal("cuda"))
		Expect(d.Platform()).To(Equal("cuda/12.4-replaycheck-fake"))
		Expect(d.Describe()).To(Equal(fmt.Sprintf("cuda device 0 (replaycheck fake, driver 12.4, %s)", libs.Full)))
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

	It("fails without a library, listing the path it tried", func() {
		_, err := cuda.New(cuda.Options{Library: "/nonexistent/libcuda.so.1"})
		Expect(errors.Is(err, cuda.ErrNoLibrary)).To(BeTrue())
		Expect(errors.Is(err, cuda.ErrNoDriver)).To(BeFalse())
		var nl *cuda.NoLibraryError
		Expect(errors.As(err, &nl)).To(BeTrue())
		Expect(nl.Tried).To(HaveLen(1))
		Expect(err.Error()).To(ContainSubstring("/nonexistent/libcuda.so.1"))
	})

	It("reports the toolkit's stub library (cuInit 34) as no driver, not as no library", func() {
		_, err := cuda.New(cuda.Options{Library: libs.Stub})
		Expect(errors.Is(err, cuda.ErrNoDriver)).To(BeTrue(), "%v", err)
		Expect(errors.Is(err, cuda.ErrNoLibrary)).To(BeFalse())
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue())
		Expect(e.Code).To(Equal(34))
		Expect(e.Name).To(Equal("CUDA_ERROR_STUB_LIBRARY"))
		Expect(e.Detail).To(Equal("CUDA driver is a stub library"))
		Expect(err.Error()).To(ContainSubstring(libs.Stub + " is the toolkit's stub library"))
	})

	It("reports any other cuInit failure as no driver", func() {
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "cuInit=100")
		_, err := cuda.New(cuda.Options{Library: libs.Full})
		Expect(errors.Is(err, cuda.ErrNoDriver)).To(BeTrue(), "%v", err)
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue())
		Expect(e.Code).To(Equal(100))
		Expect(e.Name).To(Equal("CUDA_ERROR_NO_DEVICE"))
		Expect(err.Error()).To(ContainSubstring(libs.Full + ": cuInit: "))
	})
})

var _ = Describe("a device", func() {
	var d device.Device
	BeforeEach(func(ctx SpecContext) { _, d = open(ctx, libs.Full) })

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
})

var _ = Describe("the kernel", func() {
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
})

var _ = Describe("graph introspection", func() {
	var d device.Device
	BeforeEach(func(ctx SpecContext) { _, d = open(ctx, libs.Full) })

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
		_, d := open(ctx, libs.Extra["no-introspection"])
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
