package capture

import (
	"bytes"
	"crypto/subtle"
	"encoding/binary"
	"math/bits"

	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
)

// Verification at memory speed: a buffer is compared with the oracle where it lies when the
// backend can (runtime.Comparer, the simulator's pages), and otherwise read back in chunks through
// one host buffer the run reuses, the read of chunk i+1 overlapping the comparison of chunk i.
// Only the first corrupted round reads a differing buffer back whole, to localise its ranges.

// readChunk is the read-back chunk of a backend without runtime.Comparer (a variable so tests
// can make it smaller than a buffer).
var readChunk = 4 << 20

// verifier is the run's way to the device's bytes for verification.
type verifier struct {
	cmp     runtime.Comparer // nil: read back
	scratch []byte           // the read-back chunks, two of them, reused across rounds
}

// comparerOf returns the in-place comparison of dev's device (runtime.Comparer, found through any
// wrapper) when the runtime under test is the built-in one (its Read passes straight to the
// device; a runtime of the user's own reads through itself). It goes through the watch like every
// other device call.
func comparerOf(dev watched, builtin bool) runtime.Comparer {
	if c, ok := runtime.As[runtime.Comparer](dev.Device); ok && builtin {
		return watchedComparer{c: c, w: dev.w}
	}
	return nil
}

// watchedComparer is a runtime.Comparer whose calls the watch times (watch.go).
type watchedComparer struct {
	c runtime.Comparer
	w *watch
}

func (c watchedComparer) Equal(t runtime.Thread, src runtime.Ptr, want []byte) (eq bool, err error) {
	c.w.do("Equal", func() { eq, err = c.c.Equal(t, src, want) })
	return
}

// equal reports whether buffer a holds want, as a synchronous read of it would see.
func (r *run) equal(a *allocation, want []byte) (bool, error) {
	if r.cmp != nil && !a.host {
		return r.cmp.Equal(runtime.Main, a.ptr, want)
	}
	return r.equalByReading(a, want)
}

// equalByReading reads a back a chunk at a time into two reused host chunks: while chunk i is
// compared, chunk i+1 is being read (device calls stay one at a time: only the reader makes them).
func (r *run) equalByReading(a *allocation, want []byte) (bool, error) {
	n := int64(len(want))
	chunk := min(n, int64(readChunk))
	if int64(cap(r.scratch)) < 2*chunk {
		r.scratch = make([]byte, 2*chunk)
	}
	bufs := [2][]byte{r.scratch[:chunk], r.scratch[chunk : 2*chunk]}
	read := func(into []byte, off int64) error {
		m := min(chunk, n-off)
		if a.host {
			return r.dev.HostRead(into[:m], a.ptr.Slice(off, m))
		}
		return r.dev.Read(runtime.Main, into[:m], a.ptr.Slice(off, m))
	}
	if err := read(bufs[0], 0); err != nil {
		return false, err
	}
	equal := true
	for off, i := int64(0), 0; off < n; off, i = off+chunk, 1-i {
		var next chan error
		if off+chunk < n && r.onDeviceThread() {
			// Inside the batch on the device's Main thread: a read from another goroutine would
			// wait for the batch. Read in turn.
			if err := read(bufs[1-i], off+chunk); err != nil {
				return false, err
			}
		} else if off+chunk < n {
			next = make(chan error, 1)
			go func(into []byte, off int64) { next <- read(into, off) }(bufs[1-i], off+chunk)
		}
		m := min(chunk, n-off)
		equal = bytes.Equal(bufs[i][:m], want[off:off+m])
		if next != nil {
			if err := <-next; err != nil {
				return false, err
			}
		}
		if !equal {
			return false, nil
		}
	}
	return true, nil
}

// onDeviceThread reports whether the run is inside its batch on the device's Main thread
// (watch.batch).
func (r *run) onDeviceThread() bool { return r.watch != nil && r.watch.onThread }

// mergeGap: differing runs separated by fewer equal bytes form one range, so a pattern that
// differs in some bytes of every lane (iota32 against zero) is one finding, not one per lane.
const mergeGap = 16

