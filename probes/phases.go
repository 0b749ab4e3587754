package probes

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/replaycheck/replaycheck/device"
)

// A probe's sequence: what runs before the first replay, in order. A probe gives it one of two
// ways. The sections — prepare, capture or captures, between — say: eager work, every capture one
// after another, eager work. A phases list says it entry by entry, so that eager work can come
// between two captures ("capture the small batch, grow the KV cache, capture the big batch"), and
// a capture can stay open while another begins ("a wait across two captures"):
//
//	phases:
//	  - eager: [OPS]                 # issued eagerly, complete before the next entry begins
//	  - capture: {name, stream, ops, end-thread, end-stream}
//	  - begin: {name, stream, pool, thread}   # a capture left open: later entries go on with it
//	  - begin: {...}                          # a second one, open at the same time
//	  - ops: [OPS]                   # each op goes into the open capture its stream belongs to
//	  - end: NAME                    # or {name, thread, stream}
//
// The two ways do not mix: phases excludes prepare, capture, captures and between. Stages lists
// either as one sequence, which the static checks, the engine and tests follow. From a begin entry
// to the end entry that leaves no capture open is a region: only ops, begin and end entries go
// there.

// PhaseEager is an eager entry of a probe's phases list. Its ops' steps name the entry by its
// place in the list: "phase 3 op 1".
const PhaseEager Phase = "eager"

// StagePart says which part of a capture left open a stage is: its begin, ops that go into the
// captures open then, or its end. "" for eager work and for a whole capture (a capture entry).
type StagePart string

const (
	PartBegin StagePart = "begin"
	PartOps   StagePart = "ops"
	PartEnd   StagePart = "end"
)

// Into is where an op of an ops entry goes: the open capture its stream belongs to, and the op's
// 0-based place in that capture's Ops (its step: "capture NAME op Index+1").
type Into struct {
	Capture *Capture
	Index   int
	// stray: the op's stream belongs to no open capture (a static error): Capture is only where
	// it was put, and the race check leaves it out.
	stray bool
}

// Stage is one part of a probe's sequence: eager work, a capture, or a part of a capture left
// open (Part).
type Stage struct {
	Pos Pos
	// Phase is PhasePrepare, PhaseBetween or PhaseEager for eager work, PhaseCapture for a
	// capture or a part of one.
	Phase Phase
	// Entry is the stage's 1-based place in the probe's phases list; 0 for a probe without one.
	Entry int
	// Ops are an eager stage's ops, or an ops entry's in the order issued (Into says where each
	// goes).
	Ops []*Op
	// Capture is a capture stage's capture, or the capture a begin or end entry begins or ends;
	// nil for eager work and an ops entry.
	Capture *Capture
	// Part is PartBegin, PartOps or PartEnd for the entries of a capture left open; "" else.
	Part StagePart
	// Into is, for an ops entry, where each of Ops goes, by index.
	Into []Into
}

// Eager reports whether the stage is eager work.
func (s Stage) Eager() bool { return s.Capture == nil && s.Part == "" }

// Whole reports whether the stage is a whole capture: begin, its ops, end (a capture entry, or a
// capture of a probe without phases).
func (s Stage) Whole() bool { return s.Capture != nil && s.Part == "" }

// Issued is what the stage issues: an eager stage's ops, a capture's, or an ops entry's in order;
// none for a begin or an end.
func (s Stage) Issued() []*Op {
	switch {
	case s.Whole():
		return s.Capture.Ops
	case s.Capture != nil:
		return nil
	}
	return s.Ops
}

// Step is the step of op i (0-based) of the stage: "prepare op 1", "phase 3 op 1",
// "capture main op 1"; for an ops entry, the step of the op in the capture it goes into.
func (s Stage) Step(i int) Step {
	switch {
	case s.Part == PartOps:
		in := s.Into[i]
		return OpStep(PhaseCapture, in.Capture.Name, in.Index)
	case s.Capture != nil:
		return OpStep(PhaseCapture, s.Capture.Name, i)
	}
	return Step{Phase: s.Phase, Index: i, Entry: s.Entry}
}

