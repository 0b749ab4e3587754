package probes

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// A probe's sequence: what runs before the first replay, in order. A probe gives it one of two
// ways. The sections — prepare, capture or captures, between — say: eager work, every capture one
// after another, eager work. A phases list says it entry by entry, so that eager work can come
// between two captures ("capture the small batch, grow the KV cache, capture the big batch"):
//
//	phases:
//	  - eager: [OPS]                 # issued eagerly, complete before the next entry begins
//	  - capture: {name, stream, ops, end-thread, end-stream}
//	  - eager: [OPS]
//	  - capture: {...}
//
// The two ways do not mix: phases excludes prepare, capture, captures and between. Stages lists
// either as one sequence, which the static checks, the engine and tests follow.

// PhaseEager is an eager entry of a probe's phases list. Its ops' steps name the entry by its
// place in the list: "phase 3 op 1".
const PhaseEager Phase = "eager"

// Stage is one part of a probe's sequence: eager work (Capture nil) or a capture.
type Stage struct {
	Pos Pos
	// Phase is PhasePrepare, PhaseBetween or PhaseEager for eager work, PhaseCapture for a
	// capture.
	Phase Phase
	// Entry is the stage's 1-based place in the probe's phases list; 0 for a probe without one.
	Entry   int
	Ops     []*Op    // an eager stage's ops
	Capture *Capture // a capture stage's capture; nil for eager work
}

// Eager reports whether the stage is eager work.
func (s Stage) Eager() bool { return s.Capture == nil }

// Issued is what the stage issues: an eager stage's ops, or its capture's.
func (s Stage) Issued() []*Op {
	if s.Capture != nil {
		return s.Capture.Ops
	}
	return s.Ops
}

// Step is the step of op i (0-based) of the stage: "prepare op 1", "phase 3 op 1",
// "capture main op 1".
func (s Stage) Step(i int) Step {
	if s.Capture != nil {
		return OpStep(PhaseCapture, s.Capture.Name, i)
	}
	return Step{Phase: s.Phase, Index: i, Entry: s.Entry}
}

// String names the stage in messages: "prepare", "between", "phase 3", "capture big".
func (s Stage) String() string {
	switch {
	case s.Capture != nil:
		return "capture " + s.Capture.Name
	case s.Entry > 0:
		return "phase " + strconv.Itoa(s.Entry)
	}
	return string(s.Phase)
}

// Stages lists what p runs before its first replay, in order: its phases list as given, or, for a
// probe without one, prepare, each capture in order and between (the eager stages there even when
// empty). The slice is the caller's; the ops and captures are p's.
func (p *Probe) Stages() []Stage {
	if p.Phases != nil {
		return append([]Stage(nil), p.Phases...)
	}
	out := make([]Stage, 0, len(p.Captures)+2)
	out = append(out, Stage{Pos: p.Pos, Phase: PhasePrepare, Ops: p.Prepare})
	for _, c := range p.Captures {
		out = append(out, Stage{Pos: c.Pos, Phase: PhaseCapture, Capture: c})
	}
	return append(out, Stage{Pos: p.Pos, Phase: PhaseBetween, Ops: p.Between})
}

// Entry is entry n (1-based) of p's phases list, as a step of an eager entry names it
// (Step.Entry); false when p has no such entry.
func (p *Probe) Entry(n int) (Stage, bool) {
	for _, st := range p.Phases {
		if st.Entry == n {
			return st, true
		}
	}
	return Stage{}, false
}

// HasPhases reports whether p gives its sequence as a phases list.
func (p *Probe) HasPhases() bool { return p.Phases != nil }

var (
	// phaseKeys are the keys of a phases entry: each entry has exactly one.
	phaseKeys = []string{"eager", "capture"}
	// sectionKeys are the probe keys a phases list replaces, and what stands for each in it.
	sectionKeys = []struct{ key, instead string }{
		{"prepare", "its first entry, an eager one, holds what prepare would"},
		{"capture", "each capture is a capture entry, with a name"},
		{"captures", "each capture is a capture entry, with a name"},
		{"between", "its last entry, an eager one after the last capture, holds what between would"},
	}
)

