package capture

import (
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
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
	counters device.Counters
	bufs     map[string]bufferState
	slots    uint64 // the runtime's SlotsVersion when bufs was read (SlotLog)
}

// bufferState is one live buffer as a refusal must leave it.
type bufferState struct {
	ptr  device.Ptr
	slot runtime.Slot
	held bool // the runtime's slot holds it (false for pooled and host buffers, which have none)
}

// snap records the state a refusal must not change, in r.before: a guarded instance takes one
// before every call, and each is done with once its call has returned. The device's counters are
// read every time; the buffers' states (a slot question each) are read in full at first, and
// then, from a runtime that logs its slot changes (guard.Device.SlotsChangedSince), only for the
// buffers whose slot changed or that the engine allocated, grew or freed since the last snapshot:
// a guarded instance over n buffers cost O(n) per call otherwise. A runtime without the log (a
// plugin) is asked about every buffer every time. The state after a refusal is always read in
// full, so a change the log missed would make a clean refusal look like a side effect, and could
// hide one only by being exactly what the refusal undid. With Options.CheckSlotLog a snapshot kept
// from the log is compared with one read in full, and the first slot the log missed is the error.
func (in *instance) snap() (*snapshot, error) {
	s := &in.before
	s.counters = in.dev.Counters()
	log := runtime.ExtensionsOf(in.dev).SlotLog
	if s.bufs != nil && log != nil {
		if keys, now, ok := log.SlotsChangedSince(s.slots); ok {
			for _, names := range [][]string{keys, in.changed} {
				for _, name := range names {
					if a, live := in.bufs[name]; live {
						s.bufs[name] = in.stateOf(name, a)
					} else {
						delete(s.bufs, name)
					}
				}
			}
			s.slots, in.changed = now, in.changed[:0]
			if in.opt.CheckSlotLog {
				return s, in.checkSlotLog(s)
			}
			return s, nil
		}
	}
	if s.bufs == nil {
		s.bufs = map[string]bufferState{}
	}
	if log != nil {
		s.slots = log.SlotsVersion()
	}
	clear(s.bufs)
	for name, a := range in.bufs {
		s.bufs[name] = in.stateOf(name, a)
	}
	in.changed = in.changed[:0]
	return s, nil
}

// checkSlotLog compares a snapshot kept from the runtime's slot log with every buffer read now, and
// names the first buffer (by name) whose slot changed without the log or the engine naming it.
func (in *instance) checkSlotLog(s *snapshot) error {
	for _, name := range slices.Sorted(maps.Keys(in.bufs)) {
		kept, now := s.bufs[name], in.stateOf(name, in.bufs[name])
		if kept != now {
			return fmt.Errorf("slot log: %q changed without the runtime's slot log naming it, since the snapshot before %s: it is %s, the log kept %s",
				name, in.cur.String(), now.String(), kept.String())
		}
	}
	return nil
}

// stateOf is a live buffer's state: a slotted buffer as the runtime's slot holds it, not as the
// engine last saw it.
func (in *instance) stateOf(name string, a *allocation) bufferState {
	if a == nil {
		return bufferState{}
	}
	st := bufferState{ptr: a.ptr}
	if a.place == (probes.Place{}) {
		st.slot, st.ptr, st.held = in.dev.Holds(name)
	}
	return st
}

// countersMoved names each counter that differs, "Mallocs 2 -> 3".
func countersMoved(before, after device.Counters) []string {
	var out []string
	b, a := reflect.ValueOf(before), reflect.ValueOf(after)
	for i := range b.NumField() {
		if x, y := b.Field(i).Int(), a.Field(i).Int(); x != y {
			out = append(out, fmt.Sprintf("%s %d -> %d", b.Type().Field(i).Name, x, y))
		}
	}
	return out
}

// String is the state as checkSlotLog names it: "slot plain 0x7f0000000000+512", "no slot".
func (b bufferState) String() string {
	if !b.held {
		return b.describe()
	}
	return b.describe() + " " + b.ptr.String()
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
func (in *instance) checkRefusal(step probes.Step, before *snapshot) ([]SideEffectCheck, error) {
	var checks []SideEffectCheck
	var broken []string
	add := func(what string, changes []string) {
		checks = append(checks, SideEffectCheck{What: what, Held: len(changes) == 0})
		if len(changes) > 0 {
			broken = append(broken, what+": "+strings.Join(changes, "; "))
		}
	}

	add("device counters (allocations, host allocations, streams, events, graphs, launches, captures)", countersMoved(before.counters, in.dev.Counters()))

	// The engine's own map of buffers changes only after a call took effect, so a buffer is
	// checked against the runtime's view of it, never the engine's.
	var slots, ptrs []string
	for _, name := range slices.Sorted(maps.Keys(before.bufs)) {
		was, now := before.bufs[name], in.stateOf(name, in.bufs[name])
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
