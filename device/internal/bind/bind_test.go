package bind_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/internal/bind"
)

var _ = DescribeTable("KeyPart makes a platform key part of any name",
	func(in, want string) { Expect(bind.KeyPart(in)).To(Equal(want)) },
	Entry("a GPU name", "NVIDIA H200 NVL", "nvidia-h200-nvl"),
	Entry("a version", "12.4", "12.4"),
	Entry("slashes, parentheses and runs of punctuation", "fake (profile cuda) / x", "fake-profile-cuda-x"),
	Entry("nothing left", " ()/ ", "unknown"),
)

var _ = Describe("Codes", func() {
	codes := bind.Codes{
		Backend: "cuda",
		Lookup: func(code int) (string, device.Class) {
			if code == 900 {
				return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", device.ClassCaptureUnsupported
			}
			return "", device.ClassInternal
		},
		InvalidValue: 1, NotSupported: 801, OutOfMemory: 2,
	}
	It("names and classes a platform code through the backend's table", func() {
		Expect(codes.Error("SyncStream", 900, "during capture")).To(Equal(&device.Error{
			Backend: "cuda", Op: "SyncStream", Code: 900, Name: "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
			Class: device.ClassCaptureUnsupported, Detail: "during capture",
		}))
	})
	It("classes what Go refuses before the driver with the platform's own codes", func() {
		Expect(codes.Invalid("Free", "no allocation at %#x", 16)).To(SatisfyAll(
			HaveField("Code", 1), HaveField("Class", device.ClassInvalidValue), HaveField("Detail", "no allocation at 0x10")))
		Expect(codes.Unsupported("Axpy", "no kernel")).To(SatisfyAll(HaveField("Code", 801), HaveField("Class", device.ClassNotSupported)))
	})
})
