package capture_test

import (
	"testing"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/sim"
)

// BenchmarkRunSimple is one small instance end to end on the simulator, 20 replay rounds: what
// the engine's per-call costs (the watch on every device call among them) add up to.
func BenchmarkRunSimple(b *testing.B) {
	set, err := probes.Parse("bench.yaml", []byte(simple), probes.DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	dev := openSimB(b)
	in := probes.Instance{Probe: set.Probes[0], Mode: runtime.Global, Replays: 20}
	b.ResetTimer()
	for b.Loop() {
		if res := capture.Run(ctx(), dev, in, capture.Options{}); res.Outcome != probes.Exact {
			b.Fatal(res.Reason)
		}
	}
}

func openSimB(b *testing.B) runtime.Device {
	be, err := sim.New(sim.Options{})
	if err != nil {
		b.Fatal(err)
	}
	dev, err := be.Open(ctx(), 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = dev.Close() })
	return dev
}
