package harness

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/replaycheck/replaycheck/run"
	"github.com/replaycheck/replaycheck/run/proc"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// Config selects what a suite process runs and on what: package run's Config (backend, profile,
// replays, seed, modes, guards, shard, baseline, runtime plugin, timeout, with run.Defaults'
// environment defaults and run.Config.Check's rules, the CLI's own) and the suite's own settings.
type Config struct {
	run.Config
	// Report is a file the suite writes its replaycheck report to, from every parallel process's
	// results (.json: JSON, .xml: JUnit, .md: Markdown, .html: HTML, else text), or a directory
	// (ReportDir) it writes every format to, as run --out does; "" writes none.
	Report string
	// DisableGuards removes kernel-mode guards (retained, arena, capture-watch, residency,
	// replay-isolation or all, comma-separated). For negative controls only: it proves the suite fails without them.
	DisableGuards string

	fs *flag.FlagSet // where the flags were registered, to learn which were given
}

// ReportDir reports whether Report names a directory: it ends with a path separator or is one.
func (c *Config) ReportDir() bool {
	if c.Report == "" {
		return false
	}
	if strings.HasSuffix(c.Report, "/") || strings.HasSuffix(c.Report, string(filepath.Separator)) {
		return true
	}
	st, err := os.Stat(c.Report)
	return err == nil && st.IsDir()
}

// flagPrefix starts every suite flag's name.
const flagPrefix = "replaycheck."

// Check reports malformed environment values, an unusable matrix or shard and unknown guard
// names, naming the suite's flags.
func (c *Config) Check() error {
	if c.fs != nil {
		c.fs.Visit(func(f *flag.Flag) { c.Set(strings.TrimPrefix(f.Name, flagPrefix)) })
	}
	err := c.Config.Check()
	if ps := c.Profiles(); err == nil && len(ps) > 1 {
		err = c.Invalid("profile", fmt.Errorf("%s: the suite runs one profile per test process; run it once for each (replaycheck run takes a list)", c.Profile))
	}
	if err != nil {
		var se *run.SettingError
		if errors.As(err, &se) && se.Env == "" { // a value from a variable is blamed on it as it is
			return fmt.Errorf("-%s%s: %w", flagPrefix, se.Setting, se.Err)
		}
		return err
	}
	if _, err := c.Disabled(); err != nil {
		return err
	}
	if c.Runtime != "" && c.DisableGuards != "" {
		return fmt.Errorf("disable-guards removes built-in guards, but runtime %s is under test instead of them", c.Runtime)
	}
	return nil
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

// RegisterFlags registers the suite flags on fs with run.Defaults' defaults from the environment
// (REPLAYCHECK_BACKEND, REPLAYCHECK_PROFILE, REPLAYCHECK_REPLAYS, REPLAYCHECK_SEED,
// REPLAYCHECK_MODES, REPLAYCHECK_GUARDS, REPLAYCHECK_BASELINE, REPLAYCHECK_RUNTIME,
// REPLAYCHECK_SHARD, REPLAYCHECK_FAULT) and REPLAYCHECK_REPORT. Flags are read when the test binary parses them, so
// use the Config only from TestX.
func RegisterFlags(fs *flag.FlagSet) *Config {
	c := &Config{Config: run.Defaults(os.Getenv), fs: fs}
	c.Version = "suite"
	p := flagPrefix
	fs.StringVar(&c.Backend, p+"backend", c.Backend, "device backend")
	fs.StringVar(&c.Profile, p+"profile", c.Profile, "simulator platform profile: one per test process")
	fs.Var(run.ReplaysFlag(&c.Config), p+"replays", "replay rounds per instance (0: each probe's own)")
	fs.Var(run.SeedFlag(&c.Config), p+"seed", "simulator replay-order seed (0: deterministic)")
	fs.StringVar(&c.Modes, p+"modes", c.Modes, "capture modes to run, comma-separated (default all)")
	fs.StringVar(&c.Guards, p+"guards", c.Guards, "guard settings to run: off, on or both")
	fs.StringVar(&c.Run, p+"run", c.Run, "generate specs only for instances whose id matches this regular expression")
	fs.Var(&c.Shard, p+"shard", "generate specs only for shard K of N (K/N): the instances whose id hashes to K-1 modulo N")
	fs.DurationVar(&c.Timeout, p+"timeout", c.Timeout, "time limit of one instance")
	fs.StringVar(&c.Baseline, p+"baseline", c.Baseline, "platform baseline: auto, none, or a file")
	fs.StringVar(&c.Report, p+"report", os.Getenv("REPLAYCHECK_REPORT"), "write the replaycheck report to this file (.json: JSON, .xml: JUnit, .md: Markdown, .html: HTML, else text), or every format into this directory (a path ending in /, or an existing directory: report.json, report.txt, junit.xml, summary.md, report.html)")
	fs.StringVar(&c.Runtime, p+"runtime", c.Runtime, "runtime plugin (.so) to run every instance through instead of the built-in guards (needs cgo)")
	fs.BoolVar(&c.CheckSlotLog, p+"check-slot-log", c.CheckSlotLog, "check the runtime's slot log (a plugin's slots_changed) against every slot before every guarded call")
	fs.Var(run.FaultFlag(&c.Config), p+"fault", "inject a fault into every instance, KIND@N (alloc-fail@N: the N-th allocation; launch-fail, device-lost, hang @K: replay round K); repeat or comma-separate for several (env "+run.EnvFault+")")
	fs.BoolVar(&c.Isolate, p+"isolate", c.Isolate, "run each instance in a child process (the test binary again; its TestMain or init must call harness.ServeWorker), so a crash in a driver library or plugin fails that spec only (env "+run.EnvIsolate+")")
	fs.StringVar(&c.DisableGuards, p+"disable-guards", "", "negative controls only: guards to remove (retained, arena, capture-watch, residency, replay-isolation, all)")
	return c
}

// ServeWorker makes a test binary started by -replaycheck.isolate (run.EnvWorker set) the worker
// of one instance (run.ServeWorker) and exits; otherwise it returns at once. Call it first thing in
// TestMain or an init function, before the suite parses flags or runs.
func ServeWorker() {
	if os.Getenv(run.EnvWorker) == "" {
		return
	}
	out, err := proc.Results()
	if err == nil {
		err = run.ServeWorker(context.Background(), os.Stdin, out)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "replaycheck worker: %v\n", err)
		os.Exit(2)
	}
	os.Exit(0)
}
