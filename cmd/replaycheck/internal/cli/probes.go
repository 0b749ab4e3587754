package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/run"
)

// defaultPaths is where the probe catalog lives in the repository.
var defaultPaths = run.DefaultPaths

// loaded is what a command works on once its probe files loaded without a problem.
type loaded struct {
	sets   []*probes.Set
	probes []*probes.Probe
}

// load reads the probe files named by args (defaultPaths when none). On any problem it prints every
// diagnostic to stderr, one per line, and returns false: a command never works on part of its input.
func load(env Env, args []string) (loaded, bool) {
	if len(args) == 0 {
		args = defaultPaths
	}
	sets, err := probes.Load(probes.DefaultLimits(), args...)
	if err != nil {
		var diags probes.Diagnostics
		if !errors.As(err, &diags) {
			fmt.Fprintf(env.Stderr, "replaycheck: loading probes: %v\n", err)
			return loaded{}, false
		}
		for _, d := range diags {
			fmt.Fprintln(env.Stderr, d.Error())
		}
		return loaded{}, false
	}
	var l loaded
	l.sets = sets
	for _, s := range sets {
		l.probes = append(l.probes, s.Probes...)
	}
	return l, true
}

// selectInstances is the preamble of every command that runs or lists instances: the selection
// flags are checked first (nothing is loaded when they are wrong), then the probe files loaded
// (every problem printed), then the instances selected (run.Select). It prints what went wrong as
// "replaycheck CMD: ..." and returns false when the command must exit with ExitUsage.
func selectInstances(env Env, cmd string, cfg run.Config, flagErr error, args []string) ([]probes.Instance, bool) {
	if flagErr != nil {
		fmt.Fprintf(env.Stderr, "replaycheck %s: %v\n", cmd, flagErr)
		return nil, false
	}
	l, ok := load(env, args)
	if !ok {
		return nil, false
	}
	instances, err := run.Select(l.probes, cfg)
	if err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck %s: %v\n", cmd, err)
		return nil, false
	}
	return instances, true
}

// probeIDs is the repeatable --probe flag: exact probe ids, comma-separated or given again.
type probeIDs struct{ ids *[]string }

func (p probeIDs) String() string {
	if p.ids == nil {
		return ""
	}
	return strings.Join(*p.ids, ",")
}

func (p probeIDs) Set(v string) error {
	for _, id := range strings.Split(v, ",") {
		if id = strings.TrimSpace(id); id != "" {
			*p.ids = append(*p.ids, id)
		}
	}
	return nil
}

// declareSelection declares the flags that select instances on fs, bound to cfg (whose values,
// run.Defaults' with the environment's, are the flags' defaults): capture modes, guard settings,
// probe ids, an id pattern and a shard; guard settings too when guards is set.
func declareSelection(fs *flag.FlagSet, cfg *run.Config, guards bool) {
	fs.StringVar(&cfg.Modes, "modes", cfg.Modes, "comma-separated capture modes to run, a subset of global,thread-local,relaxed (default: each probe's own; env "+run.EnvModes+")")
	if guards {
		fs.StringVar(&cfg.Guards, "guards", cfg.Guards, "guard settings to run: off (program mode), on (kernel mode) or both (env "+run.EnvGuards+")")
	}
	fs.StringVar(&cfg.Run, "run", cfg.Run, "run only instances whose id (set/name@mode/guards-on|off) matches this regular expression")
	fs.Var(probeIDs{&cfg.Probes}, "probe", "run only the probes with these exact ids (set/name), comma-separated or repeated")
	fs.Var(&cfg.Shard, "shard", "run only shard K of N (K/N, 1-based): the instances whose id hashes (FNV-1a) to K-1 modulo N; the N shards split the selection (env "+run.EnvShard+")")
}

var listCommand = &command{
	name:     "list",
	summary:  "list the instances probe files expand to",
	argsHelp: "[PATH...]",
	detail: `List every instance (probe x capture mode x guard setting) the probe files expand to, one per
line: its id, hazard and expected outcome ("baseline" when the probe leaves it to the platform
baseline), followed by the outcome expected on a platform family where expect.platforms (or its
modes entry for the instance's mode) makes it differ ("expect exact, cuda: rejected"). Problems in the files are printed as in validate and exit
with status 2.`,
	flags: func(fs *flag.FlagSet, env Env) func(context.Context, []string) int {
		cfg := run.Defaults(env.getenv)
		declareSelection(fs, &cfg, true)
		return func(_ context.Context, args []string) int {
			fs.Visit(func(f *flag.Flag) { cfg.Set(f.Name) }) // a flag's bad value is the flag's
			// Only the selection matters here: a malformed REPLAYCHECK_REPLAYS does not stop a listing.
			_, err := cfg.Matrix()
			instances, ok := selectInstances(env, "list", cfg, err, args)
			if !ok {
				return ExitUsage
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
			for _, in := range instances {
				fmt.Fprintf(tw, "%s\t%s\texpect %s\n", in.ID(), in.Probe.Hazard, listedExpectation(in))
			}
			if err := tw.Flush(); err != nil {
				fmt.Fprintf(env.Stderr, "replaycheck list: writing: %v\n", err)
				return ExitUsage
			}
			return ExitOK
		}
	},
}

// listedExpectation is what list prints of an instance's expectation: its outcome, "baseline"
// when the probe leaves it to the platform baseline, then each platform family whose
// expect.platforms entry (with its modes entry for the instance's mode) expects another outcome.
func listedExpectation(in probes.Instance) string {
	text := func(o probes.Outcome) string {
		if o == "" {
			return "baseline"
		}
		return string(o)
	}
	base := in.Expected()
	out := text(base)
	for _, family := range probes.PlatformFamilies() {
		if o := in.ExpectedIn(family); o != base {
			out += ", " + family + ": " + text(o)
		}
	}
	return out
}

var validateCommand = &command{
	name:     "validate",
	summary:  "check probe files; print every problem as file:line:col: rule: message",
	argsHelp: "[PATH...]",
	detail: `Load the probe files with every static check of the probe language and print each problem as
file:line:col: rule: message, all of them, then exit with status 2. Without a problem, print
"ok: N probe files, M probes, K instances" and exit 0.`,
	flags: func(fs *flag.FlagSet, env Env) func(context.Context, []string) int {
		return func(_ context.Context, args []string) int {
			l, ok := load(env, args)
			if !ok {
				return ExitUsage
			}
			n := len(probes.Instances(l.probes, probes.Matrix{}))
			if _, err := fmt.Fprintf(env.Stdout, "ok: %s, %s, %s\n",
				plural.Count(len(l.sets), "probe file"), plural.Count(len(l.probes), "probe"), plural.Count(n, "instance")); err != nil {
				// The verdict is the line: a caller that cannot read it must not see success.
				fmt.Fprintf(env.Stderr, "replaycheck validate: writing: %v\n", err)
				return ExitUsage
			}
			return ExitOK
		}
	},
}
