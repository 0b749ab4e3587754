package capture

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/chunk"
	"github.com/replaycheck/replaycheck/probes"
)

// Timeline is every call of one instance, in order (Result.Timeline). A capture's fills, copies
// and axpys that took are kept compact (one small record each, no text) and become Events only
// when the timeline is read: a report keeps the timeline of an instance that did not pass, and a
// passing one's only when asked, so the events of a capture of 100,000 ops are usually never
// built. Read with Events; a Timeline is not changed once Run returned it. The zero Timeline is
// empty. In JSON it is the array of its events.
type Timeline struct{ log *callLog }

// callLog is what a timeline holds: the events recorded as events, and the compact calls, each
// with its sequence number, which places it among them, and the captures whose ops they are.
type callLog struct {
	events   []Event
	kernels  chunk.Log[kernelEvent]
	captures []*probes.Capture
	// batches are the batches of a capture's ops issued in one call each (batches.go), which one
	// kernelEvent stands for each; calls is how many calls the kernelEvents stand for.
	batches []kernelBatch
	calls   int
}

// kernelEvent is a fill, copy or axpy of a capture that took: everything its Event says, kept as
// the op's place in its capture's list and the ranges it was issued over (the text is built from
// them when it is read). It holds no pointer: a capture of 100,000 ops keeps 100,000 of them, and
// the collector has nothing to look at in them.
type kernelEvent struct {
	seq int
	w   device.Ptr
	// x is where a copy's source or an axpy's x begins: it is as long as w.
	x        uint64
	capture  int32 // in callLog.captures
	index    int32 // of the op in its capture's list
	captured bool
	// batch is 0 for one op, else the record stands for callLog.batches[batch-1], whose first op
	// is index and first call seq (w and x are then unused).
	batch int32
}

// kernelBatch is a batch of a capture's ops issued in one call (batches.go): n ops, their ranges
// those of its plan at the buffers ids held then, ptrs.
type kernelBatch struct {
	n    int
	plan *probes.Plan
	ids  []uint32
	ptrs []device.Ptr
}

// bases returns the buffers' ranges by id (in table, grown as needed): what ranges reads.
func (k *kernelBatch) bases(table []device.Ptr) []device.Ptr {
	for j, id := range k.ids {
		if int(id) >= len(table) {
			table = append(table, make([]device.Ptr, int(id)+1-len(table))...)
		}
		table[id] = k.ptrs[j]
	}
	return table
}

// ranges returns the ranges op i of the batch's capture was issued over (w, and where x begins),
// with bases the batch's (bases).
func (k *kernelBatch) ranges(bases []device.Ptr, i int) (w device.Ptr, x uint64) {
	pk := k.plan.Kernel(i)
	w = bases[pk.W().ID].Slice(pk.W().Off, pk.W().Len)
	if pk.Kind() != device.KernelFill {
		x = bases[pk.X().ID].Slice(pk.X().Off, pk.X().Len).Addr
	}
	return w, x
}

// TimelineOf is a timeline of events, in order.
func TimelineOf(events ...Event) Timeline {
	if len(events) == 0 {
		return Timeline{}
	}
	return Timeline{&callLog{events: events}}
}

// Len is how many events the timeline has.
func (tl Timeline) Len() int {
	if tl.log == nil {
		return 0
	}
	return len(tl.log.events) + tl.log.calls
}

// IsZero reports whether the timeline is empty (the JSON field is then left out).
func (tl Timeline) IsZero() bool { return tl.Len() == 0 }

// Events are the timeline's events in order, built from the compact calls when it has any. The
// slice is the caller's to append to; the events it holds are shared.
func (tl Timeline) Events() []Event {
	if tl.log == nil {
		return nil
	}
	l := tl.log
	if l.calls == 0 {
		return slices.Clip(l.events)
	}
	out := make([]Event, 0, tl.Len())
	steps := make([]probes.Step, 0, l.calls)
	var text []byte
	var bases []device.Ptr
	evs := l.events
	for block := range l.kernels.Blocks() {
		for _, k := range block {
			for len(evs) > 0 && evs[0].Seq < k.seq {
				out, evs = append(out, evs[0]), evs[1:]
			}
			c := l.captures[k.capture]
			add := func(seq, index int, w device.Ptr, x uint64) {
				op := c.Ops[index]
				steps = append(steps, probes.OpStep(probes.PhaseCapture, c.Name, index))
				text = describeKernel(text[:0], op, w, device.Ptr{Addr: x, Bytes: w.Bytes})
				out = append(out, Event{Seq: seq, Phase: PhaseCapture, Step: &steps[len(steps)-1], Call: string(text), Thread: op.Thread,
					Captured: k.captured, Eager: !k.captured})
			}
			if k.batch == 0 {
				add(k.seq, int(k.index), k.w, k.x)
				continue
			}
			b := &l.batches[k.batch-1]
			bases = b.bases(bases)
			for i := range b.n {
				w, x := b.ranges(bases, int(k.index)+i)
				add(k.seq+i, int(k.index)+i, w, x)
			}
		}
	}
	return append(out, evs...)
}

// firstEager is the step of the first event that ran eagerly outside a capture (Event.Eager), as
// Events would list it, found without building the events.
func (tl Timeline) firstEager() (probes.Step, bool) {
	if tl.log == nil {
		return probes.Step{}, false
	}
	l := tl.log
	var step probes.Step
	seq := -1
	for _, ev := range l.events {
		if ev.Eager && ev.Step != nil {
			step, seq = *ev.Step, ev.Seq
			break
		}
	}
	for block := range l.kernels.Blocks() {
		for _, k := range block {
			if seq >= 0 && k.seq > seq {
				return step, true
			}
			if !k.captured {
				c := l.captures[k.capture]
				return probes.OpStep(probes.PhaseCapture, c.Name, int(k.index)), true
			}
		}
	}
	return step, seq >= 0
}

