package capture

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// snapshot is what a refusal must leave unchanged, taken from what a refusable call can touch:
// the device's counters (allocations, streams, events, graphs, launches: a refusal that made a
// driver call shows here, and so does any change to the runtime's residency ledger, which only
// allocations and frees move), and for every live buffer the slot the runtime holds it in, with
// its address and size. It makes no device call but Counters, which
// reads the backend's bookkeeping: in particular it never synchronises or reads device memory, so a
// guarded instance runs exactly the schedule of an unguarded one. Contents a refusal touched are
// the oracle's to find: after the round, a guarded instance must not differ.
type snapshot struct {
	counters runtime.Counters
	bufs     map[string]bufferState
	key      snapKey // what bufs was read at
}

// bufferState is one live buffer as a refusal must leave it.
type bufferState struct {
	ptr  runtime.Ptr
	slot guard.Slot
	held bool // the runtime's slot holds it (false for pooled and host buffers, which have none)
}

// snap records the state a refusal must not change, in r.before: a guarded call takes one before
// every call, and each is done with once its call has returned. The device's counters are read
// every time. The buffers' states, one slot question per buffer, are read again only when they
// may have moved: always for a runtime that cannot say when its slots change, and otherwise when
// its SlotsVersion or the engine's own buffers (their generation and count: an allocation raises
// the one, a free lowers the other) changed since the last snapshot. Without that, a guarded
// instance over n buffers cost O(n) per call. A stale reuse could only make a clean refusal look
// like it changed something, never hide a change: the state after the refusal is always read.
func (r *run) snap() *snapshot {
	s := &r.before
	s.counters = r.dev.Counters()
	key := snapKey{gen: r.gen, bufs: len(r.bufs)}
	if v, ok := r.dev.(slotVersioner); ok {
		key.slots, key.versioned = v.SlotsVersion(), true
	}
	if s.bufs != nil && key.versioned && key == s.key {
		return s
	}
	if s.bufs == nil {
		s.bufs = map[string]bufferState{}
	}
	clear(s.bufs)
	for name, a := range r.bufs {
		s.bufs[name] = r.stateOf(name, a)
	}
	s.key = key
	return s
}

// slotVersioner is a runtime under test that says when what its slots hold changes
// (guard.Device.SlotsVersion).
type slotVersioner interface {
	SlotsVersion() uint64
}

// snapKey is what a snapshot's buffer states were read at.
type snapKey struct {
	gen       uint64 // the engine's allocation generation
	bufs      int    // how many buffers the engine held
	slots     uint64 // the runtime's SlotsVersion
	versioned bool   // the runtime has one
}

// stateOf is a live buffer's state: a slotted buffer as the runtime's slot holds it, not as the
// engine last saw it.
func (r *run) stateOf(name string, a *allocation) bufferState {
	if a == nil {
		return bufferState{}
	}
	st := bufferState{ptr: a.ptr}
	if a.place == (probes.Place{}) {
		st.slot, st.ptr, st.held = r.dev.Holds(name)
	}
	return st
}

// countersMoved names each counter that differs, "Mallocs 2 -> 3".
func countersMoved(before, after runtime.Counters) []string {
	var out []string
	b, a := reflect.ValueOf(before), reflect.ValueOf(after)
	for i := range b.NumField() {
		if x, y := b.Field(i).Int(), a.Field(i).Int(); x != y {
			out = append(out, fmt.Sprintf("%s %d -> %d", b.Type().Field(i).Name, x, y))
		}
	}
	return out
}

func (b bufferState) describe() string {
	if !b.held {
		return "no slot"
	}
	return "slot " + b.slot.String()
}

// checkRefusal compares the state after a refused call with the snapshot taken before it. The
// checks of the first refusal are kept in the result; a refusal with a side effect ends the
// instance in error (ErrSideEffect), because a runtime that refuses and still changes something
// has not refused cleanly.
func (r *run) checkRefusal(step probes.Step, before *snapshot) ([]SideEffectCheck, error) {
	var checks []SideEffectCheck
	var broken []string
	add := func(what string, changes []string) {
		checks = append(checks, SideEffectCheck{What: what, Held: len(changes) == 0})
		if len(changes) > 0 {
			broken = append(broken, what+": "+strings.Join(changes, "; "))
		}
	}

	add("device counters (allocations, host allocations, streams, events, graphs, launches, captures)", countersMoved(before.counters, r.dev.Counters()))

	// The engine's own map of buffers changes only after a call took effect, so a buffer is
	// checked against the runtime's view of it, never the engine's.
	var slots, ptrs []string
	for _, name := range slices.Sorted(maps.Keys(before.bufs)) {
		was, now := before.bufs[name], r.stateOf(name, r.bufs[name])
		switch {
		case now.held != was.held || now.slot != was.slot:
			slots = append(slots, fmt.Sprintf("%s: %s became %s", name, was.describe(), now.describe()))
		case now.ptr != was.ptr:
			ptrs = append(ptrs, fmt.Sprintf("%s moved or resized from %v to %v", name, was.ptr, now.ptr))
		}
	}
	add("slots", slots)
	add("buffer addresses and sizes", ptrs)

	if len(broken) > 0 {
		return checks, failf(ErrSideEffect, &step, "%s: the refusal had side effects: %s", step, strings.Join(broken, "; "))
	}
	return checks, nil
}
