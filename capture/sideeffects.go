package capture

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
)

// snapshot is what a refusal must leave unchanged: every live buffer's address, size and slot
// holding, its contents (when they can be read), and the allocator counters.
type snapshot struct {
	counters runtime.Counters
	ptrs     map[string]runtime.Ptr
	contents map[string][]byte // nil during a capture
}

// snap records the state a refusal must not change. During a capture the contents are not read: a
// synchronous read is an unsafe call there, and the oracle comparison after every replay covers
// them anyway.
func (r *run) snap() (*snapshot, error) {
	s := &snapshot{counters: r.dev.Counters(), ptrs: map[string]runtime.Ptr{}}
	if r.capture == "" {
		// Work still in flight would change the contents under the snapshot.
		if err := r.dev.SyncDevice(runtime.Main); err != nil {
			return nil, errFatal{fmt.Errorf("snapshot before a guarded call: SyncDevice: %w", err)}
		}
		s.contents = map[string][]byte{}
	}
	for name, a := range r.bufs {
		s.ptrs[name] = a.ptr
		if s.contents != nil {
			data, err := r.contents(a)
			if err != nil {
				return nil, errFatal{fmt.Errorf("snapshot before a guarded call: reading %s: %w", name, err)}
			}
			s.contents[name] = data
		}
	}
	return s, nil
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

	if before.contents != nil {
		changed := ""
		for name, want := range before.contents {
			a := r.bufs[name]
			if a == nil || a.ptr != before.ptrs[name] {
				changed += " " + name
				continue
			}
			if got, err := r.contents(a); err != nil || !bytes.Equal(got, want) {
				changed += " " + name
			}
		}
		add("buffer contents", changed == "", "changed:"+changed)
	} else {
		// Read once the capture is over: see checkDeferredContents.
		r.deferredContents = append(r.deferredContents, step)
	}

	if len(broken) > 0 {
		return checks, errFatal{fmt.Errorf("%s: the refusal had side effects: %v", step, broken)}
	}
	return checks, nil
}

// checkDeferredContents finishes the side-effect check of refusals made during a capture, once it
// has ended: every live buffer must hold what the oracle holds then (captured work has not run yet,
// eager work is in both). The check joins the first refusal's when that one was deferred.
func (r *run) checkDeferredContents() error {
	if len(r.deferredContents) == 0 {
		return nil
	}
	steps := r.deferredContents
	r.deferredContents = nil
	if err := r.dev.SyncDevice(runtime.Main); err != nil {
		return errFatal{fmt.Errorf("contents check after the capture: SyncDevice: %w", err)}
	}
	var changed []string
	for _, name := range r.oracle.Live() {
		want, _ := r.oracle.Bytes(name)
		a := r.bufs[name]
		if a == nil || a.ptr.Bytes != int64(len(want)) {
			changed = append(changed, name)
			continue
		}
		if got, err := r.contents(a); err != nil || !bytes.Equal(got, want) {
			changed = append(changed, name)
		}
	}
	if ref := r.res.Refusal; ref != nil && ref.Step == steps[0] {
		ref.Checked = append(ref.Checked, SideEffectCheck{What: "buffer contents (compared with the oracle when the capture ended)", Held: len(changed) == 0})
	}
	if len(changed) > 0 {
		return errFatal{fmt.Errorf("the refusal at %s had side effects: %v differ from the oracle when the capture ended", strings.Join(steps, ", "), changed)}
	}
	return nil
}
