package capture

import (
	"bytes"
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
// lengths), in order, until f returns false. No allocation; equal stretches are skipped a word
// (or a block) at a time.
func differingRanges(want, got []byte, f func(off, end int) bool) {
	i := nextDiff(want, got, 0)
	for i < len(want) {
		end := i + 1 // one past the last differing byte of the range
		j := nextDiff(want, got, end)
		for j < len(want) && j < end+mergeGap {
			end = j + 1
			j = nextDiff(want, got, end)
		}
		if !f(i, end) {
			return
		}
		i = j
	}
}

// nextDiff returns the first index from i where want and got differ, or len(want): a word at a
// time near i (differences cluster), then equal blocks skipped at bytes.Equal's speed, then a word
// at a time again within the block that differs.
func nextDiff(want, got []byte, i int) int {
	const near, block = 64, 1024
	n := len(want)
	for stop := min(i+near, n); i+8 <= stop; i += 8 {
		if x := binary.LittleEndian.Uint64(want[i:]) ^ binary.LittleEndian.Uint64(got[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for i+block <= n && bytes.Equal(want[i:i+block], got[i:i+block]) {
		i += block
	}
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(want[i:]) ^ binary.LittleEndian.Uint64(got[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for ; i < n; i++ {
		if want[i] != got[i] {
			return i
		}
	}
	return n
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
