package probes_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/probes"
)

// phasesFile is a probe file of one probe whose keys after name and hazard are body; each line of
// body loses its leading tabs, so bodies indent like the Go around them. The probe's keys start on
// line 5, column 5.
func phasesFile(body string) []byte {
	var b strings.Builder
	b.WriteString("version: replaycheck/v1\nset: phases\nprobes:\n  - name: p\n    hazard: none\n")
	for _, line := range strings.Split(strings.Trim(body, "\n"), "\n") {
		b.WriteString("    " + strings.TrimLeft(line, "\t") + "\n")
	}
	return []byte(b.String())
}

// phasesProbe parses body (phasesFile) and returns its probe, failing the spec on a problem.
func phasesProbe(body string) *probes.Probe {
	GinkgoHelper()
	set, err := probes.Parse("phases.yaml", phasesFile(body), probes.DefaultLimits())
	Expect(err).NotTo(HaveOccurred())
	Expect(set.Probes).To(HaveLen(1))
	return set.Probes[0]
}

// phasesProblems parses body (phasesFile) and returns its problems as "line:col rule", failing the
// spec when it has none; every message must hold each of mentions. The spec's output shows the
// file, numbered, and its problems.
func phasesProblems(body string, mentions ...string) []string {
	GinkgoHelper()
	data := phasesFile(body)
	_, err := probes.Parse("phases.yaml", data, probes.DefaultLimits())
	Expect(err).To(HaveOccurred())
	for i, line := range strings.Split(string(data), "\n") {
		GinkgoWriter.Printf("%3d %s\n", i+1, line)
	}
	GinkgoWriter.Println(err)
	for _, m := range mentions {
		Expect(err.Error()).To(ContainSubstring(m))
	}
	return lineColRule(diagnostics(err))
}

// kvGrow is the KV-cache probe's sequence: capture small, grow kv, capture big.
const kvGrow = `
	buffers:
	  tokens: {bytes: 512, init: "fill:0x5a"}
	  kv: {bytes: 16KiB, init: iota32}
	  attn: {bytes: 64KiB}
	streams: [main, side]
	phases:
	  - eager:
	      - fill: {dst: attn, value: 1}
	  - capture:
	      name: small
	      ops:
	        - copy: {dst: kv, src: tokens}
	  - eager:
	      - grow: {buffer: kv, bytes: 64KiB}
	  - capture:
	      name: big
	      stream: side
	      ops:
	        - copy: {dst: attn, src: kv}
	expect: {guarded: refused, unguarded: corrupted}
`

