package verdict_test

import (
	"context"
	"github.com/replaycheck/replaycheck/runtime/guard"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/verdict"
)

// relaxedCopy is the relaxed instance of platform/unsafe-call-by-capturing-thread: a synchronous
// copy by the capturing thread of a relaxed capture. ACL lets it through; CUDA rejects it (906, legacy-stream
// work), which the probe's expect.platforms states.
const relaxedCopy = `version: replaycheck/v1
set: platforms
probes:
  - name: relaxed-copy
    hazard: unsafe-call
    modes: [relaxed]
    guards: [on]
    buffers:
      a: {bytes: 4KiB}
      b: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - fill: {dst: a, value: 0x2E}
        - write: {dst: b, value: iota8}
    expect:
      guarded: exact
      platforms:
        cuda: {guarded: rejected, rejected-by: [capture-implicit]}
`

// judgeOn runs the probe's one instance on the simulator with profile and judges it with no
// baseline (a guarded instance is judged by its expectation alone).
func judgeOn(text, profile string) (*capture.Result, verdict.Verdict) {
	GinkgoHelper()
	set, err := probes.Parse("platforms.yaml", []byte(text), probes.DefaultLimits())
	Expect(err).NotTo(HaveOccurred())
	ins := probes.Instances(set.Probes, probes.Matrix{Replays: 1})
	Expect(ins).To(HaveLen(1))
	be, err := sim.New(sim.Options{Profile: profile})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(be.Close)
	dev, err := be.Open(context.Background(), 0)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(dev.Close)
	res := capture.Run(context.Background(), dev, ins[0], capture.Options{Runtime: guard.Reference(guard.Options{})})
	return res, verdict.Judge(res, nil)
}

var _ = Describe("an expectation per platform family (expect.platforms)", func() {
	It("decides on the family's platforms: the cuda instance is judged by the cuda entry", func() {
		res, v := judgeOn(relaxedCopy, "cuda")
		Expect(res.Platform).To(Equal("sim/cuda"))
		Expect(res.Outcome).To(Equal(probes.Rejected))
		Expect(res.Rejection.Class).To(Equal(device.ClassCaptureImplicit))
		Expect(res.Expected).To(Equal(probes.Rejected), "the result records the expectation of its platform")
		Expect(res.RejectedBy).To(Equal([]device.Class{device.ClassCaptureImplicit}))
		Expect(v).To(Equal(verdict.Verdict{Status: verdict.Pass, Rule: verdict.RuleRejectedBy}))
	})

	It("leaves the other family to the probe's own expectation", func() {
		res, v := judgeOn(relaxedCopy, "cann")
		Expect(res.Platform).To(Equal("sim/cann"))
		Expect(res.Outcome).To(Equal(probes.Exact))
		Expect(res.Expected).To(Equal(probes.Exact))
		Expect(res.RejectedBy).To(BeEmpty())
		Expect(v.Status).To(Equal(verdict.Pass), v.Reason)
	})

	It("is what makes the cuda instance pass: without it, the cuda instance fails and the cann one still passes", func() {
		without, _, found := strings.Cut(relaxedCopy, "      platforms:\n")
		Expect(found).To(BeTrue())
		res, v := judgeOn(without, "cuda")
		Expect(res.Expected).To(Equal(probes.Exact))
		Expect(v.Status).To(Equal(verdict.Fail))
		Expect(v.Rule).To(Equal(verdict.RuleOutcome))
		Expect(v.Reason).To(HavePrefix("expected exact, got rejected"))
		_, v = judgeOn(without, "cann")
		Expect(v.Status).To(Equal(verdict.Pass), v.Reason)
	})

	It("judges a result read back alone as the original: the expectation of its platform travels in it", func() {
		res, v := judgeOn(relaxedCopy, "cuda")
		back := *res
		back.Timeline = capture.Timeline{}
		Expect(verdict.Judge(&back, nil)).To(Equal(v))
		// The same outcome recorded on a platform of the other family is held to that family's
		// expectation.
		in := probes.Instance{Probe: mustProbe(relaxedCopy), Mode: device.Relaxed, Guarded: true}
		back.Platform = "acl/cann-9.0-a2a3"
		back.Expected, back.RejectedBy = in.ExpectedOn(back.Platform)
		Expect(verdict.Judge(&back, nil).Status).To(Equal(verdict.Fail))
		back.Platform = "cuda/13.0-h200"
		back.Expected, back.RejectedBy = in.ExpectedOn(back.Platform)
		Expect(verdict.Judge(&back, nil)).To(Equal(v))
	})
})

func mustProbe(text string) *probes.Probe {
	GinkgoHelper()
	set, err := probes.Parse("platforms.yaml", []byte(text), probes.DefaultLimits())
	Expect(err).NotTo(HaveOccurred())
	return set.Probes[0]
}
