package cuda_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device/cuda"
)

// The platform key of real devices, which no fake reports: a plain function, no library.
var _ = DescribeTable("the platform key is cuda/<driver major.minor>-<device>",
	func(version, name, want string) { Expect(cuda.PlatformKey(version, name)).To(Equal(want)) },
	Entry("an H200", "12.4", "NVIDIA H200", "cuda/12.4-h200"),
	Entry("an H100 with its memory in the name", "12.8", "NVIDIA H100 80GB HBM3", "cuda/12.8-h100-80gb-hbm3"),
	Entry("a GeForce", "13.0", "NVIDIA GeForce RTX 4090", "cuda/13.0-geforce-rtx-4090"),
	Entry("no NVIDIA prefix", "12.4", "Tesla V100-SXM2-16GB", "cuda/12.4-tesla-v100-sxm2-16gb"),
	Entry("the fake", "12.4", "replaycheck fake", "cuda/12.4-replaycheck-fake"),
	Entry("nothing known", "", "", "cuda/unknown-unknown"),
)
