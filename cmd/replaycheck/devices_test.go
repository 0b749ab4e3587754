package main_test

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/cmd/replaycheck/internal/cli"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/device/fake"
)

// devices tells apart what looks alike from outside: no library, a library without a driver, a
// library missing an entry point, and a usable device.
var _ = Describe("replaycheck devices on a host with a driver library", func() {
	devices := func(env ...string) string {
		GinkgoHelper()
		for i := 0; i+1 < len(env); i += 2 {
			GinkgoT().Setenv(env[i], env[i+1])
		}
		var out, errOut bytes.Buffer
		Expect(cli.Main([]string{"devices"}, &out, &errOut)).To(Equal(cli.ExitOK), errOut.String())
		return out.String()
	}
	build := func(lib fake.Library, v fake.Variant) string {
		GinkgoHelper()
		path, err := fake.Build(GinkgoT().TempDir(), lib, v)
		Expect(err).NotTo(HaveOccurred())
		return path
	}
	BeforeEach(func() {
		if why := backends.Unavailable("cuda"); why != "" {
			Skip(why)
		}
	})

	It("reports a usable device with its platform key", func() {
		out := devices("REPLAYCHECK_CUDA_LIB", build(fake.CUDA, fake.Variant{}), "REPLAYCHECK_ACL_LIB", build(fake.ACL, fake.Variant{}))
		Expect(out).To(MatchRegexp(`(?m)^cuda\s+usable\s+\S+libcuda\.so\.1$`))
		Expect(out).To(ContainSubstring("platform cuda/12.4-replaycheck-fake"))
		Expect(out).To(MatchRegexp(`(?m)^acl\s+usable\s+\S+libascendcl\.so$`))
		Expect(out).To(ContainSubstring("platform acl/cann-9.0-replaycheck-fake"))
	})

	It("tells a missing library, a library without a driver and a missing entry point apart", func() {
		Expect(devices("REPLAYCHECK_CUDA_LIB", "/nonexistent/libcuda.so.1")).To(
			MatchRegexp(`(?m)^cuda\s+unavailable\s+cuda: no driver library could be loaded \(not found: /nonexistent/libcuda\.so\.1\)$`))
		Expect(devices("REPLAYCHECK_CUDA_LIB", build(fake.CUDA, fake.Variant{Stub: true}))).To(
			MatchRegexp(`(?m)^cuda\s+unavailable\s+.*the toolkit's stub library, not a driver`))
		Expect(devices("REPLAYCHECK_ACL_LIB", build(fake.ACL, fake.Variant{Stub: true}))).To(
			MatchRegexp(`(?m)^acl\s+unavailable\s+acl: the runtime library loaded but the driver is not usable`))
		Expect(devices("REPLAYCHECK_CUDA_LIB", build(fake.CUDA, fake.Variant{Omit: "cuMemsetD8Async"}))).To(
			MatchRegexp(`(?m)^cuda\s+unavailable\s+.*symbol "cuMemsetD8Async" not found`))
	})

	It("names a runtime without CANN 9.1's graph reading under its device, which stays usable", func() {
		out := devices("REPLAYCHECK_ACL_LIB", build(fake.ACL, fake.Variant{Omit: "aclmdlRITaskGetType"}))
		Expect(out).To(MatchRegexp(`(?m)^acl\s+usable\s+\S+libascendcl\.so\n\s+device 0: .*\n\s+without graph reading: the runtime library lacks aclmdlRITaskGetType \(CANN 9\.1 trial APIs\)$`))
		Expect(devices("REPLAYCHECK_ACL_LIB", build(fake.ACL, fake.Variant{}))).NotTo(ContainSubstring("without graph reading"))
	})
})
