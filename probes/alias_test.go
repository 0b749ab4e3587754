package probes_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/probes"
)

// problems parses src, which must have problems, and returns them as "line:col rule: message".
func problems(src string) []string {
	GinkgoHelper()
	_, err := probes.Parse("a.yaml", []byte(src), probes.DefaultLimits())
	ds := diagnostics(err)
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Error()
	}
	return out
}

var _ = Describe("problems of values reached through aliases", func() {
	It("reports a probe given again by an alias at the alias, naming the first", func() {
		Expect(problems(`version: replaycheck/v1
set: s
probes:
  - &base
    name: p
    hazard: none
    streams: [main]
    capture: {}
    expect: {guarded: exact}
  - name: q
    hazard: none
    streams: [main]
    capture: {}
    expect: {guarded: exact}
  - *base
`)).To(Equal([]string{`a.yaml:15:5: duplicate: duplicate probe "p" (first at line 5)`}))
	})

	It("reports a buffer, stream, event, label, capture, platform family or key given again by an alias at the alias", func() {
		Expect(problems(`version: replaycheck/v1
set: s
probes:
  - name: p
    hazard: none
    buffers:
      &a a: {bytes: 64}
      *a : {bytes: 32}
    streams: [&s main, *s]
    events: [&e e1, *e]
    labels: [&l x, *l]
    captures:
      - &c {name: one}
      - *c
    expect:
      &g guarded: exact
      *g : exact
      platforms: {&f cuda: {guarded: exact}, *f : {guarded: refused}}
`)).To(Equal([]string{
			`a.yaml:8:7: duplicate: duplicate buffer "a" (first at line 7)`,
			`a.yaml:9:24: duplicate: duplicate stream "main" (first at line 9)`,
			`a.yaml:10:21: duplicate: duplicate event "e1" (first at line 10)`,
			`a.yaml:11:20: duplicate: duplicate label "x" (first at line 11)`,
			`a.yaml:14:9: duplicate: duplicate capture "one" (first at line 13)`,
			`a.yaml:17:7: duplicate: key "guarded" given twice in expect (first at line 16)`,
			`a.yaml:18:46: duplicate: duplicate platform family "cuda" (first at line 18)`,
		}))
	})

	It("reports what an op does where an alias issues it: a free, a live alloc, a range", func() {
		Expect(problems(`version: replaycheck/v1
set: s
probes:
  - name: p
    hazard: none
    buffers: {a: {bytes: 64}}
    streams: [main]
    prepare:
      - &alloc {alloc: {buffer: c, bytes: 64}}
      - &fill {fill: {dst: c, value: 1}}
      - free: {buffer: c}
      - *fill
      - alloc: {buffer: c, bytes: 64}
      - *alloc
      - grow: {buffer: c, bytes: 32}
      - &tail {fill: {dst: c, value: 1, offset: 48}}
      - free: {buffer: c}
      - alloc: {buffer: c, bytes: 32}
      - *tail
    capture: {}
    expect: {guarded: exact}
`)).To(Equal([]string{
			`a.yaml:12:9: use-after-free: buffer "c" is used after its free at line 11 and not allocated again`,
			`a.yaml:14:9: duplicate: duplicate buffer "c": allocated at line 13 and still live; free it before allocating it again`,
			`a.yaml:19:9: range: fill offset 48 is outside buffer "c" of 32 bytes`,
		}))
	})

	It("reports what an aliased list or capture of ops does where the alias uses it", func() {
		Expect(problems(`version: replaycheck/v1
set: s
probes:
  - name: p
    hazard: none
    buffers: {a: {bytes: 64}}
    streams: [main]
    prepare: &use
      - fill: {dst: a, value: 1}
    capture: &cap {ops: [fill: {dst: a, value: 2}]}
    between:
      - free: {buffer: a}
    replay: {each: *use}
    expect: {guarded: exact}
  - name: q
    hazard: none
    streams: [main]
    capture: *cap
    expect: {guarded: exact}
`)).To(Equal([]string{
			`a.yaml:13:20: use-after-free: buffer "a" is used after its free at line 12 and not allocated again`,
			`a.yaml:18:14: undeclared: undeclared buffer "a" (buffers: )`,
		}))
	})

	It("reports a problem of an anchored value itself once, where the anchor defines it", func() {
		Expect(problems(`version: replaycheck/v1
set: s
probes:
  - name: p
    hazard: none
    buffers:
      a: &buf {bytes: 64, init: bogus}
      b: *buf
    streams: [main]
    prepare: [&op {fill: {dst: a, value: 300}}, *op]
    capture: {}
    expect: {guarded: exact}
`)).To(Equal([]string{
			`a.yaml:7:33: bad-pattern: buffer a init: unknown pattern "bogus" (want zero, fill:B, iota8, iota32, random:SEED or hex:BYTES)`,
			`a.yaml:7:33: bad-pattern: buffer b init: unknown pattern "bogus" (want zero, fill:B, iota8, iota32, random:SEED or hex:BYTES)`,
			`a.yaml:10:42: bad-value: fill value: want an integer 0..255, decimal without a leading 0, or 0x hex; got "300"`,
		}))
	})

	It("reports the problems of a probe given again by an alias once, and the duplicate at the alias", func() {
		Expect(problems(`version: replaycheck/v1
set: s
probes:
  - &base
    name: p
    hazard: none
    buffers: {a: {bytes: 64, init: bogus}}
    streams: [main]
    capture: {ops: [fill: {dst: a, value: 1, bytes: 128}]}
    expect: {guarded: exact}
  - *base
`)).To(Equal([]string{
			`a.yaml:7:36: bad-pattern: buffer a init: unknown pattern "bogus" (want zero, fill:B, iota8, iota32, random:SEED or hex:BYTES)`,
			`a.yaml:9:21: range: fill range [0, 128) is outside buffer "a" of 64 bytes`,
			`a.yaml:11:5: duplicate: duplicate probe "p" (first at line 5)`,
		}))
	})

	It("does not count a problem found again through an alias toward the cap on listed problems", func() {
		var b strings.Builder
		b.WriteString("version: replaycheck/v1\nset: s\nprobes:\n  - name: p\n    hazard: none\n    buffers: {a: {bytes: 64}}\n    streams: [main]\n    prepare: &ops\n")
		for range 60 {
			b.WriteString("      - fill: {dst: a, value: 300}\n")
		}
		b.WriteString("    between: *ops\n    capture: {}\n    expect: {guarded: exact}\n")
		got := problems(b.String())
		Expect(got).To(HaveLen(60), "120 found, 60 of them again: all listed, no \"more than\" line")
		for _, line := range got {
			Expect(line).To(ContainSubstring("bad-value: fill value"))
		}
	})
})
