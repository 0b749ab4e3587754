//go:build cgo

package cuda_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/device/sim/situations"
)

// The fake libcuda.so.1 through the binding against the simulator on the cuda profile, rule by
// rule: every rule, for each call, capture mode and caller mode it names, sets its situation up on
// both devices, makes the call on both and compares what they answer and what becomes of the
// captures, once with every stream of the situation blocking and once non-blocking. Under the
// stream kind the rule's situation needs (situations.Flags) the answer must be the rule's
// own, so that every rule, allow rows included, is exercised over the fake. The situations are
// the simulator's (device/sim/situations), and the capture-invalidated one invalidates its
// capture with a rule (a sync of the capturing stream) on both devices.

// ruleOutcome is what a device answered one rule's call, and what became of the captures.
type ruleOutcome struct {
	Code        int
	Name        string
	Class       device.Class
	Invalidated bool
	Watch, Also device.CaptureStatus
}

// playRule sets rule r's situation up on d with streams of kind flags, makes call from a thread in
// callerMode and reports the outcome.
func playRule(d device.Device, r sim.Rule, call string, mode, callerMode device.CaptureMode, flags device.StreamFlags) (ruleOutcome, *situations.Stage) {
	GinkgoHelper()
	st := situations.New(d, mode, flags)
	st.Meet(r, callerMode)
	var out ruleOutcome
	if err := st.Do(call); err != nil {
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue(), "want a *device.Error, got %T: %v", err, err)
		out = ruleOutcome{Code: e.Code, Name: e.Name, Class: e.Class, Invalidated: e.Invalidated}
	}
	if st.Watch != 0 {
		out.Watch = st.Status(st.Watch)
	}
	if st.Also != 0 {
		out.Also = st.Status(st.Also)
	}
	return out, st
}

// cudaRuleEntries makes one entry per rule of the cuda profile, call, capture mode, caller mode
// and stream kind.
func cudaRuleEntries() []TableEntry {
	p := profile("cuda")
	var out []TableEntry
	for i, r := range p.Rules {
		for _, c := range situations.Cases(r) {
			for _, f := range []device.StreamFlags{device.Blocking, device.NonBlocking} {
				kind := map[device.StreamFlags]string{device.Blocking: "blocking", device.NonBlocking: "non-blocking"}[f]
				out = append(out, Entry(fmt.Sprintf("rule %d [%s, %v, caller %v, %s streams]: %s", i+1, c.Call, c.Mode, c.CallerMode, kind, r.Situation),
					i, c.Call, c.Mode, c.CallerMode, f))
			}
		}
	}
	return out
}

var _ = Describe("the cuda profile's rules, the fake against the simulator", func() {
	DescribeTable("answers every rule's situation as the simulator does, and as the rule says under the stream kind it needs",
		func(ctx SpecContext, index int, call string, mode, callerMode device.CaptureMode, flags device.StreamFlags) {
			r := profile("cuda").Rules[index]
			if r.Crash != "" {
				Skip("the platform's process dies in this call, and so does the fake's: device/fake's behaviour specs play it in a child process")
			}
			b, err := sim.New(sim.Options{Profile: "cuda", Memory: 1 << 30})
			Expect(err).NotTo(HaveOccurred())
			simDev, err := b.Open(context.Background(), 0)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(simDev.Close)
			want, _ := playRule(simDev, r, call, mode, callerMode, flags)
			_, fakeDev := open(ctx, libs.Full)
			got, st := playRule(fakeDev, r, call, mode, callerMode, flags)
			Expect(got).To(Equal(want), "the fake answers %s as the simulator does", call)

			if flags != situations.Flags(r.When) {
				return
			}
			if r.Allow {
				Expect(got.Code).To(BeZero(), "the platform lets %s through: %s", call, r.Situation)
				return
			}
			Expect([]any{got.Code, got.Name, got.Class}).To(Equal([]any{r.Code, r.Name, r.Class}))
			Expect(got.Invalidated).To(Equal(r.Invalidates && st.WasStatus == device.CaptureActive))
		},
		cudaRuleEntries(),
	)

	It("has a situation for every condition of the cuda profile", func() {
		for _, r := range profile("cuda").Rules {
			Expect(situations.ByCondition).To(HaveKey(r.When))
		}
	})
})
