package capture_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/verdict"
)

const header = "version: replaycheck/v1\nset: t\nprobes:\n"

// leakyDevice forgets to free: every Free reports success and does nothing.
type leakyDevice struct{ device.Device }

func (d leakyDevice) Free(device.Thread, device.Ptr) error { return nil }

// panickyDevice panics on the first launch.
type panickyDevice struct{ device.Device }

func (d panickyDevice) Launch(device.Thread, device.Graph, device.Stream) error {
	panic("launch exploded")
}

// slowDevice sleeps in every SyncDevice.
type slowDevice struct{ device.Device }

func (d slowDevice) SyncDevice(t device.Thread) error {
	time.Sleep(20 * time.Millisecond)
	return d.Device.SyncDevice(t)
}

// blindDevice cannot report a stream's capture state once a capture began: CaptureInfo fails for
// every stream while one is capturing.
type blindDevice struct {
	device.Device
	capturing bool
}

func (d *blindDevice) BeginCapture(t device.Thread, s device.Stream, m device.CaptureMode) error {
	d.capturing = true
	return d.Device.BeginCapture(t, s, m)
}

func (d *blindDevice) EndCapture(t device.Thread, s device.Stream) (device.Graph, error) {
	d.capturing = false
	return d.Device.EndCapture(t, s)
}

func (d *blindDevice) CaptureInfo(t device.Thread, s device.Stream) (device.CaptureInfo, error) {
	if d.capturing {
		return device.CaptureInfo{}, &device.Error{Backend: "blind", Op: "CaptureInfo", Class: device.ClassDeviceLost}
	}
	return d.Device.CaptureInfo(t, s)
}

// brokenDevice fails reads with an error that is not a device error.
type brokenDevice struct{ device.Device }

func (d brokenDevice) Fill(device.Thread, device.Stream, device.Ptr, byte) error {
	return errors.New("transport closed")
}

const simple = header + `
  - name: p
    hazard: none
    buffers:
      a: {bytes: 4KiB, init: iota8}
      b: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - copy: {dst: b, src: a}
    expect: {guarded: exact, unguarded: exact}
`

