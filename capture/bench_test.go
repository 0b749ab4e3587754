package capture_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/internal/cbuild"
	"github.com/replaycheck/replaycheck/internal/progen"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime/plugin"
	"github.com/replaycheck/replaycheck/runtime/plugin/seed"
)

// Benchmarks of the issue-13 figures: each reports its cost as a ratio ("x-...") against a
// yardstick measured in the same run, so the figure means the same on any machine. They are
// benchmarks, never tests: nothing fails because the machine is slow.

func benchProbe(b *testing.B, text string) *probes.Probe {
	b.Helper()
	// Generated programs may be above a probe file's limits (BenchmarkLoad100kOps in probes
	// measures loading): these benchmarks measure the engine.
	lim := probes.DefaultLimits()
	lim.MaxFileBytes, lim.MaxFileValues = 64<<20, 64<<20
	set, err := probes.Parse("bench.yaml", []byte(text), lim)
	if err != nil {
		b.Fatal(err)
	}
	return set.Probes[0]
}

// simDevice opens a simulated device with profile for a benchmark or a fuzz target, closed when
// tb ends.
func simDevice(tb testing.TB, profile string) device.Device {
	tb.Helper()
	be, err := sim.New(sim.Options{Profile: profile})
	if err != nil {
		tb.Fatal(err)
	}
	dev, err := be.Open(context.Background(), 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { dev.Close() })
	return dev
}

// runExact runs p once in global mode, guards off, and fails the benchmark unless it came out
// exact.
func runExact(b *testing.B, dev device.Device, p *probes.Probe, replays int) *capture.Result {
	return runAsExpected(b, dev, probes.Instance{Probe: p, Mode: device.Global, Replays: replays})
}

// runAsExpected runs the instance once and fails the benchmark unless it came out as its probe
// expects: exact, for every probe a benchmark runs but the re-based one of BenchmarkScaling.
func runAsExpected(b *testing.B, dev device.Device, in probes.Instance) *capture.Result {
	res := capture.Run(context.Background(), dev, in, capture.Options{Runtime: builtin})
	if res.Outcome != in.Expected() {
		b.Fatalf("%s: %s, want %s (%s)", in.ID(), res.Outcome, in.Expected(), res.Reason)
	}
	return res
}

func timeIt(n int, f func()) time.Duration {
	start := time.Now()
	for range n {
		f()
	}
	return time.Since(start)
}

// interleaved runs measured and its yardstick once each untimed, then b.N times each, one after
// the other in alternating order (ABBA...), so that a drift in the machine's speed during the run
// (this VM's moves by up to 2x within minutes) and what one leaves for the next to collect weigh on
// both alike, and neither is timed touching memory the process never had. An odd b.N leaves one
// more run of measured after the yardstick than before it: run an even -benchtime (2x, 4x) when
// the figure is to be compared. The benchmark's own timer counts measured only.
func interleaved(b *testing.B, measured, yardstick func()) (took, base time.Duration) {
	b.StopTimer()
	measured()
	yardstick()
	for i := range b.N {
		for k := range 2 {
			if (i+k)%2 == 0 {
				b.StartTimer()
				took += timeIt(1, measured)
				b.StopTimer()
			} else {
				base += timeIt(1, yardstick)
			}
		}
	}
	return took, base
}

func ratio(b *testing.B, took, base time.Duration, unit string) {
	b.ReportMetric(float64(took)/float64(max(base, 1)), unit)
}

const benchHeader = "version: replaycheck/v1\nset: bench\nprobes:\n"

func copyProbe(size int64, replays int) string {
	return benchHeader + fmt.Sprintf(`  - name: copy
    hazard: none
    replays: %d
    buffers:
      src: {bytes: %d, init: fill:0x5A}
      dst: {bytes: %d, init: zero}
    streams: [main]
    capture:
      stream: main
      ops:
        - copy: {dst: dst, src: src}
    check: [dst]
    expect: {guarded: exact, unguarded: exact}
`, replays, size, size)
}

