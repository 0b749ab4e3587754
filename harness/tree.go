package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"

	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/run"
	"github.com/replaycheck/replaycheck/run/proc"
	"github.com/replaycheck/replaycheck/runtime/guard"
	"github.com/replaycheck/replaycheck/verdict"
)

// Labels of an instance: set:, hazard:, mode:, guards:, backend: and the probe's own labels.
func InstanceLabels(in probes.Instance, backend string) ginkgo.Labels {
	l := ginkgo.Label(
		"set:"+in.Probe.Set,
		"hazard:"+string(in.Probe.Hazard),
		"mode:"+in.Mode.String(),
		"guards:"+probes.GuardsName(in.Guarded),
		"backend:"+backend,
	)
	return append(l, in.Probe.Labels...)
}

// suite is one process's view of the catalog: its configuration, the baseline it judges against
// and, once BeforeSuite ran, its device.
type suite struct {
	cfg      *Config
	baseline *verdict.Baseline
	platform *run.Platform // device 0, open from BeforeSuite on
}

// Register builds the spec tree for sets: a container per set, a spec per instance the
// configuration selects (run.Select: matrix, probe ids, --run pattern, shard). It also registers
// the BeforeSuite that opens device 0 of the configured backend (run.Open) and closes it after the
// suite, the central invariant over every result the suite produced, and the report the
// configuration asks for. Every spec runs and judges its instance with run.Instance, as the CLI
// does, against the baseline of the device's platform that the configuration names (auto: the one
// in dir/baselines). Every instance runs through the runtime plugin Config.Runtime names, loaded
// here, or the built-in guards. Call it from TestX before RunSpecs; it fails at once on a bad
// configuration, a runtime plugin that cannot be loaded or a backend that cannot be opened.
func Register(cfg *Config, sets []*probes.Set, dir string) error {
	if suiteFinished != nil {
		suiteFinished(proc.Started) // from here a run is under way: Supervise
	}
	if err := cfg.Check(); err != nil {
		return err
	}
	off, _ := cfg.Disabled() // checked above
	cfg.Guard = guard.Options{Disabled: off}
	cfg.Paths = []string{dir}
	if err := cfg.CheckBackend(); err != nil {
		return err
	}
	var all []*probes.Probe
	for _, set := range sets {
		all = append(all, set.Probes...)
	}
	selected, err := run.Select(all, cfg.Config)
	// A mistyped -replaycheck.run or probe filter must not pass as an empty, green suite, as it is
	// an error for the CLI; a shard of a small selection may be empty on purpose.
	if err != nil && (!errors.Is(err, run.ErrNothingSelected) || cfg.Shard.N <= 1) {
		return err
	}
	if err := cfg.CheckFaults(selected); err != nil {
		return err // a -replaycheck.fault at the call of a probe's own fault would never fire
	}
	rut, release, err := run.LoadRuntime(cfg.Runtime)
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	cfg.RuntimeUnderTest = rut
	s := &suite{cfg: cfg}
	ginkgo.BeforeSuite(func(ctx ginkgo.SpecContext) {
		ginkgo.DeferCleanup(release)
		p, err := run.Open(ctx, cfg.Config)
		if err != nil {
			ginkgo.Fail(err.Error())
		}
		ginkgo.DeferCleanup(p.Close)
		s.platform = p
		if s.baseline, err = cfg.LocateBaseline(p.Key); err != nil {
			ginkgo.Fail(err.Error())
		}
	})
	for _, set := range sets {
		var instances []probes.Instance
		for _, in := range selected {
			if slices.Contains(set.Probes, in.Probe) {
				instances = append(instances, in)
			}
		}
		ginkgo.Describe("set "+set.Name, ginkgo.Label("set:"+set.Name), func() {
			for _, in := range instances {
				ginkgo.It(specName(in), InstanceLabels(in, cfg.Backend), func(ctx ginkgo.SpecContext) {
					s.check(ctx, in)
				})
			}
		})
	}
	ginkgo.ReportAfterSuite(InvariantName, func(r ginkgo.Report) {
		entries, err := entriesOf(r)
		if err != nil {
			ginkgo.Fail(err.Error())
		}
		if broken := centralInvariant(entries); broken != "" {
			ginkgo.Fail(broken)
		}
	})
	if cfg.Report != "" {
		ginkgo.ReportAfterSuite("replaycheck report", func(r ginkgo.Report) {
			if err := s.writeReport(r); err != nil {
				ginkgo.Fail(err.Error())
			}
		})
	}
	return nil
}

