package probes

import (
	"encoding/binary"

	"github.com/replaycheck/replaycheck/internal/chunk"
)

// Oracle executes a probe's intended meaning on named host byte slices. It knows no addresses,
// streams or devices: buffers are values identified by name, a captured op refers to its buffers by
// name and is applied to whatever buffer has that name when a graph is launched. It is deliberately
// independent of the simulator's data model, so a bug in one cannot hide in the other.
//
// The engine drives it in step with the device: every op it issues is reported with whether it took
// effect (a rejected or refused op has none). An op issued inside a capture's ops list that the
// probe means to replay (Op.Replays: fill, copy and axpy by default, whatever stream they went to,
// and any of them or a write marked `intent: replay`) belongs to that capture's graph and applies
// on every launch of it; every other op, inside a capture or not, applies once when issued. Buffers
// are named, never addressed: a graph op applies to whatever buffer has its name when the graph is
// launched, at the ranges resolved when it was captured (clipped to the buffer's size then). A
// freed buffer becomes a ghost: graph ops may still read and write it, it is never checked. A
// buffer whose allocation was refused or rejected makes later ops naming it skipped. Host and
// device buffers, pooled or not, are alike here: where memory lives is the device's business.
type Oracle struct {
	// Buffers are interned: a name gets an id the first time it is looked up, and the id keeps
	// it for good, whatever is allocated, grown or freed under it. A graph op holds ids, so that
	// applying it indexes a slice instead of hashing names, and holds no pointers, so that a
	// program of 100,000 ops is neither scanned by the collector nor written with barriers.
	ids  map[string]uint32
	bufs []oracleBuffer // by id
	// data is each buffer's bytes by id (nil while the name has none): what applying an op reads.
	data [][]byte
	// last is the name last interned and its id (valid once bufs is not empty): consecutive ops
	// mostly name the same buffer, and a capture then hashes no name.
	last   string
	lastID uint32

	order   []string // live buffers, in allocation order
	refused map[string]bool
	graphs  map[string]*chunk.Log[graphOp] // by pointer: appending an op looks the capture up once
	// recording is the graph of the capture named recordingOf, the last one an op was appended
	// to: a capture's ops come one after another, so its graph is looked up once, not per op.
	recording   *chunk.Log[graphOp]
	recordingOf string
	// patterns holds the patterns of the writes in graphs (graphOp.a indexes it): writes are
	// rare, the other ops keep their whole meaning in the graphOp.
	patterns []Pattern
	// opsIn is how many ops each capture lists: the hint of its graph's log (chunk.Log).
	opsIn map[string]int
	// probe is the probe the oracle runs: its name table gives the first ids, and its plans
	// (Plan) hold graph ops that mean the same buffers here.
	probe *Probe
}

// oracleBuffer is what a name holds besides its bytes: nothing while made is false (the name
// never had a buffer), else the init its bytes are re-created with on a grow, and whether it is
// live or a ghost.
type oracleBuffer struct {
	init Pattern
	made bool
	live bool
}

// graphOp is a data op as resolved when it was captured: what it does and the ranges it writes
// and first reads (a copy's source, an axpy's x), offsets and lengths in the buffers with ids w
// and r (those of its first two spans, Op.ResolveInto). It is applied to the bytes those ids have
// at launch. A capture of 100,000 ops keeps 100,000 of these: 48 bytes each and without pointers,
// so that recording one is a plain store.
type graphOp struct {
	wOff, wLen, rOff, rLen int64
	w, r                   uint32
	// a is an axpy's factor, or a write's pattern's index in Oracle.patterns; value a fill's byte.
	a     uint32
	kind  opCode
	value byte
}

// opCode is an op kind resolved from its name once, for the replay loop (codeOther: none).
type opCode uint8

const (
	codeOther opCode = iota
	codeWrite
	codeFill
	codeCopy
	codeAxpy
)

// NewOracle starts an oracle with p's declared buffers allocated and initialised.
func NewOracle(p *Probe) *Oracle {
	o := &Oracle{
		ids:     map[string]uint32{},
		refused: map[string]bool{},
		graphs:  map[string]*chunk.Log[graphOp]{},
		opsIn:   map[string]int{},
		probe:   p,
	}
	for _, name := range p.bufferNames() {
		o.id(name) // the probe's ids, in every oracle of it (Plan)
	}
	for _, c := range p.Captures {
		o.opsIn[c.Name] = len(c.Ops)
	}
	for _, b := range p.Buffers {
		o.allocate(b.Name, b.Bytes, b.Init)
	}
	return o
}

