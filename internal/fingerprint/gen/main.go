// Command gen writes the fingerprint package's test vectors (testdata/vectors.json) to standard
// output:
//
//	go run ./internal/fingerprint/gen > internal/fingerprint/testdata/vectors.json
//
// It spells the definition out word by word, byte by byte, sharing nothing with the package but
// the input pattern (fingerprint.Pattern) and the constants, so that the package's optimised sum
// is checked against an independent reading of the definition.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/replaycheck/replaycheck/internal/fingerprint"
)

// vector is one buffer: Bytes bytes of fingerprint.Pattern(Bytes, Seed), and its fingerprints as
// hexadecimal strings (JSON numbers lose uint64 precision in most readers).
type vector struct {
	Name   string   `json:"name"`
	Bytes  int      `json:"bytes"`
	Seed   uint64   `json:"seed"`
	Flip   int      `json:"flip"` // a byte whose lowest bit is flipped after the pattern; -1: none
	Chunks []string `json:"chunks"`
}

// fmix is fmix64 written again, not fingerprint.Mix: the vectors must not come from the code
// they check.
func fmix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// naive is the definition read literally: for each word, its bytes assembled one by one.
func naive(b []byte) []uint64 {
	chunks := (len(b) + fingerprint.ChunkBytes - 1) / fingerprint.ChunkBytes
	out := make([]uint64, chunks)
	words := (len(b) + 7) / 8
	for i := range words {
		var w uint64
		r := 0
		for j := 0; j < 8 && 8*i+j < len(b); j++ {
			w |= uint64(b[8*i+j]) << (8 * j)
			r++
		}
		if r < 8 {
			w |= uint64(r) << 56
		}
		out[8*i/fingerprint.ChunkBytes] += fmix(w ^ uint64(i)*fingerprint.K)
	}
	return out
}

func main() {
	const mib = 1 << 20
	cases := []struct {
		name  string
		bytes int
		seed  uint64
		flip  int
	}{
		{"one byte", 1, 7, -1},
		{"seven bytes", 7, 7, -1},
		{"one word", 8, 7, -1},
		{"a word and a byte", 9, 7, -1},
		{"zero word", 8, 0, -1},
		{"zeros, 4 KiB and 3", 4096 + 3, 0, -1},
		{"4 KiB and 5", 4096 + 5, 3, -1},
		{"a chunk less a byte", mib - 1, 11, -1},
		{"a chunk", mib, 11, -1},
		{"a chunk and a byte", mib + 1, 11, -1},
		{"a chunk and a word", mib + 8, 11, -1},
		{"two chunks", 2 * mib, 5, -1},
		{"two chunks, first byte flipped", 2 * mib, 5, 0},
		{"two chunks, last byte of the first flipped", 2 * mib, 5, mib - 1},
		{"two chunks, first byte of the second flipped", 2 * mib, 5, mib},
		{"three chunks and 5, zeros", 3*mib + 5, 0, -1},
		{"three chunks and 5", 3*mib + 5, 13, -1},
		{"three chunks and 5, a byte of the partial word flipped", 3*mib + 5, 13, 3*mib + 2},
	}
	var out []vector
	for _, c := range cases {
		b := fingerprint.Pattern(c.bytes, c.seed)
		if c.flip >= 0 {
			b[c.flip] ^= 1
		}
		v := vector{Name: c.name, Bytes: c.bytes, Seed: c.seed, Flip: c.flip}
		for _, f := range naive(b) {
			v.Chunks = append(v.Chunks, fmt.Sprintf("%016x", f))
		}
		out = append(out, v)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
