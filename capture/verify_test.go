package capture_test

import (
	"fmt"
	"os"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/probes"
)

// Verification proven where it happens: every way the engine compares a buffer with the oracle
// must see a single byte that differs, wherever it lies, and the result must name that byte. The
// difference is made on the device, after each round's replay, by a wrapper that flips one byte of
// the buffer behind the runtime's back: the oracle is right, so only the comparison can find it.
//
// The ways: (a) in place on the simulator (device.Comparer), (b) read back in chunks from the
// instance's goroutine (a device whose Comparer and ThreadRunner are hidden), (c) read back in
// chunks inside the engine's session on the device's Main thread (a device whose Comparer alone is
// hidden: the comparison runs beside the thread), (d) the bindings' comparer over the fake CUDA
// driver library (cgo and a C compiler; skipped without them). The read-back chunk is made 4 KiB
// (capture.Tune), so chunk boundaries fall inside the buffer, and a byte either side of one is
// among the places tried.
const (
	verifyChunk = 4096
	verifySize  = 5*verifyChunk + 300 // five whole chunks and a partial one
	verifyValue = 0x5A                // what the capture's fill writes, and the oracle holds
)

var verifyProbe = fmt.Sprintf(`version: replaycheck/v1
set: verify
probes:
  - name: flipped
    hazard: none
    replays: 2
    buffers:
      a: {bytes: %d, init: zero}
    streams: [main]
    capture:
      stream: main
      ops:
        - fill: {dst: a, value: %d}
    expect: {guarded: exact, unguarded: exact}
`, verifySize, verifyValue)

// flipAfterReplay flips the byte at `at` of the buffer of verifySize bytes once the device has
// finished a replay (the first SyncDevice after a Launch that took: the engine's verify sync), on
// the device it wraps, where the runtime under test does not see it. It passes every other call
// on, and passes the wrapped device's abilities on (Extensions). It counts the reads of
// the buffer a read-back chunk long: the evidence of which way the engine compared.
type flipAfterReplay struct {
	device.Device
	at       int64
	buf      device.Ptr
	launched bool
	flips    int
	chunked  int // reads of one read-back chunk of the buffer
}

func (f *flipAfterReplay) Extensions() device.Extensions { return passOn(f, f.Device) }

func (f *flipAfterReplay) Malloc(t device.Thread, n int64) (device.Ptr, error) {
	p, err := f.Device.Malloc(t, n)
	if err == nil && n == verifySize {
		f.buf = p
	}
	return p, err
}

func (f *flipAfterReplay) Launch(t device.Thread, g device.Graph, s device.Stream) error {
	err := f.Device.Launch(t, g, s)
	f.launched = f.launched || err == nil
	return err
}

func (f *flipAfterReplay) SyncDevice(t device.Thread) error {
	if err := f.Device.SyncDevice(t); err != nil || !f.launched {
		return err
	}
	f.launched = false
	b := make([]byte, 1)
	p := f.buf.Slice(f.at, 1)
	if err := f.Device.Read(t, b, p); err != nil {
		return err
	}
	b[0] ^= 0xFF
	f.flips++
	return f.Device.Write(t, p, b)
}

func (f *flipAfterReplay) Read(t device.Thread, dst []byte, src device.Ptr) error {
	if f.buf.Bytes > 0 && src.Bytes == verifyChunk && src.Addr >= f.buf.Addr && src.Addr < f.buf.Addr+uint64(f.buf.Bytes) {
		f.chunked++
	}
	return f.Device.Read(t, dst, src)
}

// onThreadNoComparer hides the Comparer of the device it wraps (it states no Compare) and passes
// its ThreadRunner on, handing the session a view of itself (device.ThreadRunner's rule for
// wrappers); sessions counts the sessions run.
type onThreadNoComparer struct {
	device.Device
	tr       device.ThreadRunner
	sessions *atomic.Int32
}

func (w onThreadNoComparer) Extensions() device.Extensions {
	return device.Extensions{Of: w, Threads: w}
}

func (w onThreadNoComparer) OnThread(t device.Thread, f func(device.Device)) error {
	w.sessions.Add(1)
	return w.tr.OnThread(t, func(device.Device) { f(w) })
}

type verifyWay int

