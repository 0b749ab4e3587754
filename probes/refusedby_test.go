package probes_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// refusedSet is a probe set of one probe whose expect is expect (one line of YAML, indented as
// the probe's keys), with a between op, two captures and two replays.
func refusedSet(expect string, extra ...string) string {
	return `version: replaycheck/v1
set: s
probes:
  - name: p
    hazard: rebase
    buffers:
      a: {bytes: 4KiB, slot: retained}
    streams: [main]
    captures:
      - {name: one, ops: [{fill: {dst: a, value: 1}}]}
      - {name: two, ops: [{fill: {dst: a, value: 2}}]}
    between:
      - grow: {buffer: a, bytes: 8KiB}
    replays: 2
` + strings.Join(extra, "") + "    expect: " + expect + "\n"
}

var _ = Describe("expect.refused-by", func() {
	load := func(src string) *probes.Probe {
		GinkgoHelper()
		sets, err := probes.Parse("a.yaml", []byte(src), probes.DefaultLimits())
		Expect(err).NotTo(HaveOccurred())
		return sets.Probes[0]
	}
	instance := func(p *probes.Probe, mode device.CaptureMode, guarded bool) probes.Instance {
		return probes.Instance{Probe: p, Mode: mode, Guarded: guarded, Replays: p.Replays}
	}

	It("reads a guard and a step, a step written as reports write it, and a phase", func() {
		p := load(refusedSet(`{guarded: refused, refused-by: {guard: retained, step: "between  op 1"}}`))
		Expect(p.Expect.RefusedBy).To(Equal(&probes.RefusedBy{Guard: "retained", Step: "between op 1"}))
		p = load(refusedSet(`{guarded: refused, refused-by: {step: replay}}`))
		Expect(p.Expect.RefusedBy).To(Equal(&probes.RefusedBy{Step: "replay"}))
		p = load(refusedSet(`{guarded: refused, refused-by: {guard: residency}}`))
		Expect(p.Expect.RefusedBy).To(Equal(&probes.RefusedBy{Guard: "residency"}))
	})

	It("gives an instance the most specific refused-by, only where it is expected refused", func() {
		p := load(refusedSet(`{guarded: refused, unguarded: corrupted, refused-by: {guard: retained, step: between op 1},
      platforms: {cuda: {refused-by: {guard: residency, step: replay 1 one}, modes: {relaxed: {refused-by: {}}}}},
      modes: {thread-local: {refused-by: {guard: arena}}}}`))
		Expect(instance(p, device.Global, true).RefusedByOn("sim/cann")).To(Equal(&probes.RefusedBy{Guard: "retained", Step: "between op 1"}))
		Expect(instance(p, device.Global, true).RefusedByOn("cuda/12.4-h200")).To(Equal(&probes.RefusedBy{Guard: "residency", Step: "replay 1 one"}))
		Expect(instance(p, device.ThreadLocal, true).RefusedByOn("sim/cuda")).To(Equal(&probes.RefusedBy{Guard: "arena"}), "modes.MODE above platforms.FAMILY")
		Expect(instance(p, device.Relaxed, true).RefusedByOn("sim/cuda")).To(BeNil(), "refused-by: {} names anyone anywhere")
		Expect(instance(p, device.Relaxed, true).RefusedByOn("sim/cann")).To(Equal(&probes.RefusedBy{Guard: "retained", Step: "between op 1"}))
		Expect(instance(p, device.Global, false).RefusedByOn("sim/cann")).To(BeNil(), "expected corrupted, not refused")
	})

	It("matches a refusal by guard and step: a phase names each of its steps, a step one", func() {
		between1 := probes.OpStep(probes.PhaseBetween, "", 0)
		launch := probes.LaunchStep(1, "one")
		Expect(probes.RefusedBy{Guard: "retained", Step: "between op 1"}.Matches("retained", between1)).To(BeTrue())
		Expect(probes.RefusedBy{Guard: "retained", Step: "between op 1"}.Matches("residency", between1)).To(BeFalse())
		Expect(probes.RefusedBy{Guard: "retained", Step: "between op 1"}.Matches("", between1)).To(BeFalse(), "a refusal that names no guard")
		Expect(probes.RefusedBy{Guard: "retained", Step: "between op 1"}.Matches("retained", probes.OpStep(probes.PhaseBetween, "", 1))).To(BeFalse())
		Expect(probes.RefusedBy{Step: "between"}.Matches("anyone", probes.OpStep(probes.PhaseBetween, "", 3))).To(BeTrue())
		Expect(probes.RefusedBy{Step: "between"}.Matches("anyone", launch)).To(BeFalse())
		Expect(probes.RefusedBy{Step: "replay"}.Matches("residency", launch)).To(BeTrue())
		Expect(probes.RefusedBy{Step: "replay 1 one"}.Matches("residency", probes.LaunchStep(1, "two"))).To(BeFalse())
		Expect(probes.RefusedBy{Step: "capture one end"}.Matches("x", probes.CaptureStep("one", probes.StepEnd))).To(BeTrue())
		Expect(probes.RefusedBy{Step: "capture"}.Matches("x", probes.OpStep(probes.PhaseCapture, "two", 0))).To(BeTrue())
		Expect(probes.RefusedBy{}.Matches("", launch)).To(BeTrue())
		Expect(probes.RefusedBy{Guard: "retained", Step: "between op 1"}.String()).To(Equal("guard retained at between op 1"))
		Expect(probes.RefusedBy{Step: "replay"}.String()).To(Equal("any guard at replay"))
	})

	It("reports what it cannot mean, placed", func() {
		ps := problems(refusedSet(`{guarded: refused, refused-by: {guard: Retained, step: during, who: me}}`))
		Expect(ps).To(HaveLen(3))
		Expect(ps[0]).To(Equal(`a.yaml:15:52: bad-name: bad expect refused-by guard "Retained": want lower-case letters, digits and '-', not starting with '-'`))
		Expect(ps[1]).To(HavePrefix(`a.yaml:15:68: bad-value: expect refused-by: step "during": want `))
		Expect(ps[1]).To(HaveSuffix(`, or a phase (prepare, capture, between, each, replay)`))
		Expect(ps[2]).To(Equal(`a.yaml:15:76: unknown-key: unknown key "who" in expect refused-by (allowed: guard, step)`))
		Expect(problems(refusedSet(`{guarded: refused, refused-by: [retained]}`))).To(ConsistOf(
			`a.yaml:15:44: bad-value: expect refused-by: want a mapping, got a list`))
		Expect(problems(refusedSet(`{guarded: refused, refused-by: {guard: ` + strings.Repeat("r", 64) + `}}`))).To(ConsistOf(
			`a.yaml:15:52: bad-name: bad expect refused-by guard: 64 bytes, above the limit of 63`))
		Expect(problems(refusedSet(`{guarded: refused, modes: {global: {refused-by: {step: replay 0 one}}}}`))).To(ConsistOf(
			HavePrefix(`a.yaml:15:68: bad-value: expect modes global refused-by: step "replay 0 one": want `)))
	})

	It("reports a step the probe does not have", func() {
		Expect(problems(refusedSet(`{guarded: refused, refused-by: {step: between op 2}}`))).To(ConsistOf(
			`a.yaml:15:51: refused-by: expect refused-by step between op 2: between has 1 ops`))
		Expect(problems(refusedSet(`{guarded: refused, refused-by: {step: prepare}}`))).To(ConsistOf(
			`a.yaml:15:51: refused-by: expect refused-by step prepare: the probe has no prepare step`))
		Expect(problems(refusedSet(`{guarded: refused, refused-by: {step: capture on op 1}}`))).To(ConsistOf(
			`a.yaml:15:51: unknown-capture: expect refused-by step names unknown capture "on" (did you mean "one"?) (captures: one, two)`))
		Expect(problems(refusedSet(`{guarded: refused, refused-by: {step: capture two op 2}}`))).To(ConsistOf(
			`a.yaml:15:51: refused-by: expect refused-by step capture two op 2: capture two has 1 ops`))
		Expect(problems(refusedSet(`{guarded: refused, refused-by: {step: replay 3 one}}`))).To(ConsistOf(
			`a.yaml:15:51: refused-by: expect refused-by step replay 3 one: the probe replays 2 rounds`))
		Expect(problems(refusedSet(`{guarded: refused, refused-by: {step: replay 1 two}}`, "    replay: {order: [one]}\n"))).To(ConsistOf(
			`a.yaml:16:51: refused-by: expect refused-by step replay 1 two: the replay order does not launch capture two`))
		Expect(problems(refusedSet(`{guarded: refused, refused-by: {step: each}}`))).To(ConsistOf(
			`a.yaml:15:51: refused-by: expect refused-by step each: the probe has no each step`))
	})

	It("follows a phases list: an eager entry's ops, by the entry's place", func() {
		phases := func(step string) string {
			return `version: replaycheck/v1
set: s
probes:
  - name: p
    hazard: rebase
    buffers:
      a: {bytes: 4KiB, slot: retained}
    streams: [main]
    phases:
      - capture: {name: small, ops: [{fill: {dst: a, value: 1}}]}
      - eager: [{grow: {buffer: a, bytes: 8KiB}}]
      - capture: {name: big, ops: [{fill: {dst: a, value: 2}}]}
    expect: {guarded: refused, refused-by: {step: ` + step + `}}
`
		}
		Expect(load(phases("phase 2 op 1")).Expect.RefusedBy).To(Equal(&probes.RefusedBy{Step: "phase 2 op 1"}))
		Expect(problems(phases("phase 2 op 2"))).To(ConsistOf(
			`a.yaml:13:51: refused-by: expect refused-by step phase 2 op 2: phase 2 has 1 ops`))
		Expect(problems(phases("phase 3 op 1"))).To(ConsistOf(
			`a.yaml:13:51: refused-by: expect refused-by step phase 3 op 1: entry 3 of the probe's phases is no eager entry`))
		Expect(problems(phases("between"))).To(ConsistOf(
			`a.yaml:13:51: refused-by: expect refused-by step between: the probe has no between step`))
		Expect(load(phases("capture big op 1")).Expect.RefusedBy.Step).To(Equal("capture big op 1"))
	})

	It("reports a refused-by where no instance it decides expects refused", func() {
		Expect(problems(refusedSet(`{guarded: exact, refused-by: {guard: retained}}`))).To(ConsistOf(
			`a.yaml:15:30: refused-by: expect refused-by names who must refuse, but no instance it decides expects refused`))
		Expect(problems(refusedSet(`{guarded: refused, platforms: {cuda: {guarded: exact, refused-by: {guard: residency}}}}`))).To(ConsistOf(
			`a.yaml:15:67: refused-by: expect platforms cuda refused-by names who must refuse, but no instance it decides expects refused`))
		Expect(problems(refusedSet(`{guarded: refused, modes: {relaxed: {guarded: exact, refused-by: {}}}}`))).To(ConsistOf(
			`a.yaml:15:66: refused-by: expect modes relaxed refused-by names who must refuse, but no instance it decides expects refused`))
		// Unguarded refusals count: a runtime may refuse in program mode too.
		load(refusedSet(`{guarded: exact, unguarded: refused, refused-by: {guard: retained}}`))
		// Decided in one cell is enough: cuda overrides the probe's own, which still decides cann.
		load(refusedSet(`{guarded: refused, refused-by: {guard: retained}, platforms: {cuda: {refused-by: {guard: residency}}}}`))
	})

	It("is given, guard and step, wherever the catalog expects an instance refused", func() {
		sets, err := probes.Load(probes.DefaultLimits(), "../specs")
		Expect(err).NotTo(HaveOccurred())
		n := 0
		for _, s := range sets {
			for _, in := range probes.Instances(s.Probes, probes.Matrix{}) {
				for _, platform := range []string{"sim/cann", "sim/cuda"} {
					want, _ := in.ExpectedOn(platform)
					if want != probes.Refused {
						continue
					}
					n++
					by := in.RefusedByOn(platform)
					Expect(by).NotTo(BeNil(), "%s on %s: expected refused, and no refused-by", in.ID(), platform)
					Expect(by.Guard).NotTo(BeEmpty(), "%s on %s", in.ID(), platform)
					Expect(by.Step).NotTo(BeEmpty(), "%s on %s", in.ID(), platform)
				}
			}
		}
		Expect(n).To(BeNumerically(">", 100))
	})
})
