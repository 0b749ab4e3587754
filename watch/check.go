package watch

import (
	"fmt"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/internal/addrmap"
)

// Options configure a Checker.
type Options struct {
	// Suppress holds the suppressions (nil: none).
	Suppress *Suppressions
	// Symbolizer fills in the frames the interposer sent without a symbol (nil: none).
	Symbolizer *Symbolizer
}

// Summary is what a Checker found over a whole stream.
type Summary struct {
	// Findings are the distinct sites not suppressed, in the order first met, Count filled.
	Findings []Finding `json:"findings"`
	// Suppressed counts, by suppression name, the findings each suppression hid.
	Suppressed map[string]int `json:"suppressed,omitempty"`
	// Unused names the suppressions that never matched, in file order.
	Unused []string `json:"unused,omitempty"`
	// Notes are the interposer's notes, each once, in order.
	Notes []string `json:"notes,omitempty"`
	// Processes are the processes seen, in order of their hello (an exec is a second entry).
	Processes []Process `json:"processes,omitempty"`
	// Disagreements are launches the interposer judged otherwise than the checker.
	Disagreements []Disagreement `json:"disagreements,omitempty"`
}

// Process is a process the stream came from.
type Process struct {
	PID     int    `json:"pid"`
	PPID    int    `json:"ppid"`
	Exe     string `json:"exe"`
	Backend string `json:"backend,omitempty"`
	Forked  bool   `json:"forked,omitempty"` // a child made by fork
	Exec    bool   `json:"exec,omitempty"`   // a new program in a pid seen before

	conn int // the connection its events came over (Event.Conn)
}

// Disagreement is a launch whose stale= verdict (the interposer's) differs from the checker's.
type Disagreement struct {
	PID         int    `json:"pid"`
	Exec        string `json:"exec"`
	Stream      string `json:"stream"`
	Interposer  bool   `json:"interposer_stale"`
	Checker     bool   `json:"checker_stale"`
	Description string `json:"description"`
}

// Checker keeps the model of every watched process (allocations, captures, graphs, launches) and
// makes the findings. It is not safe for concurrent use.
type Checker struct {
	opt   Options
	procs map[procKey]*proc
	sites map[string]*Finding
	order []*Finding
	notes map[string]bool
	sum   Summary
	used  map[*Suppression]bool
}

// NewChecker returns a Checker with an empty model.
func NewChecker(opt Options) *Checker {
	return &Checker{
		opt:   opt,
		procs: map[procKey]*proc{},
		sites: map[string]*Finding{},
		notes: map[string]bool{},
		used:  map[*Suppression]bool{},
		sum:   Summary{Suppressed: map[string]int{}},
	}
}

// layer says where an allocation lives: pool blocks inside driver allocations.
type layer int

const (
	driverLayer layer = iota
	poolLayer
)

// alloc is one allocation: a driver allocation or an annotated pool block, one generation of it.
type alloc struct {
	base, size uint64
	kind       string
	pool       uint64
	gen        int
	call       string
	stack      int
	// capture is the capture active when it was made (nil: none); graphOwned: made by an async
	// allocation on a capturing stream (a graph memory node).
	capture    *capture
	graphOwned bool
	// servesPrivate: a block of a private pool was annotated inside this driver allocation, so
	// it is that pool's segment (PyTorch grows a graph's private pool during its capture).
	servesPrivate bool
	freed         bool
	freedBy       string
	freeStack     int
	// namedBy are the captures with a range in it.
	namedBy []*capture
}

func (a *alloc) layer() layer {
	if a.kind == "pool" {
		return poolLayer
	}
	return driverLayer
}

// what names the kind of allocation for people.
func (a *alloc) what() string {
	switch a.kind {
	case "pool":
		return "pool block"
	case "async":
		return "async allocation"
	case "host":
		return "host allocation"
	}
	return "device allocation"
}

func (a *alloc) overlaps(addr, n uint64) bool {
	return addr < a.base+a.size && a.base < addr+max(n, 1)
}

func (a *alloc) holder() *Holder {
	h := &Holder{Addr: hex(a.base), Bytes: a.size, Kind: a.kind, Generation: a.gen, Call: a.call,
		Freed: a.freed, FreedBy: a.freedBy}
	if a.pool != 0 {
		h.Pool = hex(a.pool)
	}
	return h
}

// span is a range a capture named and the allocations that held it then, innermost first.
type span struct {
	addr, bytes uint64
	site        Site
	possible    bool
	call        string
	stack       int
	tid         int
	holders     []*alloc
}

