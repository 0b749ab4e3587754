package plugin_test

import (
	"fmt"
	"os"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/runtime/plugin"
)

// The worked example of docs/runtime-abi.md says which version of the header it is written
// against: the version this replaycheck implements.
var _ = Describe("docs/examples/tiny_runtime.c", func() {
	It("names the ABI version of include/replaycheck/runtime.h", func() {
		src, err := os.ReadFile("../../docs/examples/tiny_runtime.c")
		Expect(err).NotTo(HaveOccurred())
		m := regexp.MustCompile(`include/replaycheck/runtime\.h, version (\d+)`).FindSubmatch(src)
		Expect(m).NotTo(BeNil(), "the example's header comment names no version")
		Expect(string(m[1])).To(Equal(fmt.Sprint(plugin.ABIVersion)))
	})

	// A build without cgo states the version as a constant of its own.
	It("and ABIVersion are the header's RC_ABI_VERSION, in this build", func() {
		h, err := os.ReadFile("../../include/replaycheck/runtime.h")
		Expect(err).NotTo(HaveOccurred())
		m := regexp.MustCompile(`(?m)^#define RC_ABI_VERSION (\d+)u$`).FindSubmatch(h)
		Expect(m).NotTo(BeNil())
		Expect(string(m[1])).To(Equal(fmt.Sprint(plugin.ABIVersion)))
	})
})
