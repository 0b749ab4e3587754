package progen_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/progen"
	"github.com/replaycheck/replaycheck/probes"
)

// parse loads a generated program, failing the spec when the loader refuses it.
func parse(text string) *probes.Probe {
	set, err := probes.Parse("progen.yaml", []byte(text), probes.DefaultLimits())
	Expect(err).NotTo(HaveOccurred(), text)
	Expect(set.Probes).To(HaveLen(1))
	return set.Probes[0]
}

// randomBytes are n bytes of seed's PRNG stream.
func randomBytes(seed uint64, n int) []byte {
	src, out := progen.Seed(seed), make([]byte, n)
	for i := range out {
		out[i] = byte(src.IntN(256))
	}
	return out
}

var _ = Describe("progen", func() {
	It("writes the benchmarks' program of n fills, each on a range of its own", func() {
		p := parse(progen.Fills(300, 7))
		Expect(p.ID()).To(Equal("bench/fills"))
		Expect(p.Replays).To(Equal(7))
		ops := p.Captures[0].Ops
		Expect(ops).To(HaveLen(300))
		Expect(*ops[299].Offset).To(Equal(int64(299 * 64)))
		Expect(p.Buffers[0].Bytes).To(Equal(int64(300 * 64)))
	})

	It("writes the same program for the same choices, and others for others", func() {
		Expect(progen.YAML(progen.Seed(7))).To(Equal(progen.YAML(progen.Seed(7))))
		Expect(progen.YAML(progen.Seed(7))).NotTo(Equal(progen.YAML(progen.Seed(8))))
		data := randomBytes(3, 200)
		Expect(progen.YAML(progen.Bytes(data))).To(Equal(progen.YAML(progen.Bytes(data))))
		Expect(progen.YAML(progen.Bytes(data))).NotTo(Equal(progen.YAML(progen.Bytes(randomBytes(4, 200)))))
	})

	It("writes a program of two declared buffers and no ops for no choices", func() {
		p := parse(progen.YAML(progen.Bytes(nil)))
		Expect(p.Buffers).To(HaveLen(2))
		Expect(p.Prepare).To(BeEmpty())
		Expect(p.Between).To(BeEmpty())
		Expect(p.Captures).To(HaveLen(1))
		Expect(p.Captures[0].Ops).To(BeEmpty())
	})

	It("writes probes the loader accepts as hazard-free, from seeds and from bytes", func() {
		ops := 0
		for seed := uint64(1); seed <= 200; seed++ {
			for _, src := range []progen.Source{progen.Seed(seed), progen.Bytes(randomBytes(seed, int(seed)))} {
				p := parse(progen.YAML(src))
				Expect(string(p.Hazard)).To(Equal("none"))
				ops += len(p.Prepare) + len(p.Between) + len(p.Captures[0].Ops)
			}
		}
		Expect(ops).To(BeNumerically(">", 1000), "the programs do work")
	})

	It("reads as many bytes as a choice's range needs, little-endian", func() {
		src := progen.Bytes([]byte{0x02, 0x01, 0x07})
		Expect(src.Int64N(257)).To(Equal(int64(0x0102 % 257))) // two bytes
		Expect(src.IntN(256)).To(Equal(7))                     // one byte
		Expect(src.IntN(256)).To(BeZero(), "the input is spent")

		ff := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		src = progen.Bytes(ff)
		Expect(src.Int64N(1 << 40)).To(Equal(int64(1<<40 - 1))) // five bytes
		Expect(src.Uint32()).To(Equal(uint32(0xffffff)), "three left, the fourth reads 0")
		Expect(progen.Bytes(ff).Uint64()).To(Equal(uint64(1<<64 - 1)))
	})

	It("stops every loop once the bytes run out: a short input is a short program", func() {
		long := progen.YAML(progen.Bytes(randomBytes(5, 4096)))
		short := progen.YAML(progen.Bytes(randomBytes(5, 16)))
		Expect(strings.Count(short, "\n")).To(BeNumerically("<", strings.Count(long, "\n")))
	})
})
