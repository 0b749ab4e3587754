package probes_test

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/probes"
)

var _ = Describe("the oracle's fill", func() {
	It("sets exactly the span's bytes, for every short length and alignment and at long lengths", func() {
		lengths := []int{200, 255, 256, 257, 1000, 4099, 65536 + 5}
		for n := range 130 {
			lengths = append(lengths, n)
		}
		for _, n := range lengths {
			for off := range 9 {
				for _, v := range []byte{0, 1, 0xA5, 0xFF} {
					buf := bytes.Repeat([]byte{0xEE}, off+n+9)
					probes.SetBytes(buf[off:off+n], v)
					want := bytes.Repeat([]byte{0xEE}, off+n+9)
					for i := off; i < off+n; i++ {
						want[i] = v
					}
					Expect(buf).To(Equal(want), "length %d offset %d value %#x", n, off, v)
				}
			}
		}
	})
})