// phases reads a probe's phases list (f holds its keys): eager and capture entries in order.
func (l *loader) phases(p *Probe, f map[string]entry) {
	e := f["phases"]
	for _, s := range sectionKeys {
		if o, ok := f[s.key]; ok {
			l.errorf(l.at(o.key), RulePhases, "%s and phases are both given: phases holds the probe's whole sequence in order (%s); give one or the other", s.key, s.instead)
		}
	}
	p.Phases = []Stage{}
	l.through(e.val, func() {
		items := l.list(e.val, "phases")
		seen := firstSeen{}
		var lastEager Pos // the previous entry when it was eager
		captures := 0
		for i, item := range items {
			l.through(item, func() {
				st, ok := l.phase(p, item, i+1)
				if !ok {
					lastEager = Pos{}
					return
				}
				if st.Capture == nil {
					if lastEager != (Pos{}) {
						l.errorf(st.Pos, RulePhases, "phases entry %d is eager work right after eager entry %d (line %d): merge them; eager work between two captures is one entry", st.Entry, st.Entry-1, lastEager.Line)
					}
					lastEager = st.Pos
					p.Phases = append(p.Phases, st)
					return
				}
				lastEager = Pos{}
				captures++
				c := st.Capture
				if c.Name == "" || l.unique(seen, "capture", c.Name, l.where(c, "name", c.Pos)) {
					p.Captures = append(p.Captures, c)
					p.Phases = append(p.Phases, st)
				}
			})
		}
		if captures == 0 {
			l.errorf(l.at(deref(e.val)), RulePhases, "phases has no capture entry: give at least one {capture: {name, ops}}, or use prepare and capture")
		}
	})
}

// phase reads entry number entry of a phases list: {eager: [ops]} or {capture: {name, ...}}.
func (l *loader) phase(p *Probe, n *yaml.Node, entry int) (Stage, bool) {
	at := l.placed(n)
	m := deref(n)
	if m.Kind != yaml.MappingNode || len(m.Content) != 2 {
		l.errorf(l.at(m), RuleBadValue, "phases entry %d: want a one-key map, {eager: [ops]} or {capture: {name, ops}}, got %s", entry, describeEntry(m))
		return Stage{}, false
	}
	f, ok := l.fields(m, fmt.Sprintf("phases entry %d", entry), phaseKeys)
	if !ok || len(f) != 1 {
		return Stage{}, false
	}
	if e, ok := f["eager"]; ok {
		if v := deref(e.val); isNull(v) || (v.Kind == yaml.SequenceNode && len(v.Content) == 0) {
			l.errorf(l.at(v), RuleBadValue, "phases entry %d: eager: want at least one op; leave the entry out", entry)
			return Stage{}, false
		}
		return Stage{Pos: at, Phase: PhaseEager, Entry: entry, Ops: l.ops(e.val, "eager")}, true
	}
	e := f["capture"]
	c := &Capture{Pos: l.placed(e.key)}
	var took bool
	l.through(e.val, func() { took = l.capture(c, e.val, "capture", capturesItemKeys, "name") })
	if !took {
		return Stage{}, false
	}
	return Stage{Pos: at, Phase: PhaseCapture, Entry: entry, Capture: c}, true
}

// describeEntry describes a node that should have been a one-key map: a mapping by its keys.
func describeEntry(n *yaml.Node) string {
	if n.Kind != yaml.MappingNode {
		return describe(n)
	}
	var keys []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		keys = append(keys, deref(n.Content[i]).Value)
	}
	if len(keys) == 0 {
		return "an empty mapping"
	}
	return "a mapping of " + strings.Join(keys, ", ")
}

// rawPhaseOps counts the ops a phases list holds, as rawOps counts a probe's: before decoding.
func rawPhaseOps(phases *yaml.Node, listLen func(*yaml.Node), value func(*yaml.Node, string) *yaml.Node) {
	if phases = deref(phases); phases == nil || phases.Kind != yaml.SequenceNode {
		return
	}
	for _, entry := range phases.Content {
		listLen(value(entry, "eager"))
		listLen(value(value(entry, "capture"), "ops"))
	}
}
