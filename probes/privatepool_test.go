package probes_test

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/probes"
)

// privateProbe is a probe of the pytorch set's shape: g0 allocates b and c from pool g0, g1
// (into pool1) reads c and frees it; body lines are indented under the probe.
func privateProbe(pools, g1pool, extra string) string {
	return `version: replaycheck/v1
set: t
probes:
  - name: p
    hazard: none
    guards: [off]
    pools:
` + pools + `
    buffers:
      a: {bytes: 4KiB}
    streams: [s]
    captures:
      - name: g0
        ops:
          - alloc: {buffer: c, bytes: 4KiB, pool: g0}
          - copy: {dst: c, src: a}
      - name: g1` + g1pool + `
        ops:
          - alloc: {buffer: e, bytes: 4KiB, pool: g0}
          - copy: {dst: e, src: c}
          - free: {buffer: c}
` + extra + `
    expect: {unguarded: exact}
`
}

const sharedPool = "      g0: {bytes: 64KiB, private: true}"

var _ = Describe("graph-private pools", func() {
	lim := probes.DefaultLimits()
	load := func(text string) (*probes.Set, error) { return probes.Parse("p.yaml", []byte(text), lim) }
	problems := func(text string) []string {
		GinkgoHelper()
		_, err := load(text)
		Expect(err).To(HaveOccurred())
		var out []string
		for _, d := range diagnostics(err) {
			out = append(out, fmt.Sprintf("%d:%d %s", d.Pos.Line, d.Pos.Col, d.Rule))
		}
		return out
	}

	It("reads private, a capture's pool and the default pool of a capture", func() {
		set, err := load(privateProbe(sharedPool, "\n        pool: g0", ""))
		Expect(err).NotTo(HaveOccurred())
		p := set.Probes[0]
		Expect(p.Pool("g0").Private).To(BeTrue())
		Expect(p.Capture("g0").Pool).To(Equal("g0"), "the default: the private pool named like the capture")
		Expect(p.Capture("g1").Pool).To(Equal("g0"))
		Expect(p.IsPrivate("g0")).To(BeTrue())
		Expect(p.CaptureIndex("g1")).To(Equal(1))
	})

	It("reports an allocation from a private pool in a capture into another, at the op's pool", func() {
		// g1 names no pool and no pool g1 is declared: it allocates from none.
		Expect(problems(privateProbe(sharedPool, "", ""))).To(Equal([]string{"19:51 private-pool"}))
	})

	It("reports an eager allocation, a declared buffer and a grow outside a capture", func() {
		text := privateProbe(sharedPool, "\n        pool: g0", `    between:
      - alloc: {buffer: late, bytes: 4KiB, pool: g0}
      - grow: {buffer: e, bytes: 8KiB}`)
		Expect(problems(text)).To(Equal([]string{"24:50 private-pool", "25:24 private-pool"}))
		text = strings.Replace(privateProbe(sharedPool, "\n        pool: g0", ""), "a: {bytes: 4KiB}", "a: {bytes: 4KiB, pool: g0}", 1)
		Expect(problems(text)).To(Equal([]string{"10:30 private-pool"}))
	})

	It("reports a capture naming an ordinary or undeclared pool, and a private host pool", func() {
		Expect(problems(privateProbe(sharedPool+"\n      plain: {bytes: 4KiB}", "\n        pool: plain", ""))).
			To(Equal([]string{"19:15 private-pool", "21:51 private-pool"}))
		Expect(problems(privateProbe(sharedPool, "\n        pool: nope", ""))).To(Equal([]string{"18:15 undeclared", "20:51 private-pool"}))
		Expect(problems(privateProbe("      g0: {bytes: 64KiB, private: true, host: pinned}", "\n        pool: g0", ""))).
			To(ContainElement("8:35 private-pool"))
	})

	It("checks destroy: after its capture, eager, once, and never replayed", func() {
		ok := privateProbe(sharedPool, "\n        pool: g0", `    between:
      - destroy: {capture: g0}
    replay: {order: [g1]}`)
		set, err := load(ok)
		Expect(err).NotTo(HaveOccurred())
		Expect(set.Probes[0].Replay.Captures()).To(Equal([]string{"g1"}))
		// The default order leaves a destroyed capture out.
		set, err = load(strings.Replace(ok, "    replay: {order: [g1]}\n", "", 1))
		Expect(err).NotTo(HaveOccurred())
		Expect(set.Probes[0].Replay.Captures()).To(Equal([]string{"g1"}))

		Expect(problems(strings.Replace(ok, "order: [g1]", "order: [g1, g0]", 1))).To(Equal([]string{"25:26 destroyed"}))
		Expect(problems(strings.Replace(ok, "      - destroy: {capture: g0}", "      - destroy: {capture: g0}\n      - destroy: {capture: g0}", 1))).
			To(Equal([]string{"25:28 destroyed"}))
		Expect(problems(strings.Replace(ok, "capture: g0}", "capture: g9}", 1))).To(Equal([]string{"24:28 undeclared"}))
		inEach := strings.Replace(strings.Replace(ok, "    replay: {order: [g1]}\n", "", 1), "    between:", "    replay:\n      each:", 1)
		Expect(problems(inEach)).To(Equal([]string{"25:9 bad-value"}))
	})
})

var _ = Describe("the oracle of a destroyed graph", func() {
	It("launches nothing for it, and the other graphs as before", func() {
		set, err := probes.Parse("p.yaml", []byte(privateProbe(sharedPool, "\n        pool: g0", "")), probes.DefaultLimits())
		Expect(err).NotTo(HaveOccurred())
		p := set.Probes[0]
		o := probes.NewOracle(p)
		o.Eager(&probes.Op{Kind: probes.OpWrite, Dst: "a", Pattern: probes.Pattern{Kind: probes.PatFill, Byte: 7}}, true)
		for _, c := range p.Captures {
			for _, op := range c.Ops {
				o.Capture(c.Name, op, true)
			}
			o.EndCapture(c.Name, true)
		}
		o.Destroy("g0")
		o.Launch("g0", true)
		e, _ := o.Bytes("e")
		Expect(e[0]).To(Equal(byte(0)), "g0 is destroyed: c holds its init, e is not written yet")
		o.Launch("g1", true)
		e, _ = o.Bytes("e")
		Expect(e[0]).To(Equal(byte(0)), "g1 copies c, which the destroyed g0 never wrote")
		// The control: without the destroy, g0's launch writes c and g1 copies a's 7s into e.
		o2 := probes.NewOracle(p)
		o2.Eager(&probes.Op{Kind: probes.OpWrite, Dst: "a", Pattern: probes.Pattern{Kind: probes.PatFill, Byte: 7}}, true)
		for _, c := range p.Captures {
			for _, op := range c.Ops {
				o2.Capture(c.Name, op, true)
			}
			o2.EndCapture(c.Name, true)
		}
		o2.Launch("g0", true)
		o2.Launch("g1", true)
		e, _ = o2.Bytes("e")
		Expect(e[0]).To(Equal(byte(7)))
	})
})
