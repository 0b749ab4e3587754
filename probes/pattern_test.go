package probes_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/probes"
)

var _ = Describe("ParseSize", func() {
	DescribeTable("accepts bytes and binary units",
		func(in string, want int64) {
			Expect(probes.ParseSize(in)).To(Equal(want))
		},
		Entry(nil, "0", int64(0)),
		Entry(nil, "512", int64(512)),
		Entry(nil, "4KiB", int64(4096)),
		Entry(nil, "64KiB", int64(65536)),
		Entry(nil, "1MiB", int64(1<<20)),
		Entry(nil, "2GiB", int64(2<<30)),
		Entry(nil, "1TiB", int64(1<<40)),
		Entry(nil, "9223372036854775807", int64(9223372036854775807)),
	)
	DescribeTable("rejects everything else",
		func(in string) {
			_, err := probes.ParseSize(in)
			Expect(err).To(HaveOccurred())
		},
		Entry(nil, ""), Entry(nil, "KiB"), Entry(nil, "4KB"), Entry(nil, "1MB"), Entry(nil, "4k"), Entry(nil, "4K"),
		Entry(nil, "-1"), Entry(nil, "+1"), Entry(nil, "1.5"), Entry(nil, "1.5KiB"), Entry(nil, "1e3"), Entry(nil, "0x10"),
		Entry(nil, " 1"), Entry(nil, "9223372036854775808"), Entry(nil, "8388608TiB"), Entry(nil, "4 KiB"),
		Entry(nil, "010"), Entry(nil, "04KiB"), Entry(nil, "00"), Entry(nil, "0x10KiB"),
	)
	It("prints sizes with the largest unit that divides them", func() {
		Expect(probes.FormatSize(0)).To(Equal("0"))
		Expect(probes.FormatSize(1536)).To(Equal("1536"))
		Expect(probes.FormatSize(2048)).To(Equal("2KiB"))
		Expect(probes.FormatSize(3 << 30)).To(Equal("3GiB"))
	})
})

var _ = Describe("ParsePattern", func() {
	DescribeTable("reads every kind",
		func(in string, want probes.Pattern) {
			Expect(probes.ParsePattern(in)).To(Equal(want))
		},
		Entry(nil, "zero", probes.Pattern{Kind: probes.PatZero}),
		Entry(nil, "fill:0xAB", probes.Pattern{Kind: probes.PatFill, Byte: 0xAB}),
		Entry(nil, "fill:7", probes.Pattern{Kind: probes.PatFill, Byte: 7}),
		Entry(nil, "iota8", probes.Pattern{Kind: probes.PatIota8}),
		Entry(nil, "iota32", probes.Pattern{Kind: probes.PatIota32}),
		Entry(nil, "random:42", probes.Pattern{Kind: probes.PatRandom, Seed: 42}),
		Entry(nil, "random:18446744073709551615", probes.Pattern{Kind: probes.PatRandom, Seed: 1<<64 - 1}),
		Entry(nil, "hex:deadbeef", probes.Pattern{Kind: probes.PatHex, Hex: []byte{0xde, 0xad, 0xbe, 0xef}}),
	)
	DescribeTable("rejects malformed patterns",
		func(in string) {
			_, err := probes.ParsePattern(in)
			Expect(err).To(HaveOccurred())
		},
		Entry(nil, ""), Entry(nil, "zero:1"), Entry(nil, "iota8:2"), Entry(nil, "fill"), Entry(nil, "fill:256"),
		Entry(nil, "fill:010"), Entry(nil, "random:010"), Entry(nil, "fill:+1"),
		Entry(nil, "fill:-1"), Entry(nil, "random"), Entry(nil, "random:-1"), Entry(nil, "hex:"), Entry(nil, "hex:abc"),
		Entry(nil, "hex:zz"), Entry(nil, "sine"),
	)
	It("round-trips through String", func() {
		for _, s := range []string{"zero", "fill:0xab", "iota8", "iota32", "random:9", "hex:0102"} {
			p, err := probes.ParsePattern(s)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.String()).To(Equal(s))
		}
	})
})

