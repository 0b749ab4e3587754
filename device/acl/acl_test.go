//go:build cgo

package acl_test

import (
	"errors"
	"fmt"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/acl"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/device/internal/bind/bindtest"
)

// suite runs the specs both bindings share (bindtest) over the fake libascendcl.so builds (with one
// more: without aclmdlRIGetTasksByStream, one of the optional graph-reading symbols) and, with
// REPLAYCHECK_HARDWARE=acl, over the real runtime.
var suite = bindtest.Run(bindtest.Binding{
	Fake:         fake.ACL,
	New:          func(library string) (device.Backend, error) { return acl.New(acl.Options{Library: library}) },
	EnvLibrary:   acl.EnvLibrary,
	ErrNoLibrary: acl.ErrNoLibrary,
	Lookup:       acl.Lookup,
	Missing:      "aclrtMemsetAsync",
	Variants:     map[string]fake.Variant{"no-graph-reading": {Omit: "aclmdlRIGetTasksByStream"}},
	Calls: bindtest.Entries{
		Init: "aclInit", Bind: "aclrtSetDevice", CreateStream: "aclrtCreateStream", Malloc: "aclrtMalloc",
		Fill: "aclrtMemsetAsync", BeginCapture: "aclmdlRICaptureBegin", EndCapture: "aclmdlRICaptureEnd",
	},
	Injected: map[int]device.Class{
		107024: device.ClassCaptureDependency, 107025: device.ClassCaptureUnjoined, 107031: device.ClassCaptureImplicit,
		107032: device.ClassCaptureConflict, 200000: device.ClassOutOfMemory, 207018: device.ClassOutOfMemory,
		200006: device.ClassNotSupported, 207004: device.ClassNotSupported, 507000: device.ClassInternal,
		507903: device.ClassCaptureInvalidated, 123: device.ClassInternal,
	},
	Detail: func(code int) (types.GomegaMatcher, string) {
		return Equal(injected("aclrtMalloc", code)), "the fake's detail, through aclGetRecentErrMsg"
	},
	PlatformPrefix: "acl/cann-",
})

var (
	onHardware = suite.OnHardware
	libs       = &suite.Libs
	open       = suite.Open
)

// injected is the detail the fake gives a failure REPLAYCHECK_FAKE_FAIL injected.
func injected(entry string, code int) string {
	return fmt.Sprintf("%s: failure %d injected by REPLAYCHECK_FAKE_FAIL", entry, code)
}

var _ = Describe("opening", func() {
	It("loads the library named explicitly, reports where from, and names the platform", func(ctx SpecContext) {
		b, d := open(ctx, libs.Full)
		Expect(b.Source()).To(Equal(libs.Full))
		Expect(b.Name()).To(Equal("acl"))
		Expect(d.Platform()).To(Equal("acl/cann-9.0-replaycheck-fake"))
		Expect(d.Describe()).To(Equal(fmt.Sprintf("acl device 0 (replaycheck-fake, CANN runtime 9.0.0, %s)", libs.Full)))
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
		Expect(caps.GraphIntrospection).To(BeTrue(), "the fake exports the three graph-reading calls")
		Expect(caps.FaultInjection).To(BeTrue(), "the fake exports its fault-injection entry points (the conformance suite's fault specs need them)")
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
			Skip("the real runtime is loaded (" + bindtest.EnvHardware + "=acl)")
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

	It("reports a runtime without its driver (aclrtGetDeviceCount 207004) as no driver, not as no library", func() {
		_, err := acl.New(acl.Options{Library: libs.Stub})
		Expect(errors.Is(err, acl.ErrNoDriver)).To(BeTrue(), "%v", err)
		Expect(errors.Is(err, acl.ErrNoLibrary)).To(BeFalse())
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue())
		Expect(e.Code).To(Equal(207004))
		Expect(e.Name).To(Equal("ACL_ERROR_RT_NO_DEVICE"))
		Expect(e.Class).To(Equal(device.ClassNotSupported))
		Expect(e.Detail).To(ContainSubstring("no Ascend device"))
		Expect(err.Error()).To(ContainSubstring(libs.Stub + ": aclrtGetDeviceCount: "))
	})

	It("reports an aclInit failure as no driver, with aclGetRecentErrMsg as the detail", func() {
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "aclInit=507000")
		_, err := acl.New(acl.Options{Library: libs.Full})
		Expect(errors.Is(err, acl.ErrNoDriver)).To(BeTrue(), "%v", err)
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue())
		Expect(e.Code).To(Equal(507000))
		Expect(e.Name).To(Equal("ACL_ERROR_RT_INTERNAL_ERROR"))
		Expect(e.Detail).To(Equal(injected("aclInit", 507000)))
		Expect(err.Error()).To(ContainSubstring(libs.Full + ": aclInit: "))
	})
})

var _ = Describe("a device", func() {
	var d device.Device
	BeforeEach(func(ctx SpecContext) { _, d = open(ctx, libs.Full) })

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
})