// capture is one stream capture, from begin; after a successful end, also the graph it made.
type capture struct {
	id     int
	stream string
	mode   string
	tid    int
	active bool
	spans  []*span
	named  map[*alloc]bool
	// stale counts the allocations it names that have been freed: 0 means every launch is fresh.
	stale int
	off   []*offOp
	// graph is the handle the capture made (0: none yet, or failed); graphLive until destroyed.
	graph     uint64
	graphLive bool
	execs     map[*execGraph]bool
	// pending are findings made during the capture, whose graph handle is known only at its end.
	pending []*Finding
	// segments are driver allocations made during the capture, judged when it ends: an
	// allocation a private pool's block then lies in is that pool's segment, not a finding.
	segments []pendingAlloc
	// shares are the captures whose graphs share private-pool memory with this one's.
	shares map[*capture]*span
	// launches are this graph's last launch on each stream.
	launches map[string]launchRec
}

func (c *capture) live() bool { return c.graphLive || len(c.execs) > 0 }

// pendingAlloc is an allocation made during a capture and the finding it is unless it turns out
// to be a private pool's segment.
type pendingAlloc struct {
	a *alloc
	f *Finding
}

// dead: the capture has ended and neither its graph nor an exec of it is left, so nothing it
// names can be launched again.
func (c *capture) dead() bool { return !c.active && !c.live() }

// appendPruned appends v, first dropping the entries gone says are gone when s is full, so a
// list that outlives many captures (a weight every capture names) stays as long as what is live.
func appendPruned[T any](s []T, v T, gone func(T) bool) []T {
	if len(s) == cap(s) && len(s) >= 16 {
		s = slices.DeleteFunc(s, gone)
	}
	return append(s, v)
}

// offOp is work the capturing thread enqueued outside its capture.
type offOp struct {
	ev    Event
	spans []*span
}

type graph struct {
	handle uint64
	cap    *capture // nil: a graph not made by a capture the interposer saw
}

type execGraph struct {
	handle uint64
	cap    *capture
}

type launchRec struct {
	seq   uint64
	exec  *execGraph
	stack int
	tid   int
	call  string
}

type recorded struct {
	stream string
	seq    uint64
}

// proc is the model of one process (one program: an exec starts a new one).
type proc struct {
	pid     int
	hello   bool // the model began at a hello (not at an event of a process never introduced)
	stacks  map[int][]RawFrame
	symbols map[int][]Frame
	layers  [2]addrmap.Map[*alloc]
	gens    [2]map[uint64]int
	private map[uint64]bool
	caps    map[int]*capture
	active  map[int]*capture
	// streams maps each capturing stream to its capture.
	streams map[string]*capture
	graphs  map[uint64]*graph
	execs   map[uint64]*execGraph
	// freedNamed are private-pool blocks that were freed while a capture named them, by pool.
	freedNamed map[uint64][]*alloc

	// Ordering, for shared-concurrent: seq numbers the events.
	seq        uint64
	deviceSync uint64
	hostSynced map[string]uint64            // stream -> latest record seq known complete on the host
	waited     map[string]map[string]uint64 // waiting stream -> recording stream -> latest record seq
	events     map[uint64]recorded
}

func newProc(pid int) *proc {
	return &proc{
		pid: pid, stacks: map[int][]RawFrame{}, symbols: map[int][]Frame{},
		gens: [2]map[uint64]int{{}, {}}, private: map[uint64]bool{}, caps: map[int]*capture{}, active: map[int]*capture{},
		streams: map[string]*capture{}, graphs: map[uint64]*graph{}, execs: map[uint64]*execGraph{},
		freedNamed: map[uint64][]*alloc{}, hostSynced: map[string]uint64{},
		waited: map[string]map[string]uint64{}, events: map[uint64]recorded{},
	}
}

