package sim

import (
	"runtime"
	"sync"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/fingerprint"
)

var _ device.Fingerprinter = (*Device)(nil)

// Fingerprints computes the fingerprints of src's chunks against the device's pages (an absent
// page holds zeros), as device/cuda's kernel computes them on a GPU: a Read as the rules see it,
// without the copy. A device states it (Extensions.Fingerprint) only when opened with
// Options.Fingerprints: the simulator's memory is the host's, so comparing it in place (Equal)
// costs less, and the option is how tests run the engine's fingerprint path without cgo.
func (d *Device) Fingerprints(t device.Thread, src device.Ptr, out []uint64) error {
	if w := d.away(t); w != nil {
		_, err := handOff(d, w, "Read", func() (struct{}, error) { return struct{}{}, d.Fingerprints(t, src, out) })
		return err
	}
	return d.call(t, "Read", func() error {
		if want := fingerprint.Chunks(src.Bytes); len(out) != want {
			return d.fail("Read", device.ClassInvalidValue, "%d fingerprints for source %v: it has %d chunks", len(out), src, want)
		}
		if _, err := d.checkRange("Read", "source", src, false); err != nil {
			return err
		}
		if err := d.enforce(&call{op: "Read", thread: t}); err != nil {
			return err
		}
		d.mem.fingerprints(src.Addr, src.Bytes, out)
		return nil
	})
}

// fingerprints computes the fingerprints of [addr, addr+n), one chunk at a time gathered from the
// pages into a scratch chunk, on up to GOMAXPROCS goroutines when there are several chunks. The
// caller holds the device lock, so no page changes meanwhile.
func (m *memory) fingerprints(addr uint64, n int64, out []uint64) {
	chunks := len(out)
	work := func(lo, hi int) {
		scratch := make([]byte, fingerprint.ChunkBytes)
		for c := lo; c < hi; c++ {
			from, to := fingerprint.Bounds(n, c)
			b := scratch[:to-from]
			m.read(b, addr+uint64(from))
			out[c] = fingerprint.Sum(b, uint64(from/8))
		}
	}
	workers := min(runtime.GOMAXPROCS(0), chunks/4)
	if workers < 2 {
		work(0, chunks)
		return
	}
	per := (chunks + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < chunks; lo += per {
		wg.Go(func() { work(lo, min(lo+per, chunks)) })
	}
	wg.Wait()
}