const (
	inPlace verifyWay = iota
	readBack
	readBackOnThread
	fakeComparer
)

var _ = Describe("verification, every way a buffer is compared", Ordered, ContinueOnFailure, func() {
	// The fake CUDA driver library, built once for the table; unavailable says why it cannot be.
	var fakeLib, unavailable string
	BeforeAll(func() {
		if unavailable = backends.Unavailable(fake.CUDA.String()); unavailable != "" {
			return
		}
		dir, err := os.MkdirTemp("", "verify-fake-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(os.RemoveAll, dir)
		fakeLib, err = fake.Build(dir, fake.CUDA, fake.Variant{})
		Expect(err).NotTo(HaveOccurred())
	})
	chunked := capture.Tune(capture.Options{Runtime: builtin}, func(k *capture.Knobs) { k.ReadChunk = verifyChunk })

	finds := func(ctx SpecContext, way verifyWay, at int64) {
		var inner device.Device
		var sessions atomic.Int32
		switch way {
		case inPlace, readBack, readBackOnThread:
			dev := openSim("cuda")
			DeferCleanup(dev.Close)
			inner = dev
			if way == readBack {
				inner = opaque{dev}
			}
			if way == readBackOnThread {
				tr := device.ExtensionsOf(dev).Threads
				Expect(tr).NotTo(BeNil(), "the simulator runs sessions on a thread")
				inner = onThreadNoComparer{Device: dev, tr: tr, sessions: &sessions}
			}
		case fakeComparer:
			if unavailable != "" {
				Skip(unavailable)
			}
			b, err := backends.Open(fake.CUDA.String(), backends.Config{Library: fakeLib})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(b.Close)
			dev, err := b.Open(ctx, 0)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(dev.Close)
			Expect(device.ExtensionsOf(dev).Compare).NotTo(BeNil(), "the bindings compare in place")
			inner = dev
		}
		flip := &flipAfterReplay{Device: inner, at: at}
		res := capture.Run(ctx, flip, probes.Instance{Probe: parseProbe(verifyProbe), Mode: device.Global, Replays: 2}, chunked)

		Expect(flip.flips).To(Equal(2), "a byte flipped after each round")
		Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
		Expect(res.FirstCorrupted).To(Equal(1))
		Expect(res.CorruptedRounds).To(Equal(2), "the round's fill restores the byte, and it is flipped again")
		Expect(res.Mismatches).To(Equal([]capture.Mismatch{{
			Round: 1, Buffer: "a", Offset: at, Length: 1,
			Want: capture.Bytes{verifyValue}, Got: capture.Bytes{verifyValue ^ 0xFF},
		}}))
		Expect(res.Differences).To(Equal([]capture.Difference{{Round: 1, Buffer: "a", Ranges: 1, Bytes: 1, BufferBytes: verifySize}}))
		// Which way compared: only a read-back reads the buffer a chunk at a time.
		switch way {
		case inPlace, fakeComparer:
			Expect(flip.chunked).To(BeZero(), "compared in place, not read back")
		case readBack, readBackOnThread:
			Expect(flip.chunked).To(BeNumerically(">=", 2), "read back chunk by chunk")
		}
		if way == readBackOnThread {
			Expect(sessions.Load()).To(BeNumerically(">", 0), "the instance ran as a session on the device's thread")
		}
	}
	named := func(way verifyWay, at int64) string {
		return fmt.Sprintf("%s, difference at byte %d of %d", [...]string{
			"in place on the simulator", "read back in chunks", "read back in chunks on the device's thread",
			"the fake library's comparer"}[way], at, verifySize)
	}
	DescribeTable("finds one differing byte and names it", append([]any{finds, named}, verifyEntries()...)...)
})

// verifyEntries are every way of comparing by every place of the difference: the first byte, the
// middle, the last, and one byte either side of a read-back chunk boundary.
func verifyEntries() []any {
	var out []any
	for _, way := range []verifyWay{inPlace, readBack, readBackOnThread, fakeComparer} {
		for _, at := range []int64{0, verifySize / 2, verifySize - 1, 2*verifyChunk - 1, 2 * verifyChunk} {
			out = append(out, Entry(nil, way, at))
		}
	}
	return out
}