// id returns the id of name, giving it one (with no buffer yet) when it has none.
func (o *Oracle) id(name string) uint32 {
	if name == o.last && len(o.bufs) > 0 {
		return o.lastID
	}
	id, ok := o.ids[name]
	if !ok {
		id = uint32(len(o.bufs))
		o.ids[name] = id
		o.bufs = append(o.bufs, oracleBuffer{})
		o.data = append(o.data, nil)
	}
	o.last, o.lastID = name, id
	return id
}

// buffer returns the id of the buffer that has name, false when it never existed.
func (o *Oracle) buffer(name string) (uint32, bool) {
	id, ok := o.ids[name]
	return id, ok && o.bufs[id].made
}

func (o *Oracle) allocate(name string, n int64, init Pattern) {
	id := o.id(name) // first: it may grow o.bufs
	o.bufs[id] = oracleBuffer{init: init, made: true, live: true}
	o.data[id] = init.Bytes(n)
	o.order = append(o.order, name)
	delete(o.refused, name)
}

// Size returns the current size of a buffer by name (live or ghost), -1 when it never existed.
func (o *Oracle) Size(name string) int64 {
	if id, ok := o.buffer(name); ok {
		return int64(len(o.data[id]))
	}
	return -1
}

// Skips reports whether op names a buffer whose allocation was refused or rejected: such an op is
// not issued and has no effect.
func (o *Oracle) Skips(op *Op) bool {
	if op.Kind == OpAlloc || len(o.refused) == 0 {
		return false
	}
	for _, name := range op.buffers() {
		if name != "" && o.refused[name] {
			return true
		}
	}
	return false
}

// Eager applies an op issued outside any graph. took is false when the platform rejected it or a
// guard refused it.
func (o *Oracle) Eager(op *Op, took bool) {
	if op.Kind == OpAlloc {
		if took {
			o.allocate(op.Buffer, *op.Bytes, op.Pattern)
		} else {
			o.refused[op.Buffer] = true
		}
		return
	}
	if !took {
		return
	}
	switch op.Kind {
	case OpFree:
		o.release(op.Buffer)
	case OpGrow:
		if id, ok := o.buffer(op.Buffer); ok && *op.Bytes > int64(len(o.data[id])) {
			o.data[id] = o.bufs[id].init.Bytes(*op.Bytes)
		}
	case OpFill, OpCopy, OpAxpy, OpWrite:
		if g, ok := o.graphOp(op); ok {
			if g.kind == codeWrite {
				// Applied once, from the op's own pattern: patterns keeps only graphs' writes.
				op.Pattern.Fill(span(o.data, g.w, g.wOff, g.wLen))
			} else {
				apply(&g, o.data, nil)
			}
		}
	}
}

func (o *Oracle) release(name string) {
	if id, ok := o.buffer(name); ok && o.bufs[id].live {
		o.bufs[id].live = false
		for i, n := range o.order {
			if n == name {
				o.order = append(o.order[:i], o.order[i+1:]...)
				break
			}
		}
	}
}

// Capture records op into capture's graph when the probe means it to replay (and it took effect),
// and applies it once otherwise. Ranges are resolved now, with the sizes buffers have at capture.
func (o *Oracle) Capture(capture string, op *Op, took bool) {
	if !op.Replays() {
		o.Eager(op, took)
		return
	}
	if !took {
		return
	}
	if gop, ok := o.graphOp(op); ok {
		if gop.kind == codeWrite {
			gop.a = uint32(len(o.patterns))
			o.patterns = append(o.patterns, op.Pattern)
		}
		o.graphOf(capture).Add(gop)
	}
}

// graphOf is the graph capture's ops are recorded into, made on first use.
func (o *Oracle) graphOf(capture string) *chunk.Log[graphOp] {
	if o.recordingOf != capture {
		o.recording, o.recordingOf = o.graphs[capture], capture
		if o.recording == nil {
			o.recording = &chunk.Log[graphOp]{Hint: o.opsIn[capture]}
			o.graphs[capture] = o.recording
		}
	}
	return o.recording
}