// Add takes the next event and returns the findings it made that are new distinct sites and not
// suppressed, in order: each is returned once, the first time its site is met.
func (c *Checker) Add(e Event) []Finding {
	p := c.procs[procKey{e.PID, e.Conn}]
	if e.Name == "hello" {
		c.hello(e)
		return nil
	}
	if p == nil { // a stream without its hello (cut short or hand-written): model it all the same
		p = newProc(e.PID)
		c.procs[procKey{e.PID, e.Conn}] = p
		c.sum.Processes = append(c.sum.Processes, Process{PID: e.PID})
	}
	p.seq++
	var out []Finding
	emit := func(f *Finding, pending *capture) { out = c.report(f, pending, out) }
	switch e.Name {
	case "stack":
		p.stacks[e.ID] = e.Frames
		delete(p.symbols, e.ID)
	case "note":
		if !c.notes[e.Text] {
			c.notes[e.Text] = true
			c.sum.Notes = append(c.sum.Notes, e.Text)
		}
	case "pool-private":
		p.private[e.Pool] = true
	case "alloc":
		c.alloc(p, e, emit)
	case "free":
		c.free(p, e, emit)
	case "begin":
		cp := &capture{id: e.Capture, stream: e.Stream, mode: e.Mode, tid: e.TID, active: true,
			named: map[*alloc]bool{}, execs: map[*execGraph]bool{}, shares: map[*capture]*span{},
			launches: map[string]launchRec{}}
		p.caps[e.Capture] = cp
		p.active[e.Capture] = cp
		p.streams[e.Stream] = cp
	case "join":
		if cp := p.caps[e.Capture]; cp != nil && cp.active {
			p.streams[e.Stream] = cp
		}
	case "op":
		c.op(p, e)
	case "end":
		c.end(p, e, emit)
	case "instantiate":
		c.unbind(p, e.Exec)
		x := &execGraph{handle: e.Exec}
		if g := p.graphs[e.Graph]; g != nil {
			x.cap = g.cap
		}
		c.bind(p, x)
	case "update":
		if x := p.execs[e.Exec]; x != nil && e.OK {
			if x.cap != nil {
				delete(x.cap.execs, x)
			}
			x.cap = nil
			if g := p.graphs[e.Graph]; g != nil {
				x.cap = g.cap
			}
			c.bind(p, x)
		}
	case "launch":
		// A run of launches (n=) is that many launches, one after the other: nothing happened
		// between them.
		for range max(e.Repeat, 1) {
			c.launch(p, e, emit)
		}
	case "destroy-exec":
		c.unbind(p, e.Exec)
	case "destroy-graph":
		if g := p.graphs[e.Graph]; g != nil {
			if g.cap != nil {
				g.cap.graphLive = false
			}
			delete(p.graphs, e.Graph)
		}
	case "record":
		p.events[e.EventHandle] = recorded{stream: e.Stream, seq: p.seq}
	case "wait":
		if r, ok := p.events[e.EventHandle]; ok && r.stream != e.Stream {
			w := p.waited[e.Stream]
			if w == nil {
				w = map[string]uint64{}
				p.waited[e.Stream] = w
			}
			w[r.stream] = max(w[r.stream], r.seq)
		}
	case "sync":
		switch e.What {
		case "device":
			p.deviceSync = p.seq
		case "stream":
			p.hostSynced[e.Stream] = p.seq
		case "event":
			if r, ok := p.events[e.EventHandle]; ok {
				p.hostSynced[r.stream] = max(p.hostSynced[r.stream], r.seq)
			}
		}
	}
	return out
}

// hello starts a process's model: a new process, a forked child (an empty model: nothing of the
// parent's device state is valid in it), or an exec (the program's model starts over).
//
// A forked child sends its hello on the connection it makes in the fork; once it execs, the new
// program connects again. The two connections are read apart, so the exec's hello may come
// first: a fork hello for a pid whose only hello so far was a first, non-fork one from the same
// parent is that late hello. The exec's model stays (the child's work before its exec, if any,
// lands in it), and the processes are listed in the order they happened.
func (c *Checker) hello(e Event) {
	last := -1
	for i, q := range c.sum.Processes {
		if q.PID == e.PID {
			last = i
		}
	}
	if e.Fork && last >= 0 {
		q := &c.sum.Processes[last]
		if ep := c.procs[procKey{e.PID, q.conn}]; !q.Forked && !q.Exec && q.PPID == e.PPID && ep != nil && ep.hello {
			q.Exec = true
			c.sum.Processes = slices.Insert(c.sum.Processes, last, Process{PID: e.PID, PPID: e.PPID,
				Exe: e.Exe, Backend: e.Backend, Forked: true, conn: e.Conn})
			if e.Conn == 0 || e.Conn == q.conn {
				// Without connections the two images cannot be told apart: what the child did
				// before its exec lands in the exec'd image's model.
				return
			}
			p := newProc(e.PID)
			p.hello = true
			c.procs[procKey{e.PID, e.Conn}] = p
			return
		}
	}
	p := newProc(e.PID)
	p.hello = true
	c.procs[procKey{e.PID, e.Conn}] = p
	c.sum.Processes = append(c.sum.Processes, Process{PID: e.PID, PPID: e.PPID, Exe: e.Exe,
		Backend: e.Backend, Forked: e.Fork, Exec: last >= 0 && !e.Fork, conn: e.Conn})
}

// procKey names one process image: its pid and the connection its events came over (0 when the
// stream does not say).
type procKey struct{ pid, conn int }

