package probes_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/probes"
)

// captureOps builds a probe whose capture (origin main) has the given ops, one per line starting
// at line 12, and returns the "line:col rule" of every problem.
func captureOps(ops ...string) []string {
	GinkgoHelper()
	src := `version: replaycheck/v1
set: race
probes:
  - name: p
    hazard: none
    buffers: {a: {bytes: 1KiB}, b: {bytes: 1KiB}}
    streams: [main, side, third]
    events: [e, f]
    capture:
      stream: main
      ops:
`
	for _, op := range ops {
		src += "        - " + op + "\n"
	}
	src += "    expect: {guarded: exact}\n"
	_, err := probes.Parse("race.yaml", []byte(src), probes.DefaultLimits())
	if err == nil {
		return nil
	}
	return lineColRule(diagnostics(err))
}

var _ = Describe("the race check", func() {
	fork := []string{"record: {event: e}", "wait: {event: e, stream: side}"}

	It("orders ops on one stream by list order", func() {
		Expect(captureOps("fill: {dst: a, value: 1, stream: side}", "copy: {dst: a, src: a, stream: side}")).To(BeEmpty())
	})

	It("orders a fork and a join (negative control: without the join's wait it races)", func() {
		joined := append(fork, "fill: {dst: a, value: 1, stream: side}", "record: {event: f, stream: side}",
			"wait: {event: f}", "fill: {dst: a, value: 2}")
		Expect(captureOps(joined...)).To(BeEmpty())
		unjoined := append(fork, "fill: {dst: a, value: 1, stream: side}", "record: {event: f, stream: side}",
			"fill: {dst: a, value: 2}")
		Expect(captureOps(unjoined...)).To(Equal([]string{"16:11 race"}))
	})

	It("orders only what precedes the record", func() {
		Expect(captureOps(
			"record: {event: e}",
			"fill: {dst: a, value: 1}", // after the record: not ordered before side's fill
			"wait: {event: e, stream: side}",
			"fill: {dst: a, value: 2, stream: side}",
		)).To(Equal([]string{"15:11 race"}))
	})

	It("does not order through a wait that comes before the record", func() {
		Expect(captureOps(
			"fill: {dst: a, value: 1}",
			"wait: {event: e, stream: side}",
			"record: {event: e}",
			"fill: {dst: a, value: 2, stream: side}",
		)).To(Equal([]string{"15:11 race"}))
	})

	It("uses an event's latest record", func() {
		Expect(captureOps(
			"record: {event: e}",
			"fill: {dst: a, value: 1}",
			"record: {event: e}",
			"wait: {event: e, stream: side}",
			"fill: {dst: a, value: 2, stream: side}",
		)).To(BeEmpty())
	})

	It("does not let a stream that had not joined when it recorded order anything", func() {
		Expect(captureOps(
			"fill: {dst: a, value: 1, stream: third}",
			"record: {event: f, stream: third}",
			"wait: {event: f}",
			"fill: {dst: a, value: 2}",
		)).To(Equal([]string{"15:11 race"}))
	})

	It("orders a stream's ops before it joined by its later record", func() {
		Expect(captureOps(
			"record: {event: e}",
			"fill: {dst: a, value: 1, stream: side}",
			"wait: {event: e, stream: side}",
			"record: {event: f, stream: side}",
			"wait: {event: f}",
			"fill: {dst: a, value: 2}",
		)).To(BeEmpty())
	})

	It("ignores non-overlapping spans and reads against reads", func() {
		Expect(captureOps(
			"fill: {dst: a, value: 1, bytes: 16}",
			"fill: {dst: a, value: 1, offset: 16, stream: side}",
		)).To(BeEmpty())
		Expect(captureOps(
			"axpy: {y: b, x: a, a: 1}",
			"axpy: {y: a, x: b, a: 1, stream: side}",
		)).To(Equal([]string{"13:11 race"}))
	})

	It("rejects an empty range rather than calling it race-free", func() {
		Expect(captureOps(
			"fill: {dst: a, value: 1, bytes: 16}",
			"copy: {dst: b, src: a, bytes: 0, stream: third}",
		)).To(Equal([]string{"13:11 range"}))
	})

	It("compares buffers by name, also across a free and a new alloc", func() {
		// The oracle applies graph ops by name, and the new allocation may reuse the old address.
		Expect(captureOps(
			"fill: {dst: a, value: 1}",
			"free: {buffer: a}",
			"alloc: {buffer: a, bytes: 1KiB}",
			"fill: {dst: a, value: 2, stream: side}",
		)).To(Equal([]string{"15:11 race"}))
	})

	It("names the earliest unordered op and counts the others", func() {
		src := []string{
			"fill: {dst: a, value: 1}",
			"fill: {dst: a, value: 2, stream: third}",
			"fill: {dst: a, value: 3, stream: side}",
		}
		Expect(captureOps(src...)).To(Equal([]string{"13:11 race", "14:11 race"}))
		_, err := probes.Parse("race.yaml", []byte(strings.Join([]string{
			"version: replaycheck/v1", "set: race", "probes:", "  - name: p", "    hazard: none",
			"    buffers: {a: {bytes: 64}}", "    streams: [main, side, third]", "    capture:", "      ops:",
			"        - " + src[0], "        - " + src[1], "        - " + src[2], "    expect: {guarded: exact}",
		}, "\n")), probes.DefaultLimits())
		ds := diagnostics(err)
		Expect(ds[1].Message).To(HavePrefix("fill (line 12) on stream side and fill (line 10) on stream main race on a[0:64] (write-write)"))
		Expect(ds[1].Message).To(HaveSuffix("(and 1 more earlier op)"))
	})

	It("checks each capture on its own", func() {
		_, err := probes.Parse("two.yaml", []byte(`version: replaycheck/v1
set: two
probes:
  - name: p
    hazard: none
    buffers: {a: {bytes: 64}}
    streams: [main, side]
    captures:
      - name: one
        ops: [{fill: {dst: a, value: 1}}]
      - name: two
        stream: side
        ops: [{fill: {dst: a, value: 2}}]
    expect: {guarded: exact}
`), probes.DefaultLimits())
		Expect(err).NotTo(HaveOccurred())
	})
})
