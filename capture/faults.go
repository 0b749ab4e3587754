package capture

import (
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/probes"
)

// Injected faults: the probe's faults and the run's (Options.Faults) are armed on the backend's
// device (device.FaultInjector) as the instance reaches them: allocation faults before setup,
// counting every device allocation of the instance; a replay round's fault at the start of that
// round, for the next launch that reaches the device. After every engine call the watch says
// whether a fault fired in it; one that did ends the instance in error, naming the fault and the
// call. Whatever has not fired is disarmed before teardown, so the next instance starts clean.

// instanceFaults is every fault of the instance: the probe's, then the run's.
func instanceFaults(p *probes.Probe, opt Options) []probes.Fault {
	return append(append([]probes.Fault(nil), p.Faults...), opt.Faults...)
}

// armAllocFaults arms the instance's allocation faults, before anything is allocated.
func (in *instance) armAllocFaults() error {
	for i, f := range in.faults {
		if !f.Replay() {
			if err := in.arm(i, device.Fault{Kind: f.Kind, N: f.At}); err != nil {
				return err
			}
		}
	}
	return nil
}

// armRound arms the faults of replay round round: each fires at the next launch that reaches the
// device.
func (in *instance) armRound(round int) error {
	for i, f := range in.faults {
		if f.Replay() && f.At == round {
			if err := in.arm(i, device.Fault{Kind: f.Kind, N: 1}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (in *instance) arm(i int, f device.Fault) error {
	if err := in.watch.arm(f); err != nil {
		return fail(ErrHarness, nil, fmt.Errorf("arming fault %s: %w", in.faults[i], err))
	}
	in.armed[i] = true
	return nil
}

// disarmFaults disarms what has not fired and says in the result why each fault that did not fire
// did not.
func (in *instance) disarmFaults(ended error) {
	if err := in.watch.disarm(); err != nil && ended == nil {
		in.res.Faults = append(in.res.Faults, FaultRecord{Fault: "(disarm)", Detail: err.Error()})
	}
	for i, f := range in.faults {
		rec := &in.res.Faults[i]
		switch {
		case rec.Fired:
		case ended != nil && (in.armed[i] || !f.Replay()):
			rec.Detail = "did not fire: the instance ended first"
		case ended != nil:
			rec.Detail = fmt.Sprintf("not armed: the instance ended before replay round %d", f.At)
		case f.Replay() && f.At > in.spec.Replays:
			rec.Detail = "not armed: the instance replays " + plural.Count(in.spec.Replays, "round")
		case f.Replay():
			rec.Detail = fmt.Sprintf("did not fire: no launch of round %d or later reached the device", f.At)
		default:
			rec.Detail = fmt.Sprintf("did not fire: the instance made fewer than %d device allocations", f.At)
		}
	}
}

// faultFired turns a fault that fired in the call just made (call, as the timeline names it) and
// made it fail into the instance's fatal error; nil when none fired. A call that succeeded all the
// same (the runtime under test recovered, say) goes on: its fault is recorded as fired.
func (in *instance) faultFired(step *probes.Step, call string, callErr error) error {
	fired := in.watch.takeFired()
	if len(fired) == 0 {
		return nil
	}
	var names []string
	kind := ErrFault
	for _, ff := range fired {
		i := in.recordOf(ff.Fault)
		name := ff.Kind.String()
		if i >= 0 {
			rec := &in.res.Faults[i]
			rec.Fired, rec.Call = true, call
			rec.Detail = fmt.Sprintf("fired in the device call %s", ff.call)
			if callErr != nil {
				rec.Detail += ": " + callErr.Error()
			} else {
				rec.Detail += "; the call succeeded all the same (the runtime under test recovered)"
			}
			name = rec.Fault
		}
		names = append(names, name)
		if ff.Kind == device.FaultDeviceLost {
			kind = ErrDeviceLost
		}
	}
	if callErr == nil {
		return nil
	}
	return fail(kind, step, fmt.Errorf("injected fault %s fired in %s: %w", strings.Join(names, ", "), call, callErr))
}

// recordOf finds the armed, unfired fault a device reports fired: an allocation fault by its N,
// a launch fault by its kind (the earliest armed).
func (in *instance) recordOf(f device.Fault) int {
	for i, pf := range in.faults {
		if !in.armed[i] || in.res.Faults[i].Fired || pf.Kind != f.Kind {
			continue
		}
		if !pf.Replay() && pf.At != f.N {
			continue
		}
		return i
	}
	return -1
}

// hangFired marks the hang armed for a launch as fired: its call never returned.
func (in *instance) hangFired(call string) {
	for i, f := range in.faults {
		if f.Kind == device.FaultHang && in.armed[i] && !in.res.Faults[i].Fired {
			in.res.Faults[i].Fired, in.res.Faults[i].Call = true, call
			in.res.Faults[i].Detail = "fired: the launch never returned"
			return
		}
	}
}
