package capture

import (
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/probes"
)

// classify sets the outcome and its reason. Precedence: error > corrupted > rejected > refused >
// exact; the silent case dominates everything but a broken instance.
func (in *instance) classify(err error) {
	res := in.res
	// Only a rejection the capture went on after has later replays of it: a rejected end made no
	// graph.
	if rej := res.Rejection; rej != nil && rej.DuringCapture && !rej.Invalidated && !rej.EndedCapture() && res.Rounds > 0 {
		exact := res.CorruptedRounds == 0
		rej.ReplaysExact = &exact
	}
	switch {
	case err != nil:
		res.Outcome, res.Reason, res.Error = probes.Errored, err.Error(), runErrorOf(err)
	case res.CorruptedRounds > 0:
		res.Outcome, res.Reason = probes.Corrupted, in.corruptionReason()
	case staleRan(res) != nil:
		res.Outcome, res.Reason = probes.Corrupted, in.staleReason(staleRan(res))
	case unfaithful(res) != nil:
		res.Outcome, res.Reason = probes.Corrupted, "no checked byte differs, but "+graphReason(unfaithful(res))
	case res.Rejection != nil:
		var b strings.Builder
		b.WriteString(rejectionReason(res.Rejection))
		listStale(&b, res.Stale, func(st StaleRange) {
			fmt.Fprintf(&b, "; graph %s %s %s at %v, captured at generation %d, now %s", st.Capture, st.Access.Verb(), st.Buffer, st.Range, st.Generation, st.Now)
		})
		res.Outcome, res.Reason = probes.Rejected, b.String()
	case res.Refusal != nil:
		res.Outcome = probes.Refused
		res.Reason = res.Refusal.Reason()
	default:
		res.Outcome = probes.Exact
		res.Reason = fmt.Sprintf("%d of %d rounds byte-identical to the oracle, no error", res.Rounds, res.Replays)
	}
	if in.deviceGone(err) {
		res.DeviceState = DeviceLost
	}
}

// deviceGone reports whether the device runs nothing more: it was lost (err), or a sticky error
// answered a replay (poisoned), which leaves it as if lost.
func (in *instance) deviceGone(err error) bool { return kindOf(err) == ErrDeviceLost || in.poisoned }

func (in *instance) corruptionReason() string {
	res := in.res
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d rounds differ from the oracle, first at round %d", res.CorruptedRounds, res.Rounds, res.FirstCorrupted)
	if len(res.Mismatches) > 0 {
		m := res.Mismatches[0]
		fmt.Fprintf(&b, " (%s at offset %d, %s)", m.Buffer, m.Offset, plural.Count(m.Length, "byte"))
	}
	listStale(&b, res.Stale, func(s StaleRange) {
		fmt.Fprintf(&b, "; graph %s captured %s at %v, now %s", s.Capture, s.Buffer, s.Range, s.Now)
		if !s.Ran {
			b.WriteString(" (the platform rejected that launch)")
		}
	})
	if step, ok := res.Timeline.firstEager(); ok {
		if _, graph := in.graphs[step.Capture]; graph {
			fmt.Fprintf(&b, "; %s ran eagerly outside the capture, so replays do not repeat it", step)
		} else {
			// The capture yielded no graph: nothing replays, and the op ran once all the same.
			fmt.Fprintf(&b, "; %s ran eagerly outside the capture, once, though the capture yielded no graph to run it", step)
		}
	}
	if res.Rejection != nil {
		fmt.Fprintf(&b, "; also %s", rejectionReason(res.Rejection))
	}
	return b.String()
}

// staleInReason is how many stale ranges a reason lists; the result's Stale has them all. A probe
// that re-bases thousands of buffers would otherwise get a reason as long as its ledger.
const staleInReason = 3

// listStale writes the first staleInReason stale ranges with each, and how many it left out.
func listStale(b *strings.Builder, stale []StaleRange, each func(StaleRange)) {
	for _, s := range stale[:min(len(stale), staleInReason)] {
		each(s)
	}
	if more := len(stale) - staleInReason; more > 0 {
		fmt.Fprintf(b, "; and %s (the result's stale list has every one)", plural.Count(int64(more), "more stale range"))
	}
}

// staleRan returns the first stale range a launch ran over, nil when none.
func staleRan(res *Result) *StaleRange {
	for i := range res.Stale {
		if res.Stale[i].Ran {
			return &res.Stale[i]
		}
	}
	return nil
}

// staleReason explains a corruption no checked byte shows yet: a replay used memory the buffer it
// captured no longer owns.
func (in *instance) staleReason(s *StaleRange) string {
	reason := fmt.Sprintf("no checked byte differs, but replay round %d of graph %s used stale memory: it %s %s at %v, captured at generation %d, now %s",
		s.Round, s.Capture, s.Access.Verb(), s.Buffer, s.Range, s.Generation, s.Now)
	if n := len(in.res.Stale); n > 1 {
		reason += fmt.Sprintf(" (and %s)", plural.Count(int64(n-1), "more stale range"))
	}
	if in.res.Rejection != nil {
		reason += "; also " + rejectionReason(in.res.Rejection)
	}
	return reason
}

func rejectionReason(rej *Rejection) string {
	s := fmt.Sprintf("platform rejected %s (%s) with %d", rej.Step, rej.Op, rej.Code)
	if rej.Name != "" {
		s += " " + rej.Name
	}
	s += " [" + string(rej.Class) + "]"
	if rej.Asynchronous {
		s += ", reported by the synchronisation after the launch"
	}
	if rej.Sticky {
		s += ", sticky: nothing more ran on the device"
	}
	switch {
	case !rej.DuringCapture:
	case rej.Invalidated:
		s += ", capture invalidated"
	case rej.EndedCapture():
		s += ", no graph"
	default:
		s += ", capture not invalidated"
		if rej.ReplaysExact != nil && *rej.ReplaysExact {
			s += ", later replays exact"
		}
	}
	return s
}
