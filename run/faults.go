package run

import (
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/verdict"
)

// EnvFault is the default of run --fault: faults injected into every selected instance,
// comma-separated (KIND@N, probes.ParseFault).
const EnvFault = "REPLAYCHECK_FAULT"

// splitFaults reads a comma-separated list of faults; blanks are dropped.
func splitFaults(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// faultsFromEnv sets c.Faults from REPLAYCHECK_FAULT, recording a malformed value for Check.
func (c *Config) faultsFromEnv(getenv func(string) string) {
	v := getenv(EnvFault)
	if v == "" {
		return
	}
	c.Faults = splitFaults(v)
	c.fromVar("fault", EnvFault) // a value Check rejects is the variable's, until --fault is given
	if _, err := parseFaults(c.Faults); err != nil {
		c.envErr("fault", fmt.Errorf("%s=%q: %w", EnvFault, v, err))
	}
}

func parseFaults(texts []string) ([]probes.Fault, error) {
	out := make([]probes.Fault, 0, len(texts))
	for _, t := range texts {
		f, err := probes.ParseFault(t)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// checkFaults checks --fault: each KIND@N, no two that fire at the same call (the same
// allocation, or a launch of the same replay round: the second could never fire), and a replay
// round that --replays, when it sets the rounds of every instance, runs. (A round past a probe's
// own replays is allowed: that fault does not fire, and its result says so.)
func (c *Config) checkFaults() error {
	fs, err := parseFaults(c.Faults)
	if err != nil {
		return c.Invalid("fault", err)
	}
	seen := map[probes.FaultCall]probes.Fault{}
	for _, f := range fs {
		if first, dup := seen[f.Call()]; dup {
			return c.settingErrf("fault", "%s fires at the same call as %s: one fault per %s", f, first, f.Call())
		}
		seen[f.Call()] = f
		if f.Replay() && c.Replays > 0 && f.At > c.Replays {
			return c.settingErrf("fault", "%s: --replays %d runs %s per instance, so round %d never comes", f, c.Replays, plural.Count(c.Replays, "round"), f.At)
		}
	}
	return nil
}

// CheckFaults refuses a selection in which one of the run's faults (--fault, REPLAYCHECK_FAULT)
// fires at the same call as a fault of a selected probe's own: the run's would never fire. The
// error names the probe, where its fault is written, and both faults. Execute refuses such a
// selection before it opens anything; a front end calls it before it creates anything (an output
// directory). Instance, which the suite runs one instance at a time, ends such an instance in error
// instead.
func (c Config) CheckFaults(instances []probes.Instance) error {
	if len(c.Faults) == 0 {
		return nil
	}
	var last *probes.Probe
	for _, in := range instances {
		if in.Probe == last {
			continue // a probe's instances are adjacent in selection order
		}
		last = in.Probe
		if err := c.faultClash(in.Probe); err != nil {
			return err
		}
	}
	return nil
}

// faultClash is the first of the run's faults that fires at the same call as one of p's own, as
// an error naming both and the probe; nil when none does.
func (c Config) faultClash(p *probes.Probe) error {
	if len(c.Faults) == 0 || len(p.Faults) == 0 {
		return nil
	}
	for _, f := range c.faults() {
		for _, own := range p.Faults {
			if own.Call() != f.Call() {
				continue
			}
			where := ""
			if own.Pos.File != "" {
				where = fmt.Sprintf(" (%s:%d)", display(own.Pos.File), own.Pos.Line)
			}
			return c.settingErrf("fault", "%s fires at the same call as %s, probe %s's own fault%s: one fault per %s; leave it out, or leave the probe out of the selection (--run, --probe)",
				f, own, p.ID(), where, f.Call())
		}
	}
	return nil
}

// clashEntry is the entry of an instance in which one of the run's faults collides with its
// probe's own (faultClash): in error (setup), nothing run on dev.
func clashEntry(in probes.Instance, c Config, dev device.Device, baseline *verdict.Baseline, err error) reports.Entry {
	msg := err.Error()
	return unrunEntry(in, c, dev.Backend(), dev.Platform(), dev.Describe(), baseline, probes.Errored, msg,
		&capture.RunError{Kind: capture.ErrSetup, Message: msg})
}

// faults are the run's faults, for the engine (capture.Options.Faults). Check has accepted them.
func (c Config) faults() []probes.Fault {
	fs, _ := parseFaults(c.Faults)
	return fs
}

// FaultFlag is the flag.Value of run --fault (and the suite's -replaycheck.fault): each use adds
// faults (KIND@N, several comma-separated), the first replacing those REPLAYCHECK_FAULT gave.
func FaultFlag(c *Config) *faultFlag { return &faultFlag{c: c} }

type faultFlag struct {
	c   *Config
	set bool
}

func (f *faultFlag) String() string {
	if f == nil || f.c == nil {
		return ""
	}
	return strings.Join(f.c.Faults, ",")
}

func (f *faultFlag) Set(v string) error {
	if !f.set {
		f.c.Faults, f.set = nil, true
	}
	fs := splitFaults(v)
	if _, err := parseFaults(fs); err != nil {
		return err
	}
	f.c.Faults = append(f.c.Faults, fs...)
	return nil
}
