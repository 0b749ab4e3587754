package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/replaycheck/replaycheck/probes"
)

// defaultPaths is where the probe catalog lives in the repository.
var defaultPaths = []string{"specs"}

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
// (every problem printed), then the instances selected. It prints what went wrong as
// "replaycheck CMD: ..." and returns false when the command must exit with ExitUsage.
func selectInstances(env Env, cmd string, sel selection, flagErr error, args []string) ([]probes.Instance, bool) {
	if flagErr != nil {
		fmt.Fprintf(env.Stderr, "replaycheck %s: %v\n", cmd, flagErr)
		return nil, false
	}
	l, ok := load(env, args)
	if !ok {
		return nil, false
	}
	instances, err := sel.instances(l.probes)
	if err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck %s: %v\n", cmd, err)
		return nil, false
	}
	return instances, true
}

// matrixFlags select instances: capture modes, guard settings, probe ids and an id pattern.
type matrixFlags struct {
	modes  string
	guards string
	run    string
	probe  probeIDs
}

// probeIDs is the repeatable --probe flag: exact probe ids, comma-separated or given again.
type probeIDs []string

func (p *probeIDs) String() string { return strings.Join(*p, ",") }

func (p *probeIDs) Set(v string) error {
	for _, id := range strings.Split(v, ",") {
		if id = strings.TrimSpace(id); id != "" {
			*p = append(*p, id)
		}
	}
	return nil
}

func (m *matrixFlags) declare(fs *flag.FlagSet) {
	fs.StringVar(&m.modes, "modes", "", "comma-separated capture modes to run, a subset of global,thread-local,relaxed (default: each probe's own)")
	fs.StringVar(&m.guards, "guards", "both", "guard settings to run: off (program mode), on (kernel mode) or both")
	fs.StringVar(&m.run, "run", "", "run only instances whose id (set/name@mode/guards-on|off) matches this regular expression")
	fs.Var(&m.probe, "probe", "run only the probes with these exact ids (set/name), comma-separated or repeated")
}

// selection is a parsed matrixFlags.
type selection struct {
	matrix probes.Matrix
	filter *regexp.Regexp // nil: every instance
	ids    []string       // exact probe ids; nil: every probe
	flags  matrixFlags
}

func (m *matrixFlags) parse() (selection, error) {
	sel := selection{ids: m.probe, flags: *m}
	var err error
	if sel.matrix.Modes, err = probes.ParseModes(m.modes); err != nil {
		return selection{}, fmt.Errorf("--modes: %w", err)
	}
	if sel.matrix.Guards, err = probes.ParseGuards(m.guards); err != nil {
		return selection{}, fmt.Errorf("--guards: %w", err)
	}
	if m.run != "" {
		re, err := regexp.Compile(m.run)
		if err != nil {
			return selection{}, fmt.Errorf("--run: %w", err)
		}
		sel.filter = re
	}
	return sel, nil
}

// instances expands the probes through the selection, in the stable order of probes.Instances. A
// --probe id that names no loaded probe, and a selection that leaves nothing to run, are errors:
// a typo must not pass as an empty, successful run.
func (s selection) instances(ps []*probes.Probe) ([]probes.Instance, error) {
	if len(s.ids) > 0 {
		known := make([]string, len(ps))
		for i, p := range ps {
			known[i] = p.ID()
		}
		var picked []*probes.Probe
		for _, id := range s.ids {
			i := slices.Index(known, id)
			if i < 0 {
				return nil, fmt.Errorf("--probe %s: no probe with that id in the probe files%s", id, probes.DidYouMean(id, known))
			}
			picked = append(picked, ps[i])
		}
		ps = picked
	}
	all := probes.Instances(ps, s.matrix)
	out := all
	if s.filter != nil {
		out = nil
		for _, in := range all {
			if s.filter.MatchString(in.ID()) {
				out = append(out, in)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no instance to run: %s", s.describe(len(all)))
	}
	return out, nil
}

// describe says what narrowed the selection to nothing.
func (s selection) describe(matched int) string {
	f := s.flags
	switch {
	case f.run != "" && matched > 0:
		return fmt.Sprintf("--run %q matches none of the %s the other flags select", f.run, plural(matched, "instance"))
	case f.run != "":
		return fmt.Sprintf("--run %q: the other flags already select no instance", f.run)
	case f.modes != "" || f.guards != "both":
		return fmt.Sprintf("no probe runs in --modes %q with --guards %s (a probe's own modes and guards limit what can be selected)", f.modes, f.guards)
	}
	return "the probe files hold no probe"
}

var listCommand = &command{
	name:     "list",
	summary:  "list the instances probe files expand to",
	argsHelp: "[PATH...]",
	detail: `List every instance (probe x capture mode x guard setting) the probe files expand to, one per
line: its id, hazard and expected outcome ("baseline" when the probe leaves it to the platform
baseline). Problems in the files are printed as in validate and exit with status 2.`,
	flags: func(fs *flag.FlagSet, env Env) func(context.Context, []string) int {
		var mf matrixFlags
		mf.declare(fs)
		return func(_ context.Context, args []string) int {
			sel, err := mf.parse()
			instances, ok := selectInstances(env, "list", sel, err, args)
			if !ok {
				return ExitUsage
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
			for _, in := range instances {
				expect := string(in.Expected())
				if expect == "" {
					expect = "baseline"
				}
				fmt.Fprintf(tw, "%s\t%s\texpect %s\n", in.ID(), in.Probe.Hazard, expect)
			}
			if err := tw.Flush(); err != nil {
				fmt.Fprintf(env.Stderr, "replaycheck list: writing: %v\n", err)
				return ExitUsage
			}
			return ExitOK
		}
	},
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
			fmt.Fprintf(env.Stdout, "ok: %s, %s, %s\n",
				plural(len(l.sets), "probe file"), plural(len(l.probes), "probe"), plural(n, "instance"))
			return ExitOK
		}
	},
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
