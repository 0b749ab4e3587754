package sim_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/internal/chunk"
)

// alternate runs op and base n times each, in blocks of 64 calls, the blocks in the order ABBA
// (op first in one pair, base first in the next), and returns the time each side took: the
// yardstick runs at the same moment as what it measures, and on the thread that makes the calls
// (inside a session, the device's own; in the HandOff variants the calls are handed to it), so a
// drift of the machine weighs on both alike. Timed one after the other, the 64 KiB
// benchmarks' ratios moved by half between processes.
func alternate(n int, op, base func()) (took, yard time.Duration) {
	const block = 64
	run := func(f func(), k int) time.Duration {
		start := time.Now()
		for range k {
			f()
		}
		return time.Since(start)
	}
	for done, i := 0, 0; done < n; i++ {
		k := min(block, n-done)
		if i%2 == 0 {
			took += run(op, k)
			yard += run(base, k)
		} else {
			yard += run(base, k)
			took += run(op, k)
		}
		done += k
	}
	return took, yard
}

// reportPerOp reports took as the benchmark's time per op and throughput of size bytes per op,
// in place of the testing package's, which count the yardstick's calls as well.
func reportPerOp(b *testing.B, took time.Duration, size int64) {
	b.ReportMetric(float64(took)/float64(b.N), "ns/op")
	b.ReportMetric(float64(size)*float64(b.N)/took.Seconds()/1e6, "MB/s")
}

func openBench(b *testing.B) *sim.Device {
	be, err := sim.New(sim.Options{Profile: "cann"})
	if err != nil {
		b.Fatal(err)
	}
	dev, err := be.Open(context.Background(), 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dev.Close() })
	return dev.(*sim.Device)
}

