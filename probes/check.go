package probes

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/replaycheck/replaycheck/device"
)

// check runs the static checks that need the whole probe: the names captures, the replay and ops
// refer to; buffer liveness and sizes followed in execution order; races inside each capture; and
// the limits.
func (l *loader) check(p *Probe) {
	t := newTracker(l, p)
	t.references()
	l.checkPrivatePools(p)
	l.checkGuarded(p)
	l.checkModeExpects(p)
	l.checkRefusedBy(p)
	all := executionOrder(p)
	// The race check compares every racing op with every unordered one; a probe over the op
	// limit is not worth it.
	checkRaces := true
	if len(all) > l.lim.MaxOps {
		l.errorf(p.Pos, RuleLimit, "probe %s has %d ops, above the limit of %d", p.Name, len(all), l.lim.MaxOps)
		checkRaces = false
	}
	for _, op := range all {
		if op.Kind == OpAlloc && op.Buffer != "" {
			if _, seen := t.allocAt[op.Buffer]; !seen {
				t.allocAt[op.Buffer] = op.Pos
			}
		}
	}
	t.walk(checkRaces)
	l.checkIntents(p)
	t.checkList()
	t.checkTotal()
}

func newTracker(l *loader, p *Probe) *tracker {
	t := &tracker{
		l:       l,
		p:       p,
		streams: toSet(append(slices.Clone(p.Streams), DefaultStream)),
		events:  toSet(p.Events),
		bufs:    map[string]*liveBuffer{},
		allocAt: map[string]Pos{},
		largest: map[string]int64{},
		pools:   map[string]*poolUse{},
	}
	for _, pl := range p.Pools {
		t.pools[pl.Name] = &poolUse{pool: pl}
	}
	return t
}

// references checks the streams the captures, the replay and the non-blocking list name, and the
// captures the replay order launches.
func (t *tracker) references() {
	l, p := t.l, t.p
	for _, c := range p.Captures {
		t.stream(c.Stream, l.where(c, "stream", c.Pos))
		t.stream(c.EndStream, l.where(c, "end-stream", l.where(c, "stream", c.Pos)))
	}
	t.stream(p.Replay.Stream, l.where(&p.Replay, "stream", p.Replay.Pos))
	for i, name := range p.NonBlocking {
		if name != DefaultStream { // reported as it was read
			t.stream(name, l.where(p, "non-blocking."+strconv.Itoa(i), p.Pos))
		}
	}
	var names []string
	for _, c := range p.Captures {
		names = append(names, c.Name)
	}
	for _, lc := range p.Replay.Order {
		if p.Capture(lc.Capture) == nil {
			l.unknown(lc.Pos, RuleUnknownCapture, "replay order names unknown capture", lc.Capture, "captures", func() []string { return names })
		}
		if lc.Stream != p.Replay.Stream {
			t.stream(lc.Stream, lc.Pos)
		}
	}
}

// checkModeExpects reports what expect.modes and the families' modes say in vain or against
// themselves: an entry for a capture mode the probe does not run, an outcome for a guard setting
// it does not run, and rejected-by classes given where no instance the entry decides expects a
// rejection.
func (l *loader) checkModeExpects(p *Probe) {
	x := p.Expect
	check := func(what string, mode device.CaptureMode, m ModeExpect, cells []string) {
		if !slices.Contains(p.Modes, mode) {
			l.errorf(m.Pos, RuleExpectMode, "%s %s: the probe does not run in %s (its modes: %s)", what, mode, mode, joinModes(p.Modes))
			return
		}
		if m.Guarded != "" && !slices.Contains(p.Guards, true) {
			l.errorf(m.Pos, RuleExpectMode, "%s %s gives guarded, but the probe runs with guards: [off] only", what, mode)
		}
		if m.Unguarded != "" && !slices.Contains(p.Guards, false) {
			l.errorf(m.Pos, RuleExpectMode, "%s %s gives unguarded, but the probe runs with guards: [on] only", what, mode)
		}
		if len(m.RejectedBy) == 0 {
			return
		}
		for _, family := range cells {
			e := x.For(family, mode)
			for _, g := range p.Guards {
				if (Instance{Probe: p, Mode: mode, Guarded: g}).expected(e) == Rejected {
					return
				}
			}
		}
		l.errorf(m.Pos, RuleExpectMode, "%s %s: rejected-by names classes, but no instance it decides expects rejected", what, mode)
	}
	for _, mode := range device.CaptureModes() {
		if m, ok := x.Modes[mode]; ok {
			// The entry's rejected-by decides on every platform whose family's own entry for the
			// mode gives none.
			var cells []string
			for _, family := range append([]string{""}, PlatformFamilies()...) {
				if x.Platforms[family].Modes[mode].RejectedBy == nil {
					cells = append(cells, family)
				}
			}
			check("expect modes", mode, m, cells)
		}
		for _, family := range PlatformFamilies() {
			if m, ok := x.Platforms[family].Modes[mode]; ok {
				check("expect platforms "+family+" modes", mode, m, []string{family})
			}
		}
	}
}

