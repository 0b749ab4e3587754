package capture_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// Edge paths where an earlier op did not take effect, so later ops cannot run as written.
var _ = Describe("after an op that did not take effect", func() {
	var dev device.Device
	BeforeEach(func() {
		dev = openSim("cann")
		DeferCleanup(dev.Close)
	})
	guarded := func(p *probes.Probe) *capture.Result {
		return capture.Run(context.Background(), dev, probes.Instance{Probe: p, Mode: device.Global, Guarded: true, Replays: 2}, capture.Options{Runtime: builtin})
	}

	It("skips the re-allocation of a buffer whose free was refused, and keeps using the buffer", func() {
		res := guarded(parseProbe(header + `
  - name: p
    hazard: rebase
    buffers:
      src: {bytes: 4KiB, init: iota8}
      dst: {bytes: 4KiB, slot: retained}
    streams: [main]
    capture:
      ops:
        - copy: {dst: dst, src: src}
    between:
      - free: {buffer: dst}
      - alloc: {buffer: dst, bytes: 8KiB, slot: retained}
    replay:
      each:
        - fill: {dst: dst, value: 3, bytes: 16}
    expect: {guarded: refused}
`))
		Expect(res.Outcome).To(Equal(probes.Refused), res.Reason)
		Expect(res.Refusal.Step.String()).To(Equal("between op 1"))
		Expect(stepNames(res.Skipped)).To(Equal([]string{"between op 2"}))
		Expect(res.Rejection).To(BeNil())
	})

	It("skips an op sized for a grow that was refused, instead of ending in error", func() {
		res := guarded(parseProbe(header + `
  - name: p
    hazard: rebase
    buffers:
      src: {bytes: 4KiB, init: iota8}
      dst: {bytes: 4KiB, slot: retained}
    streams: [main]
    capture:
      ops:
        - copy: {dst: dst, src: src}
    between:
      - grow: {buffer: dst, bytes: 8KiB}
      - fill: {dst: dst, value: 7, offset: 4KiB, bytes: 4KiB}
    expect: {guarded: refused}
`))
		Expect(res.Outcome).To(Equal(probes.Refused), res.Reason)
		Expect(stepNames(res.Skipped)).To(Equal([]string{"between op 2"}))
		Expect(res.Timeline.Events()).To(ContainElement(HaveField("Skipped", ContainSubstring("an op that was to resize it (a grow, or a free and an alloc) did not take effect"))))
	})

	It("says an op that ran eagerly ran once, not that replays skip it, when its capture yielded no graph", func() {
		res := runOn(dev, parseProbe(header+`
  - name: p
    hazard: none
    buffers: {a: {bytes: 4}, b: {bytes: 4}}
    streams: [main, side]
    capture: {end-thread: other, ops: [fill: {dst: a, value: 1}, fill: {dst: b, value: 2, stream: side}]}
    expect: {guarded: rejected}
`), device.Global, 2)
		Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
		Expect(res.Reason).To(ContainSubstring("capture main op 2 ran eagerly outside the capture, once, though the capture yielded no graph to run it"))
		Expect(res.Reason).NotTo(ContainSubstring("replays do not repeat it"))

		res = runOn(dev, parseProbe(header+`
  - name: p
    hazard: none
    buffers: {a: {bytes: 4}, b: {bytes: 4}}
    streams: [main, side]
    capture: {ops: [fill: {dst: a, value: 1}, fill: {dst: b, value: 2, stream: side}]}
    between: [fill: {dst: b, value: 0}]
    expect: {guarded: exact}
`), device.Global, 2)
		Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
		Expect(res.Reason).To(ContainSubstring("capture main op 2 ran eagerly outside the capture, so replays do not repeat it"))
	})

	It("ends a guard API misuse in error rather than calling it a platform rejection", func() {
		res := runOn(misusedGuard{dev}, parseProbe(simple), device.Global, 1)
		Expect(res.Outcome).To(Equal(probes.Errored))
		Expect(res.Rejection).To(BeNil())
		Expect(res.Reason).To(ContainSubstring("invalid-state"))
		Expect(res.Error).To(HaveField("Kind", capture.ErrHarness))
	})

	It("stops at the time limit even when there is no graph to launch", func() {
		cuda := openSim("cuda")
		defer cuda.Close()
		start := time.Now()
		res := capture.Run(context.Background(), cuda, probes.Instance{Probe: parseProbe(header + `
  - name: p
    hazard: sync-in-capture
    buffers:
      a: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - sync-device: {}
    expect: {guarded: rejected}
`), Mode: device.Global, Replays: 1000000}, capture.Options{Runtime: builtin, Timeout: 100 * time.Millisecond})
		Expect(res.Outcome).To(Equal(probes.Errored))
		Expect(res.Reason).To(ContainSubstring("deadline"))
		Expect(res.Error).To(HaveField("Kind", capture.ErrTimeout))
		Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second))
	})

	It("blames no stale range on a capture that produced no graph, and names the eager op", func() {
		res := runOn(dev, parseProbe(header+`
  - name: p
    hazard: off-capture
    buffers:
      x: {bytes: 4KiB}
      data: {bytes: 4KiB, init: iota8}
      out: {bytes: 4KiB}
      side-out: {bytes: 4KiB}
    streams: [main, side, other]
    events: [e]
    captures:
      - name: a
        ops:
          - record: {event: e, stream: main}
          - wait: {event: e, stream: side}
          - fill: {dst: x, value: 9, stream: side}
      - name: b
        ops:
          - copy: {dst: out, src: data}
          - fill: {dst: side-out, value: 0x5C, stream: other}
    between:
      - grow: {buffer: x, bytes: 8KiB}
    replay:
      each:
        - fill: {dst: side-out, value: 0, stream: other}
    expect: {guarded: refused}
`), device.Global, 2)
		Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
		Expect(res.Stale).To(BeEmpty())
		Expect(res.Ledger).NotTo(ContainElement(HaveField("Capture", "a")))
		Expect(res.Reason).To(ContainSubstring("capture b op 2 ran eagerly outside the capture"))
	})

	It("makes no device call in a guarded instance that the unguarded one does not (no observer effect)", func() {
		p := parseProbe(header + `
  - name: p
    hazard: none
    buffers:
      src: {bytes: 4KiB, init: iota8}
      dst: {bytes: 4KiB, slot: retained}
    streams: [main, side]
    events: [e]
    prepare:
      - fill: {dst: dst, value: 3, stream: side}
    capture:
      ops:
        - copy: {dst: dst, src: src}
    between:
      - grow: {buffer: dst, bytes: 1KiB}
      - record: {event: e, stream: side}
    expect: {guarded: exact, unguarded: exact}
`)
		counts := func(guarded bool) map[string]int {
			dev := &callCounter{Device: openSim("cann"), calls: map[string]int{}}
			defer dev.Close()
			res := capture.Run(ctx(), dev, probes.Instance{Probe: p, Mode: device.Global, Guarded: guarded, Replays: 2}, capture.Options{Runtime: builtin})
			Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
			return dev.calls
		}
		Expect(counts(true)).To(Equal(counts(false)))
	})
})

// callCounter counts the synchronising and reading calls the engine makes.
type callCounter struct {
	device.Device
	calls map[string]int
}

func (c *callCounter) SyncDevice(t device.Thread) error {
	c.calls["SyncDevice"]++
	return c.Device.SyncDevice(t)
}

func (c *callCounter) SyncStream(t device.Thread, s device.Stream) error {
	c.calls["SyncStream"]++
	return c.Device.SyncStream(t, s)
}

func (c *callCounter) Read(t device.Thread, dst []byte, src device.Ptr) error {
	c.calls["Read"]++
	return c.Device.Read(t, dst, src)
}

// misusedGuard cannot happen with the real engine; it stands for a guard answering invalid-state.
type misusedGuard struct{ device.Device }

func (m misusedGuard) Malloc(t device.Thread, n int64) (device.Ptr, error) {
	return device.Ptr{}, &device.Error{Backend: "guard", Op: "Malloc", Class: device.ClassInvalidState, Detail: "retired"}
}