// String names the stage in messages: "prepare", "between", "phase 3", "capture big", "begin a",
// "end a".
func (s Stage) String() string {
	switch {
	case s.Part == PartBegin || s.Part == PartEnd:
		return string(s.Part) + " " + s.Capture.Name
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

// Overlaps reports whether p keeps a capture open while another begins or ends: a phases list
// with begin entries.
func (p *Probe) Overlaps() bool {
	return slices.ContainsFunc(p.Phases, func(st Stage) bool { return st.Part == PartBegin })
}

var (
	// phaseKeys are the keys of a phases entry: each entry has exactly one.
	phaseKeys = []string{"eager", "capture", "begin", "ops", "end"}
	// beginKeys are a begin entry's; endKeys an end entry's in its long form.
	beginKeys = []string{"name", "stream", "pool", "thread"}
	endKeys   = []string{"name", "thread", "stream"}
	// sectionKeys are the probe keys a phases list replaces, and what stands for each in it.
	sectionKeys = []struct{ key, instead string }{
		{"prepare", "its first entry, an eager one, holds what prepare would"},
		{"capture", "each capture is a capture entry, with a name"},
		{"captures", "each capture is a capture entry, with a name"},
		{"between", "its last entry, an eager one after the last capture, holds what between would"},
	}
)

// region is what the loader knows of the captures left open while it reads a phases list: which
// are open, in the order begun, the streams each holds (its origin and the streams a wait forked
// into it), and the open capture each event was last recorded in.
type region struct {
	open    []*Capture
	begunAt map[*Capture]Pos
	streams map[string]*Capture
	events  map[string]*Capture
}

// holder is the open capture a stream belongs to, nil when none.
func (r *region) holder(stream string) *Capture { return r.streams[stream] }

// phases reads a probe's phases list (f holds its keys): eager, capture, begin, ops and end
// entries in order.
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
		var last Stage // the previous entry read, when it was eager work or an ops entry
		captures := 0
		r := &region{begunAt: map[*Capture]Pos{}, streams: map[string]*Capture{}, events: map[string]*Capture{}}
		ended := map[string]Pos{} // captures begun by a begin entry and ended, by name
		for i, item := range items {
			l.through(item, func() {
				st, ok := l.phase(p, r, ended, item, i+1)
				prev := last
				last = Stage{}
				if !ok {
					return
				}
				switch {
				case st.Eager() || st.Part == PartOps:
					if prev.Pos != (Pos{}) && prev.Part == st.Part {
						if st.Part == PartOps {
							l.errorf(st.Pos, RulePhases, "phases entry %d is an ops entry right after ops entry %d (line %d): merge them; ops between two begin or end entries are one entry", st.Entry, prev.Entry, prev.Pos.Line)
						} else {
							l.errorf(st.Pos, RulePhases, "phases entry %d is eager work right after eager entry %d (line %d): merge them; eager work between two captures is one entry", st.Entry, prev.Entry, prev.Pos.Line)
						}
					}
					last = st
					p.Phases = append(p.Phases, st)
					return
				case st.Part == PartEnd:
					p.Phases = append(p.Phases, st)
					return
				}
				captures++
				c := st.Capture
				if c.Name == "" || l.unique(seen, "capture", c.Name, l.where(c, "name", c.Pos)) {
					p.Captures = append(p.Captures, c)
					p.Phases = append(p.Phases, st)
					if st.Part == PartBegin && c.Name != "" {
						l.begin(p, r, st)
					}
				}
			})
		}
		if captures == 0 {
			l.errorf(l.at(deref(e.val)), RulePhases, "phases has no capture entry: give at least one {capture: {name, ops}} or {begin: {name}}, or use prepare and capture")
		}
		for _, c := range r.open {
			l.errorf(r.begunAt[c], RulePhases, "capture %s is begun but never ended: give an {end: %s} entry after its ops", c.Name, c.Name)
		}
	})
}

// begin opens capture st.Capture, of a begin entry: its origin stream is now its own.
func (l *loader) begin(p *Probe, r *region, st Stage) {
	c := st.Capture
	if c.Stream == "" && len(p.Streams) > 0 {
		c.Stream = p.Streams[0]
	}
	if c.EndThread == 0 {
		c.EndThread = c.Thread
	}
	if other := r.holder(c.Stream); other != nil {
		l.errorf(l.where(c, "stream", st.Pos), RulePhases, "begin %s on stream %s, which belongs to capture %s, still open (begun at line %d): begin it on another stream, or end %s first", c.Name, c.Stream, other.Name, r.begunAt[other].Line, other.Name)
	}
	r.open = append(r.open, c)
	r.begunAt[c] = st.Pos
	if r.holder(c.Stream) == nil {
		r.streams[c.Stream] = c
	}
}

