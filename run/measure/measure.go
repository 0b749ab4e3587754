package measure

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/run"
)

// Answer is a platform's answer to one call: allowed, or an error code, with whether the capture
// the call concerns was invalidated.
type Answer struct {
	Allowed     bool         `json:"allowed"`
	Code        int          `json:"code,omitempty"`
	Name        string       `json:"name,omitempty"`
	Class       device.Class `json:"class,omitempty"`
	Invalidated bool         `json:"invalidated,omitempty"`
	// Asynchronous: a launch returned, and its fault was reported at the synchronisation after it.
	Asynchronous bool `json:"asynchronous,omitempty"`
}

// String says the answer in words: "allowed", "906 CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, capture
// invalidated".
func (a Answer) String() string {
	if a.Allowed {
		return "allowed"
	}
	s := fmt.Sprint(a.Code)
	if a.Name != "" {
		s += " " + a.Name
	}
	if a.Asynchronous {
		s += " (at the synchronisation)"
	}
	if a.Invalidated {
		return s + ", capture invalidated"
	}
	return s + ", capture not invalidated"
}

// Agrees reports whether a device's answer b is the answer a: both allowed, or both rejected with
// the same code and the same invalidation. Names and classes follow the code.
func (a Answer) Agrees(b Answer) bool {
	if a.Allowed || b.Allowed {
		return a.Allowed == b.Allowed
	}
	return a.Code == b.Code && a.Invalidated == b.Invalidated
}

// Says is what rule r answers.
func Says(r *sim.Rule) Answer {
	if r.Allow {
		return Answer{Allowed: true}
	}
	return Answer{Code: r.Code, Name: r.Name, Class: r.Class, Invalidated: r.Invalidates}
}

// Observe reads the platform's answer at step from res, and the error text of the step's call
// ("" when it succeeded). ok is false, with why, when res decides nothing there: the instance
// ended in error, or never made the step's call.
func Observe(res *capture.Result, step probes.Step) (a Answer, detail string, ok bool, why string) {
	if res.Outcome == probes.Errored {
		return Answer{}, "", false, "the instance ended in error: " + res.Reason
	}
	var event *capture.Event
	for _, e := range res.Timeline.Events() {
		if e.Step != nil && *e.Step == step && e.Elided == nil {
			event = &e
			break
		}
	}
	if event != nil {
		detail = event.Err
	}
	if rej := res.Rejection; rej != nil && rej.Step == step {
		a = Answer{Code: rej.Code, Name: rej.Name, Class: rej.Class, Invalidated: rej.Invalidated, Asynchronous: rej.Asynchronous}
		a.Invalidated = a.Invalidated || endInvalidated(res, step)
		return a, detail, true, ""
	}
	switch {
	case event == nil:
		return Answer{}, "", false, fmt.Sprintf("the instance made no call at step %s", step)
	case event.Skipped != "":
		return Answer{}, "", false, fmt.Sprintf("step %s was not issued: %s", step, event.Skipped)
	case event.Code == 0 && event.Class == "":
		return Answer{Allowed: true}, "", true, ""
	}
	invalidated := endInvalidated(res, step) || strings.Contains(event.Err, "), capture invalidated")
	return Answer{Code: event.Code, Class: event.Class, Name: codeName(event.Err, event.Code), Invalidated: invalidated}, detail, true, ""
}

// endInvalidated reports whether the capture that step's call was made in ended with
// capture-invalidated: the call invalidated it.
func endInvalidated(res *capture.Result, step probes.Step) bool {
	if step.Capture == "" || step.Point != probes.StepOp || step.Phase != probes.PhaseCapture {
		return false
	}
	end := probes.CaptureStep(step.Capture, probes.StepEnd)
	for _, e := range res.Timeline.Events() {
		if e.Step != nil && *e.Step == end {
			return e.Class == device.ClassCaptureInvalidated
		}
	}
	return false
}