// checkRefusedBy reports what a refused-by entry says in vain or cannot mean: a step the probe
// does not have (a capture it does not declare, an op past its phase's list, a round past its
// replays, a launch of a capture its replay order does not launch, a phase it has no step of),
// and an entry that decides no instance expected refused (on every platform family and capture
// mode where it is the most specific refused-by, no instance expects refused). An entry for a
// mode the probe does not run is expect-mode's to report.
func (l *loader) checkRefusedBy(p *Probe) {
	x := p.Expect
	type place struct {
		what string
		r    *RefusedBy
	}
	var places []place
	add := func(what string, r *RefusedBy) {
		if r != nil {
			places = append(places, place{what, r})
		}
	}
	add("expect refused-by", x.RefusedBy)
	for _, family := range PlatformFamilies() {
		add("expect platforms "+family+" refused-by", x.Platforms[family].RefusedBy)
	}
	for _, mode := range p.Modes {
		add("expect modes "+mode.String()+" refused-by", x.Modes[mode].RefusedBy)
		for _, family := range PlatformFamilies() {
			add("expect platforms "+family+" modes "+mode.String()+" refused-by", x.Platforms[family].Modes[mode].RefusedBy)
		}
	}
	for _, pl := range places {
		l.checkRefusalStep(p, pl.what, pl.r)
		if !l.decidesRefused(p, pl.r) {
			l.errorf(l.where(pl.r, "key", x.Pos), RuleRefusedBy, "%s names who must refuse, but no instance it decides expects refused", pl.what)
		}
	}
}

// decidesRefused reports whether r is the most specific refused-by of an instance of p expected
// refused, on some platform family (or none) in some capture mode p runs.
func (l *loader) decidesRefused(p *Probe, r *RefusedBy) bool {
	for _, family := range append([]string{""}, PlatformFamilies()...) {
		for _, mode := range p.Modes {
			e := p.Expect.For(family, mode)
			if e.RefusedBy != r {
				continue
			}
			for _, g := range p.Guards {
				if (Instance{Probe: p, Mode: mode, Guarded: g}).expected(e) == Refused {
					return true
				}
			}
		}
	}
	return false
}

// checkRefusalStep reports a refused-by step that names no step of p.
func (l *loader) checkRefusalStep(p *Probe, what string, r *RefusedBy) {
	if r.Step == "" {
		return
	}
	at := l.where(r, "step", l.where(r, "key", p.Expect.Pos))
	if phase := Phase(r.Step); slices.Contains(RefusalPhases(), phase) {
		has := map[Phase]bool{PhasePrepare: len(p.Prepare) > 0, PhaseCapture: len(p.Captures) > 0,
			PhaseBetween: len(p.Between) > 0, PhaseEach: len(p.Replay.Each) > 0, PhaseReplay: len(p.Replay.Order) > 0}
		if !has[phase] {
			l.errorf(at, RuleRefusedBy, "%s step %s: the probe has no %s step", what, phase, phase)
		}
		return
	}
	s, err := ParseStep(r.Step)
	if err != nil {
		return // reported as it was read
	}
	var ops []*Op
	switch s.Phase {
	case PhasePrepare:
		ops = p.Prepare
	case PhaseBetween:
		ops = p.Between
	case PhaseEach:
		ops = p.Replay.Each
	case PhaseCapture, PhaseReplay:
		c := p.Capture(s.Capture)
		if c == nil {
			var names []string
			for _, c := range p.Captures {
				names = append(names, c.Name)
			}
			l.unknown(at, RuleUnknownCapture, what+" step names unknown capture", s.Capture, "captures", func() []string { return names })
			return
		}
		ops = c.Ops
	case PhaseEager:
		st, ok := p.Entry(s.Entry)
		if !ok || !st.Eager() {
			l.errorf(at, RuleRefusedBy, "%s step %s: entry %d of the probe's phases is no eager entry", what, r.Step, s.Entry)
			return
		}
		ops = st.Ops
	default:
		return
	}
	switch {
	case s.Point == StepLaunch && s.Round > p.Replays:
		l.errorf(at, RuleRefusedBy, "%s step %s: the probe replays %d rounds", what, r.Step, p.Replays)
	case s.Point == StepLaunch && !slices.ContainsFunc(p.Replay.Order, func(lc Launch) bool { return lc.Capture == s.Capture }):
		l.errorf(at, RuleRefusedBy, "%s step %s: the replay order does not launch capture %s", what, r.Step, s.Capture)
	case s.Point == StepOp && s.Index >= len(ops):
		where := string(s.Phase)
		switch s.Phase {
		case PhaseCapture:
			where = "capture " + s.Capture
		case PhaseEager:
			where = fmt.Sprintf("phase %d", s.Entry)
		}
		l.errorf(at, RuleRefusedBy, "%s step %s: %s has %d ops", what, r.Step, where, len(ops))
	}
}

