package capture

import (
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
)

// timeline records the device calls of one run in order, each stamped with the phase and replay
// round the engine is in. An event is complete when it is recorded: nothing is added afterwards.
type timeline struct {
	events []Event
	phase  Phase
	round  int
}

// record appends ev (its call, step, thread, result and flags filled in by the caller) with the
// next sequence number, the current phase and round, and err's code, class and text.
func (t *timeline) record(ev Event, err error) Event {
	ev.Seq, ev.Phase, ev.Round = len(t.events)+1, t.phase, t.round
	if err != nil {
		ev.Err = err.Error()
		ev.Class = runtime.ClassOf(err)
		if e, ok := runtime.AsError(err); ok {
			ev.Code = e.Code
		}
	}
	t.events = append(t.events, ev)
	return ev
}

// skipped records a probe step that was not issued, and why.
func (t *timeline) skipped(step probes.Step, op *probes.Op, why string) {
	t.record(Event{Step: &step, Call: string(op.Kind), Thread: op.Thread, Skipped: why}, nil)
}

// skippedCall records an engine call that was not made, and why.
func (t *timeline) skippedCall(call, why string) {
	t.record(Event{Call: call, Thread: runtime.Main, Skipped: why}, nil)
}

// enter switches the phase later events are stamped with and returns the one it replaced.
func (t *timeline) enter(p Phase) Phase {
	prev := t.phase
	t.phase = p
	return prev
}

// last is the last event recorded (the zero Event before any).
func (t *timeline) last() Event {
	if n := len(t.events); n > 0 {
		return t.events[n-1]
	}
	return Event{}
}

// lastErr is the error text of the last event, for messages about a call that just failed.
func (t *timeline) lastErr() string {
	if err := t.last().Err; err != "" {
		return err
	}
	return "unknown error"
}
