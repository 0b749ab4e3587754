package measure

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/probes"
)

// Version is the version key a table file must carry.
const Version = "replaycheck-measure/v1"

// Table is a measurement table: which probe decides which profile rule.
type Table struct {
	// Path is the file the table was read from.
	Path         string
	Measurements []Measurement
}

// Measurement says which probe step decides one rule of a profile, or why none can yet.
type Measurement struct {
	Line int `yaml:"-"` // in the table file
	// Profile is the profile the rule is in (cann, cuda): a platform family.
	Profile string `yaml:"profile"`
	// Rule is the rule's situation, exactly as the profile writes it.
	Rule string `yaml:"rule"`
	// Probe is the probe's id, set/name; Step the step whose call the rule answers.
	Probe    string      `yaml:"probe"`
	StepText string      `yaml:"step"`
	Step     probes.Step `yaml:"-"`
	// ModeNames restricts the instances read to these capture modes; empty: every mode the probe
	// runs in. Modes is ModeNames parsed.
	ModeNames []string             `yaml:"modes"`
	Modes     []device.CaptureMode `yaml:"-"`
	// Otherwise says what an answer other than the rule's means for the profile.
	Otherwise string `yaml:"otherwise"`
	// Blocked, instead of Probe and Step, says why no probe can decide the rule yet.
	Blocked string `yaml:"blocked"`
}

// Where names the measurement in messages: the table file and its line.
func (m *Measurement) Where(t *Table) string { return fmt.Sprintf("%s:%d", t.Path, m.Line) }

// Reads reports whether the measurement reads an instance in capture mode mode.
func (m *Measurement) Reads(mode device.CaptureMode) bool {
	return len(m.Modes) == 0 || slices.Contains(m.Modes, mode)
}

// LoadTable reads and checks a table file on its own (Resolve checks it against profiles and
// probes). Unknown keys are errors; every problem is reported, each with its line.
func LoadTable(path string) (*Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseTable(path, data)
}

