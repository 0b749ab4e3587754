// Package fingerprint is the one definition of the fingerprints a verification compares instead of
// a buffer's bytes: device/cuda's PTX kernel, the fake libcuda's C kernel (device/fake) and the
// simulator compute the same values, and the engine (capture) computes the oracle's.
//
// A buffer of n bytes is cut into chunks of ChunkBytes (the last one shorter); chunk c's
// fingerprint is
//
//	sum mod 2^64 over the chunk's words i of Mix(word(i) ^ i*K)
//
// where word(i) is the little-endian uint64 of the buffer's bytes [8i, 8i+8), i counted from the
// start of the buffer (not of the chunk), so that data moved within a buffer changes the
// fingerprints of both places. A buffer whose length is not a multiple of 8 ends in a partial word
// of r bytes (1 to 7): those bytes zero-padded to 8, little-endian, with r in the top byte (which
// the padding leaves zero), so that the partial word is never the word of the same bytes followed
// by zeros. Mix is MurmurHash3's 64-bit finaliser (fmix64), a bijection, and K is 2^64 divided by
// the golden ratio (0x9E3779B97F4A7C15, odd): index 0 mixes the word alone, and every other index
// moves it.
//
// A sum reduces in any order, so a GPU adds the words' terms as its threads finish. Because Mix is
// a bijection, a chunk that differs in one word (a flipped bit, a stale 8 bytes) always has another
// fingerprint; a chunk that differs in several words keeps its fingerprint only when the terms'
// differences add to zero mod 2^64, which for data not built against this function is a chance of
// about 2^-64 (docs/performance.md, "Fingerprints").
//
// The test vectors (testdata/vectors.json) are written by
//
//	go run ./internal/fingerprint/gen > internal/fingerprint/testdata/vectors.json
//
// whose definition is written out word by word, apart from this package's; the package's tests,
// device/cuda's (on the fake library and, with REPLAYCHECK_HARDWARE=cuda, on the GPU) and
// device/sim's check their fingerprints against it.
package fingerprint

import (
	"encoding/binary"
	"runtime"
	"sync"
)

const (
	// ChunkBytes is the bytes of one chunk: one fingerprint per MiB.
	ChunkBytes = 1 << 20
	// ChunkWords is the 8-byte words of a whole chunk.
	ChunkWords = ChunkBytes / 8
	// K moves a word by its index before it is mixed.
	K uint64 = 0x9E3779B97F4A7C15
)

// Mix is MurmurHash3's 64-bit finaliser (fmix64): a bijection of uint64.
func Mix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// Chunks is how many chunks (fingerprints) a buffer of n bytes has: 0 for none.
func Chunks(n int64) int {
	if n <= 0 {
		return 0
	}
	return int((n + ChunkBytes - 1) / ChunkBytes)
}

// Bounds is the byte range [lo, hi) of chunk c of a buffer of n bytes.
func Bounds(n int64, c int) (lo, hi int64) {
	lo = int64(c) * ChunkBytes
	return lo, min(lo+ChunkBytes, n)
}

// Sum is the fingerprint of b, bytes of a buffer whose first word has index word: a chunk when
// word is its first word's index (c*ChunkWords). A partial word at b's end is the buffer's last
// (only a buffer's last chunk may end in one).
func Sum(b []byte, word uint64) uint64 {
	var s0, s1, s2, s3 uint64
	k, k1 := word*K, K
	k2, k3, k4 := k1+k1, k1+k1+k1, k1+k1+k1+k1 // multiples of K, mod 2^64
	i := 0
	for ; i+32 <= len(b); i += 32 {
		w := (*[32]byte)(b[i:])
		s0 += Mix(binary.LittleEndian.Uint64(w[0:]) ^ k)
		s1 += Mix(binary.LittleEndian.Uint64(w[8:]) ^ (k + k1))
		s2 += Mix(binary.LittleEndian.Uint64(w[16:]) ^ (k + k2))
		s3 += Mix(binary.LittleEndian.Uint64(w[24:]) ^ (k + k3))
		k += k4
	}
	for ; i+8 <= len(b); i += 8 {
		s0 += Mix(binary.LittleEndian.Uint64(b[i:]) ^ k)
		k += K
	}
	if r := len(b) - i; r > 0 {
		s0 += Mix(Tail(b[i:]) ^ k)
	}
	return s0 + s1 + s2 + s3
}

// Tail is the word of a buffer's last r bytes (1 to 7): zero-padded, little-endian, r in the top
// byte.
func Tail(b []byte) uint64 {
	var pad [8]byte
	copy(pad[:], b)
	return binary.LittleEndian.Uint64(pad[:]) | uint64(len(b))<<56
}

// Chunk is the fingerprint of chunk c of buf.
func Chunk(buf []byte, c int) uint64 {
	lo, hi := Bounds(int64(len(buf)), c)
	return Sum(buf[lo:hi], uint64(lo/8))
}

// minParallel is the fewest chunks worth spreading over goroutines (a chunk takes a fraction of a
// millisecond; starting a goroutine, microseconds).
const minParallel = 4

// Of writes the fingerprints of buf's chunks listed in which (every chunk when which is nil) into
// out (len(out) == Chunks(len(buf))), on up to GOMAXPROCS goroutines when there are several.
func Of(buf []byte, which []int, out []uint64) {
	n := len(which)
	if which == nil {
		n = Chunks(int64(len(buf)))
	}
	at := func(j int) int {
		if which == nil {
			return j
		}
		return which[j]
	}
	workers := min(runtime.GOMAXPROCS(0), n/minParallel)
	if workers < 2 {
		for j := range n {
			out[at(j)] = Chunk(buf, at(j))
		}
		return
	}
	var wg sync.WaitGroup
	per := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		wg.Go(func() {
			for j := lo; j < hi; j++ {
				out[at(j)] = Chunk(buf, at(j))
			}
		})
	}
	wg.Wait()
}

// All returns the fingerprints of every chunk of buf.
func All(buf []byte) []uint64 {
	out := make([]uint64, Chunks(int64(len(buf))))
	Of(buf, nil, out)
	return out
}

// Pattern is the test vectors' input: n bytes that depend on seed, byte i the top byte of
// (i+seed)*K, so that every word differs from its neighbours. Seed 0 names the zero buffer.
func Pattern(n int, seed uint64) []byte {
	b := make([]byte, n)
	if seed == 0 {
		return b
	}
	for i := range b {
		b[i] = byte((uint64(i) + seed) * K >> 56)
	}
	return b
}