// copyYardstick is the irreducible work of the copy probe in a plain program: both buffers
// initialised on both sides (device and oracle), then per replay the device copy, the oracle's copy
// and one comparison of the checked buffer.
func copyYardstick(size int64, replays int) {
	ds, dd, os_, od := make([]byte, size), make([]byte, size), make([]byte, size), make([]byte, size)
	for _, s := range [][]byte{ds, os_} {
		s[0] = 0x5A
		for j := 1; j < len(s); j *= 2 {
			copy(s[j:], s[:j])
		}
	}
	for range replays {
		copy(dd, ds)
		copy(od, os_)
		if !bytes.Equal(dd, od) {
			panic("differs")
		}
	}
}

// BenchmarkCopyProbe128MiB: the first row (target <= 1.3x).
func BenchmarkCopyProbe128MiB(b *testing.B) {
	const size, replays = 128 << 20, 10
	p := benchProbe(b, copyProbe(size, replays))
	dev := simDevice(b, "cann")
	b.SetBytes(size * replays)
	b.ResetTimer()
	took, base := interleaved(b, func() { runExact(b, dev, p, replays) }, func() { copyYardstick(size, replays) })
	ratio(b, took, base, "x-plain")
}

// twoGraphsProbe: the nodes of progen.Fills split between two graphs on two streams, each filling a
// buffer of its own, launched one after the other on their streams with nothing ordering them:
// with the guards on, each launch is checked against the other graph, still in flight.
func twoGraphsProbe(nodes, replays int) string {
	per := nodes / 2
	var ops [2]strings.Builder
	for g, buf := range []string{"a", "b"} {
		for i := range per {
			fmt.Fprintf(&ops[g], "          - fill: {dst: %s, value: %d, offset: %d, bytes: 64}\n", buf, i%255+1, i*64)
		}
	}
	return benchHeader + fmt.Sprintf(`  - name: two-graphs
    hazard: none
    replays: %d
    buffers:
      a: {bytes: %d, init: zero}
      b: {bytes: %d, init: zero}
    streams: [s1, s2]
    captures:
      - name: ga
        stream: s1
        ops:
%s      - name: gb
        stream: s2
        ops:
%s    replay:
      order:
        - {capture: ga, stream: s1}
        - {capture: gb, stream: s2}
    expect: {guarded: exact, unguarded: exact}
`, replays, per*64, per*64, ops[0].String(), ops[1].String())
}

// buffersProbe: n buffers of 512 bytes allocated by the probe's prepare ops, each filled once by
// a captured op: with the guards on, every allocation and every captured fill is checked against
// the state of every buffer.
func buffersProbe(n, replays int) string {
	var allocs, fills strings.Builder
	for i := range n {
		fmt.Fprintf(&allocs, "      - alloc: {buffer: b%d, bytes: 512}\n", i)
		fmt.Fprintf(&fills, "        - fill: {dst: b%d, value: %d}\n", i, i%255+1)
	}
	return benchHeader + fmt.Sprintf(`  - name: buffers
    hazard: none
    replays: %d
    streams: [main]
    prepare:
%s    capture:
      stream: main
      ops:
%s    expect: {guarded: exact, unguarded: exact}
`, replays, allocs.String(), fills.String())
}

// BenchmarkPluginBuffers: a guarded instance of buffersProbe through the seed reference plugin
// (runtime/plugin/seed, built with $CC or cc; skipped in a binary without cgo), against the same
// instance through the built-in guards, interleaved. The plugin's slot log (ABI 2) spares the
// snapshot before each call a question per buffer, so the cost per buffer stays flat as n grows;
// the ratio is the plugin path's constant: the calls into C and back (the plugin's calls for Main
// are made on the simulator's thread, inside the engine's session, with no hand-off).
func BenchmarkPluginBuffers(b *testing.B) {
	if _, err := exec.LookPath(cbuild.Compiler()[0]); err != nil {
		b.Skip("no C compiler: ", err)
	}
	path, err := seed.Build(b.TempDir(), seed.Reference)
	if err != nil {
		b.Fatal(err)
	}
	pl, err := plugin.Load(path)
	if err != nil {
		b.Skip(err) // a binary without cgo loads no plugin
	}
	defer pl.Close()
	ref := &runtime.UnderTest{Name: pl.Name(), Open: func(dev device.Device, guarded bool) (runtime.Runtime, error) {
		return pl.Open(dev, guarded)
	}}
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("buffers=%d", n), func(b *testing.B) {
			dev := simDevice(b, "cann")
			in := probes.Instance{Probe: benchProbe(b, buffersProbe(n, 3)), Mode: device.Global, Guarded: true, Replays: 3}
			through := func(rt *runtime.UnderTest) func() {
				return func() {
					if res := capture.Run(context.Background(), dev, in, capture.Options{Runtime: rt}); res.Outcome != probes.Exact {
						b.Fatalf("%s: %s (%s)", in.ID(), res.Outcome, res.Reason)
					}
				}
			}
			took, base := interleaved(b, through(ref), through(nil))
			ratio(b, took, base, "x-builtin")
			b.ReportMetric(float64(took.Microseconds())/float64(b.N)/float64(n), "µs/buffer")
		})
	}
}