func joinModes(modes []device.CaptureMode) string {
	var names []string
	for _, m := range modes {
		names = append(names, m.String())
	}
	return strings.Join(names, ", ")
}

// checkGuarded reports an expect without guarded in a probe that runs with guards on.
func (l *loader) checkGuarded(p *Probe) {
	if _, given := l.pos[fieldKey{&p.Expect, "guarded"}]; p.Expect.Pos != (Pos{}) && !given && slices.Contains(p.Guards, true) {
		l.errorf(l.where(&p.Expect, "mapping", p.Expect.Pos), RuleMissingKey, "expect lacks required key %q (it may be left out only by a probe that runs with guards: [off])", "guarded")
	}
}

// walk follows the buffers in execution order: declared buffers, the stages (prepare, each
// capture's ops, checking races unless checkRaces is false, and between; or the phases list's
// entries in order), and two rounds of replay.each.
func (t *tracker) walk(checkRaces bool) {
	p := t.p
	for _, b := range p.Buffers {
		lb := &liveBuffer{size: b.Bytes, sized: b.Bytes > 0, live: true, at: b.Pos, how: "declared", init: b.Init, place: b.Place}
		t.bufs[b.Name] = lb
		if t.place(b.Place, b.Slot, func(field string) Pos { return t.l.where(b, field, b.Pos) }) {
			t.grew(b.Name, lb)
			t.claim(lb, 0, b.Pos)
		}
	}
	open := map[*Capture]*happensBefore{} // the captures a begin entry left open, and their race checks
	for _, st := range p.Stages() {
		switch {
		case st.Whole():
			t.capture(st.Capture, checkRaces)
		case st.Part == PartBegin:
			open[st.Capture] = t.races(st.Capture, checkRaces)
		case st.Part == PartOps:
			// Each op goes into the capture its stream belongs to: checked there, at its place in
			// that capture's ops.
			for i, op := range st.Ops {
				in, hb := st.Into[i], open[st.Into[i].Capture]
				if in.stray {
					hb = nil
				}
				t.captureOp(in.Capture, hb, in.Index, op)
			}
		case st.Part == PartEnd:
			delete(open, st.Capture)
		default:
			t.steps(st.Ops)
		}
	}
	t.steps(p.Replay.Each)
	t.eachRoundTwo(p.Replay.Each)
}

// steps checks ops one after the other.
func (t *tracker) steps(ops []*Op) {
	for _, op := range ops {
		t.step(op)
	}
}

// capture walks one capture's ops and, when checkRaces is set and the capture's stream is
// declared, checks its data ops for races between its streams.
func (t *tracker) capture(c *Capture, checkRaces bool) {
	hb := t.races(c, checkRaces)
	for i, op := range c.Ops {
		t.captureOp(c, hb, i, op)
	}
}

// races is the race check of capture c's ops; nil when checkRaces is not set or the capture's
// stream is not declared.
func (t *tracker) races(c *Capture, checkRaces bool) *happensBefore {
	if checkRaces && t.streams[c.Stream] {
		return newHappensBefore(append(slices.Clone(t.p.Streams), DefaultStream), c, t.l.lim.raceKnobs())
	}
	return nil
}

