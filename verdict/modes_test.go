package verdict_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime/guard"
	"github.com/replaycheck/replaycheck/verdict"
)

// freeInCapture frees a buffer the graph does not use during the capture, unguarded. CUDA
// rejects it (900, a potentially unsafe call) in a global or thread-local capture and allows it in
// a relaxed one; Ascend does not check it. Its expectation says so by platform × mode.
const freeInCapture = `version: replaycheck/v1
set: modes
probes:
  - name: free-in-capture
    hazard: free-in-capture
    guards: [off]
    buffers:
      a: {bytes: 4KiB}
    streams: [main]
    prepare:
      - alloc: {buffer: tmp, bytes: 4KiB}
    capture:
      ops:
        - fill: {dst: a, value: 0x34}
        - free: {buffer: tmp}
    expect:
      unguarded: exact
      platforms:
        cuda:
          unguarded: rejected
          rejected-by: [capture-unsupported]
          modes:
            relaxed: {unguarded: exact}
`

// endOnOtherThread ends the capture from another thread, guarded: both platforms reject it in a
// global or thread-local capture and allow it in a relaxed one. Its expectation says so by mode.
const endOnOtherThread = `version: replaycheck/v1
set: modes
probes:
  - name: end-on-other-thread
    hazard: wrong-thread
    guards: [on]
    buffers:
      a: {bytes: 4KiB}
    streams: [main]
    capture:
      end-thread: other
      ops:
        - fill: {dst: a, value: 0x2B}
    expect:
      guarded: rejected
      rejected-by: [wrong-thread]
      modes:
        relaxed: {guarded: exact}
`

// judgeModes runs every instance of the file's one probe (one guard setting, each capture mode) on
// the simulator with profile and judges each with no baseline.
func judgeModes(text, profile string) map[device.CaptureMode]verdict.Verdict {
	GinkgoHelper()
	set, err := probes.Parse("modes.yaml", []byte(text), probes.DefaultLimits())
	Expect(err).NotTo(HaveOccurred())
	ins := probes.Instances(set.Probes, probes.Matrix{Replays: 1})
	Expect(ins).To(HaveLen(len(device.CaptureModes())))
	be, err := sim.New(sim.Options{Profile: profile})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(be.Close)
	out := map[device.CaptureMode]verdict.Verdict{}
	for _, in := range ins {
		dev, err := be.Open(context.Background(), 0)
		Expect(err).NotTo(HaveOccurred())
		res := capture.Run(context.Background(), dev, in, capture.Options{Runtime: guard.Reference(guard.Options{})})
		Expect(dev.Close()).To(Succeed())
		want, by := in.ExpectedOn(res.Platform)
		Expect(res.Expected).To(Equal(want), "%s: the result records the expectation of its platform and mode", in.ID())
		Expect(res.RejectedBy).To(Equal(by), in.ID())
		v := verdict.Judge(res, nil)
		// A result read back alone judges as the original: the mode's expectation travels in it.
		back := *res
		back.Timeline = capture.Timeline{}
		Expect(verdict.Judge(&back, nil)).To(Equal(v), in.ID())
		out[in.Mode] = v
	}
	return out
}

// without cuts the lines of text from the one that starts with from up to (not including) the
// next one indented no deeper.
func without(text, from string) string {
	GinkgoHelper()
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if strings.TrimSpace(line) != from {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		j := i + 1
		for j < len(lines) && len(lines[j])-len(strings.TrimLeft(lines[j], " ")) > indent {
			j++
		}
		return strings.Join(append(lines[:i:i], lines[j:]...), "\n")
	}
	Fail("no line " + from)
	return ""
}