var _ = Describe("Pattern.Fill", func() {
	fill := func(p probes.Pattern, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = 0xEE // so zero has something to clear
		}
		p.Fill(b)
		return b
	}

	It("zero clears, also as the zero Pattern", func() {
		Expect(fill(probes.Pattern{Kind: probes.PatZero}, 5)).To(Equal(make([]byte, 5)))
		Expect(fill(probes.Pattern{}, 5)).To(Equal(make([]byte, 5)))
	})
	It("fill repeats its byte", func() {
		Expect(fill(probes.Pattern{Kind: probes.PatFill, Byte: 0xAB}, 3)).To(Equal([]byte{0xAB, 0xAB, 0xAB}))
	})
	It("iota8 counts bytes modulo 256", func() {
		b := fill(probes.Pattern{Kind: probes.PatIota8}, 258)
		Expect(b[:3]).To(Equal([]byte{0, 1, 2}))
		Expect(b[255:]).To(Equal([]byte{255, 0, 1}))
	})
	It("iota32 counts little-endian lanes, a partial lane holding the low bytes", func() {
		Expect(fill(probes.Pattern{Kind: probes.PatIota32}, 10)).To(Equal([]byte{0, 0, 0, 0, 1, 0, 0, 0, 2, 0}))
		b := fill(probes.Pattern{Kind: probes.PatIota32}, 1027)
		Expect(b[1024:]).To(Equal([]byte{0, 1, 0}), "lane 256 is 0x100")
	})
	It("random writes splitmix64 outputs little-endian, 8 bytes at a time", func() {
		b := fill(probes.Pattern{Kind: probes.PatRandom, Seed: 0}, 11)
		// splitmix64's first output for state 0 is 0xe220a8397b1dcdaf.
		Expect(b[:8]).To(Equal([]byte{0xaf, 0xcd, 0x1d, 0x7b, 0x39, 0xa8, 0x20, 0xe2}))
		// Second output 0x6e789e6aa1b965f4, truncated to its low three bytes.
		Expect(b[8:]).To(Equal([]byte{0xf4, 0x65, 0xb9}))
		Expect(fill(probes.Pattern{Kind: probes.PatRandom, Seed: 1}, 8)).NotTo(Equal(b[:8]))
	})
	It("hex repeats its bytes, the last copy cut short", func() {
		Expect(fill(probes.Pattern{Kind: probes.PatHex, Hex: []byte{0xde, 0xad, 0xbe}}, 7)).
			To(Equal([]byte{0xde, 0xad, 0xbe, 0xde, 0xad, 0xbe, 0xde}))
	})
	It("writes every byte as the pattern's definition has it, one at a time, for every short length and across the doubling", func() {
		patterns := []probes.Pattern{
			{Kind: probes.PatZero}, {Kind: probes.PatFill, Byte: 0x5A}, {Kind: probes.PatFill, Byte: 0xFF},
			{Kind: probes.PatIota8}, {Kind: probes.PatIota32}, {Kind: probes.PatRandom, Seed: 3},
			{Kind: probes.PatHex, Hex: []byte{0xde, 0xad, 0xbe}}, {Kind: probes.PatHex, Hex: []byte{7}},
		}
		lengths := []int{255, 256, 257, 511, 512, 513, 1000, 4099, 65536 + 5}
		for n := range 70 {
			lengths = append(lengths, n)
		}
		for _, p := range patterns {
			for _, n := range lengths {
				Expect(fill(p, n)).To(Equal(patternBytes(p, n)), "%s, %d bytes", p, n)
			}
		}
	})
	It("returns on an empty hex pattern, which the loader refuses, rather than loop", func() {
		Expect(fill(probes.Pattern{Kind: probes.PatHex}, 5)).To(HaveLen(5))
	})
	It("Bytes returns n bytes of the pattern", func() {
		Expect(probes.Pattern{Kind: probes.PatIota8}.Bytes(4)).To(Equal([]byte{0, 1, 2, 3}))
	})
})

var _ = DescribeTable("ParseUint reads decimal or 0x hex, nothing else",
	func(s string, want uint64, ok bool) {
		got, err := probes.ParseUint(s)
		if !ok {
			Expect(err).To(HaveOccurred(), s)
			return
		}
		Expect(err).NotTo(HaveOccurred(), s)
		Expect(got).To(Equal(want))
	},
	Entry("decimal", "10", uint64(10), true),
	Entry("zero", "0", uint64(0), true),
	Entry("hex", "0xAB", uint64(0xab), true),
	Entry("upper-case prefix", "0XFF", uint64(0xff), true),
	Entry("largest", "18446744073709551615", uint64(1<<64-1), true),
	Entry("leading zero is not octal", "010", uint64(0), false),
	Entry("octal prefix", "0o10", uint64(0), false),
	Entry("binary", "0b11", uint64(0), false),
	Entry("underscore", "1_000", uint64(0), false),
	Entry("sign", "+1", uint64(0), false),
	Entry("empty hex", "0x", uint64(0), false),
	Entry("overflow", "18446744073709551616", uint64(0), false),
)

// patternBytes are n bytes of pattern p by its definition (docs/probe-language.md), one at a time.
func patternBytes(p probes.Pattern, n int) []byte {
	out := make([]byte, n)
	state, word := p.Seed, uint64(0)
	for i := range out {
		switch p.Kind {
		case probes.PatFill:
			out[i] = p.Byte
		case probes.PatIota8:
			out[i] = byte(i)
		case probes.PatIota32:
			out[i] = byte(uint32(i/4) >> (8 * (i % 4)))
		case probes.PatRandom:
			if i%8 == 0 { // splitmix64's next output
				state += 0x9e3779b97f4a7c15
				z := state
				z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
				z = (z ^ z>>27) * 0x94d049bb133111eb
				word = z ^ z>>31
			}
			out[i] = byte(word >> (8 * (i % 8)))
		case probes.PatHex:
			out[i] = p.Hex[i%len(p.Hex)]
		}
	}
	return out
}