// resultEntry names the report entry every instance spec attaches its reports.Entry to.
const resultEntry = "replaycheck result"

// entriesOf collects the entries every process attached to its specs, in instance id order.
func entriesOf(r ginkgo.Report) ([]reports.Entry, error) {
	var out []reports.Entry
	for _, spec := range r.SpecReports {
		for _, re := range spec.ReportEntries {
			if re.Name != resultEntry {
				continue
			}
			// In-process the raw value is there; from another parallel process only its JSON is.
			e, ok := re.GetRawValue().(reports.Entry)
			if !ok {
				if err := json.Unmarshal([]byte(re.Value.AsJSON), &e); err != nil {
					return nil, fmt.Errorf("report entry of %q: %w", spec.FullText(), err)
				}
			}
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b reports.Entry) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// writeReport writes one replaycheck report of every process's entries, in the format its file
// name says: .json the JSON document, .xml JUnit, .md the Markdown summary, anything else text
// with the enforcement table.
func (s *suite) writeReport(r ginkgo.Report) error {
	entries, err := entriesOf(r)
	if err != nil {
		return err
	}
	p := s.platform
	if p == nil { // this process never opened its device
		p = &run.Platform{Name: s.cfg.Backend, Profile: backends.ProfileOf(s.cfg.Backend, s.cfg.Profile)}
	}
	rep := run.NewReport(s.cfg.Config, p, s.baseline)
	for _, e := range entries {
		rep.AddEntry(e)
	}
	if s.cfg.ReportDir() {
		return run.WriteReport(s.cfg.Report, rep)
	}
	rep.Enforcement = reports.EnforcementTable(rep)
	f, err := os.Create(s.cfg.Report)
	if err != nil {
		return err
	}
	switch filepath.Ext(s.cfg.Report) {
	case ".json":
		err = reports.WriteJSON(f, rep)
	case ".xml":
		err = reports.WriteJUnit(f, rep)
	case ".md":
		err = reports.WriteMarkdown(f, rep)
	case ".html":
		err = reports.WriteHTML(f, rep)
	default:
		err = reports.WriteText(f, rep, reports.TextOptions{})
	}
	return errors.Join(err, f.Close())
}

// InvariantName names the suite's central invariant where Ginkgo reports it.
const InvariantName = "central invariant: no instance with guards on ends corrupted"

// centralInvariant judges the suite's central invariant from the results its specs produced, in
// every parallel process: no guarded instance ended corrupted. It returns what broke it, "" when it
// held. It runs nothing itself, so guarded instances cost their device time once; it holds over
// the instances the run selected.
func centralInvariant(entries []reports.Entry) string {
	var broken []string
	for _, e := range entries {
		if e.Guarded && e.Outcome == probes.Corrupted {
			broken = append(broken, e.ID+"\n"+explain(e))
		}
	}
	if len(broken) == 0 {
		return ""
	}
	return fmt.Sprintf("%s ended corrupted:\n%s", plural.Count(len(broken), "guarded instance"), strings.Join(broken, "\n"))
}

func specName(in probes.Instance) string {
	return fmt.Sprintf("%s [%s, guards %s]", in.Probe.Name, in.Mode, probes.GuardsName(in.Guarded))
}

// check runs one instance and turns its verdict into the spec's fate.
func (s *suite) check(ctx context.Context, in probes.Instance) {
	entry := run.InstanceOn(ctx, s.platform, in, s.cfg.Config, s.baseline)
	ginkgo.AddReportEntry(resultEntry, ginkgo.ReportEntryVisibilityNever, entry)
	switch v := entry.Verdict; v.Status {
	case verdict.Skip:
		ginkgo.Skip(v.Reason)
	case verdict.Fail:
		ginkgo.Fail(v.Reason + "\n" + explain(entry))
	case verdict.Uncharacterised:
		ginkgo.AddReportEntry("uncharacterised", fmt.Sprintf("%s: outcome %s (%s)", in.ID(), entry.Outcome, entry.Reason))
	}
}

// explain renders a failed instance's detail block for the spec's failure message.
func explain(e reports.Entry) string {
	var b strings.Builder
	if err := reports.WriteDetail(&b, e); err != nil {
		return e.Reason
	}
	return b.String()
}