// captureOp walks op i of capture c's ops and checks it for races with hb (nil: not checked).
func (t *tracker) captureOp(c *Capture, hb *happensBefore, i int, op *Op) {
	t.initInCapture(op)
	acc, ok := t.step(op)
	if hb == nil || hb.exhausted || !t.streams[op.Stream] {
		return
	}
	switch {
	case op.Kind == OpRecord && t.events[op.Event]:
		hb.record(op.Stream, op.Event)
	case op.Kind == OpWait && t.events[op.Event]:
		hb.wait(op.Stream, op.Event)
	case op.Kind.TouchesData() && ok:
		if r := hb.access(op, i, acc); r != "" {
			t.l.errorf(op.Pos, RuleRace, "%s", r)
		}
		if hb.exhausted {
			t.l.errorf(op.Pos, RuleLimit, "capture %s has too many unordered data ops for the race check (more than %d op pairs by here); order its streams with record/wait or split it", c.Name, hb.knobs.budget)
		}
	}
}

// checkIntents reports intent on ops outside the captures.
func (l *loader) checkIntents(p *Probe) {
	lists := [][]*Op{p.Replay.Each}
	for _, st := range p.Stages() {
		if st.Eager() {
			lists = append(lists, st.Ops)
		}
	}
	for _, ops := range lists {
		for _, op := range ops {
			if op.Intent != IntentDefault {
				l.errorf(l.where(op, "intent", op.Pos), RuleBadValue, "intent belongs to ops inside a capture's ops list: outside a capture every op applies once, when it is issued")
			}
		}
	}
}

// checkList reports a buffer in the check list that is not there to compare after the walk.
func (t *tracker) checkList() {
	for i, name := range t.p.Check {
		at := t.l.where(t.p, "check."+strconv.Itoa(i), t.p.Pos)
		switch b := t.bufs[name]; {
		case b == nil:
			t.l.unknown(at, RuleUndeclared, "check names undeclared buffer", name, "buffers", t.known)
		case !b.live:
			t.l.errorf(at, RuleUseAfterFree, "check names buffer %q, freed at line %d and not allocated again before the replays", name, b.freed.Line)
		}
	}
}

// checkTotal holds the largest sizes of the unpooled buffers and the pools, together, to the limit.
func (t *tracker) checkTotal() {
	var total int64
	for _, pl := range t.p.Pools {
		t.largest["pool "+pl.Name] = pl.Bytes
	}
	for _, n := range t.largest {
		if n > math.MaxInt64-total {
			total = math.MaxInt64 // sizes up to 8 EiB parse; their sum must not wrap below the limit
			break
		}
		total += n
	}
	if lim := t.l.lim.MaxTotalBytes; total > lim {
		t.l.errorf(t.p.Pos, RuleLimit, "probe %s uses %s of buffers in all, above the limit of %s", t.p.Name, bytesText(total), bytesText(lim))
	}
}

// initInCapture checks that a device buffer (re-)provisioned inside a capture can be initialised
// there: a synchronous copy is an unsafe call during a capture, so the engine initialises with an
// asynchronous memset on a stream outside the capture, which only zero and fill:B patterns allow.
// A host buffer is initialised by the CPU, which no capture rule concerns.
func (t *tracker) initInCapture(op *Op) {
	ok := func(p Pattern) bool { return p.Kind == PatZero || p.Kind == PatFill || p.Kind == "" }
	switch op.Kind {
	case OpAlloc:
		if !ok(op.Pattern) && !t.hostPlace(op.Place) {
			t.l.errorf(t.l.where(op, "init", op.Pos), RuleBadPattern, "alloc inside a capture: init %s cannot be written without a synchronous copy (an unsafe call during a capture); use zero or fill:B", op.Pattern)
		}
	case OpGrow:
		// A grow at or below the buffer's size is served in place: nothing is provisioned.
		if b := t.bufs[op.Buffer]; b != nil && b.live && (!b.sized || op.Bytes == nil || *op.Bytes > b.size) && !ok(b.init) && !t.hostPlace(b.place) {
			t.l.errorf(op.Pos, RuleBadPattern, "grow inside a capture re-provisions %q with its init %s, which cannot be written without a synchronous copy (an unsafe call during a capture); give it zero or fill:B", op.Buffer, b.init)
		}
	}
}

