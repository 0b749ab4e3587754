package capture_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

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

// firstRanges is the first n of ranges, nil when none.
func firstRanges(ranges [][2]int, n int) [][2]int {
	if n = min(n, len(ranges)); n <= 0 {
		return nil
	}
	return ranges[:n]
}

// localisedAsDefined compares loc's localisation of got against want at each limit with the
// byte-at-a-time definition: the first ranges kept, and every range and differing byte counted.
// A limit of math.MaxInt asks for every range.
func localisedAsDefined(want, got []byte, limits []int, loc func(limit int) (kept [][2]int, ranges int, differing int64)) error {
	all, differ := naiveRanges(want, got), naiveBytes(want, got)
	for _, limit := range limits {
		kept, ranges, differing := loc(limit)
		if !slices.Equal(kept, firstRanges(all, limit)) || ranges != len(all) || differing != differ {
			return fmt.Errorf("limit %d: kept %v, %d ranges, %d bytes; want %v, %d ranges, %d bytes",
				limit, kept, ranges, differing, firstRanges(all, limit), len(all), differ)
		}
	}
	return nil
}

// naiveBytes counts the differing bytes, one at a time.
func naiveBytes(want, got []byte) int64 {
	var n int64
	for i := range want {
		if want[i] != got[i] {
			n++
		}
	}
	return n
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

	It("keeps the first ranges up to the cap and counts every differing range and byte", func() {
		rng := rand.New(rand.NewPCG(5, 6))
		want := make([]byte, 20000)
		for i := range want {
			want[i] = byte(rng.IntN(256))
		}
		got := bytes.Clone(want)
		for i := rng.IntN(50); i < len(got); i += rng.IntN(60) + 1 {
			got[i] ^= byte(rng.IntN(255) + 1)
		}
		all := naiveRanges(want, got)
		Expect(len(all)).To(BeNumerically(">", 100))
		Expect(localisedAsDefined(want, got, []int{-1, 0, 1, 2, 10, 64, len(all), len(all) + 5, math.MaxInt},
			func(limit int) ([][2]int, int, int64) { return capture.Localise(want, got, limit) })).To(Succeed())
	})

	It("joins the ranges of segments scanned apart as one scan has them, at every cut", func() {
		// The parallel scan cuts a large buffer at multiples of 1 KiB: plant differences on and
		// around each cut, with gaps of 15 (joined) and 16 (not joined) equal bytes across it, and
		// segments with no difference, one range, or a range spanning a whole segment.
		const size = 8 * 1024
		rng := rand.New(rand.NewPCG(7, 8))
		for trial := range 300 {
			want := make([]byte, size)
			for i := range want {
				want[i] = byte(i*31 + 7)
			}
			got := bytes.Clone(want)
			var cuts []int
			for c := 1024; c < size; c += 1024 {
				if rng.IntN(2) == 0 {
					cuts = append(cuts, c)
				}
			}
			for _, c := range cuts {
				for _, d := range [][]int{{-1, 0}, {-16, 0}, {-17, 0}, {-1, 15}, {-1, 16}, {0}, {-1}, {}}[rng.IntN(8)] {
					got[c+d] ^= 0x10
				}
			}
			if trial%5 == 0 && len(cuts) > 1 { // a range over a whole segment and beyond
				for i := cuts[0] - 3; i < cuts[1]+3; i += 1 + rng.IntN(15) {
					got[i] ^= 0x01
				}
			}
			for range rng.IntN(6) {
				got[rng.IntN(size)] ^= 0x40
			}
			Expect(localisedAsDefined(want, got, []int{0, 1, 2, 3, math.MaxInt},
				func(limit int) ([][2]int, int, int64) { return capture.LocaliseSegments(want, got, limit, cuts) })).
				To(Succeed(), "trial %d cuts %v", trial, cuts)
		}
	})

	It("scans a buffer of many segments on several goroutines and joins them as one scan", func() {
		cut := capture.Tune(capture.Options{Runtime: builtin}, func(k *capture.Knobs) { k.SegmentBytes = 4096 })
		prev := runtime.GOMAXPROCS(4)
		defer runtime.GOMAXPROCS(prev)
		rng := rand.New(rand.NewPCG(9, 10))
		for _, size := range []int{8192, 16384 + 100, 40000} {
			want := make([]byte, size)
			got := bytes.Clone(want)
			for i := rng.IntN(30); i < size; i += rng.IntN(40) + 1 {
				got[i] = byte(rng.IntN(255) + 1)
			}
			Expect(localisedAsDefined(want, got, []int{math.MaxInt},
				func(limit int) ([][2]int, int, int64) { return cut.Localise(want, got, limit) })).To(Succeed(), "size %d", size)
		}
	})

	It("reads back in chunks smaller than the buffer and finds a difference in the last chunk", func() {
		dev := openSim("cann")
		DeferCleanup(dev.Close)
		chunked := capture.Tune(capture.Options{Runtime: builtin}, func(k *capture.Knobs) { k.ReadChunk = 4096 })
		const n = 5*4096 + 300 // the last chunk is partial
		p, err := dev.Malloc(device.Main, n)
		Expect(err).NotTo(HaveOccurred())
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(i * 7)
		}
		Expect(dev.Write(device.Main, p, want)).To(Succeed())
		eq, err := chunked.EqualByReading(opaque{dev}, p, want)
		Expect(err).NotTo(HaveOccurred())
		Expect(eq).To(BeTrue())
		for _, at := range []int{0, 4095, 4096, 3 * 4096, n - 300, n - 1} {
			planted := bytes.Clone(want)
			planted[at]++
			eq, err := chunked.EqualByReading(opaque{dev}, p, planted)
			Expect(err).NotTo(HaveOccurred())
			Expect(eq).To(BeFalse(), "difference at %d", at)
		}
	})

	It("reads back chunk by chunk inside the session on the device's Main thread, the comparison beside it", func() {
		dev := openSim("cann")
		DeferCleanup(dev.Close)
		chunked := capture.Tune(capture.Options{Runtime: builtin}, func(k *capture.Knobs) { k.ReadChunk = 4096 })
		const n = 5*4096 + 300
		p, err := dev.Malloc(device.Main, n)
		Expect(err).NotTo(HaveOccurred())
		want := bytes.Repeat([]byte{9}, n)
		Expect(dev.Write(device.Main, p, want)).To(Succeed())
		// A read from another goroutine would wait for the session, and the session for it: the reads
		// stay on the thread, and every chunk's comparison still counts.
		eq, err := chunked.EqualByReadingOnThread(dev, p, want)
		Expect(err).NotTo(HaveOccurred())
		Expect(eq).To(BeTrue())
		for _, at := range []int{0, 4095, 4096, 2*4096 + 17, 4 * 4096, n - 1} {
			planted := bytes.Clone(want)
			planted[at]++
			eq, err = chunked.EqualByReadingOnThread(dev, p, planted)
			Expect(err).NotTo(HaveOccurred())
			Expect(eq).To(BeFalse(), "difference at %d", at)
		}
	})

	It("gives a read-back-only device the catalog's outcomes and mismatches, chunk by chunk", func() {
		cat, err := loadCatalog()
		Expect(err).NotTo(HaveOccurred())
		chunked := capture.Tune(capture.Options{Runtime: builtin}, func(k *capture.Knobs) { k.ReadChunk = 4096 })
		dev, ref := openSim("cann"), openSim("cann")
		DeferCleanup(dev.Close)
		DeferCleanup(ref.Close)
		corrupted := 0
		for _, s := range cat.sets {
			for _, in := range probes.Instances(s.Probes, probes.Matrix{Replays: 2}) {
				got := capture.Run(context.Background(), opaque{dev}, in, chunked)
				want := capture.Run(context.Background(), ref, in, capture.Options{Runtime: builtin})
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
