package capture_test

import (
	"encoding/json"
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/progen"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// Batches of a capture's ops (batches.go) are an optimisation only: the same instance run with
// every op that can go in a batch and with none must give the same result, byte for byte, timeline,
// ledger, graph checks and outcome included (timings aside).
var _ = Describe("batches of a capture's ops", func() {
	// comparable is res as JSON with what the clock decides left out.
	comparable := func(res *capture.Result) string {
		c := *res
		c.Duration, c.Timings = 0, capture.Timings{}
		b, err := json.MarshalIndent(&c, "", " ")
		Expect(err).NotTo(HaveOccurred())
		return string(b)
	}
	type tally struct{ batches, ops, broken int }
	// both runs in on a fresh device of profile twice: with batches of every op that can go in one
	// (counted in t), then with none.
	both := func(profile string, in probes.Instance, opt capture.Options, t *tally) (batched, single *capture.Result) {
		withBatches := capture.Tune(opt, func(k *capture.Knobs) {
			k.MinBatch = 1
			k.BatchHook = func(_, ops, took int) {
				t.batches++
				t.ops += ops
				if took < ops {
					t.broken++
				}
			}
		})
		dev := openSim(profile)
		batched = capture.Run(ctx(), dev, in, withBatches)
		Expect(dev.Close()).To(Succeed())
		dev = openSim(profile)
		defer dev.Close()
		return batched, capture.Run(ctx(), dev, in, capture.Tune(opt, func(k *capture.Knobs) { k.NoBatches = true }))
	}

	It("give every instance of the catalog (half under -race) the result it has op by op, on both profiles", func() {
		cat, err := loadCatalog()
		Expect(err).NotTo(HaveOccurred())
		var t tally
		instances := 0
		// Under the race detector (make test), every other instance, the other half on the
		// second profile: the property is logical, and the whole walk costs 8 s there.
		stride := 1
		if raceBuild {
			stride = 2
		}
		for pi, profile := range []string{"cann", "cuda"} {
			n := pi
			for _, s := range cat.sets {
				for _, p := range s.Probes {
					for _, mode := range device.CaptureModes() {
						// Unguarded, and guarded without the side-effect check (kernel-mode guards
						// take a batch op by op): a guarded instance that checks refusals issues none.
						for _, guarded := range []bool{false, true} {
							if n++; n%stride != 0 {
								continue
							}
							in := probes.Instance{Probe: p, Mode: mode, Guarded: guarded, Replays: 3}
							batched, single := both(profile, in, capture.Options{Runtime: builtin, NoSideEffectCheck: guarded}, &t)
							Expect(comparable(batched)).To(Equal(comparable(single)), "%s on sim/%s", in.ID(), profile)
							instances++
						}
					}
				}
			}
		}
		By(fmt.Sprintf("%d instances, %d batches of %d ops, %d of them stopped by a failed op", instances, t.batches, t.ops, t.broken))
		Expect(t.batches).To(BeNumerically(">", 100), "the catalog's captures went in batches")
		Expect(t.broken).To(BeNumerically(">", 0), "a batch stopped at an op the platform or a guard failed")
	})

	It("give random programs and a generated capture of copies, axpys and fills over several buffers and streams their result op by op", func() {
		var t tally
		for seed := uint64(1); seed <= 150; seed++ {
			text := progen.YAML(progen.Seed(seed))
			set, err := probes.Parse(fmt.Sprintf("program-%d.yaml", seed), []byte(text), probes.DefaultLimits())
			Expect(err).NotTo(HaveOccurred())
			in := probes.Instance{Probe: set.Probes[0], Mode: device.CaptureModes()[seed%3], Replays: 2}
			batched, single := both("cann", in, capture.Options{Runtime: builtin}, &t)
			Expect(comparable(batched)).To(Equal(comparable(single)), "seed %d:\n%s", seed, text)
		}
		Expect(t.batches).To(BeNumerically(">", 100), "the random programs' captures went in batches")

		var b strings.Builder
		b.WriteString(`version: replaycheck/v1
set: batches
probes:
  - name: mixed
    hazard: none
    replays: 5
    buffers:
`)
		for i := range 6 {
			fmt.Fprintf(&b, "      b%d: {bytes: 256, init: fill:0x%02X}\n", i, i+1)
		}
		b.WriteString("      own: {bytes: 256, init: zero}\n    streams: [main, side]\n    events: [e]\n    capture:\n      stream: main\n      ops:\n")
		for i := range 300 {
			switch {
			case i == 150:
				b.WriteString("        - record: {event: e, stream: main}\n        - wait: {event: e, stream: side}\n")
			case i > 150 && i < 170:
				fmt.Fprintf(&b, "        - fill: {dst: own, value: %d, offset: %d, bytes: 32, stream: side}\n", i%250+1, (i*32)%224)
			case i%5 == 0:
				fmt.Fprintf(&b, "        - copy: {dst: b%d, src: b%d, dst-offset: %d, bytes: 16}\n", i%6, (i+1)%6, (i*8)%240)
			case i%7 == 0:
				fmt.Fprintf(&b, "        - axpy: {y: b%d, x: b%d, a: %d}\n", i%6, (i+2)%6, i%9+1)
			default:
				fmt.Fprintf(&b, "        - fill: {dst: b%d, value: %d, offset: %d, bytes: 32}\n", i%6, i%250+1, (i*32)%224)
			}
		}
		b.WriteString("        - record: {event: e, stream: side}\n        - wait: {event: e, stream: main}\n")
		b.WriteString("    expect: {guarded: exact, unguarded: exact}\n")
		p := parseProbe(b.String())
		t = tally{}
		for _, profile := range []string{"cann", "cuda"} {
			batched, single := both(profile, probes.Instance{Probe: p, Mode: device.Global, Replays: 5}, capture.Options{Runtime: builtin}, &t)
			Expect(batched.Outcome).To(Equal(probes.Exact), batched.Reason)
			Expect(comparable(batched)).To(Equal(comparable(single)))
		}
		Expect(t.batches).To(Equal(2*3), "a batch before the record, one on side, one after")
		Expect(t.ops).To(Equal(2*299), "every fill, copy and axpy: op 150 is the record and the wait")
	})

	It("differ when a batch is recorded wrong (the comparison's negative control)", func() {
		p := parseProbe(progen.Fills(100, 2))
		skewed := capture.Tune(capture.Options{Runtime: builtin}, func(k *capture.Knobs) { k.SkewBatches = true })
		var t tally
		batched, single := both("cann", probes.Instance{Probe: p, Mode: device.Global, Replays: 2}, skewed, &t)
		Expect(t.batches).To(Equal(1))
		Expect(batched.Outcome).To(Equal(probes.Corrupted), "the oracle lacks the batch's last fill")
		Expect(single.Outcome).To(Equal(probes.Exact))
		Expect(comparable(batched)).NotTo(Equal(comparable(single)))
	})

	It("give a capture whose buffer is allocated again, smaller, before a batch its result op by op", func() {
		// The plan resolves the copy at b's declared size; b is 32 bytes by the time the copy
		// comes, so the copy ends the batch of fills before it, having named c, which no op of the
		// batch touches, and on its own it is skipped (its range no longer fits): c must not enter
		// the ledger. The loader would refuse the copy of 64 bytes from a buffer of 32 written
		// so (the alloc is made smaller after loading); a refused alloc or grow leaves an op so
		// as the instance runs.
		p := parseProbe(`version: replaycheck/v1
set: batches
probes:
  - name: realloc
    hazard: none
    replays: 2
    buffers:
      a: {bytes: 256, init: zero}
      b: {bytes: 256, init: fill:0x11}
      c: {bytes: 256, init: zero}
    streams: [main]
    capture:
      stream: main
      ops:
        - free: {buffer: b}
        - alloc: {buffer: b, bytes: 512, init: fill:0x22}
        - fill: {dst: a, value: 1, bytes: 16}
        - fill: {dst: a, value: 2, offset: 16, bytes: 16}
        - fill: {dst: a, value: 3, offset: 32, bytes: 16}
        - copy: {dst: c, src: b, bytes: 64}
    expect: {guarded: exact, unguarded: exact}
`)
		small := int64(32)
		p.Captures[0].Ops[1].Bytes = &small
		for _, profile := range []string{"cann", "cuda"} {
			for _, mode := range device.CaptureModes() {
				var t tally
				batched, single := both(profile, probes.Instance{Probe: p, Mode: mode, Replays: 2}, capture.Options{Runtime: builtin}, &t)
				Expect(comparable(batched)).To(Equal(comparable(single)), "%s on sim/%s", mode, profile)
				if batched.Rejection == nil {
					Expect(t.batches).To(Equal(1), "%s on sim/%s: the fills went in a batch", mode, profile)
					Expect(batched.Skipped).To(HaveLen(1), "%s on sim/%s: the copy", mode, profile)
					Expect(batched.Ledger).NotTo(ContainElement(HaveField("Buffer", "c")))
				}
			}
		}
	})

	It("go op by op for the rest of a capture after a batch stopped at a failed op", func() {
		// On CUDA in global mode the free invalidates the capture: every op after it fails.
		p := parseProbe(progen.Fills(2000, 1))
		p.Captures[0].Ops = append([]*probes.Op{{Kind: probes.OpFree, Buffer: "b", Thread: device.Main}}, p.Captures[0].Ops...)
		var t tally
		batched, single := both("cuda", probes.Instance{Probe: p, Mode: device.Global, Replays: 1}, capture.Options{Runtime: builtin}, &t)
		Expect(batched.Outcome).To(Equal(probes.Rejected), batched.Reason)
		Expect(comparable(batched)).To(Equal(comparable(single)))
		Expect(t.batches).To(Equal(1), "one batch, stopped at its first op; the others went on their own")
		Expect(t.broken).To(Equal(1))
	})

	It("are not given to a runtime of the user's own, whose Fill would not see them", func() {
		// countingFills embeds the reference guards, and so inherits their EnqueueKernels: given
		// batches, the fills would reach the guards without passing its Fill.
		p := parseProbe(progen.Fills(100, 1))
		var fills int
		rut := &runtime.UnderTest{Name: "counting", Open: func(dev device.Device, guarded bool) (runtime.Runtime, error) {
			g, err := guard.New(dev, guard.Program)
			return &countingFills{Device: g, n: &fills}, err
		}}
		var t tally
		batched, single := both("cann", probes.Instance{Probe: p, Mode: device.Global, Replays: 1}, capture.Options{Runtime: rut}, &t)
		Expect(batched.Outcome).To(Equal(probes.Exact), batched.Reason)
		Expect(comparable(batched)).To(Equal(comparable(single)))
		Expect(t.batches).To(Equal(0))
		Expect(fills).To(Equal(2*100), "every fill of both instances went through the runtime's Fill")
	})
})

// countingFills is a runtime of the user's own built on the reference guards that counts the
// fills made through it.
type countingFills struct {
	*guard.Device
	n *int
}

func (c *countingFills) Fill(t device.Thread, s device.Stream, dst device.Ptr, v byte) error {
	*c.n++
	return c.Device.Fill(t, s, dst, v)
}
