package conformance

import (
	g "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
)

// Class families: the classes a situation may be reported as on some platform. The contract fixes
// the family, the platform's code table picks the member.
var (
	// A synchronisation the capture forbids: CUDA's STREAM_CAPTURE_UNSUPPORTED, ACL's STREAM_CAPTURED.
	syncInCapture = []device.Class{device.ClassCaptureUnsupported, device.ClassCapturedStream}
	// A potentially unsafe call a capture mode forbids: ACL's CAPTURE_MODE_NOT_SUPPORT, CUDA's
	// STREAM_CAPTURE_UNSUPPORTED (for a synchronous copy only where it is not legacy-stream work).
	unsafeInCapture = []device.Class{device.ClassCaptureUnsupported, device.ClassCaptureMode}
	// A synchronous copy during a capture where it is legacy-stream work
	// (Options.SyncCopiesOnLegacyStream): CUDA's STREAM_CAPTURE_IMPLICIT.
	syncCopyInCapture = []device.Class{device.ClassCaptureImplicit}
	// An end on a stream in no capture: ACL's STREAM_NOT_CAPTURED, CUDA's ILLEGAL_STATE (measured,
	// not the INVALID_VALUE cuStreamEndCapture documents).
	endNotCapturing = []device.Class{device.ClassCaptureNotCapturing, device.ClassCaptureConflict}
	// A begin on a stream already capturing.
	beginCapturing = []device.Class{device.ClassCaptureConflict, device.ClassCapturedStream, device.ClassInvalidValue}
	// A capture on the default stream: ACL's PARAM_INVALID (or a not-supported answer), CUDA's
	// STREAM_CAPTURE_UNSUPPORTED (measured, not STREAM_CAPTURE_IMPLICIT).
	beginDefault = []device.Class{device.ClassInvalidValue, device.ClassNotSupported, device.ClassCaptureUnsupported}
)

func captureRuleSpecs(h *harness) {
	g.Context("capture rules", func() {
		g.It("EndCapture on a stream in no capture fails with no graph", func() {
			s := h.stream()
			base := h.dev.Counters()
			graph, err := h.dev.EndCapture(main, s)
			h.failed(err, endNotCapturing...)
			Expect(graph).To(BeZero())
			Expect(h.dev.Counters()).To(Equal(base))
			graph, err = h.dev.EndCapture(main, device.DefaultStream)
			h.failed(err, endNotCapturing...)
			Expect(graph).To(BeZero())

			h.begin(main, s, device.Global) // and once more after a capture ended
			h.end(main, s)
			graph, err = h.dev.EndCapture(main, s)
			h.failed(err, endNotCapturing...)
			Expect(graph).To(BeZero())
		})

		g.It("BeginCapture on the default stream fails and starts nothing", func() {
			h.failed(h.dev.BeginCapture(main, device.DefaultStream, device.Global), beginDefault...)
			h.notCapturing(device.DefaultStream)
		})

		g.It("BeginCapture with an unknown mode fails and starts nothing", func() {
			s := h.stream()
			h.failed(h.dev.BeginCapture(main, s, device.CaptureMode(7)))
			h.notCapturing(s)
		})

		for _, m := range device.CaptureModes() {
			g.It(inMode("BeginCapture on a stream already capturing fails and leaves the capture", m), func() {
				s := h.stream()
				x := h.malloc(1 * kib)
				h.zeroed(x)
				h.begin(main, s, m)
				id := h.info(s).ID
				h.fill(s, x, 1)
				e := h.failed(h.dev.BeginCapture(main, s, m), beginCapturing...)
				h.rejectedInCapture(e, s, false)
				Expect(h.info(s).ID).To(Equal(id), "still the first capture")
				if graph := h.finish(main, s); graph != 0 {
					h.launch(graph, s)
					h.sync(s)
					Expect(h.read(x)).To(Equal(filled(x.Bytes, 1)), "the first capture's work is in its graph")
				}
			})

			g.It(inMode("synchronising the capturing stream is refused; the capture is invalidated exactly when the error says so", m), func() {
				s := h.stream()
				x := h.malloc(1 * kib)
				h.zeroed(x)
				h.begin(main, s, m)
				h.fill(s, x, 1)
				e := h.failed(h.dev.SyncStream(main, s), syncInCapture...)
				h.rejectedInCapture(e, s, false)
				if graph := h.finish(main, s); graph != 0 {
					h.launch(graph, s)
					h.sync(s)
					Expect(h.read(x)).To(Equal(filled(x.Bytes, 1)), "the work captured before the refusal replays")
				}
				h.notCapturing(s)
			})

			g.It(inMode("SyncDevice during a capture is refused; the capture is invalidated exactly when the error says so", m), func() {
				s := h.stream()
				x := h.malloc(1 * kib)
				h.begin(main, s, m)
				h.fill(s, x, 1)
				e := h.failed(h.dev.SyncDevice(main), syncInCapture...)
				h.rejectedInCapture(e, s, false)
				h.finish(main, s)
				h.notCapturing(s)
			})

			g.It(inMode("QueryEvent and SyncEvent on an event recorded inside the capture fail captured-event", m), func() {
				s := h.stream()
				ev := h.event()
				x := h.malloc(1 * kib)
				h.begin(main, s, m)
				h.fill(s, x, 1)
				h.record(ev, s)
				_, err := h.dev.QueryEvent(main, ev)
				e := h.failed(err, device.ClassCapturedEvent)
				h.rejectedInCapture(e, s, false)
				if h.status(s) == device.CaptureActive {
					e = h.failed(h.dev.SyncEvent(other, ev), device.ClassCapturedEvent)
					h.rejectedInCapture(e, s, false)
				}
				h.finish(main, s)
			})

			g.It(inMode("EndCapture on a forked stream fails capture-unmatched and leaves the capture to its origin", m), func() {
				origin, side := h.stream(), h.stream()
				fork, join := h.event(), h.event()
				h.begin(main, origin, m)
				h.record(fork, origin)
				h.wait(side, fork)
				graph, err := h.dev.EndCapture(main, side)
				e := h.failed(err, device.ClassCaptureUnmatched)
				Expect(graph).To(BeZero())
				h.rejectedInCapture(e, origin, false)
				if h.status(origin) == device.CaptureActive {
					Expect(h.info(side).ID).To(Equal(h.info(origin).ID), "the side stream is still in the capture")
					h.record(join, side)
					h.wait(origin, join)
				}
				h.finish(main, origin)
				h.notCapturing(side)
			})

			g.It(inMode("EndCapture with a forked stream never joined back fails capture-unjoined, makes no graph and ends the capture", m), func() {
				origin, side := h.stream(), h.stream()
				fork := h.event()
				x := h.malloc(1 * kib)
				base := h.dev.Counters()
				h.begin(main, origin, m)
				h.record(fork, origin)
				h.wait(side, fork)
				h.fill(side, x, 1)
				graph, err := h.dev.EndCapture(main, origin)
				h.failed(err, device.ClassCaptureUnjoined)
				Expect(graph).To(BeZero())
				c := h.dev.Counters()
				Expect(c.LiveGraphs).To(Equal(base.LiveGraphs))
				Expect(c.CapturesDone).To(Equal(base.CapturesDone))
				h.notCapturing(origin)
				h.notCapturing(side)
				h.fill(side, x, 5)
				h.sync(side)
				Expect(h.read(x)).To(Equal(filled(x.Bytes, 5)), "the side stream runs eagerly again")
			})
		}
	})
}
