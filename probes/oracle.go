package probes

import "encoding/binary"

// Oracle executes a probe's intended meaning on named host byte slices. It knows no addresses,
// streams or devices: buffers are values identified by name, a captured op refers to its buffers by
// name and is applied to whatever buffer has that name when a graph is launched. It is deliberately
// independent of the simulator's data model, so a bug in one cannot hide in the other.
//
// The engine drives it in step with the device: every op it issues is reported with whether it took
// effect (a rejected or refused op has none). An op issued inside a capture's ops list that the
// probe means to replay (Op.Replays: fill, copy and axpy by default, whatever stream they went to,
// and any of them or a write marked `intent: replay`) belongs to that capture's graph and applies on
// every launch of it; every other op, inside a capture or not, applies once when issued. Buffers
// are named, never addressed: a graph op applies to whatever buffer has its name when the graph is
// launched, at the ranges resolved when it was captured (clipped to the buffer's size then). A
// freed buffer becomes a ghost: graph ops may still read and write it, it is never checked. A
// buffer whose allocation was refused or rejected makes later ops naming it skipped. Host and
// device buffers, pooled or not, are alike here: where memory lives is the device's business.
type Oracle struct {
	bufs    map[string]*oracleBuffer
	order   []string // live buffers, in allocation order
	refused map[string]bool
	graphs  map[string]*[]graphOp // by pointer: appending an op looks the capture up once
	// recording is the graph of the capture named recordingOf, the last one an op was appended
	// to: a capture's ops come one after another, so its graph is looked up once, not per op.
	recording   *[]graphOp
	recordingOf string
	// epoch changes whenever a name may denote other bytes (an allocation, a grow): a graph op's
	// resolved slices are reused while their epoch is current (see resolve).
	epoch uint64
	// opsIn is how many ops each capture lists: its graph is sized for them at its first op.
	opsIn map[string]int
}

type oracleBuffer struct {
	data []byte
	init Pattern
	live bool
}

type graphOp struct {
	op *Op
	// The range the op writes and the first it reads (a copy's source, an axpy's x), as resolved
	// when it was captured: offsets and lengths in the buffers the op names (writtenBy, readBy).
	// A capture of 100,000 ops keeps 100,000 of these: no names of their own.
	wOff, wLen, rOff, rLen int64
	// Resolved at first use and again after the epoch changes: the kind, and the bytes the op
	// writes and reads (its spans clipped to the buffers' sizes then).
	epoch uint64
	kind  opCode
	// value is a fill's byte, a an axpy's factor: a replay reads them here, not through op, so
	// that replaying a graph of 100,000 ops walks its program and its buffers in order instead of
	// missing the cache on each op's record of the probe.
	value byte
	a     uint32
	w, r  []byte
}

// opCode is an op kind resolved from its name once, for the replay loop.
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
		epoch:   1,
		bufs:    map[string]*oracleBuffer{},
		refused: map[string]bool{},
		graphs:  map[string]*[]graphOp{},
		opsIn:   map[string]int{},
	}
	for _, c := range p.Captures {
		o.opsIn[c.Name] = len(c.Ops)
	}
	for _, b := range p.Buffers {
		o.allocate(b.Name, b.Bytes, b.Init)
	}
	return o
}

func (o *Oracle) allocate(name string, n int64, init Pattern) {
	o.bufs[name] = &oracleBuffer{data: init.Bytes(n), init: init, live: true}
	o.epoch++
	o.order = append(o.order, name)
	delete(o.refused, name)
}

// Size returns the current size of a buffer by name (live or ghost), -1 when it never existed.
func (o *Oracle) Size(name string) int64 {
	if b, ok := o.bufs[name]; ok {
		return int64(len(b.data))
	}
	return -1
}

// Skips reports whether op names a buffer whose allocation was refused or rejected: such an op is
// not issued and has no effect.
func (o *Oracle) Skips(op *Op) bool {
	if op.Kind == OpAlloc || len(o.refused) == 0 {
		return false
	}
	for _, name := range [...]string{op.Dst, op.Src, op.Y, op.X, op.Buffer} {
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
		b := o.bufs[op.Buffer]
		if b != nil && *op.Bytes > int64(len(b.data)) {
			b.data = b.init.Bytes(*op.Bytes)
			o.epoch++
		}
	case OpFill, OpCopy, OpAxpy, OpWrite:
		if g, ok := o.graphOp(op); ok {
			o.apply(&g)
		}
	}
}

