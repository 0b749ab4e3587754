package sim_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/sim"
)

// yardstick times f over n iterations; benchmarks report their cost as a multiple of it, measured in
// the same run, so the figure means the same on any machine.
func yardstick(n int, f func()) time.Duration {
	start := time.Now()
	for range n {
		f()
	}
	return time.Since(start)
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

// BenchmarkDeviceCopy64KiB: one simulated device-to-device copy of 64 KiB (a call through the
// device's locked worker thread and its sparse pages), against Go's copy of the same bytes.
func BenchmarkDeviceCopy64KiB(b *testing.B) {
	const n = 64 << 10
	dev := openBench(b)
	src, _ := dev.Malloc(runtime.Main, n)
	dst, _ := dev.Malloc(runtime.Main, n)
	s, _ := dev.CreateStream(runtime.Main)
	if err := dev.Write(runtime.Main, src, bytes.Repeat([]byte{7}, n)); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(n)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if err := dev.Copy(runtime.Main, s, dst, src); err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(start)
	b.StopTimer()
	hs, hd := make([]byte, n), make([]byte, n)
	base := yardstick(b.N, func() { copy(hd, hs) })
	b.ReportMetric(float64(took)/float64(max(base, 1)), "x-copy")
}

// BenchmarkReadVerify64KiB: verifying a 64 KiB buffer after a replay round as the engine does on
// the simulator (Equal: the comparison in place on the device's pages, a call through the locked
// worker thread), against bytes.Equal over the same size.
func BenchmarkReadVerify64KiB(b *testing.B) {
	const n = 64 << 10
	dev := openBench(b)
	p, _ := dev.Malloc(runtime.Main, n)
	want := bytes.Repeat([]byte{3}, n)
	if err := dev.Write(runtime.Main, p, want); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(n)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if eq, err := dev.Equal(runtime.Main, p, want); err != nil || !eq {
			b.Fatal("not equal", err)
		}
	}
	took := time.Since(start)
	b.StopTimer()
	got := bytes.Clone(want)
	var sink bool
	base := yardstick(b.N, func() { sink = bytes.Equal(got, want) })
	_ = sink
	b.ReportMetric(float64(took)/float64(max(base, 1)), "x-bytes.Equal")
}