// Equal reports whether two timelines have the same events (go-cmp uses it).
func (tl Timeline) Equal(o Timeline) bool {
	return tl.Len() == o.Len() && reflect.DeepEqual(tl.Events(), o.Events())
}

// MarshalJSON writes the timeline as the array of its events.
func (tl Timeline) MarshalJSON() ([]byte, error) {
	ev := tl.Events()
	if ev == nil {
		ev = []Event{}
	}
	return json.Marshal(ev)
}

// UnmarshalJSON reads an array of events.
func (tl *Timeline) UnmarshalJSON(b []byte) error {
	var ev []Event
	if err := json.Unmarshal(b, &ev); err != nil {
		return err
	}
	*tl = TimelineOf(ev...)
	return nil
}

// timeline records the device calls of one instance in order, each stamped with the phase and
// replay round the engine is in. An event is complete when it is recorded: nothing is added
// afterwards.
//
// A capture of 100,000 ops records 100,000 calls, so recording one allocates nothing of its own: a
// capture's kernel calls that took go to a log of compact records in blocks (kernel), other events
// to a slice sized for the probe up front, their steps to blocks of steps, and their call texts to
// blocks of text (text).
type timeline struct {
	// callLog is what is recorded so far (log); its last capture is the one in progress
	// (capture).
	callLog
	seq    int // calls recorded, those of elided rounds included
	phase  Phase
	round  int
	steps  []probes.Step // the current block of kept steps
	blocks int           // step blocks made
	texts  strings.Builder
	scr    []byte // scratch for the text being built
	// captured: the last call recorded was work that went into the capture.
	captured bool
	// Where the replay round in progress began: its first event, and the step block and length
	// then (beginRound).
	roundAt, roundBlock, roundSteps int
}

// log is the timeline recorded so far, as a Result holds it.
func (t *timeline) log() Timeline {
	if len(t.events) == 0 && t.calls == 0 {
		return Timeline{}
	}
	l := t.callLog // a copy: a view of what was recorded until now (chunk.Log)
	return Timeline{&l}
}

// capture notes that the ops of c are being issued: their kernel calls may be recorded compactly.
func (t *timeline) capture(c *probes.Capture) {
	if n := len(t.captures); n == 0 || t.captures[n-1] != c {
		t.captures = append(t.captures, c)
	}
}

// compact reports whether a kernel call of op at step is recorded compactly when it takes:
// exactly the calls whose phase, round, step and op Timeline.Events rebuilds (an op of the list of
// the capture in progress, recorded in the capture phase).
func (t *timeline) compact(step probes.Step, op *probes.Op) bool {
	n := len(t.captures)
	if t.phase != PhaseCapture || t.round != 0 || n == 0 {
		return false
	}
	c := t.captures[n-1]
	return step == probes.OpStep(probes.PhaseCapture, c.Name, step.Index) && step.Index < len(c.Ops) && c.Ops[step.Index] == op
}

// kernel records a capture's fill, copy or axpy that took, compactly: its place in the list of
// the capture in progress (compact said it can be rebuilt from it), its ranges, and whether it
// went into the capture or ran eagerly.
func (t *timeline) kernel(c *deviceCall, captured bool) {
	t.seq++
	t.captured = captured
	t.kernels.Add(kernelEvent{seq: t.seq, w: c.w, x: c.x.Addr, capture: int32(len(t.captures) - 1),
		index: int32(c.step.Index), captured: captured})
	t.calls++
}

// batch records a batch of the capture in progress's ops from op index from that took, issued in
// one call (batches.go): one record for all of them, their events rebuilt from b when read.
func (t *timeline) batch(from int, captured bool, b kernelBatch) {
	t.batches = append(t.batches, b)
	t.kernels.Add(kernelEvent{seq: t.seq + 1, capture: int32(len(t.captures) - 1), index: int32(from), captured: captured,
		batch: int32(len(t.batches))})
	t.seq += b.n
	t.calls += b.n
	t.captured = captured
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
		ev.Class = device.ClassOf(err)
		if e, ok := device.AsError(err); ok {
			ev.Code = e.Code
		}
	}
	t.events = append(t.events, ev)
	t.captured = ev.Captured
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
	t.events = append(t.events, Event{Seq: first, Phase: PhaseReplay, Round: t.round, Thread: device.Main,
		Elided: &Elided{FromRound: t.round, ToRound: t.round, Calls: calls}})
}

// skipped records a probe step that was not issued, and why.
func (t *timeline) skipped(step probes.Step, op *probes.Op, why string) {
	t.record(Event{Step: t.keep(step), Call: string(op.Kind), Thread: op.Thread, Skipped: why}, nil)
}

// skippedCall records an engine call that was not made, and why.
func (t *timeline) skippedCall(call, why string) {
	t.record(Event{Call: call, Thread: device.Main, Skipped: why}, nil)
}

// enter switches the phase later events are stamped with and returns the one it replaced.
func (t *timeline) enter(p Phase) Phase {
	prev := t.phase
	t.phase = p
	return prev
}

// lastCaptured reports whether the last call recorded is work that went into the capture.
func (t *timeline) lastCaptured() bool { return t.captured }

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
