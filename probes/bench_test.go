package probes_test

import (
	"fmt"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/replaycheck/replaycheck/internal/progen"
	"github.com/replaycheck/replaycheck/probes"
)

// BenchmarkOracleRound: one launch of a captured graph of 10,000 fills of 64 bytes in the oracle,
// against the same fills done directly on a byte slice (target <= 1.2x).
func BenchmarkOracleRound(b *testing.B) {
	const nodes = 10000
	set, err := probes.Parse("bench.yaml", []byte(progen.Fills(nodes, 1)), probes.DefaultLimits())
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

// BenchmarkOracleCapture: recording a captured graph of 100,000 fills of 64 bytes in the oracle,
// per op (the oracle's share of the engine's capture; a new oracle each round, not timed).
func BenchmarkOracleCapture(b *testing.B) {
	const nodes = 100000
	set, err := probes.Parse("bench.yaml", []byte(progen.Fills(nodes, 1)), probes.DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	p := set.Probes[0]
	c := p.Captures[0]
	var took time.Duration
	for range b.N {
		o := probes.NewOracle(p)
		start := time.Now()
		for _, op := range c.Ops {
			o.Capture(c.Name, op, true)
		}
		o.EndCapture(c.Name, true)
		took += time.Since(start)
	}
	b.ReportMetric(float64(took)/float64(b.N)/nodes, "ns/captured-op")
}

// BenchmarkLoad100kOps: loading a probe of 100,000 fills (6 MB of YAML parsed, every field
// read and checked, the ops placed) against yaml.v3 decoding the same bytes into its node tree,
// the parse the loader builds on: the ratio is what the loader adds to the parse. The two
// alternate, so that a drift of the machine weighs on both.
func BenchmarkLoad100kOps(b *testing.B) {
	for _, nodes := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("ops=%d", nodes), func(b *testing.B) { benchLoad(b, nodes) })
	}
}

func benchLoad(b *testing.B, nodes int) {
	data := []byte(progen.Fills(nodes, 1))
	b.SetBytes(int64(len(data)))
	var load, parse time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		set, err := probes.Parse("bench.yaml", data, probes.DefaultLimits())
		if err != nil {
			b.Fatal(err)
		}
		load += time.Since(start)
		if n := len(set.Probes[0].Captures[0].Ops); n != nodes {
			b.Fatalf("%d ops loaded, want %d", n, nodes)
		}
		start = time.Now()
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			b.Fatal(err)
		}
		parse += time.Since(start)
	}
	b.ReportMetric(float64(load)/float64(max(parse, 1)), "x-yaml-parse")
	b.ReportMetric(float64(load)/float64(b.N)/float64(nodes), "ns/op-loaded")
}
