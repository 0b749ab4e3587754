package probes

import (
	"sync"

	"github.com/replaycheck/replaycheck/device"
)

// Capture plans: a capture's fills, copies and axpys resolved once and shared by every instance
// of the probe, so that issuing a batch of them (the engine) and recording them into a graph (the
// oracle) costs no resolution, no name lookup and no record per op.
//
// Every buffer name a probe mentions has a fixed id, its place in the probe's name table
// (BufferID): every oracle of the probe interns the names in that order first, so a plan's ops
// hold ids that mean the same buffer in every oracle. A plan is made by an oracle (Oracle.Plan)
// at the buffer sizes it has then, by the very resolution a single op gets (Oracle.graphOp), and
// is kept with the probe for those sizes. An op of a plan may be used in place of that resolution
// only while the buffers it names still have those sizes (Oracle.Holds, and the engine's own check
// of its allocations): anything else goes op by op. A probe must not be changed once an oracle of
// it was made: its name table and plans are kept with it.

// Plan is one capture's data ops resolved at given buffer sizes. It is never changed once made.
type Plan struct {
	capture *Capture
	// ops is by op index; kind codeOther where the op is not a fill, copy or axpy that the probe
	// means to replay, or its ranges did not resolve at those sizes.
	ops []graphOp
	// follows[i]: op i is on the thread and stream of op i-1, so a batch may go on through it
	// without looking at the op itself.
	follows []bool
	// used are the ids of the buffers the capture's ops name; size is by id the size each had (-1:
	// no buffer; 0 for an id no op names). The sizes of used are the key the plan is kept under,
	// and what Holds and the engine compare a buffer's size with.
	used []uint32
	size []int64
}

// PlannedKernel is a planned op as the engine issues it (Plan.Kernel): the oracle's graph op
// itself, read through its methods, so that a plan holds each op once.
type PlannedKernel = graphOp

// kernelKinds is the call each op code stands for (0: none, not planned).
var kernelKinds = [...]device.KernelKind{codeFill: device.KernelFill, codeCopy: device.KernelCopy, codeAxpy: device.KernelAxpy}

// Kind is the call the op is (0: not planned).
func (g *graphOp) Kind() device.KernelKind { return kernelKinds[g.kind] }

// W is the range the op writes; X the one it reads first (a copy's source, an axpy's x: as long
// as W), unused by a fill.
func (g *graphOp) W() BufferRange { return BufferRange{g.w, g.wOff, g.wLen} }
func (g *graphOp) X() BufferRange { return BufferRange{g.r, g.rOff, g.rLen} }

// Value is a fill's byte; A an axpy's factor.
func (g *graphOp) Value() byte { return g.value }
func (g *graphOp) A() uint32   { return g.a }

// BufferRange is a range of the buffer with id ID (Probe.BufferID).
type BufferRange struct {
	ID       uint32
	Off, Len int64
}

// Kernel returns op i of the capture as planned, its Kind 0 when it is not planned (a plan's
// caller then issues it on its own). It is the plan's own: not to be changed.
func (p *Plan) Kernel(i int) *PlannedKernel { return &p.ops[i] }

// Follows reports whether op i is on the thread and stream of op i-1 (false for op 0).
func (p *Plan) Follows(i int) bool { return p.follows[i] }

// Size is the size the plan resolved buffer id at (-1: it had none; 0: no op names it).
func (p *Plan) Size(id uint32) int64 {
	if int(id) < len(p.size) {
		return p.size[id]
	}
	return 0
}

// names is a probe's name table and its plans, made on first use.
type names struct {
	list  []string
	ids   map[string]uint32
	plans map[*Capture][]*Plan
}

// plansMu guards every probe's names: a probe's instances may run at once.
var plansMu sync.Mutex

// table returns p's name table, making it on first use; plansMu must be held.
func (p *Probe) table() *names {
	if p.names != nil {
		return p.names
	}
	t := &names{ids: map[string]uint32{}, plans: map[*Capture][]*Plan{}}
	add := func(n string) {
		if _, ok := t.ids[n]; n != "" && !ok {
			t.ids[n] = uint32(len(t.list))
			t.list = append(t.list, n)
		}
	}
	for _, b := range p.Buffers {
		add(b.Name)
	}
	var lists [][]*Op
	for _, st := range p.Stages() {
		lists = append(lists, st.Issued())
	}
	lists = append(lists, p.Replay.Each)
	for _, ops := range lists {
		for _, op := range ops {
			for _, n := range op.buffers() {
				add(n)
			}
		}
	}
	p.names = t
	return t
}

// bufferNames is p's name table: every buffer name it mentions, in the order of their ids.
func (p *Probe) bufferNames() []string {
	plansMu.Lock()
	defer plansMu.Unlock()
	return p.table().list
}

// BufferID is the id of a buffer name of p: its place in p's name table, the same in every
// oracle of p and in every plan. false for a name p does not mention.
func (p *Probe) BufferID(name string) (uint32, bool) {
	plansMu.Lock()
	defer plansMu.Unlock()
	id, ok := p.table().ids[name]
	return id, ok
}

// BufferIDs is how many names p's table holds: every id is below it.
func (p *Probe) BufferIDs() int { return len(p.bufferNames()) }

// Plan returns the plan of capture c at the sizes the oracle's buffers have now: one kept with
// the probe for those sizes, else one made now and kept.
func (o *Oracle) Plan(c *Capture) *Plan {
	plansMu.Lock()
	defer plansMu.Unlock()
	t := o.probe.table()
	sizeNow := func(id uint32) int64 {
		if o.bufs[id].made {
			return int64(len(o.data[id]))
		}
		return -1
	}
	kept := t.plans[c]
find:
	for _, p := range kept {
		for _, id := range p.used {
			if sizeNow(id) != p.size[id] {
				continue find
			}
		}
		return p
	}
	p := &Plan{capture: c, ops: make([]graphOp, len(c.Ops)), follows: make([]bool, len(c.Ops)),
		size: make([]int64, len(t.list))}
	seen := make([]bool, len(t.list))
	last := ""
	for i, op := range c.Ops {
		for _, n := range op.buffers() {
			if n == "" || n == last {
				continue // ops mostly name the buffer the op before named: no hashing
			}
			last = n
			if id, ok := t.ids[n]; ok && !seen[id] {
				seen[id] = true
				p.used = append(p.used, id)
				p.size[id] = sizeNow(id)
			}
		}
		p.follows[i] = i > 0 && op.Thread == c.Ops[i-1].Thread && op.Stream == c.Ops[i-1].Stream
		switch op.Kind {
		case OpFill, OpCopy, OpAxpy:
			if g, ok := o.graphOp(op); ok && op.Replays() {
				p.ops[i] = g
			}
		}
	}
	t.plans[c] = append(kept, p)
	return p
}

// Holds reports whether buffer id is live here at the size plan p resolved it at, its name not
// refused: a planned op whose buffers all are may be recorded as planned (CaptureBatch) instead of
// on its own (Capture).
func (o *Oracle) Holds(p *Plan, id uint32) bool {
	if int(id) >= len(o.bufs) || !o.bufs[id].live || int64(len(o.data[id])) != p.size[id] {
		return false
	}
	return len(o.refused) == 0 || !o.refused[o.probe.names.list[id]]
}

// CaptureBatch records ops [from, to) of plan p, each of which took effect and is planned over
// buffers the oracle Holds, into the graph of p's capture: what Capture would record for each,
// shared with the plan instead of copied.
func (o *Oracle) CaptureBatch(p *Plan, from, to int) {
	o.graphOf(p.capture.Name).Share(p.ops[from:to])
}
