package probes

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/replaycheck/replaycheck/device"
)

// Step locates a device call of a probe: an op of a phase, the begin or end of a capture, or a
// replay round's launch of a capture's graph. Its text form (String, MarshalText) is what reports
// show and ParseStep reads back:
//
//	prepare op 2, between op 1, each op 1   an eager phase's op (1-based)
//	phase 3 op 1                             an op of entry 3 of phases, an eager one
//	capture main op 3                        an op inside capture main's ops
//	capture main begin, capture main end     the capture's begin and end
//	replay 4 main                            round 4's launch of capture main's graph
type Step struct {
	Phase   Phase
	Capture string    // the capture, for capture steps and launches
	Index   int       // the op's 0-based index, for an op
	Round   int       // the 1-based replay round, for a launch
	Entry   int       // the 1-based entry of the phases list, for an op of an eager entry (PhaseEager)
	Point   StepPoint // what the step is; "" is an op
}

// StepPoint says what kind of call a Step is.
type StepPoint string

const (
	StepOp     StepPoint = ""       // an op of the phase
	StepBegin  StepPoint = "begin"  // a capture's begin
	StepEnd    StepPoint = "end"    // a capture's end
	StepLaunch StepPoint = "launch" // a replay round's launch
)

// OpStep is the step of op index i (0-based) of an eager phase, or of capture's ops.
func OpStep(phase Phase, capture string, i int) Step {
	return Step{Phase: phase, Capture: capture, Index: i}
}

// CaptureStep is the begin or end of a capture.
func CaptureStep(capture string, point StepPoint) Step {
	return Step{Phase: PhaseCapture, Capture: capture, Point: point}
}

// LaunchStep is round's launch of capture's graph.
func LaunchStep(round int, capture string) Step {
	return Step{Phase: PhaseReplay, Capture: capture, Round: round, Point: StepLaunch}
}

func (s Step) String() string {
	switch {
	case s.Point == StepLaunch:
		return fmt.Sprintf("replay %d %s", s.Round, s.Capture)
	case s.Point != StepOp:
		return fmt.Sprintf("capture %s %s", s.Capture, s.Point)
	case s.Phase == PhaseCapture:
		return fmt.Sprintf("capture %s op %d", s.Capture, s.Index+1)
	case s.Phase == PhaseEager:
		return fmt.Sprintf("phase %d op %d", s.Entry, s.Index+1)
	}
	return fmt.Sprintf("%s op %d", s.Phase, s.Index+1)
}

// ParseStep reads the text form String writes.
func ParseStep(text string) (Step, error) {
	f := strings.Fields(text)
	bad := fmt.Errorf("step %q: want PHASE op N, phase ENTRY op N, capture NAME op N|begin|end, or replay ROUND NAME", text)
	number := func(s string) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil && n >= 1
	}
	switch {
	case len(f) == 3 && f[0] == string(PhaseReplay):
		round, ok := number(f[1])
		if !ok {
			return Step{}, bad
		}
		return LaunchStep(round, f[2]), nil
	case len(f) == 3 && f[0] == string(PhaseCapture) && (f[2] == string(StepBegin) || f[2] == string(StepEnd)):
		return CaptureStep(f[1], StepPoint(f[2])), nil
	case len(f) == 4 && f[0] == string(PhaseCapture) && f[2] == "op":
		if n, ok := number(f[3]); ok {
			return OpStep(PhaseCapture, f[1], n-1), nil
		}
	case len(f) == 4 && f[0] == "phase" && f[2] == "op":
		entry, ok := number(f[1])
		if n, ok2 := number(f[3]); ok && ok2 {
			return Step{Phase: PhaseEager, Entry: entry, Index: n - 1}, nil
		}
	case len(f) == 3 && f[1] == "op":
		switch p := Phase(f[0]); p {
		case PhasePrepare, PhaseBetween, PhaseEach:
			if n, ok := number(f[2]); ok {
				return OpStep(p, "", n-1), nil
			}
		}
	}
	return Step{}, bad
}

// MarshalText writes the step's text form.
func (s Step) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads what MarshalText writes.
func (s *Step) UnmarshalText(b []byte) error {
	v, err := ParseStep(string(b))
	*s = v
	return err
}

// ParseID splits an instance id (Instance.ID: "set/name@mode/guards-on|off") into the probe id,
// the capture mode and the guard setting.
func ParseID(id string) (probe string, mode device.CaptureMode, guarded bool, err error) {
	probe, rest, ok := strings.Cut(id, "@")
	modeName, guards, ok2 := strings.Cut(rest, "/guards-")
	if !ok || !ok2 || probe == "" || (guards != GuardsName(true) && guards != GuardsName(false)) {
		return "", 0, false, fmt.Errorf("instance id %q: want set/name@mode/guards-on|off", id)
	}
	if mode, err = device.ParseCaptureMode(modeName); err != nil {
		return "", 0, false, fmt.Errorf("instance id %q: %w", id, err)
	}
	return probe, mode, guards == GuardsName(true), nil
}
