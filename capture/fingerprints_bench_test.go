package capture_test

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// BenchmarkFingerprints256MiB: verification of 256 MiB by fingerprints (the engine's
// byFingerprints: the device's kernel, the oracle's fingerprints kept, only differing chunks read
// back) against the pinned link's read, one asynchronous copy of the 256 MiB into pinned host
// memory, synchronised (the ratio is the read's time over the measured one's, interleaved):
//   - rewritten: the oracle rewrote every chunk since the round before, so the host recomputes
//     every fingerprint;
//   - unchanged: the oracle changed nothing, so the host computes none.
//
// The device is the fake CUDA driver library (whose kernel runs on the host's CPU: the figures show
// the host-side cost, kernel included), or with REPLAYCHECK_HARDWARE=cuda the GPU (make
// device-check).
func BenchmarkFingerprints256MiB(b *testing.B) {
	const n = 256 << 20
	dev := readBackDevice(b)
	if device.ExtensionsOf(dev).Fingerprint == nil {
		b.Skip("the device states no fingerprints")
	}
	p, want, pinnedCopy := benchBuffer(b, dev, n)
	pinnedRead := func() {
		if err := pinnedCopy(); err != nil {
			b.Fatal(err)
		}
	}
	for _, rewritten := range []bool{true, false} {
		name := "unchanged"
		if rewritten {
			name = "rewritten"
		}
		b.Run(name, func(b *testing.B) {
			v, err := capture.Options{Runtime: builtin}.NewFingerprintVerifier(dev, p)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(n)
			took, base := interleaved(b, func() {
				if eq, err := v.Verify(want, rewritten); err != nil || !eq {
					b.Fatal(errors.Join(errors.New("not equal"), err))
				}
			}, pinnedRead)
			b.ReportMetric(float64(base)/float64(max(took, 1)), "x-throughput-of-pinned-read")
			b.ReportMetric(float64(n)*float64(b.N)/took.Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkSoak: basic/accumulating-axpy replayed many times (REPLAYCHECK_SOAK_REPLAYS, default
// 2,000; the target is 100,000 on a GPU) with every replay verified, against the same
// replays unverified (its check list emptied: the rounds' syncs stay), interleaved; the ratio is
// the verified run's time over the unverified one's. Device: as BenchmarkFingerprints256MiB's.
func BenchmarkSoak(b *testing.B) {
	replays := 2000
	if s := os.Getenv("REPLAYCHECK_SOAK_REPLAYS"); s != "" {
		var err error
		if replays, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	dev := readBackDevice(b)
	cat, err := loadCatalog()
	if err != nil {
		b.Fatal(err)
	}
	var p *probes.Probe
	for _, s := range cat.sets {
		for _, q := range s.Probes {
			if q.ID() == "basic/accumulating-axpy" {
				p = q
			}
		}
	}
	if p == nil {
		b.Fatal("no probe basic/accumulating-axpy in the catalog")
	}
	unchecked := *p
	unchecked.Check = []string{}
	run := func(p *probes.Probe) func() {
		return func() {
			in := probes.Instance{Probe: p, Mode: device.Global, Replays: replays}
			if res := capture.Run(ctx(), dev, in, capture.Options{Runtime: builtin}); res.Outcome != probes.Exact {
				b.Fatalf("%s: %s (%s)", in.ID(), res.Outcome, res.Reason)
			}
		}
	}
	took, base := interleaved(b, run(p), run(&unchecked))
	b.ReportMetric(float64(took)/float64(max(base, 1)), "x-unverified")
	b.ReportMetric(float64(took)/float64(b.N)/float64(replays)/1e3, "us-per-verified-replay")
}