// codeName finds the platform's name of code in an error's text ("... (code 906
// CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)"); "" when it is not there.
func codeName(text string, code int) string {
	_, rest, ok := strings.Cut(text, fmt.Sprintf("code %d ", code))
	if !ok {
		return ""
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r != '_' && (r < 'A' || r > 'Z') && (r < '0' || r > '9') })
	if end < 0 {
		end = len(rest)
	}
	return rest[:end]
}

// Status is what a row concluded.
type Status string

const (
	Agree        Status = "agree"
	Disagree     Status = "disagree"
	Inconclusive Status = "inconclusive" // the instance decided nothing
	NotMeasured  Status = "not-measured" // a blocked measurement: no probe decides the rule yet
)

// Row is one measurement read from one instance, or a blocked measurement.
type Row struct {
	Status Status `json:"status"`
	// Profile and Rule (its situation) name the rule; RuleIndex is its 1-based place in the
	// profile and Evidence its tag (measured, source, doc, verify).
	Profile   string `json:"profile"`
	RuleIndex int    `json:"rule_index"`
	Rule      string `json:"rule"`
	Evidence  string `json:"evidence"`
	// Instance is the instance read (set/name@mode/guards-off), Step the step; both "" for a
	// blocked measurement.
	Instance string `json:"instance,omitempty"`
	Step     string `json:"step,omitempty"`
	Says     Answer `json:"says"`
	// Did is what the device did; nil when the row is inconclusive or not measured.
	Did *Answer `json:"did,omitempty"`
	// Detail is the error the device answered at the step, as the backend words it ("" when the
	// call succeeded): the simulator's names the profile's rule that decided it.
	Detail string `json:"detail,omitempty"`
	// Why says why a row is inconclusive or not measured.
	Why string `json:"why,omitempty"`
	// Otherwise is the measurement's word on what a disagreement means.
	Otherwise string `json:"otherwise,omitempty"`
}

// Compare makes the row of measurement m, whose rule is rule (index-th of its profile), read from
// res.
func Compare(m *Measurement, index int, rule *sim.Rule, res *capture.Result) Row {
	row := Row{Profile: m.Profile, RuleIndex: index, Rule: rule.Situation, Evidence: rule.Source,
		Instance: res.ID, Step: m.Step.String(), Says: Says(rule), Otherwise: m.Otherwise}
	did, detail, ok, why := Observe(res, m.Step)
	row.Detail = detail
	switch {
	case !ok:
		row.Status, row.Why = Inconclusive, why
	case row.Says.Agrees(did):
		row.Status, row.Did = Agree, &did
	default:
		row.Status, row.Did = Disagree, &did
	}
	return row
}

// Report is one measurement run: where it ran, against which profile, and its rows.
type Report struct {
	Backend  string `json:"backend"`
	Platform string `json:"platform"`
	Device   string `json:"device"`
	// Profile names the profile compared with; Against is the file it came from ("" for the
	// embedded one).
	Profile string `json:"profile"`
	Against string `json:"against,omitempty"`
	Table   string `json:"table"`
	Rows    []Row  `json:"rows"`
	// Uncovered are the profile's verify rules no measurement names.
	Uncovered []string `json:"uncovered,omitempty"`
}

// Count is how many rows have status s.
func (r *Report) Count(s Status) int {
	n := 0
	for _, row := range r.Rows {
		if row.Status == s {
			n++
		}
	}
	return n
}

// Failed reports whether a row disagreed or was inconclusive, or a verify rule has no measurement.
func (r *Report) Failed() bool {
	return r.Count(Disagree) > 0 || r.Count(Inconclusive) > 0 || len(r.Uncovered) > 0
}

// Options are what Run measures, where, and against what.
type Options struct {
	// Config says where it runs (backend, profile, library, replays, timeout, isolation, ...);
	// Run runs the unguarded instances of the measurement probes, judging none against a baseline.
	Config run.Config
	Table  *Table
	// Probes are the measurement probes (each measurement's probe among them).
	Probes []*probes.Probe
	// Against, when set, is the profile to compare with instead of the embedded profile of the
	// device's platform family (a corrected rule before it is committed, or a negative control);
	// AgainstPath names its file.
	Against     *sim.Profile
	AgainstPath string
}