// phase reads entry number entry of a phases list: {eager: [ops]}, {capture: {name, ...}},
// {begin: {name, ...}}, {ops: [ops]} or {end: NAME}. ended holds the captures a begin entry began
// and an end entry ended so far.
func (l *loader) phase(p *Probe, r *region, ended map[string]Pos, n *yaml.Node, entry int) (Stage, bool) {
	at := l.placed(n)
	m := deref(n)
	if m.Kind != yaml.MappingNode || len(m.Content) != 2 {
		l.errorf(l.at(m), RuleBadValue, "phases entry %d: want a one-key map, {eager: [ops]}, {capture: {name, ops}}, {begin: {name}}, {ops: [ops]} or {end: NAME}, got %s", entry, describeEntry(m))
		return Stage{}, false
	}
	f, ok := l.fields(m, fmt.Sprintf("phases entry %d", entry), phaseKeys)
	if !ok || len(f) != 1 {
		return Stage{}, false
	}
	open := func(kind string) bool {
		if len(r.open) == 0 {
			return false
		}
		var names []string
		for _, c := range r.open {
			names = append(names, c.Name)
		}
		which := "capture " + names[0] + " is"
		if len(names) > 1 {
			which = "captures " + strings.Join(names, " and ") + " are"
		}
		l.errorf(at, RulePhases, "phases entry %d is %s while %s open (begun at line %d): end %s first; work during a capture left open goes in an ops entry", entry, kind, which, r.begunAt[r.open[0]].Line, strings.Join(names, " and "))
		return true
	}
	if e, ok := f["eager"]; ok {
		if v := deref(e.val); isNull(v) || (v.Kind == yaml.SequenceNode && len(v.Content) == 0) {
			l.errorf(l.at(v), RuleBadValue, "phases entry %d: eager: want at least one op; leave the entry out", entry)
			return Stage{}, false
		}
		st := Stage{Pos: at, Phase: PhaseEager, Entry: entry, Ops: l.ops(e.val, "eager")}
		open("eager work")
		return st, true
	}
	if e, ok := f["ops"]; ok {
		if v := deref(e.val); isNull(v) || (v.Kind == yaml.SequenceNode && len(v.Content) == 0) {
			l.errorf(l.at(v), RuleBadValue, "phases entry %d: ops: want at least one op; leave the entry out", entry)
			return Stage{}, false
		}
		ops := l.ops(e.val, "ops")
		if len(r.open) == 0 {
			l.errorf(at, RulePhases, "phases entry %d is an ops entry, but no capture is open: begin one first ({begin: {name}}), or give the work as an eager entry", entry)
			return Stage{}, false
		}
		st := Stage{Pos: at, Phase: PhaseCapture, Entry: entry, Part: PartOps, Ops: ops, Into: make([]Into, len(ops))}
		for i, op := range ops {
			c, ok := l.into(p, r, op)
			st.Into[i] = Into{Capture: c, Index: len(c.Ops), stray: !ok}
			c.Ops = append(c.Ops, op)
		}
		return st, true
	}
	if e, ok := f["end"]; ok {
		return l.end(r, ended, e, at, entry)
	}
	if e, ok := f["begin"]; ok {
		c := &Capture{Pos: l.placed(e.key)}
		if !l.beginEntry(c, e.val) {
			return Stage{}, false
		}
		if c.Name != "" {
			if at, ok := ended[c.Name]; ok {
				l.errorf(l.where(c, "name", c.Pos), RuleDuplicate, "duplicate capture %q (first at line %d)", c.Name, at.Line)
				return Stage{}, false
			}
		}
		return Stage{Pos: at, Phase: PhaseCapture, Entry: entry, Capture: c, Part: PartBegin}, true
	}
	e := f["capture"]
	c := &Capture{Pos: l.placed(e.key)}
	var took bool
	l.through(e.val, func() { took = l.capture(c, e.val, "capture", capturesItemKeys, "name") })
	if !took {
		return Stage{}, false
	}
	if open("a capture entry") {
		return Stage{}, false
	}
	return Stage{Pos: at, Phase: PhaseCapture, Entry: entry, Capture: c}, true
}

// beginEntry reads a begin entry's value: {name, stream, pool, thread}.
func (l *loader) beginEntry(c *Capture, n *yaml.Node) bool {
	took := false
	l.through(n, func() {
		f, ok := l.fields(n, "begin", beginKeys, "name")
		if !ok {
			return
		}
		took = true
		l.captureOrigin(c, f)
		if e, ok := f["thread"]; ok {
			c.Thread = l.thread(e.val, "begin thread")
		}
	})
	return took
}