func (o *Oracle) release(name string) {
	if b := o.bufs[name]; b != nil && b.live {
		b.live = false
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
		if o.recordingOf != capture {
			o.recording, o.recordingOf = o.graphs[capture], capture
			if o.recording == nil {
				o.recording = &[]graphOp{}
				*o.recording = make([]graphOp, 0, o.opsIn[capture])
				o.graphs[capture] = o.recording
			}
		}
		*o.recording = append(*o.recording, gop)
	}
}

// graphOp resolves a data op's ranges at the buffers' sizes now; false when they do not fit.
func (o *Oracle) graphOp(op *Op) (graphOp, bool) {
	var sp Spans
	if err := op.ResolveInto(o.Size, &sp); err != nil || sp.W == 0 {
		return graphOp{}, false
	}
	w, r := sp.Span[0], sp.Span[sp.W]
	return graphOp{op: op, wOff: w.Off, wLen: w.Len, rOff: r.Off, rLen: r.Len, value: op.Value, a: op.A}, true
}

// EndCapture drops the capture's graph when its end failed: there is nothing to replay.
func (o *Oracle) EndCapture(capture string, ok bool) {
	if !ok {
		delete(o.graphs, capture)
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
	ops := *g
	for i := range ops {
		o.apply(&ops[i])
	}
}

// apply executes a resolved data op. Spans beyond a buffer's current size (it was re-allocated
// smaller under the same name) are clipped: the intent covers only bytes that exist.
func (o *Oracle) apply(g *graphOp) {
	if g.epoch != o.epoch {
		o.resolve(g)
	}
	switch g.kind {
	case codeWrite:
		g.op.Pattern.Fill(g.w)
	case codeFill:
		setBytes(g.w, g.value)
	case codeCopy:
		copy(g.w, g.r)
	case codeAxpy:
		y, x, a := g.w, g.r, g.a
		n := min(len(y), len(x)) &^ 3
		y, x = y[:n], x[:n]
		for i := 0; i < n; i += 4 {
			v := a*binary.LittleEndian.Uint32(x[i:i+4]) + binary.LittleEndian.Uint32(y[i:i+4])
			binary.LittleEndian.PutUint32(y[i:i+4], v)
		}
	}
}

// resolve looks g's buffers up by name and clips its spans, for the current epoch.
func (o *Oracle) resolve(g *graphOp) {
	g.epoch, g.w, g.r = o.epoch, nil, nil
	switch g.op.Kind {
	case OpWrite:
		g.kind = codeWrite
	case OpFill:
		g.kind = codeFill
	case OpCopy:
		g.kind = codeCopy
	case OpAxpy:
		g.kind = codeAxpy
	default:
		g.kind = codeOther
		return
	}
	g.w = o.span(writtenBy(g.op), g.wOff, g.wLen)
	if g.kind == codeCopy || g.kind == codeAxpy {
		g.r = o.span(readBy(g.op), g.rOff, g.rLen)
	}
}

// setBytes sets every byte of b to v: memclr for zero; else 8-byte stores up to 64 bytes (a
// 64-byte fill is 8 stores, where doubling from one byte was a store and six copy calls), then
// doubling copies from those 64 bytes (memmove speed). The simulator has its own: the oracle
// shares no code with the device it checks.
func setBytes(b []byte, v byte) {
	if v == 0 {
		clear(b)
		return
	}
	w := uint64(v) * 0x0101010101010101
	short := b[:min(len(b), 64)]
	for len(short) >= 8 {
		binary.LittleEndian.PutUint64(short, w)
		short = short[8:]
	}
	for i := range short {
		short[i] = v
	}
	for j := 64; j < len(b); j *= 2 {
		copy(b[j:], b[:j])
	}
}

func (o *Oracle) span(buffer string, off, n int64) []byte {
	b := o.bufs[buffer]
	if b == nil {
		return nil
	}
	lo, hi := min(off, int64(len(b.data))), min(off+n, int64(len(b.data)))
	return b.data[lo:hi]
}

// writtenBy is the buffer a data op writes (the first span Op.ResolveInto gives), readBy the
// first it reads: the names a graph op's ranges lie in.
func writtenBy(op *Op) string {
	if op.Kind == OpAxpy {
		return op.Y
	}
	return op.Dst
}

func readBy(op *Op) string {
	if op.Kind == OpAxpy {
		return op.X
	}
	return op.Src
}

// Live lists the live buffers in allocation order.
func (o *Oracle) Live() []string { return append([]string(nil), o.order...) }

// Bytes returns the intended contents of a live buffer.
func (o *Oracle) Bytes(name string) ([]byte, bool) {
	b := o.bufs[name]
	if b == nil || !b.live {
		return nil, false
	}
	return b.data, true
}
