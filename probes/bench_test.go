package probes_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/probes"
)

// BenchmarkOracleRound: one launch of a captured graph of 10,000 fills of 64 bytes in the oracle,
// against the same fills done directly on a byte slice (target <= 1.2x).
func BenchmarkOracleRound(b *testing.B) {
	const nodes = 10000
	var ops strings.Builder
	for i := range nodes {
		fmt.Fprintf(&ops, "        - fill: {dst: b, value: %d, offset: %d, bytes: 64}\n", i%255+1, i*64)
	}
	set, err := probes.Parse("bench.yaml", []byte(fmt.Sprintf(`version: replaycheck/v1
set: bench
probes:
  - name: fills
    hazard: none
    buffers:
      b: {bytes: %d, init: zero}
    streams: [main]
    capture:
      ops:
%s    expect: {guarded: exact, unguarded: exact}
`, nodes*64, ops.String())), probes.DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	p := set.Probes[0]
	o := probes.NewOracle(p)
	for _, op := range p.Captures[0].Ops {
		o.Capture("c", op, true)
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		o.Launch("c", true)
	}
	took := time.Since(start)
	b.StopTimer()
	buf := make([]byte, nodes*64)
	start = time.Now()
	for range b.N {
		for i := range nodes {
			seg := buf[i*64 : i*64+64]
			for k := range seg {
				seg[k] = byte(i%255 + 1)
			}
		}
	}
	base := time.Since(start)
	b.ReportMetric(float64(took)/float64(max(base, 1)), "x-direct")
}
