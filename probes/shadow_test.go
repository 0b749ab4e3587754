package probes

import (
	"fmt"
	"math/rand/v2"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	gm "github.com/onsi/gomega"
)

// randomCapture is a probe whose one capture runs random data ops on four streams forked from
// main, over two buffers, with records and waits between them. Each stream works mostly in a
// quarter of each buffer of its own; how often it strays into another's, where an unordered op
// races with it, each probe draws: from races everywhere to none.
func randomCapture(rng *rand.Rand, n int) string {
	streams := []string{"main", "s1", "s2", "s3"}
	var b strings.Builder
	b.WriteString("version: replaycheck/v1\nset: r\nprobes:\n  - name: p\n    hazard: none\n" +
		"    buffers: {a: {bytes: 16KiB}, b: {bytes: 16KiB}}\n    streams: [main, s1, s2, s3]\n" +
		"    events: [e0, e1, e2, e3]\n    capture:\n      ops:\n" +
		"        - record: {event: e0, stream: main}\n")
	for _, s := range streams[1:] {
		fmt.Fprintf(&b, "        - wait: {event: e0, stream: %s}\n", s)
	}
	stray := []float64{0, 0.002, 0.02, 0.2}[rng.IntN(4)]
	// at is an offset for n bytes in stream si's quarter, or, straying, anywhere.
	at := func(si, n int) int {
		if rng.Float64() < stray {
			return rng.IntN(16<<10 - n + 1)
		}
		return si<<12 + rng.IntN(4096-n+1)
	}
	for range n {
		si := rng.IntN(len(streams))
		s := streams[si]
		switch k := rng.IntN(100); {
		case k < 10:
			fmt.Fprintf(&b, "        - record: {event: e%d, stream: %s}\n", rng.IntN(4), s)
		case k < 20:
			fmt.Fprintf(&b, "        - wait: {event: e%d, stream: %s}\n", rng.IntN(4), s)
		case k < 60:
			n := 1 << rng.IntN(7)
			fmt.Fprintf(&b, "        - fill: {dst: %c, value: 1, offset: %d, bytes: %d, stream: %s}\n", 'a'+rune(rng.IntN(2)), at(si, n), n, s)
		case k < 99:
			n := 1 << rng.IntN(7)
			fmt.Fprintf(&b, "        - copy: {dst: a, src: b, bytes: %d, dst-offset: %d, src-offset: %d, stream: %s}\n", n, at(si, n), at(si, n), s)
		default:
			if rng.Float64() < stray*5 {
				fmt.Fprintf(&b, "        - axpy: {y: b, x: a, a: 2, stream: %s}\n", s) // the whole buffers
			}
		}
	}
	b.WriteString("    expect: {guarded: exact}\n")
	return b.String()
}

// The race check asks a stream's shadows (the last op to write and to read each byte) before
// comparing a new op with that stream's unordered ops one by one, once there are more than
// directScan of them; it must find exactly what comparing with every one of them finds.
var _ = Describe("the race check's shadows", func() {
	load := func(src string, scan int) string {
		lim := tuneRace(DefaultLimits(), func(k *raceKnobs) { k.directScan = scan })
		_, err := Parse("r.yaml", []byte(src), lim)
		if err == nil {
			return ""
		}
		return err.Error()
	}

	It("report every race that comparing op by op reports, and no other", func() {
		rng := rand.New(rand.NewPCG(21, 4))
		races, clean := 0, 0
		for range 300 {
			src := randomCapture(rng, 20+rng.IntN(120))
			direct, shadowed := load(src, 1<<30), load(src, 0)
			gm.Expect(shadowed).To(gm.Equal(direct), src)
			if strings.Contains(direct, ": race: ") {
				races++
			} else {
				clean++
			}
		}
		// Both kinds were met, often.
		GinkgoWriter.Printf("%d probes with a race, %d without\n", races, clean)
		gm.Expect(races).To(gm.BeNumerically(">", 50))
		gm.Expect(clean).To(gm.BeNumerically(">", 50))
	})
})