// end reads an end entry, {end: NAME} or {end: {name, thread, stream}}, and closes the capture it
// names, which must be open.
func (l *loader) end(r *region, ended map[string]Pos, e entry, at Pos, entry int) (Stage, bool) {
	var name string
	var namePos Pos
	var thread *yamlThread
	var stream string
	v := deref(e.val)
	if v.Kind == yaml.ScalarNode && !isNull(v) {
		name, _ = l.name(e.val, "end")
		namePos = l.placed(e.val)
	} else {
		ok := false
		l.through(e.val, func() {
			f, good := l.fields(e.val, "end", endKeys, "name")
			if !good {
				return
			}
			ok = true
			if x, has := f["name"]; has {
				name, _ = l.name(x.val, "end name")
				namePos = l.placed(x.val)
			}
			if x, has := f["thread"]; has {
				thread = &yamlThread{l.thread(x.val, "end thread")}
			}
			if x, has := f["stream"]; has {
				stream, _ = l.scalar(x.val, "end stream")
			}
		})
		if !ok {
			return Stage{}, false
		}
	}
	if name == "" {
		return Stage{}, false
	}
	i := slices.IndexFunc(r.open, func(c *Capture) bool { return c.Name == name })
	if i < 0 {
		if first, ok := ended[name]; ok {
			l.errorf(namePos, RulePhases, "end %s: capture %s is ended already, at line %d", name, name, first.Line)
		} else {
			l.errorf(namePos, RulePhases, "end %s: no capture %s is open here: begin it first ({begin: {name: %s}})", name, name, name)
		}
		return Stage{}, false
	}
	c := r.open[i]
	r.open = slices.Delete(r.open, i, i+1)
	ended[name] = at
	if thread != nil {
		c.EndThread = thread.t
	}
	if stream != "" {
		c.EndStream = stream
	}
	for s, holder := range r.streams {
		if holder == c {
			delete(r.streams, s)
		}
	}
	for ev, holder := range r.events {
		if holder == c {
			delete(r.events, ev) // back to what its last eager record made it
		}
	}
	return Stage{Pos: at, Phase: PhaseCapture, Entry: entry, Capture: c, Part: PartEnd}, true
}

// yamlThread is a thread an end entry gave.
type yamlThread struct{ t device.Thread }

// into is the open capture op, of an ops entry, goes into: the capture its stream belongs to (its
// origin, or a stream a wait forked into it). An op that names no stream goes to the origin of
// the one capture open; with several open, an op on a stream must name it, and one that takes no
// stream (alloc, free, write, ...) goes into the capture begun last. It follows the op's effect
// on which stream and event belong to which capture.
func (l *loader) into(p *Probe, r *region, op *Op) (*Capture, bool) {
	last := r.open[len(r.open)-1]
	if !op.Kind.onStream() {
		return last, true
	}
	if op.Stream == "" {
		if len(r.open) > 1 {
			var names []string
			for _, c := range r.open {
				names = append(names, c.Name)
			}
			l.errorf(op.Pos, RuleMissingKey, "%s with captures %s open: give it a stream, which says which capture it goes into", op.Kind, strings.Join(names, " and "))
			return last, false
		}
		op.Stream = last.Stream
	}
	c := r.holder(op.Stream)
	switch {
	case c != nil:
	case op.Kind == OpWait && r.events[op.Event] != nil:
		// The wait forks the stream into the capture the event was recorded in.
		c = r.events[op.Event]
		r.streams[op.Stream] = c
	case !slices.Contains(p.Streams, op.Stream) && op.Stream != DefaultStream:
		return last, false // an undeclared stream: the checks report it
	default:
		var names []string
		for _, c := range r.open {
			names = append(names, c.Name+" ("+c.Stream+")")
		}
		l.errorf(l.where(op, "stream", op.Pos), RulePhases, "%s on stream %s, which belongs to no open capture (open: %s): an ops entry's ops go into the captures open; put work outside them in an eager entry, or fork the stream in with a wait", op.Kind, op.Stream, strings.Join(names, ", "))
		return last, false
	}
	if op.Kind == OpRecord && op.Event != "" {
		r.events[op.Event] = c
	}
	return c, true
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
