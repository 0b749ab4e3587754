package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/replaycheck/replaycheck/internal/bytesize"
	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/run"
)

type runFlags struct {
	cfg    run.Config
	format string
	memory string
	color  bool
	// verbose shows the detail of every instance with a finding, not only of failed ones.
	verbose bool
	table   bool
	fs      *flag.FlagSet
}

// declare declares run's flags on fs: the platform's (declarePlatform), then the report's and
// the runtime under test's.
func (f *runFlags) declare(fs *flag.FlagSet, env Env) {
	f.declarePlatform(fs, env, true, "simulator platform profile: cann or cuda, or a comma-separated list to run each (env "+run.EnvProfile+")")
	c := &f.cfg
	fs.StringVar(&f.format, "format", "text", "report format: text, json, junit (JUnit XML for CI test reporters) markdown (a CI job summary, e.g. for $GITHUB_STEP_SUMMARY) or html (one self-contained page: the outcome matrix, each finding, a picture of the captured memory)")
	fs.BoolVar(&f.color, "color", false, "color the verdict marks of the text report")
	fs.BoolVar(&f.verbose, "v", false, "text report: the detail of every instance with a finding (an expected corruption, stale ranges, a refusal and its runtime's message), not only of failed ones")
	fs.StringVar(&c.Timelines, "timelines", c.Timelines, "keep call timelines in the report for instances that did not pass (failed) or for all")
	fs.BoolVar(&f.table, "table", false, "print the enforcement table (hazard x mode -> what the platform did, one column group per profile), then every failing verdict, instead of the report")
	fs.StringVar(&c.Runtime, "runtime", c.Runtime, "runtime plugin to put under the probes: a shared library implementing include/replaycheck/runtime.h (default: the built-in guards; needs a cgo build; env "+run.EnvRuntime+")")
	fs.BoolVar(&c.CheckSlotLog, "check-slot-log", c.CheckSlotLog, "check the runtime's slot log (a --runtime plugin's slots_changed; without --runtime, the built-in guards' own): read every slot before every guarded call as well, and fail an instance whose slot changed without the log naming it")
}

// declarePlatform declares the flags that say what runs where and how (the selection, with
// --guards when guards is set, the backend, the profile with profileHelp, replays, seed, time
// limit, memory, faults, isolation, the baseline), bound to f.cfg: run's and baseline's, which
// records the platform alone and writes no report.
func (f *runFlags) declarePlatform(fs *flag.FlagSet, env Env, guards bool, profileHelp string) {
	f.fs, f.format = fs, "text"
	f.cfg = run.Defaults(env.getenv)
	f.cfg.Version = version()
	c := &f.cfg
	declareSelection(fs, c, guards)
	fs.StringVar(&c.Backend, "backend", c.Backend, "backend to run on: sim, or acl or cuda in a cgo build with their driver library (see replaycheck devices; env "+run.EnvBackend+")")
	fs.StringVar(&c.Profile, "profile", c.Profile, profileHelp)
	fs.Var(run.ReplaysFlag(c), "replays", "the `number` of replay rounds of every instance, overriding the probes' own (0: the probes'; decimal or 0x hex; env "+run.EnvReplays+")")
	fs.Var(run.SeedFlag(c), "seed", "simulator `seed`: non-zero shuffles independent graph branches on replay, reproducibly (decimal or 0x hex; env "+run.EnvSeed+")")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "time limit of one instance")
	fs.StringVar(&f.memory, "memory", "", "simulated device memory, e.g. 16GiB, above zero; --backend sim only (default: the simulator's)")
	fs.Var(run.FaultFlag(c), "fault", "inject a fault into every instance: KIND@N, alloc-fail@N (the N-th device allocation fails), launch-fail@K, device-lost@K or hang@K (the launch of replay round K fails, loses the device, never returns); repeat or comma-separate for several; needs a backend with fault injection (the simulator, the fake libraries; env "+run.EnvFault+")")
	fs.BoolVar(&c.Isolate, "isolate", c.Isolate, "run each instance in a child process, so a crash (a signal in a driver library or runtime plugin, a panic, an exit) or a hang past --timeout ends that instance in error and the run goes on (env "+run.EnvIsolate+")")
	fs.StringVar(&c.Baseline, "baseline", c.Baseline, "platform baseline to judge unguarded outcomes against: auto (baselines/<platform key>.yaml beside the probes, e.g. sim-cann.yaml), none, or a file (env "+run.EnvBaseline+")")
}