// graphOp resolves a data op's ranges at the buffers' sizes now; false when they do not fit. A
// write's pattern is left to the caller.
func (o *Oracle) graphOp(op *Op) (graphOp, bool) {
	var sp Spans
	if err := op.ResolveInto(o.sizeOf, &sp); err != nil || sp.W == 0 {
		return graphOp{}, false
	}
	w, r := sp.Span[0], sp.Span[sp.W]
	if w.Len < 0 || r.Len < 0 {
		return graphOp{}, false // a write or read of a name that never had a buffer: no bytes
	}
	g := graphOp{w: o.id(w.Buffer), wOff: w.Off, wLen: w.Len, rOff: r.Off, rLen: r.Len, value: op.Value, a: op.A}
	switch op.Kind {
	case OpWrite:
		g.kind = codeWrite
	case OpFill:
		g.kind = codeFill
	case OpCopy:
		g.kind, g.r = codeCopy, o.id(r.Buffer)
	case OpAxpy:
		g.kind, g.r = codeAxpy, o.id(r.Buffer)
	}
	return g, true
}

// sizeOf is Size for resolving an op: it interns the name, so that the op's ids are then found
// without hashing it again.
func (o *Oracle) sizeOf(name string) int64 {
	id := o.id(name) // first: it may grow o.bufs
	if o.bufs[id].made {
		return int64(len(o.data[id]))
	}
	return -1
}

// EndCapture drops the capture's graph when its end failed: there is nothing to replay, and a
// capture of the same name after it records a graph of its own.
func (o *Oracle) EndCapture(capture string, ok bool) {
	if !ok {
		delete(o.graphs, capture)
		if o.recordingOf == capture {
			o.recording, o.recordingOf = nil, ""
		}
	}
}

// Launch applies one replay of capture's graph; took is false when the launch was refused or
// rejected.
func (o *Oracle) Launch(capture string, took bool) {
	if !took {
		return
	}
	g := o.graphs[capture]
	if g == nil {
		return
	}
	data, patterns := o.data, o.patterns
	for ops := range g.Blocks() {
		for i := range ops {
			apply(&ops[i], data, patterns)
		}
	}
}

// apply executes a resolved data op on the bytes the buffers with its ids have now (data, by id;
// patterns, a write's). Spans beyond a buffer's current size (it was re-allocated smaller under
// the same name) are clipped: the intent covers only bytes that exist.
func apply(g *graphOp, data [][]byte, patterns []Pattern) {
	switch g.kind {
	case codeWrite:
		patterns[g.a].Fill(span(data, g.w, g.wOff, g.wLen))
	case codeFill:
		setBytes(span(data, g.w, g.wOff, g.wLen), g.value)
	case codeCopy:
		copy(span(data, g.w, g.wOff, g.wLen), span(data, g.r, g.rOff, g.rLen))
	case codeAxpy:
		y, x, a := span(data, g.w, g.wOff, g.wLen), span(data, g.r, g.rOff, g.rLen), g.a
		n := min(len(y), len(x)) &^ 3
		y, x = y[:n], x[:n]
		for i := 0; i < n; i += 4 {
			v := a*binary.LittleEndian.Uint32(x[i:i+4]) + binary.LittleEndian.Uint32(y[i:i+4])
			binary.LittleEndian.PutUint32(y[i:i+4], v)
		}
	}
}

// setBytes sets every byte of b to v, one byte at a time: the obviously right fill. The oracle
// shares no code with the device it checks, and no cleverness either: the simulator's fill is the
// fast one (8-byte stores, doubling copies), and a bug there must not be one the oracle agrees
// with.
func setBytes(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}

// span is off, n (n >= 0) of the bytes of the buffer with id, clipped to their size now. The
// common case, a buffer no smaller than at capture, is a predicted branch: clipping every span
// with min made a replay of 64-byte fills about a tenth slower.
func span(data [][]byte, id uint32, off, n int64) []byte {
	b := data[id]
	if end := off + n; end <= int64(len(b)) {
		return b[off:end]
	}
	return b[min(off, int64(len(b))):]
}

// Live lists the live buffers in allocation order.
func (o *Oracle) Live() []string { return append([]string(nil), o.order...) }

// Bytes returns the intended contents of a live buffer.
func (o *Oracle) Bytes(name string) ([]byte, bool) {
	id, ok := o.buffer(name)
	if !ok || !o.bufs[id].live {
		return nil, false
	}
	return o.data[id], true
}
