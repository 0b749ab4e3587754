package verdict_test

import (
	"context"
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime/guard"
	"github.com/replaycheck/replaycheck/verdict"
)

// retainedRebase grows a retained buffer after the capture and allocates a bystander where it
// was: the retained slot refuses the growth (between op 1). Without it the buffer re-bases and
// the residency check refuses the replay instead (replay 1 main): the same outcome, refused, by
// the wrong guard at the wrong step.
const retainedRebase = `version: replaycheck/v1
set: refusals
probes:
  - name: retained-rebase
    hazard: rebase
    guards: [on]
    modes: [global]
    buffers:
      src: {bytes: 4KiB, init: iota32}
      dst: {bytes: 4KiB, init: zero, slot: retained}
    streams: [main]
    capture:
      ops:
        - copy: {dst: dst, src: src}
    between:
      - grow: {buffer: dst, bytes: 8KiB}
      - alloc: {buffer: bystander, bytes: 4KiB, init: fill:0xEE}
    expect:
      guarded: refused
      refused-by: {guard: retained, step: between op 1}
`

// judgeRefusal runs the file's one instance on the simulator through the reference guards with
// opts, and judges it with no baseline; a result read back from its JSON judges the same.
func judgeRefusal(text string, opts guard.Options) (*capture.Result, verdict.Verdict) {
	GinkgoHelper()
	set, err := probes.Parse("refusals.yaml", []byte(text), probes.DefaultLimits())
	Expect(err).NotTo(HaveOccurred())
	ins := probes.Instances(set.Probes, probes.Matrix{Replays: 2})
	Expect(ins).To(HaveLen(1))
	be, err := sim.New(sim.Options{Profile: "cann"})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(be.Close)
	dev, err := be.Open(context.Background(), 0)
	Expect(err).NotTo(HaveOccurred())
	defer func() { Expect(dev.Close()).To(Succeed()) }()
	res := capture.Run(context.Background(), dev, ins[0], capture.Options{Runtime: guard.Reference(opts)})
	v := verdict.Judge(res, nil)
	data, err := json.Marshal(res)
	Expect(err).NotTo(HaveOccurred())
	var back capture.Result
	Expect(json.Unmarshal(data, &back)).To(Succeed())
	Expect(back.RefusedBy).To(Equal(res.RefusedBy))
	Expect(verdict.Judge(&back, nil)).To(Equal(v), "the expectation and the guard travel in the result")
	return res, v
}

var _ = Describe("who must refuse (expect.refused-by)", func() {
	It("passes the refusal the probe names: the retained slot, at the growth", func() {
		res, v := judgeRefusal(retainedRebase, guard.Options{})
		Expect(res.RefusedBy).To(Equal(&probes.RefusedBy{Guard: "retained", Step: "between op 1"}))
		Expect(res.Refusal.Guard).To(Equal("retained"))
		Expect(v).To(Equal(verdict.Verdict{Status: verdict.Pass, Rule: verdict.RuleRefusedBy}))
	})

	It("negative control: without the retained slot, residency refuses the replay, and the instance fails saying so", func() {
		res, v := judgeRefusal(retainedRebase, guard.Options{Disabled: guard.Disabled{RetainedSlot: true}})
		Expect(res.Outcome).To(Equal(probes.Refused), "refused all the same: that is what hid the defect")
		Expect(v.Status).To(Equal(verdict.Fail))
		Expect(v.Rule).To(Equal(verdict.RuleRefusedBy))
		Expect(v.Reason).To(Equal("refused by guard residency at replay 1 main (Launch), expected refused by guard retained at between op 1"))
	})

	It("without refused-by, the same defect passes: the expectation is what catches it", func() {
		text := without(retainedRebase, "refused-by: {guard: retained, step: between op 1}")
		_, v := judgeRefusal(text, guard.Options{Disabled: guard.Disabled{RetainedSlot: true}})
		Expect(v).To(Equal(verdict.Verdict{Status: verdict.Pass, Rule: verdict.RuleOutcome}))
	})

	It("a step alone, or a phase, or a guard alone", func() {
		off := guard.Options{Disabled: guard.Disabled{RetainedSlot: true}}
		for by, pass := range map[string]bool{
			"{step: replay}":                          true,
			"{step: replay 1 main}":                   true,
			"{step: between}":                         false,
			"{guard: residency}":                      true,
			"{guard: residency, step: capture}":       false,
			"{guard: retained}":                       false,
			"{}":                                      true,
			"{guard: residency, step: replay 2 main}": false,
		} {
			text := without(retainedRebase, "refused-by: {guard: retained, step: between op 1}") + "      refused-by: " + by + "\n"
			_, v := judgeRefusal(text, off)
			Expect(v.Status == verdict.Pass).To(Equal(pass), "%s: %s", by, v.Reason)
		}
	})

	It("judges a refusal whose runtime named no guard by its step alone, and says so", func() {
		res := &capture.Result{Outcome: probes.Refused, Expected: probes.Refused, Guarded: true,
			RefusedBy: &probes.RefusedBy{Guard: "retained", Step: "between op 1"},
			Refusal:   &capture.Refusal{Step: probes.OpStep(probes.PhaseBetween, "", 0), Op: "Provision"}}
		v := verdict.Judge(res, nil)
		Expect(v.Status).To(Equal(verdict.Pass))
		Expect(v.Reason).To(Equal("refused at between op 1; the runtime names no guard, so only the step was judged"))

		By("the step still tells the retained slot's refusal from the residency check's at the replay")
		res.Refusal = &capture.Refusal{Step: probes.LaunchStep(1, "main"), Op: "Launch"}
		v = verdict.Judge(res, nil)
		Expect(v.Status).To(Equal(verdict.Fail))
		Expect(v.Reason).To(Equal("refused by a guard the runtime did not name at replay 1 main (Launch), expected refused by guard retained at between op 1"))

		By("a guard named by the runtime is judged by its name")
		res.Refusal = &capture.Refusal{Step: probes.OpStep(probes.PhaseBetween, "", 0), Op: "Provision", Guard: "residency"}
		Expect(verdict.Judge(res, nil).Status).To(Equal(verdict.Fail))
	})

	It("judges the outcome first: an instance expected refused that came out exact fails by outcome", func() {
		res := &capture.Result{Outcome: probes.Exact, Expected: probes.Refused, Guarded: true, RefusedBy: &probes.RefusedBy{Guard: "retained"}}
		Expect(verdict.Judge(res, nil).Rule).To(Equal(verdict.RuleOutcome))
	})
})
