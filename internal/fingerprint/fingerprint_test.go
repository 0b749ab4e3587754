package fingerprint_test

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/fingerprint"
)

func TestFingerprint(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "fingerprint")
}

// naive is the definition read word by word, as the vectors' generator reads it.
func naive(b []byte) []uint64 {
	out := make([]uint64, fingerprint.Chunks(int64(len(b))))
	for i := 0; 8*i < len(b); i++ {
		var pad [8]byte
		r := copy(pad[:], b[8*i:])
		w := binary.LittleEndian.Uint64(pad[:])
		if r < 8 {
			w |= uint64(r) << 56
		}
		out[8*i/fingerprint.ChunkBytes] += fingerprint.Mix(w ^ uint64(i)*fingerprint.K)
	}
	return out
}

var _ = Describe("fingerprints", func() {
	It("are the test vectors' checked in", func() {
		vs, err := fingerprint.Vectors()
		Expect(err).NotTo(HaveOccurred())
		Expect(len(vs)).To(BeNumerically(">=", 15))
		for _, v := range vs {
			Expect(fingerprint.All(v.Input())).To(Equal(v.Chunks), v.Name)
		}
	})

	It("are what the generator writes (the vectors are up to date)", func() {
		if _, err := exec.LookPath("go"); err != nil {
			Skip("no go command to run the generator")
		}
		out, err := exec.Command("go", "run", "./gen").Output()
		Expect(err).NotTo(HaveOccurred())
		want, err := os.ReadFile("testdata/vectors.json")
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(Equal(string(want)))
	})

	It("are the definition read word by word, for random buffers of every length near a word and a chunk", func() {
		r := rand.New(rand.NewPCG(1, 2))
		lengths := []int{0, 1, 2, 7, 8, 9, 31, 32, 33, 40, 4095}
		for _, base := range []int{fingerprint.ChunkBytes, 2 * fingerprint.ChunkBytes, 5 * fingerprint.ChunkBytes} {
			for d := -9; d <= 9; d++ {
				lengths = append(lengths, base+d)
			}
		}
		for _, n := range lengths {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			Expect(fingerprint.All(b)).To(Equal(naive(b)), "%d bytes", n)
		}
	})

	It("computes only the chunks asked, leaving the others", func() {
		b := fingerprint.Pattern(9*fingerprint.ChunkBytes+3, 9)
		all := fingerprint.All(b)
		out := make([]uint64, len(all))
		which := []int{0, 2, 3, 4, 5, 6, 9}
		fingerprint.Of(b, which, out)
		for c := range out {
			if c == 1 || c == 7 || c == 8 {
				Expect(out[c]).To(BeZero())
			} else {
				Expect(out[c]).To(Equal(all[c]), "chunk %d", c)
			}
		}
	})

	It("tell apart a flipped bit anywhere, a word moved within the buffer, and a partial word from the same bytes zero-padded", func() {
		b := fingerprint.Pattern(2*fingerprint.ChunkBytes+5, 3)
		all := fingerprint.All(b)
		for _, at := range []int{0, 7, 8, fingerprint.ChunkBytes - 1, fingerprint.ChunkBytes, len(b) - 5, len(b) - 1} {
			for bit := range 8 {
				b[at] ^= 1 << bit
				got := fingerprint.All(b)
				b[at] ^= 1 << bit
				c := at / fingerprint.ChunkBytes
				Expect(got[c]).NotTo(Equal(all[c]), "bit %d of byte %d", bit, at)
				got[c] = all[c]
				Expect(got).To(Equal(all), "only chunk %d changes", c)
			}
		}
		// Two words swapped: each sum still has both words, at other indexes.
		s := fingerprint.Pattern(64, 5)
		t := append([]byte(nil), s...)
		copy(t[0:8], s[8:16])
		copy(t[8:16], s[0:8])
		Expect(fingerprint.All(t)).NotTo(Equal(fingerprint.All(s)))
		// 5 bytes against the same 5 bytes and 3 zeros.
		Expect(fingerprint.All(append(append([]byte(nil), s[:5]...), 0, 0, 0))).NotTo(Equal(fingerprint.All(s[:5])))
	})

	It("has one chunk per MiB begun", func() {
		Expect(fingerprint.Chunks(0)).To(Equal(0))
		Expect(fingerprint.Chunks(1)).To(Equal(1))
		Expect(fingerprint.Chunks(fingerprint.ChunkBytes)).To(Equal(1))
		Expect(fingerprint.Chunks(fingerprint.ChunkBytes + 1)).To(Equal(2))
	})
})

func BenchmarkSum(b *testing.B) {
	buf := fingerprint.Pattern(64<<20, 1)
	out := make([]uint64, fingerprint.Chunks(int64(len(buf))))
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		fingerprint.Of(buf, nil, out)
	}
}
