package capture_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/probes"
)

func runGuarded(dev device.Device, p *probes.Probe, mode device.CaptureMode, guarded bool) *capture.Result {
	return runInstance(dev, p, mode, guarded, 2)
}

// The mechanisms field incidents used, end to end through the engine.
var _ = Describe("pooled allocations", func() {
	const poolInCapture = `version: replaycheck/v1
set: t
probes:
  - name: pool-scratch-in-capture
    hazard: alloc-in-capture
    pools:
      cache: {bytes: 64KiB}
    buffers:
      out: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - alloc: {buffer: scratch, bytes: 4KiB, pool: cache}
        - fill: {dst: scratch, value: 0x77}
        - copy: {dst: out, src: scratch}
    between:
      - free: {buffer: scratch}
      - alloc: {buffer: bystander, bytes: 4KiB, pool: cache, init: fill:0x55}
    expect: {guarded: refused, unguarded: corrupted}
`
	for _, profile := range []string{"cann", "cuda"} {
		It("served inside a capture make no driver call: silent on "+profile+", where a driver malloc is not", func() {
			dev := openSim(profile)
			defer dev.Close()
			res := runGuarded(dev, parseProbe(poolInCapture), device.Global, false)
			Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
			Expect(res.Rejection).To(BeNil())
			Expect(res.Stale).To(ContainElement(SatisfyAll(
				HaveField("Buffer", "scratch"), HaveField("Owners", ConsistOf("bystander")), HaveField("Ran", BeTrue()))))
			Expect(res.Mismatches).To(ContainElement(HaveField("Buffer", "bystander")))

			res = runGuarded(dev, parseProbe(poolInCapture), device.Global, true)
			Expect(res.Outcome).To(Equal(probes.Refused), res.Reason)
			Expect(res.Refusal.Op).To(Equal("PoolAlloc"))
		})
	}

	It("too fragmented for a request end the instance in a setup error naming the pool, not a harness one", func() {
		dev := openSim("cann")
		defer dev.Close()
		p := parseProbe(`version: replaycheck/v1
set: t
probes:
  - name: fragmented
    hazard: none
    pools:
      small: {bytes: 2KiB}
    buffers:
      a: {bytes: 512, pool: small}
      b: {bytes: 1, pool: small}
      c: {bytes: 512, pool: small}
    streams: [main]
    prepare:
      - free: {buffer: b}
      - alloc: {buffer: d, bytes: 1KiB, pool: small}
    capture:
      ops:
        - fill: {dst: a, value: 1}
    expect: {guarded: exact}
`)
		for _, guarded := range []bool{false, true} {
			res := runGuarded(dev, p, device.Global, guarded)
			Expect(res.Outcome).To(Equal(probes.Errored), res.Reason)
			Expect(res.Error.Kind).To(Equal(capture.ErrSetup), res.Reason)
			Expect(res.Error.Message).To(ContainSubstring("the largest free block has 512"))
		}
	})

	It("freed back to the pool and never handed out again are stale: corrupted although no byte differs", func() {
		dev := openSim("cuda")
		defer dev.Close()
		p := parseProbe(`version: replaycheck/v1
set: t
probes:
  - name: freed-block
    hazard: pool-reuse
    pools:
      cache: {bytes: 64KiB}
    buffers:
      src: {bytes: 4KiB, init: iota8}
      tmp: {bytes: 4KiB, pool: cache}
      out: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - copy: {dst: tmp, src: src}
        - copy: {dst: out, src: tmp}
    between:
      - free: {buffer: tmp}
    expect: {guarded: refused, unguarded: corrupted}
`)
		res := runGuarded(dev, p, device.Global, false)
		Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
		Expect(res.CorruptedRounds).To(BeZero(), "every checked byte is right")
		Expect(res.Reason).To(ContainSubstring("no checked byte differs, but replay round 1 of graph main used stale memory: it reads and writes tmp"))
		Expect(res.Stale).To(ConsistOf(SatisfyAll(HaveField("Buffer", "tmp"), HaveField("Access", capture.Access(capture.AccessReadWrite)),
			HaveField("Round", 1), HaveField("Now", ContainSubstring("free")))))

		res = runGuarded(dev, p, device.Global, true)
		Expect(res.Outcome).To(Equal(probes.Refused), res.Reason)
		Expect(res.Refusal.Detail).To(ContainSubstring(`free space of pool "cache"`))
		Expect(res.Stale).To(BeEmpty(), "a refused replay touches nothing")
	})
})