// capturesProbe: n captures of one fill each, into regions of one buffer, replayed in order every
// round: a round of n launches.
func capturesProbe(n, replays int) string {
	var caps, order strings.Builder
	for i := range n {
		fmt.Fprintf(&caps, "      - name: c%d\n        stream: main\n        ops:\n          - fill: {dst: b, value: %d, offset: %d, bytes: 64}\n", i, i%255+1, i*64)
		if i > 0 {
			order.WriteString(", ")
		}
		fmt.Fprintf(&order, "c%d", i)
	}
	return benchHeader + fmt.Sprintf(`  - name: captures
    hazard: none
    replays: %d
    buffers:
      b: {bytes: %d, init: zero}
    streams: [main]
    captures:
%s    replay:
      order: [%s]
    expect: {guarded: exact, unguarded: exact}
`, replays, n*64, caps.String(), order.String())
}

// rebasedProbe: n buffers of 512 bytes, each filled once by a captured op, then each grown (freed
// and allocated again) and its old memory taken by a bystander: n stale ranges, corrupted
// unguarded.
func rebasedProbe(n, replays int) string {
	var bufs, fills, between strings.Builder
	for i := range n {
		fmt.Fprintf(&bufs, "      b%d: {bytes: 512}\n", i)
		fmt.Fprintf(&fills, "        - fill: {dst: b%d, value: %d}\n", i, i%255+1)
		fmt.Fprintf(&between, "      - grow: {buffer: b%d, bytes: 1024}\n", i)
	}
	for i := range n {
		fmt.Fprintf(&between, "      - alloc: {buffer: by%d, bytes: 512, init: fill:0xEE}\n", i)
	}
	return benchHeader + fmt.Sprintf(`  - name: rebased
    hazard: rebase
    replays: %d
    buffers:
%s    streams: [main]
    capture:
      stream: main
      ops:
%s    between:
%s    expect: {guarded: refused, unguarded: corrupted}
`, replays, bufs.String(), fills.String(), between.String())
}

// fillsYardstick: the same fills on two byte slices (device and oracle) and their comparison.
func fillsYardstick(nodes, replays int) {
	dev, orc := make([]byte, nodes*64), make([]byte, nodes*64)
	for range replays {
		for _, s := range [][]byte{dev, orc} {
			for i := range nodes {
				seg := s[i*64 : i*64+64]
				for k := range seg {
					seg[k] = byte(i%255 + 1)
				}
			}
		}
		if !bytes.Equal(dev, orc) {
			panic("differs")
		}
	}
}

// BenchmarkFills10kx2000: the second row (target <= 1.5x).
func BenchmarkFills10kx2000(b *testing.B) {
	const nodes, replays = 10000, 2000
	p := benchProbe(b, progen.Fills(nodes, replays))
	dev := simDevice(b, "cann")
	b.ResetTimer()
	took, base := interleaved(b, func() { runExact(b, dev, p, replays) }, func() { fillsYardstick(nodes, replays) })
	ratio(b, took, base, "x-plain")
}

// BenchmarkCapture100kOps: capturing a 100,000-op program against replaying it once, both timed by
// the engine in the same instance (target <= 2x). The fills go to the device in batches
// (batches.go).
func BenchmarkCapture100kOps(b *testing.B) {
	benchCapture100k(b, false)
}

