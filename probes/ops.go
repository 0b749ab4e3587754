package probes

import (
	"math"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/replaycheck/replaycheck/device"
)

// opFields lists each op's keys, the required ones first (PROBE-LANGUAGE.md, Ops).
var opFields = map[OpKind]struct {
	keys     []string
	required int // keys[:required] are required
}{
	OpFill:         {[]string{"dst", "value", "offset", "bytes", "stream", "thread", "intent"}, 2},
	OpCopy:         {[]string{"dst", "src", "bytes", "dst-offset", "src-offset", "stream", "thread", "intent"}, 2},
	OpAxpy:         {[]string{"y", "x", "a", "stream", "thread", "intent"}, 3},
	OpWrite:        {[]string{"dst", "value", "thread", "intent"}, 2},
	OpRead:         {[]string{"src", "thread"}, 1},
	OpRecord:       {[]string{"event", "stream", "thread"}, 1},
	OpWait:         {[]string{"event", "stream", "thread"}, 1},
	OpSync:         {[]string{"stream", "thread"}, 0},
	OpSyncDevice:   {[]string{"thread"}, 0},
	OpQuery:        {[]string{"event", "thread"}, 1},
	OpSyncEvent:    {[]string{"event", "thread"}, 1},
	OpAlloc:        {[]string{"buffer", "bytes", "init", "slot", "host", "pool", "thread"}, 2},
	OpFree:         {[]string{"buffer", "thread"}, 1},
	OpGrow:         {[]string{"buffer", "bytes", "thread"}, 2},
	OpExchangeMode: {[]string{"mode", "thread"}, 1},
	OpDestroy:      {[]string{"capture", "thread"}, 1},
}

// maxOpKeys is the most keys an op has (copy's).
const maxOpKeys = 8

// opKinds lists every op in the order of PROBE-LANGUAGE.md.
var opKinds = []OpKind{OpFill, OpCopy, OpAxpy, OpWrite, OpRead, OpRecord, OpWait, OpSync, OpSyncDevice,
	OpQuery, OpSyncEvent, OpAlloc, OpFree, OpGrow, OpExchangeMode, OpDestroy}

// onStream reports whether the op names a stream (and so gets the phase's default stream).
func (k OpKind) onStream() bool {
	switch k {
	case OpFill, OpCopy, OpAxpy, OpRecord, OpWait, OpSync:
		return true
	}
	return false
}

// TouchesData reports whether the op is enqueued work that reads or writes device buffers (fill,
// copy, axpy): the ops the race check orders, and those a graph replays by default.
func (k OpKind) TouchesData() bool {
	return k == OpFill || k == OpCopy || k == OpAxpy
}

// ops reads a list of ops. An op reached through an alias, of the list or of the op, is placed at
// the alias (loader.via): where it is issued.
func (l *loader) ops(n *yaml.Node, what string) []*Op {
	var out []*Op
	saved, outer := l.via, l.via
	if n.Kind == yaml.AliasNode {
		outer = l.at(n)
	}
	defer func() { l.via = saved }()
	// Not through(): no closure for each of up to MaxOps ops.
	for _, item := range l.list(n, what) {
		l.via = outer
		if item.Kind == yaml.AliasNode {
			l.via = l.at(item)
		}
		if op := l.op(item); op != nil {
			out = append(out, op)
		}
	}
	return out
}

// op reads one op: a one-key map from the op's kind to its fields.
func (l *loader) op(n *yaml.Node) *Op {
	k, v, ok := l.opKind(n)
	if !ok {
		return nil
	}
	kind := OpKind(k.Value)
	spec := opFields[kind]
	op := &Op{Pos: l.placed(k), Kind: kind}
	if raw := deref(n).Content[1]; raw.Kind == yaml.AliasNode && l.via == (Pos{}) {
		// `fill: *fields`: the fields are written at the anchor and used here (ops resets via).
		l.via = l.at(raw)
	}
	if isNull(v) {
		// `- sync-device:` has no fields; what it lacks is reported at the op.
		v = &yaml.Node{Kind: yaml.MappingNode, Line: k.Line, Column: k.Column}
	}
	what := string(kind)
	f, ok := l.fields(v, what, spec.keys, spec.keys[:spec.required]...)
	if !ok {
		return op
	}
	for i, key := range spec.keys {
		e, ok := f[key]
		if !ok {
			continue
		}
		at := l.placed(e.val)
		op.at[i].line, op.at[i].col = int32(at.Line), int32(at.Col)
		l.opField(op, key, deref(e.val), what+" "+key)
	}
	if kind == OpAlloc {
		if op.Slot == "" {
			op.Slot = SlotPlain
		}
		if op.Pattern.Kind == "" {
			op.Pattern.Kind = PatZero
		}
	}
	return op
}

