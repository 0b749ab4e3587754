package probes_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// crossWait is two captures open at once, the second waiting on an event the first recorded.
const crossWait = `
	buffers:
	  a: {bytes: 4KiB}
	  b: {bytes: 4KiB}
	streams: [s1, s2, s3]
	events: [e]
	phases:
	  - eager: [fill: {dst: a, value: 1}]
	  - begin: {name: first, stream: s1}
	  - begin: {name: second, stream: s2, thread: other}
	  - ops:
	      - fill: {dst: a, value: 2, stream: s1}
	      - record: {event: e, stream: s1}
	      - wait: {event: e, stream: s2}
	      - fill: {dst: b, value: 3, stream: s2}
	      - alloc: {buffer: t, bytes: 4KiB}
	  - end: first
	  - end: {name: second, thread: main}
	expect: {guarded: rejected, rejected-by: [capture-conflict]}
`

var _ = Describe("captures left open (begin, ops, end)", func() {
	Describe("a probe's stages", func() {
		It("send each op of an ops entry into the capture its stream belongs to", func() {
			p := phasesProbe(crossWait)
			Expect(p.Overlaps()).To(BeTrue())
			var got []string
			for _, st := range p.Stages() {
				got = append(got, st.String())
			}
			Expect(got).To(Equal([]string{"phase 1", "begin first", "begin second", "phase 4", "end first", "end second"}))
			first, second := p.Capture("first"), p.Capture("second")
			Expect(first.Ops).To(HaveLen(2))
			Expect(second.Ops).To(HaveLen(3)) // the wait, the fill and the alloc, begun last
			Expect(second.Ops[2].Kind).To(Equal(probes.OpAlloc))
			Expect(second.Thread).To(Equal(device.Other))
			Expect(second.EndThread).To(Equal(device.Main))
			Expect(first.EndThread).To(Equal(device.Main))
			Expect(first.Stream).To(Equal("s1"))

			ops := p.Stages()[3]
			Expect(ops.Part).To(Equal(probes.PartOps))
			Expect(ops.Eager()).To(BeFalse())
			Expect(ops.Issued()).To(HaveLen(5))
			var steps []string
			for i := range ops.Ops {
				s := ops.Step(i)
				steps = append(steps, s.String())
				back, err := probes.ParseStep(s.String())
				Expect(err).NotTo(HaveOccurred())
				Expect(back).To(Equal(s))
			}
			Expect(steps).To(Equal([]string{"capture first op 1", "capture first op 2", "capture second op 1", "capture second op 2", "capture second op 3"}))
			Expect(p.Stages()[1].Issued()).To(BeEmpty()) // a begin issues nothing
			Expect(p.Replay.Captures()).To(Equal([]string{"first", "second"}))
		})

		It("go into the one capture open when an op names no stream, and follow a fork", func() {
			p := phasesProbe(`
				buffers: {a: {bytes: 4KiB}, b: {bytes: 4KiB}}
				streams: [s1, s2]
				events: [e, f]
				phases:
				  - begin: {name: one}
				  - ops:
				      - fill: {dst: a, value: 2}
				      - record: {event: e}
				      - wait: {event: e, stream: s2}
				      - fill: {dst: b, value: 3, stream: s2}
				      - record: {event: f, stream: s2}
				      - wait: {event: f}
				  - end: one
				expect: {guarded: exact}
			`)
			c := p.Capture("one")
			Expect(c.Stream).To(Equal("s1"))
			Expect(c.Ops).To(HaveLen(6))
			Expect(c.Ops[0].Stream).To(Equal("s1"))
		})
	})

	Describe("static checks", func() {
		It("places every misuse of begin, ops and end", func() {
			Expect(phasesProblems(`
				buffers: {a: {bytes: 4KiB}}
				streams: [s1, s2, s3]
				events: [e]
				phases:
				  - ops: [fill: {dst: a, value: 1}]
				  - end: nobody
				  - begin: {name: one, stream: s1}
				  - begin: {name: two, stream: s1}
				  - eager: [fill: {dst: a, value: 2}]
				  - capture: {name: three, ops: [fill: {dst: a, value: 1}]}
				  - ops:
				      - fill: {dst: a, value: 3}
				      - fill: {dst: a, value: 4, stream: s3}
				  - ops: [fill: {dst: a, value: 5, stream: s1}]
				  - end: one
				  - end: one
				  - begin: {stream: s2}
				  - begin: {name: four, stream: s2, color: red}
				  - begin: {name: five, stream: s2}
				expect: {guarded: exact}
			`, "no capture is open", "end nobody: no capture nobody is open here", "which belongs to capture one, still open",
				"is eager work while captures one and two are open", "is a capture entry while", "give it a stream",
				"stream s3, which belongs to no open capture", "ops entry right after ops entry", "ended already",
				`begin lacks required key "name"`, `unknown key "color"`, "capture five is begun but never ended",
				"capture two is begun but never ended", "begin five on stream s2, which belongs to capture four")).To(Equal([]string{
				"10:9 phases",       // ops with no capture open
				"11:14 phases",      // end of a capture not begun
				"13:9 phases",       // two never ended
				"13:36 phases",      // begin on a stream an open capture holds
				"14:9 phases",       // eager work during open captures
				"15:9 phases",       // a capture entry during open captures
				"17:13 missing-key", // two open: which capture?
				"18:46 phases",      // a stream of no open capture
				"19:9 phases",       // two ops entries in a row
				"21:14 phases",      // ended twice
				"22:16 missing-key", // begin without a name
				"23:9 phases",       // four never ended
				"23:41 unknown-key", // a key begin does not define
				"24:9 phases",       // five never ended
				"24:37 phases",      // and begun on four's stream
			}))
		})

		It("follows buffers through the captures' ops in the order issued", func() {
			// Freed by an op of one capture, then used by the other's: a use after free.
			Expect(phasesProblems(`
				buffers: {a: {bytes: 4KiB}, b: {bytes: 4KiB}}
				streams: [s1, s2]
				phases:
				  - begin: {name: one, stream: s1}
				  - begin: {name: two, stream: s2}
				  - ops:
				      - fill: {dst: a, value: 1, stream: s1}
				      - free: {buffer: a}
				      - fill: {dst: a, value: 2, stream: s2}
				  - end: one
				  - end: two
				expect: {guarded: exact}
			`, `buffer "a"`)).To(Equal([]string{"14:25 use-after-free"}))
		})

		It("keeps the capture rules on an ops entry's ops and lets intent be given there", func() {
			Expect(phasesProblems(`
				buffers: {a: {bytes: 4KiB}}
				streams: [s1]
				phases:
				  - begin: {name: one}
				  - ops:
				      - fill: {dst: a, value: 1, intent: once}
				      - alloc: {buffer: t, bytes: 4KiB, init: iota32}
				  - end: one
				expect: {guarded: exact}
			`, "alloc inside a capture")).To(Equal([]string{"12:51 bad-pattern"}))
		})

		It("names the ops of an ops entry in refused-by by their capture", func() {
			Expect(phasesProblems(crossWait[:len(crossWait)-len("\texpect: {guarded: rejected, rejected-by: [capture-conflict]}\n")]+`
				expect: {guarded: refused, refused-by: {step: capture first op 3}}
			`, "capture first has 2 ops")).To(Equal([]string{"24:51 refused-by"}))
		})
	})

	Describe("the oracle", func() {
		// Both captures' ops, issued interleaved as an ops entry issues them.
		run := func(p *probes.Probe, endFirst bool) *probes.Oracle {
			o := probes.NewOracle(p)
			for _, st := range p.Stages() {
				switch st.Part {
				case probes.PartOps:
					for i, op := range st.Ops {
						o.Capture(st.Into[i].Capture.Name, op, true)
					}
				case probes.PartEnd:
					o.EndCapture(st.Capture.Name, st.Capture.Name != "first" || endFirst)
				}
			}
			return o
		}
		p := func() *probes.Probe {
			return phasesProbe(`
				buffers: {a: {bytes: 8}, b: {bytes: 8, init: "fill:0x05"}, c: {bytes: 8}}
				streams: [s1, s2]
				phases:
				  - begin: {name: first, stream: s1}
				  - begin: {name: second, stream: s2}
				  - ops:
				      - fill: {dst: a, value: 1, stream: s1}
				      - copy: {dst: c, src: a, stream: s2}
				      - fill: {dst: a, value: 2, stream: s1}
				  - end: first
				  - end: second
				expect: {guarded: exact}
			`)
		}
		bytesOf := func(o *probes.Oracle, name string) []byte {
			b, ok := o.Bytes(name)
			Expect(ok).To(BeTrue())
			return b
		}

		It("holds in each graph the ops that went into its capture, in the order issued", func() {
			o := run(p(), true)
			Expect(bytesOf(o, "a")).To(Equal(make([]byte, 8)), "nothing replays at capture")
			o.Launch("second", true) // the copy alone: a is still zero
			Expect(bytesOf(o, "c")).To(Equal(make([]byte, 8)))
			o.Launch("first", true) // both fills, the second last
			Expect(bytesOf(o, "a")).To(Equal([]byte{2, 2, 2, 2, 2, 2, 2, 2}))
			o.Launch("second", true)
			Expect(bytesOf(o, "c")).To(Equal([]byte{2, 2, 2, 2, 2, 2, 2, 2}))
		})

		It("drops the graph of a capture whose end failed, and keeps the other's", func() {
			o := run(p(), false)
			o.Launch("first", true)
			Expect(bytesOf(o, "a")).To(Equal(make([]byte, 8)))
			o.Launch("second", true)
			Expect(bytesOf(o, "c")).To(Equal(make([]byte, 8)))
			// Negative control: with both ends taken, first's launch writes a.
			o = run(p(), true)
			o.Launch("first", true)
			Expect(bytesOf(o, "a")).NotTo(Equal(make([]byte, 8)))
		})
	})
})