// BenchmarkCapture100kOpsGuarded: the same with the reference guards on (kernel mode), which
// check every call and snapshot what a refusal must leave unchanged before each.
func BenchmarkCapture100kOpsGuarded(b *testing.B) {
	benchCapture100k(b, true)
}

// The probe's first instance in the process runs once untimed and is reported on its own
// (x-replay-first): it makes the capture's plan (probes.Plan, kept with the probe for every later
// instance) and meets memory the process never had, which the OS faults in a page at a time.
func benchCapture100k(b *testing.B, guarded bool) {
	const nodes = 100000
	p := benchProbe(b, progen.Fills(nodes, 3))
	dev := simDevice(b, "cann")
	in := probes.Instance{Probe: p, Mode: device.Global, Guarded: guarded, Replays: 3}
	first := runAsExpected(b, dev, in)
	var capt, replay time.Duration
	b.ResetTimer()
	for range b.N {
		res := runAsExpected(b, dev, in)
		capt += res.Timings.Capture
		replay += res.Timings.ReplayMedian
	}
	ratio(b, capt, replay, "x-replay")
	b.ReportMetric(float64(capt)/float64(b.N)/nodes, "ns/captured-op")
	b.ReportMetric(float64(first.Timings.Capture)/float64(max(first.Timings.ReplayMedian, 1)), "x-replay-first")
}

// scattered returns two 256 MiB-ish buffers, equal but for about one byte in a hundred.
func scattered(n int) (want, got []byte) {
	want = make([]byte, n)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	got = bytes.Clone(want)
	for i := rng.IntN(200); i < n; i += rng.IntN(199) + 1 {
		got[i] ^= 0x5A
	}
	return want, got
}

// BenchmarkLocalise256MiB: the engine's localisation of 256 MiB with 1% scattered mismatches
// (every differing range and byte counted, the first MaxMismatches kept) against bytes.Equal of
// the same bytes (target >= 0.5x throughput: the ratio is bytes.Equal's time over the
// localisation's). The localisation scans a buffer this large on every CPU (GOMAXPROCS); -cpu 1
// measures it on one.
func BenchmarkLocalise256MiB(b *testing.B) {
	want, got := scattered(256 << 20)
	b.ReportMetric(float64(benchLocalise(b, want, got)), "ranges")
}

// BenchmarkLocalise256MiBSparse: the same with eight differing bytes spread over the buffer, the
// common case of a replay that wrote a few stale ranges: the localisation then runs at about the
// speed of bytes.Equal, the chunks without a difference costing one comparison each.
func BenchmarkLocalise256MiBSparse(b *testing.B) {
	const n = 256 << 20
	want, _ := scattered(n)
	got := bytes.Clone(want)
	for i := range 8 {
		got[n/8*i+n/16] ^= 0x5A
	}
	if ranges := benchLocalise(b, want, got); ranges != 8 {
		b.Fatalf("%d ranges, want 8", ranges)
	}
}

// benchLocalise times the engine's localisation of got against want, interleaved with bytes.Equal
// of want and a copy, reports the throughput ratio, and returns how many ranges it counted.
func benchLocalise(b *testing.B, want, got []byte) (ranges int) {
	same := bytes.Clone(want)
	b.SetBytes(int64(len(want)))
	b.ResetTimer()
	took, base := interleaved(b, func() { _, ranges, _ = capture.Localise(want, got, capture.MaxMismatches) },
		func() { _ = bytes.Equal(want, same) })
	b.ReportMetric(float64(base)/float64(max(took, 1)), "x-throughput-of-bytes.Equal")
	return ranges
}