// sideBySide is a capture forked onto a second stream and joined back, n fills alternating between
// the two streams, each on a range of its own.
func sideBySide(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: replaycheck/v1\nset: s\nprobes:\n  - name: p\n    hazard: none\n    buffers: {b: {bytes: %d}}\n"+
		"    streams: [s1, s2]\n    events: [fork, join]\n    capture:\n      stream: s1\n      ops:\n"+
		"        - record: {event: fork, stream: s1}\n        - wait: {event: fork, stream: s2}\n", n*64)
	for i := range n {
		fmt.Fprintf(&b, "        - fill: {dst: b, value: 1, offset: %d, bytes: 64, stream: s%d}\n", i*64, 1+i%2)
	}
	b.WriteString("        - record: {event: join, stream: s2}\n        - wait: {event: join, stream: s1}\n    expect: {guarded: exact}\n")
	return b.String()
}

var _ = Describe("a capture of two streams side by side", func() {
	It("loads at 20,000 fills, where comparing every op with the other stream's ran out of budget", func() {
		src := sideBySide(20000)
		_, err := Parse("s.yaml", []byte(src), DefaultLimits())
		gm.Expect(err).NotTo(gm.HaveOccurred())

		opByOp := tuneRace(DefaultLimits(), func(k *raceKnobs) { k.directScan = 1 << 30 }) // 10^8 pairs
		_, err = Parse("s.yaml", []byte(src), opByOp)
		gm.Expect(err).To(gm.MatchError(gm.ContainSubstring("too many unordered data ops for the race check")))
	})

	It("still finds the one race among them", func() {
		src := strings.Replace(sideBySide(20000), "offset: 1279872, bytes: 64, stream: s1", "offset: 64, bytes: 64, stream: s1", 1)
		_, err := Parse("s.yaml", []byte(src), DefaultLimits())
		gm.Expect(err).To(gm.MatchError("s.yaml:20012:11: race: fill (line 20012) on stream s1 and fill (line 15) on stream s2 race on b[64:128] (write-write): no stream order or record/wait inside capture main orders them"))
	})
})

// A shadow against a byte array holding, for each byte, the last op to touch it.
var _ = Describe("a shadow", func() {
	It("knows for every byte which op touched it last, after any sequence of ranges", func() {
		rng := rand.New(rand.NewPCG(8, 8))
		for range 50 {
			var sh shadow
			const size = 512
			last := make([]int, size) // -1: never touched
			for i := range last {
				last[i] = -1
			}
			for k := range 400 {
				n := 1 + rng.IntN([]int{4, 32, 200}[rng.IntN(3)])
				off := rng.IntN(size - n + 1)
				sh.assign(int64(off), int64(off+n), k)
				for i := off; i < off+n; i++ {
					last[i] = k
				}
				// Every piece is one run of bytes with the same last op, and the pieces lie
				// in order without overlapping.
				end := int64(0)
				for at, p := range sh.pieces.All() {
					if int64(at) < end || p.end <= int64(at) {
						Fail(fmt.Sprintf("piece [%d, %d) after one ending at %d", at, p.end, end))
					}
					for i := int64(at); i < p.end; i++ {
						if last[i] != p.k {
							Fail(fmt.Sprintf("byte %d: last touched by op %d, the shadow says %d", i, last[i], p.k))
						}
					}
					end = p.end
				}
				for range 5 {
					n := 1 + rng.IntN(64)
					off := rng.IntN(size - n + 1)
					since := rng.IntN(k + 1)
					want := false
					for i := off; i < off+n; i++ {
						want = want || last[i] >= since
					}
					budget := 1 << 30
					if got := sh.since(int64(off), int64(off+n), since, &budget); got != want {
						Fail(fmt.Sprintf("[%d, %d) touched since op %d: %v, want %v", off, off+n, since, got, want))
					}
				}
			}
			// The pieces cover exactly the bytes ever touched.
			covered := 0
			for at, p := range sh.pieces.All() {
				covered += int(p.end - int64(at))
			}
			touched := 0
			for _, k := range last {
				if k >= 0 {
					touched++
				}
			}
			gm.Expect(covered).To(gm.Equal(touched))
		}
	})
})