// differingRanges calls f with each differing range [off, end) of got against want (equal
// lengths), in order, until f returns false; f sees a range once the next difference (or the end
// of the buffers) shows it is closed. No allocation, one pass: see localiser.
func differingRanges(want, got []byte, f func(off, end int) bool) {
	const chunk = 1024 // measured on a loaded 2-core VM: 512-4096 within noise, 1024 steadiest
	var xor [chunk]byte
	n := len(want)
	got = got[:n]
	l := localiser{start: -1, f: f}
	for i := 0; i < n; i += chunk {
		end := min(i+chunk, n)
		if bytes.Equal(want[i:end], got[i:end]) {
			// A chunk with no difference costs one SIMD comparison, and 1 KiB of equal bytes closes
			// any open range (mergeGap): a few differences in a large buffer are found at memory
			// speed. A chunk that differs stops the comparison at its first difference.
			continue
		}
		// XORBytes runs at SIMD speed; a short last chunk leaves zeros (no difference) after it.
		m := subtle.XORBytes(xor[:], want[i:end], got[i:])
		if m < chunk {
			clear(xor[m:])
		}
		for b := 0; b < m; b += localiseBlock {
			if !l.block(xor[b:b+localiseBlock], i+b) {
				return
			}
		}
	}
	if l.start >= 0 {
		f(l.start, l.end)
	}
}

// localiseBlock is the bytes one 64-bit mask covers: a bit per 8-byte word.
const localiseBlock = 512

// localiser merges differences into ranges. The XOR of the buffers is scanned a 512-byte block
// at a time: a mask of its non-zero words is built without branches, then only those words are
// visited. With a difference every ~100 bytes (1% scattered), a branch per word or per 32 bytes
// mispredicts at almost every difference; the mask costs one unpredictable branch per block. Every
// differing byte of a word is less than mergeGap from the next, so a word's differences always
// join one range: only its first and last differing byte matter.
type localiser struct {
	start, end int // the open range [start, end); start < 0: none yet
	f          func(off, end int) bool
}

// block adds the differences of x, the XOR of the 512 bytes at offset at; false when f stopped.
func (l *localiser) block(x []byte, at int) bool {
	x = x[:localiseBlock]
	var mask uint64
	for k := 0; k < 64; k += 4 {
		w := x[k*8 : k*8+32]
		x0 := binary.LittleEndian.Uint64(w[0:])
		x1 := binary.LittleEndian.Uint64(w[8:])
		x2 := binary.LittleEndian.Uint64(w[16:])
		x3 := binary.LittleEndian.Uint64(w[24:])
		// (v | -v) >> 63 is 1 exactly when v != 0
		mask |= ((x0|-x0)>>63 | (x1|-x1)>>63<<1 | (x2|-x2)>>63<<2 | (x3|-x3)>>63<<3) << k
	}
	for mask != 0 {
		o := bits.TrailingZeros64(mask) * 8 & (localiseBlock - 1)
		mask &= mask - 1
		v := binary.LittleEndian.Uint64(x[o:])
		lo := at + o + bits.TrailingZeros64(v)/8
		hi := at + o + 8 - bits.LeadingZeros64(v)/8
		if l.start >= 0 && lo < l.end+mergeGap {
			l.end = hi
			continue
		}
		if l.start >= 0 && !l.f(l.start, l.end) {
			return false
		}
		l.start, l.end = lo, hi
	}
	return true
}

// writeInit writes pattern init over p: a uniform pattern (zero, fill:B) a chunk at a time from
// one reused host chunk, so a large buffer costs no host copy of its size; any other whole.
func (r *run) writeInit(p runtime.Ptr, init probes.Pattern) error {
	if k := init.Kind; k != probes.PatZero && k != "" && k != probes.PatFill {
		return r.dev.Write(runtime.Main, p, init.Bytes(p.Bytes))
	}
	chunk := min(p.Bytes, int64(readChunk))
	if int64(cap(r.scratch)) < chunk {
		r.scratch = make([]byte, 2*chunk)
	}
	buf := r.scratch[:chunk]
	init.Fill(buf)
	for off := int64(0); off < p.Bytes; off += chunk {
		m := min(chunk, p.Bytes-off)
		if err := r.dev.Write(runtime.Main, p.Slice(off, m), buf[:m]); err != nil {
			return err
		}
	}
	return nil
}