// BenchmarkVerify256MiBEqual: the engine's verification of a 256 MiB buffer equal to the oracle,
// in place on the simulator's pages, against bytes.Equal of two host slices (target >= 0.9x). The
// simulator compares a range this large on every CPU (GOMAXPROCS); -cpu 1 measures it on one.
func BenchmarkVerify256MiBEqual(b *testing.B) {
	const n = 256 << 20
	dev := simDevice(b, "cann")
	p, err := dev.Malloc(device.Main, n)
	if err != nil {
		b.Fatal(err)
	}
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i*7 + 1)
	}
	if err := dev.Write(device.Main, p, want); err != nil {
		b.Fatal(err)
	}
	cmp := dev.(device.Comparer)
	same := bytes.Clone(want)
	b.SetBytes(n)
	b.ResetTimer()
	took, base := interleaved(b, func() {
		if eq, err := cmp.Equal(device.Main, p, want); err != nil || !eq {
			b.Fatal("not equal", err)
		}
	}, func() { _ = bytes.Equal(want, same) })
	b.ReportMetric(float64(base)/float64(max(took, 1)), "x-throughput-of-bytes.Equal")
}

// BenchmarkVerifyReadBack256MiB: verification of 256 MiB on a backend without the simulator's
// in-place comparison, as on a real device, against one plain device-to-host read of the same
// bytes into the program's memory (the ratio is the plain read's time over the measured one's).
// Sub-benchmarks:
//   - comparer: the backend's device.Comparer, which the engine uses when the device has one (the
//     CUDA and ACL bindings: asynchronous copies into two pinned chunks, each compared while the
//     next is in flight);
//   - read-back/in-session and read-back/from-goroutine: the engine's fallback, reads in 4 MiB
//     chunks through two reused host chunks, the read of chunk i+1 overlapping the comparison of
//     chunk i, inside the engine's session on the device's Main thread and from a goroutine;
//   - pinned-copy: not a verification but the link's yardstick, one asynchronous copy of the 256
//     MiB into pinned host memory, synchronised.
//
// The device is the fake CUDA driver library (device/fake, built with cc; the benchmark is
// skipped without cgo), whose device memory is host memory, or with REPLAYCHECK_HARDWARE=cuda
// (or acl) the real driver on this host (make device-check).
func BenchmarkVerifyReadBack256MiB(b *testing.B) {
	const n = 256 << 20
	dev := readBackDevice(b)
	p, want, pinnedCopy := benchBuffer(b, dev, n)
	verify := func(equal func(device.Device, device.Ptr, []byte) (bool, error)) func() error {
		return func() error {
			eq, err := equal(dev, p, want)
			if err == nil && !eq {
				err = errors.New("not equal")
			}
			return err
		}
	}
	type way struct {
		name string
		run  func() error
	}
	var ways []way
	if cmp, ok := dev.(device.Comparer); ok {
		ways = append(ways, way{"comparer", verify(func(_ device.Device, p device.Ptr, want []byte) (bool, error) {
			return cmp.Equal(device.Main, p, want)
		})})
	}
	ways = append(ways,
		way{"read-back/in-session", verify(capture.Options{Runtime: builtin}.EqualByReadingOnThread)},
		way{"read-back/from-goroutine", verify(capture.Options{Runtime: builtin}.EqualByReading)},
		way{"pinned-copy", pinnedCopy},
	)
	host := make([]byte, n)
	for _, way := range ways {
		b.Run(way.name, func(b *testing.B) {
			b.SetBytes(n)
			took, base := interleaved(b, func() {
				if err := way.run(); err != nil {
					b.Fatal(err)
				}
			}, func() {
				if err := dev.Read(device.Main, host, p); err != nil {
					b.Fatal(err)
				}
			})
			b.ReportMetric(float64(base)/float64(max(took, 1)), "x-throughput-of-plain-read")
			b.ReportMetric(float64(n)*float64(b.N)/took.Seconds()/1e9, "GB/s")
			b.ReportMetric(float64(n)*float64(b.N)/base.Seconds()/1e9, "read-GB/s")
		})
	}
}

