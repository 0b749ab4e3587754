package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/run"
	"github.com/replaycheck/replaycheck/run/measure"
)

var measureCommand = &command{
	name:     "measure",
	summary:  "run the measurement probes and compare the device with its profile's rules",
	argsHelp: "[DIR]",
	detail: `Settle a profile's unmeasured rules on a device (docs/platforms.md, "Settling verify rules"). DIR
(default specs/measure) holds rules.yaml, which says which probe step decides which rule of the
cann or cuda profile, and the probes in DIR/probes. measure opens the backend, takes the
measurements of the device's platform family, runs their probes unguarded and prints a table: each
rule, the instance and step read, what the profile says (allowed, or a code and whether the capture
is invalidated), what the device did, and whether they agree; then what each disagreement means,
the rules no probe can decide yet, and any verify rule of the profile no measurement names.
Exit 1 when a row disagrees or is inconclusive (the instance ended in error or never made the
call), or a verify rule has no measurement; 2 for a usage, table, probe or setup error.`,
	flags: func(fs *flag.FlagSet, env Env) func(context.Context, []string) int {
		cfg := run.Defaults(env.getenv)
		cfg.Version = version()
		fs.StringVar(&cfg.Backend, "backend", cfg.Backend, "backend to measure: sim, or acl or cuda in a cgo build with their driver library (env "+run.EnvBackend+")")
		fs.StringVar(&cfg.Profile, "profile", cfg.Profile, "the simulator's profile, cann or cuda (--backend sim; env "+run.EnvProfile+")")
		fs.Var(run.ReplaysFlag(&cfg), "replays", "the `number` of replay rounds of every instance, overriding the probes' own (0: the probes'; env "+run.EnvReplays+")")
		fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "time limit of one instance")
		fs.BoolVar(&cfg.Isolate, "isolate", cfg.Isolate, "run each instance in a child process, so a crash in the driver ends that instance (inconclusive) and the run goes on (env "+run.EnvIsolate+")")
		against := fs.String("against", "", "a profile `file` to compare with instead of the embedded profile of the device's family (a corrected rule before it is committed)")
		format := fs.String("format", "text", "text or json")
		return func(ctx context.Context, args []string) int {
			fs.Visit(func(f *flag.Flag) { cfg.Set(f.Name) })
			cfg = measure.PlatformOnly(cfg)
			if err := cfg.Check(); err != nil {
				fmt.Fprintf(env.Stderr, "replaycheck measure: %v\n", err)
				return ExitUsage
			}
			if *format != "text" && *format != "json" {
				fmt.Fprintf(env.Stderr, "replaycheck measure: --format: %q is not text or json\n", *format)
				return ExitUsage
			}
			if len(args) > 1 {
				fmt.Fprintln(env.Stderr, "replaycheck measure: one directory at most")
				return ExitUsage
			}
			dir := filepath.Join("specs", "measure")
			if len(args) == 1 {
				dir = args[0]
			}
			table, err := measure.LoadTable(filepath.Join(dir, "rules.yaml"))
			if err != nil {
				fmt.Fprintf(env.Stderr, "replaycheck measure: %v\n", err)
				return ExitUsage
			}
			l, ok := load(env, []string{filepath.Join(dir, "probes")})
			if !ok {
				return ExitUsage
			}
			o := measure.Options{Config: cfg, Table: table, Probes: l.probes, AgainstPath: *against}
			if *against != "" {
				data, err := os.ReadFile(*against)
				if err == nil {
					o.Against, err = sim.ParseProfile(data)
				}
				if err != nil {
					fmt.Fprintf(env.Stderr, "replaycheck measure: --against: %v\n", err)
					return ExitUsage
				}
			}
			rep, err := measure.Run(ctx, o)
			if rep == nil {
				fmt.Fprintf(env.Stderr, "replaycheck measure: %v\n", err)
				return ExitUsage
			}
			write := measure.WriteText
			if *format == "json" {
				write = measure.WriteJSON
			}
			if werr := write(env.Stdout, rep); werr != nil {
				fmt.Fprintf(env.Stderr, "replaycheck measure: writing the table: %v\n", werr)
				return ExitUsage
			}
			if err != nil {
				fmt.Fprintf(env.Stderr, "replaycheck measure: %v\n", err)
				return ExitFail
			}
			if rep.Failed() {
				return ExitFail
			}
			return ExitOK
		}
	},
}
