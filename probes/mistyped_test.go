package probes_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/probes"
)

// mistypedProbe declares two buffers, two streams and an event, and uses each of them; a test
// misspells one declaration key with strings.Replace.
const mistypedProbe = `version: replaycheck/v1
set: s
probes:
  - name: p
    hazard: none
    pools:
      cache: {bytes: 1KiB}
    buffers:
      a: {bytes: 64}
      b: {bytes: 64, pool: cache}
    streams: [main, side]
    events: [fork]
    capture:
      stream: main
      ops:
        - fill: {dst: a, value: 1}
        - record: {event: fork, stream: main}
        - wait: {event: fork, stream: side}
        - copy: {dst: b, src: a, stream: side}
    check: [a, b]
    expect: {guarded: exact}
`

const allowedProbeKeys = "(allowed: name, description, hazard, labels, requires, pools, buffers, streams, non-blocking, events, prepare, capture, captures, between, phases, replay, check, expect, replays, modes, guards, faults)"

var _ = Describe("a misspelt declaration key", func() {
	It("loads the probe as written without a problem", func() {
		_, err := probes.Parse("a.yaml", []byte(mistypedProbe), probes.DefaultLimits())
		Expect(err).NotTo(HaveOccurred(), "the control")
	})

	DescribeTable("is one problem, not one for every name it declares",
		func(key, typo string) {
			Expect(problems(strings.Replace(mistypedProbe, "    "+key+":", "    "+typo+":", 1))).To(ConsistOf(
				MatchRegexp(`^a\.yaml:\d+:5: unknown-key: unknown key "%s" in probe \(did you mean "%s"\?\) %s$`, typo, key, escape(allowedProbeKeys))))
		},
		Entry("buffers", "buffers", "bufers"),
		Entry("streams, a required key", "streams", "strems"),
		Entry("events", "events", "evnts"),
		Entry("pools", "pools", "pols"),
		Entry("capture, required unless captures or phases", "capture", "captrue"),
	)

	It("still checks a probe whose misspelt key declares nothing", func() {
		src := strings.Replace(mistypedProbe, "    hazard: none\n", "    hazard: none\n    descripton: x\n", 1)
		src = strings.Replace(src, "{event: fork, stream: side}", "{event: frok, stream: side}", 1)
		Expect(problems(src)).To(ContainElements(
			ContainSubstring(`unknown key "descripton"`),
			`a.yaml:19:25: undeclared: undeclared event "frok" (did you mean "fork"?) (events: fork)`,
		))
	})

	It("reports every use when the unknown key is not a misspelling of the missing one", func() {
		src := strings.Replace(mistypedProbe, "    buffers:", "    storage:", 1)
		Expect(problems(src)).To(ContainElements(
			ContainSubstring(`unknown key "storage" in probe (allowed:`),
			`a.yaml:16:23: undeclared: undeclared buffer "a" (buffers: )`,
			`a.yaml:19:23: undeclared: undeclared buffer "b" (buffers: )`,
		))
	})

	It("reports the required key missing when nothing misspells it", func() {
		src := strings.Replace(mistypedProbe, "    streams: [main, side]\n", "", 1)
		Expect(problems(src)).To(ContainElement(`a.yaml:4:5: missing-key: probe lacks required key "streams"`))
	})

	It("ends with its probe: the next probe's undeclared names are reported", func() {
		src := strings.Replace(mistypedProbe, "    buffers:", "    bufers:", 1) + `  - name: q
    hazard: none
    streams: [main]
    capture:
      ops:
        - fill: {dst: z, value: 1}
    expect: {guarded: exact}
`
		Expect(problems(src)).To(ConsistOf(
			ContainSubstring(`unknown key "bufers"`),
			`a.yaml:27:23: undeclared: undeclared buffer "z" (buffers: )`,
		))
	})
})

// escape quotes s for a regular expression.
func escape(s string) string {
	r := strings.NewReplacer(`(`, `\(`, `)`, `\)`, `.`, `\.`)
	return r.Replace(s)
}