var _ = Describe("phases", func() {
	Describe("a probe's stages", func() {
		It("follow a phases list entry by entry", func() {
			p := phasesProbe(kvGrow)
			Expect(p.HasPhases()).To(BeTrue())
			var got []string
			for _, st := range p.Stages() {
				got = append(got, st.String())
			}
			Expect(got).To(Equal([]string{"phase 1", "capture small", "phase 3", "capture big"}))
			Expect(p.Prepare).To(BeEmpty())
			Expect(p.Between).To(BeEmpty())
			// The captures are the probe's captures, in order: replay's defaults follow them.
			Expect(p.Captures).To(HaveLen(2))
			Expect(p.Captures[0].Name).To(Equal("small"))
			Expect(p.Captures[1].Stream).To(Equal("side"))
			Expect(p.Replay.Captures()).To(Equal([]string{"small", "big"}))
			Expect(p.Replay.Stream).To(Equal("main"))
			st := p.Stages()[2]
			Expect(st.Eager()).To(BeTrue())
			Expect(st.Entry).To(Equal(3))
			Expect(st.Phase).To(Equal(probes.PhaseEager))
			Expect(st.Issued()).To(HaveLen(1))
			Expect(st.Issued()[0].Kind).To(Equal(probes.OpGrow))
			// An eager op's stream defaults to the first stream, a capture's to its stream.
			Expect(p.Stages()[0].Ops[0].Stream).To(Equal("main"))
			Expect(p.Captures[1].Ops[0].Stream).To(Equal("side"))
		})

		It("are prepare, each capture and between for a probe without phases", func() {
			p := phasesProbe(`
				buffers: {a: {bytes: 4KiB}}
				streams: [main]
				prepare: [fill: {dst: a, value: 1}]
				captures:
				  - {name: one, ops: [fill: {dst: a, value: 2}]}
				  - {name: two, ops: [fill: {dst: a, value: 3}]}
				between: [fill: {dst: a, value: 4}]
				expect: {guarded: exact}
			`)
			Expect(p.HasPhases()).To(BeFalse())
			var got []string
			for _, st := range p.Stages() {
				got = append(got, st.String())
			}
			Expect(got).To(Equal([]string{"prepare", "capture one", "capture two", "between"}))
			Expect(p.Stages()[0].Ops).To(Equal(p.Prepare))
			Expect(p.Stages()[3].Ops).To(Equal(p.Between))
			Expect(p.Stages()[0].Step(0).String()).To(Equal("prepare op 1"))
			Expect(p.Stages()[3].Step(0).String()).To(Equal("between op 1"))
		})

		It("are found by their entry's number", func() {
			p := phasesProbe(kvGrow)
			st, ok := p.Entry(3)
			Expect(ok).To(BeTrue())
			Expect(st.String()).To(Equal("phase 3"))
			st, ok = p.Entry(4)
			Expect(ok).To(BeTrue())
			Expect(st.Capture.Name).To(Equal("big"))
			for _, n := range []int{0, 5} {
				_, ok = p.Entry(n)
				Expect(ok).To(BeFalse(), "entry %d", n)
			}
		})

		It("name their ops' steps, which parse back", func() {
			p := phasesProbe(kvGrow)
			steps := []string{p.Stages()[0].Step(0).String(), p.Stages()[1].Step(0).String(), p.Stages()[2].Step(1).String()}
			Expect(steps).To(Equal([]string{"phase 1 op 1", "capture small op 1", "phase 3 op 2"}))
			for i, text := range steps {
				s, err := probes.ParseStep(text)
				Expect(err).NotTo(HaveOccurred())
				Expect(s).To(Equal(p.Stages()[[]int{0, 1, 2}[i]].Step([]int{0, 0, 1}[i])))
			}
			for _, bad := range []string{"phase 0 op 1", "phase x op 1", "phase 3 op 0", "phase 3 grow 1", "phase op 1"} {
				_, err := probes.ParseStep(bad)
				Expect(err).To(HaveOccurred(), bad)
			}
		})
	})

	Describe("static checks", func() {
		It("refuses phases beside prepare, capture, captures or between, at each", func() {
			Expect(phasesProblems(`
				buffers: {a: {bytes: 4KiB}}
				streams: [main]
				prepare: [fill: {dst: a, value: 1}]
				capture: {ops: [fill: {dst: a, value: 2}]}
				captures: [{name: c, ops: []}]
				between: [fill: {dst: a, value: 4}]
				phases:
				  - capture: {name: c, ops: [fill: {dst: a, value: 2}]}
				expect: {guarded: exact}
			`, "prepare and phases are both given", "between and phases are both given")).To(Equal([]string{
				"8:5 phases", "9:5 phases", "10:5 phases", "11:5 phases",
			}))
		})

		It("asks for a capture, phases or the sections", func() {
			Expect(phasesProblems(`
				streams: [main]
				expect: {guarded: exact}
			`, `(or "captures", or "phases")`)).To(Equal([]string{"4:5 missing-key"}))
		})

		It("places every misshapen entry", func() {
			Expect(phasesProblems(`
				buffers: {a: {bytes: 4KiB}}
				streams: [main]
				phases:
				  - capture: {name: one, ops: [fill: {dst: a, value: 1}]}
				  - eager: []
				  - eager: [fill: {dst: a, value: 2}]
				    capture: {name: two}
				  - {}
				  - fill: {dst: a, value: 3}
				  - ready
				  - capture: {ops: [fill: {dst: a, value: 1}]}
				  - capture: {name: one, ops: [fill: {dst: a, value: 1}]}
				  - capture: {name: three, stream: nowhere, ops: [fill: {dst: a, value: 1}]}
				expect: {guarded: exact}
			`, "phases entry 2: eager: want at least one op", "want a one-key map", "a mapping of eager, capture",
				`unknown key "fill" in phases entry 5`, "capture lacks required key \"name\"", `duplicate capture "one"`,
				`undeclared stream "nowhere"`)).To(Equal([]string{
				"10:16 bad-value",   // eager: []
				"11:9 bad-value",    // two keys
				"13:9 bad-value",    // {}
				"14:9 unknown-key",  // fill is an op, not an entry
				"15:9 bad-value",    // a scalar
				"16:18 missing-key", // a capture without a name
				"17:25 duplicate",   // a capture name given twice
				"18:40 undeclared",  // a capture's stream, checked as for captures
				"18:55 undeclared",  // and its op's, which defaults to it
			}))
		})

		It("wants eager work between two captures as one entry", func() {
			Expect(phasesProblems(`
				buffers: {a: {bytes: 4KiB}}
				streams: [main]
				phases:
				  - capture: {name: one, ops: [fill: {dst: a, value: 1}]}
				  - eager: [fill: {dst: a, value: 2}]
				  - eager: [fill: {dst: a, value: 3}]
				expect: {guarded: exact}
			`, "phases entry 3 is eager work right after eager entry 2 (line 10): merge them")).To(Equal([]string{"11:9 phases"}))
		})

		It("wants a capture", func() {
			Expect(phasesProblems(`
				buffers: {a: {bytes: 4KiB}}
				streams: [main]
				phases:
				  - eager: [fill: {dst: a, value: 2}]
				expect: {guarded: exact}
			`, "phases has no capture entry")).To(Equal([]string{"9:7 phases"}))
			Expect(phasesProblems(`
				streams: [main]
				phases: []
				expect: {guarded: exact}
			`)).To(Equal([]string{"7:13 phases"}))
		})

		It("follows buffers through the entries in order", func() {
			// Freed in entry 2, used by the capture of entry 3: a use after free there, and a
			// buffer allocated in entry 3 is not there yet for the capture of entry 1.
			Expect(phasesProblems(`
				buffers: {a: {bytes: 4KiB}, b: {bytes: 4KiB}}
				streams: [main]
				phases:
				  - capture: {name: one, ops: [fill: {dst: c, value: 1}]}
				  - eager:
				      - free: {buffer: a}
				      - alloc: {buffer: c, bytes: 4KiB}
				  - capture: {name: two, ops: [copy: {dst: b, src: a}]}
				expect: {guarded: exact}
			`, `buffer "c" is not allocated yet (alloc at line 12)`, `buffer "a" is used after its free at line 11`)).To(Equal([]string{
				"9:48 undeclared", "13:56 use-after-free",
			}))
		})

		It("sizes a capture's ranges at the sizes the eager entries before it left", func() {
			// kv grows to 64KiB between the captures: a range of 64KiB fits in the second capture
			// and not in the first.
			Expect(phasesProblems(`
				buffers: {kv: {bytes: 16KiB}}
				streams: [main]
				phases:
				  - capture: {name: small, ops: [fill: {dst: kv, value: 1, bytes: 64KiB}]}
				  - eager: [grow: {buffer: kv, bytes: 64KiB}]
				  - capture: {name: big, ops: [fill: {dst: kv, value: 1, bytes: 64KiB}]}
				expect: {guarded: exact}
			`)).To(Equal([]string{"9:38 range"}))
		})

		It("holds the pools to their budget across the entries", func() {
			Expect(phasesProblems(`
				pools: {cache: {bytes: 8KiB}}
				buffers: {a: {bytes: 4KiB, pool: cache}}
				streams: [main]
				phases:
				  - capture: {name: one, ops: [fill: {dst: a, value: 1}]}
				  - eager: [alloc: {buffer: b, bytes: 4KiB, pool: cache}]
				  - capture: {name: two, ops: [fill: {dst: b, value: 1}]}
				  - eager: [alloc: {buffer: c, bytes: 512, pool: cache}]
				expect: {guarded: exact}
			`, `pool "cache"`)).To(Equal([]string{"13:17 pool"}))
		})

		It("keeps the capture rules inside a capture entry and intent out of an eager one", func() {
			Expect(phasesProblems(`
				buffers: {a: {bytes: 4KiB}}
				streams: [main]
				phases:
				  - capture:
				      name: one
				      ops:
				        - alloc: {buffer: b, bytes: 4KiB, init: iota8}
				  - eager: [fill: {dst: a, value: 1, intent: replay}]
				expect: {guarded: exact}
			`, "alloc inside a capture: init iota8", "intent belongs to ops inside a capture's ops list")).To(Equal([]string{
				"12:53 bad-pattern", "13:50 bad-value",
			}))
		})

		It("counts the entries' ops toward the op limit before decoding them", func() {
			lim := probes.DefaultLimits()
			lim.MaxOps = 3
			_, err := probes.Parse("phases.yaml", phasesFile(`
				buffers: {a: {bytes: 4KiB}}
				streams: [main]
				phases:
				  - eager: [fill: {dst: a, value: 1}, fill: {dst: a, value: 2}]
				  - capture: {name: one, ops: [fill: {dst: a, value: 1}, fill: {dst: a, value: 2}]}
				expect: {guarded: exact}
			`), lim)
			Expect(err).To(MatchError(ContainSubstring("has 4 ops, above the limit of 3")))
		})

		It("lets replay order name the captures of phases", func() {
			Expect(phasesProblems(`
				buffers: {a: {bytes: 4KiB}}
				streams: [main]
				phases:
				  - capture: {name: one, ops: [fill: {dst: a, value: 1}]}
				replay: {order: [one, two]}
				expect: {guarded: exact}
			`, `replay order names unknown capture "two"`)).To(Equal([]string{"10:27 unknown-capture"}))
		})
	})
})
