//go:build cgo

package acl_test

import (
	"bytes"
	"context"
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
	"github.com/replaycheck/replaycheck/device/acl"
	"github.com/replaycheck/replaycheck/device/conformance"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/internal/dl"
)

// envHardware names the environment variable that turns on the specs on the real runtime:
// REPLAYCHECK_HARDWARE=acl (make device-check sets it). Without it no hardware is touched.
const envHardware = "REPLAYCHECK_HARDWARE"

var onHardware = os.Getenv(envHardware) == "acl"

// libs are the fake libascendcl.so builds (device/fake) the suite shares, made once by
// BeforeSuite: the full library, a second copy of it for the specs that read the call log (the
// fake reads REPLAYCHECK_FAKE_LOG at a copy's first call), the stub (a runtime without its driver)
// and one without aclrtMemsetAsync.
var libs struct{ full, logged, stub, missing string }

// hardware is the real runtime the binding's own search finds, with REPLAYCHECK_HARDWARE=acl.
var hardware device.Backend

var _ = BeforeSuite(func() {
	if onHardware {
		// First, before any fake loads: a fake's soname is libascendcl.so too, and the dynamic
		// loader answers dlopen("libascendcl.so") with a library of that soname already loaded.
		b, err := acl.New(acl.Options{})
		Expect(err).NotTo(HaveOccurred(), "%s=acl, but the binding's search finds no usable ACL runtime", envHardware)
		hardware = b
		DeferCleanup(b.Close)
	}
	dir := GinkgoT().TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, v := range []struct {
		out     *string
		name    string
		variant fake.Variant
	}{
		{&libs.full, "full", fake.Variant{}},
		{&libs.stub, "stub", fake.Variant{Stub: true}},
		{&libs.missing, "missing", fake.Variant{Omit: "aclrtMemsetAsync"}},
	} {
		wg.Go(func() { *v.out, errs[i] = fake.Build(filepath.Join(dir, v.name), fake.ACL, v.variant) })
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
	b, err := acl.New(acl.Options{Library: path})
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
	Expect(calls(log)).To(HaveKey("aclInit"), "the logged fake was loaded before this spec set REPLAYCHECK_FAKE_LOG")
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

// injected is the detail the fake gives a failure REPLAYCHECK_FAKE_FAIL injected.
func injected(entry string, code int) string {
	return fmt.Sprintf("%s: failure %d injected by REPLAYCHECK_FAKE_FAIL", entry, code)
}

var _ = Describe("opening", func() {
	It("loads the library named explicitly, reports where from, and names the platform", func(ctx SpecContext) {
		b, d := open(ctx, libs.full)
		Expect(b.Source()).To(Equal(libs.full))
		Expect(b.Name()).To(Equal("acl"))
		Expect(d.Platform()).To(Equal("acl/cann-9.0-replaycheck-fake"))
		Expect(d.Describe()).To(Equal(fmt.Sprintf("acl device 0 (replaycheck-fake, CANN runtime 9.0.0, %s)", libs.full)))
		n, err := b.Devices(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(1))
		info, err := b.Info(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(info).To(Equal(device.DeviceInfo{Name: "replaycheck-fake", Memory: 1 << 30, Driver: "replaycheck-fake", Runtime: "9.0.0",
			Platform: "acl/cann-9.0-replaycheck-fake"}))
		_, err = b.Info(ctx, 1)
		Expect(device.ClassOf(err)).To(Equal(device.ClassInvalidValue))
		_, err = b.Open(ctx, 1)
		Expect(device.ClassOf(err)).To(Equal(device.ClassInvalidValue))
		caps := d.Capabilities()
		Expect(caps.Kernels).To(BeFalse())
		Expect(caps.ThreadRules).To(BeTrue())
		Expect(caps.FaultInjection).To(BeTrue(), "the fake exports its fault-injection entry points (the conformance suite's fault specs need them)")
	})

	It("loads the library named by $REPLAYCHECK_ACL_LIB", func() {
		GinkgoT().Setenv(acl.EnvLibrary, libs.full)
		b, err := acl.New(acl.Options{})
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Source()).To(Equal(libs.full))
		Expect(b.Close()).To(Succeed())
	})

	It("fails without a library, listing every path it tried", func() {
		GinkgoT().Setenv(acl.EnvLibrary, "")
		GinkgoT().Setenv("ASCEND_HOME_PATH", "/nonexistent/ascend")
		GinkgoT().Setenv("LD_LIBRARY_PATH", "")
		_, err := acl.New(acl.Options{Library: "/nonexistent/libascendcl.so"})
		Expect(errors.Is(err, acl.ErrNoLibrary)).To(BeTrue())
		Expect(errors.Is(err, acl.ErrNoDriver)).To(BeFalse())
		Expect(err.Error()).To(ContainSubstring("/nonexistent/libascendcl.so"))
		if onHardware {
			Skip("the real runtime is loaded (" + envHardware + "=acl)")
		}
		if _, err := os.Stat("/usr/local/Ascend"); err == nil {
			Skip("a CANN install is present")
		}
		b, err := acl.New(acl.Options{})
		if err == nil {
			defer b.Close()
			Fail("the search found a runtime: " + b.Source() + " (a fake left loaded answers dlopen of its soname)")
		}
		var nl *acl.NoLibraryError
		Expect(errors.As(err, &nl)).To(BeTrue())
		Expect(nl.Tried).To(HaveLen(len(acl.SearchPaths())))
		Expect(err.Error()).To(ContainSubstring("/nonexistent/ascend/lib64/libascendcl.so"))
		Expect(err.Error()).To(ContainSubstring("/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so"))
	})

	It("fails on a library without a required symbol, naming it", func() {
		_, err := acl.New(acl.Options{Library: libs.missing})
		var missing *dl.MissingError
		Expect(errors.As(err, &missing)).To(BeTrue(), "%v", err)
		Expect(missing.Symbols).To(Equal([]string{"aclrtMemsetAsync"}))
		Expect(errors.Is(err, acl.ErrNoLibrary)).To(BeFalse())
	})

	It("reports a runtime without its driver (aclrtGetDeviceCount 207004) as no driver, not as no library", func() {
		_, err := acl.New(acl.Options{Library: libs.stub})
		Expect(errors.Is(err, acl.ErrNoDriver)).To(BeTrue(), "%v", err)
		Expect(errors.Is(err, acl.ErrNoLibrary)).To(BeFalse())
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue())
		Expect(e.Code).To(Equal(207004))
		Expect(e.Name).To(Equal("ACL_ERROR_RT_NO_DEVICE"))
		Expect(e.Class).To(Equal(device.ClassNotSupported))
		Expect(e.Detail).To(ContainSubstring("no Ascend device"))
		Expect(err.Error()).To(ContainSubstring(libs.stub + ": aclrtGetDeviceCount: "))
	})

	It("reports an aclInit failure as no driver, with aclGetRecentErrMsg as the detail", func() {
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "aclInit=507000")
		_, err := acl.New(acl.Options{Library: libs.full})
		Expect(errors.Is(err, acl.ErrNoDriver)).To(BeTrue(), "%v", err)
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue())
		Expect(e.Code).To(Equal(507000))
		Expect(e.Name).To(Equal("ACL_ERROR_RT_INTERNAL_ERROR"))
		Expect(e.Detail).To(Equal(injected("aclInit", 507000)))
		Expect(err.Error()).To(ContainSubstring(libs.full + ": aclInit: "))
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
			Expect(d.Copy(device.Main, s, x, h)).To(Succeed()) // 32 bytes: the shorter side
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
		Expect(d.Axpy(device.Main, s, x, y, 2)).To(MatchError(ContainSubstring("not-supported")))
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
			Expect(g).NotTo(BeZero())
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

	It("maps a platform code to its name and class, with aclGetRecentErrMsg as the detail", func() {
		s, _ := d.CreateStream(device.Main, device.Blocking)
		x, _ := d.Malloc(device.Main, 16)
		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		Expect(d.Fill(device.Main, s, x, 1)).To(Succeed())
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "aclrtSynchronizeStream=107027")
		err := d.SyncStream(device.Main, s)
		e, ok := err.(*device.Error)
		Expect(ok).To(BeTrue(), "%v", err)
		Expect(*e).To(Equal(device.Error{Backend: "acl", Op: "SyncStream", Code: 107027, Name: "ACL_ERROR_RT_STREAM_CAPTURED",
			Class: device.ClassCapturedStream, Detail: injected("aclrtSynchronizeStream", 107027)}))
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "")

		// The profile's rule answers the same call alike, in its own words.
		err = d.SyncStream(device.Main, s)
		e, ok = device.AsError(err)
		Expect(ok).To(BeTrue(), "%v", err)
		Expect([]any{e.Code, e.Name, e.Class, e.Invalidated}).To(Equal([]any{107027, "ACL_ERROR_RT_STREAM_CAPTURED", device.ClassCapturedStream, false}))
		Expect(e.Detail).To(ContainSubstring("profile cann"))
		err = d.Write(device.Main, x, make([]byte, 16))
		Expect(device.ClassOf(err)).To(Equal(device.ClassCaptureMode))
		_, err = d.EndCapture(device.Other, s)
		Expect(device.ClassOf(err)).To(Equal(device.ClassWrongThread))
		info, err := d.CaptureInfo(device.Main, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(info).To(Equal(device.CaptureInfo{}), "the wrong-thread end tore the capture down")
	})

	It("answers injected codes through the one table", func() {
		for code, want := range map[int]device.Class{
			107024: device.ClassCaptureDependency, 107025: device.ClassCaptureUnjoined, 107031: device.ClassCaptureImplicit,
			107032: device.ClassCaptureConflict, 200000: device.ClassOutOfMemory, 207018: device.ClassOutOfMemory,
			200006: device.ClassNotSupported, 207004: device.ClassNotSupported, 507000: device.ClassInternal,
			507903: device.ClassCaptureInvalidated, 123: device.ClassInternal,
		} {
			GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "aclrtMalloc="+strconv.Itoa(code))
			_, err := d.Malloc(device.Main, 8)
			e, ok := device.AsError(err)
			Expect(ok).To(BeTrue())
			Expect(e.Code).To(Equal(code))
			name, _ := acl.Lookup(code)
			Expect(e.Name).To(Equal(name))
			Expect(e.Class).To(Equal(want), "code %d", code)
			Expect(e.Detail).To(Equal(injected("aclrtMalloc", code)))
		}
		Expect(d.Counters().Mallocs).To(BeZero())
	})
})

