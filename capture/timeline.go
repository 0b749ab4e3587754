package capture

import (
	"strings"

	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
)

// timeline records the device calls of one run in order, each stamped with the phase and replay
// round the engine is in. An event is complete when it is recorded: nothing is added afterwards.
//
// A capture of 100,000 ops records 100,000 events, so recording one allocates nothing of its own:
// events go to a slice sized for the probe up front, their steps to blocks of steps, and their
// call texts to blocks of text (text).
type timeline struct {
	events []Event
	seq    int // calls recorded, those of elided rounds included
	phase  Phase
	round  int
	steps  []probes.Step // the current block of kept steps
	blocks int           // step blocks made
	texts  strings.Builder
	scr    []byte // scratch for the text being built
	// Where the replay round in progress began: its first event, and the step block and length
	// then (beginRound).
	roundAt, roundBlock, roundSteps int
}

// stepBlock and textBlock are how many steps and bytes of call text one allocation holds.
const (
	stepBlock = 1024
	textBlock = 64 << 10
)

// keep returns a pointer to a copy of s that lives as long as the events that point to it.
func (t *timeline) keep(s probes.Step) *probes.Step {
	if len(t.steps) == cap(t.steps) {
		t.steps = make([]probes.Step, 0, stepBlock)
		t.blocks++
	}
	t.steps = append(t.steps, s)
	return &t.steps[len(t.steps)-1]
}

// text returns the text build appends to an empty slice, cut from a shared block of text: a
// string of its own would be one allocation per call described.
func (t *timeline) text(build func([]byte) []byte) string {
	t.scr = build(t.scr[:0])
	if t.texts.Cap()-t.texts.Len() < len(t.scr) {
		// A new block: the strings cut from the old one keep it alive, and a Builder never
		// changes bytes it has handed out.
		t.texts = strings.Builder{}
		t.texts.Grow(max(textBlock, len(t.scr)))
	}
	start := t.texts.Len()
	t.texts.Write(t.scr)
	return t.texts.String()[start:]
}

// record appends ev (its call, step, thread, result and flags filled in by the caller) with the
// next sequence number, the current phase and round, and err's code, class and text.
func (t *timeline) record(ev Event, err error) Event {
	t.seq++
	ev.Seq, ev.Phase, ev.Round = t.seq, t.phase, t.round
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

// beginRound marks where replay round `round` begins.
func (t *timeline) beginRound(round int) {
	t.round = round
	t.roundAt, t.roundBlock, t.roundSteps = len(t.events), t.blocks, len(t.steps)
}

// eventful reports whether a call of the round in progress failed or was not made.
func (t *timeline) eventful() bool {
	for _, ev := range t.events[t.roundAt:] {
		if ev.Err != "" || ev.Skipped != "" {
			return true
		}
	}
	return false
}

// elideRound leaves the round in progress out of the timeline, its calls counted by the event
// that stands for the run of elided rounds it ends. The steps it kept are reused, so that a
// million uneventful rounds hold the memory of one.
func (t *timeline) elideRound() {
	calls := len(t.events) - t.roundAt
	if calls == 0 {
		return
	}
	first := t.events[t.roundAt].Seq
	t.events = t.events[:t.roundAt]
	if t.blocks == t.roundBlock {
		t.steps = t.steps[:t.roundSteps]
	}
	if n := len(t.events); n > 0 && t.events[n-1].Elided != nil && t.events[n-1].Elided.ToRound == t.round-1 {
		e := t.events[n-1].Elided
		e.ToRound, e.Calls = t.round, e.Calls+calls
		return
	}
	t.events = append(t.events, Event{Seq: first, Phase: PhaseReplay, Round: t.round, Thread: runtime.Main,
		Elided: &Elided{FromRound: t.round, ToRound: t.round, Calls: calls}})
}

// skipped records a probe step that was not issued, and why.
func (t *timeline) skipped(step probes.Step, op *probes.Op, why string) {
	t.record(Event{Step: t.keep(step), Call: string(op.Kind), Thread: op.Thread, Skipped: why}, nil)
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

// lastCaptured reports whether the last event recorded is work that went into the capture.
func (t *timeline) lastCaptured() bool {
	n := len(t.events)
	return n > 0 && t.events[n-1].Captured
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