// ParseTable is LoadTable of data read from path.
func ParseTable(path string, data []byte) (*Table, error) {
	var doc struct {
		Version      string      `yaml:"version"`
		Measurements []yaml.Node `yaml:"measurements"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty measurement table", path)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t := &Table{Path: path}
	var errs []error
	bad := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: %s", path, line, fmt.Sprintf(format, args...)))
	}
	if doc.Version != Version {
		bad(1, "version is %q, want %s", doc.Version, Version)
	}
	if len(doc.Measurements) == 0 {
		bad(1, "no measurements")
	}
	for i := range doc.Measurements {
		n := &doc.Measurements[i]
		var m Measurement
		if err := decodeStrict(n, &m); err != nil {
			bad(n.Line, "%v", err)
			continue
		}
		m.Line = n.Line
		m.check(func(format string, args ...any) { bad(n.Line, format, args...) })
		t.Measurements = append(t.Measurements, m)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

// decodeStrict decodes one node into v, unknown keys being errors (yaml.v3 checks KnownFields
// only through a Decoder).
func decodeStrict(n *yaml.Node, v any) error {
	data, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		// The line numbers of the re-encoded node are its own: drop them, the caller names the line.
		text := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "yaml: "), "unmarshal errors:\n  ")
		return errors.New(reLine.ReplaceAllString(text, ""))
	}
	return nil
}

// reLine is yaml.v3's "line N: " before each problem.
var reLine = regexp.MustCompile(`(?m)^\s*line [0-9]+: `)

// check checks what a measurement says on its own, and parses its step and modes.
func (m *Measurement) check(bad func(format string, args ...any)) {
	if !slices.Contains(probes.PlatformFamilies(), m.Profile) {
		bad("profile %q is not one of %s", m.Profile, strings.Join(probes.PlatformFamilies(), ", "))
	}
	if m.Rule == "" {
		bad("rule (the rule's situation) is required")
	}
	if m.Blocked != "" {
		if m.Probe != "" || m.StepText != "" || len(m.ModeNames) > 0 {
			bad("a blocked measurement names no probe, step or modes")
		}
		return
	}
	if m.Probe == "" || m.StepText == "" {
		bad("probe and step are required (or blocked, saying why no probe can decide the rule)")
	}
	if m.Otherwise == "" {
		bad("otherwise (what an answer other than the rule's means) is required")
	}
	if m.StepText != "" {
		step, err := probes.ParseStep(m.StepText)
		if err != nil {
			bad("step: %v", err)
		}
		m.Step = step
	}
	for _, name := range m.ModeNames {
		mode, err := device.ParseCaptureMode(name)
		if err != nil {
			bad("modes: %v", err)
			continue
		}
		m.Modes = append(m.Modes, mode)
	}
}

// Resolve checks the table against profiles (by name) and the probes loaded: each measurement's
// rule is named by exactly one rule of its profile, its probe is loaded, its step is a call the
// probe makes, and each of its modes is one the probe runs in and the rule applies to. It returns
// every problem, each naming the measurement's line.
func (t *Table) Resolve(profiles map[string]*sim.Profile, ps []*probes.Probe) error {
	byID := map[string]*probes.Probe{}
	for _, p := range ps {
		byID[p.ID()] = p
	}
	var errs []error
	for i := range t.Measurements {
		m := &t.Measurements[i]
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s: %s", m.Where(t), fmt.Sprintf(format, args...)))
		}
		prof, ok := profiles[m.Profile]
		if !ok {
			continue // a family whose profile the caller did not ask about
		}
		_, rule, err := FindRule(prof, m.Rule)
		if err != nil {
			bad("%v", err)
		}
		if m.Blocked != "" {
			continue
		}
		p, ok := byID[m.Probe]
		if !ok {
			bad("probe %s is not among the probes loaded", m.Probe)
			continue
		}
		if why := stepMissing(p, m.Step); why != "" {
			bad("step %q: %s", m.StepText, why)
		}
		for _, mode := range m.Modes {
			if !slices.Contains(p.Modes, mode) {
				bad("mode %s: probe %s does not run in it", mode, m.Probe)
			}
		}
		if rule == nil || len(rule.Modes) == 0 {
			continue
		}
		for _, mode := range p.Modes {
			if m.Reads(mode) && !slices.Contains(rule.Modes, mode) {
				bad("mode %s: the rule applies to captures in %s only (name the modes this measurement reads)", mode, strings.Join(rule.ModeNames, ", "))
			}
		}
	}
	return errors.Join(errs...)
}

// FindRule returns the rule of p whose situation is situation, and its 1-based place in the
// profile; an error when none is, or more than one.
func FindRule(p *sim.Profile, situation string) (int, *sim.Rule, error) {
	found := 0
	var rule *sim.Rule
	for i := range p.Rules {
		if p.Rules[i].Situation == situation {
			if rule != nil {
				return 0, nil, fmt.Errorf("profile %s: rules %d and %d both have the situation %q", p.Name, found, i+1, situation)
			}
			found, rule = i+1, &p.Rules[i]
		}
	}
	if rule == nil {
		return 0, nil, fmt.Errorf("profile %s has no rule %q", p.Name, situation)
	}
	return found, rule, nil
}

// stepMissing says why probe p makes no call at step s; "" when it does.
func stepMissing(p *probes.Probe, s probes.Step) string {
	if s.Capture == "" {
		return "" // an eager phase's op: the timeline says whether it was made
	}
	c := p.Capture(s.Capture)
	if c == nil {
		return fmt.Sprintf("probe %s has no capture %q", p.ID(), s.Capture)
	}
	switch s.Point {
	case probes.StepOp:
		if s.Phase == probes.PhaseCapture && s.Index >= len(c.Ops) {
			return fmt.Sprintf("capture %s has %d ops", s.Capture, len(c.Ops))
		}
	case probes.StepLaunch:
		if s.Round > p.Replays {
			return fmt.Sprintf("probe %s replays %d rounds", p.ID(), p.Replays)
		}
	}
	return ""
}

// Uncovered lists the situations of p's rules tagged verify that no measurement of t names, in
// the profile's order.
func (t *Table) Uncovered(p *sim.Profile) []string {
	var out []string
	for _, r := range p.Rules {
		if r.Source != "verify" {
			continue
		}
		if !slices.ContainsFunc(t.Measurements, func(m Measurement) bool { return m.Profile == p.Name && m.Rule == r.Situation }) {
			out = append(out, r.Situation)
		}
	}
	return out
}