var _ = Describe("threads", func() {
	It("issues every call from the OS thread its Thread names", func(ctx SpecContext) {
		d, log := openLogged(ctx)
		s, _ := d.CreateStream(device.Main, device.Blocking)
		x, _ := d.Malloc(device.Other, 16)
		Expect(d.Fill(device.Other, s, x, 1)).To(Succeed())
		Expect(d.BeginCapture(device.Main, s, device.Relaxed)).To(Succeed())
		Expect(d.Fill(device.Other, s, x, 2)).To(Succeed())
		_, err := d.EndCapture(device.Other, s)
		Expect(err).NotTo(HaveOccurred())
		c := calls(log)
		main, other := c["aclrtCreateStream"][0], c["aclrtMalloc"][0]
		Expect(main).NotTo(Equal(other))
		Expect(c["aclrtSetDevice"]).To(ContainElements(main, other), "each worker set the device on its own thread")
		Expect(c["aclrtMemsetAsync"]).To(Equal([]int{other, other}))
		Expect(c["aclmdlRICaptureBegin"]).To(Equal([]int{main}))
		Expect(c["aclmdlRICaptureEnd"]).To(Equal([]int{other}))
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
var _ = conformance.Describe("acl fake", func(ctx context.Context) (device.Device, error) {
	b, err := acl.New(acl.Options{Library: libs.full})
	if err != nil {
		return nil, err
	}
	d, err := b.Open(ctx, 0)
	if err != nil {
		return nil, errors.Join(err, b.Close())
	}
	DeferCleanup(b.Close)
	return d, nil
}, conformance.Options{Memory: 1 << 30, Labels: []string{"fake"}, ErrorCode: profile("cann").ErrorCode})

// With REPLAYCHECK_HARDWARE=acl: the conformance suite on device 0 of the runtime the binding's
// own search finds (Options{}: $REPLAYCHECK_ACL_LIB, else SearchPaths), opened by BeforeSuite.
var _ = onHardware && conformance.Describe("acl hardware", func(ctx context.Context) (device.Device, error) {
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
}, conformance.Options{Labels: []string{"hardware"}})

var _ = onHardware && Describe("the hardware", Label("hardware"), func() {
	It("is what the binding's search finds, a real device with a platform key of its own", func(ctx SpecContext) {
		n, err := hardware.Devices(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(BeNumerically(">", 0))
		info, err := hardware.Info(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("device 0", fmt.Sprintf("%+v from %s", info, hardware.Source()))
		Expect(info.Name).NotTo(BeEmpty())
		Expect(info.Platform).To(HavePrefix("acl/cann-"))
		Expect(info.Platform).NotTo(HaveSuffix("-replaycheck-fake"))
	})
})

// With REPLAYCHECK_HARDWARE=acl, one line says what ran on the hardware, for make device-check's
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
