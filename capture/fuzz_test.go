package capture_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/progen"
	"github.com/replaycheck/replaycheck/probes"
)

// The fuzz targets' input: a choice stream for progen.Bytes, a capture mode and a replay count.
// The seeds are f.Add calls here and the files under testdata/fuzz/<target>/.

func addProgramSeeds(f *testing.F) {
	f.Add([]byte{}, uint8(0), uint8(0))                                       // the smallest program
	f.Add([]byte("replaycheck: a capture, then replays"), uint8(1), uint8(3)) // arbitrary text is a choice stream too
	for seed := uint64(1); seed <= 4; seed++ {
		f.Add(seedBytes(seed, 96), uint8(seed), uint8(seed))
	}
}

// seedBytes are n bytes of a fixed PRNG stream: a seed input of typical length.
func seedBytes(seed uint64, n int) []byte {
	src, out := progen.Seed(seed), make([]byte, n)
	for i := range out {
		out[i] = byte(src.IntN(256))
	}
	return out
}

// fuzzProbe turns a fuzz input into a hazard-free probe, a mode and 1 to 4 replays.
func fuzzProbe(t *testing.T, choices []byte, mode, replays uint8) (*probes.Probe, device.CaptureMode, int) {
	text := progen.YAML(progen.Bytes(choices))
	set, err := probes.Parse("fuzz.yaml", []byte(text), probes.DefaultLimits())
	if err != nil {
		t.Fatalf("progen wrote a probe the loader refuses: %v\n%s", err, text)
	}
	modes := device.CaptureModes()
	return set.Probes[0], modes[int(mode)%len(modes)], 1 + int(replays)%4
}

// oracleMatchesDevice runs p unguarded on dev twice, comparing every checked buffer with the
// oracle after every replay: in place (device.Comparer, when dev has one) and read back
// (Device.Read). A hazard-free probe must be exact both ways; the error says where it is not.
func oracleMatchesDevice(dev device.Device, p *probes.Probe, mode device.CaptureMode, replays int) error {
	for _, way := range []struct {
		name string
		dev  device.Device
	}{{"compared in place", dev}, {"read back", opaque{dev}}} {
		in := probes.Instance{Probe: p, Mode: mode, Replays: replays}
		res := capture.Run(context.Background(), way.dev, in, capture.Options{Runtime: builtin})
		if res.Outcome != probes.Exact {
			return fmt.Errorf("%s, %s: %s: %s%s", dev.Platform(), way.name, res.Outcome, res.Reason, mismatches(res))
		}
	}
	return nil
}

func mismatches(res *capture.Result) string {
	var b strings.Builder
	for _, m := range res.Mismatches {
		fmt.Fprintf(&b, "\n  %+v", m)
	}
	return b.String()
}

// FuzzOracleSimulator: the oracle and the simulator agree on every byte of every hazard-free
// program, on both profiles, whichever way the engine reaches the simulator's bytes.
func FuzzOracleSimulator(f *testing.F) {
	addProgramSeeds(f)
	devs := []device.Device{simDevice(f, "cann"), simDevice(f, "cuda")}
	f.Fuzz(func(t *testing.T, choices []byte, mode, replays uint8) {
		p, m, n := fuzzProbe(t, choices, mode, replays)
		for _, dev := range devs {
			if err := oracleMatchesDevice(dev, p, m, n); err != nil {
				t.Fatalf("%v\n%s", err, progen.YAML(progen.Bytes(choices)))
			}
		}
	})
}

// engineHandlesCleanly runs p in mode, guards off and on, on dev: each instance must be exact (so
// no panic and no harness error either) and leave dev's live objects where they were, counted by
// the test as well as by the engine.
func engineHandlesCleanly(dev device.Device, p *probes.Probe, mode device.CaptureMode, replays int) error {
	for _, guarded := range []bool{false, true} {
		base := dev.Counters()
		in := probes.Instance{Probe: p, Mode: mode, Guarded: guarded, Replays: replays}
		res := capture.Run(context.Background(), dev, in, capture.Options{Runtime: builtin})
		if res.Outcome != probes.Exact {
			return fmt.Errorf("%s: %s: %s", in.ID(), res.Outcome, res.Reason)
		}
		if leaks := dev.Counters().Leaks(base); len(leaks) > 0 {
			return fmt.Errorf("%s: left live on the device: %s", in.ID(), strings.Join(leaks, "; "))
		}
	}
	return nil
}

// FuzzEngine: the engine classifies every hazard-free program exact, guards on and off, and
// releases everything it made.
func FuzzEngine(f *testing.F) {
	addProgramSeeds(f)
	dev := simDevice(f, "cann")
	f.Fuzz(func(t *testing.T, choices []byte, mode, replays uint8) {
		p, m, n := fuzzProbe(t, choices, mode, replays)
		if err := engineHandlesCleanly(dev, p, m, n); err != nil {
			t.Fatalf("%v\n%s", err, progen.YAML(progen.Bytes(choices)))
		}
	})
}

// flippedWrites corrupts the first byte of every write on its way to the device it wraps, and
// lets the engine reach that device's in-place comparison (Extensions).
type flippedWrites struct{ device.Device }

