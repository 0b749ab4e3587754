package bytesize_test

import (
	"math"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/bytesize"
)

func TestBytesize(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "bytesize")
}

var _ = Describe("byte counts", func() {
	DescribeTable("reads an integer with an optional binary unit",
		func(in string, want int64) { Expect(bytesize.Parse(in)).To(Equal(want)) },
		Entry("bytes", "1536", int64(1536)),
		Entry("zero", "0", int64(0)),
		Entry("KiB", "64KiB", int64(64<<10)),
		Entry("MiB", "3MiB", int64(3<<20)),
		Entry("GiB", "16GiB", int64(16<<30)),
		Entry("TiB", "2TiB", int64(2<<40)),
		Entry("the largest", "8388607TiB", int64(8388607)<<40),
	)

	DescribeTable("refuses anything else, saying what it wants",
		func(in, why string) {
			_, err := bytesize.Parse(in)
			Expect(err).To(MatchError(ContainSubstring(why)))
		},
		Entry("empty", "", "want a non-negative integer"),
		Entry("a unit alone", "MiB", "want a non-negative integer"),
		Entry("a decimal unit", "4MB", "want a non-negative integer"),
		Entry("a space", "4 MiB", "want a non-negative integer"),
		Entry("a sign", "-4", "want a non-negative integer"),
		Entry("a fraction", "1.5GiB", "want a non-negative integer"),
		Entry("too large in bytes", "9223372036854775808", "overflows"),
		Entry("too large in its unit", "8388608TiB", "overflows"),
		Entry("a leading 0", "010", "a leading 0 is not allowed"),
		Entry("a leading 0 before a unit", "04KiB", "a leading 0 is not allowed"),
		Entry("zeros", "00", "a leading 0 is not allowed"),
		Entry("hex", "0x10", "want a non-negative integer"),
	)

	It("writes the largest unit that divides the count, else bytes", func() {
		for n, want := range map[int64]string{0: "0B", 1536: "1536B", 2048: "2KiB", 3 << 30: "3GiB", 1 << 40: "1TiB", 1<<40 + 1<<30: "1025GiB"} {
			Expect(bytesize.Format(n)).To(Equal(want), "%d", n)
			v, unit := bytesize.Unit(n)
			if unit != "" {
				Expect(bytesize.Parse(bytesize.Format(n))).To(Equal(n), "what it writes reads back")
				Expect(v).To(BeNumerically(">", 0))
			}
		}
		Expect(bytesize.Unit(math.MaxInt64)).To(Equal(int64(math.MaxInt64)))
	})
})