// opKind reads the shape of an op: a one-key map whose key names a known op. It returns the key
// and the value holding the op's fields; ok is false after a problem.
func (l *loader) opKind(n *yaml.Node) (k, v *yaml.Node, ok bool) {
	n = deref(n)
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		l.errorf(l.at(n), RuleBadValue, "an op is a one-key map such as {fill: {dst: buf, value: 0}}, got %s", describe(n))
		return nil, nil, false
	}
	k, v = deref(n.Content[0]), deref(n.Content[1])
	if _, known := opFields[OpKind(k.Value)]; k.Kind != yaml.ScalarNode || !known {
		names := texts(opKinds)
		l.errorf(l.at(k), RuleUnknownKey, "unknown op %s%s (want one of %s)", describe(k), didYouMean(k.Value, names), strings.Join(names, ", "))
		return nil, nil, false
	}
	return k, v, true
}

// opField reads the field key of op from val; field names it in messages ("fill dst").
func (l *loader) opField(op *Op, key string, val *yaml.Node, field string) {
	if ref := refField(op, key); ref != nil {
		*ref, _ = l.scalar(val, field)
		return
	}
	switch key {
	case "buffer": // an alloc's: the name of a new buffer
		op.Buffer, _ = l.name(val, "buffer name")
	case "thread", "host", "slot", "intent", "mode":
		l.opChoice(op, key, val, field)
	case "value", "init", "a":
		l.opValue(op, key, val, field)
	case "bytes", "offset", "dst-offset", "src-offset":
		l.opSize(op, key, val, field)
	}
}

// refField returns the field of op that key names when it refers to something by name (a buffer
// the op uses, an event, a stream, a pool); nil for any other key.
func refField(op *Op, key string) *string {
	switch key {
	case "dst":
		return &op.Dst
	case "src":
		return &op.Src
	case "y":
		return &op.Y
	case "x":
		return &op.X
	case "buffer":
		if op.Kind != OpAlloc {
			return &op.Buffer
		}
	case "event":
		return &op.Event
	case "stream":
		return &op.Stream
	case "pool":
		return &op.Place.Pool
	case "capture":
		return &op.Capture
	}
	return nil
}

// opChoice reads a field whose value comes from a closed set: thread, host, slot, intent, mode.
func (l *loader) opChoice(op *Op, key string, val *yaml.Node, field string) {
	switch key {
	case "thread":
		op.Thread = l.thread(val, field)
	case "host":
		op.Place.Host = l.host(val, field)
	case "slot":
		s, _ := l.oneOf(val, field, slotNames)
		op.Slot = Slot(s)
	case "intent":
		s, _ := l.oneOf(val, field, []string{string(IntentReplay), string(IntentOnce)})
		op.Intent = Intent(s)
	case "mode":
		if s, ok := l.oneOf(val, field, captureModeNames()); ok {
			op.Mode, _ = device.ParseCaptureMode(s)
		}
	}
}

// opValue reads what an op writes: a fill's byte, the pattern of a write or an alloc's init, or
// axpy's factor a.
func (l *loader) opValue(op *Op, key string, val *yaml.Node, field string) {
	switch {
	case key == "a":
		a, _ := l.unsigned(val, field, math.MaxUint32)
		op.A = uint32(a)
	case key == "value" && op.Kind == OpFill:
		b, _ := l.unsigned(val, field, math.MaxUint8)
		op.Value = byte(b)
	default: // a write's value, an alloc's init
		op.Pattern, _ = l.pattern(val, field)
	}
}

// opSize reads a byte count: the size an alloc or a grow asks for, held to the buffer limits, or
// another op's bytes or offsets.
func (l *loader) opSize(op *Op, key string, val *yaml.Node, field string) {
	var sz int64
	var ok bool
	switch {
	case key == "bytes" && op.Kind == OpAlloc:
		sz, ok = l.bufferSize(val, field, 1)
	case key == "bytes" && op.Kind == OpGrow:
		sz, ok = l.bufferSize(val, field, 0)
	default:
		sz, ok = l.size(val, field)
	}
	if !ok {
		return
	}
	p := l.sizes.Add(sz)
	switch key {
	case "bytes":
		op.Bytes = p
	case "offset":
		op.Offset = p
	case "dst-offset":
		op.DstOffset = p
	case "src-offset":
		op.SrcOffset = p
	}
}