func (d flippedWrites) Extensions() device.Extensions { return passOn(d, d.Device) }
func (d flippedWrites) Write(t device.Thread, dst device.Ptr, src []byte) error {
	b := append([]byte(nil), src...)
	b[0] ^= 0xff
	return d.Device.Write(t, dst, b)
}

// flippedReads returns every read with its first byte corrupted: the device holds the right
// bytes, so only the read-back comparison can see it.
type flippedReads struct{ device.Device }

func (d flippedReads) Extensions() device.Extensions { return passOn(d, d.Device) }
func (d flippedReads) Read(t device.Thread, dst []byte, src device.Ptr) error {
	err := d.Device.Read(t, dst, src)
	dst[0] ^= 0xff
	return err
}

// FuzzLocalise: the localisation, cut into segments anywhere a parallel scan may cut it, agrees
// with the byte-at-a-time definition (localisationAgrees).
func FuzzLocalise(f *testing.F) {
	f.Add([]byte{}, uint16(0), uint8(0))
	for _, s := range localiseSeeds {
		f.Add(s.plant, s.size, s.cutAt)
	}
	f.Add(seedBytes(5, 90), uint16(6000), uint8(0x2A))
	f.Fuzz(func(t *testing.T, plant []byte, size uint16, cutAt uint8) {
		if err := localisationAgrees(capture.LocaliseSegments, plant, size, cutAt); err != nil {
			t.Fatal(err)
		}
	})
}

// localiseSeeds plant differences next to a cut: a range across the cut at 1 KiB, and a gap of
// 15 equal bytes (one range) across the cut at 2 KiB.
var localiseSeeds = []struct {
	plant []byte
	size  uint16
	cutAt uint8
}{
	{[]byte{0x03, 0xFF, 0x01, 0x04, 0x00, 0x80}, 4096, 0x07},
	{[]byte{0x07, 0xF8, 0x10, 0x08, 0x07, 0x20}, 4096, 0x02},
}

// localisationAgrees runs loc over a buffer of up to 6 KiB with differences planted by plant (two
// bytes of position, one of XOR, per difference), cut at the 1 KiB boundaries cutAt picks, and
// compares it with the byte-at-a-time definition at several limits (localisedAsDefined).
func localisationAgrees(loc func(want, got []byte, limit int, cuts []int) ([][2]int, int, int64), plant []byte, size uint16, cutAt uint8) error {
	n := int(size)%(6<<10) + 1
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i*31 + 7)
	}
	got := bytes.Clone(want)
	for i := 0; i+2 < len(plant); i += 3 {
		got[(int(plant[i])<<8|int(plant[i+1]))%n] ^= plant[i+2] | 1
	}
	var cuts []int
	for k := range 8 {
		if c := (k + 1) << 10; cutAt&(1<<k) != 0 && c < n {
			cuts = append(cuts, c)
		}
	}
	err := localisedAsDefined(want, got, []int{0, 1, 3, math.MaxInt},
		func(limit int) ([][2]int, int, int64) { return loc(want, got, limit, cuts) })
	if err != nil {
		return fmt.Errorf("size %d cuts %v, %w", n, cuts, err)
	}
	return nil
}

var _ = Describe("the fuzz properties (negative controls)", func() {
	// The fuzz targets' seed programs, and the empty one.
	inputs := [][]byte{nil}
	for seed := uint64(1); seed <= 4; seed++ {
		inputs = append(inputs, seedBytes(seed, 96))
	}
	probeOf := func(choices []byte) *probes.Probe {
		return parseProbe(progen.YAML(progen.Bytes(choices)))
	}

	It("oracle and simulator: holds on the seeds, fails when the device's bytes are wrong, either way they are reached", func() {
		dev := openSim("cuda")
		defer dev.Close()
		for _, in := range inputs {
			Expect(oracleMatchesDevice(dev, probeOf(in), device.Global, 2)).To(Succeed())
			Expect(oracleMatchesDevice(flippedWrites{dev}, probeOf(in), device.Global, 2)).
				To(MatchError(ContainSubstring("compared in place: corrupted")))
			Expect(oracleMatchesDevice(flippedReads{dev}, probeOf(in), device.Global, 2)).
				To(MatchError(ContainSubstring("read back: corrupted")))
		}
	})

	It("localisation: holds on its seeds, fails when the segments' ranges are not joined across the cuts", func() {
		for _, s := range localiseSeeds {
			Expect(localisationAgrees(capture.LocaliseSegments, s.plant, s.size, s.cutAt)).To(Succeed())
			Expect(localisationAgrees(capture.LocaliseSegmentsUnjoined, s.plant, s.size, s.cutAt)).
				To(MatchError(ContainSubstring("ranges")))
		}
	})

	It("engine: fails on a device that drops copies, and on one that leaks", func() {
		p := parseProbe(simple)
		dev := openSim("cann")
		defer dev.Close()
		Expect(engineHandlesCleanly(dev, p, device.Relaxed, 2)).To(Succeed())
		Expect(engineHandlesCleanly(droppingCopies{dev}, p, device.Relaxed, 2)).
			To(MatchError(ContainSubstring("guards-off: corrupted")))
		leaky := openSim("cann")
		defer leaky.Close()
		Expect(engineHandlesCleanly(leakyDevice{leaky}, p, device.Relaxed, 2)).
			To(MatchError(ContainSubstring("leaked")))
	})
})
