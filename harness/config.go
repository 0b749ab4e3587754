package harness

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime/guard"
	"github.com/replaycheck/replaycheck/verdict"
)

// Config selects what a suite process runs and on what.
type Config struct {
	Backend string
	Profile string
	Replays int    // 0: each probe's own
	Seed    uint64 // simulator replay-order seed; 0 deterministic
	Modes   string // comma-separated subset of capture modes; "" all
	Guards  string // off, on or both
	Timeout time.Duration
	// Baseline is the platform baseline unguarded outcomes are compared with: auto (the default:
	// baselines/<backend>-<profile>.yaml in the suite's directory, when it exists), none, or a file.
	Baseline string
	// Report is a file the suite writes its replaycheck report to (JSON for .json, text otherwise),
	// from every parallel process's results; "" writes none.
	Report string
	// DisableGuards removes kernel-mode guards (retained, arena, capture-watch, residency,
	// replay-isolation or all, comma-separated). For negative controls only: it proves the suite fails without them.
	DisableGuards string
	// Runtime is a runtime plugin (a shared library implementing include/replaycheck/runtime.h)
	// to run every instance through instead of the built-in guards; "" is the built-in guards.
	// Loading one needs a cgo build.
	Runtime string

	envErrs []error // malformed environment defaults, reported by Check
}

// Check reports malformed environment values, an unusable matrix and unknown guard names.
func (c *Config) Check() error {
	if len(c.envErrs) > 0 {
		return c.envErrs[0]
	}
	if _, err := c.Disabled(); err != nil {
		return err
	}
	if c.Runtime != "" && c.DisableGuards != "" {
		return fmt.Errorf("disable-guards removes built-in guards, but runtime %s is under test instead of them", c.Runtime)
	}
	_, err := c.Matrix()
	return err
}

// LoadBaseline reads the baseline of platform (the opened device's key) that the configuration
// names (verdict.LocateBaseline); auto looks for baselines/<file> under dir and returns nil when
// there is none.
func (c *Config) LoadBaseline(dir, platform string) (*verdict.Baseline, error) {
	return verdict.LocateBaseline(c.Baseline, []string{dir}, platform)
}

// Disabled is the guard.Disabled that DisableGuards names.
func (c *Config) Disabled() (guard.Disabled, error) {
	var d guard.Disabled
	if c.DisableGuards == "" {
		return d, nil
	}
	for _, name := range strings.Split(c.DisableGuards, ",") {
		switch strings.TrimSpace(name) {
		case "retained":
			d.RetainedSlot = true
		case "arena":
			d.ArenaBank = true
		case "capture-watch":
			d.CaptureWatch = true
		case "residency":
			d.Residency = true
		case "replay-isolation":
			d.ReplayIsolation = true
		case "all":
			d = guard.Disabled{RetainedSlot: true, ArenaBank: true, CaptureWatch: true, Residency: true, ReplayIsolation: true}
		default:
			return d, fmt.Errorf("disable-guards: unknown guard %q (want retained, arena, capture-watch, residency, replay-isolation or all)", name)
		}
	}
	return d, nil
}

// Matrix is the instance matrix the configuration selects.
func (c *Config) Matrix() (probes.Matrix, error) {
	m := probes.Matrix{Replays: c.Replays}
	var err error
	if m.Modes, err = probes.ParseModes(c.Modes); err != nil {
		return m, fmt.Errorf("modes: %w", err)
	}
	if m.Guards, err = probes.ParseGuards(c.Guards); err != nil {
		return m, fmt.Errorf("guards: %w", err)
	}
	return m, nil
}

// RegisterFlags registers the suite flags on fs with defaults from the environment
// (REPLAYCHECK_BACKEND, REPLAYCHECK_PROFILE, REPLAYCHECK_REPLAYS, REPLAYCHECK_SEED,
// REPLAYCHECK_MODES, REPLAYCHECK_GUARDS, REPLAYCHECK_BASELINE, REPLAYCHECK_REPORT,
// REPLAYCHECK_RUNTIME). Flags are read when the test binary parses them, so use the
// Config only from TestX.
func RegisterFlags(fs *flag.FlagSet) *Config {
	c := &Config{}
	fs.StringVar(&c.Backend, "replaycheck.backend", env("REPLAYCHECK_BACKEND", "sim"), "device backend")
	fs.StringVar(&c.Profile, "replaycheck.profile", env("REPLAYCHECK_PROFILE", "cann"), "simulator platform profile")
	fs.IntVar(&c.Replays, "replaycheck.replays", c.envInt("REPLAYCHECK_REPLAYS", 0), "replay rounds per instance (0: each probe's own)")
	fs.Uint64Var(&c.Seed, "replaycheck.seed", uint64(c.envInt("REPLAYCHECK_SEED", 0)), "simulator replay-order seed (0: deterministic)")
	fs.StringVar(&c.Modes, "replaycheck.modes", env("REPLAYCHECK_MODES", ""), "capture modes to run, comma-separated (default all)")
	fs.StringVar(&c.Guards, "replaycheck.guards", env("REPLAYCHECK_GUARDS", "both"), "guard settings to run: off, on or both")
	fs.DurationVar(&c.Timeout, "replaycheck.timeout", time.Minute, "time limit of one instance")
	fs.StringVar(&c.Baseline, "replaycheck.baseline", env("REPLAYCHECK_BASELINE", "auto"), "platform baseline: auto, none, or a file")
	fs.StringVar(&c.Report, "replaycheck.report", env("REPLAYCHECK_REPORT", ""), "write the replaycheck report to this file (.json: JSON, else text)")
	fs.StringVar(&c.Runtime, "replaycheck.runtime", env("REPLAYCHECK_RUNTIME", ""), "runtime plugin (.so) to run every instance through instead of the built-in guards (needs cgo)")
	fs.StringVar(&c.DisableGuards, "replaycheck.disable-guards", "", "negative controls only: guards to remove (retained, arena, capture-watch, residency, replay-isolation, all)")
	return c
}

func env(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}

func (c *Config) envInt(key string, def int) int {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			c.envErrs = append(c.envErrs, fmt.Errorf("environment %s=%q: want a non-negative integer", key, v))
			return def
		}
		return n
	}
	return def
}
