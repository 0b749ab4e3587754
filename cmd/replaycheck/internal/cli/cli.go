// Package cli is the replaycheck command line: argument parsing, loading probe files (printing
// every problem), signals and writing reports. It contains no engine or run logic: probes.Load
// validates, package run selects, opens the device, runs and judges (run.Execute, the same path
// the Ginkgo suite takes per instance), journals and resumes; reports writes.
//
// Main is what the binary runs; the tests run the binary's own code in child processes
// (testscript), so exit codes and crashes are real.
//
// Exit status:
//
//	0  every verdict is pass, skip or uncharacterised (and for list, validate, version, help: success)
//	1  a verdict failed, an instance did not run, or the device did not close cleanly
//	130, 143  the command got SIGINT or SIGTERM (128 plus the signal's number): a run stopped after
//	   the instance in flight (a second signal abandons that one) and its report lists the
//	   instances not run
//	2  usage, input, setup or output error: bad flags or environment, a probe file with problems
//	   (every diagnostic is printed to stderr as file:line:col: rule: message), a backend or device
//	   that could not be opened (nothing was judged); or a report that could not be written to
//	   stdout or to a file of run --out (every other one is written). The Go runtime also exits 2
//	   when the process crashes (a SIGSEGV inside a driver library or a runtime plugin, without
//	   --isolate), after printing the signal and the stacks to stderr; and `run` (Command) exits 2
//	   when its supervised child ended before the run finished (a plugin's _exit(0)), or 128
//	   plus the signal that killed the child.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/run"
)

// Exit statuses.
const (
	ExitOK    = 0
	ExitFail  = 1
	ExitUsage = 2
)

// Version is the binary's version; release builds set it with -ldflags "-X ...cli.Version=v1.2.3".
var Version = "dev"

// Env is where one invocation writes.
type Env struct {
	Stdout, Stderr io.Writer // both required
}

// getenv reads the process's environment.
func (Env) getenv(key string) string { return os.Getenv(key) }

// Main runs the command line args (without the program name) in the process's own environment and
// returns the exit status. SIGINT or SIGTERM stops a run after the instance in flight; a second
// signal abandons that instance at once (run.AbandonWith: the engine stops between device calls,
// and a call it is inside is left behind with its device); the report of what ran is still
// written, listing what did not. A command that got a signal exits 128 plus its number: 130 for
// SIGINT, 143 for SIGTERM.
func Main(args []string, stdout, stderr io.Writer) int {
	if isWorker() {
		return worker(stderr)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	stop, stopRun := context.WithCancel(context.Background())
	abandon, abandonRun := context.WithCancel(context.Background())
	defer stopRun()
	defer abandonRun()
	var first atomic.Value // the first signal
	done := make(chan struct{})
	defer close(done)
	go func() {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-done:
			return
		}
		first.Store(sig)
		fmt.Fprintf(stderr, "replaycheck: %v: stopping after the instance in flight (again to abandon it)\n", sig)
		stopRun()
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "replaycheck: %v: abandoning the instance in flight\n", sig)
			abandonRun()
		case <-done:
		}
	}()
	code := dispatch(run.AbandonWith(stop, abandon), args, Env{Stdout: stdout, Stderr: stderr})
	if sig, ok := first.Load().(os.Signal); ok {
		return exitSignal(sig)
	}
	return code
}

// exitSignal is the status of a command ended by sig, as a shell reports it: 128 plus its number.
func exitSignal(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + int(syscall.SIGINT)
}

// dispatch runs the command line args and returns the exit status.
func dispatch(ctx context.Context, args []string, env Env) int {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, usage)
		return ExitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		return help(rest, env)
	}
	cmd, ok := lookup(name)
	if !ok {
		unknownCommand(env, "replaycheck", name)
		return ExitUsage
	}
	return cmd.run(ctx, rest, env)
}

// unknownCommand says that name is no command, as who: with the command it is a typo of, as the
// probe loader suggests a key (probes.Closest), or else with the usage.
func unknownCommand(env Env, who, name string) {
	names := []string{"help"}
	for _, c := range commands {
		names = append(names, c.name)
	}
	if near := probes.Closest(name, names); near != "" {
		fmt.Fprintf(env.Stderr, "%s: unknown command %s (did you mean %s?)\nRun 'replaycheck help' for the commands.\n", who, name, near)
		return
	}
	fmt.Fprintf(env.Stderr, "%s: unknown command %s\n\n%s", who, name, usage)
}

type command struct {
	name     string
	summary  string // one line in the command list
	argsHelp string // the positional arguments in the usage line
	detail   string // the paragraph under the usage line
	// program: the positional arguments are a program's command line, so flags end at the first
	// of them (the program's own flags are its own).
	program bool
	// flags declares the command's flags on fs and returns the function that runs it with the
	// positional arguments once the flags are parsed.
	flags func(fs *flag.FlagSet, env Env) func(ctx context.Context, args []string) int
}

var commands = []*command{runCommand, listCommand, validateCommand, baselineCommand, measureCommand, reportCommand, devicesCommand, watchCommand, versionCommand}

func lookup(name string) (*command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return nil, false
}

