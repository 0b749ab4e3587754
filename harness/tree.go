package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/backends"
	"github.com/replaycheck/replaycheck/runtime/guard"
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

// Suite is one process's view of the catalog: its configuration and, once BeforeSuite ran, its
// device.
type Suite struct {
	cfg      *Config
	baseline *reports.Baseline
	device   runtime.Device
	results  []*capture.Result
}

// options are the engine options of every instance this suite runs.
func (s *Suite) options() capture.Options {
	off, _ := s.cfg.Disabled() // checked by Register
	return capture.Options{Timeout: s.cfg.Timeout, Guard: guard.Options{Disabled: off}}
}

// Device returns the device BeforeSuite opened; nil before.
func (s *Suite) Device() runtime.Device { return s.device }

// Results returns every result this process produced, in run order.
func (s *Suite) Results() []*capture.Result { return s.results }

// Register builds the spec tree for sets: a container per set, a spec per instance. It also registers
// the BeforeSuite that opens device 0 of the configured backend and the AfterSuite that closes it.
// Unguarded outcomes are compared with the platform baseline the configuration names (auto: the one
// in dir/baselines). Call it from TestX before RunSpecs.
func Register(cfg *Config, sets []*probes.Set, dir string) (*Suite, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	matrix, _ := cfg.Matrix()
	baseline, err := cfg.LoadBaseline(dir)
	if err != nil {
		return nil, err
	}
	s := &Suite{cfg: cfg, baseline: baseline}
	ginkgo.BeforeSuite(func(ctx ginkgo.SpecContext) {
		b, err := backends.Open(cfg.Backend, backends.Config{Profile: cfg.Profile, Seed: cfg.Seed})
		if err != nil {
			ginkgo.Fail(err.Error())
		}
		dev, err := b.Open(ctx, 0)
		if err != nil {
			ginkgo.Fail(fmt.Sprintf("open %s device 0: %v", cfg.Backend, err))
		}
		s.device = dev
		ginkgo.DeferCleanup(func() error { return dev.Close() })
	})
	for _, set := range sets {
		instances := probes.Instances(set.Probes, matrix)
		ginkgo.Describe("set "+set.Name, ginkgo.Label("set:"+set.Name), func() {
			for _, in := range instances {
				ginkgo.It(specName(in), InstanceLabels(in, cfg.Backend), func(ctx ginkgo.SpecContext) {
					s.check(ctx, in)
				})
			}
		})
	}
	registerInvariant(s, sets, matrix)
	if cfg.Report != "" {
		ginkgo.ReportAfterSuite("replaycheck report", func(r ginkgo.Report) {
			if err := s.writeReport(r); err != nil {
				ginkgo.Fail(err.Error())
			}
		})
	}
	return s, nil
}

// resultEntry names the report entry every instance spec attaches its reports.Entry to.
const resultEntry = "replaycheck result"

// writeReport collects the entries every process attached to its specs and writes one replaycheck
// report (JSON for a .json file, text otherwise), enforcement table included.
func (s *Suite) writeReport(r ginkgo.Report) error {
	rep := reports.New("replaycheck", "suite", reports.Options{})
	rep.Backend, rep.Profile = s.cfg.Backend, backends.ProfileOf(s.cfg.Backend, s.cfg.Profile)
	if s.baseline != nil {
		rep.Baseline, rep.BaselineFile = s.baseline, s.baseline.File
	}
	for _, spec := range r.SpecReports {
		for _, re := range spec.ReportEntries {
			if re.Name != resultEntry {
				continue
			}
			// In-process the raw value is there; from another parallel process only its JSON is.
			e, ok := re.GetRawValue().(reports.Entry)
			if !ok {
				if err := json.Unmarshal([]byte(re.Value.AsJSON), &e); err != nil {
					return fmt.Errorf("report entry of %q: %w", spec.FullText(), err)
				}
			}
			rep.AddEntry(e)
		}
	}
	slices.SortStableFunc(rep.Results, func(a, b reports.Entry) int { return strings.Compare(a.ID, b.ID) })
	rep.Enforcement = reports.EnforcementTable(rep)
	f, err := os.Create(s.cfg.Report)
	if err != nil {
		return err
	}
	defer f.Close()
	if strings.HasSuffix(s.cfg.Report, ".json") {
		return reports.WriteJSON(f, rep)
	}
	return reports.WriteText(f, rep, reports.TextOptions{})
}

// registerInvariant adds the suite's central invariant as a spec of its own: no instance with guards
// on ends corrupted, on any probe file loaded. It runs the guarded instances itself, so it holds
// whatever order the specs run in and whichever of them a focus selected.
func registerInvariant(s *Suite, sets []*probes.Set, matrix probes.Matrix) {
	if matrix.Guards != nil && !slices.Contains(matrix.Guards, true) {
		return
	}
	matrix.Guards = []bool{true}
	ginkgo.Describe("central invariant", ginkgo.Label("invariant"), func() {
		ginkgo.It("no instance with guards on ends corrupted", func(ctx ginkgo.SpecContext) {
			var broken []string
			ran := 0
			for _, set := range sets {
				for _, in := range probes.Instances(set.Probes, matrix) {
					res := capture.Run(ctx, s.device, in, s.options())
					if res.Outcome == probes.Skipped {
						continue
					}
					ran++
					if res.Outcome == probes.Corrupted {
						broken = append(broken, in.ID()+"\n"+explain(reports.EntryOf(res)))
					}
				}
			}
			if len(broken) > 0 {
				ginkgo.Fail(fmt.Sprintf("%d guarded instance(s) ended corrupted:\n%s", len(broken), strings.Join(broken, "\n")))
			}
			ginkgo.AddReportEntry("guarded instances checked", ginkgo.ReportEntryVisibilityFailureOrVerbose, ran)
		})
	})
}

func specName(in probes.Instance) string {
	return fmt.Sprintf("%s [%s, guards %s]", in.Probe.Name, in.Mode, probes.GuardsName(in.Guarded))
}

// check runs one instance and turns its verdict into the spec's fate.
func (s *Suite) check(ctx context.Context, in probes.Instance) {
	res := capture.Run(ctx, s.device, in, s.options())
	s.results = append(s.results, res)
	entry := reports.EntryOf(res)
	v, why := reports.Judge(res, s.baseline)
	entry.Verdict, entry.VerdictReason = string(v), why
	ginkgo.AddReportEntry(resultEntry, ginkgo.ReportEntryVisibilityNever, entry)
	switch v {
	case capture.Skip:
		ginkgo.Skip(why)
	case capture.Fail:
		ginkgo.Fail(why + "\n" + explain(entry))
	case capture.Uncharacterised:
		ginkgo.AddReportEntry("uncharacterised", fmt.Sprintf("%s: outcome %s (%s)", in.ID(), res.Outcome, res.Reason))
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
