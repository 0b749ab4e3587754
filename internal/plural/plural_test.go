package plural_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/plural"
)

func TestPlural(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "plural")
}

var _ = DescribeTable("Count",
	func(n int64, want string) { Expect(plural.Count(n, "more stale range")).To(Equal(want)) },
	Entry("none", int64(0), "0 more stale ranges"),
	Entry("one", int64(1), "1 more stale range"),
	Entry("two", int64(2), "2 more stale ranges"),
)
