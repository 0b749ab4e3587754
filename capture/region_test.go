package capture_test

import (
	"bytes"
	"context"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/verdict"
)

// crossCaptureWait is two captures in progress at once, the second waiting on an event the first
// recorded; after both ends the first capture's buffer is freed and taken by another, so a graph
// of it would replay over memory it no longer owns.
const crossCaptureWait = `
version: replaycheck/v1
set: t
probes:
  - name: cross-wait
    hazard: capture-conflict
    buffers:
      a: {bytes: 4KiB}
      b: {bytes: 4KiB}
    streams: [s1, s2]
    events: [e]
    phases:
      - begin: {name: first, stream: s1}
      - begin: {name: second, stream: s2}
      - ops:
          - fill: {dst: a, value: 0x11, stream: s1}
          - record: {event: e, stream: s1}
          - wait: {event: e, stream: s2}
          - fill: {dst: b, value: 0x22, stream: s2}
      - end: first
      - end: second
      - eager:
          - free: {buffer: a}
          - alloc: {buffer: bystander, bytes: 4KiB, init: "fill:0xEE"}
    expect: {guarded: rejected, rejected-by: [capture-conflict], unguarded: rejected}
`

// twoOpen is two captures in progress at once, each with its own work, ended in the order begun.
const twoOpen = `
version: replaycheck/v1
set: t
probes:
  - name: two-open
    hazard: none
    buffers:
      a: {bytes: 4KiB}
      b: {bytes: 4KiB, init: iota32}
      c: {bytes: 4KiB}
    streams: [s1, s2]
    phases:
      - begin: {name: first, stream: s1}
      - begin: {name: second, stream: s2}
      - ops:
          - fill: {dst: a, value: 0x11, stream: s1}
          - copy: {dst: c, src: b, stream: s2}
          - axpy: {y: a, x: b, a: 3, stream: s1}
      - end: first
      - end: second
    expect: {guarded: exact, unguarded: exact}
`

// openSimProfile opens a simulated device whose profile is the embedded one with edit applied to
// its text; the caller closes it.
func openSimProfile(profile string, edit func([]byte) []byte) device.Device {
	data, err := os.ReadFile("../device/sim/profiles/" + profile + ".yaml")
	Expect(err).NotTo(HaveOccurred())
	b, err := sim.New(sim.Options{Profile: profile, ProfileYAML: edit(data)})
	Expect(err).NotTo(HaveOccurred())
	dev, err := b.Open(context.Background(), 0)
	Expect(err).NotTo(HaveOccurred())
	return dev
}

// stepEvent is the last event of res's timeline at step.
func stepEvent(res *capture.Result, step string) capture.Event {
	GinkgoHelper()
	var found *capture.Event
	for _, ev := range res.Timeline.Events() {
		if ev.Step != nil && ev.Step.String() == step {
			found = &ev
		}
	}
	Expect(found).NotTo(BeNil(), "no event at "+step)
	return *found
}