func (c *Checker) bind(p *proc, x *execGraph) {
	p.execs[x.handle] = x
	if x.cap != nil {
		x.cap.execs[x] = true
	}
}

func (c *Checker) unbind(p *proc, handle uint64) {
	if x := p.execs[handle]; x != nil {
		if x.cap != nil {
			delete(x.cap.execs, x)
		}
		delete(p.execs, handle)
	}
}

// activeCapture is the capture an allocation or free by tid on stream is made in: the thread's
// own, else the stream's, else the earliest active one; nil when none is active.
func (p *proc) activeCapture(tid int, stream string) *capture {
	var first *capture
	for _, cp := range p.active {
		if cp.tid == tid {
			return cp
		}
		if first == nil || cp.id < first.id {
			first = cp
		}
	}
	if cp := p.streams[stream]; cp != nil && stream != "" {
		return cp
	}
	return first
}

// overlapping yields the live allocations of layer l that overlap addr+n, in address order.
func (p *proc) overlapping(l layer, addr, n uint64) []*alloc {
	m := &p.layers[l]
	var out []*alloc
	if _, a, ok := m.Floor(addr); ok && a.overlaps(addr, n) {
		out = append(out, a)
	}
	for base, a := range m.From(addr + 1) {
		if base >= addr+max(n, 1) {
			break
		}
		out = append(out, a)
	}
	return out
}

// holders are the live allocations that hold addr+n, innermost (pool blocks) first, graph memory
// left out.
func (p *proc) holders(addr, n uint64) []*alloc {
	var out []*alloc
	for _, l := range []layer{poolLayer, driverLayer} {
		for _, a := range p.overlapping(l, addr, n) {
			if !a.graphOwned {
				out = append(out, a)
			}
		}
	}
	return out
}

func (c *Checker) alloc(p *proc, e Event, emit func(*Finding, *capture)) {
	a := &alloc{base: e.Addr, size: e.Size, kind: e.Kind, pool: e.Pool, call: e.Call, stack: e.Stack}
	l := a.layer()
	// A live allocation this one overlaps was freed without an event we saw.
	for _, old := range p.overlapping(l, a.base, a.size) {
		c.ended(p, old, "(a free not seen)", 0)
		p.layers[l].Delete(old.base)
	}
	p.gens[l][a.base]++
	a.gen = p.gens[l][a.base]
	cp := p.activeCapture(e.TID, e.Stream)
	a.capture = cp
	capturingStream := e.Kind == "async" && p.streams[e.Stream] != nil
	a.graphOwned = capturingStream
	p.layers[l].Put(a.base, a)
	if cp == nil {
		return
	}
	if a.pool != 0 && p.private[a.pool] {
		for _, seg := range p.overlapping(driverLayer, a.base, a.size) {
			seg.servesPrivate = true
		}
		// A private block taken in a capture shares memory with the captures that named blocks
		// of this pool freed at the same place.
		for _, f := range p.freedNamed[a.pool] {
			if f.overlaps(a.base, a.size) {
				for _, other := range f.namedBy {
					if other != cp {
						for _, s := range other.spans {
							if s.holds(f) {
								share(cp, other, s)
								break
							}
						}
					}
				}
			}
		}
		return
	}
	if capturingStream {
		return
	}
	f := &Finding{Kind: AllocInCapture, PID: p.pid, TID: e.TID, Call: e.Call,
		Detail: fmt.Sprintf("%s allocated %d bytes at %s while capture %d (stream %s, %s mode) was active: the graph may bake in an address that is not its own", e.Call, a.size, hex(a.base), cp.id, cp.stream, cp.mode),
		Graph:  captureGraph(p, cp, nil, ""), Range: &Range{Addr: hex(a.base), Bytes: a.size},
		Now: a.holder(), Stacks: []Stack{{Role: "finding", Frames: c.frames(p, e.Stack)}}}
	if l == driverLayer && len(p.private) > 0 {
		// Perhaps the segment a private pool grows by: decided when the capture ends.
		cp.segments = append(cp.segments, pendingAlloc{a, f})
		return
	}
	emit(f, cp)
}

// judgeSegments reports the allocations made during cp that no private pool's block came to lie
// in: at its end, or at the end of the stream for a capture that never ended.
func (c *Checker) judgeSegments(cp *capture, emit func(*Finding, *capture)) {
	for _, s := range cp.segments {
		if !s.a.servesPrivate {
			emit(s.f, cp)
		}
	}
	cp.segments = nil
}

func (s *span) holds(a *alloc) bool {
	for _, h := range s.holders {
		if h == a {
			return true
		}
	}
	return false
}

