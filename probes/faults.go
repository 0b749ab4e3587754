package probes

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/plural"
)

// Fault is a fault injected into an instance's device on purpose: a probe's `faults:` entry or a
// run's --fault. Its text form, in both places, is KIND@N (KIND@K for a replay round):
//
//   - alloc-fail@N: the N-th device allocation of the instance (declared buffers, alloc and grow
//     ops, the runtime's own pools and slots, counted in the order they reach the device) fails
//     out-of-memory;
//   - launch-fail@K: the first graph launch of replay round K that reaches the device fails with
//     the platform's internal error (a launch the runtime under test refuses never reaches it: the
//     fault waits for the next one);
//   - device-lost@K: that launch fails device-lost, and the device stays lost;
//   - hang@K: that launch never returns.
//
// Each ends the instance in error, saying which fault fired and in which call.
type Fault struct {
	Pos  Pos // of the entry in a probe file; zero for a run's --fault
	Kind device.FaultKind
	At   int // N (alloc-fail) or K (the replay round), 1-based
}

func (f Fault) String() string { return fmt.Sprintf("%s@%d", f.Kind, f.At) }

// Replay reports whether the fault fires at a replay round (every kind but alloc-fail).
func (f Fault) Replay() bool { return f.Kind != device.FaultAllocFail }

// FaultCall is the device call a fault fires at: the At-th allocation, or the first launch of
// replay round At. Only one fault can fire at a call: of two there, the second never would.
type FaultCall struct {
	Replay bool
	At     int
}

// Call is the call f fires at.
func (f Fault) Call() FaultCall { return FaultCall{f.Replay(), f.At} }

// String names the kind of call, as "one fault per ..." says it.
func (c FaultCall) String() string {
	if c.Replay {
		return "replay round"
	}
	return "allocation"
}

// MaxFaultIndex bounds N and K.
const MaxFaultIndex = 1000000

// ParseFault reads KIND@N.
func ParseFault(s string) (Fault, error) {
	kindText, at, ok := strings.Cut(strings.TrimSpace(s), "@")
	kind, err := device.ParseFaultKind(kindText)
	if err != nil {
		return Fault{}, fmt.Errorf("fault %q: %w%s", s, err, didYouMean(kindText, stringers(device.FaultKinds())))
	}
	letter, what := faultIndex(kind)
	if !ok {
		return Fault{}, fmt.Errorf("fault %q: want %s@%s, %s the %s", s, kind, letter, letter, what)
	}
	n, err := ParseUint(at)
	if err != nil || n < 1 || n > MaxFaultIndex {
		how := ""
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			how = fmt.Sprintf(": %s is written %s%s", letter, integerRule, leadingZero(at))
		}
		return Fault{}, fmt.Errorf("fault %q: %s must be an integer from 1 to %d (the %s), not %q%s", s, letter, MaxFaultIndex, what, at, how)
	}
	return Fault{Kind: kind, At: int(n)}, nil
}

// faultIndex names a kind's index: its letter in KIND@N and what it counts.
func faultIndex(k device.FaultKind) (letter, what string) {
	if k == device.FaultAllocFail {
		return "N", "allocation's number"
	}
	return "K", "replay round"
}

// faults reads a probe's `faults:` list.
func (l *loader) faults(n *yaml.Node) []Fault {
	var out []Fault
	for _, item := range l.list(n, "faults") {
		v, ok := l.scalar(item, "fault")
		if !ok {
			continue
		}
		f, err := ParseFault(v)
		if err != nil {
			l.errorf(l.at(deref(item)), RuleFault, "%v", err)
			continue
		}
		f.Pos = l.placed(item)
		out = append(out, f)
	}
	return out
}

// checkFaults checks a probe's faults against the probe: a replay round it has, and no two faults
// that fire at the same call (the same allocation, or a launch of the same round).
func (l *loader) checkFaults(p *Probe) {
	seen := map[FaultCall]Fault{}
	for _, f := range p.Faults {
		if f.Replay() && f.At > p.Replays {
			l.errorf(f.Pos, RuleFault, "fault %s: the probe replays %s: want a round from 1 to %d", f, plural.Count(p.Replays, "round"), p.Replays)
			continue
		}
		if first, dup := seen[f.Call()]; dup {
			l.errorf(f.Pos, RuleFault, "fault %s fires at the same call as %s (line %d): one fault per %s", f, first, first.Pos.Line, f.Call())
			continue
		}
		seen[f.Call()] = f
	}
}
