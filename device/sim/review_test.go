package sim_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

// Cases where two rules meet: each was once answered wrongly.
var _ = Describe("rules that meet", func() {
	DescribeTable("a relaxed capture ended from the other thread is still checked for an unjoined fork",
		func(profile string, code int) {
			d := onProfile(profile)
			s, side := newStream(d), newStream(d)
			fork := newEvent(d)
			buf := malloc(d, 4*KiB)
			Expect(d.BeginCapture(main, s, device.Relaxed)).To(Succeed())
			Expect(d.Record(main, fork, s)).To(Succeed())
			Expect(d.Wait(main, side, fork)).To(Succeed())
			Expect(d.Fill(main, side, buf, 1)).To(Succeed())
			_, err := d.EndCapture(other, s)
			expectError(err, code, device.ClassCaptureUnjoined)
		},
		Entry("cann", "cann", 107025),
		Entry("cuda", "cuda", 904),
	)

	It("cuda: a second sync of an invalidated capture fails 901, not 900", func() {
		d := onProfile("cuda")
		s := newStream(d)
		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		expectError(d.SyncStream(main, s), 900, device.ClassCaptureUnsupported)
		expectError(d.SyncStream(main, s), 901, device.ClassCaptureInvalidated)
	})

	It("an event recorded inside a capture is back to its eager state once the capture ends", func() {
		d := onProfile("cann")
		s, t := newStream(d), newStream(d)
		e := newEvent(d)
		Expect(d.Record(main, e, t)).To(Succeed()) // before any capture

		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		Expect(d.Record(main, e, s)).To(Succeed()) // a graph node, not a record of the event
		Expect(d.Wait(main, s, e)).To(Succeed(), "a wait on the captured record inside its capture is a join")
		_, err := d.EndCapture(main, s)
		Expect(err).NotTo(HaveOccurred())

		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		expectError(d.Wait(main, s, e), 107024, device.ClassCaptureDependency)
	})

	It("refuses a profile that gives a platform rule the guards' classes", func() {
		for _, class := range []string{"refused", "invalid-state"} {
			doc := header + `
rules:
  - situation: sync
    source: doc
    calls: [SyncStream]
    when: stream-capturing
    code: 1
    name: X
    class: ` + class + "\n"
			_, err := sim.ParseProfile([]byte(doc))
			Expect(err).To(MatchError(ContainSubstring("class " + class + " is the guards', not a platform's")))
			_, err = sim.ParseProfile([]byte(strings.Replace(doc, "errors:\n", "errors:\n  "+class+": {code: 5, name: Y}\n", 1)))
			Expect(err).To(MatchError(ContainSubstring("errors: " + class + " is the guards' class")))
		}
	})
})