func share(a, b *capture, s *span) {
	if _, ok := a.shares[b]; !ok {
		a.shares[b] = s
	}
	if _, ok := b.shares[a]; !ok {
		b.shares[a] = s
	}
}

// ended marks a freed; every capture naming it has one more freed allocation.
func (c *Checker) ended(p *proc, a *alloc, by string, stack int) {
	a.freed, a.freedBy, a.freeStack = true, by, stack
	for _, cp := range a.namedBy {
		cp.stale++
	}
	if a.kind == "pool" && p.private[a.pool] && len(a.namedBy) > 0 {
		p.freedNamed[a.pool] = appendPruned(p.freedNamed[a.pool], a, func(f *alloc) bool {
			f.namedBy = slices.DeleteFunc(f.namedBy, (*capture).dead)
			return len(f.namedBy) == 0
		})
	}
}

func (c *Checker) free(p *proc, e Event, emit func(*Finding, *capture)) {
	l := driverLayer
	if e.Kind == "pool" {
		l = poolLayer
	}
	var a *alloc
	if at, found, ok := p.layers[l].Floor(e.Addr); ok && at == e.Addr {
		a = found
		p.layers[l].Delete(at)
		c.ended(p, a, e.Call, e.Stack)
	}
	private := e.Pool != 0 && p.private[e.Pool] || a != nil && a.pool != 0 && p.private[a.pool]
	if a != nil && !private && !a.graphOwned {
		// free-captured: one finding per live graph that names it.
		for _, cp := range a.namedBy {
			if !cp.live() || cp.active {
				continue
			}
			s := cp.spanOf(a)
			f := &Finding{Kind: FreeCaptured, PID: p.pid, TID: e.TID, Call: e.Call,
				Detail: fmt.Sprintf("%s freed %s (%d bytes, generation %d), which graph %s still names: replaying it would use memory that is no longer its own", e.Call, hex(a.base), a.size, a.gen, hex(cp.graph)),
				Graph:  captureGraph(p, cp, cp.anyExec(), ""), Range: &Range{Addr: hex(s.addr), Bytes: s.bytes},
				Captured: &s.site, Possible: s.possible, AtCapture: a.holder(),
				Stacks: c.stacks(p, e.Stack, s.stack, a.stack, 0, 0)}
			emit(f, nil)
		}
	}
	cp := p.activeCapture(e.TID, e.Stream)
	if cp == nil || private || e.Kind == "async" && p.streams[e.Stream] != nil {
		return
	}
	f := &Finding{Kind: FreeInCapture, PID: p.pid, TID: e.TID, Call: e.Call,
		Graph: captureGraph(p, cp, nil, ""), Range: &Range{Addr: hex(e.Addr)},
		Stacks: []Stack{{Role: "finding", Frames: c.frames(p, e.Stack)}}}
	if a != nil {
		f.Range.Bytes = a.size
		f.AtCapture = a.holder()
		f.Stacks = append(f.Stacks, Stack{Role: "at-capture", Frames: c.frames(p, a.stack)})
		f.Detail = fmt.Sprintf("%s freed %s (%d bytes, generation %d) while capture %d (stream %s, %s mode) was active", e.Call, hex(a.base), a.size, a.gen, cp.id, cp.stream, cp.mode)
	} else {
		f.Detail = fmt.Sprintf("%s freed %s while capture %d (stream %s, %s mode) was active", e.Call, hex(e.Addr), cp.id, cp.stream, cp.mode)
	}
	emit(f, cp)
}

func (cp *capture) spanOf(a *alloc) *span {
	for _, s := range cp.spans {
		if s.holds(a) {
			return s
		}
	}
	return &span{addr: a.base, bytes: a.size}
}

func (cp *capture) anyExec() *execGraph {
	var best *execGraph
	for x := range cp.execs {
		if best == nil || x.handle < best.handle {
			best = x
		}
	}
	return best
}

// spans turns an op's ranges into spans with their holders; ranges in no known allocation are
// left out (pageable host memory, memory from before the interposer).
func (p *proc) spans(e Event) []*span {
	var out []*span
	add := func(addr, n uint64, site Site, possible bool) {
		hs := p.holders(addr, n)
		if len(hs) == 0 {
			return
		}
		out = append(out, &span{addr: addr, bytes: n, site: site, possible: possible, call: e.Call,
			stack: e.Stack, tid: e.TID, holders: hs})
	}
	for _, w := range e.Writes {
		add(w.Addr, w.Bytes, Site{Call: e.Call, What: e.What}, false)
	}
	for _, r := range e.Reads {
		add(r.Addr, r.Bytes, Site{Call: e.Call, What: e.What}, false)
	}
	for _, a := range e.Args {
		hs := p.holders(a.Value, 1)
		if len(hs) == 0 {
			continue
		}
		// A possible pointer: the range is the innermost allocation holding the value.
		in := hs[0]
		add(in.base, in.size, Site{Call: e.Call, What: e.What,
			Arg: fmt.Sprintf("arg %d at offset %d", a.Index, a.Offset)}, true)
	}
	return out
}

