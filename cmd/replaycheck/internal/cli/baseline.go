package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/run"
	"github.com/replaycheck/replaycheck/verdict"
)

var baselineCommand = &command{
	name:     "baseline",
	summary:  "record a platform baseline from a run (write), or compare a run with one (diff)",
	argsHelp: "write|diff [PATH...]",
	detail: `A baseline records what one platform (a device's platform key: sim/cann, acl/cann-9.0-a2a3) did with every unguarded instance:
outcome and, for a rejection, class, code and whether the capture was invalidated.

  write  runs the unguarded instances and writes the baseline to --out (default: stdout). Several
         profiles (--profile cann,cuda) write one file each into the directory --out names, under
         the platform's name (sim-cann.yaml, sim-cuda.yaml), as specs/baselines/ holds them.
  diff   runs them and compares with the baseline (--baseline; auto finds
         baselines/<platform key>.yaml beside the probes). Each changed behaviour is printed with the
         probe, the mode, the old and the new behaviour; instances the baseline does not hold are
         listed as uncharacterised. Exit 1 when a behaviour changed or a baseline instance did not
         run, 0 otherwise. A narrowed selection (--probe, --run, --modes, --shard) is compared
         with the baseline's instances it covers only; the others are counted, not listed.`,
	flags: func(fs *flag.FlagSet, env Env) func(context.Context, []string) int {
		var f runFlags
		f.declarePlatform(fs, env, false, "simulator platform profile: cann or cuda, or a comma-separated list for one baseline each (write: --out a directory; env "+run.EnvProfile+")")
		fs.Var(refusedFlag{why: "a baseline records the platform alone, so only unguarded instances run (leave --guards out)", takes: "off"}, "guards", "")
		fs.Var(refusedFlag{why: "a baseline records the platform alone, never a runtime under test (leave --runtime out; use run --runtime)"}, "runtime", "")
		fs.Var(refusedFlag{why: "baseline prints text (the baseline itself is YAML); for a JSON report use run --format json", takes: "text"}, "format", "")
		var out string
		fs.StringVar(&out, "out", "", "write: the file to write the baseline to, or a directory (an existing one, or a path ending in /) to write it there under the platform's name, e.g. baselines/acl-cann-9.0-a2a3.yaml (default: stdout)")
		return func(ctx context.Context, args []string) int {
			if len(args) == 0 || (args[0] != "write" && args[0] != "diff") {
				fmt.Fprintf(env.Stderr, "replaycheck baseline: want write or diff first%s\n", verbTypo(args, "write", "diff"))
				return ExitUsage
			}
			verb, paths := args[0], args[1:]
			// A baseline is the platform's alone: guards and a runtime under test are the runtime's,
			// so the environment's REPLAYCHECK_GUARDS and REPLAYCHECK_RUNTIME, which name run's, do
			// not apply (baseline has neither flag).
			f.cfg.Guards, f.cfg.Runtime = "off", ""
			profiles := f.cfg.Profiles()
			switch {
			case len(profiles) == 0:
				fmt.Fprintln(env.Stderr, "replaycheck baseline: --profile names no profile")
				return ExitUsage
			case len(profiles) > 1 && verb == "write" && !isDir(out):
				// One file per platform: stdout or one file would hold several baselines.
				fmt.Fprintf(env.Stderr, "replaycheck baseline: --profile %s writes %d baselines, one file each: give --out a directory (e.g. --out specs/baselines/)\n",
					strings.Join(profiles, ","), len(profiles))
				return ExitUsage
			case len(profiles) > 1 && verb == "diff" && f.cfg.Baseline != "auto" && f.cfg.Baseline != "":
				fmt.Fprintf(env.Stderr, "replaycheck baseline: --baseline %s names one file, but %d profiles run: leave --baseline out\n", f.cfg.Baseline, len(profiles))
				return ExitUsage
			}
			err := f.check()
			instances, ok := selectInstances(env, "baseline", f.cfg, err, paths)
			if !ok {
				return ExitUsage
			}
			// Every profile is checked before any runs: a typo in the second must not cost the first.
			for _, profile := range profiles {
				c := f.cfg
				c.Profile = profile
				if err := c.CheckBackend(); err != nil {
					fmt.Fprintf(env.Stderr, "replaycheck baseline: %v\n", err)
					return ExitUsage
				}
			}
			code := ExitOK
			for _, profile := range profiles {
				cfg := f.cfg
				cfg.Profile, cfg.Paths = profile, paths
				code = max(code, baselineOne(ctx, env, verb, out, cfg, instances))
				if code == ExitUsage {
					break
				}
			}
			return code
		}
	},
}

// isDir reports whether --out names a directory: one that exists, or a path ending in /.
func isDir(out string) bool {
	if strings.HasSuffix(out, "/") {
		return true
	}
	st, err := os.Stat(out)
	return err == nil && st.IsDir()
}

