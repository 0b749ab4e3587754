package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/run"
	"github.com/replaycheck/replaycheck/watch"
	"github.com/replaycheck/replaycheck/watch/interpose"
)

var watchCommand = &command{
	name:     "watch",
	summary:  "run an unmodified program and find its stale graph replays",
	argsHelp: "[--] PROGRAM [ARGS...]",
	program:  true,
	detail: `Run PROGRAM with replaycheck's interposer preloaded (LD_PRELOAD, C: no Go runs inside the
program) and report every stale graph replay it sees: a graph launched while memory it captured
was freed or given to something else (stale-replay), a free of memory a live graph names
(free-captured), an allocation or free while a capture is active (alloc-in-capture,
free-in-capture), two graphs sharing private-pool memory in flight at once (shared-concurrent),
and work outside a thread's own capture on memory the capture uses (off-capture-work, a warning).
The program's stdin, stdout, stderr and exit status are its own; its children are watched too.
Each new finding is printed to stderr once, as it happens; at the end the text report goes to
stderr and, with --out DIR, report.json, report.txt, summary.md, junit.xml and report.html to DIR.
--refuse makes a stale launch fail (CUDA_ERROR_INVALID_VALUE, ACL_ERROR_INVALID_PARAM) instead of
reaching the driver, so the wrong bytes never land. --suppress FILE takes Valgrind-style entries
(docs/watch.md). --check-events FILE checks an event stream recorded with --events, with no program.
The interposer is built once with the C compiler ($CC, else cc) into the user cache directory, or
taken from $REPLAYCHECK_WATCH_LIB. Flags come before PROGRAM.
Exit status: the program's own when nothing was found (128 plus the signal when a signal killed it);
--error-exitcode (default 1) when something was found; 2 for usage errors and when the program could
not be watched.`,
	flags: func(fs *flag.FlagSet, env Env) func(context.Context, []string) int {
		var f watchFlags
		fs.StringVar(&f.backend, "backend", "auto", "driver to watch: cuda, acl or auto (both)")
		fs.BoolVar(&f.refuse, "refuse", false, "refuse stale launches: the launch returns an error and never reaches the driver")
		fs.StringVar(&f.out, "out", "", "output directory: report.json, report.txt, summary.md, junit.xml and report.html")
		fs.StringVar(&f.suppress, "suppress", "", "suppression `file` (Valgrind-style entries by kind and stack frames)")
		fs.IntVar(&f.errorExit, "error-exitcode", 1, "exit status when something was found")
		fs.StringVar(&f.events, "events", "", "write the event stream to `file`, to check it again with --check-events")
		fs.StringVar(&f.check, "check-events", "", "check a recorded event stream `file` instead of running a program")
		return func(ctx context.Context, args []string) int { return watchProgram(ctx, env, &f, args) }
	},
}

type watchFlags struct {
	backend, out, suppress, events, check string
	refuse                                bool
	errorExit                             int
}

func watchProgram(ctx context.Context, env Env, f *watchFlags, args []string) int {
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(env.Stderr, "replaycheck watch: "+format+"\n", a...)
		return ExitUsage
	}
	switch {
	case f.check != "" && len(args) > 0:
		return usageErr("--check-events checks a recorded stream: give no PROGRAM (got %q)", args[0])
	case f.check == "" && len(args) == 0:
		return usageErr("no PROGRAM to watch (usage: replaycheck watch [flags] [--] PROGRAM [ARGS...])")
	case f.errorExit < 0 || f.errorExit > 255:
		return usageErr("--error-exitcode: %d is not an exit status (0 to 255)", f.errorExit)
	}
	if !slices.Contains(watch.Backends, f.backend) {
		return usageErr("--backend: %q is not cuda, acl or auto", f.backend)
	}
	var supp *watch.Suppressions
	if f.suppress != "" {
		var err error
		if supp, err = watch.LoadSuppressions(f.suppress); err != nil {
			return usageErr("%v", err)
		}
	}
	if f.out != "" {
		if err := os.MkdirAll(f.out, 0o755); err != nil {
			return usageErr("--out: %v", err)
		}
	}
	rep := reports.New("replaycheck", version(), reports.Options{})
	// A watch report has no device or runtime under test of replaycheck's: the program is both.
	rep.Backend, rep.Platform, rep.Device, rep.Runtime = "watch", "watch/"+f.backend, "the watched program", "the watched program"
	w := &reports.WatchRun{Backend: f.backend, Refuse: f.refuse}
	rep.Watch = w

	var res *watch.Result
	if f.check != "" {
		file, err := os.Open(f.check)
		if err != nil {
			return usageErr("--check-events: %v", err)
		}
		sum, err := watch.CheckEvents(file, f.check, watch.Options{Suppress: supp, Symbolizer: watch.NewSymbolizer()})
		file.Close()
		if err != nil {
			return usageErr("%v", err)
		}
		res = &watch.Result{Summary: sum}
		w.Program = []string{"(recorded) " + f.check}
	} else {
		lib, err := interpose.Cached()
		if err != nil {
			return usageErr("cannot build the interposer: %v\n(set REPLAYCHECK_WATCH_LIB to a prebuilt %s, e.g. from make interposer)", err, interpose.FileName)
		}
		var events io.WriteCloser
		if f.events != "" {
			if events, err = os.Create(f.events); err != nil {
				return usageErr("--events: %v", err)
			}
		}
		cfg := watch.Config{Program: args, Stdin: os.Stdin, Stdout: env.Stdout, Stderr: env.Stderr,
			Backend: f.backend, Refuse: f.refuse, Interposer: lib, Live: env.Stderr, Suppress: supp}
		if events != nil {
			cfg.Events = events
		}
		res, err = watch.Run(ctx, cfg)
		if events != nil {
			if cerr := events.Close(); cerr != nil && err == nil {
				fmt.Fprintf(env.Stderr, "replaycheck watch: --events: %v\n", cerr)
			}
		}
		if err != nil {
			return usageErr("%v", err)
		}
		w.Program = args
		w.ExitCode, w.Signal = res.ExitCode, res.Signal
		rep.Started, rep.Ended = res.Started, res.Ended
	}
	fillWatchReport(rep, res)

	code := ExitOK
	if err := reports.WriteTexts(env.Stderr, reports.TextOptions{}, rep); err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck watch: writing the report: %v\n", err)
		code = ExitUsage
	}
	if f.out != "" {
		written, err := run.WriteReportFiles(f.out, rep)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintf(env.Stderr, "replaycheck watch: %s\n", line)
			}
			code = ExitUsage
		}
		if len(written) > 0 {
			fmt.Fprintf(env.Stderr, "replaycheck watch: wrote %s in %s\n", strings.Join(written, ", "), f.out)
		}
	}
	switch {
	case code != ExitOK:
		return code
	case len(res.Findings) > 0:
		return f.errorExit
	case res.Signal != "":
		return 128 + res.SignalNumber
	}
	return res.ExitCode
}

// fillWatchReport copies what the checker found into the report.
func fillWatchReport(rep *reports.Report, res *watch.Result) {
	rep.Findings = res.Findings
	w := rep.Watch
	w.Notes = res.Notes
	w.Suppressed = res.Suppressed
	w.UnusedSuppressions = res.Unused
	for _, p := range res.Processes {
		w.Processes = append(w.Processes, reports.WatchProcess{PID: p.PID, PPID: p.PPID, Exe: p.Exe})
	}
}