// benchBuffer allocates an n-byte device buffer on dev and writes a pattern into it (want), and
// returns with them a copy of the buffer into pinned host memory on a stream of its own,
// synchronised: the link's yardstick.
func benchBuffer(b *testing.B, dev device.Device, n int64) (p device.Ptr, want []byte, pinnedCopy func() error) {
	p, err := dev.Malloc(device.Main, n)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = dev.Free(device.Main, p) })
	want = make([]byte, n)
	for i := range want {
		want[i] = byte(i*7 + 1)
	}
	if err := dev.Write(device.Main, p, want); err != nil {
		b.Fatal(err)
	}
	pinned, err := dev.AllocHost(device.Main, n, device.Pinned)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = dev.FreeHost(device.Main, pinned) })
	s, err := dev.CreateStream(device.Main, device.Blocking)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = dev.DestroyStream(device.Main, s) })
	return p, want, func() error {
		if err := dev.Copy(device.Main, s, pinned, p); err != nil {
			return err
		}
		return dev.SyncStream(device.Main, s)
	}
}

// readBackDevice opens device 0 of the backend REPLAYCHECK_HARDWARE names, with its driver library
// found as the CLI finds it, or else of the CUDA binding over the fake driver library; it skips
// the benchmark where this binary has no such backend (CGO_ENABLED=0).
func readBackDevice(b *testing.B) device.Device {
	backend, cfg := os.Getenv("REPLAYCHECK_HARDWARE"), backends.Config{}
	hardware := backend != ""
	if !hardware {
		backend = fake.CUDA.String()
	}
	if why := backends.Unavailable(backend); why != "" {
		b.Skip(why)
	}
	if !hardware {
		path, err := fake.Build(b.TempDir(), fake.CUDA, fake.Variant{})
		if err != nil {
			b.Fatal(err)
		}
		cfg.Library = path
	}
	be, err := backends.Open(backend, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	dev, err := be.Open(context.Background(), 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dev.Close() })
	return dev
}

// TestHelperPeakProcess is not a test: BenchmarkPeakResident64GiB runs the test binary again with
// RC_PEAK set to measure one scenario's peak resident memory in a process of its own.
func TestHelperPeakProcess(t *testing.T) {
	switch os.Getenv("RC_PEAK") {
	case "":
		t.Skip("a helper process of BenchmarkPeakResident64GiB")
	case "plain":
		// The yardstick: the device's and the oracle's bytes as two plain slices, touched.
		a, o := make([]byte, 256<<20), make([]byte, 256<<20)
		for i := 0; i < len(a); i += 4096 {
			a[i], o[i] = 1, 1
		}
		fmt.Println(bytes.Equal(a, o))
		printPeak()
	case "sim":
		be, err := sim.New(sim.Options{Profile: "cann", Memory: 64 << 30})
		if err != nil {
			t.Fatal(err)
		}
		dev, err := be.Open(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		set, err := probes.Parse("bench.yaml", []byte(benchHeader+`  - name: touched
    hazard: none
    buffers:
      b: {bytes: 256MiB, init: zero}
    streams: [main]
    capture:
      ops:
        - fill: {dst: b, value: 0x5A}
    expect: {guarded: exact, unguarded: exact}
`), probes.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		res := capture.Run(context.Background(), dev, probes.Instance{Probe: set.Probes[0], Mode: device.Global, Replays: 3}, capture.Options{Runtime: builtin})
		if res.Outcome != probes.Exact {
			t.Fatalf("%s: %s", res.Outcome, res.Reason)
		}
		printPeak()
	}
}

// printPeak prints the process's own peak resident memory (VmHWM, KiB): rusage of a child would
// count the parent's pages at the fork.
func printPeak() {
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			fmt.Println("PEAK", strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, "VmHWM:"), "kB")))
		}
	}
}

func peakRSS(b *testing.B, scenario string) int64 {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperPeakProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RC_PEAK="+scenario)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("%s: %v\n%s", scenario, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if kib, ok := strings.CutPrefix(line, "PEAK "); ok {
			n, err := strconv.ParseInt(kib, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n << 10
		}
	}
	b.Fatalf("%s: no peak in\n%s", scenario, out)
	return 0
}

// BenchmarkPeakResident64GiB: the peak resident memory of a 64 GiB simulated device with one
// 256 MiB buffer touched, filled and verified over 3 replays, against the device's plus the
// oracle's bytes (512 MiB; target <= 1.2x) and against a plain process touching them.
func BenchmarkPeakResident64GiB(b *testing.B) {
	var peak, plain int64
	for range b.N {
		peak = max(peak, peakRSS(b, "sim"))
		plain = max(plain, peakRSS(b, "plain"))
	}
	b.ReportMetric(float64(peak)/float64(512<<20), "x-stake-bytes")
	b.ReportMetric(float64(peak)/float64(plain), "x-plain-process")
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
}

