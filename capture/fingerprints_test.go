package capture_test

import (
	"context"
	"encoding/json"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/internal/fingerprint"
	"github.com/replaycheck/replaycheck/internal/progen"
	"github.com/replaycheck/replaycheck/probes"
)

// openSimFingerprints opens a simulated device that states the fingerprint extension.
func openSimFingerprints(profile string) device.Device {
	b, err := sim.New(sim.Options{Profile: profile, Fingerprints: true})
	Expect(err).NotTo(HaveOccurred())
	dev, err := b.Open(context.Background(), 0)
	Expect(err).NotTo(HaveOccurred())
	return dev
}

// flipper is a device that flips one bit of a buffer after every launch, as a replay that
// corrupts it would: the lowest bit of byte at of the first allocation of size bytes. It states the
// inner device's comparison and fingerprints for itself (no session: every call comes through it),
// and counts the bytes the engine reads back (its own flips go to the inner device).
type flipper struct {
	device.Device
	size, at int64
	target   device.Ptr
	read     int64
}

func (f *flipper) Extensions() device.Extensions {
	e := device.ExtensionsOf(f.Device)
	return device.Extensions{Of: f, Compare: e.Compare, Fingerprint: e.Fingerprint}
}

func (f *flipper) Malloc(t device.Thread, n int64) (device.Ptr, error) {
	p, err := f.Device.Malloc(t, n)
	if err == nil && n == f.size && f.target == (device.Ptr{}) {
		f.target = p
	}
	return p, err
}

func (f *flipper) Launch(t device.Thread, g device.Graph, s device.Stream) error {
	if err := f.Device.Launch(t, g, s); err != nil {
		return err
	}
	if err := f.Device.SyncDevice(t); err != nil {
		return err
	}
	b := make([]byte, 1)
	at := f.target.Slice(f.at, 1)
	if err := f.Device.Read(t, b, at); err != nil {
		return err
	}
	b[0] ^= 1
	return f.Device.Write(t, at, b)
}

func (f *flipper) Read(t device.Thread, dst []byte, src device.Ptr) error {
	f.read += int64(len(dst))
	return f.Device.Read(t, dst, src)
}

