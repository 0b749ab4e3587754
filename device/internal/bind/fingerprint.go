package bind

import (
	"slices"
	"unsafe"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/fingerprint"
)

// Fingerprints on the device (device.Fingerprinter): a Driver that can launch the fingerprint
// kernel (device/cuda's PTX; ACL's Driver has none, and keeps verifying by reading back) reduces a
// buffer to one fingerprint per MiB where it lies, the kernel writing them straight into pinned
// host memory of the device's own, so that 8 bytes per MiB cross the link.

// FingerprintDriver is an optional extension of a Driver that computes fingerprints
// (internal/fingerprint) on the device.
type FingerprintDriver interface {
	// Fingerprinting says whether the kernel is loaded, and why not when it is not.
	Fingerprinting() (bool, string)
	// Fingerprint enqueues the kernel on s: the fingerprints of the chunks of [src, src+n) (src
	// 8-byte aligned) into out, pinned host memory of chunks uint64s.
	Fingerprint(s unsafe.Pointer, src uint64, n int64, out unsafe.Pointer, chunks int) int
}

// fpScratch is what Fingerprints keeps between calls: its stream and pinned output, made at the
// first call and released when the device closes. None: the driver refused one of them, and
// Fingerprints reads back instead.
type fpScratch struct {
	stream unsafe.Pointer
	out    unsafe.Pointer
	chunks int // out's capacity
	none   bool
}

// unwritten is what each output slot holds before the kernel runs: a slot still holding it after
// the kernel is taken for one the kernel did not write (a real fingerprint equal to it, a chance of
// 2^-64, only costs a read back).
const unwritten = 0x5265706c61794368 // "ReplayCh"

var _ device.Fingerprinter = (*Device)(nil)

// fingerprinter is the device's fingerprint driver when its kernel is loaded, nil otherwise.
func (d *Device) fingerprinter() FingerprintDriver {
	if fd, ok := d.drv.(FingerprintDriver); ok {
		if loaded, _ := fd.Fingerprinting(); loaded {
			return fd
		}
	}
	return nil
}

// Fingerprints implements device.Fingerprinter by the driver's kernel. While a capture is in
// progress a Read is subject to the capture rules, so Fingerprints then makes that very Read and
// computes the fingerprints on the host, as it does where the kernel cannot run (no pinned memory,
// an unaligned source, a slot the kernel left unwritten); the engine verifies only between rounds,
// where no capture is open.
func (d *Device) Fingerprints(t device.Thread, src device.Ptr, out []uint64) error {
	return d.call(t, "Fingerprints", func() error {
		if want := fingerprint.Chunks(src.Bytes); len(out) != want {
			return d.codes.Invalid("Fingerprints", "%d fingerprints for source %v: it has %d chunks", len(out), src, want)
		}
		if _, err := d.checkRange("Fingerprints", "source", src, false); err != nil {
			return err
		}
		fd := d.fingerprinter()
		if fd == nil || len(d.captures) > 0 || src.Addr%8 != 0 {
			return d.fingerprintsByReading(src, out)
		}
		fs := d.fingerprintScratch(len(out))
		if fs.none {
			return d.fingerprintsByReading(src, out)
		}
		got := unsafe.Slice((*uint64)(fs.out), len(out))
		for i := range got {
			got[i] = unwritten
		}
		if code := fd.Fingerprint(fs.stream, src.Addr, src.Bytes, fs.out, len(out)); code != 0 {
			return d.failed("Fingerprints", code)
		}
		if code := d.drv.SyncStream(fs.stream); code != 0 {
			return d.failed("Fingerprints", code)
		}
		copy(out, got)
		if slices.Contains(out, unwritten) {
			return d.fingerprintsByReading(src, out)
		}
		return nil
	})
}

// fingerprintsByReading reads src back with a synchronous Read and computes its fingerprints here.
func (d *Device) fingerprintsByReading(src device.Ptr, out []uint64) error {
	got := make([]byte, src.Bytes)
	if code := d.drv.Read(got, src.Addr); code != 0 {
		return d.failed("Fingerprints", code)
	}
	fingerprint.Of(got, nil, out)
	return nil
}

// fingerprintScratch returns the device's scratch with room for chunks fingerprints, made or grown
// now (under d.mu, on a worker).
func (d *Device) fingerprintScratch(chunks int) *fpScratch {
	fs := d.fps
	if fs == nil {
		fs = &fpScratch{none: true}
		d.fps = fs
		s, code := d.drv.CreateStream(false)
		if code != 0 {
			return fs
		}
		fs.stream, fs.none = s, false
	}
	if fs.none || fs.chunks >= chunks {
		return fs
	}
	if fs.out != nil {
		d.drv.FreeHost(fs.out)
		fs.out, fs.chunks = nil, 0
	}
	size := max(512, chunks) // 4 KiB at least: up to 512 MiB verified without growing
	p, code := d.drv.MallocHost(int64(size) * 8)
	if code != 0 {
		fs.none = true
		return fs
	}
	fs.out, fs.chunks = p, size
	return fs
}

// releaseFingerprints frees what fingerprintScratch made; note reports a failure.
func (d *Device) releaseFingerprints(note func(op string, code int)) {
	fs := d.fps
	d.fps = nil
	if fs == nil {
		return
	}
	if fs.out != nil {
		note("freeing the fingerprints' pinned memory", d.drv.FreeHost(fs.out))
	}
	if fs.stream != nil {
		note("destroying the fingerprints' stream", d.drv.DestroyStream(fs.stream))
	}
}
