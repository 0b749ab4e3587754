package capture

import (
	"bytes"
	"unsafe"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/fingerprint"
	"github.com/replaycheck/replaycheck/probes"
)

// Verification by fingerprints (device.Fingerprinter). After a round the device reduces each
// checked buffer to one fingerprint per MiB (internal/fingerprint) and only those cross the link.
// The engine keeps the oracle's fingerprint of every chunk, and recomputes only the chunks the
// oracle may have written since the round before: what the round's `each` ops and the graphs it
// launched write, at most (writesOf, over-approximated from the ops as written: a range whose
// length is left to the buffer's size runs to its end), and every chunk of a buffer the oracle
// replaced (allocated, grown: other bytes). A round whose graphs write nothing checked costs no
// pass over host memory. A chunk whose fingerprints differ is read back; only its bytes decide:
// a difference there is one, and in the first corrupted round the buffer's other chunks are taken
// from the oracle (their fingerprints match) to localise it as a read of the whole buffer would,
// so every report is what it would be without fingerprints.

// fingerprints is the instance's oracle-side state.
type fingerprints struct {
	bufs map[string]*fpBuffer
	// writes is what each capture's graph writes, at most, by capture name (made at its first
	// launch).
	writes map[string][]fpWrite
	dev    []uint64 // the device's fingerprints of the buffer being verified
	round  int      // the verification under way: a buffer not verified in it is forgotten
}

// fpBuffer is the oracle's fingerprints of one buffer.
type fpBuffer struct {
	data  []byte   // the oracle's bytes they are of: kept, so that their identity says a replacement
	host  []uint64 // by chunk
	dirty []bool   // the chunks the oracle may have written since they were computed
	any   bool     // some chunk is dirty
	round int      // the last verification that saw the buffer
}

// fpWrite is a range an op may write: [off, end) of buffer, end -1 for the buffer's end, buffer ""
// for every buffer (an op whose writes are not known).
type fpWrite struct {
	buffer   string
	off, end int64
}

// writesOf is what op may write when the oracle applies it, at most: the write spans its
// resolution names (probes.Op.ResolveInto), resolved against buffers of size unbounded so that a
// range whose length is left to the buffer's size runs to its end (dirtyFrom clips it). Ops that
// write no buffer's bytes give none; an allocation or a grow replaces the buffer's bytes, which
// fpBuffer's identity check sees; an op of a kind this does not know, or one that does not
// resolve, writes every buffer.
func writesOf(op *probes.Op) []fpWrite {
	switch op.Kind {
	case probes.OpFill, probes.OpCopy, probes.OpAxpy, probes.OpWrite:
		var sp probes.Spans
		if err := op.ResolveInto(func(string) int64 { return unbounded }, &sp); err != nil {
			return []fpWrite{{}}
		}
		ws := make([]fpWrite, sp.W)
		for i, s := range sp.Span[:sp.W] {
			ws[i] = fpWrite{s.Buffer, s.Off, s.End()}
		}
		return ws
	case probes.OpRead, probes.OpRecord, probes.OpWait, probes.OpSync, probes.OpSyncDevice, probes.OpQuery,
		probes.OpSyncEvent, probes.OpAlloc, probes.OpFree, probes.OpGrow, probes.OpExchangeMode, probes.OpDestroy:
		return nil
	}
	return []fpWrite{{}}
}

// unbounded is the buffer size writesOf resolves ops against: past any buffer's end, and a
// multiple of 4 as an axpy's must be.
const unbounded = 1 << 60

// noteWrites marks what ops may write (writesOf) in the oracle's fingerprints.
func (in *instance) noteWrites(ops []*probes.Op) {
	if in.fps == nil || in.knobs.ForgetWrites {
		return
	}
	for _, op := range ops {
		for _, w := range writesOf(op) {
			in.fps.mark(w)
		}
	}
}

// noteLaunch marks what a launch of capture's graph may write: each op of the capture that the
// probe means to replay (the oracle's graph holds no other).
func (in *instance) noteLaunch(capture string) {
	if in.fps == nil || in.knobs.ForgetWrites {
		return
	}
	ws, ok := in.fps.writes[capture]
	if !ok {
		if c := in.p.Capture(capture); c != nil {
			for _, op := range c.Ops {
				if op.Replays() {
					ws = append(ws, writesOf(op)...)
				}
			}
		}
		in.fps.writes[capture] = ws
	}
	for _, w := range ws {
		in.fps.mark(w)
	}
}

