package capture_test

import (
	"bytes"
	"context"
	"math/rand/v2"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
)

// readBackOnly hides a device's in-place comparison, as a real backend lacks it.
type readBackOnly struct{ runtime.Device }

// naiveRanges is the localisation's meaning, a byte at a time: differing runs separated by fewer
// than 16 equal bytes are one range.
func naiveRanges(want, got []byte) [][2]int {
	var out [][2]int
	for i := 0; i < len(want); {
		if want[i] == got[i] {
			i++
			continue
		}
		end := i + 1
		for j := end; j < len(want) && j < end+16; j++ {
			if want[j] != got[j] {
				end = j + 1
			}
		}
		out = append(out, [2]int{i, end})
		i = end
	}
	return out
}

var _ = Describe("verification's fast paths", func() {
	It("localises every differing range as the byte-at-a-time definition does", func() {
		rng := rand.New(rand.NewPCG(3, 4))
		for _, size := range []int{1, 7, 8, 9, 511, 512, 513, 1023, 1024, 1025, 4096, 100003} {
			for _, density := range []int{0, 1, 5, 50, 1000} {
				want := make([]byte, size)
				for i := range want {
					want[i] = byte(rng.IntN(256))
				}
				got := bytes.Clone(want)
				for i := range got {
					if rng.IntN(1000) < density {
						got[i] ^= byte(rng.IntN(255) + 1)
					}
				}
				got[size-1] ^= 0x80 // always a difference in the very last byte
				Expect(capture.DifferingRanges(want, got)).To(Equal(naiveRanges(want, got)), "size %d density %d", size, density)
			}
		}
	})

	It("localises differences at the edges of words, 512-byte blocks and 1 KiB chunks, and merges across them", func() {
		// The scan works on 8-byte words, 512-byte mask blocks and 1 KiB XOR chunks: plant runs on
		// and across each boundary, and gaps of 15 (merged) and 16 (not merged) equal bytes
		// straddling them.
		for _, size := range []int{1, 2, 8, 15, 16, 17, 63, 64, 65, 511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049, 3001} {
			for _, at := range []int{0, 1, 7, 8, 9, 504, 511, 512, 1016, 1023, 1024, 2040, size - 1} {
				for _, plant := range [][]int{{0}, {0, 1}, {0, 7, 8}, {0, 16}, {0, 17}, {-8, 0, 8}, {-1, 0}, {-16, 0}, {-17, 0}} {
					want := make([]byte, size)
					for i := range want {
						want[i] = byte(i*31 + 7)
					}
					got := bytes.Clone(want)
					for _, d := range plant {
						if k := at + d; k >= 0 && k < size {
							got[k] ^= 0x01
						}
					}
					Expect(capture.DifferingRanges(want, got)).To(Equal(naiveRanges(want, got)), "size %d at %d plant %v", size, at, plant)
				}
			}
		}
		// Every byte differs; none differs.
		for _, size := range []int{0, 1, 8, 513, 1024, 4099} {
			want, got := make([]byte, size), make([]byte, size)
			Expect(capture.DifferingRanges(want, got)).To(BeEmpty())
			for i := range got {
				got[i] = 0xFF
			}
			Expect(capture.DifferingRanges(want, got)).To(Equal(naiveRanges(want, got)), "size %d", size)
		}
	})

	It("stops at the cap: f is called for the first ranges only, each as the definition has it", func() {
		rng := rand.New(rand.NewPCG(5, 6))
		want := make([]byte, 20000)
		for i := range want {
			want[i] = byte(rng.IntN(256))
		}
		got := bytes.Clone(want)
		for i := rng.IntN(50); i < len(got); i += rng.IntN(60) + 1 {
			got[i] ^= 0x5A
		}
		all := naiveRanges(want, got)
		Expect(len(all)).To(BeNumerically(">", 100))
		for _, limit := range []int{1, 2, 10, 64, len(all), len(all) + 5} {
			kept, calls := capture.FirstDifferingRanges(want, got, limit)
			Expect(kept).To(Equal(all[:min(limit, len(all))]), "limit %d", limit)
			Expect(calls).To(Equal(min(limit, len(all))), "limit %d", limit)
		}
	})

	It("reads back in chunks smaller than the buffer and finds a difference in the last chunk", func() {
		dev := openSim("cann")
		DeferCleanup(dev.Close)
		defer capture.SetReadChunk(4096)()
		const n = 5*4096 + 300 // the last chunk is partial
		p, err := dev.Malloc(runtime.Main, n)
		Expect(err).NotTo(HaveOccurred())
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(i * 7)
		}
		Expect(dev.Write(runtime.Main, p, want)).To(Succeed())
		eq, err := capture.EqualByReading(readBackOnly{dev}, p, want)
		Expect(err).NotTo(HaveOccurred())
		Expect(eq).To(BeTrue())
		for _, at := range []int{0, 4095, 4096, 3 * 4096, n - 300, n - 1} {
			planted := bytes.Clone(want)
			planted[at]++
			eq, err := capture.EqualByReading(readBackOnly{dev}, p, planted)
			Expect(err).NotTo(HaveOccurred())
			Expect(eq).To(BeFalse(), "difference at %d", at)
		}
	})

	It("reads back chunk by chunk inside the batch on the device's Main thread, in turn rather than overlapped", func() {
		dev := openSim("cann")
		DeferCleanup(dev.Close)
		defer capture.SetReadChunk(4096)()
		const n = 5*4096 + 300
		p, err := dev.Malloc(runtime.Main, n)
		Expect(err).NotTo(HaveOccurred())
		want := bytes.Repeat([]byte{9}, n)
		Expect(dev.Write(runtime.Main, p, want)).To(Succeed())
		// A read overlapped from another goroutine would wait for the batch, and the batch for it.
		eq, err := capture.EqualByReadingOnThread(dev, p, want)
		Expect(err).NotTo(HaveOccurred())
		Expect(eq).To(BeTrue())
		want[n-1]++
		eq, err = capture.EqualByReadingOnThread(dev, p, want)
		Expect(err).NotTo(HaveOccurred())
		Expect(eq).To(BeFalse(), "difference in the last chunk")
	})

	It("gives a read-back-only device the catalog's outcomes and mismatches, chunk by chunk", func() {
		cat, err := loadCatalog()
		Expect(err).NotTo(HaveOccurred())
		defer capture.SetReadChunk(4096)()
		dev, ref := openSim("cann"), openSim("cann")
		DeferCleanup(dev.Close)
		DeferCleanup(ref.Close)
		corrupted := 0
		for _, s := range cat.sets {
			for _, in := range probes.Instances(s.Probes, probes.Matrix{Replays: 2}) {
				got := capture.Run(context.Background(), readBackOnly{dev}, in, capture.Options{})
				want := capture.Run(context.Background(), ref, in, capture.Options{})
				Expect(behaviour(got)).To(Equal(behaviour(want)), in.ID())
				Expect(got.Mismatches).To(Equal(want.Mismatches), in.ID())
				if got.CorruptedRounds > 0 {
					corrupted++
				}
			}
		}
		Expect(corrupted).To(BeNumerically(">", 0))
	})
})