// eachRoundTwo walks replay.each once more, with the buffers as round 1 left them (sizes only grow,
// so two rounds see every size each will meet), and keeps what only round 2 breaks: an alloc of a
// name round 1 left live and each does not free before it, a free of a name round 1 freed and each
// does not allocate again before it, a range that no longer fits. The canonical per-step
// re-allocation, a free then an alloc of one name, repeats cleanly.
func (t *tracker) eachRoundTwo(each []*Op) {
	l := t.l
	before, found := len(l.diags), l.found
	// own are the problems this walk states itself, already in round-2 terms; the tracker's
	// findings get the round-2 framing below.
	var own Diagnostics
	for _, op := range each {
		b := t.bufs[op.Buffer]
		switch {
		case op.Kind == OpAlloc && b != nil && b.live:
			own = append(own, Diagnostic{Pos: op.Pos, Rule: RuleDuplicate, Message: fmt.Sprintf("replay.each runs before every round: it allocates %q again in round 2 while round 1's is still live; free it in each before this alloc", op.Buffer)})
			continue
		case op.Kind == OpFree && b != nil && !b.live:
			own = append(own, Diagnostic{Pos: op.Pos, Rule: RuleUseAfterFree, Message: fmt.Sprintf("replay.each runs before every round: round 2 frees %q again after round 1 freed it; allocate it in each before this free", op.Buffer)})
			continue
		}
		t.step(op)
	}
	// What the walk found beyond MaxDiagnostics cannot be told from round 1's: it stays counted.
	fresh := slices.Clone(l.diags[before:])
	l.diags, l.found = l.diags[:before], found+(l.found-found-len(fresh))
	for _, d := range fresh {
		d.Message = "in round 2 (replay.each runs before every round): " + d.Message
		own = append(own, d)
	}
	for _, d := range own {
		seen := false
		for _, old := range l.diags[:before] {
			seen = seen || (old.Pos == d.Pos && old.Rule == d.Rule)
		}
		if !seen {
			l.add(d)
		}
	}
}

// liveBuffer is what the static walk knows of a buffer name at one point of the probe.
type liveBuffer struct {
	size  int64
	sized bool // false when the size itself was bad: ranges on it are not checked
	live  bool
	at    Pos // the declaration or the alloc that made it
	init  Pattern
	how   string // "declared" or "allocated"
	freed Pos
	place Place
}

// tracker follows buffers through a probe in execution order.
type tracker struct {
	l       *loader
	p       *Probe
	streams map[string]bool
	events  map[string]bool
	bufs    map[string]*liveBuffer
	allocAt map[string]Pos   // the first alloc of each name, for "not allocated yet"
	largest map[string]int64 // the largest size each unpooled name reaches, and each pool's, for the total limit
	pools   map[string]*poolUse
}

// poolUse is how much of a pool the live blocks hold at one point of the probe.
type poolUse struct {
	pool *Pool
	live int64 // rounded block bytes
	over bool  // reported over capacity, and still over
}

func (t *tracker) size(name string) int64 { return t.bufs[name].size }

// grew notes the size a buffer reaches: toward the total limit unless a pool's segment holds it.
func (t *tracker) grew(name string, b *liveBuffer) {
	if b.place.Pool == "" {
		t.largest[name] = max(t.largest[name], b.size)
	}
}

func blockBytes(n int64) int64 {
	return (n + device.PoolGranularity - 1) / device.PoolGranularity * device.PoolGranularity
}

// claim takes a pooled buffer's block from its pool, having given back old bytes, and reports a
// pool whose live blocks would no longer fit in it. Best fit can still fail on a fragmented pool;
// that is an error of the run, with the pool's state in the message.
func (t *tracker) claim(b *liveBuffer, old int64, at Pos) {
	u := t.pools[b.place.Pool]
	if u == nil || !b.sized {
		return
	}
	u.live += blockBytes(b.size) - blockBytes(old)
	switch {
	case u.live > u.pool.Bytes && !u.over:
		t.l.errorf(at, RulePool, "pool %q (%s) would hold %s of live blocks here (blocks are rounded up to %d bytes): size it for the blocks live at once",
			u.pool.Name, bytesText(u.pool.Bytes), bytesText(u.live), device.PoolGranularity)
		u.over = true // once per overflow, where it happens
	case u.live <= u.pool.Bytes:
		u.over = false
	}
}

