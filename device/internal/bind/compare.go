package bind

import (
	"bytes"
	"runtime"
	"sync"
	"unsafe"

	"github.com/replaycheck/replaycheck/device"
)

// Verification at the speed of the link. A synchronous Read into the program's own (pageable)
// memory makes the driver stage every byte through pinned memory of its own and copy it again on
// the CPU; the engine then compares. Equal instead copies the buffer a chunk at a time into two
// pinned chunks of the device's own, asynchronously on a stream of its own, and compares each
// chunk where it landed while the next one is in flight: one DMA and one comparison per byte, no
// staging copy. On an H200 this verifies at 1.7-2.5x the throughput of the plain read
// (docs/performance.md, BenchmarkVerifyReadBack256MiB).

// compareChunk is the bytes of one pinned chunk, and compareWorkers the most goroutines that
// compare one (variables so that a benchmark can try other shapes: SetCompareShape).
// Measured on an H200's 16-CPU host (device/cuda BenchmarkEqualShapes, chunks of 4 to 32 MiB by
// 4 to 16 goroutines): 16 MiB by 16 compared at 30-31 GB/s, 8 MiB by 8 at 22-24.
// Two 16 MiB chunks of pinned memory per device.
var (
	compareChunk   int64 = 16 << 20
	compareWorkers       = 16
)

// SetCompareShape sets Equal's comparison goroutines, and its chunk for devices whose first Equal
// comes after it, until restore; for benchmarks.
func SetCompareShape(chunk int64, workers int) (restore func()) {
	oc, ow := compareChunk, compareWorkers
	compareChunk, compareWorkers = chunk, workers
	return func() { compareChunk, compareWorkers = oc, ow }
}

// readback is what Equal keeps between calls: its stream and two pinned chunks, made at the first
// call and released by Close. None: the driver refused one of them, and Equal reads back through
// the synchronous Read instead.
type readback struct {
	stream unsafe.Pointer
	chunks [2]unsafe.Pointer
	size   int64
	none   bool
}

var _ device.Comparer = (*Device)(nil)

// Equal implements device.Comparer: whether src holds want, as a synchronous Read on t would
// see it. While a capture is in progress a Read is subject to the capture rules (CUDA refuses a
// synchronous copy that would join a capturing stream), so Equal then makes that very Read; the
// engine compares only between rounds, where no capture is open.
func (d *Device) Equal(t device.Thread, src device.Ptr, want []byte) (bool, error) {
	var eq bool
	err := d.call(t, "Equal", func() error {
		if int64(len(want)) != src.Bytes {
			return d.codes.Invalid("Equal", "%d host bytes for source %v: the lengths must match", len(want), src)
		}
		if _, err := d.checkRange("Equal", "source", src, false); err != nil {
			return err
		}
		rb := d.readbackChunks()
		if len(d.captures) > 0 || rb.none {
			got := make([]byte, len(want))
			if code := d.drv.Read(got, src.Addr); code != 0 {
				return d.failed("Equal", code)
			}
			eq = equalBytes(got, want)
			return nil
		}
		var err error
		eq, err = d.equalPinned(rb, src, want)
		return err
	})
	return eq, err
}

// equalPinned copies src chunk by chunk into rb's pinned chunks, comparing chunk i while chunk
// i+1 is copied. A difference stops it, after the copy in flight has landed.
func (d *Device) equalPinned(rb *readback, src device.Ptr, want []byte) (bool, error) {
	n := src.Bytes
	issue := func(i int, off int64) error {
		m := min(rb.size, n-off)
		if code := d.drv.Memcpy(rb.stream, CopyD2H, uint64(uintptr(rb.chunks[i])), src.Addr+uint64(off), m); code != 0 {
			return d.failed("Equal", code)
		}
		return nil
	}
	if err := issue(0, 0); err != nil {
		return false, err
	}
	for off, i := int64(0), 0; off < n; off, i = off+rb.size, 1-i {
		if code := d.drv.SyncStream(rb.stream); code != 0 {
			return false, d.failed("Equal", code)
		}
		if off+rb.size < n {
			if err := issue(1-i, off+rb.size); err != nil {
				return false, err
			}
		}
		m := min(rb.size, n-off)
		if !equalBytes(unsafe.Slice((*byte)(rb.chunks[i]), m), want[off:off+m]) {
			if code := d.drv.SyncStream(rb.stream); code != 0 {
				return false, d.failed("Equal", code)
			}
			return false, nil
		}
	}
	return true, nil
}

// readbackChunks returns the device's readback, made at the first call (under d.mu, on a worker).
func (d *Device) readbackChunks() *readback {
	if d.readback != nil {
		return d.readback
	}
	rb := &readback{size: compareChunk, none: true}
	d.readback = rb
	s, code := d.drv.CreateStream(false)
	if code != 0 {
		return rb
	}
	rb.stream = s
	for i := range rb.chunks {
		if rb.chunks[i], code = d.drv.MallocHost(rb.size); code != 0 {
			rb.chunks[i] = nil
			return rb
		}
	}
	rb.none = false
	return rb
}

// releaseReadback frees what readbackChunks made; note reports a failure.
func (d *Device) releaseReadback(note func(op string, code int)) {
	rb := d.readback
	d.readback = nil
	if rb == nil {
		return
	}
	for _, c := range rb.chunks {
		if c != nil {
			note("freeing the verification's pinned chunk", d.drv.FreeHost(c))
		}
	}
	if rb.stream != nil {
		note("destroying the verification's stream", d.drv.DestroyStream(rb.stream))
	}
}

// equalBytes is bytes.Equal over several goroutines for large slices: one core's comparison is
// slower than the link.
func equalBytes(a, b []byte) bool {
	const piece = 1 << 20
	k := min(runtime.GOMAXPROCS(0), len(a)/piece, compareWorkers)
	if k < 2 || len(a) != len(b) {
		return bytes.Equal(a, b)
	}
	per := (len(a) + k - 1) / k
	results := make([]bool, k)
	var wg sync.WaitGroup
	for j := range k {
		lo, hi := j*per, min((j+1)*per, len(a))
		wg.Go(func() { results[j] = bytes.Equal(a[lo:hi], b[lo:hi]) })
	}
	wg.Wait()
	for _, r := range results {
		if !r {
			return false
		}
	}
	return true
}