var _ = Describe("an expectation per capture mode (expect.modes, platform × mode)", func() {
	It("platform × mode over platform: CUDA rejects the free in global and thread-local and allows it in relaxed", func() {
		vs := judgeModes(freeInCapture, "cuda")
		Expect(vs[device.Global]).To(Equal(verdict.Verdict{Status: verdict.Pass, Rule: verdict.RuleRejectedBy}), "the cuda entry")
		Expect(vs[device.ThreadLocal]).To(Equal(verdict.Verdict{Status: verdict.Pass, Rule: verdict.RuleRejectedBy}), "the cuda entry")
		Expect(vs[device.Relaxed]).To(Equal(verdict.Verdict{Status: verdict.Pass, Rule: verdict.RuleOutcome}), "cuda × relaxed")
	})

	It("the probe's own where no entry names the family: Ascend lets the free through in every mode", func() {
		for mode, v := range judgeModes(freeInCapture, "cann") {
			Expect(v).To(Equal(verdict.Verdict{Status: verdict.Pass, Rule: verdict.RuleOutcome}), "%s", mode)
		}
	})

	It("negative control: without cuda × relaxed, the cuda relaxed instance fails and the others still pass", func() {
		text := without(freeInCapture, "modes:")
		Expect(text).NotTo(ContainSubstring("relaxed"))
		vs := judgeModes(text, "cuda")
		Expect(vs[device.Relaxed].Status).To(Equal(verdict.Fail))
		Expect(vs[device.Relaxed].Rule).To(Equal(verdict.RuleOutcome))
		Expect(vs[device.Relaxed].Reason).To(HavePrefix("expected rejected, got exact"))
		Expect(vs[device.Global].Status).To(Equal(verdict.Pass))
		Expect(vs[device.ThreadLocal].Status).To(Equal(verdict.Pass))
		for mode, v := range judgeModes(text, "cann") {
			Expect(v.Status).To(Equal(verdict.Pass), "%s", mode)
		}
	})

	It("mode over the probe's own, on every platform: a capture ended on another thread", func() {
		for _, profile := range []string{"cuda", "cann"} {
			vs := judgeModes(endOnOtherThread, profile)
			Expect(vs[device.Global]).To(Equal(verdict.Verdict{Status: verdict.Pass, Rule: verdict.RuleRejectedBy}), profile)
			Expect(vs[device.ThreadLocal]).To(Equal(verdict.Verdict{Status: verdict.Pass, Rule: verdict.RuleRejectedBy}), profile)
			Expect(vs[device.Relaxed]).To(Equal(verdict.Verdict{Status: verdict.Pass, Rule: verdict.RuleOutcome}), "%s: expect.modes relaxed", profile)
		}
	})

	It("negative control: without expect.modes, the relaxed instance fails on every platform", func() {
		text := without(endOnOtherThread, "modes:")
		for _, profile := range []string{"cuda", "cann"} {
			vs := judgeModes(text, profile)
			Expect(vs[device.Relaxed].Status).To(Equal(verdict.Fail), profile)
			Expect(vs[device.Relaxed].Reason).To(HavePrefix("expected rejected, got exact"), profile)
			Expect(vs[device.Global].Status).To(Equal(verdict.Pass), profile)
		}
	})

	It("mode over platform: an expect.modes entry decides where the family's entry says otherwise", func() {
		// The cuda entry expects the free rejected everywhere; expect.modes relaxed, more specific,
		// says exact on every platform, cuda included.
		text := strings.Replace(without(freeInCapture, "modes:"), "    expect:\n", "    expect:\n      modes:\n        relaxed: {unguarded: exact}\n", 1)
		vs := judgeModes(text, "cuda")
		for _, mode := range device.CaptureModes() {
			Expect(vs[mode].Status).To(Equal(verdict.Pass), "%s: %s", mode, vs[mode].Reason)
		}
		// And platform × mode over mode: cuda × relaxed rejected beats expect.modes relaxed exact,
		// so the relaxed cuda instance (exact) fails.
		text = strings.Replace(freeInCapture, "relaxed: {unguarded: exact}", "relaxed: {unguarded: rejected}", 1)
		text = strings.Replace(text, "    expect:\n", "    expect:\n      modes:\n        relaxed: {unguarded: exact}\n", 1)
		vs = judgeModes(text, "cuda")
		Expect(vs[device.Relaxed].Status).To(Equal(verdict.Fail))
		Expect(vs[device.Relaxed].Reason).To(HavePrefix("expected rejected, got exact"))
	})
})