// onThread runs f as the engine runs an instance on the simulator: one session on the device's Main
// worker thread (device.ThreadRunner), every call inside it made there, on the session's view of
// the device, without a hand-off or a check of the thread.
func onThread(b *testing.B, dev *sim.Device, f func(on *sim.Device)) {
	if err := dev.OnThread(device.Main, func(on device.Device) { f(on.(*sim.Device)) }); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDeviceCopy64KiB: one simulated device-to-device copy of 64 KiB (a call on the device's
// locked Main thread, issued there as the engine issues its calls, and its sparse pages), against
// Go's copy of the same bytes.
func BenchmarkDeviceCopy64KiB(b *testing.B) {
	benchCopy64KiB(b, true)
}

// BenchmarkDeviceCopy64KiBHandOff: the same copy issued from another goroutine, so every call is
// handed off to the locked thread and back (two OS thread wake-ups): what each call cost before
// the engine made its calls in a session, and what a caller outside a session still pays.
func BenchmarkDeviceCopy64KiBHandOff(b *testing.B) {
	benchCopy64KiB(b, false)
}

func benchCopy64KiB(b *testing.B, inSession bool) {
	const n = 64 << 10
	dev := openBench(b)
	src, _ := dev.Malloc(device.Main, n)
	dst, _ := dev.Malloc(device.Main, n)
	s, _ := dev.CreateStream(device.Main, device.Blocking)
	if err := dev.Write(device.Main, src, bytes.Repeat([]byte{7}, n)); err != nil {
		b.Fatal(err)
	}
	hs, hd := make([]byte, n), make([]byte, n)
	var took, base time.Duration
	loop := func(d *sim.Device) {
		took, base = alternate(b.N, func() {
			if err := d.Copy(device.Main, s, dst, src); err != nil {
				b.Fatal(err)
			}
		}, func() { copy(hd, hs) })
	}
	b.ReportAllocs()
	b.ResetTimer()
	if inSession {
		onThread(b, dev, loop)
	} else {
		loop(dev)
	}
	b.StopTimer()
	reportPerOp(b, took, n)
	b.ReportMetric(float64(took)/float64(max(base, 1)), "x-copy")
}

// BenchmarkReadVerify64KiB: verifying a 64 KiB buffer after a replay round as the engine does on
// the simulator (Equal: the comparison in place on the device's pages, on the locked Main thread
// inside the instance's session), against bytes.Equal over the same size.
func BenchmarkReadVerify64KiB(b *testing.B) {
	benchVerify64KiB(b, true)
}

// BenchmarkReadVerify64KiBHandOff: the same comparison handed off to the locked thread per call.
func BenchmarkReadVerify64KiBHandOff(b *testing.B) {
	benchVerify64KiB(b, false)
}

func benchVerify64KiB(b *testing.B, inSession bool) {
	const n = 64 << 10
	dev := openBench(b)
	p, _ := dev.Malloc(device.Main, n)
	want := bytes.Repeat([]byte{3}, n)
	if err := dev.Write(device.Main, p, want); err != nil {
		b.Fatal(err)
	}
	got := bytes.Clone(want)
	var took, base time.Duration
	var sink bool
	loop := func(d *sim.Device) {
		took, base = alternate(b.N, func() {
			if eq, err := d.Equal(device.Main, p, want); err != nil || !eq {
				b.Fatal("not equal", err)
			}
		}, func() { sink = bytes.Equal(got, want) })
	}
	b.ReportAllocs()
	b.ResetTimer()
	if inSession {
		onThread(b, dev, loop)
	} else {
		loop(dev)
	}
	b.StopTimer()
	_ = sink
	reportPerOp(b, took, n)
	b.ReportMetric(float64(took)/float64(max(base, 1)), "x-bytes.Equal")
}

// BenchmarkSimCapture100k: the simulator's own capture of 100,000 fills of 64 bytes (begin, the
// fills, end) against one launch of the graph it made and the sync after it, the shape of the
// engine's Capture100kOps without the engine: the platform's floor under that figure. Each
// captured fill is checked against the profile's rules and recorded as a node with its
// dependencies and the generations of what it touches; a replayed node is a memset.
func BenchmarkSimCapture100k(b *testing.B) {
	benchSimCapture(b, func(int) {}, func() {})
}

// oracleOp and callRecord are the sizes of what the engine writes for each captured op besides
// the simulator's node: the oracle's graph op (48 bytes) and the timeline's compact record (40).
type (
	oracleOp   struct{ wOff, wLen, rOff, rLen, ids, kind uint64 }
	callRecord struct{ seq, addr, bytes, x, place uint64 }
)

// BenchmarkCaptureFloor: what a capture that keeps an account of its own per op would cost with
// no engine at all: the simulator's capture of BenchmarkSimCapture100k, and for each fill the two
// records such a capture writes (an oracle's op, a timeline's record), against the same replay.
// It is why the engine records a batch of ops once (capture/batches.go) instead. Sub-benchmarks:
//   - fresh: the records in blocks made for each capture (internal/chunk), as the engine's are: a
//     result keeps its timeline, and a graph's program lives as long as the graph;
//   - reused: the records in two slices reused by every capture, the best a recorder could do.
//
// What it shows is the price of per-op records in new memory on this machine (docs/performance.md).
func BenchmarkCaptureFloor(b *testing.B) {
	b.Run("fresh", func(b *testing.B) {
		var ops chunk.Log[oracleOp]
		var calls chunk.Log[callRecord]
		benchSimCapture(b, func(i int) {
			ops.Add(oracleOp{wOff: uint64(i) * 64, wLen: 64, kind: 1})
			calls.Add(callRecord{seq: uint64(i), bytes: 64, place: uint64(i)})
		}, func() { ops, calls = chunk.Log[oracleOp]{}, chunk.Log[callRecord]{} })
	})
	b.Run("reused", func(b *testing.B) {
		ops, calls := make([]oracleOp, 0, 100000), make([]callRecord, 0, 100000)
		benchSimCapture(b, func(i int) {
			ops = append(ops, oracleOp{wOff: uint64(i) * 64, wLen: 64, kind: 1})
			calls = append(calls, callRecord{seq: uint64(i), bytes: 64, place: uint64(i)})
		}, func() { ops, calls = ops[:0], calls[:0] })
	})
}

// benchSimCapture times the simulator's capture of 100,000 fills of 64 bytes, calling record after
// each, against the mean of three launches of the graph, each synchronised; reset runs before
// each capture, untimed.
func benchSimCapture(b *testing.B, record func(i int), reset func()) {
	const nodes, replays = 100000, 3
	dev := openBench(b)
	var capt, replay time.Duration
	b.ResetTimer()
	onThread(b, dev, func(d *sim.Device) {
		buf, err := d.Malloc(device.Main, nodes*64)
		if err != nil {
			b.Fatal(err)
		}
		s, err := d.CreateStream(device.Main, device.Blocking)
		if err != nil {
			b.Fatal(err)
		}
		for range b.N {
			reset()
			start := time.Now()
			if err := d.BeginCapture(device.Main, s, device.Global); err != nil {
				b.Fatal(err)
			}
			for i := range nodes {
				if err := d.Fill(device.Main, s, buf.Slice(int64(i)*64, 64), byte(i%255+1)); err != nil {
					b.Fatal(err)
				}
				record(i)
			}
			g, err := d.EndCapture(device.Main, s)
			if err != nil {
				b.Fatal(err)
			}
			capt += time.Since(start)
			for range replays {
				start := time.Now()
				if err := d.Launch(device.Main, g, s); err != nil {
					b.Fatal(err)
				}
				if err := d.SyncStream(device.Main, s); err != nil {
					b.Fatal(err)
				}
				replay += time.Since(start)
			}
			if err := d.DestroyGraph(device.Main, g); err != nil {
				b.Fatal(err)
			}
		}
	})
	replay /= replays
	b.ReportMetric(float64(capt)/float64(max(replay, 1)), "x-replay")
	b.ReportMetric(float64(capt)/float64(b.N)/nodes, "ns/captured-op")
	b.ReportMetric(float64(replay)/float64(b.N)/nodes, "ns/replayed-node")
}
