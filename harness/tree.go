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
	"github.com/replaycheck/replaycheck/runtime/plugin"
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
	device   runtime.Device
	platform string // the device's platform key
	// plugin is the runtime plugin under test (Config.Runtime); nil for the built-in guards.
	plugin *plugin.Plugin
}

// options are the engine options of every instance this suite runs.
func (s *suite) options() capture.Options {
	off, _ := s.cfg.Disabled() // checked by Register
	opt := capture.Options{Timeout: s.cfg.Timeout, Guard: guard.Options{Disabled: off}}
	if p := s.plugin; p != nil {
		opt.Runtime = &capture.RuntimeUnderTest{Name: p.Name(), Open: func(dev runtime.Device, guarded bool) (capture.Runtime, error) {
			rt, err := p.Open(dev, guarded)
			if err != nil {
				return nil, err
			}
			return rt, nil
		}}
	}
	return opt
}

// runtimeName is the runtime under test as reports name it.
func (s *suite) runtimeName() string {
	if s.plugin == nil {
		return capture.RuntimeBuiltin
	}
	return s.plugin.Name()
}

// Register builds the spec tree for sets: a container per set, a spec per instance. It also registers
// the BeforeSuite that opens device 0 of the configured backend and closes it after the suite, the
// central invariant over every result the suite produced, and the report the configuration asks
// for. Unguarded outcomes are compared with the baseline of the device's platform that the
// configuration names (auto: the one in dir/baselines). Every instance runs through the runtime
// plugin Config.Runtime names, loaded here, or the built-in guards. Call it from TestX before
// RunSpecs; it fails at once on a bad configuration, a runtime plugin that cannot be loaded or a
// backend that cannot be opened.
func Register(cfg *Config, sets []*probes.Set, dir string) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	matrix, _ := cfg.Matrix()
	bcfg := backends.Config{Profile: cfg.Profile, Seed: cfg.Seed}
	b, err := backends.Open(cfg.Backend, bcfg)
	if err != nil {
		return err
	}
	if err := b.Close(); err != nil {
		return err
	}
	s := &suite{cfg: cfg}
	if cfg.Runtime != "" {
		if s.plugin, err = plugin.Load(cfg.Runtime); err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
	}
	ginkgo.BeforeSuite(func(ctx ginkgo.SpecContext) {
		if s.plugin != nil {
			ginkgo.DeferCleanup(s.plugin.Close)
		}
		b, err := backends.Open(cfg.Backend, bcfg)
		if err != nil {
			ginkgo.Fail(err.Error())
		}
		ginkgo.DeferCleanup(b.Close)
		dev, err := b.Open(ctx, 0)
		if err != nil {
			ginkgo.Fail(fmt.Sprintf("open %s device 0: %v", cfg.Backend, err))
		}
		ginkgo.DeferCleanup(dev.Close)
		s.device, s.platform = dev, dev.Platform()
		if s.baseline, err = cfg.LoadBaseline(dir, s.platform); err != nil {
			ginkgo.Fail(err.Error())
		}
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

// writeReport writes one replaycheck report of every process's entries (JSON for a .json file,
// text otherwise), enforcement table included.
func (s *suite) writeReport(r ginkgo.Report) error {
	entries, err := entriesOf(r)
	if err != nil {
		return err
	}
	rep := reports.New("replaycheck", "suite", reports.Options{})
	rep.Backend, rep.Platform, rep.Profile = s.cfg.Backend, s.platform, backends.ProfileOf(s.cfg.Backend, s.cfg.Profile)
	rep.Runtime = s.runtimeName()
	if s.baseline != nil {
		rep.Baseline, rep.BaselineFile = s.baseline, s.baseline.File
	}
	for _, e := range entries {
		rep.AddEntry(e)
	}
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
	return fmt.Sprintf("%d guarded instance(s) ended corrupted:\n%s", len(broken), strings.Join(broken, "\n"))
}

func specName(in probes.Instance) string {
	return fmt.Sprintf("%s [%s, guards %s]", in.Probe.Name, in.Mode, probes.GuardsName(in.Guarded))
}

// check runs one instance and turns its verdict into the spec's fate.
func (s *suite) check(ctx context.Context, in probes.Instance) {
	res := capture.Run(ctx, s.device, in, s.options())
	entry := reports.Entry{Result: *res, Verdict: verdict.Judge(res, s.baseline)}
	ginkgo.AddReportEntry(resultEntry, ginkgo.ReportEntryVisibilityNever, entry)
	switch v := entry.Verdict; v.Status {
	case verdict.Skip:
		ginkgo.Skip(v.Reason)
	case verdict.Fail:
		ginkgo.Fail(v.Reason + "\n" + explain(entry))
	case verdict.Uncharacterised:
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