var _ = Describe("captures left open", func() {
	It("captures each op into the capture its stream belongs to, and replays both graphs", func() {
		for _, profile := range []string{"cann", "cuda"} {
			dev := openSim(profile)
			DeferCleanup(dev.Close)
			p := parseProbe(twoOpen)
			// RELAXED: CUDA refuses the instantiation of a capture ended during another
			// GLOBAL or THREAD_LOCAL one of the same thread.
			res := runOn(dev, p, device.Relaxed, 2)
			Expect(res.Outcome).To(Equal(probes.Exact), profile+": "+res.Reason)
			Expect(res.Graphs).To(HaveLen(2))
			for _, g := range res.Graphs {
				want := map[string]int{"first": 2, "second": 1}[g.Capture]
				Expect(g.Issued).To(Equal(want), g.Capture)
			}
			// Interleaved as issued, each entry in its capture's ledger.
			Expect(seqOf(res, "capture second op 1")).To(BeNumerically("<", seqOf(res, "capture first op 2")))
			Expect(ledgerOf(res, "first", "a").Access).To(Equal(capture.AccessWrite.With(capture.AccessRead)))
			Expect(ledgerOf(res, "second", "c").Access).To(Equal(capture.AccessWrite))
			Expect(stepEvent(res, "capture second op 1").Captured).To(BeTrue())
			Expect(stepEvent(res, "capture first op 2").Captured).To(BeTrue())
			// In GLOBAL mode CUDA refuses the first end (900: the thread's other capture is in
			// progress) and invalidates the second; CANN has no such rule.
			res = runOn(dev, p, device.Global, 2)
			if profile == "cuda" {
				Expect(res.Outcome).To(Equal(probes.Rejected), res.Reason)
				Expect(res.Rejection.Step.String()).To(Equal("capture first end"))
				Expect(res.Rejection.Code).To(Equal(900))
				Expect(stepEvent(res, "capture second end").Err).NotTo(BeEmpty())
			} else {
				Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
			}
		}
	})

	It("judges a wait across two captures rejected at the wait, with both ends failing", func() {
		for _, c := range []struct {
			profile string
			code    int
		}{{"cann", 107032}, {"cuda", 902}} {
			dev := openSim(c.profile)
			DeferCleanup(dev.Close)
			for _, guarded := range []bool{false, true} {
				res := runInstance(dev, parseProbe(crossCaptureWait), device.Global, guarded, 2)
				Expect(res.Outcome).To(Equal(probes.Rejected), c.profile+": "+res.Reason)
				Expect(res.Rejection.Step.String()).To(Equal("capture second op 1"))
				Expect(res.Rejection.Code).To(Equal(c.code))
				Expect(res.Rejection.Class).To(Equal(device.Class("capture-conflict")))
				Expect(res.Rejection.Invalidated).To(BeTrue())
				Expect(stepEvent(res, "capture first end").Err).NotTo(BeEmpty(), "the first capture is invalidated too")
				Expect(stepEvent(res, "capture second end").Err).NotTo(BeEmpty())
				Expect(res.Stale).To(BeEmpty())
				st, why := judge(res, nil)
				Expect(st).To(Equal(verdict.Pass), why)
			}
		}
	})

	It("fails the wait's verdict when the simulator invalidates no capture (negative control)", func() {
		for _, profile := range []string{"cann", "cuda"} {
			dev := openSimProfile(profile, func(data []byte) []byte {
				// The cross-capture wait's rule: its invalidates line removed.
				i := bytes.Index(data, []byte("when: event-in-other-capture"))
				Expect(i).To(BeNumerically(">", 0))
				j := i + bytes.Index(data[i:], []byte("invalidates: true"))
				return append(append([]byte{}, data[:j]...), data[j+len("invalidates: true"):]...)
			})
			DeferCleanup(dev.Close)
			// RELAXED: CUDA then lets the first end through with the second capture in progress.
			res := runOn(dev, parseProbe(crossCaptureWait), device.Relaxed, 2)
			// The first capture's end now makes a graph, whose replay runs over the freed buffer.
			Expect(stepEvent(res, "capture first end").Err).To(BeEmpty(), profile)
			Expect(res.Outcome).To(Equal(probes.Corrupted), profile+": "+res.Reason)
			st, _ := judge(res, nil)
			Expect(st).To(Equal(verdict.Fail))
		}
	})

	It("records an event last recorded in another capture as the cann profile says", func() {
		dev := openSim("cann")
		DeferCleanup(dev.Close)
		p := parseProbe(`
version: replaycheck/v1
set: t
probes:
  - name: cross-record
    hazard: capture-conflict
    buffers: {a: {bytes: 4KiB}, b: {bytes: 4KiB}}
    streams: [s1, s2]
    events: [e]
    phases:
      - begin: {name: first, stream: s1}
      - begin: {name: second, stream: s2}
      - ops:
          - fill: {dst: a, value: 1, stream: s1}
          - record: {event: e, stream: s1}
          - record: {event: e, stream: s2}
          - fill: {dst: b, value: 2, stream: s2}
      - end: first
      - end: second
    expect: {guarded: exact, unguarded: exact}
`)
		res := runOn(dev, p, device.Global, 2)
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(res.Graphs).To(HaveLen(2))
	})
})
