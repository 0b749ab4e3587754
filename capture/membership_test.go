package capture_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
)

// The engine reuses its last answer to "did this stream's work go into the capture?" across fills,
// copies and axpys (a capture of 100,000 ops would otherwise ask 100,000 times): these specs fail
// if the answer outlives a call that changes it, or is reused for another stream.
var _ = Describe("Capture membership of each op's stream", func() {
	var dev device.Device
	BeforeEach(func() { dev = openSim("cann") })
	AfterEach(func() { Expect(dev.Close()).To(Succeed()) })

	// flags lists, for each call of stream work the capture issued, whether it was captured.
	flags := func(res *capture.Result) (out []string) {
		for _, ev := range res.Timeline.Events() {
			if ev.Phase == capture.PhaseCapture && ev.Step != nil && ev.Err == "" && (ev.Captured || ev.Eager) {
				what := "eager"
				if ev.Captured {
					what = "captured"
				}
				name, on := ev.Call[:strings.Index(ev.Call, "(")], ev.Call[strings.LastIndex(ev.Call, " on ")+4:]
				out = append(out, name+" on "+on+": "+what)
			}
		}
		return out
	}

	It("follows a stream forked into the capture by a wait, and back out of it at the end", func() {
		p := parseProbe(`version: replaycheck/v1
set: membership
probes:
  - name: fork-late
    hazard: off-capture
    buffers:
      a: {bytes: 4KiB, init: zero}
      b: {bytes: 4KiB, init: zero}
      c: {bytes: 4KiB, init: zero}
    streams: [main, side]
    events: [fork, join]
    capture:
      stream: main
      ops:
        - fill: {dst: a, value: 3, stream: main}
        - fill: {dst: b, value: 1, stream: side}
        - fill: {dst: b, value: 2, stream: side}
        - record: {event: fork, stream: main}
        - wait: {event: fork, stream: side}
        - fill: {dst: b, value: 4, stream: side}
        - copy: {dst: b, src: a, stream: side}
        - fill: {dst: c, value: 5, stream: main}
        - record: {event: join, stream: side}
        - wait: {event: join, stream: main}
    between:
      - fill: {dst: b, value: 6, stream: side}
    expect: {guarded: refused, unguarded: exact}
`)
		res := runOn(dev, p, device.Global, 2)
		Expect(flags(res)).To(Equal([]string{
			"Fill on main: captured", "Fill on side: eager", "Fill on side: eager",
			"Record on main: captured", "Wait on side: captured",
			"Fill on side: captured", "Copy on side: captured", "Fill on main: captured",
			"Record on side: captured", "Wait on main: captured",
		}), res.Reason)
		// The between phase is not a capture: its fill is neither.
		Expect(res.Timeline.Events()).To(ContainElement(SatisfyAll(
			HaveField("Phase", capture.PhaseBetween), HaveField("Captured", false), HaveField("Eager", false))))
	})
})
