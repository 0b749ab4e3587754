package probes_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/probes"
)

// nonBlockingProbe is a probe of two streams whose non-blocking line is line 8; NB stands for the
// key's value.
const nonBlockingProbe = `version: replaycheck/v1
set: s
probes:
  - name: p
    hazard: default-stream
    buffers: {a: {bytes: 64}}
    streams: [main, side]
    non-blocking: NB
    capture:
      ops:
        - fill: {dst: a, value: 1}
    expect: {guarded: exact}
`

func withNonBlocking(value string) string {
	return strings.Replace(nonBlockingProbe, "NB", value, 1)
}

var _ = Describe("non-blocking streams", func() {
	lim := probes.DefaultLimits()

	It("loads the streams named, in the order written, and nil without the key", func() {
		set, err := probes.Parse("a.yaml", []byte(withNonBlocking("[side, main]")), lim)
		Expect(err).NotTo(HaveOccurred())
		Expect(set.Probes[0].NonBlocking).To(Equal([]string{"side", "main"}))
		Expect(set.Probes[0].Streams).To(Equal([]string{"main", "side"}), "the declared streams, unchanged")

		set, err = probes.Parse("a.yaml", []byte(strings.Replace(nonBlockingProbe, "    non-blocking: NB\n", "", 1)), lim)
		Expect(err).NotTo(HaveOccurred())
		Expect(set.Probes[0].NonBlocking).To(BeNil())
	})

	It("loads a list given through an alias", func() {
		set, err := probes.Parse("a.yaml", []byte(`version: replaycheck/v1
set: s
probes:
  - name: p
    hazard: none
    streams: [main, side]
    non-blocking: &nb [side]
    capture: {}
    expect: {guarded: exact}
  - name: q
    hazard: none
    streams: [side]
    non-blocking: *nb
    capture: {}
    expect: {guarded: exact}
`), lim)
		Expect(err).NotTo(HaveOccurred())
		Expect(set.Probes[1].NonBlocking).To(Equal([]string{"side"}))
	})

	It("suggests the key for a typo", func() {
		Expect(problems(strings.Replace(withNonBlocking("[main]"), "non-blocking:", "non-blockng:", 1))).To(Equal([]string{
			`a.yaml:8:5: unknown-key: unknown key "non-blockng" in probe (did you mean "non-blocking"?) (allowed: name, description, hazard, labels, requires, pools, buffers, streams, non-blocking, events, prepare, capture, captures, between, phases, replay, check, expect, replays, modes, guards, faults)`,
		}))
	})

	It("reports a stream the probe does not declare as undeclared, with the closest declared one", func() {
		Expect(problems(withNonBlocking("[side, mian, other]"))).To(Equal([]string{
			`a.yaml:8:26: undeclared: undeclared stream "mian" (did you mean "main"?) (streams: main, side)`,
			`a.yaml:8:32: undeclared: undeclared stream "other" (streams: main, side)`,
		}))
	})

	It("reports an undeclared stream named through an alias at the alias that makes that use", func() {
		Expect(problems(`version: replaycheck/v1
set: s
probes:
  - name: p
    hazard: none
    streams: [main, side]
    non-blocking: &nb [&s side]
    capture: {}
    expect: {guarded: exact}
  - name: q
    hazard: none
    streams: [main]
    non-blocking: *nb
    capture: {}
    expect: {guarded: exact}
  - name: r
    hazard: none
    streams: [main]
    non-blocking: [main, *s]
    capture: {}
    expect: {guarded: exact}
`)).To(Equal([]string{
			`a.yaml:13:19: undeclared: undeclared stream "side" (streams: main)`,
			`a.yaml:19:26: undeclared: undeclared stream "side" (streams: main)`,
		}))
	})

	It("refuses the default stream: the legacy stream is never non-blocking", func() {
		Expect(problems(withNonBlocking("[main, default]"))).To(Equal([]string{
			`a.yaml:8:26: bad-name: non-blocking stream "default": the platform's default stream is the legacy stream, which is never non-blocking; name a declared stream`,
		}))
	})

	It("refuses a stream named twice, at the second, also when an alias repeats it", func() {
		Expect(problems(withNonBlocking("[main, side, main]"))).To(Equal([]string{
			`a.yaml:8:32: duplicate: duplicate non-blocking stream "main" (first at line 8)`,
		}))
		Expect(problems(withNonBlocking("[&m main, *m]"))).To(Equal([]string{
			`a.yaml:8:29: duplicate: duplicate non-blocking stream "main" (first at line 8)`,
		}))
	})

	It("refuses an empty list, and a value that is not a list", func() {
		Expect(problems(withNonBlocking("[]"))).To(Equal([]string{
			`a.yaml:8:19: bad-value: non-blocking: want at least one`,
		}))
		Expect(problems(withNonBlocking(""))).To(Equal([]string{
			`a.yaml:8:18: bad-value: non-blocking: want at least one`,
		}))
		Expect(problems(withNonBlocking("main"))).To(Equal([]string{
			`a.yaml:8:19: bad-value: non-blocking streams: want a list, got "main"`,
		}))
	})

	It("reports a badly formed name once, as a stream the probe does not declare", func() {
		Expect(problems(withNonBlocking("[main, Side]"))).To(Equal([]string{
			`a.yaml:8:26: undeclared: undeclared stream "Side" (did you mean "side"?) (streams: main, side)`,
		}))
	})
})