var _ = Describe("Run", func() {
	var dev device.Device
	BeforeEach(func() {
		dev = openSim("cann")
		DeferCleanup(func() { Expect(dev.Close()).To(Succeed()) })
	})

	It("classifies a correct replay as exact, with a timeline that shows what was captured", func() {
		res := runOn(dev, parseProbe(simple), device.Global, 5)
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(res.Rounds).To(Equal(5))
		Expect(res.Reason).To(ContainSubstring("5 of 5 rounds"))
		var captured []capture.Event
		for _, ev := range res.Timeline.Events() {
			if ev.Captured {
				captured = append(captured, ev)
			}
		}
		Expect(captured).To(HaveLen(1))
		Expect(captured[0].Call).To(HavePrefix("Copy(b "))
		Expect(res.Ledger).To(HaveLen(2))
		v, _ := judge(res, nil)
		Expect(v).To(Equal(verdict.Pass))
	})

	It("ends an instance given no runtime under test in error, touching the device not at all", func() {
		before := dev.Counters()
		res := capture.Run(ctx(), dev, probes.Instance{Probe: parseProbe(simple), Mode: device.Global, Replays: 1}, capture.Options{})
		Expect(res.Outcome).To(Equal(probes.Errored))
		Expect(res.Error).To(HaveField("Kind", capture.ErrHarness))
		Expect(res.Reason).To(Equal("no runtime under test (capture.Options.Runtime is nil)"))
		Expect(dev.Counters()).To(Equal(before))
	})

	It("leaves no device object behind", func() {
		before := dev.Counters()
		runOn(dev, parseProbe(simple), device.Relaxed, 2)
		Expect(dev.Counters().Leaks(before)).To(BeEmpty())
	})

	It("reports the first differing ranges and who owns a stale captured range", func() {
		res := runOn(dev, parseProbe(header+`
  - name: p
    hazard: rebase
    buffers:
      src: {bytes: 4KiB, init: fill:0x01}
      dst: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - copy: {dst: dst, src: src}
    between:
      - grow: {buffer: dst, bytes: 8KiB}
      - alloc: {buffer: bystander, bytes: 4KiB, init: fill:0xEE}
    expect: {guarded: refused, unguarded: corrupted}
`), device.Global, 3)
		Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
		Expect(res.FirstCorrupted).To(Equal(1))
		Expect(res.CorruptedRounds).To(Equal(3))
		Expect(res.Mismatches).To(ContainElements(
			SatisfyAll(HaveField("Buffer", "dst"), HaveField("Offset", int64(0)), HaveField("Length", int64(4096)),
				HaveField("Want", HaveLen(capture.MaxShownBytes)), HaveField("Got", HaveEach(byte(0)))),
			SatisfyAll(HaveField("Buffer", "bystander"), HaveField("Length", int64(4096)),
				HaveField("Want", HaveEach(byte(0xEE))), HaveField("Got", HaveEach(byte(0x01)))),
		))
		Expect(res.Stale).To(ConsistOf(SatisfyAll(
			HaveField("Buffer", "dst"), HaveField("Owners", ConsistOf("bystander")))))
		Expect(res.Reason).To(ContainSubstring("now buffer bystander"))
	})

	DescribeTable("names the first stale ranges in its reason and counts the rest, which the result lists",
		func(bystanders bool, outcome probes.Outcome) {
			// Six buffers captured, then each grown (freed and allocated again) between: six stale
			// ranges. Without bystanders the freed memory stays free and the platform rejects the
			// launch; with them it is live again and the replay writes into it.
			var bufs, ops, between strings.Builder
			for i := range 6 {
				fmt.Fprintf(&bufs, "      b%d: {bytes: 4KiB}\n", i)
				fmt.Fprintf(&ops, "        - fill: {dst: b%d, value: 0x5A}\n", i)
				fmt.Fprintf(&between, "      - grow: {buffer: b%d, bytes: 8KiB}\n", i)
			}
			if bystanders {
				for i := range 6 {
					fmt.Fprintf(&between, "      - alloc: {buffer: by%d, bytes: 4KiB, init: fill:0xEE}\n", i)
				}
			}
			res := runOn(dev, parseProbe(header+`
  - name: p
    hazard: rebase
    buffers:
`+bufs.String()+`    streams: [main]
    capture:
      ops:
`+ops.String()+`    between:
`+between.String()+`    expect: {guarded: refused, unguarded: corrupted}
`), device.Global, 2)
			Expect(res.Outcome).To(Equal(outcome), res.Reason)
			Expect(res.Stale).To(HaveLen(6))
			Expect(strings.Count(res.Reason, "; graph ")).To(Equal(3), res.Reason)
			Expect(res.Reason).To(ContainSubstring("; and 3 more stale ranges (the result's stale list has every one)"))
		},
		Entry("rejected: the memory is free", false, probes.Rejected),
		Entry("corrupted: the memory is another buffer's", true, probes.Corrupted),
	)

	It("counts every differing range and byte of a buffer beyond the mismatches it keeps", func() {
		// Twenty 4-byte fills 64 bytes apart, replayed after a grow into dst's old address, which a
		// bystander holds now: the oracle has them in the new dst, the device in the bystander. Each
		// differs in twenty ranges, 80 bytes; the result keeps MaxMismatches ranges in all.
		var ops strings.Builder
		for i := range 20 {
			fmt.Fprintf(&ops, "        - fill: {dst: dst, value: 0x5A, offset: %d, bytes: 4}\n", i*64)
		}
		res := runOn(dev, parseProbe(header+`
  - name: p
    hazard: rebase
    buffers:
      dst: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
`+ops.String()+`    between:
      - grow: {buffer: dst, bytes: 8KiB}
      - alloc: {buffer: bystander, bytes: 4KiB, init: fill:0xEE}
    expect: {guarded: refused, unguarded: corrupted}
`), device.Global, 2)
		Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
		Expect(res.Mismatches).To(HaveLen(capture.MaxMismatches))
		for i, m := range res.Mismatches {
			Expect(m).To(SatisfyAll(HaveField("Buffer", "dst"), HaveField("Offset", int64(i*64)), HaveField("Length", int64(4))))
		}
		Expect(res.Differences).To(ConsistOf(
			capture.Difference{Round: 1, Buffer: "dst", Ranges: 20, Bytes: 80, BufferBytes: 8192},
			capture.Difference{Round: 1, Buffer: "bystander", Ranges: 20, Bytes: 80, BufferBytes: 4096}))
	})

	It("skips ops naming a buffer whose allocation failed, and records the rejection", func() {
		b, err := sim.New(sim.Options{Profile: "cann", Memory: 1 << 20})
		Expect(err).NotTo(HaveOccurred())
		small, err := b.Open(context.Background(), 0)
		Expect(err).NotTo(HaveOccurred())
		defer small.Close()
		res := runOn(small, parseProbe(header+`
  - name: p
    hazard: none
    buffers:
      a: {bytes: 4KiB}
    streams: [main]
    prepare:
      - alloc: {buffer: huge, bytes: 2MiB}
      - fill: {dst: huge, value: 1}
    capture:
      ops:
        - fill: {dst: a, value: 1}
    check: [a]
    expect: {guarded: exact}
`), device.Global, 1)
		Expect(res.Outcome).To(Equal(probes.Rejected), res.Reason)
		Expect(res.Rejection.Class).To(Equal(device.ClassOutOfMemory))
		Expect(res.Rejection.Step.String()).To(Equal("prepare op 1"))
		Expect(stepNames(res.Skipped)).To(ConsistOf("prepare op 2"))
	})

	It("skips every op of a capture whose begin was rejected, and the ops after it naming a buffer it was to allocate", func() {
		res := runOn(dev, parseProbe(header+`
  - name: p
    hazard: none
    buffers: {a: {bytes: 8}}
    streams: [main]
    capture: {stream: default, ops: [alloc: {buffer: t, bytes: 8}, fill: {dst: a, value: 0x3A}]}
    between: [fill: {dst: t, value: 1}, free: {buffer: t}]
    expect: {guarded: rejected}
`), device.Global, 1)
		Expect(res.Outcome).To(Equal(probes.Rejected), res.Reason)
		Expect(res.Error).To(BeNil())
		Expect(res.Rejection.Step.String()).To(Equal("capture main begin"))
		Expect(stepNames(res.Skipped)).To(ConsistOf("capture main op 1", "capture main op 2", "between op 1", "between op 2"))
	})

	It("is rejected, not corrupted, when the platform rejects a call and no byte differs", func() {
		res := runOn(dev, parseProbe(header+`
  - name: p
    hazard: sync-in-capture
    buffers:
      a: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - fill: {dst: a, value: 9}
        - sync: {}
    expect: {guarded: rejected, unguarded: rejected, rejected-by: [captured-stream]}
`), device.Global, 4)
		Expect(res.Outcome).To(Equal(probes.Rejected), res.Reason)
		Expect(res.Rejection).NotTo(BeNil())
		Expect(res.Rejection.Step.String()).To(Equal("capture main op 2"))
		Expect(res.Rejection.Code).To(Equal(107027))
		Expect(res.Rejection.Class).To(Equal(device.ClassCapturedStream))
		Expect(res.Rejection.Invalidated).To(BeFalse())
		Expect(res.Rejection.ReplaysExact).To(HaveValue(BeTrue()))
		v, why := judge(res, nil)
		Expect(v).To(Equal(verdict.Pass), why)
	})

	It("says a rejected end made no graph, and claims no replays of it", func() {
		res := runOn(dev, parseProbe(header+`
  - name: p
    hazard: dangling-fork
    buffers:
      a: {bytes: 4KiB}
    streams: [main, side]
    events: [e]
    capture:
      ops:
        - fill: {dst: a, value: 9}
        - record: {event: e}
        - wait: {stream: side, event: e}
        - fill: {dst: a, value: 7, stream: side}
    expect: {guarded: rejected, unguarded: rejected}
`), device.Global, 3)
		Expect(res.Outcome).To(Equal(probes.Rejected), res.Reason)
		Expect(res.Rejection.Op).To(Equal("EndCapture"))
		Expect(res.Rejection.EndedCapture()).To(BeTrue())
		Expect(res.Rejection.ReplaysExact).To(BeNil(), "no graph: nothing of it replayed")
		Expect(res.Reason).To(HaveSuffix(", no graph"))
	})

	It("fails the verdict when the rejection has a class the probe did not expect", func() {
		res := runOn(dev, parseProbe(header+`
  - name: p
    hazard: sync-in-capture
    buffers:
      a: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - sync-device: {}
    expect: {guarded: rejected, unguarded: rejected, rejected-by: [wrong-thread]}
`), device.Global, 1)
		Expect(res.Outcome).To(Equal(probes.Rejected))
		v, why := judge(res, nil)
		Expect(v).To(Equal(verdict.Fail))
		Expect(why).To(ContainSubstring("not one of the expected rejected-by classes"))
	})

	It("drops the graph of an invalidated capture (cuda profile)", func() {
		cuda := openSim("cuda")
		defer cuda.Close()
		res := runOn(cuda, parseProbe(header+`
  - name: p
    hazard: sync-in-capture
    buffers:
      a: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - fill: {dst: a, value: 9}
        - sync: {}
        - fill: {dst: a, value: 10}
    expect: {guarded: rejected, unguarded: rejected}
`), device.Global, 2)
		Expect(res.Outcome).To(Equal(probes.Rejected), res.Reason)
		Expect(res.Rejection.Invalidated).To(BeTrue())
		Expect(res.Rejection.Code).To(Equal(900))
		// The end of capture failed too: no graph, nothing launched.
		for _, ev := range res.Timeline.Events() {
			Expect(ev.Call).NotTo(HavePrefix("Launch"))
		}
	})

	It("ends a probe that leaks device objects in error", func() {
		res := runOn(leakyDevice{dev}, parseProbe(simple), device.Global, 1)
		Expect(res.Outcome).To(Equal(probes.Errored))
		Expect(res.Reason).To(ContainSubstring("leaked"))
		Expect(res.Leaks).NotTo(BeEmpty())
		Expect(res.Error).To(HaveField("Kind", capture.ErrLeak))
	})

	It("turns a panicking device into an error outcome", func() {
		res := runOn(panickyDevice{dev}, parseProbe(simple), device.Global, 1)
		Expect(res.Outcome).To(Equal(probes.Errored))
		Expect(res.Reason).To(ContainSubstring("launch exploded"))
		Expect(res.Error).To(HaveField("Kind", capture.ErrHarness))
	})

	It("turns an error that is not a device error into an error outcome", func() {
		res := runOn(brokenDevice{dev}, parseProbe(header+`
  - name: p
    hazard: none
    buffers:
      a: {bytes: 4KiB}
    streams: [main]
    prepare:
      - fill: {dst: a, value: 1}
    capture:
      ops: []
    expect: {guarded: exact}
`), device.Global, 1)
		Expect(res.Outcome).To(Equal(probes.Errored))
		Expect(res.Reason).To(ContainSubstring("transport closed"))
	})

	It("stops at the time limit", func() {
		res := capture.Run(context.Background(), slowDevice{dev},
			probes.Instance{Probe: parseProbe(simple), Mode: device.Global, Replays: 1000},
			capture.Options{Runtime: builtin, Timeout: 100 * time.Millisecond})
		Expect(res.Outcome).To(Equal(probes.Errored))
		Expect(res.Reason).To(ContainSubstring("deadline"))
		Expect(res.Error).To(HaveField("Kind", capture.ErrTimeout))
	})

	It("calls a cancelled run interrupted, not timed out", func() {
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		res := capture.Run(cancelled, dev, probes.Instance{Probe: parseProbe(simple), Mode: device.Global, Replays: 1}, capture.Options{Runtime: builtin})
		Expect(res.Outcome).To(Equal(probes.Errored))
		Expect(res.Error).To(HaveField("Kind", capture.ErrInterrupted))
	})

	It("ends a run whose device cannot say what a stream captures in error, never as eager work", func() {
		res := runOn(&blindDevice{Device: dev}, parseProbe(simple), device.Global, 1)
		Expect(res.Outcome).To(Equal(probes.Errored), res.Reason)
		// The device's answer is device-lost: the instance ends saying so, and no later call is
		// believed.
		Expect(res.Error).To(HaveField("Kind", capture.ErrDeviceLost))
		Expect(res.DeviceState).To(Equal(capture.DeviceLost))
		Expect(res.Reason).To(ContainSubstring("CaptureInfo"))
		Expect(res.Reason).To(ContainSubstring("device-lost"), "the device's own error is kept")
		Expect(res.Timeline.Events()).NotTo(ContainElement(HaveField("Eager", true)))
	})

	It("skips an instance whose probe needs a capability the backend lacks", func() {
		p := parseProbe(simple)
		p.Requires = []string{"no-such-capability"}
		res := runOn(dev, p, device.Global, 1)
		Expect(res.Outcome).To(Equal(probes.Skipped))
		v, _ := judge(res, nil)
		Expect(v).To(Equal(verdict.Skip))
	})

	It("runs guarded instances behind the kernel-mode guards and checks the refusal changed nothing", func() {
		res := capture.Run(context.Background(), dev, probes.Instance{Probe: parseProbe(header + `
  - name: p
    hazard: rebase
    buffers:
      src: {bytes: 4KiB, init: fill:0x01}
      dst: {bytes: 4KiB, slot: retained}
    streams: [main]
    capture:
      ops:
        - copy: {dst: dst, src: src}
    between:
      - grow: {buffer: dst, bytes: 8KiB}
      - alloc: {buffer: bystander, bytes: 4KiB, init: fill:0xEE}
    expect: {guarded: refused, unguarded: corrupted}
`), Mode: device.Global, Guarded: true, Replays: 2}, capture.Options{Runtime: builtin})
		Expect(res.Outcome).To(Equal(probes.Refused), res.Reason)
		Expect(res.Refusal).NotTo(BeNil())
		Expect(res.Refusal.Step.String()).To(Equal("between op 1"))
		Expect(res.Refusal.Detail).To(ContainSubstring("retained slot"))
		Expect(res.Refusal.Checked).To(ConsistOf(
			capture.SideEffectCheck{What: "device counters (allocations, host allocations, streams, events, graphs, launches, captures)", Held: true},
			capture.SideEffectCheck{What: "slots", Held: true},
			capture.SideEffectCheck{What: "buffer addresses and sizes", Held: true},
		))
		Expect(res.Rounds).To(Equal(2))
		v, why := judge(res, nil)
		Expect(v).To(Equal(verdict.Pass), why)
	})
})