// baselineOne writes or diffs the baseline of cfg's one profile.
func baselineOne(ctx context.Context, env Env, verb, out string, cfg run.Config, instances []probes.Instance) int {
	var base *verdict.Baseline
	if verb == "diff" {
		// The baseline is found before anything runs: a missing one must not cost a run.
		p, err := run.Open(ctx, cfg)
		if err != nil {
			fmt.Fprintf(env.Stderr, "replaycheck baseline: %v\n", err)
			return ExitUsage
		}
		key := p.Key
		if err := p.Close(); err != nil {
			fmt.Fprintf(env.Stderr, "replaycheck baseline: closing device: %v\n", err)
			return ExitFail
		}
		if base, err = cfg.LocateBaseline(key); err == nil && base == nil {
			err = fmt.Errorf("no baseline for %s (looked for baselines/%s beside the probes; name one with --baseline)", key, verdict.BaselineFile(key))
		}
		if err != nil {
			fmt.Fprintf(env.Stderr, "replaycheck baseline: %v\n", err)
			return ExitUsage
		}
	}
	cfg.Baseline = "none" // the run records outcomes; diff compares them itself
	rep, err := run.Execute(ctx, cfg, instances)
	if rep == nil {
		fmt.Fprintf(env.Stderr, "replaycheck baseline: %v\n", err)
		return ExitUsage
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck baseline: %v\n", err)
		return ExitFail
	}
	if len(rep.NotRun) > 0 {
		fmt.Fprintf(env.Stderr, "replaycheck baseline: interrupted: %d of %s not run\n", len(rep.NotRun), plural.Count(len(instances), "instance"))
		return ExitFail
	}
	results := make([]*capture.Result, len(rep.Results))
	for i := range rep.Results {
		results[i] = &rep.Results[i].Result
	}
	if broken := brokenResults(results); len(broken) > 0 {
		for _, b := range broken {
			fmt.Fprintf(env.Stderr, "replaycheck baseline: %s ended in error: %s\n", b.ID, b.Reason)
		}
		return ExitFail
	}
	if verb == "write" {
		return writeBaseline(env, out, verdict.NewBaseline(rep.Platform, rep.Device, results))
	}
	base, outside := base.Within(cfg.Covers)
	return diffBaseline(env, base, results, outside)
}

// brokenResults are the results that say nothing about the platform because the run broke.
func brokenResults(results []*capture.Result) []*capture.Result {
	var out []*capture.Result
	for _, r := range results {
		if r.Outcome == probes.Errored {
			out = append(out, r)
		}
	}
	return out
}

func writeBaseline(env Env, out string, b *verdict.Baseline) int {
	w := env.Stdout
	if out != "" {
		path := out
		if isDir(out) {
			// A directory: the file is named after the platform, so a device host needs not know it.
			path = filepath.Join(out, verdict.BaselineFile(b.Platform))
			out = path
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fmt.Fprintf(env.Stderr, "replaycheck baseline: %v\n", err)
			return ExitUsage
		}
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(env.Stderr, "replaycheck baseline: %v\n", err)
			return ExitUsage
		}
		err = b.WriteYAML(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			fmt.Fprintf(env.Stderr, "replaycheck baseline: writing %s: %v\n", out, err)
			return ExitUsage
		}
	} else if err := b.WriteYAML(w); err != nil {
		fmt.Fprintf(env.Stderr, "replaycheck baseline: writing: %v\n", err)
		return ExitUsage
	}
	if out != "" {
		fmt.Fprintf(env.Stdout, "wrote %s: %s of %s\n", out, plural.Count(len(b.Instances), "instance"), b.Platform)
	}
	return ExitOK
}

// diffBaseline prints the drifts of results from b; outside is how many of the baseline's
// instances the run's selection left out (Baseline.Within), said so that a narrowed diff is not
// read as the whole catalog's.
func diffBaseline(env Env, b *verdict.Baseline, results []*capture.Result, outside int) int {
	drifts := b.Diff(results)
	changed, missing, unknown := 0, 0, 0
	var out strings.Builder
	for _, d := range drifts {
		switch {
		case d.Changed():
			changed++
			fmt.Fprintf(&out, "changed          %s\n", d)
		case d.Now == nil:
			missing++
			fmt.Fprintf(&out, "not run          %s\n", d)
		default:
			unknown++
			fmt.Fprintf(&out, "uncharacterised  %s\n", d)
		}
	}
	narrowed := ""
	if outside > 0 {
		narrowed = fmt.Sprintf(" (%s outside the selection not compared)", plural.Count(outside, "baseline instance"))
	}
	fmt.Fprintf(&out, "baseline %s (%s): %d changed, %d not run, %d uncharacterised, %d unchanged%s\n",
		b.Platform, b.File, changed, missing, unknown, b.Unchanged(results), narrowed)
	if _, err := io.WriteString(env.Stdout, out.String()); err != nil {
		// The diff is the answer: a caller that cannot read it must not see it pass.
		fmt.Fprintf(env.Stderr, "replaycheck baseline: writing: %v\n", err)
		return ExitUsage
	}
	if changed > 0 || missing > 0 {
		return ExitFail
	}
	return ExitOK
}