// PlatformOnly is cfg set to measure the platform alone: every probe in its own modes, unguarded,
// judged against no baseline, with no runtime plugin, no shard and no injected faults. Run runs
// under it; a command checks it before.
func PlatformOnly(cfg run.Config) run.Config {
	cfg.Modes, cfg.Guards, cfg.Run, cfg.Probes, cfg.Shard, cfg.Faults = "", "off", "", nil, run.Shard{}, nil
	cfg.Baseline, cfg.Runtime = "none", ""
	return cfg
}

// Run opens the configured backend to learn its platform family, runs the probes of that family's
// measurements and compares each answer with the profile. A nil report with an error means
// nothing was measured (a bad table, a backend that could not be opened, a platform of no family);
// a report with an error is a run whose device did not close cleanly.
func Run(ctx context.Context, o Options) (_ *Report, runErr error) {
	p, err := run.Open(ctx, o.Config)
	if err != nil {
		return nil, err
	}
	key, desc := p.Key, p.Description
	if err := p.Close(); err != nil {
		return nil, fmt.Errorf("closing the device: %w", err)
	}
	family := probes.Family(key)
	if family == "" {
		return nil, fmt.Errorf("platform %s belongs to no profile (cann, cuda): nothing to compare with", key)
	}
	prof := o.Against
	if prof == nil {
		if prof, err = sim.LoadProfile(family); err != nil {
			return nil, err
		}
	} else if prof.Name != family {
		return nil, fmt.Errorf("%s is profile %s, but the device %s is %s", o.AgainstPath, prof.Name, key, family)
	}
	if err := o.Table.Resolve(map[string]*sim.Profile{family: prof}, o.Probes); err != nil {
		return nil, err
	}
	rep := &Report{Backend: o.Config.Backend, Platform: key, Device: desc, Profile: prof.Name, Against: o.AgainstPath,
		Table: o.Table.Path, Uncovered: o.Table.Uncovered(prof)}
	var ids []string
	for _, m := range o.Table.Measurements {
		if m.Profile == family && m.Blocked == "" && !slices.Contains(ids, m.Probe) {
			ids = append(ids, m.Probe)
		}
	}
	results := map[string]*capture.Result{} // by instance id
	var order []probes.Instance
	if len(ids) > 0 {
		cfg := PlatformOnly(o.Config)
		cfg.Probes = ids
		if order, err = run.Select(o.Probes, cfg); err != nil {
			return nil, err
		}
		out, err := run.Execute(ctx, cfg, order)
		if out == nil {
			return nil, err
		}
		for i := range out.Results {
			results[out.Results[i].Result.ID] = &out.Results[i].Result
		}
		if err != nil {
			// The instances ran, but the device did not close cleanly: the rows stand, the error too.
			defer func() { runErr = err }()
		}
	}
	for i := range o.Table.Measurements {
		m := &o.Table.Measurements[i]
		if m.Profile != family {
			continue
		}
		index, rule, _ := FindRule(prof, m.Rule) // Resolve found it
		if m.Blocked != "" {
			rep.Rows = append(rep.Rows, Row{Status: NotMeasured, Profile: family, RuleIndex: index, Rule: rule.Situation,
				Evidence: rule.Source, Says: Says(rule), Why: m.Blocked})
			continue
		}
		for _, in := range order {
			if in.Probe.ID() != m.Probe || !m.Reads(in.Mode) {
				continue
			}
			res, ok := results[in.ID()]
			if !ok {
				rep.Rows = append(rep.Rows, Row{Status: Inconclusive, Profile: family, RuleIndex: index, Rule: rule.Situation,
					Evidence: rule.Source, Instance: in.ID(), Step: m.Step.String(), Says: Says(rule), Why: "the instance did not run"})
				continue
			}
			rep.Rows = append(rep.Rows, Compare(m, index, rule, res))
		}
	}
	return rep, nil
}
