package capture_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// sharedPool is test_graph_three_successive's shared pool (specs/pytorch.yaml), replayed in the
// order given; f is g2's value: "d + 4", or "d - 1", which leaves in c's block the bytes c held.
func sharedPool(order, fFactor string) *probes.Probe { return sharedPoolOn("[s]", order, fFactor) }

func sharedPoolOn(streams, order, fFactor string) *probes.Probe {
	return parseProbe(`version: replaycheck/v1
set: t
probes:
  - name: shared
    hazard: pool-reuse
    pools:
      g0: {bytes: 64KiB, private: true}
    buffers:
      a: {bytes: 4000, init: hex:01000000}
    streams: ` + streams + `
    captures:
      - name: g0
        ops:
          - alloc: {buffer: b, bytes: 4000, pool: g0}
          - copy: {dst: b, src: a}
          - alloc: {buffer: c, bytes: 4000, pool: g0}
          - copy: {dst: c, src: b}
          - axpy: {y: c, x: a, a: 1}
          - alloc: {buffer: d, bytes: 4000, pool: g0}
          - copy: {dst: d, src: b}
          - axpy: {y: d, x: a, a: 2}
      - name: g1
        pool: g0
        ops:
          - alloc: {buffer: e, bytes: 4000, pool: g0}
          - copy: {dst: e, src: c}
          - axpy: {y: e, x: a, a: 3}
          - free: {buffer: c}
      - name: g2
        pool: g0
        ops:
          - alloc: {buffer: f, bytes: 4000, pool: g0}
          - copy: {dst: f, src: d}
          - axpy: {y: f, x: a, a: ` + fFactor + `}
    replay:
      order: ` + order + `
    check: [e, f]
    expect: {guarded: exact, unguarded: exact}
`)
}

var _ = Describe("graph-private pools", func() {
	run := func(p *probes.Probe, guarded bool, opt capture.Options) *capture.Result {
		dev := openSim("cuda")
		defer dev.Close()
		if opt.Runtime == nil {
			opt.Runtime = builtin
		}
		return capture.Run(context.Background(), dev, probes.Instance{Probe: p, Mode: device.Global, Guarded: guarded, Replays: 3}, opt)
	}
	off := func(set func(k *capture.Knobs)) capture.Options { return capture.Tune(capture.Options{}, set) }

	It("judges a shared pool replayed in capture order exact, guarded and not", func() {
		p := sharedPool("[g0, g1, g2]", "4")
		for _, guarded := range []bool{false, true} {
			res := run(p, guarded, capture.Options{})
			Expect(res.Outcome).To(Equal(probes.Exact), "guarded %v: %s", guarded, res.Reason)
			Expect(res.Stale).To(BeEmpty())
		}
	})

	It("calls the in-order replay stale without private semantics (the control)", func() {
		res := run(sharedPool("[g0, g1, g2]", "4"), false, off(func(k *capture.Knobs) { k.NoPrivatePools = true }))
		Expect(res.Outcome).To(Equal(probes.Corrupted))
		Expect(res.Stale).NotTo(BeEmpty())
		Expect(res.CorruptedRounds).To(BeZero(), "every byte is right: only the stale rule calls it corrupted")
	})

	It("finds the reordered shared replay by its bytes, and the guards refuse it", func() {
		res := run(sharedPool("[g0, g2, g1]", "4"), false, capture.Options{})
		Expect(res.Outcome).To(Equal(probes.Corrupted))
		Expect(res.CorruptedRounds).To(BeNumerically(">", 0))
		res = run(sharedPool("[g0, g2, g1]", "4"), true, capture.Options{})
		Expect(res.Outcome).To(Equal(probes.Refused), res.Reason)
		Expect(res.Refusal.Detail).To(ContainSubstring("out of capture order"))
	})

	It("finds a reordered shared replay whose bytes happen to be right by the sharing rule alone", func() {
		// f = d - 1 = b + 1: g2 leaves in c's block the bytes c held, so g1 reads right values.
		p := sharedPool("[g0, g2, g1]", "0xFFFFFFFF")
		res := run(p, false, capture.Options{})
		Expect(res.CorruptedRounds).To(BeZero())
		Expect(res.Outcome).To(Equal(probes.Corrupted))
		Expect(res.Stale).To(HaveLen(1))
		Expect(res.Stale[0].Capture).To(Equal("g1"))
		Expect(res.Stale[0].Now).To(ContainSubstring("captured after it"))
		// The control: without the sharing rule nothing calls it wrong.
		res = run(p, false, off(func(k *capture.Knobs) { k.NoSharingRule = true }))
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
	})

	It("finds graphs sharing a pool launched on two streams at once", func() {
		p := sharedPoolOn("[s, t]", "[g0, g1, {capture: g2, stream: t}]", "4")
		res := run(p, false, capture.Options{})
		Expect(res.Outcome).To(Equal(probes.Corrupted))
		Expect(strings.Join(func() (s []string) {
			for _, st := range res.Stale {
				s = append(s, st.Now)
			}
			return
		}(), "\n")).To(ContainSubstring("nothing orders them"))
	})

	It("refuses the in-order replay's captured allocations without the guards' private pools (the control)", func() {
		opt := capture.Options{Runtime: guard.Reference(guard.Options{Disabled: guard.Disabled{PrivatePools: true}})}
		res := run(sharedPool("[g0, g1, g2]", "4"), true, opt)
		Expect(res.Outcome).To(Equal(probes.Refused))
		Expect(res.Refusal.Detail).To(ContainSubstring("allocator call while"))
	})
})