var usage = func() string {
	var b strings.Builder
	b.WriteString(`replaycheck verifies graph capture and replay on accelerator runtimes and finds data that
replays silently wrong.

Usage:
  replaycheck <command> [flags] [arguments]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(&b, "  %-9s %s\n", "help", "print help for a command")
	b.WriteString(`
Probe paths are files or directories of probe YAML and default to "specs".
Run "replaycheck help <command>" for a command's flags.

Exit status: 0 every verdict passes, skips or is uncharacterised; 1 a verdict failed or an
instance did not run; 2 usage, input or setup error (nothing was judged), or a report that could
not be written; 130 or 143 after SIGINT or SIGTERM (the report lists the instances not run).
`)
	return b.String()
}()

func help(args []string, env Env) int {
	if len(args) == 0 {
		fmt.Fprint(env.Stdout, usage)
		return ExitOK
	}
	cmd, ok := lookup(args[0])
	if !ok {
		unknownCommand(env, "replaycheck help", args[0])
		return ExitUsage
	}
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	cmd.flags(fs, env)
	printCommandUsage(env.Stdout, cmd, fs)
	return ExitOK
}

func printCommandUsage(w io.Writer, cmd *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: replaycheck %s", cmd.name)
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprint(w, " [flags]")
	}
	if cmd.argsHelp != "" {
		fmt.Fprint(w, " "+cmd.argsHelp)
	}
	fmt.Fprintf(w, "\n\n%s\n", cmd.detail)
	if hasFlags {
		// The flags the command refuses are left out: they are there for their message alone.
		shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
		fs.VisitAll(func(f *flag.Flag) {
			if _, ok := f.Value.(refusedFlag); !ok {
				shown.Var(f.Value, f.Name, f.Usage)
			}
		})
		fmt.Fprint(w, "\nFlags:\n")
		shown.SetOutput(w)
		shown.PrintDefaults()
	}
}

// refusedFlag is a flag a command does not take though a neighbour does (baseline's --guards,
// run's): giving it is a usage error that says why, not the flag package's "not defined", unless
// it names takes, the value the command always has (baseline --guards off, as before it was
// refused). Help leaves it out.
type refusedFlag struct{ why, takes string }

func (r refusedFlag) String() string { return "" }

func (r refusedFlag) Set(v string) error {
	if r.takes != "" && v == r.takes {
		return nil
	}
	return errors.New(r.why)
}

// run parses the command's flags, which may come before, between or after its positional
// arguments ("--" ends the flags), and runs it.
func (c *command) run(ctx context.Context, args []string, env Env) int {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // its errors are printed below (flagError)
	fs.Usage = func() {}     // usage is printed below, to stdout for -h and to stderr for a mistake
	body := c.flags(fs, env)
	var pos []string
	var err error
	if c.program {
		if err = fs.Parse(args); err == nil {
			pos = fs.Args()
		}
	} else {
		pos, err = parseInterleaved(fs, args)
	}
	if errors.Is(err, flag.ErrHelp) {
		printCommandUsage(env.Stdout, c, fs)
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck %s: %s\nRun 'replaycheck help %s' for usage.\n", c.name, flagError(fs, err), c.name)
		return ExitUsage
	}
	return body(ctx, pos)
}

// flagError words a flag package error: a flag the command does not define as the probe loader
// words an unknown key, "unknown flag --profle (did you mean --profile?)", with the closest flag
// the command defines (probes.Closest); any other as the flag package
// does ("invalid value ... for flag -replays: ..."). A refused flag is suggested too: its own
// message says why the command does not take it.
func flagError(fs *flag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return err.Error()
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	msg := "unknown flag " + dashed(name)
	if near := probes.Closest(name, names); near != "" {
		msg += " (did you mean " + dashed(near) + "?)"
	}
	return msg
}

// verbTypo is ", not X (did you mean V?)" when args's first is a typo of one of a command's verbs,
// or "".
func verbTypo(args []string, verbs ...string) string {
	if len(args) == 0 {
		return ""
	}
	if near := probes.Closest(args[0], verbs); near != "" {
		return fmt.Sprintf(", not %s (did you mean %s?)", args[0], near)
	}
	return ""
}

// dashed is a flag's name as the help writes it: -v, --profile.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// parseInterleaved lets flags follow positional arguments, as in "run probes.yaml --format json";
// the flag package alone stops at the first positional argument.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

var versionCommand = &command{
	name:    "version",
	summary: "print the version",
	detail:  "Print the version of replaycheck, the Go toolchain that built it and the backends built in.",
	flags: func(fs *flag.FlagSet, env Env) func(context.Context, []string) int {
		return func(_ context.Context, args []string) int {
			if len(args) > 0 {
				fmt.Fprintf(env.Stderr, "replaycheck version: takes no arguments, got %q\n", args)
				return ExitUsage
			}
			fmt.Fprintf(env.Stdout, "replaycheck %s %s %s/%s, backends: %s\n", version(), runtime.Version(),
				runtime.GOOS, runtime.GOARCH, strings.Join(backends.Names(), ", "))
			return ExitOK
		}
	},
}

// version is Version, or the module version when the binary was installed with go install.
func version() string {
	if Version != "dev" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return Version
}