// comparableResult is res as JSON with what the clock decides left out.
func comparableResult(res *capture.Result) string {
	c := *res
	c.Duration, c.Timings = 0, capture.Timings{}
	b, err := json.MarshalIndent(&c, "", " ")
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// verification is what res says verification found: the outcome, the rounds, every mismatch and
// difference, and each stale range's capture, buffer, generation, round and owners.
func verification(res *capture.Result) []any {
	var stale []any
	for _, st := range res.Stale {
		stale = append(stale, []any{st.Capture, st.Buffer, st.Generation, st.Round, st.Ran, st.Owners})
	}
	return []any{res.Outcome, res.Rounds, res.FirstCorrupted, res.CorruptedRounds, res.Mismatches, res.Differences, stale}
}

var _ = Describe("verification by fingerprints", func() {
	const mib = fingerprint.ChunkBytes
	const n = 3*mib + 5 // a partial last word
	// bigProbe checks a buffer of n bytes; its graph fills all of it (every chunk rewritten each
	// round) or only another, small buffer (nothing of it written).
	bigProbe := func(rewrite bool) *probes.Probe {
		dst := "small"
		if rewrite {
			dst = "big"
		}
		return parseProbe(fmt.Sprintf(`version: replaycheck/v1
set: fingerprints
probes:
  - name: flipped
    hazard: none
    buffers:
      big: {bytes: %d, init: fill:0x5A}
      small: {bytes: 64, init: zero}
    streams: [main]
    capture:
      ops:
        - fill: {dst: %s, value: 0x5A}
    expect: {guarded: exact, unguarded: exact}
`, n, dst))
	}
	run := func(f *flipper, p *probes.Probe, set func(k *capture.Knobs)) *capture.Result {
		opt := capture.Options{Runtime: builtin}
		if set != nil {
			opt = capture.Tune(opt, set)
		}
		return capture.Run(ctx(), f, probes.Instance{Probe: p, Mode: device.Global, Replays: 3}, opt)
	}

	for _, rewrite := range []bool{false, true} {
		It(fmt.Sprintf("find one flipped bit at the first and last byte, either side of a chunk's edge and in the partial word, where it is, reading back one chunk (graph rewrites the buffer: %v)", rewrite), func() {
			for _, at := range []int64{0, mib - 1, mib, 2*mib - 1, 2 * mib, n - 3, n - 1} {
				dev := openSimFingerprints("cuda")
				f := &flipper{Device: dev, size: n, at: at}
				res := run(f, bigProbe(rewrite), func(k *capture.Knobs) { k.FingerprintAudit = true })
				read := f.read
				Expect(dev.Close()).To(Succeed())
				Expect(res.Outcome).To(Equal(probes.Corrupted), "byte %d: %s", at, res.Reason)
				Expect(res.FirstCorrupted).To(Equal(1))
				// Without a rewrite, round 2 flips the bit back and round 3 again.
				corrupted := 2
				if rewrite {
					corrupted = 3
				}
				Expect(res.CorruptedRounds).To(Equal(corrupted), "byte %d", at)
				Expect(res.Mismatches).To(HaveLen(1))
				m := res.Mismatches[0]
				Expect([]any{m.Buffer, m.Offset, m.Length}).To(Equal([]any{"big", at, int64(1)}), "byte %d", at)
				Expect(m.Got[0]).To(Equal(m.Want[0] ^ 1))
				c := at / mib
				lo, hi := fingerprint.Bounds(n, int(c))
				// The engine read back the differing chunk in each corrupted round, and nothing else.
				Expect(read).To(Equal(int64(corrupted)*(hi-lo)), "byte %d", at)

				dev = openSimFingerprints("cuda")
				off := run(&flipper{Device: dev, size: n, at: at}, bigProbe(rewrite), func(k *capture.Knobs) { k.NoFingerprints = true })
				Expect(dev.Close()).To(Succeed())
				Expect(comparableResult(res)).To(Equal(comparableResult(off)), "byte %d: the same result without fingerprints", at)
			}
		})
	}

	It("make a corrupted probe exact when the device's fingerprints are taken to match (the negative control)", func() {
		dev := openSimFingerprints("cuda")
		defer dev.Close()
		res := run(&flipper{Device: dev, size: n, at: mib}, bigProbe(false), func(k *capture.Knobs) { k.FingerprintsMatch = true })
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(res.Mismatches).To(BeEmpty())
	})

	It("keep the oracle's fingerprint of a chunk only while the oracle leaves it: the audit fails when the rounds' writes are forgotten", func() {
		p := parseProbe(fmt.Sprintf(`version: replaycheck/v1
set: fingerprints
probes:
  - name: accumulates
    hazard: none
    buffers:
      y: {bytes: %d, init: fill:0x01}
      x: {bytes: %d, init: fill:0x02}
      z: {bytes: 64, init: zero}
    streams: [main]
    capture:
      ops:
        - axpy: {y: y, x: x, a: 3}
        - fill: {dst: z, value: 1, offset: 8, bytes: 8}
    replay:
      each:
        - fill: {dst: x, value: 7, offset: %d, bytes: 16}
    expect: {guarded: exact, unguarded: exact}
`, 2*mib, 2*mib, mib-8))
		for _, forget := range []bool{false, true} {
			dev := openSimFingerprints("cann")
			res := capture.Run(ctx(), dev, probes.Instance{Probe: p, Mode: device.Global, Replays: 4},
				capture.Tune(capture.Options{Runtime: builtin}, func(k *capture.Knobs) { k.FingerprintAudit, k.ForgetWrites = true, forget }))
			Expect(dev.Close()).To(Succeed())
			if !forget {
				Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
				continue
			}
			Expect(res.Outcome).To(Equal(probes.Errored))
			Expect(res.Error.Kind).To(Equal(capture.ErrHarness))
			Expect(res.Reason).To(ContainSubstring("was kept, but the oracle changed the chunk"))
		}
	})

	// both runs in twice on fresh devices of profile: by fingerprints (every oracle fingerprint
	// audited) and without.
	both := func(profile string, in probes.Instance, match bool) (on, off *capture.Result) {
		dev := openSimFingerprints(profile)
		on = capture.Run(ctx(), dev, in, capture.Tune(capture.Options{Runtime: builtin}, func(k *capture.Knobs) {
			k.FingerprintAudit, k.FingerprintsMatch = true, match
		}))
		Expect(dev.Close()).To(Succeed())
		dev = openSim(profile)
		defer dev.Close()
		return on, capture.Run(ctx(), dev, in, capture.Options{Runtime: builtin})
	}

	It("give every instance of the catalog and of 150 random programs (a sample under -race) the result it has without them; taken to match, every one with a mismatch in device memory differs", func() {
		cat, err := loadCatalog()
		Expect(err).NotTo(HaveOccurred())
		instances, corrupted, differ := 0, 0, 0
		// onDevice: a mismatch names a buffer the probe declares in device memory (a host buffer
		// is compared without fingerprints).
		onDevice := func(p *probes.Probe, ms []capture.Mismatch) bool {
			for _, m := range ms {
				if b := p.Buffer(m.Buffer); b != nil && b.Place.Host == 0 {
					return true
				}
			}
			return false
		}
		check := func(in probes.Instance, profile string) {
			on, off := both(profile, in, false)
			Expect(comparableResult(on)).To(Equal(comparableResult(off)), "%s on sim/%s", in.ID(), profile)
			instances++
			if onDevice(in.Probe, off.Mismatches) {
				corrupted++
				if matched, _ := both(profile, in, true); comparableResult(matched) != comparableResult(off) {
					differ++
				}
			}
		}
		// Under the race detector (make test), every third instance of the catalog, a different
		// third on each profile, and 50 programs: the property is logical, and the whole walk
		// costs 20 s there. go test without -race walks it all.
		stride, programs := 1, uint64(150)
		if raceBuild {
			stride, programs = 3, 50
		}
		for pi, profile := range []string{"cann", "cuda"} {
			n := pi
			for _, s := range cat.sets {
				for _, p := range s.Probes {
					for _, mode := range device.CaptureModes() {
						for _, guarded := range []bool{false, true} {
							if n++; n%stride == 0 {
								check(probes.Instance{Probe: p, Mode: mode, Guarded: guarded, Replays: 3}, profile)
							}
						}
					}
				}
			}
		}
		for seed := uint64(1); seed <= programs; seed++ {
			text := progen.YAML(progen.Seed(seed))
			set, err := probes.Parse(fmt.Sprintf("program-%d.yaml", seed), []byte(text), probes.DefaultLimits())
			Expect(err).NotTo(HaveOccurred())
			check(probes.Instance{Probe: set.Probes[0], Mode: device.CaptureModes()[seed%3], Replays: 3}, "cann")
		}
		By(fmt.Sprintf("%d instances, %d with mismatches in declared device buffers, %d of them other with fingerprints taken to match", instances, corrupted, differ))
		Expect(corrupted).To(BeNumerically(">", 50/stride))
		Expect(differ).To(Equal(corrupted), "every instance with a mismatch in device memory loses it when the fingerprints are taken to match")
	})

	It("give every instance of the catalog over the fake libcuda, whose kernel computes them, the result it has without them", func() {
		if why := backends.Unavailable("cuda"); why != "" {
			Skip(why)
		}
		path, err := fake.Build(GinkgoT().TempDir(), fake.CUDA, fake.Variant{})
		Expect(err).NotTo(HaveOccurred())
		be, err := backends.Open("cuda", backends.Config{Library: path})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(be.Close)
		// Each run on a device of its own, so that both meet the allocator in the same state.
		run := func(in probes.Instance, set func(k *capture.Knobs)) *capture.Result {
			dev, err := be.Open(ctx(), 0)
			Expect(err).NotTo(HaveOccurred())
			defer func() { Expect(dev.Close()).To(Succeed()) }()
			Expect(device.ExtensionsOf(dev).Fingerprint).NotTo(BeNil())
			return capture.Run(ctx(), dev, in, capture.Tune(capture.Options{Runtime: builtin}, set))
		}
		cat, err := loadCatalog()
		Expect(err).NotTo(HaveOccurred())
		instances := 0
		for _, s := range cat.sets {
			for _, p := range s.Probes {
				for _, mode := range device.CaptureModes() {
					in := probes.Instance{Probe: p, Mode: mode, Replays: 3}
					on := run(in, func(k *capture.Knobs) { k.FingerprintAudit = true })
					off := run(in, func(k *capture.Knobs) { k.NoFingerprints = true })
					// Device addresses differ from one device's lifetime to the next here: the
					// verification's findings are compared, the stale ranges without their addresses.
					Expect(verification(on)).To(Equal(verification(off)), "%s on the fake libcuda", in.ID())
					instances++
				}
			}
		}
		By(fmt.Sprintf("%d instances", instances))
	})
})