// mark marks the chunks w may write dirty.
func (f *fingerprints) mark(w fpWrite) {
	if w.buffer == "" {
		for _, b := range f.bufs {
			b.dirtyFrom(0, -1)
		}
		return
	}
	if b := f.bufs[w.buffer]; b != nil {
		b.dirtyFrom(w.off, w.end)
	}
}

// dirtyFrom marks the chunks of [off, end) dirty (end -1: to the buffer's end).
func (b *fpBuffer) dirtyFrom(off, end int64) {
	n := int64(len(b.data))
	if end < 0 || end > n {
		end = n
	}
	off = max(off, 0)
	if off >= end {
		return
	}
	for c := off / fingerprint.ChunkBytes; c <= (end-1)/fingerprint.ChunkBytes; c++ {
		b.dirty[c] = true
	}
	b.any = true
}

// oracleFingerprints returns the oracle's fingerprints of buffer name, whose bytes are want now:
// those kept, with the dirty chunks recomputed, or all of them for a buffer new to them or whose
// bytes the oracle replaced. With knobs.FingerprintAudit every chunk is recomputed and compared
// with what was kept.
func (in *instance) oracleFingerprints(name string, want []byte) (*fpBuffer, error) {
	if in.fps == nil {
		in.fps = &fingerprints{bufs: map[string]*fpBuffer{}, writes: map[string][]fpWrite{}}
	}
	b := in.fps.bufs[name]
	chunks := fingerprint.Chunks(int64(len(want)))
	if b == nil || len(b.data) != len(want) || unsafe.SliceData(b.data) != unsafe.SliceData(want) {
		b = &fpBuffer{data: want, host: make([]uint64, chunks), dirty: make([]bool, chunks)}
		in.fps.bufs[name] = b
		fingerprint.Of(want, nil, b.host)
	} else if b.any {
		var which []int
		for c, d := range b.dirty {
			if d {
				which = append(which, c)
				b.dirty[c] = false
			}
		}
		fingerprint.Of(want, which, b.host)
	}
	b.any, b.round = false, in.fps.round
	if in.knobs.FingerprintAudit {
		fresh := fingerprint.All(want)
		for c := range fresh {
			if fresh[c] != b.host[c] {
				return nil, failf(ErrHarness, nil, "verify: the oracle's fingerprint of chunk %d of buffer %q was kept, but the oracle changed the chunk", c, name)
			}
		}
	}
	return b, nil
}

// forgetUnseen drops the fingerprints of buffers the verification that ends did not see (freed,
// or not checked): they would keep the oracle's replaced bytes alive.
func (f *fingerprints) forgetUnseen() {
	if f == nil {
		return
	}
	for name, b := range f.bufs {
		if b.round != f.round {
			delete(f.bufs, name)
		}
	}
	f.round++
}

// byFingerprints reports whether device buffer a holds want, by fingerprints: the device's against
// the oracle's, and the bytes of each chunk whose fingerprints differ read back and compared. With
// whole, the first corrupted round's, it returns the device's bytes of a differing buffer as a read
// of it would: want with every differing chunk read back over it (the others match).
func (in *instance) byFingerprints(name string, a *allocation, want []byte, whole bool) (equal bool, got []byte, err error) {
	b, err := in.oracleFingerprints(name, want)
	if err != nil {
		return false, nil, err
	}
	chunks := len(b.host)
	if chunks == 0 {
		return true, nil, nil
	}
	if cap(in.fps.dev) < chunks {
		in.fps.dev = make([]uint64, chunks)
	}
	dev := in.fps.dev[:chunks]
	if in.knobs.FingerprintsMatch {
		copy(dev, b.host)
	} else if err := in.cmp.fp.Fingerprints(device.Main, a.ptr, dev); err != nil {
		return false, nil, err
	}
	equal = true
	n := int64(len(want))
	for c := 0; c < chunks; c++ {
		if dev[c] == b.host[c] {
			continue
		}
		// A run of differing chunks is read back in one read: differences either side of a
		// boundary are one range.
		end := c + 1
		for end < chunks && dev[end] != b.host[end] {
			end++
		}
		lo, _ := fingerprint.Bounds(n, c)
		_, hi := fingerprint.Bounds(n, end-1)
		var buf []byte
		if whole {
			if got == nil {
				got = bytes.Clone(want)
			}
			buf = got[lo:hi]
		} else {
			buf = make([]byte, hi-lo)
		}
		if err := in.dev.Read(device.Main, buf, a.ptr.Slice(lo, hi-lo)); err != nil {
			return false, nil, err
		}
		if !bytes.Equal(buf, want[lo:hi]) {
			equal = false
			if !whole {
				return false, nil, nil
			}
		}
		c = end - 1
	}
	if equal {
		return true, nil, nil
	}
	return false, got, nil
}
