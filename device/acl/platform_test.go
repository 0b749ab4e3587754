package acl_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device/acl"
)

// The platform key of real SoCs, which no fake reports: plain functions, no library.
var _ = Describe("the platform key", func() {
	DescribeTable("maps a SoC to its chip family",
		func(soc, want string) { Expect(acl.Family(soc)).To(Equal(want)) },
		Entry("Atlas A2 (910B)", "Ascend910B3", "a2a3"),
		Entry("Atlas A2, another bin", "Ascend910B1", "a2a3"),
		Entry("lower case", "ascend910b4", "a2a3"),
		Entry("Atlas A3 (910_93)", "Ascend910_9391", "a2a3"),
		Entry("the first 910", "Ascend910", "910"),
		Entry("an inference SoC keeps its name", "Ascend310P3", "310p3"),
		Entry("the fake's own name", "replaycheck-fake", "replaycheck-fake"),
		Entry("no name", "", "unknown"),
	)

	DescribeTable("cuts the runtime version to major.minor",
		func(v, want string) { Expect(acl.MajorMinor(v)).To(Equal(want)) },
		Entry("three fields", "9.0.0", "9.0"),
		Entry("a release candidate", "8.0.RC3", "8.0"),
		Entry("two fields", "8.1", "8.1"),
		Entry("one field", "8", "8"),
		Entry("none", "", "unknown"),
	)

	DescribeTable("is acl/cann-<major.minor>-<family>",
		func(version, soc, want string) { Expect(acl.PlatformKey(version, soc)).To(Equal(want)) },
		Entry("a 910B3 on CANN 9.0", "9.0.0", "Ascend910B3", "acl/cann-9.0-a2a3"),
		Entry("a 910_93 on CANN 8.0.RC3", "8.0.RC3", "Ascend910_9392", "acl/cann-8.0-a2a3"),
		Entry("a 310P3", "8.1.RC1", "Ascend310P3", "acl/cann-8.1-310p3"),
		Entry("the fake", "9.0.0", "replaycheck-fake", "acl/cann-9.0-replaycheck-fake"),
		Entry("odd characters, sanitised", "9.0 beta", "Ascend 910B/x", "acl/cann-9.0-beta-910b-x"),
		Entry("nothing known", "", "", "acl/cann-unknown-unknown"),
	)
})
