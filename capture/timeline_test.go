package capture_test

import (
	"encoding/json"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// A capture's work that took is kept compact and read back as the events it stands for: the same
// calls, steps, flags and places in the order as every other call.
var _ = Describe("The timeline of a capture", func() {
	var dev device.Device
	BeforeEach(func() { dev = openSim("cann") })
	AfterEach(func() { Expect(dev.Close()).To(Succeed()) })

	p := `version: replaycheck/v1
set: timeline
probes:
  - name: mixed
    hazard: none
    buffers:
      a: {bytes: 4KiB, init: zero}
      b: {bytes: 4KiB, init: iota8}
      y: {bytes: 64, init: iota32}
      x: {bytes: 64, init: "fill:1"}
    streams: [main, side]
    events: [fork, join]
    capture:
      stream: main
      ops:
        - fill: {dst: a, value: 3, offset: 64, bytes: 128}
        - fill: {dst: b, value: 1, stream: side}
        - record: {event: fork, stream: main}
        - wait: {event: fork, stream: side}
        - copy: {dst: a, src: b, stream: side, bytes: 256}
        - axpy: {y: y, x: x, a: 7}
        - record: {event: join, stream: side}
        - wait: {event: join, stream: main}
    expect: {guarded: exact, unguarded: exact}
`

	It("keeps the work compact and reads each call back in its place, with its text, step and flags", func() {
		probe := parseProbe(p)
		res := runOn(dev, probe, device.Relaxed, 2)
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(capture.CompactCalls(res.Timeline)).To(Equal(4), "the fills, the copy and the axpy")

		events := res.Timeline.Events()
		Expect(events).To(HaveLen(res.Timeline.Len()))
		for i, ev := range events {
			Expect(ev.Seq).To(Equal(i+1), "event %d of %d out of order: %+v", i, len(events), ev)
		}
		ranges := map[string]device.Ptr{}
		for _, l := range res.Ledger {
			ranges[l.Buffer] = l.Range
		}
		ops := probe.Captures[0].Ops
		var capture0 []capture.Event
		for _, ev := range events {
			if ev.Phase == capture.PhaseCapture && ev.Step != nil && ev.Step.Point == probes.StepOp {
				capture0 = append(capture0, ev)
			}
		}
		Expect(capture0).To(HaveLen(len(ops)))
		// The fill on side before the wait ran eagerly: side joins the capture at the wait. Records
		// and waits are stream work too, recorded in full.
		flags := []string{"captured", "eager", "captured", "captured", "captured", "captured", "captured", "captured"}
		for i, ev := range capture0 {
			Expect(ev.Step.Index).To(Equal(i))
			Expect(ev.Step.Capture).To(Equal(probe.Captures[0].Name))
			Expect(ev.Thread).To(Equal(ops[i].Thread))
			Expect(ev.Captured).To(Equal(flags[i] == "captured"), "%s", ev.Call)
			Expect(ev.Eager).To(Equal(flags[i] == "eager"), "%s", ev.Call)
		}
		a, b := ranges["a"], ranges["b"]
		Expect(capture0[0].Call).To(Equal(capture.DescribeKernel(ops[0], a.Slice(64, 128), device.Ptr{})))
		Expect(capture0[0].Call).To(Equal(fmt.Sprintf("Fill(a %v, 0x03) on main", a.Slice(64, 128))))
		Expect(capture0[1].Call).To(Equal(fmt.Sprintf("Fill(b %v, 0x01) on side", b)))
		Expect(capture0[2].Call).To(Equal("Record(fork) on main"))
		Expect(capture0[4].Call).To(Equal(fmt.Sprintf("Copy(a %v <- b %v) on side", a.Slice(0, 256), b.Slice(0, 256))))
		Expect(capture0[5].Call).To(Equal(fmt.Sprintf("Axpy(y %v += 7 * x %v) on main", ranges["y"], ranges["x"])))
	})

	It("is the array of its events in JSON, and left out of a result when empty", func() {
		res := runOn(dev, parseProbe(p), device.Relaxed, 1)
		data, err := json.Marshal(res.Timeline)
		Expect(err).NotTo(HaveOccurred())
		want, err := json.Marshal(res.Timeline.Events())
		Expect(err).NotTo(HaveOccurred())
		Expect(data).To(MatchJSON(want))

		var zero capture.Timeline
		Expect(zero.Len()).To(Equal(0))
		Expect(zero.Events()).To(BeEmpty())
		Expect(json.Marshal(zero)).To(MatchJSON(`[]`))
		whole, err := json.Marshal(capture.Result{})
		Expect(err).NotTo(HaveOccurred())
		Expect(string(whole)).NotTo(ContainSubstring(`"timeline"`))
	})
})
