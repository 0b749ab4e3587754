//go:build cgo

package acl_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/acl"
	"github.com/replaycheck/replaycheck/runtime/conformance"
	"github.com/replaycheck/replaycheck/runtime/internal/dl"
)

// fake compiles testdata/fake_acl.c (a small ACL double) with extra flags into a fresh directory.
func fake(flags ...string) string {
	GinkgoHelper()
	out := filepath.Join(GinkgoT().TempDir(), "libascendcl.so")
	args := append([]string{"-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-pthread", "-Itestdata", "-o", out}, flags...)
	msg, err := exec.Command("cc", append(args, "testdata/fake_acl.c")...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(msg))
	return out
}

// open opens device 0 of the double at path; both close when the spec ends.
func open(ctx context.Context, path string) (runtime.Backend, runtime.Device) {
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

// lib is the double every spec shares, built once for the suite.
var lib string

var _ = BeforeSuite(func() { lib = fake() })

var _ = Describe("opening", func() {
	It("loads the library named explicitly, reports where from, and names the platform", func(ctx SpecContext) {
		b, d := open(ctx, lib)
		Expect(b.Source()).To(Equal(lib))
		Expect(b.Name()).To(Equal("acl"))
		Expect(d.Platform()).To(Equal("acl/cann-9.0-a2a3"))
		Expect(d.Describe()).To(ContainSubstring("Ascend910B3"))
		info, err := b.Info(ctx, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(info).To(Equal(runtime.DeviceInfo{Name: "Ascend910B3", Memory: 1 << 31, Driver: "25.0.rc1", Runtime: "9.0.0", Platform: "acl/cann-9.0-a2a3"}))
		caps := d.Capabilities()
		Expect(caps.Kernels).To(BeFalse())
		Expect(caps.ThreadRules).To(BeTrue())
	})

	It("loads the library named by $REPLAYCHECK_ACL_LIB", func() {
		GinkgoT().Setenv(acl.EnvLibrary, lib)
		b, err := acl.New(acl.Options{})
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Source()).To(Equal(lib))
		Expect(b.Close()).To(Succeed())
	})

	It("fails without a library, listing every path it tried", func() {
		GinkgoT().Setenv(acl.EnvLibrary, "")
		GinkgoT().Setenv("ASCEND_HOME_PATH", "/nonexistent/ascend")
		GinkgoT().Setenv("LD_LIBRARY_PATH", "")
		_, err := acl.New(acl.Options{Library: "/nonexistent/libascendcl.so"})
		Expect(errors.Is(err, acl.ErrNoLibrary)).To(BeTrue())
		Expect(err.Error()).To(ContainSubstring("/nonexistent/libascendcl.so"))
		if _, err := os.Stat("/usr/local/Ascend"); err == nil {
			Skip("a CANN install is present")
		}
		_, err = acl.New(acl.Options{})
		var nl *acl.NoLibraryError
		Expect(errors.As(err, &nl)).To(BeTrue())
		Expect(nl.Tried).To(HaveLen(len(acl.SearchPaths())))
		Expect(err.Error()).To(ContainSubstring("/nonexistent/ascend/lib64/libascendcl.so"))
		Expect(err.Error()).To(ContainSubstring("/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so"))
	})

	It("fails on a library without a required symbol, naming it", func() {
		_, err := acl.New(acl.Options{Library: fake("-DOMIT_MEMSET")})
		var missing *dl.MissingError
		Expect(errors.As(err, &missing)).To(BeTrue())
		Expect(missing.Symbols).To(Equal([]string{"aclrtMemsetAsync"}))
	})

	It("reports an aclInit failure as no driver", func() {
		GinkgoT().Setenv("FAKE_FAIL", "aclInit=507000")
		_, err := acl.New(acl.Options{Library: fake("-DVARIANT_INIT")})
		Expect(errors.Is(err, acl.ErrNoDriver)).To(BeTrue(), "%v", err)
		e, ok := runtime.AsError(err)
		Expect(ok).To(BeTrue())
		Expect(e.Code).To(Equal(507000))
		Expect(e.Detail).To(ContainSubstring("injected failure"))
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
			Expect(d.Copy(runtime.Main, s, x, h)).To(Succeed()) // 32 bytes: the shorter side
			Expect(d.Fill(runtime.Main, s, x, 1)).To(Succeed())
			Expect(d.Copy(runtime.Main, s, h.Slice(0, 8), x)).To(Succeed())
			out := make([]byte, 32)
			Expect(d.HostRead(out, h)).To(Succeed())
			Expect(out).To(Equal(append(bytes.Repeat([]byte{1}, 8), bytes.Repeat([]byte{7}, 24)...)))
			Expect(d.FreeHost(runtime.Other, h)).To(Succeed())
		}
		c := d.Counters()
		Expect(c.LiveAllocs).To(Equal(int64(2)))
		Expect(c.LiveBytes).To(Equal(int64(128)))
		Expect(c.HostAllocs).To(Equal(int64(2)))
		Expect(c.LiveHostAllocs).To(BeZero())
		Expect(d.Axpy(runtime.Main, s, x, y, 2)).To(MatchError(ContainSubstring("not-supported")))
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
			Expect(g).NotTo(BeZero())
			got := make([]byte, 16)
			Expect(d.Read(runtime.Main, got, x)).To(Succeed())
			Expect(got).To(Equal(make([]byte, 16)), "captured work did not run")
			Expect(d.Launch(runtime.Other, g, s)).To(Succeed())
			Expect(d.Read(runtime.Main, got, x)).To(Succeed())
			Expect(got).To(Equal(bytes.Repeat([]byte{5}, 16)))
			Expect(d.DestroyGraph(runtime.Main, g)).To(Succeed())
			Expect(d.Counters().Launches).To(Equal(int64(1)))
		})
	}

	It("maps a platform code to its name and class, with aclGetRecentErrMsg as the detail", func() {
		s, _ := d.CreateStream(runtime.Main)
		x, _ := d.Malloc(runtime.Main, 16)
		Expect(d.BeginCapture(runtime.Main, s, runtime.Global)).To(Succeed())
		Expect(d.Fill(runtime.Main, s, x, 1)).To(Succeed())
		err := d.SyncStream(runtime.Main, s)
		e, ok := err.(*runtime.Error)
		Expect(ok).To(BeTrue(), "%v", err)
		Expect(*e).To(Equal(runtime.Error{Backend: "acl", Op: "SyncStream", Code: 107027, Name: "ACL_ERROR_RT_STREAM_CAPTURED",
			Class: runtime.ClassCapturedStream, Detail: "fake: aclrtSynchronizeStream: the stream is capturing (107027)"}))
		err = d.Write(runtime.Main, x, make([]byte, 16))
		Expect(runtime.ClassOf(err)).To(Equal(runtime.ClassCaptureMode))
		_, err = d.EndCapture(runtime.Other, s)
		Expect(runtime.ClassOf(err)).To(Equal(runtime.ClassWrongThread))
		info, err := d.CaptureInfo(runtime.Main, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(info).To(Equal(runtime.CaptureInfo{}), "the wrong-thread end tore the capture down")
	})

	It("answers injected codes through the one table", func() {
		for code, want := range map[int]runtime.Class{
			107024: runtime.ClassCaptureDependency, 107025: runtime.ClassCaptureUnjoined, 107031: runtime.ClassCaptureImplicit,
			107032: runtime.ClassCaptureConflict, 200000: runtime.ClassOutOfMemory, 207018: runtime.ClassOutOfMemory,
			200006: runtime.ClassNotSupported, 507000: runtime.ClassInternal, 507903: runtime.ClassCaptureInvalidated, 123: runtime.ClassInternal,
		} {
			GinkgoT().Setenv("FAKE_FAIL", "aclrtMalloc="+itoa(code))
			_, err := d.Malloc(runtime.Main, 8)
			e, ok := runtime.AsError(err)
			Expect(ok).To(BeTrue())
			Expect(e.Code).To(Equal(code))
			Expect(e.Class).To(Equal(want), "code %d", code)
			Expect(e.Detail).To(ContainSubstring("injected failure"))
		}
		Expect(d.Counters().Mallocs).To(BeZero())
	})

	It("issues every call from the OS thread its Thread names", func() {
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
		raw, err := os.ReadFile(logFile)
		Expect(err).NotTo(HaveOccurred())
		byCall := func(name string) []string {
			var out []string
			for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
				if f := strings.Fields(line); f[0] == name {
					out = append(out, f[1])
				}
			}
			return out
		}
		main, other := byCall("aclrtCreateStream")[0], byCall("aclrtMalloc")[0]
		Expect(main).NotTo(Equal(other))
		Expect(byCall("aclrtMemsetAsync")).To(Equal([]string{other, other}))
		Expect(byCall("aclmdlRICaptureBegin")).To(Equal([]string{main}))
		Expect(byCall("aclmdlRICaptureEnd")).To(Equal([]string{other}))
	})
})

func itoa(n int) string {
	var b []byte
	if n == 0 {
		return "0"
	}
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// The conformance suite runs on the double. The backend's Close is left to the process: the
// suite closes only the device.
var _ = conformance.Describe("acl double", func(ctx context.Context) (runtime.Device, error) {
	b, err := acl.New(acl.Options{Library: lib})
	if err != nil {
		return nil, err
	}
	d, err := b.Open(ctx, 0)
	if err != nil {
		return nil, err
	}
	return d, nil
}, conformance.Options{Memory: 1 << 30, Labels: []string{"double"}})
