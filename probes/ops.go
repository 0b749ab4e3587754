package probes

import (
	"math"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/replaycheck/replaycheck/runtime"
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
}

// opKinds lists every op in the order of PROBE-LANGUAGE.md.
var opKinds = []OpKind{OpFill, OpCopy, OpAxpy, OpWrite, OpRead, OpRecord, OpWait, OpSync, OpSyncDevice,
	OpQuery, OpSyncEvent, OpAlloc, OpFree, OpGrow, OpExchangeMode}

// onStream reports whether the op names a stream (and so gets the phase's default stream).
func (k OpKind) onStream() bool {
	switch k {
	case OpFill, OpCopy, OpAxpy, OpRecord, OpWait, OpSync:
		return true
	}
	return false
}

// touchesData reports whether the op is enqueued work that reads or writes device buffers: the
// ops the race check orders.
func (k OpKind) touchesData() bool {
	return k == OpFill || k == OpCopy || k == OpAxpy
}

// ops reads a list of ops.
func (l *loader) ops(n *yaml.Node, what string) []*Op {
	var out []*Op
	for _, item := range l.list(n, what) {
		if op := l.op(item); op != nil {
			out = append(out, op)
		}
	}
	return out
}

// op reads one op: a one-key map from the op's kind to its fields.
func (l *loader) op(n *yaml.Node) *Op {
	n = deref(n)
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		l.errorf(l.at(n), RuleBadValue, "an op is a one-key map such as {fill: {dst: buf, value: 0}}, got %s", describe(n))
		return nil
	}
	k, v := deref(n.Content[0]), deref(n.Content[1])
	kind := OpKind(k.Value)
	spec, known := opFields[kind]
	if k.Kind != yaml.ScalarNode || !known {
		names := make([]string, len(opKinds))
		for i, o := range opKinds {
			names[i] = string(o)
		}
		l.errorf(l.at(k), RuleUnknownKey, "unknown op %s%s (want one of %s)", describe(k), didYouMean(k.Value, names), strings.Join(names, ", "))
		return nil
	}
	op := &Op{Pos: l.at(k), Kind: kind}
	if isNull(v) {
		// `- sync-device:` has no fields; what it lacks is reported at the op.
		v = &yaml.Node{Kind: yaml.MappingNode, Line: k.Line, Column: k.Column}
	}
	what := string(kind)
	f, ok := l.fields(v, what, spec.keys, spec.keys[:spec.required]...)
	if !ok {
		return op
	}
	for key, e := range f {
		val := deref(e.val)
		l.mark(op, key, val)
		field := what + " " + key
		switch key {
		case "dst":
			op.Dst, _ = l.scalar(val, field)
		case "src":
			op.Src, _ = l.scalar(val, field)
		case "y":
			op.Y, _ = l.scalar(val, field)
		case "x":
			op.X, _ = l.scalar(val, field)
		case "buffer":
			if kind == OpAlloc {
				op.Buffer, _ = l.name(val, "buffer name")
			} else {
				op.Buffer, _ = l.scalar(val, field)
			}
		case "event":
			op.Event, _ = l.scalar(val, field)
		case "stream":
			op.Stream, _ = l.scalar(val, field)
		case "thread":
			op.Thread = l.thread(val, field)
		case "value":
			if kind == OpFill {
				b, _ := l.unsigned(val, field, math.MaxUint8)
				op.Value = byte(b)
			} else {
				op.Pattern, _ = l.pattern(val, field)
			}
		case "init":
			op.Pattern, _ = l.pattern(val, field)
		case "a":
			a, _ := l.unsigned(val, field, math.MaxUint32)
			op.A = uint32(a)
		case "slot":
			s, _ := l.oneOf(val, field, slotNames)
			op.Slot = Slot(s)
		case "host":
			op.Place.Host = l.host(val, field)
		case "pool":
			op.Place.Pool, _ = l.scalar(val, field)
		case "intent":
			s, _ := l.oneOf(val, field, []string{string(IntentReplay), string(IntentOnce)})
			op.Intent = Intent(s)
		case "mode":
			if s, ok := l.oneOf(val, field, captureModeNames()); ok {
				op.Mode, _ = runtime.ParseCaptureMode(s)
			}
		case "bytes":
			var sz int64
			var ok bool
			switch kind {
			case OpAlloc:
				sz, ok = l.bufferSize(val, field, 1)
			case OpGrow:
				sz, ok = l.bufferSize(val, field, 0)
			default:
				sz, ok = l.size(val, field)
			}
			if ok {
				op.Bytes = &sz
			}
		case "offset", "dst-offset", "src-offset":
			sz, ok := l.size(val, field)
			if !ok {
				break
			}
			switch key {
			case "offset":
				op.Offset = &sz
			case "dst-offset":
				op.DstOffset = &sz
			case "src-offset":
				op.SrcOffset = &sz
			}
		}
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
