package sim_test

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

var _ = Describe("fills", func() {
	It("set exactly the range's bytes, for short and long lengths, every alignment, within and across pages", func() {
		d := onProfile("cann")
		const size = 3 * sim.PageSize
		p := malloc(d, size)
		lengths := []int64{1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 100, 128, 129, 1000, sim.PageSize + 77}
		for _, n := range lengths {
			for _, at := range []int64{0, 1, 5, 8, sim.PageSize - 3, sim.PageSize - 64, 2*sim.PageSize - 1} {
				if at+n > size {
					continue
				}
				for _, v := range []byte{0, 0x5A} {
					for _, fresh := range []bool{true, false} {
						// fresh: the pages are unwritten (zeros, not materialised); else a pattern.
						want := make([]byte, size)
						if !fresh {
							want = bytes.Repeat([]byte{0xEE}, size)
						}
						write(d, p, want)
						for i := at; i < at+n; i++ {
							want[i] = v
						}
						Expect(d.Fill(main, device.DefaultStream, p.Slice(at, n), v)).To(Succeed())
						Expect(read(d, p)).To(Equal(want), "length %d at %d value %#x fresh %v", n, at, v, fresh)
					}
				}
			}
		}
	})
})