// release gives a pooled buffer's block back.
func (t *tracker) release(b *liveBuffer) {
	if u := t.pools[b.place.Pool]; u != nil && b.sized {
		u.live = max(u.live-blockBytes(b.size), 0)
	}
}

func (t *tracker) hostPlace(pl Place) bool {
	if pl.Pool != "" {
		u := t.pools[pl.Pool]
		return u != nil && u.pool.Host != 0
	}
	return pl.Host != 0
}

// place checks where a buffer's memory comes from: a declared pool, device or host memory, with a
// slot only for device memory the runtime's allocation points hand out. at gives the position of
// a field.
func (t *tracker) place(pl Place, slot Slot, at func(field string) Pos) bool {
	ok := true
	if pl.Pool != "" {
		if t.pools[pl.Pool] == nil {
			t.l.unknown(at("pool"), RuleUndeclared, "undeclared pool", pl.Pool, "pools", func() (names []string) {
				for _, p := range t.p.Pools {
					names = append(names, p.Name)
				}
				return names
			})
			ok = false
		}
		if pl.Host != 0 {
			t.l.errorf(at("host"), RuleBadValue, "a pooled buffer lives where its pool does: give host to the pool, not the buffer")
			ok = false
		}
	}
	if slot != "" && slot != SlotPlain && (pl.Pool != "" || pl.Host != 0) {
		t.l.errorf(at("slot"), RuleBadValue, "slot %s is an allocation point of the runtime's device memory: a buffer from %s has none", slot, pl)
		ok = false
	}
	return ok
}

// memory checks that a data op names memory its kind of op can touch: a memset and the axpy
// kernel work on device memory; a stream copy needs a device buffer on at least one side.
func (t *tracker) memory(op *Op) bool {
	host := func(name string) bool { b := t.bufs[name]; return b != nil && t.hostPlace(b.place) }
	switch {
	case op.Kind == OpFill && host(op.Dst):
		t.l.errorf(t.l.where(op, "dst", op.Pos), RuleMemory, "fill is a device memset: %q is host memory (write it from the host instead)", op.Dst)
	case op.Kind == OpAxpy && (host(op.Y) || host(op.X)):
		t.l.errorf(op.Pos, RuleMemory, "axpy is a device kernel: y %q and x %q must be device memory", op.Y, op.X)
	case op.Kind == OpCopy && host(op.Dst) && host(op.Src):
		t.l.errorf(op.Pos, RuleMemory, "copy %q <- %q: both are host memory; a stream copies to or from the device", op.Dst, op.Src)
	default:
		return true
	}
	return false
}