var _ = Describe("host memory", func() {
	It("a captured copy reads a pinned staging buffer that was freed and handed to another", func() {
		dev := openSim("cuda")
		defer dev.Close()
		p := parseProbe(`version: replaycheck/v1
set: t
probes:
  - name: staging-reused
    hazard: host-staging
    buffers:
      stage: {bytes: 4KiB, host: pinned, init: iota8}
      weights: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - copy: {dst: weights, src: stage}
    between:
      - free: {buffer: stage}
      - alloc: {buffer: logits, bytes: 4KiB, host: pinned, init: fill:0xEE}
    expect: {guarded: refused, unguarded: corrupted}
`)
		res := runGuarded(dev, p, device.Global, false)
		Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
		Expect(res.Mismatches).To(ContainElement(HaveField("Buffer", "weights")))
		Expect(res.Stale).To(ContainElement(SatisfyAll(HaveField("Buffer", "stage"), HaveField("Owners", ConsistOf("logits")))))
		res = runGuarded(dev, p, device.Global, true)
		Expect(res.Outcome).To(Equal(probes.Refused), res.Reason)
		Expect(res.Refusal.Op).To(Equal("Launch"))
	})

	It("holds host work done during a capture to the probe's intent: replayed, or once", func() {
		dev := openSim("cann")
		defer dev.Close()
		text := func(intent string) string {
			return `version: replaycheck/v1
set: t
probes:
  - name: host-update
    hazard: host-work-in-capture
    buffers:
      step: {bytes: 4KiB, host: pinned, init: zero}
      acc: {bytes: 4KiB, init: zero}
    streams: [main]
    capture:
      ops:
        - write: {dst: step, value: fill:0x01` + intent + `}
        - copy: {dst: acc, src: step}
    replay:
      each:
        - write: {dst: step, value: fill:0x09}
    expect: {guarded: exact, unguarded: exact}
`
		}
		res := runGuarded(dev, parseProbe(text("")), device.Global, false)
		Expect(res.Outcome).To(Equal(probes.Exact), "by default a host write applies once: %s", res.Reason)
		res = runGuarded(dev, parseProbe(text(", intent: replay")), device.Global, false)
		Expect(res.Outcome).To(Equal(probes.Corrupted), "meant for every replay, it ran once at capture: %s", res.Reason)
		Expect(res.Mismatches).To(ContainElements(HaveField("Buffer", "acc"), HaveField("Buffer", "step")))
	})
})

var _ = Describe("thread capture modes", func() {
	const relaxedOther = `version: replaycheck/v1
set: t
probes:
  - name: relaxed-helper
    hazard: unsafe-call
    modes: [global]
    buffers:
      a: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - fill: {dst: a, value: 0x31}
        - exchange-mode: {mode: relaxed, thread: other}
        - alloc: {buffer: registered, bytes: 4KiB, thread: other}
    between:
      - free: {buffer: registered}
    expect: {guarded: refused, unguarded: exact}
`
	It("an exchange to relaxed lets another thread allocate during a global capture, and teardown restores the mode", func() {
		dev := openSim("cuda")
		defer dev.Close()
		res := runGuarded(dev, parseProbe(relaxedOther), device.Global, false)
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(res.Timeline.Events()).To(ContainElement(SatisfyAll(HaveField("Call", "ExchangeCaptureMode(relaxed)"), HaveField("Returned", "global"))))
		old, err := dev.ExchangeCaptureMode(device.Other, device.Global)
		Expect(err).NotTo(HaveOccurred())
		Expect(old).To(Equal(device.Global), "the engine gave the thread its mode back")

		without := parseProbe(relaxedOther)
		without.Captures[0].Ops = append(without.Captures[0].Ops[:1], without.Captures[0].Ops[2:]...)
		res = runGuarded(dev, without, device.Global, false)
		Expect(res.Outcome).To(Equal(probes.Rejected), res.Reason)
		Expect(res.Rejection.Code).To(Equal(900))
	})
})

