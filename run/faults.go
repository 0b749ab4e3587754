package run

import (
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/probes"
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

// checkFaults checks --fault: each KIND@N, and a replay round that --replays, when it sets the
// rounds of every instance, runs. (A round past a probe's own replays is allowed: that fault does
// not fire, and its result says so.)
func (c *Config) checkFaults() error {
	fs, err := parseFaults(c.Faults)
	if err != nil {
		return c.settingErr("fault", err)
	}
	for _, f := range fs {
		if f.Replay() && c.Replays > 0 && f.At > c.Replays {
			return c.settingErrf("fault", "%s: --replays %d runs %d round(s) per instance, so round %d never comes", f, c.Replays, c.Replays, f.At)
		}
	}
	return nil
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
