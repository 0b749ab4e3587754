package capture_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// kvProbe is the KV cache grown between two captures (specs/phases.yaml), its cache in slot and
// its grow written as sequence: the phases list, or the same ops in prepare, captures and between.
func kvProbe(slot, sequence string) *probes.Probe {
	return parseProbe(`
version: replaycheck/v1
set: t
probes:
  - name: kv
    hazard: rebase
    buffers:
      entries: {bytes: 512, init: "fill:0x5a"}
      kv: {bytes: 16KiB, init: iota32, slot: ` + slot + `}
      attn: {bytes: 64KiB}
    streams: [main]
` + sequence + `
    replay:
      order: [small, big]
    expect: {guarded: refused, unguarded: corrupted}
`)
}

// growBetween grows the cache between the two captures; growAfter writes the same ops in the
// sections, where the grow can only come after both.
const (
	growBetween = `
    phases:
      - capture:
          name: small
          ops:
            - copy: {dst: kv, src: entries}
      - eager:
          - grow: {buffer: kv, bytes: 64KiB}
      - capture:
          name: big
          ops:
            - copy: {dst: attn, src: kv}
`
	growAfter = `
    captures:
      - name: small
        ops:
          - copy: {dst: kv, src: entries}
      - name: big
        ops:
          - copy: {dst: attn, src: kv}
    between:
      - grow: {buffer: kv, bytes: 64KiB}
`
)

// seqOf is the sequence number of the first event whose step or call text is what.
func seqOf(res *capture.Result, what string) int {
	GinkgoHelper()
	for _, ev := range res.Timeline.Events() {
		if (ev.Step != nil && ev.Step.String() == what) || ev.Call == what {
			return ev.Seq
		}
	}
	Fail("no event " + what)
	return 0
}

// ledgerOf is the ledger entry of capture's graph for buffer.
func ledgerOf(res *capture.Result, capture, buffer string) capture.Residency {
	GinkgoHelper()
	for _, l := range res.Ledger {
		if l.Capture == capture && l.Buffer == buffer {
			return l
		}
	}
	Fail("no ledger entry of " + capture + " for " + buffer)
	return res.Ledger[0]
}

var _ = Describe("a probe's phases", func() {
	var dev device.Device
	BeforeEach(func() {
		dev = openSim("cuda")
		DeferCleanup(func() { Expect(dev.Close()).To(Succeed()) })
	})

	It("runs an eager entry between the captures, as eager work", func() {
		res := runOn(dev, kvProbe("plain", growBetween), device.Global, 2)
		Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
		smallEnd, grow, bigBegin := seqOf(res, "capture small end"), seqOf(res, "phase 2 op 1"), seqOf(res, "capture big begin")
		Expect(smallEnd).To(BeNumerically("<", grow))
		Expect(grow).To(BeNumerically("<", bigBegin))
		for _, ev := range res.Timeline.Events() {
			if ev.Step != nil && ev.Step.String() == "phase 2 op 1" {
				Expect(ev.Phase).To(Equal(capture.PhaseEager))
				Expect(ev.Captured || ev.Eager).To(BeFalse(), "no capture is in progress")
				Expect(ev.Step.Phase).To(Equal(probes.PhaseEager))
				Expect(ev.Step.Entry).To(Equal(2))
			}
		}
		// The entry is complete before the next capture begins.
		sync := seqOf(res, "SyncDevice (end of phase 2)")
		Expect(sync).To(BeNumerically(">", grow))
		Expect(sync).To(BeNumerically("<", bigBegin))
		// Each graph captured the cache as it was when it was captured: the big one the grown cache.
		small, big := ledgerOf(res, "small", "kv"), ledgerOf(res, "big", "kv")
		Expect(big.Generation).NotTo(Equal(small.Generation))
		Expect(big.Range.Bytes).To(Equal(int64(64 << 10)))
		Expect(small.Range.Bytes).To(Equal(int64(16 << 10)))
		// The small graph's replays write the cache's old block.
		Expect(res.Stale).NotTo(BeEmpty())
		Expect(res.Stale[0].Capture).To(Equal("small"))
		Expect(res.Stale[0].Buffer).To(Equal("kv"))
	})

	It("differs from the same ops in the sections, where the grow comes after both captures (negative control)", func() {
		res := runOn(dev, kvProbe("plain", growAfter), device.Global, 2)
		small, big := ledgerOf(res, "small", "kv"), ledgerOf(res, "big", "kv")
		Expect(big.Generation).To(Equal(small.Generation))
		Expect(big.Range.Bytes).To(Equal(int64(16 << 10)))
		Expect(seqOf(res, "between op 1")).To(BeNumerically(">", seqOf(res, "capture big end")))
	})

	It("names the eager entry's step in a refusal", func() {
		res := runInstance(dev, kvProbe("retained", growBetween), device.Global, true, 2)
		Expect(res.Outcome).To(Equal(probes.Refused), res.Reason)
		Expect(res.Refusal).NotTo(BeNil())
		Expect(res.Refusal.Step.String()).To(Equal("phase 2 op 1"))
		// Refused before anything was freed: the big graph is captured over the cache as it was.
		Expect(ledgerOf(res, "big", "kv").Generation).To(Equal(ledgerOf(res, "small", "kv").Generation))
		Expect(res.Stale).To(BeEmpty())
	})

	It("refuses the small graph's replay when the plain cache re-based", func() {
		res := runInstance(dev, kvProbe("plain", growBetween), device.Global, true, 2)
		Expect(res.Outcome).To(Equal(probes.Refused), res.Reason)
		Expect(res.Refusal.Step.String()).To(Equal("replay 1 small"))
	})
})
