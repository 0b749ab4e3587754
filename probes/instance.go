package probes

import (
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/device"
)

// Instance is one run of a probe: a capture mode and a guard setting.
type Instance struct {
	Probe   *Probe
	Mode    device.CaptureMode
	Guarded bool // kernel mode
	Replays int
}

// GuardsName is "on" or "off".
func GuardsName(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// ID is "set/name@mode/guards-on|off", stable across runs (used for sharding and baselines).
func (in Instance) ID() string {
	return fmt.Sprintf("%s@%s/guards-%s", in.Probe.ID(), in.Mode, GuardsName(in.Guarded))
}

// Expected is the outcome this instance promises in its capture mode on a platform of no family
// expect.platforms names (expect.modes applies); "" when the probe leaves it to the baseline.
// ExpectedOn is what it promises on a device.
func (in Instance) Expected() Outcome {
	return in.expected(in.Probe.Expect.For("", in.Mode))
}

// ExpectedOn is the outcome this instance promises on the platform whose key is platform, and the
// error classes that count as the expected rejection there (empty: any): the most specific
// expectation for the platform's family and the instance's capture mode (Expect.For). The engine
// records both in the result, which is what the verdict judges.
func (in Instance) ExpectedOn(platform string) (Outcome, []device.Class) {
	e := in.Probe.Expect.For(Family(platform), in.Mode)
	return in.expected(e), e.RejectedBy
}

// ExpectedIn is the outcome this instance promises on the platforms of family (PlatformFamilies),
// in its capture mode.
func (in Instance) ExpectedIn(family string) Outcome {
	return in.expected(in.Probe.Expect.For(family, in.Mode))
}

func (in Instance) expected(e Expect) Outcome {
	if in.Guarded {
		return e.Guarded
	}
	return e.Unguarded
}

// Matrix selects and overrides the instance matrix. Zero values keep each probe's own.
type Matrix struct {
	Modes   []device.CaptureMode
	Guards  []bool
	Replays int
}

// Instances expands probes into instances: each probe's modes x guards, filtered by m, in a stable
// order (probe order, then mode, then guards on before off).
func Instances(probes []*Probe, m Matrix) []Instance {
	var out []Instance
	for _, p := range probes {
		replays := p.Replays
		if m.Replays > 0 {
			replays = m.Replays
		}
		for _, mode := range p.Modes {
			if m.Modes != nil && !contains(m.Modes, mode) {
				continue
			}
			for _, g := range p.Guards {
				if m.Guards != nil && !contains(m.Guards, g) {
					continue
				}
				out = append(out, Instance{Probe: p, Mode: mode, Guarded: g, Replays: replays})
			}
		}
	}
	return out
}

func contains[T comparable](xs []T, x T) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// ParseModes reads a comma-separated list of capture modes, as command lines give them; "" is nil
// (every probe's own modes).
func ParseModes(list string) ([]device.CaptureMode, error) {
	if list == "" {
		return nil, nil
	}
	var out []device.CaptureMode
	for _, name := range strings.Split(list, ",") {
		mode, err := device.ParseCaptureMode(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		out = append(out, mode)
	}
	return out, nil
}

// ParseGuards reads a guard setting as command lines give it: off (program mode), on (kernel
// mode) or both (nil: every probe's own).
func ParseGuards(s string) ([]bool, error) {
	switch s {
	case "both", "":
		return nil, nil
	case GuardsName(true):
		return []bool{true}, nil
	case GuardsName(false):
		return []bool{false}, nil
	}
	return nil, fmt.Errorf("%q is not off, on or both", s)
}