// known lists every buffer name of the probe, for hints.
func (t *tracker) known() []string {
	names := slices.Collect(maps.Keys(t.bufs))
	for name := range t.allocAt {
		if t.bufs[name] == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// stream reports a reference to an undeclared stream. Without any declared stream the probe has
// already been reported and every reference would be noise.
func (t *tracker) stream(name string, at Pos) {
	if name == "" || len(t.p.Streams) == 0 || t.streams[name] {
		return
	}
	t.l.unknown(at, RuleUndeclared, "undeclared stream", name, "streams", func() []string { return t.p.Streams })
}

// step checks one op at the point it is issued and applies what it does to the buffers. It returns
// what a data op accesses; ok is false when that could not be worked out (a problem was reported).
func (t *tracker) step(op *Op) (acc Access, ok bool) {
	l := t.l
	if op.Kind.onStream() {
		t.stream(op.Stream, l.where(op, "stream", op.Pos))
	}
	if op.Event != "" && !t.events[op.Event] {
		l.unknown(l.where(op, "event", op.Pos), RuleUndeclared, "undeclared event", op.Event, "events", func() []string { return t.p.Events })
	}
	refs := bufferRefs(op)
	usable := true
	for _, r := range refs {
		if !t.usable(op, r.field, r.name) {
			usable = false
		}
	}
	switch op.Kind {
	case OpAlloc:
		t.alloc(op)
	case OpFree:
		if usable {
			b := t.bufs[op.Buffer]
			b.live, b.freed = false, op.Pos
			t.release(b)
		}
	case OpGrow:
		// grow never shrinks: a request at or below the size is served in place.
		if b := t.bufs[op.Buffer]; usable && op.Bytes != nil && *op.Bytes > b.size {
			old := b.size
			b.size = *op.Bytes
			t.grew(op.Buffer, b)
			t.claim(b, old, op.Pos)
		}
	}
	if !usable || !op.Kind.TouchesData() || !t.memory(op) {
		return Access{}, false
	}
	for _, r := range refs {
		if !t.bufs[r.name].sized {
			return Access{}, false
		}
	}
	if op.Kind == OpAxpy {
		if y, x := t.size(op.Y), t.size(op.X); y != x || y%4 != 0 {
			l.errorf(op.Pos, RuleAxpySize, "axpy needs x and y of the same size, a multiple of 4 bytes: y %q is %d bytes, x %q is %d bytes here", op.Y, y, op.X, x)
			return Access{}, false
		}
	}
	acc, err := op.Resolve(t.size)
	if err != nil {
		l.errorf(op.Pos, RuleRange, "%v", err)
		return Access{}, false
	}
	return acc, true
}

// usable reports whether a buffer an op names exists at this point, reporting why not.
func (t *tracker) usable(op *Op, field, name string) bool {
	if name == "" {
		return false // the missing field is reported already
	}
	at := t.l.where(op, field, op.Pos)
	b := t.bufs[name]
	switch {
	case b == nil:
		if first, later := t.allocAt[name]; later {
			t.l.errorf(at, RuleUndeclared, "buffer %q is not allocated yet (alloc at line %d)", name, first.Line)
		} else {
			t.l.unknown(at, RuleUndeclared, "undeclared buffer", name, "buffers", t.known)
		}
		return false
	case !b.live:
		t.l.errorf(at, RuleUseAfterFree, "buffer %q is used after its free at line %d and not allocated again", name, b.freed.Line)
		return false
	}
	return true
}

func (t *tracker) alloc(op *Op) {
	name := op.Buffer
	if name == "" {
		return
	}
	old := t.bufs[name]
	if old != nil && old.live {
		t.l.errorf(t.l.where(op, "buffer", op.Pos), RuleDuplicate, "duplicate buffer %q: %s at line %d and still live; free it before allocating it again", name, old.how, old.at.Line)
		return
	}
	b := &liveBuffer{live: true, at: op.Pos, how: "allocated", init: op.Pattern, place: op.Place}
	placed := t.place(op.Place, op.Slot, func(field string) Pos { return t.l.where(op, field, op.Pos) })
	if op.Bytes != nil {
		b.size, b.sized = *op.Bytes, true
		t.grew(name, b)
	}
	t.bufs[name] = b
	if placed {
		t.claim(b, 0, op.Pos)
	}
}

type bufferRef struct{ field, name string }

// bufferRefs lists the existing buffers an op names (alloc names a new one).
func bufferRefs(op *Op) []bufferRef {
	switch op.Kind {
	case OpFill, OpWrite:
		return []bufferRef{{"dst", op.Dst}}
	case OpCopy:
		return []bufferRef{{"dst", op.Dst}, {"src", op.Src}}
	case OpRead:
		return []bufferRef{{"src", op.Src}}
	case OpAxpy:
		return []bufferRef{{"y", op.Y}, {"x", op.X}}
	case OpFree, OpGrow:
		return []bufferRef{{"buffer", op.Buffer}}
	}
	return nil
}

func toSet(names []string) map[string]bool {
	s := make(map[string]bool, len(names))
	for _, n := range names {
		s[n] = true
	}
	return s
}

// executionOrder lists a probe's ops in the order they are first issued.
func executionOrder(p *Probe) []*Op {
	var ops []*Op
	for _, st := range p.Stages() {
		ops = append(ops, st.Issued()...)
	}
	return append(ops, p.Replay.Each...)
}

// bytesText prints a byte count with its unit.
func bytesText(n int64) string {
	if s := FormatSize(n); s != strconv.FormatInt(n, 10) {
		return s
	}
	return fmt.Sprintf("%d bytes", n)
}

// opRef names an op in messages: its kind and line.
func opRef(op *Op) string { return fmt.Sprintf("%s (line %d)", op.Kind, op.Pos.Line) }
