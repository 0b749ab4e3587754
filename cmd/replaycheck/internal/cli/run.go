package cli

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/runtime/backends"
)

// Environment variables that set flag defaults; a flag on the command line wins.
const (
	envBackend = "REPLAYCHECK_BACKEND"
	envProfile = "REPLAYCHECK_PROFILE"
	envReplays = "REPLAYCHECK_REPLAYS"
)

type runFlags struct {
	matrixFlags
	backend   string
	profile   string
	replays   int
	format    string
	seed      uint64
	timeout   time.Duration
	memory    string
	color     bool
	timelines string
	// envErr is a bad REPLAYCHECK_REPLAYS, reported only when the command runs without --replays
	// (flags are declared before anyone knows the command will run, e.g. for help).
	envErr error
	fs     *flag.FlagSet
}

func (f *runFlags) declare(fs *flag.FlagSet, env Env) {
	f.fs = fs
	f.matrixFlags.declare(fs)
	fs.StringVar(&f.backend, "backend", envOr(env, envBackend, "sim"), "backend to run on (built in: sim; env "+envBackend+")")
	fs.StringVar(&f.profile, "profile", envOr(env, envProfile, backends.DefaultProfile), "simulator platform profile: cann or cuda (env "+envProfile+")")
	replays := 0
	if s := env.getenv(envReplays); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			f.envErr = fmt.Errorf("%s=%q: want a positive number of replay rounds", envReplays, s)
		}
		replays = n
	}
	fs.IntVar(&f.replays, "replays", replays, "replay rounds of every instance, overriding the probes' own (0: the probes'; env "+envReplays+")")
	fs.StringVar(&f.format, "format", "text", "report format: text or json")
	fs.Uint64Var(&f.seed, "seed", 0, "simulator seed: non-zero shuffles independent graph branches on replay, reproducibly")
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "time limit of one instance")
	fs.StringVar(&f.memory, "memory", "", "simulated device memory, e.g. 16GiB (default: the simulator's)")
	fs.BoolVar(&f.color, "color", false, "color the verdict marks of the text report")
	fs.StringVar(&f.timelines, "timelines", "failed", "keep call timelines in the report for instances that did not pass (failed) or for all")
}

// given reports whether the flag was set on the command line.
func (f *runFlags) given(name string) bool {
	set := false
	f.fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

func envOr(env Env, key, def string) string {
	if v := env.getenv(key); v != "" {
		return v
	}
	return def
}

// check validates the flags that need more than their type.
func (f *runFlags) check() (selection, backends.Config, error) {
	if f.envErr != nil && !f.given("replays") {
		return selection{}, backends.Config{}, f.envErr
	}
	sel, err := f.matrixFlags.parse()
	if err != nil {
		return selection{}, backends.Config{}, err
	}
	if max := probes.DefaultLimits().MaxReplays; f.replays < 0 || f.replays > max {
		return selection{}, backends.Config{}, fmt.Errorf("--replays: %d is outside 0..%d", f.replays, max)
	}
	sel.matrix.Replays = f.replays
	if f.format != "text" && f.format != "json" {
		return selection{}, backends.Config{}, fmt.Errorf("--format: %q is not text or json", f.format)
	}
	if f.timelines != "failed" && f.timelines != "all" {
		return selection{}, backends.Config{}, fmt.Errorf("--timelines: %q is not failed or all", f.timelines)
	}
	if f.timeout <= 0 {
		return selection{}, backends.Config{}, fmt.Errorf("--timeout: %v is not a positive duration", f.timeout)
	}
	cfg := backends.Config{Profile: f.profile, Seed: f.seed}
	if f.memory != "" {
		if cfg.Memory, err = probes.ParseSize(f.memory); err != nil {
			return selection{}, backends.Config{}, fmt.Errorf("--memory: %w", err)
		}
	}
	return sel, cfg, nil
}

var runCommand = &command{
	name:     "run",
	summary:  "run probe instances on a backend and report a verdict for each",
	argsHelp: "[PATH...]",
	detail: `Load the probe files (every problem is printed and nothing runs), expand them into instances
(probe x capture mode x guard setting), run each instance on device 0 of the backend and write a
report to stdout: a verdict per instance (pass, fail, skip, uncharacterised) with what the engine saw.
Exit 0 when no verdict fails, 1 when one does, 2 for usage, input or setup errors.`,
	flags: func(fs *flag.FlagSet, env Env) func(context.Context, []string) int {
		var f runFlags
		f.declare(fs, env)
		return func(ctx context.Context, args []string) int { return runProbes(ctx, env, &f, args) }
	},
}

func runProbes(ctx context.Context, env Env, f *runFlags, args []string) int {
	sel, cfg, err := f.check()
	if err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck run: %v\n", err)
		return ExitUsage
	}
	l, ok := load(env, args)
	if !ok {
		return ExitUsage
	}
	instances := sel.instances(l.probes)
	if len(instances) == 0 {
		// As go test does: nothing to run is not a failure, but worth a word.
		fmt.Fprintln(env.Stderr, "replaycheck run: warning: no instances to run")
	}

	backend, err := backends.Open(f.backend, cfg)
	if err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck run: %v\n", err)
		return ExitUsage
	}
	dev, err := backend.Open(ctx, 0)
	if err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck run: opening device 0 of backend %s: %v\n", f.backend, err)
		return ExitUsage
	}

	rep := reports.New("replaycheck", version(), reports.Options{AllTimelines: f.timelines == "all"})
	rep.Backend, rep.Device = backend.Name(), dev.Describe()
	if backend.Name() == "sim" {
		rep.Profile = f.profile
	}
	interrupted := false
	for i, in := range instances {
		if ctx.Err() != nil {
			fmt.Fprintf(env.Stderr, "replaycheck run: interrupted after %d of %d instances\n", i, len(instances))
			interrupted = true
			break
		}
		rep.Add(capture.Run(ctx, dev, in, capture.Options{Timeout: f.timeout}))
	}

	code := ExitOK
	if rep.Summary.Failed() || interrupted {
		// An interrupted run did not show that the instances it never ran pass.
		code = ExitFail
	}
	if err := dev.Close(); err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck run: closing device: %v\n", err)
		code = ExitFail
	}
	if f.format == "json" {
		err = reports.WriteJSON(env.Stdout, rep)
	} else {
		err = reports.WriteText(env.Stdout, rep, reports.TextOptions{Color: f.color})
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck run: writing the report: %v\n", err)
		return ExitFail
	}
	return code
}