// given reports whether the flag was set on the command line.
func (f *runFlags) given(name string) bool {
	set := false
	f.fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

// check validates the flags that need more than their type (run.Config.Check for the run's own).
func (f *runFlags) check() error {
	f.fs.Visit(func(fl *flag.Flag) { f.cfg.Set(fl.Name) })
	if f.given("memory") {
		var err error
		if f.cfg.Memory, err = bytesize.Parse(f.memory); err != nil {
			return fmt.Errorf("--memory: %w", err)
		}
		if f.cfg.Memory == 0 {
			return fmt.Errorf("--memory: %q: want a size above zero (leave --memory out for the simulator's default)", f.memory)
		}
	}
	if err := f.cfg.Check(); err != nil {
		return err
	}
	return f.checkFormat()
}

// checkFormat checks --format.
func (f *runFlags) checkFormat() error {
	switch f.format {
	case "text", "json":
	case "junit", "markdown", "html":
		if f.table {
			return fmt.Errorf("--table writes text or json, not %s (the %s report has no table-only form)", f.format, f.format)
		}
	default:
		return fmt.Errorf("--format: %q is not text, json, junit, markdown or html", f.format)
	}
	return nil
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
With --out DIR, each finished instance is also appended to DIR/results.jsonl (synced line by line,
so a crash loses at most the instance in flight; one run after another for several profiles), and
at the end DIR gets every format: report.json, report.txt, junit.xml, summary.md and report.html.
--resume DIR runs what such a journal lacks with its settings and writes the same files; it must
be the same replaycheck version that began the run.
--isolate runs each instance in a child process (this binary again), so an instance whose process
dies (a SIGSEGV in a driver library or runtime plugin, a panic, an exit, a hang past --timeout) is
an error, "crashed (signal SIGSEGV during Launch)", and the run goes on with the next.
--shard K/N runs the K-th of N disjoint parts of the selection (by a hash of each instance id).
--fault KIND@N injects a fault into every instance (probe files can list their own): each ends that
instance in error naming the fault and the call, and the run goes on. One fault per call: a --fault
that fires at the same call as another, or as a selected probe's own, is refused before anything
runs (it could never fire). An instance that loses the
device (device-lost), or whose device call does not return within --timeout ("timeout in Launch":
the device is abandoned), is followed by a fresh device where the backend can open one, or the
rest of the run is skipped; the report says which.
--memory sizes the simulator's device memory (above zero); a device backend refuses it.
SIGINT or SIGTERM stops after the instance in flight; a second one abandons that instance at once,
leaving a device call it is inside (and its device) behind. The report lists every profile's
instances not run, and the exit status is 130 (SIGINT) or 143 (SIGTERM).
Exit 0 when no verdict fails; 1 when one does or an instance did not run; 2 for usage, input or
setup errors, and when a report (a file in --out DIR, or stdout) could not be written: every
other format is still written, and each failure is named.`,
	flags: func(fs *flag.FlagSet, env Env) func(context.Context, []string) int {
		var f runFlags
		f.declare(fs, env)
		var out, resume string
		fs.StringVar(&out, "out", "", "output directory: DIR/results.jsonl as the run goes; report.json, report.txt, junit.xml, summary.md and report.html at the end")
		fs.StringVar(&resume, "resume", "", "resume the interrupted run whose journal is DIR/results.jsonl, with its settings, and write its final files there")
		return func(ctx context.Context, args []string) int {
			if resume != "" {
				return resumeProbes(ctx, env, &f, resume, args)
			}
			return runProbes(ctx, env, &f, out, args)
		}
	},
}

func runProbes(ctx context.Context, env Env, f *runFlags, out string, args []string) int {
	err := f.check()
	instances, ok := selectInstances(env, "run", f.cfg, err, args)
	if !ok {
		return ExitUsage
	}
	cfg := f.cfg
	cfg.Paths = args
	if len(args) == 0 {
		cfg.Paths = defaultPaths
	}

	// Every profile is checked before anything runs: a typo in the third must not cost the first two.
	profiles := cfg.Profiles()
	if len(profiles) == 0 {
		fmt.Fprintln(env.Stderr, "replaycheck run: --profile names no profile")
		return ExitUsage
	}
	if len(profiles) > 1 && cfg.Baseline != "none" && cfg.Baseline != "auto" && cfg.Baseline != "" {
		fmt.Fprintf(env.Stderr, "replaycheck run: --baseline %s names one file, but %d profiles run: use auto or none\n", cfg.Baseline, len(profiles))
		return ExitUsage
	}
	for _, profile := range profiles {
		c := cfg
		c.Profile = profile
		if err := c.CheckBackend(); err != nil {
			fmt.Fprintf(env.Stderr, "replaycheck run: %v\n", err)
			return ExitUsage
		}
	}
	// Before --out makes a journal: a refused run must leave the directory free for the next try.
	if err := cfg.CheckFaults(instances); err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck run: %v\n", err)
		return ExitUsage
	}
	rut, release, err := run.LoadRuntime(cfg.Runtime)
	if err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck run: %v\n", cfg.Invalid("runtime", err))
		return ExitUsage
	}
	ends := newEnds(env, len(instances))
	defer func() {
		if ends.leftInCall {
			return // the abandoned instance may still be inside the plugin: the process exits with it loaded
		}
		if err := release(); err != nil {
			fmt.Fprintf(env.Stderr, "replaycheck run: unloading the runtime plugin: %v\n", err)
		}
	}()
	cfg.RuntimeUnderTest = rut

	var sinks []run.Sink
	if out != "" {
		j, err := run.Create(out)
		if err != nil {
			fmt.Fprintf(env.Stderr, "replaycheck run: --out: %v\n", err)
			return ExitUsage
		}
		defer j.Close()
		sinks = append(sinks, j)
	}
	run.ExecutePlan(ctx, cfg, instances, ends.done, append(sinks, ends.progress()...)...)
	return finish(env, f, out, ends)
}

// resumeProbes is run --resume DIR: the settings are the journal's, so only the output flags
// (--format, --color, -v, --table) may come with it.
func resumeProbes(ctx context.Context, env Env, f *runFlags, dir string, args []string) int {
	var extra []string
	f.fs.Visit(func(fl *flag.Flag) {
		if fl.Name != "resume" && fl.Name != "format" && fl.Name != "color" && fl.Name != "v" && fl.Name != "table" {
			extra = append(extra, "--"+fl.Name)
		}
	})
	if len(extra) > 0 || len(args) > 0 {
		fmt.Fprintf(env.Stderr, "replaycheck run: --resume takes the run's settings and probe paths from %s; leave out %s\n",
			filepath.Join(dir, run.JournalFile), strings.Join(append(extra, args...), " "))
		return ExitUsage
	}
	if err := f.checkFormat(); err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck run: %v\n", err)
		return ExitUsage
	}
	j, err := run.ReadJournal(dir)
	if err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck run: --resume: %v\n", err)
		return ExitUsage
	}
	cfg := j.Config()
	instances, ok := selectInstances(env, "run", cfg, cfg.Check(), cfg.Paths)
	if !ok {
		return ExitUsage
	}
	ends := newEnds(env, len(instances))
	if err := j.Resume(ctx, f.cfg.Version, instances, ends.done, ends.progress()...); err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck run: --resume: %v\n", err)
		return ExitUsage
	}
	return finish(env, f, dir, ends)
}

// ends gathers how the runs of an invocation ended, as run.ExecutePlan reports them: their
// reports, and the exit status they add up to.
type ends struct {
	env      Env
	selected int
	bar      *progress // nil when stderr is not a terminal
	runs     []*reports.Report
	code     int
	// leftInCall: the run was abandoned with its instance inside a call (run.ErrAbandonedInCall),
	// which keeps the device and the runtime plugin.
	leftInCall bool
}

func newEnds(env Env, selected int) *ends {
	// On a terminal a progress line shows the run going; in a log or a pipe nothing is added.
	return &ends{env: env, selected: selected, bar: newProgress(env.Stderr)}
}

// progress is the progress line as a sink, when there is one.
func (e *ends) progress() []run.Sink {
	if e.bar == nil {
		return nil
	}
	return []run.Sink{e.bar}
}

// done takes one run's end: a run that ran nothing is a setup error (exit 2, unless one already
// failed); otherwise finished says how it ended.
func (e *ends) done(rep *reports.Report, err error) {
	e.bar.clear()
	if rep == nil {
		fmt.Fprintf(e.env.Stderr, "replaycheck run: %v\n", err)
		e.code = max(e.code, ExitUsage)
		return
	}
	e.leftInCall = e.leftInCall || errors.Is(err, run.ErrAbandonedInCall)
	e.runs = append(e.runs, rep)
	e.code = max(e.code, finished(e.env, rep, err))
}

// finished says how one platform run ended: ExitFail for a failed verdict, instances not run
// (an interrupt; notRun says how many, once for every run) or an error after the run began (the
// device did not close, a sink failed).
func finished(env Env, rep *reports.Report, err error) int {
	code := ExitOK
	if err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck run: %v\n", err)
		code = ExitFail
	}
	if len(rep.NotRun) > 0 || rep.Summary.Failed() {
		code = ExitFail
	}
	return code
}

// notRun says how many of the selected instances of every run did not run, and of which runs
// when there are several.
func (e *ends) notRun() {
	n, per := 0, []string{}
	for _, r := range e.runs {
		n += len(r.NotRun)
		if len(r.NotRun) > 0 {
			per = append(per, fmt.Sprintf("%s: %d", reports.RunName(r), len(r.NotRun)))
		}
	}
	if n == 0 {
		return
	}
	which := ""
	if len(e.runs) > 1 {
		which = " (" + strings.Join(per, ", ") + ")"
	}
	fmt.Fprintf(e.env.Stderr, "replaycheck run: interrupted: %d of %s not run%s\n", n, plural.Count(e.selected*len(e.runs), "instance"), which)
}

// finish writes an output directory's final files (when out is set) and the reports to stdout,
// and says where the files are. A report that cannot be written is an output error (ExitUsage),
// not a verdict: every other file is still written, and each failure named.
func finish(env Env, f *runFlags, out string, e *ends) int {
	code := e.code
	e.notRun()
	if out != "" && len(e.runs) > 0 {
		written, err := run.WriteReportFiles(out, e.runs...)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintf(env.Stderr, "replaycheck run: %s\n", line)
			}
			code = max(code, ExitUsage)
		}
		if len(written) > 0 {
			fmt.Fprintf(env.Stderr, "replaycheck run: wrote %s and %s in %s\n", run.JournalFile, strings.Join(written, ", "), out)
		}
	}
	if len(e.runs) == 0 {
		return code
	}
	if err := writeRuns(env, f, e.runs); err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck run: writing the report: %v\n", err)
		return max(code, ExitUsage)
	}
	return code
}

// writeRuns writes the reports: with --table only the enforcement table of every run, followed in
// text by the instances whose verdict failed (so a failing exit status says why); as JSON one
// document whatever the selection (reports.Document); as JUnit one document of a testsuite per
// run; as Markdown one summary of every run; otherwise each run's report, the enforcement table
// as its last section (one table over all runs).
func writeRuns(env Env, f *runFlags, runs []*reports.Report) error {
	if f.table {
		table := reports.EnforcementTable(runs...)
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
	case "html":
		return reports.WriteHTML(env.Stdout, runs...)
	case "markdown":
		return reports.WriteMarkdown(env.Stdout, runs...)
	}
	return reports.WriteTexts(env.Stdout, reports.TextOptions{Color: f.color, Verbose: f.verbose}, runs...)
}
