package verdict

import (
	"fmt"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
)

// Status is how a result compares with what was expected of it.
type Status string

const (
	Pass            Status = "pass"
	Fail            Status = "fail"
	Skip            Status = "skip"
	Uncharacterised Status = "uncharacterised" // no expectation: recorded, not judged
)

// Rule names the rule of Judge that decided a verdict.
type Rule string

const (
	RuleSkipped       Rule = "skipped"        // the instance did not run
	RuleError         Rule = "error"          // the run ended in error
	RuleNoExpectation Rule = "no-expectation" // neither the probe nor a baseline says what to expect
	RuleOutcome       Rule = "outcome"        // the outcome is, or is not, the one the probe expects
	RuleRejectedBy    Rule = "rejected-by"    // the rejection's class is not one the probe names
	RuleRefusedBy     Rule = "refused-by"     // the refusal is not by the guard, or at the step, the probe names
	RuleDrift         Rule = "drift"          // the platform's behaviour differs from the baseline
	RuleBaseline      Rule = "baseline"       // the baseline holds the instance as it happened
)

// Verdict is the judgement of one result.
type Verdict struct {
	Status Status `json:"status"`
	Rule   Rule   `json:"rule"`
	// Reason says why the status is not pass, in one sentence ("" for a plain pass; a pass the
	// baseline decided says so).
	Reason string `json:"reason,omitempty"`
	// Drift is the platform behaviour that changed from the baseline, when that is why it failed.
	Drift *Drift `json:"drift,omitempty"`
	// Baseline names the baseline file that took part in the judgement, if one did.
	Baseline string `json:"baseline,omitempty"`
}

// Judge is the verdict of res against its own expectation and, for an unguarded instance, the
// platform baseline b (nil: none). It is the only place a verdict is decided:
//
//   - skipped is skip; a run that ended in error fails, expected or not: it proves nothing;
//   - an outcome other than the expected one fails, a rejection must be of one of the probe's
//     rejected-by classes when it names any, and the first refusal must be by the guard and at
//     the step the probe's refused-by names, when it names them (by the step alone when the
//     runtime names no guard: a plugin of ABI version 1 to 3);
//   - behaviour that differs from the baseline fails with the drift;
//   - an instance without expectation passes when the baseline holds it as it happened, and is
//     uncharacterised when the baseline does not hold it.
func Judge(res *capture.Result, b *Baseline) Verdict {
	v := expectation(res)
	if b == nil || (v.Status != Pass && v.Status != Uncharacterised) {
		return v
	}
	d, drifted := b.Compare(res)
	switch {
	case drifted && d.Changed():
		return Verdict{Status: Fail, Rule: RuleDrift, Reason: fmt.Sprintf("drift from baseline %s (%s): %s", b.Platform, b.File, d), Drift: &d, Baseline: b.File}
	case !drifted && !res.Guarded && v.Status == Uncharacterised:
		return Verdict{Status: Pass, Rule: RuleBaseline, Reason: "matches baseline " + b.Platform, Baseline: b.File}
	}
	return v
}

// expectation judges res against what the probe itself expects.
func expectation(res *capture.Result) Verdict {
	switch {
	case res.Outcome == probes.Skipped:
		return Verdict{Status: Skip, Rule: RuleSkipped, Reason: res.Reason}
	case res.Outcome == probes.Errored:
		return Verdict{Status: Fail, Rule: RuleError, Reason: "the run ended in error: " + res.Reason}
	case res.Expected == "":
		return Verdict{Status: Uncharacterised, Rule: RuleNoExpectation, Reason: "no expectation for this instance"}
	case res.Outcome != res.Expected:
		return Verdict{Status: Fail, Rule: RuleOutcome, Reason: "expected " + string(res.Expected) + ", got " + string(res.Outcome) + ": " + res.Reason}
	case res.Outcome == probes.Rejected && len(res.RejectedBy) > 0 && res.Rejection != nil:
		for _, c := range res.RejectedBy {
			if c == res.Rejection.Class {
				return Verdict{Status: Pass, Rule: RuleRejectedBy}
			}
		}
		return Verdict{Status: Fail, Rule: RuleRejectedBy, Reason: "rejected with class " + string(res.Rejection.Class) + ", not one of the expected rejected-by classes"}
	case res.Outcome == probes.Refused && res.RefusedBy != nil && res.Refusal != nil:
		r, want := res.Refusal, *res.RefusedBy
		if r.Guard == "" && want.Guard != "" {
			// A runtime of ABI version 1 to 3 names no guard: its refusals load and are judged as
			// before, by the step, which still tells a layer's refusal from the next one's.
			if (probes.RefusedBy{Step: want.Step}).Matches("", r.Step) {
				return Verdict{Status: Pass, Rule: RuleRefusedBy, Reason: "refused at " + r.Step.String() + "; the runtime names no guard, so only the step was judged"}
			}
			return Verdict{Status: Fail, Rule: RuleRefusedBy, Reason: fmt.Sprintf("refused by a guard the runtime did not name at %s (%s), expected refused by %s", r.Step, r.Op, want)}
		}
		if want.Matches(r.Guard, r.Step) {
			return Verdict{Status: Pass, Rule: RuleRefusedBy}
		}
		return Verdict{Status: Fail, Rule: RuleRefusedBy, Reason: fmt.Sprintf("refused by guard %s at %s (%s), expected refused by %s", r.Guard, r.Step, r.Op, want)}
	}
	return Verdict{Status: Pass, Rule: RuleOutcome}
}
