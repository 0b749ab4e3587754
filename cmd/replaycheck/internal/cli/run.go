package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/backends"
	"github.com/replaycheck/replaycheck/runtime/plugin"
	"github.com/replaycheck/replaycheck/verdict"
)

// Environment variables that set flag defaults; a flag on the command line wins.
const (
	envBackend = "REPLAYCHECK_BACKEND"
	envProfile = "REPLAYCHECK_PROFILE"
	envReplays = "REPLAYCHECK_REPLAYS"
	envRuntime = "REPLAYCHECK_RUNTIME"
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
	table     bool
	baseline  string
	// runtime is the runtime plugin to put under the probes ("": the built-in guards); plugin is
	// it, loaded (nil until the command loads it).
	runtime string
	plugin  *plugin.Plugin
	// envErr is a bad REPLAYCHECK_REPLAYS, reported only when the command runs without --replays
	// (flags are declared before anyone knows the command will run, e.g. for help).
	envErr error
	fs     *flag.FlagSet
}

func (f *runFlags) declare(fs *flag.FlagSet, env Env) {
	f.fs = fs
	f.matrixFlags.declare(fs)
	fs.StringVar(&f.backend, "backend", envOr(env, envBackend, "sim"), "backend to run on (built in: sim; env "+envBackend+")")
	fs.StringVar(&f.profile, "profile", envOr(env, envProfile, backends.DefaultProfile), "simulator platform profile: cann or cuda, or a comma-separated list to run each (env "+envProfile+")")
	replays := 0
	if s := env.getenv(envReplays); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			f.envErr = fmt.Errorf("%s=%q: want a positive number of replay rounds", envReplays, s)
		}
		replays = n
	}
	fs.IntVar(&f.replays, "replays", replays, "replay rounds of every instance, overriding the probes' own (0: the probes'; env "+envReplays+")")
	fs.StringVar(&f.format, "format", "text", "report format: text, json, junit (JUnit XML for CI test reporters) or markdown (a CI job summary, e.g. for $GITHUB_STEP_SUMMARY)")
	fs.Uint64Var(&f.seed, "seed", 0, "simulator seed: non-zero shuffles independent graph branches on replay, reproducibly")
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "time limit of one instance")
	fs.StringVar(&f.memory, "memory", "", "simulated device memory, e.g. 16GiB (default: the simulator's)")
	fs.BoolVar(&f.color, "color", false, "color the verdict marks of the text report")
	fs.StringVar(&f.timelines, "timelines", "failed", "keep call timelines in the report for instances that did not pass (failed) or for all")
	fs.BoolVar(&f.table, "table", false, "print the enforcement table (hazard x mode -> what the platform did, one column group per profile), then every failing verdict, instead of the report")
	fs.StringVar(&f.runtime, "runtime", envOr(env, envRuntime, ""), "runtime plugin to put under the probes: a shared library implementing include/replaycheck/runtime.h (default: the built-in guards; needs a cgo build; env "+envRuntime+")")
	fs.StringVar(&f.baseline, "baseline", "auto", "platform baseline to judge unguarded outcomes against: auto (baselines/<backend>-<profile>.yaml beside the probes), none, or a file")
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
	switch f.format {
	case "text", "json":
	case "junit", "markdown":
		if f.table {
			return selection{}, backends.Config{}, fmt.Errorf("--table writes text or json, not %s (the %s report has no table-only form)", f.format, f.format)
		}
	default:
		return selection{}, backends.Config{}, fmt.Errorf("--format: %q is not text, json, junit or markdown", f.format)
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
With --runtime, every instance runs through that runtime plugin (include/replaycheck/runtime.h)
instead of replaycheck's built-in guards, and the report names it.
Exit 0 when no verdict fails, 1 when one does, 2 for usage, input or setup errors.`,
	flags: func(fs *flag.FlagSet, env Env) func(context.Context, []string) int {
		var f runFlags
		f.declare(fs, env)
		return func(ctx context.Context, args []string) int { return runProbes(ctx, env, &f, args) }
	},
}

func runProbes(ctx context.Context, env Env, f *runFlags, args []string) int {
	sel, cfg, err := f.check()
	instances, ok := selectInstances(env, "run", sel, err, args)
	if !ok {
		return ExitUsage
	}

	// Every profile is checked before anything runs: a typo in the third must not cost the first two.
	if len(f.profiles()) == 0 {
		fmt.Fprintln(env.Stderr, "replaycheck run: --profile names no profile")
		return ExitUsage
	}
	for _, profile := range f.profiles() {
		c := cfg
		c.Profile = profile
		b, err := backends.Open(f.backend, c)
		if err == nil {
			err = b.Close()
		}
		if err != nil {
			fmt.Fprintf(env.Stderr, "replaycheck run: %v\n", err)
			return ExitUsage
		}
	}
	if f.runtime != "" {
		p, err := plugin.Load(f.runtime)
		if err != nil {
			fmt.Fprintf(env.Stderr, "replaycheck run: --runtime: %v\n", err)
			return ExitUsage
		}
		f.plugin = p
		defer func() {
			if err := p.Close(); err != nil {
				fmt.Fprintf(env.Stderr, "replaycheck run: unloading the runtime plugin: %v\n", err)
			}
		}()
	}

	var runs []*reports.Report
	code := ExitOK
	for _, profile := range f.profiles() {
		p, err := openPlatform(ctx, f.backend, profile, cfg)
		if err != nil {
			fmt.Fprintf(env.Stderr, "replaycheck run: %v\n", err)
			return ExitUsage
		}
		baseline, err := f.baselineFor(env, args, p.dev.Platform())
		if err != nil {
			fmt.Fprintf(env.Stderr, "replaycheck run: %v\n", err)
			_ = p.close()
			return ExitUsage
		}
		pr := execute(ctx, env, f, p, instances, baseline)
		runs = append(runs, pr.report)
		if pr.failed() {
			code = ExitFail
		}
		if pr.interrupted {
			break
		}
	}
	if err := writeRuns(env, f, runs); err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck run: writing the report: %v\n", err)
		return ExitFail
	}
	return code
}

// profiles lists the platform profiles to run, one run each (--profile cann,cuda).
func (f *runFlags) profiles() []string {
	var out []string
	for _, p := range strings.Split(f.profile, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// baselineFor finds the platform baseline unguarded results are judged against: --baseline none
// disables it, a path names it (one platform only), and auto (the default) looks for
// baselines/<backend>-<profile>.yaml beside the probe paths (in a directory given, or in a file's directory).
// Auto finding nothing is not an error: those instances stay uncharacterised.
func (f *runFlags) baselineFor(env Env, args []string, key string) (*verdict.Baseline, error) {
	if f.baseline != "none" && f.baseline != "auto" && f.baseline != "" && len(f.profiles()) > 1 {
		return nil, fmt.Errorf("--baseline %s names one file, but %d profiles run: use auto or none", f.baseline, len(f.profiles()))
	}
	if len(args) == 0 {
		args = defaultPaths
	}
	var dirs []string
	for _, a := range args {
		if st, err := os.Stat(a); err != nil || !st.IsDir() {
			a = filepath.Dir(a)
		}
		dirs = append(dirs, a)
	}
	b, err := verdict.LocateBaseline(f.baseline, dirs, key)
	if b != nil {
		b.File = env.display(b.File)
	}
	return b, err
}

// platformRun is one platform's run of the selected instances.
type platformRun struct {
	report      *reports.Report
	results     []*capture.Result
	interrupted bool
	closeErr    error
}

// failed: a failed verdict, an interrupted run (the instances it never ran were not shown to pass)
// or a device that did not close cleanly.
func (p platformRun) failed() bool {
	return p.report.Summary.Failed() || p.interrupted || p.closeErr != nil
}

// platform is device 0 of a backend, open for a run.
type platform struct {
	backend runtime.Backend
	dev     runtime.Device
	profile string // the simulator profile, "" for a backend without profiles
}

// openPlatform opens the backend with one profile and its device 0.
func openPlatform(ctx context.Context, backend, profile string, cfg backends.Config) (*platform, error) {
	cfg.Profile = profile
	b, err := backends.Open(backend, cfg)
	if err != nil {
		return nil, err
	}
	dev, err := b.Open(ctx, 0)
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("opening device 0 of backend %s: %w", backend, err)
	}
	return &platform{backend: b, dev: dev, profile: backends.ProfileOf(backend, profile)}, nil
}

// close closes the device, then the backend.
func (p *platform) close() error {
	return errors.Join(p.dev.Close(), p.backend.Close())
}

// execute runs every instance on the platform's device, then closes it; the report names the
// device's platform and is judged against baseline (nil: none).
func execute(ctx context.Context, env Env, f *runFlags, p *platform, instances []probes.Instance, baseline *verdict.Baseline) platformRun {
	rep := reports.New("replaycheck", version(), reports.Options{AllTimelines: f.timelines == "all"})
	rep.Backend, rep.Platform, rep.Device, rep.Profile = p.backend.Name(), p.dev.Platform(), p.dev.Describe(), p.profile
	opt := capture.Options{Timeout: f.timeout}
	if f.plugin != nil {
		opt.Runtime = runtimeUnderTest(f.plugin)
		rep.Runtime = f.plugin.Name()
	}
	if baseline != nil {
		rep.Baseline, rep.BaselineFile = baseline, baseline.File
	}
	pr := platformRun{report: rep}
	for i, in := range instances {
		if ctx.Err() != nil {
			fmt.Fprintf(env.Stderr, "replaycheck run: interrupted after %d of %d instances\n", i, len(instances))
			pr.interrupted = true
			break
		}
		res := capture.Run(ctx, p.dev, in, opt)
		pr.results = append(pr.results, res)
		rep.Add(res)
	}
	if err := p.close(); err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck run: closing device: %v\n", err)
		pr.closeErr = err
	}
	return pr
}

// writeRuns writes the reports: with --table only the enforcement table of every run, followed in
// text by the instances whose verdict failed (so a failing exit status says why); as JSON one
// document whatever the selection (reports.Document); as JUnit one document of a testsuite per
// run; as Markdown one summary of every run; otherwise each run's report, the enforcement table
// as its last section (one table over all runs).
func writeRuns(env Env, f *runFlags, runs []*reports.Report) error {
	table := reports.EnforcementTable(runs...)
	if f.table {
		if f.format == "json" {
			return reports.WriteJSONValue(env.Stdout, table)
		}
		if err := reports.WriteTable(env.Stdout, table); err != nil {
			return err
		}
		return reports.WriteFailures(env.Stdout, runs...)
	}
	switch f.format {
	case "json":
		return reports.WriteJSON(env.Stdout, runs...)
	case "junit":
		return reports.WriteJUnit(env.Stdout, runs...)
	case "markdown":
		return reports.WriteMarkdown(env.Stdout, runs...)
	}
	for i, r := range runs {
		if i == len(runs)-1 {
			r.Enforcement = table
		}
		if i > 0 {
			fmt.Fprintln(env.Stdout)
		}
		if err := reports.WriteText(env.Stdout, r, reports.TextOptions{Color: f.color}); err != nil {
			return err
		}
	}
	return nil
}

// runtimeUnderTest is the runtime plugin p as the engine's runtime under test.
func runtimeUnderTest(p *plugin.Plugin) *capture.RuntimeUnderTest {
	return &capture.RuntimeUnderTest{Name: p.Name(), Open: func(dev runtime.Device, guarded bool) (capture.Runtime, error) {
		rt, err := p.Open(dev, guarded)
		if err != nil {
			return nil, err
		}
		return rt, nil
	}}
}