func (c *Checker) op(p *proc, e Event) {
	if e.Capture != 0 {
		cp := p.caps[e.Capture]
		if cp == nil || !cp.active {
			return
		}
		for _, s := range p.spans(e) {
			cp.spans = append(cp.spans, s)
			for _, a := range s.holders {
				if !cp.named[a] {
					cp.named[a] = true
					a.namedBy = appendPruned(a.namedBy, cp, (*capture).dead)
				}
			}
		}
		return
	}
	if cp := p.caps[e.TCap]; cp != nil && cp.active {
		if ss := p.spans(e); len(ss) > 0 {
			cp.off = append(cp.off, &offOp{ev: e, spans: ss})
		}
	}
}

func (c *Checker) end(p *proc, e Event, emit func(*Finding, *capture)) {
	cp := p.caps[e.Capture]
	if cp == nil {
		return
	}
	c.judgeSegments(cp, emit) // while active: their graph handle is filled in below
	cp.active = false
	delete(p.active, cp.id)
	delete(p.caps, cp.id) // ops and joins name active captures only
	for s, owner := range p.streams {
		if owner == cp {
			delete(p.streams, s)
		}
	}
	if e.OK && e.Graph != 0 {
		cp.graph, cp.graphLive = e.Graph, true
		p.graphs[e.Graph] = &graph{handle: e.Graph, cap: cp}
	}
	if cp.graph != 0 {
		for _, f := range cp.pending {
			g := *f.Graph // a fresh Graph: Add's caller holds the old one
			g.Handle = hex(cp.graph)
			f.Graph = &g
		}
	}
	cp.pending = nil
	if !e.OK {
		return // nothing will replay it
	}
	// off-capture-work: the capturing thread's own work outside the capture on memory it uses.
	for _, o := range cp.off {
		seen := map[*span]bool{}
		for _, os := range o.spans {
			for _, s := range cp.spans {
				if seen[s] || !overlap(os.addr, os.bytes, s.addr, s.bytes) {
					continue
				}
				seen[s] = true
				lo, hi := max(os.addr, s.addr), min(os.addr+max(os.bytes, 1), s.addr+max(s.bytes, 1))
				emit(&Finding{Kind: OffCaptureWork, PID: p.pid, TID: o.ev.TID, Call: o.ev.Call,
					Detail:   fmt.Sprintf("%s (%s) ran on stream %s, outside capture %d that its thread was making on stream %s, on memory the capture also uses: the graph will not repeat it, and its order against the graph's work is not the one captured", o.ev.Call, o.ev.What, o.ev.Stream, cp.id, cp.stream),
					Graph:    captureGraph(p, cp, nil, ""),
					Range:    &Range{Addr: hex(lo), Bytes: hi - lo},
					Captured: &s.site, Possible: s.possible || os.possible, AtCapture: s.holders[0].holder(),
					Stacks: c.stacks(p, o.ev.Stack, s.stack, s.holders[0].stack, 0, 0)}, nil)
				break
			}
		}
	}
	cp.off = nil
}

func overlap(a, n, b, m uint64) bool {
	return a < b+max(m, 1) && b < a+max(n, 1)
}

// verdict is what a launch finds about one span.
type verdict struct {
	span   *span
	holder *alloc // the allocation at capture that was freed
	now    *alloc // what holds the range now (nil: nothing)
}

// judge says whether s is stale now: its first freed holder, unless that is a private-pool block
// whose range is free or held by a block of the same pool taken in a capture (then it is shared,
// recorded in cp.shares).
func (p *proc) judge(cp *capture, s *span) (verdict, bool) {
	for _, h := range s.holders {
		if !h.freed {
			continue
		}
		if h.kind == "pool" && p.private[h.pool] {
			shared := true
			blocks := p.overlapping(poolLayer, s.addr, s.bytes)
			for _, b := range blocks {
				if b.pool != h.pool || b.capture == nil {
					shared = false
				}
			}
			if shared {
				for _, b := range blocks {
					if b.capture != cp {
						share(cp, b.capture, s)
					}
				}
				continue
			}
		}
		v := verdict{span: s, holder: h}
		for _, l := range []layer{poolLayer, driverLayer} {
			for _, a := range p.overlapping(l, s.addr, s.bytes) {
				if !s.holds(a) && v.now == nil {
					v.now = a
				}
			}
		}
		return v, true
	}
	return verdict{}, false
}