// BenchmarkScaling: the copy probe's cost per byte and per replay, the fill probe's per node (also
// split between two graphs replayed at once with the guards on), and with the guards on the cost
// per buffer of a probe over many and per capture of a probe with many replayed each round, as
// sizes grow: each sub-benchmark reports ns per unit, which stays flat when cost is linear.
func BenchmarkScaling(b *testing.B) {
	for _, mib := range []int64{1, 8, 64, 512} {
		b.Run(fmt.Sprintf("buffer=%dMiB", mib), func(b *testing.B) {
			p := benchProbe(b, copyProbe(mib<<20, 10))
			dev := simDevice(b, "cann")
			b.SetBytes(mib << 20 * 10)
			b.ResetTimer()
			took := timeIt(b.N, func() { runExact(b, dev, p, 10) })
			b.ReportMetric(float64(took)/float64(b.N)/float64(mib<<20), "ns/byte")
		})
	}
	scaleFamily(b, "replays", "ns/replay", []int{10, 100, 1000, 10000}, false,
		func(n int) (string, int) { return copyProbe(64<<10, n), n })
	scaleFamily(b, "nodes", "ns/node", []int{10, 1000, 10000, 100000}, false,
		func(n int) (string, int) { return progen.Fills(n, 10), 10 })
	// With the guards on, every call is checked against the state of every buffer: linear in
	// their number only while that state is not read in full before each call.
	scaleFamily(b, "guarded-buffers", "ns/buffer", []int{10, 100, 1000, 10000}, true,
		func(n int) (string, int) { return buffersProbe(n, 10), 10 })
	// With the guards on and n graphs launched per round, each launch is checked against the
	// flights in the air and its capture's ledger entries: linear only while neither is a scan of
	// all of them.
	scaleFamily(b, "guarded-captures", "ns/capture", []int{10, 100, 1000, 5000}, true,
		func(n int) (string, int) { return capturesProbe(n, 10), 10 })
	// Every buffer of a capture re-based and its old memory taken by a bystander: each stale range
	// is noted with the live buffers that hold it now, linear only while the live buffers are not
	// listed again for each.
	scaleFamily(b, "rebased-buffers", "ns/buffer", []int{10, 100, 1000, 5000}, false,
		func(n int) (string, int) { return rebasedProbe(n, 10), 10 })
	// With the guards on and two graphs in flight at once, every launch is checked against the
	// other graph's ranges: linear only while that check is.
	scaleFamily(b, "guarded-two-graphs-nodes", "ns/node", []int{10, 1000, 10000, 100000}, true,
		func(n int) (string, int) { return twoGraphsProbe(n, 10), 10 })
}

// scaleFamily runs one family of BenchmarkScaling: for each size n, a sub-benchmark name=n that
// runs the probe probe(n) returns, with the replays it returns, fails unless each instance comes
// out as the probe expects, and reports the time per unit.
func scaleFamily(b *testing.B, name, unit string, sizes []int, guarded bool, probe func(n int) (text string, replays int)) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("%s=%d", name, n), func(b *testing.B) {
			text, replays := probe(n)
			p := benchProbe(b, text)
			dev := simDevice(b, "cann")
			in := probes.Instance{Probe: p, Mode: device.Global, Guarded: guarded, Replays: replays}
			b.ResetTimer()
			took := timeIt(b.N, func() { runAsExpected(b, dev, in) })
			b.ReportMetric(float64(took)/float64(b.N)/float64(n), unit)
		})
	}
}

// BenchmarkRunSimple is one small instance end to end on the simulator, 20 replay rounds: what
// the engine's per-call costs (the watch on every device call among them) add up to.
func BenchmarkRunSimple(b *testing.B) {
	p, dev := benchProbe(b, simple), simDevice(b, "cann")
	b.ResetTimer()
	for b.Loop() {
		runExact(b, dev, p, 20)
	}
}
