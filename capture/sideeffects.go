package capture

import (
	"fmt"

	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
)

// snapshot is what a refusal must leave unchanged and what a refusable call can touch: every live
// buffer's address and size (as its slot, pool or host allocation holds it) and the allocator
// counters. Contents are not read here: reading them would synchronise the device before every
// guarded call, so guarded and unguarded instances would run different schedules (and concurrent
// launches would never overlap). A refusal that touched contents shows in the oracle comparison
// after the round, where a guarded instance must never differ.
type snapshot struct {
	counters runtime.Counters
	ptrs     map[string]runtime.Ptr
}

// snap records the state a refusal must not change. It makes no device call but Counters.
func (r *run) snap() *snapshot {
	s := &snapshot{counters: r.dev.Counters(), ptrs: map[string]runtime.Ptr{}}
	for name, a := range r.bufs {
		s.ptrs[name] = a.ptr
	}
	return s
}

// checkRefusal compares the device with the snapshot taken before a refused call. The checks of the
// first refusal are kept in the result; a refusal with a side effect ends the instance in error,
// because a guard that refuses and still changes something is not a clean refusal.
func (r *run) checkRefusal(step string, before *snapshot) ([]SideEffectCheck, error) {
	var checks []SideEffectCheck
	var broken []string
	add := func(what string, held bool, detail string) {
		checks = append(checks, SideEffectCheck{What: what, Held: held})
		if !held {
			broken = append(broken, what+": "+detail)
		}
	}

	after := r.dev.Counters()
	c0 := before.counters
	add("allocator counters (mallocs, frees, live allocations, live bytes, host allocations)",
		after.Mallocs == c0.Mallocs && after.Frees == c0.Frees && after.LiveAllocs == c0.LiveAllocs && after.LiveBytes == c0.LiveBytes &&
			after.HostAllocs == c0.HostAllocs && after.HostFrees == c0.HostFrees && after.LiveHostAllocs == c0.LiveHostAllocs,
		fmt.Sprintf("before %+v, after %+v", c0, after))

	moved := ""
	for name, p := range before.ptrs {
		a := r.bufs[name]
		held, ok := p, a != nil
		if a != nil && a.place == (probes.Place{}) {
			// A slotted buffer: ask the runtime what its slot holds, not the engine's own view.
			_, held, ok = r.guard.Holds(name)
		} else if a != nil {
			held = a.ptr
		}
		switch {
		case !ok:
			moved += fmt.Sprintf(" %s no longer held (was %v);", name, p)
		case held != p:
			moved += fmt.Sprintf(" %s moved from %v to %v;", name, p, held)
		}
	}
	add("buffer addresses and sizes", moved == "", moved)

	if len(broken) > 0 {
		return checks, errFatal{fmt.Errorf("%s: the refusal had side effects: %v", step, broken)}
	}
	return checks, nil
}