var _ = Describe("concurrent replays", func() {
	text := func(order string) string {
		return `version: replaycheck/v1
set: t
probes:
  - name: shared-scratch
    hazard: concurrent-replay
    buffers:
      x: {bytes: 4KiB, init: fill:0x11}
      y: {bytes: 4KiB, init: fill:0x22}
      scratch: {bytes: 4KiB}
      out-a: {bytes: 4KiB}
      out-b: {bytes: 4KiB}
    streams: [s1, s2]
    captures:
      - name: a
        stream: s1
        ops:
          - copy: {dst: scratch, src: x}
          - copy: {dst: out-a, src: scratch}
      - name: b
        stream: s2
        ops:
          - copy: {dst: scratch, src: y}
          - copy: {dst: out-b, src: scratch}
    replay:
      order: ` + order + `
    expect: {guarded: refused, unguarded: corrupted}
`
	}
	It("race on shared memory when launched on two streams, and are exact on one", func() {
		dev := openSim("cuda")
		defer dev.Close()
		res := runGuarded(dev, parseProbe(text("[{capture: a, stream: s1}, {capture: b, stream: s2}]")), device.Global, false)
		Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
		Expect(res.Mismatches).To(ConsistOf(HaveField("Buffer", "out-a")))
		res = runGuarded(dev, parseProbe(text("[{capture: a, stream: s1}, {capture: b, stream: s2}]")), device.Global, true)
		Expect(res.Outcome).To(Equal(probes.Refused), res.Reason)
		Expect(res.Refusal.Detail).To(ContainSubstring("concurrent replays would race"))
		res = runGuarded(dev, parseProbe(text("[a, b]")), device.Global, false)
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
	})
})

var _ = Describe("a rejection outside any capture", func() {
	It("says nothing of a capture", func() {
		dev := openSim("cann")
		defer dev.Close()
		dev.(*sim.Device).FailMalloc(2) // the declared buffer takes the first
		res := runGuarded(dev, parseProbe(`version: replaycheck/v1
set: t
probes:
  - name: late-alloc
    hazard: none
    buffers:
      a: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - fill: {dst: a, value: 1}
    between:
      - alloc: {buffer: b, bytes: 4KiB}
    expect: {guarded: exact}
`), device.Global, false)
		Expect(res.Outcome).To(Equal(probes.Rejected), res.Reason)
		Expect(res.Rejection.DuringCapture).To(BeFalse())
		Expect(res.Reason).To(ContainSubstring("platform rejected between op 1"))
		Expect(res.Reason).NotTo(ContainSubstring("invalidated"))
	})
})

var _ = Describe("setup", func() {
	It("a declared buffer that cannot be allocated is an error of the run, not a platform rejection of a step", func() {
		b, err := sim.New(sim.Options{Profile: "cann", Memory: 64 << 10})
		Expect(err).NotTo(HaveOccurred())
		dev, err := b.Open(context.Background(), 0)
		Expect(err).NotTo(HaveOccurred())
		defer dev.Close()
		res := runGuarded(dev, parseProbe(`version: replaycheck/v1
set: t
probes:
  - name: too-big
    hazard: none
    buffers:
      a: {bytes: 1MiB}
    streams: [main]
    capture:
      ops:
        - fill: {dst: a, value: 1}
    expect: {guarded: exact}
`), device.Global, false)
		Expect(res.Outcome).To(Equal(probes.Errored))
		Expect(res.Rejection).To(BeNil())
		Expect(res.Reason).To(ContainSubstring("Provision(plain a, 1048576)"))
		Expect(res.Reason).To(ContainSubstring("out-of-memory"))
		Expect(res.Error).To(SatisfyAll(HaveField("Kind", capture.ErrSetup), HaveField("Step", BeNil())))
	})
})