func (c *Checker) launch(p *proc, e Event, emit func(*Finding, *capture)) {
	x := p.execs[e.Exec]
	stale := false
	if x != nil && x.cap != nil {
		cp := x.cap
		if cp.stale > 0 {
			for _, s := range cp.spans {
				v, bad := p.judge(cp, s)
				if !bad {
					continue
				}
				stale = true
				emit(c.staleFinding(p, e, x, v), nil)
			}
		}
		c.concurrent(p, e, x, emit)
		cp.launches[e.Stream] = launchRec{seq: p.seq, exec: x, stack: e.Stack, tid: e.TID, call: e.Call}
	}
	if stale != e.Stale {
		d := Disagreement{PID: p.pid, Exec: hex(e.Exec), Stream: e.Stream, Interposer: e.Stale, Checker: stale}
		if stale {
			d.Description = fmt.Sprintf("%s of exec %s: the checker finds it stale, the interposer did not", e.Call, hex(e.Exec))
		} else {
			d.Description = fmt.Sprintf("%s of exec %s: the interposer found it stale, the checker does not", e.Call, hex(e.Exec))
		}
		c.sum.Disagreements = append(c.sum.Disagreements, d)
	}
}

func (c *Checker) staleFinding(p *proc, e Event, x *execGraph, v verdict) *Finding {
	s, h := v.span, v.holder
	var what string
	switch {
	case v.now == nil:
		what = fmt.Sprintf("freed by %s and nothing holds it now", h.freedBy)
	case v.now.base == h.base && v.now.layer() == h.layer():
		what = fmt.Sprintf("freed and allocated again at the same address (generation %d)", v.now.gen)
	default:
		what = fmt.Sprintf("now inside another allocation (%s, %d bytes, %s)", hex(v.now.base), v.now.size, v.now.call)
	}
	f := &Finding{Kind: StaleReplay, Refused: e.Refused, Possible: s.possible, PID: p.pid, TID: e.TID, Call: e.Call,
		Detail: fmt.Sprintf("graph %s was launched on stream %s, but the range %s+%d it captured in %s held the %s %s (%d bytes, generation %d), %s",
			hex(x.cap.graph), e.Stream, hex(s.addr), s.bytes, s.call, h.what(), hex(h.base), h.size, h.gen, what),
		Graph: captureGraph(p, x.cap, x, e.Stream), Range: &Range{Addr: hex(s.addr), Bytes: s.bytes},
		Captured: &s.site, AtCapture: h.holder(),
		Stacks: c.stacks(p, e.Stack, s.stack, h.stack, h.freeStack, 0)}
	if v.now != nil {
		f.Now = v.now.holder()
		f.Stacks = append(f.Stacks, Stack{Role: "now", Frames: c.frames(p, v.now.stack)})
	}
	return f
}

// concurrent finds graphs sharing private-pool memory with x's that were launched on another
// stream with nothing ordering that launch before this one.
func (c *Checker) concurrent(p *proc, e Event, x *execGraph, emit func(*Finding, *capture)) {
	cp := x.cap
	for other, s := range cp.shares {
		for stream, l := range other.launches {
			if stream == e.Stream || p.ordered(l.seq, stream, e.Stream) {
				continue
			}
			f := &Finding{Kind: SharedConcurrent, PID: p.pid, TID: e.TID, Call: e.Call,
				Detail: fmt.Sprintf("graph %s was launched on stream %s while graph %s, which shares private-pool memory %s+%d with it, may still run on stream %s: nothing ordered that launch before this one",
					hex(cp.graph), e.Stream, hex(other.graph), hex(s.addr), s.bytes, stream),
				Graph:    captureGraph(p, cp, x, e.Stream),
				Other:    captureGraph(p, other, l.exec, stream),
				Range:    &Range{Addr: hex(s.addr), Bytes: s.bytes},
				Captured: &s.site, Possible: s.possible,
				Stacks: append(c.stacks(p, e.Stack, s.stack, 0, 0, 0),
					Stack{Role: "other-launch", Frames: c.frames(p, l.stack)})}
			if len(s.holders) > 0 {
				f.AtCapture = s.holders[0].holder()
			}
			emit(f, nil)
		}
	}
}

// ordered says whether a launch at seq on stream from is known complete before work enqueued on
// stream to now: a device sync, a host sync of from (or of an event recorded on it) after it, or a
// wait by to on an event recorded on from after it.
func (p *proc) ordered(seq uint64, from, to string) bool {
	return p.deviceSync > seq || p.hostSynced[from] > seq || p.waited[to][from] > seq
}

