package capture

import (
	"bytes"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"math/bits"
	"runtime"
	"sync"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// Verification at memory speed: a buffer is compared with the oracle by fingerprints where the
// device computes them (device.Fingerprinter: a GPU's kernel; fingerprints.go), reading back only
// the chunks whose fingerprints differ; else where it lies when the backend can (device.Comparer,
// the simulator's pages, the bindings' pinned chunks); and otherwise read back in chunks through
// one host buffer the instance reuses, the read of chunk i+1 overlapping the comparison of chunk i
// (the chunk: knobs.ReadChunk). Only the first corrupted round reads a differing buffer's bytes
// back to localise its ranges: all of them, or by fingerprints only its differing chunks.

// verifier is the instance's way to the device's bytes for verification.
type verifier struct {
	cmp     *deviceCompare // nil: read back
	scratch []byte         // the read-back chunks, two of them, reused across rounds
	fps     *fingerprints  // the oracle's fingerprints, from the first verification by them
}

// deviceCompare is what the device states for verification, each watched: an in-place comparison,
// fingerprints, either or both.
type deviceCompare struct {
	eq device.Comparer      // nil: read back
	fp device.Fingerprinter // nil: compare (eq) or read back
}

// scratchPool keeps the read-back chunks of instances that finished (releaseScratch) for the next
// one: two 4 MiB chunks made new for every instance are 8 MiB of memory the OS faults in page by
// page, and a collection every few instances of a probe with large buffers.
var scratchPool sync.Pool // of *[]byte

// chunks returns the instance's two chunks of n bytes each, one after the other.
func (v *verifier) chunks(n int64) []byte {
	if int64(cap(v.scratch)) < 2*n {
		if s, _ := scratchPool.Get().(*[]byte); s != nil && int64(cap(*s)) >= 2*n {
			v.scratch = *s
		} else {
			v.scratch = make([]byte, 2*n)
		}
	}
	return v.scratch[:2*n]
}

// releaseScratch gives the chunks back for the next instance. Only a finished instance does: one
// given up may still be inside a read into them.
func (v *verifier) releaseScratch() {
	if v.scratch != nil {
		s := v.scratch[:cap(v.scratch)]
		scratchPool.Put(&s)
		v.scratch = nil
	}
}

// comparerOf returns the in-place comparison and the fingerprints dev's device states
// (device.Extensions.Compare, Fingerprint) when the runtime under test is direct
// (runtime.UnderTest.Direct: its Read passes straight to the device; a runtime of the user's own
// reads through itself); nil when it states neither. They go through the watch like every other
// device call.
func comparerOf(dev watched, direct bool) *deviceCompare {
	e := device.ExtensionsOf(dev.Device)
	if !direct || (e.Compare == nil && e.Fingerprint == nil) {
		return nil
	}
	c := &deviceCompare{}
	if e.Compare != nil {
		c.eq = watchedComparer{c: e.Compare, w: dev.w}
	}
	if e.Fingerprint != nil {
		c.fp = watchedFingerprinter{f: e.Fingerprint, w: dev.w}
	}
	return c
}

// watchedComparer is a device.Comparer whose calls the watch times (watch.go).
type watchedComparer struct {
	c device.Comparer
	w *watch
}

func (c watchedComparer) Equal(t device.Thread, src device.Ptr, want []byte) (eq bool, err error) {
	c.w.do("Equal", func() { eq, err = c.c.Equal(t, src, want) })
	return
}

// watchedFingerprinter is a device.Fingerprinter whose calls the watch times (watch.go).
type watchedFingerprinter struct {
	f device.Fingerprinter
	w *watch
}

func (f watchedFingerprinter) Fingerprints(t device.Thread, src device.Ptr, out []uint64) (err error) {
	f.w.do("Fingerprints", func() { err = f.f.Fingerprints(t, src, out) })
	return
}

// equal reports whether buffer a holds want, as a synchronous read of it would see.
func (in *instance) equal(a *allocation, want []byte) (bool, error) {
	if in.cmp != nil && in.cmp.eq != nil && !a.host {
		return in.cmp.eq.Equal(device.Main, a.ptr, want)
	}
	return in.equalByReading(a, want)
}

// equalByReading reads a back a chunk at a time into two reused host chunks: while chunk i is
// compared, chunk i+1 is being read (device calls stay one at a time: only the reader makes them).
// Inside the engine's session the reader is the device's own thread and the comparison runs beside
// it.
func (in *instance) equalByReading(a *allocation, want []byte) (bool, error) {
	n := int64(len(want))
	chunk := min(n, in.knobs.ReadChunk)
	scratch := in.chunks(chunk)
	bufs := [2][]byte{scratch[:chunk], scratch[chunk : 2*chunk]}
	read := func(into []byte, off int64) error {
		m := min(chunk, n-off)
		if a.host {
			return in.dev.HostRead(into[:m], a.ptr.Slice(off, m))
		}
		return in.dev.Read(device.Main, into[:m], a.ptr.Slice(off, m))
	}
	if err := read(bufs[0], 0); err != nil {
		return false, err
	}
	for off, i := int64(0), 0; off < n; off, i = off+chunk, 1-i {
		m := min(chunk, n-off)
		got, exp := bufs[i][:m], want[off:off+m]
		var equal bool
		switch {
		case off+chunk >= n:
			equal = bytes.Equal(got, exp)
		case in.onDeviceThread():
			// Inside the session on the device's Main thread, the device's calls must stay on this
			// thread (a read from another goroutine would wait for the session): the comparison
			// moves to a goroutine instead, and this thread reads the next chunk.
			done := make(chan bool, 1)
			go func() { done <- bytes.Equal(got, exp) }()
			err := read(bufs[1-i], off+chunk)
			equal = <-done
			if err != nil {
				return false, err
			}
		default:
			next := make(chan error, 1)
			go func(into []byte, off int64) { next <- read(into, off) }(bufs[1-i], off+chunk)
			equal = bytes.Equal(got, exp)
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

// onDeviceThread reports whether the instance is inside its session on the device's Main thread
// (watch.session).
func (in *instance) onDeviceThread() bool { return in.watch != nil && in.watch.onThread }

// mergeGap: differing runs separated by fewer equal bytes form one range, so a pattern that
// differs in some bytes of every lane (iota32 against zero) is one finding, not one per lane.
const mergeGap = 16

// span is one differing range [off, end) of a buffer.
type span struct{ off, end int }

// localisation is what differs between two equal-length buffers: every differing range and byte
// counted, the first ranges kept.
type localisation struct {
	kept   []span // the first ranges, in order, up to the limit asked
	ranges int    // every differing range
	bytes  int64  // every differing byte
}

// Localisation. The buffers are scanned a 1 KiB chunk at a time. A chunk with no difference costs
// one bytes.Equal (SIMD), and 1 KiB of equal bytes closes any open range (mergeGap), so a few
// differences in a large buffer are found at the speed of bytes.Equal. A chunk that differs is
// XORed into a stack buffer by crypto/subtle.XORBytes (SIMD; XORing in registers 8 bytes at a time
// measured slower), and a mask of its differing 16-byte groups is built from that without a branch;
// only those groups are visited. With a difference every ~100 bytes (1% scattered), a branch per
// word or per group would mispredict at almost every difference; the mask costs one unpredictable
// branch per differing group. Every differing byte of a group is less than mergeGap from the next,
// so a group's differences always join one range: only its first and last differing byte matter. A
// buffer of at least 2 segment bytes (knobs.SegmentBytes) is cut into segments that separate
// goroutines scan, one per CPU, and their ranges are joined in order across the cuts.

const localiseChunk = 1024

// localise counts every differing range and byte of got against want (equal lengths) and keeps
// the first limit ranges (none when limit <= 0). The ranges are those of naive byte-at-a-time
// merging: differing runs separated by fewer than mergeGap equal bytes are one range. A buffer of
// at least two segmentBytes is scanned a segment per CPU.
func localise(want, got []byte, limit, segmentBytes int) localisation {
	n := len(want)
	if len(got) != n {
		// Here, not in a scanning goroutine: a panic there would end the process, not the instance.
		panic(fmt.Sprintf("localise: %d bytes wanted, %d got", n, len(got)))
	}
	var cuts []int
	if parts := min(runtime.GOMAXPROCS(0), n/segmentBytes); parts > 1 {
		per := (n / parts) &^ (localiseChunk - 1)
		for k := 1; k < parts; k++ {
			cuts = append(cuts, k*per)
		}
	}
	return localiseAt(want, got, limit, cuts)
}

// localiseAt scans the segments between cuts (ascending multiples of localiseChunk), each but the
// last on a goroutine of its own and the last on the caller's, and joins them.
func localiseAt(want, got []byte, limit int, cuts []int) localisation {
	limit = min(max(limit, 0), len(want)) // no more ranges than bytes; limit+1 cannot overflow
	bounds := append(append([]int{0}, cuts...), len(want))
	segs := make([]segment, len(bounds)-1)
	var wg sync.WaitGroup
	for k := range segs {
		lo, hi := bounds[k], bounds[k+1]
		w, g := want[lo:hi], got[lo:hi] // sliced here: see localise
		if k == len(segs)-1 {
			segs[k] = scanSegment(w, g, lo, limit+1)
			continue
		}
		wg.Go(func() { segs[k] = scanSegment(w, g, lo, limit+1) })
	}
	wg.Wait()
	return join(segs, limit)
}

// segment is the scan of one piece of the buffers: its ranges as if it stood alone.
type segment struct {
	ranges int
	bytes  int64
	kept   []span // its first ranges, up to the number asked
	last   span   // its last range (ranges > 0)
}

// join joins the segments' ranges in order: a segment's first range joins the previous one's last
// when fewer than mergeGap equal bytes part them. Each segment keeps limit+1 ranges, so that when
// one keeps fewer than it has, those it kept fill the limit even if its first joined the previous.
func join(segs []segment, limit int) localisation {
	var out localisation
	kept := 0
	for _, s := range segs {
		kept += len(s.kept)
	}
	out.kept = make([]span, 0, min(limit, kept))
	emit := func(s span) {
		if len(out.kept) < limit {
			out.kept = append(out.kept, s)
		}
	}
	var open span
	have := false
	for _, s := range segs {
		if s.ranges == 0 {
			continue
		}
		out.ranges += s.ranges
		out.bytes += s.bytes
		rs := s.kept
		if len(rs) == s.ranges {
			rs = rs[:len(rs)-1] // s.last: open, until the next segment shows whether it joins
		}
		first := s.kept[0] // a segment with ranges keeps at least one
		if have && first.off < open.end+mergeGap {
			out.ranges--
			if s.ranges == 1 {
				open.end = s.last.end
				continue
			}
			open.end = first.end
			rs = rs[1:]
		}
		if have {
			emit(open)
		}
		for _, r := range rs {
			emit(r)
		}
		open, have = s.last, true
	}
	if have {
		emit(open)
	}
	return out
}

// scanSegment scans want against got, whose offset in the buffers is base, keeping up to keep
// ranges. A short last chunk is scanned from zero-padded copies: padding never differs. The open
// range [start, end) and the counts are locals, so that they can stay in registers.
func scanSegment(want, got []byte, base, keep int) segment {
	seg := segment{kept: make([]span, 0, min(keep, 64))}
	start, end := -1, 0
	ranges, differing := 0, int64(0)
	n := len(want)
	var padA, padB, x [localiseChunk]byte
	for i := 0; i < n; i += localiseChunk {
		var a, b *[localiseChunk]byte
		if i+localiseChunk <= n {
			a, b = (*[localiseChunk]byte)(want[i:]), (*[localiseChunk]byte)(got[i:])
		} else {
			copy(padA[:], want[i:])
			copy(padB[:], got[i:])
			a, b = &padA, &padB
		}
		if bytes.Equal(a[:], b[:]) {
			continue
		}
		at := base + i
		subtle.XORBytes(x[:], a[:], b[:])
		var mask uint64
		for k := 0; k < localiseChunk/16; k += 4 {
			w := (*[64]byte)(x[k*16:])
			g0 := binary.LittleEndian.Uint64(w[0:]) | binary.LittleEndian.Uint64(w[8:])
			g1 := binary.LittleEndian.Uint64(w[16:]) | binary.LittleEndian.Uint64(w[24:])
			g2 := binary.LittleEndian.Uint64(w[32:]) | binary.LittleEndian.Uint64(w[40:])
			g3 := binary.LittleEndian.Uint64(w[48:]) | binary.LittleEndian.Uint64(w[56:])
			mask |= (nonZero(g0) | nonZero(g1)<<1 | nonZero(g2)<<2 | nonZero(g3)<<3) << k
		}
		for mask != 0 {
			o := bits.TrailingZeros64(mask) * 16 & (localiseChunk - 1)
			mask &= mask - 1
			g := (*[16]byte)(x[o:])
			x0 := binary.LittleEndian.Uint64(g[0:])
			x1 := binary.LittleEndian.Uint64(g[8:])
			differing += int64(differingBytes(x0) + differingBytes(x1))
			// The group's first and last differing bit, as if it were one 128-bit word.
			first := bits.TrailingZeros64(x0)
			if x0 == 0 {
				first = 64 + bits.TrailingZeros64(x1)
			}
			last := 127 - bits.LeadingZeros64(x1)
			if x1 == 0 {
				last = 63 - bits.LeadingZeros64(x0)
			}
			lo, hi := at+o+first/8, at+o+last/8+1
			if start >= 0 && lo < end+mergeGap {
				end = hi
				continue
			}
			if start >= 0 {
				ranges++
				if len(seg.kept) < keep {
					seg.kept = append(seg.kept, span{start, end})
				}
			}
			start, end = lo, hi
		}
	}
	if start >= 0 {
		ranges++
		if len(seg.kept) < keep {
			seg.kept = append(seg.kept, span{start, end})
		}
		seg.last = span{start, end}
	}
	seg.ranges, seg.bytes = ranges, differing
	return seg
}

// nonZero is 1 when v != 0 and 0 otherwise, without a branch.
func nonZero(v uint64) uint64 { return (v | -v) >> 63 }

// differingBytes counts the non-zero bytes of x: each byte's bits folded into its lowest.
func differingBytes(x uint64) int {
	x |= x >> 4
	x |= x >> 2
	x |= x >> 1
	return bits.OnesCount64(x & 0x0101010101010101)
}

// writeInit writes pattern init over p: a uniform pattern (zero, fill:B) a chunk at a time from
// one reused host chunk, so a large buffer costs no host copy of its size; any other whole.
func (in *instance) writeInit(p device.Ptr, init probes.Pattern) error {
	if k := init.Kind; k != probes.PatZero && k != "" && k != probes.PatFill {
		return in.dev.Write(device.Main, p, init.Bytes(p.Bytes))
	}
	chunk := min(p.Bytes, in.knobs.ReadChunk)
	buf := in.chunks(chunk)[:chunk]
	init.Fill(buf)
	for off := int64(0); off < p.Bytes; off += chunk {
		m := min(chunk, p.Bytes-off)
		if err := in.dev.Write(device.Main, p.Slice(off, m), buf[:m]); err != nil {
			return err
		}
	}
	return nil
}