func captureGraph(p *proc, cp *capture, x *execGraph, launchStream string) *Graph {
	g := &Graph{PID: p.pid, Capture: cp.id, Stream: cp.stream, Mode: cp.mode, LaunchStream: launchStream}
	if cp.graph != 0 {
		g.Handle = hex(cp.graph)
	}
	if x != nil {
		g.Exec = hex(x.handle)
	}
	return g
}

// stacks lists the stacks by role, leaving out those with no id.
func (c *Checker) stacks(p *proc, finding, captured, atCapture, freed, now int) []Stack {
	out := []Stack{{Role: "finding", Frames: c.frames(p, finding)}}
	for _, r := range []struct {
		role string
		id   int
	}{{"captured", captured}, {"at-capture", atCapture}, {"freed", freed}, {"now", now}} {
		if r.id != 0 {
			out = append(out, Stack{Role: r.role, Frames: c.frames(p, r.id)})
		}
	}
	return out
}

// frames are a stack's frames, symbolised once per stack.
func (c *Checker) frames(p *proc, id int) []Frame {
	if id == 0 {
		return nil
	}
	if fs, ok := p.symbols[id]; ok {
		return fs
	}
	raw := p.stacks[id]
	fs := make([]Frame, len(raw))
	for i, r := range raw {
		fs[i] = Frame{PC: hex(r.PC), Object: r.Object, Function: r.Symbol}
		if r.Base != 0 && r.PC >= r.Base {
			fs[i].Offset = hex(r.PC - r.Base)
		}
		if c.opt.Symbolizer != nil {
			fs[i] = c.opt.Symbolizer.Frame(fs[i])
		}
	}
	p.symbols[id] = fs
	return fs
}

// siteKey is a distinct site: the kind and the symbolic frames of the finding's own stack and of
// the captured call's.
func siteKey(f *Finding) string {
	var b strings.Builder
	b.WriteString(string(f.Kind))
	frames := 0
	for _, s := range f.Stacks {
		if s.Role != "finding" && s.Role != "captured" {
			continue
		}
		b.WriteString("|" + s.Role)
		for _, fr := range s.Frames {
			frames++
			if fr.Object != "" && fr.Offset != "" {
				b.WriteString(";" + fr.Object + "+" + fr.Offset)
			} else {
				b.WriteString(";" + fr.PC)
			}
		}
	}
	if frames == 0 {
		// No stacks at all: keep at least the entry points apart.
		b.WriteString("|" + f.Call)
		if f.Captured != nil {
			b.WriteString("|" + f.Captured.Call + "|" + f.Captured.Arg)
		}
	}
	return b.String()
}

// report counts f at its site and appends it to out when it is a new, unsuppressed site. A new
// site made during capture pending gets the graph's handle at the capture's end.
func (c *Checker) report(f *Finding, pending *capture, out []Finding) []Finding {
	if c.opt.Suppress != nil {
		if s := c.opt.Suppress.Match(*f); s != nil {
			c.used[s] = true
			c.sum.Suppressed[s.Name]++
			return out
		}
	}
	key := siteKey(f)
	if old := c.sites[key]; old != nil {
		old.Count++
		return out
	}
	f.Count = 1
	c.sites[key] = f
	c.order = append(c.order, f)
	if pending != nil && pending.active {
		pending.pending = append(pending.pending, f)
	}
	return append(out, *f)
}

// Result is the summary so far: the distinct sites with their counts, the suppressions used and
// unused, the notes, the processes and the disagreements.
func (c *Checker) Result() Summary {
	// A capture that never ended (the program died in it) decides its allocations now.
	for _, p := range c.procs {
		for _, cp := range p.active {
			c.judgeSegments(cp, func(f *Finding, pending *capture) { c.report(f, pending, nil) })
		}
	}
	s := c.sum
	s.Findings = make([]Finding, len(c.order))
	for i, f := range c.order {
		s.Findings[i] = *f
	}
	s.Suppressed = map[string]int{}
	for k, v := range c.sum.Suppressed {
		s.Suppressed[k] = v
	}
	s.Unused = nil
	if c.opt.Suppress != nil {
		for _, sup := range c.opt.Suppress.List {
			if !c.used[sup] {
				s.Unused = append(s.Unused, sup.Name)
			}
		}
	}
	s.Notes = append([]string(nil), c.sum.Notes...)
	s.Processes = append([]Process(nil), c.sum.Processes...)
	s.Disagreements = append([]Disagreement(nil), c.sum.Disagreements...)
	return s
}
