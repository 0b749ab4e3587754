package watch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"
)

// Event is one line of the event stream (docs/watch-events.md), parsed. Only the fields of its
// kind are set; the others are zero.
type Event struct {
	Name  string // hello, stack, alloc, free, pool-private, begin, join, op, mode, end, ...
	PID   int
	TID   int
	Call  string // the entry point the program reached
	Stack int    // a stack id sent earlier by the same process; 0: none
	// Conn numbers the connection the event came over, from 1 (0: unknown, as in a hand-written
	// stream). Each process image has a connection of its own, so it tells a forked child from
	// the image it exec'd, whichever hello is read first. replaycheck adds it to recorded streams.
	Conn int

	// hello
	PPID    int
	Exe     string
	Backend string
	Refuse  bool
	Version int
	Fork    bool

	// stack
	ID     int
	Frames []RawFrame

	// alloc, free, pool-private
	Addr uint64
	Size uint64
	Kind string // device, host, async, pool
	Pool uint64

	// Stream is normalised: "0x…" in lower case without leading zeros, or "ptds:<tid>".
	Stream  string
	Capture int
	Mode    string // begin, mode: global, thread-local, relaxed
	// EventHandle is a join's, record's, wait's or sync's event (CUevent, aclrtEvent).
	EventHandle uint64

	// op
	TCap     int
	What     string // op: copy, memset, kernel; sync: device, stream, event
	Writes   []Span
	Reads    []Span
	Func     uint64
	Args     []Arg
	NoLayout bool

	// end, instantiate, update, launch, destroy-*
	Graph   uint64
	Exec    uint64
	OK      bool
	Stale   bool
	Refused bool
	// Repeat is how many launches in a row the event stands for (n=; 0 when absent: one).
	Repeat int

	// note
	Text string
}

// Span is a range an op names: w=ADDR+BYTES or r=ADDR+BYTES.
type Span struct {
	Addr, Bytes uint64
}

// Arg is a kernel argument value that may be a pointer: arg=INDEX:OFFSET:VALUE.
type Arg struct {
	Index  int
	Offset int
	Value  uint64
}

// RawFrame is one frame of a stack event, as the interposer sent it.
type RawFrame struct {
	PC, Base uint64
	Object   string
	Symbol   string // dladdr's symbol, empty when none
}

// fieldSet says which keys an event kind requires and which it may have; others are ignored.
type fieldSet struct {
	required []string
	optional []string
}

// callFields are on every event that comes from an intercepted call.
var callFields = []string{"pid", "tid", "call", "stack"}

func withCall(keys ...string) []string { return append(append([]string{}, callFields...), keys...) }

// events are the event kinds and their fields (docs/watch-events.md, "Events").
var events = map[string]fieldSet{
	"hello":         {required: []string{"pid", "tid", "ppid", "exe", "backend", "refuse", "version"}, optional: []string{"fork"}},
	"stack":         {required: []string{"pid", "id", "frames"}},
	"alloc":         {required: withCall("addr", "size", "kind", "pool", "stream")},
	"free":          {required: withCall("addr", "kind", "pool", "stream")},
	"pool-private":  {required: []string{"pid", "tid", "pool"}, optional: []string{"call", "stack"}},
	"begin":         {required: withCall("stream", "capture", "mode")},
	"join":          {required: withCall("stream", "capture", "event")},
	"op":            {required: withCall("stream", "capture", "tcap", "what"), optional: []string{"w", "r", "func", "arg", "nolayout"}},
	"mode":          {required: withCall("mode")},
	"end":           {required: withCall("stream", "capture", "graph", "ok")},
	"instantiate":   {required: withCall("graph", "exec")},
	"update":        {required: withCall("exec", "graph", "ok")},
	"launch":        {required: withCall("exec", "stream", "stale", "refused"), optional: []string{"n"}},
	"destroy-exec":  {required: withCall("exec")},
	"destroy-graph": {required: withCall("graph")},
	"record":        {required: withCall("event", "stream")},
	"wait":          {required: withCall("stream", "event")},
	"sync":          {required: withCall("what"), optional: []string{"stream", "event"}},
	"note":          {required: []string{"pid", "tid", "text"}, optional: []string{"call", "stack"}},
}

// repeated are the keys an event may carry more than once.
var repeated = map[string]bool{"w": true, "r": true, "arg": true}

// The parser's tables: every key an event kind has gets a bit, and each kind its required and
// known keys as masks, so a line parses without a map of its own (the checker reads tens of
// thousands of events a second).
var (
	keyBit   = map[string]uint64{}
	keyNames []string
	specs    = map[string]spec{}
)

type spec struct {
	required, known uint64
	order           []int // key indexes, required then optional: the order fields are parsed in
	nrequired       int   // order[:nrequired] are the required keys
}

func init() {
	index := func(k string) int {
		if _, ok := keyBit[k]; !ok {
			keyBit[k] = 1 << len(keyNames)
			keyNames = append(keyNames, k)
		}
		return bits.TrailingZeros64(keyBit[k])
	}
	connBit := uint64(1) << index("conn")
	for name, set := range events {
		var sp spec
		sp.known |= connBit
		for _, k := range set.required {
			i := index(k)
			sp.required |= 1 << i
			sp.known |= 1 << i
			sp.order = append(sp.order, i)
			sp.nrequired++
		}
		for _, k := range set.optional {
			i := index(k)
			sp.known |= 1 << i
			sp.order = append(sp.order, i)
		}
		specs[name] = sp
	}
	if len(keyNames) > 64 {
		panic("watch: more than 64 event keys")
	}
}

// ParseEvent parses one line of the stream (with or without its newline). An unknown event name,
// a missing required field, a repeated field or a value that does not parse is an error naming the
// event and the field; keys the event kind does not have are ignored.
func ParseEvent(line []byte) (Event, error) {
	s := strings.TrimRight(string(line), "\r\n")
	name, rest, _ := strings.Cut(s, " ")
	if name == "" {
		return Event{}, errors.New("empty line where an event was expected")
	}
	sp, ok := specs[name]
	if !ok {
		return Event{}, fmt.Errorf("unknown event %q", name)
	}
	var (
		vals [64]string
		seen uint64
		reps []struct {
			key int
			v   string
		}
	)
	for rest != "" {
		var w string
		w, rest, _ = strings.Cut(rest, " ")
		if w == "" {
			return Event{}, fmt.Errorf("%s: two spaces in a row (fields are separated by one)", name)
		}
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			return Event{}, fmt.Errorf("%s: %q is not key=value", name, w)
		}
		bit := keyBit[k]
		if sp.known&bit == 0 {
			continue // a newer interposer's key
		}
		i := bits.TrailingZeros64(bit)
		if repeated[k] {
			reps = append(reps, struct {
				key int
				v   string
			}{i, v})
		} else if seen&bit != 0 {
			return Event{}, fmt.Errorf("%s: field %s given twice", name, k)
		}
		vals[i] = v
		seen |= bit
	}
	if missing := sp.required &^ seen; missing != 0 {
		for _, i := range sp.order[:sp.nrequired] {
			if missing&(1<<i) != 0 {
				return Event{}, fmt.Errorf("%s: missing field %s", name, keyNames[i])
			}
		}
	}
	e := Event{Name: name}
	p := parser{event: name}
	for _, i := range sp.order {
		k := keyNames[i]
		switch {
		case seen&(1<<i) == 0:
		case repeated[k]:
			for _, r := range reps {
				if r.key == i {
					p.field(&e, k, r.v)
				}
			}
		default:
			p.field(&e, k, vals[i])
		}
	}
	if bit := keyBit["conn"]; seen&bit != 0 {
		p.field(&e, "conn", vals[bits.TrailingZeros64(bit)])
	}
	if p.err != nil {
		return Event{}, p.err
	}
	has := func(k string) bool { return seen&keyBit[k] != 0 }
	if err := check(&e, has); err != nil {
		return Event{}, err
	}
	return e, nil
}

// parser parses field values, keeping the first error.
type parser struct {
	event string
	err   error
}

func (p *parser) fail(key, v, want string) {
	if p.err == nil {
		p.err = fmt.Errorf("%s: field %s: %q is not %s", p.event, key, v, want)
	}
}

func (p *parser) int(key, v string) int {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		p.fail(key, v, "a decimal number")
	}
	return n
}

func (p *parser) uint(key, v string) uint64 {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		p.fail(key, v, "a decimal number")
	}
	return n
}

func (p *parser) hex(key, v string) uint64 {
	h, ok := strings.CutPrefix(v, "0x")
	if !ok {
		p.fail(key, v, "a hexadecimal number with 0x")
		return 0
	}
	n, err := strconv.ParseUint(h, 16, 64)
	if err != nil {
		p.fail(key, v, "a hexadecimal number with 0x")
	}
	return n
}

func (p *parser) bool(key, v string) bool {
	switch v {
	case "0":
		return false
	case "1":
		return true
	}
	p.fail(key, v, "0 or 1")
	return false
}

func (p *parser) oneOf(key, v string, allowed ...string) string {
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	p.fail(key, v, strings.Join(allowed, ", "))
	return v
}

func (p *parser) text(key, v string) string {
	s, err := unescape(v)
	if err != nil {
		p.fail(key, v, "escaped text ("+err.Error()+")")
	}
	return s
}

// stream parses a stream handle: hexadecimal, or ptds:<tid> for a thread's default stream.
func (p *parser) stream(key, v string) string {
	if tid, ok := strings.CutPrefix(v, "ptds:"); ok {
		return "ptds:" + strconv.Itoa(p.int(key, tid))
	}
	return hex(p.hex(key, v))
}

func (p *parser) span(key, v string) Span {
	a, b, ok := strings.Cut(v, "+")
	if !ok {
		p.fail(key, v, "ADDR+BYTES")
		return Span{}
	}
	return Span{Addr: p.hex(key, a), Bytes: p.uint(key, b)}
}

func (p *parser) arg(key, v string) Arg {
	parts := strings.Split(v, ":")
	if len(parts) != 3 {
		p.fail(key, v, "INDEX:OFFSET:VALUE")
		return Arg{}
	}
	return Arg{Index: p.int(key, parts[0]), Offset: p.int(key, parts[1]), Value: p.hex(key, parts[2])}
}

// frames parses PC,BASE,OBJ,SYM|PC,BASE,OBJ,SYM...
func (p *parser) frames(key, v string) []RawFrame {
	var out []RawFrame
	if v == "" {
		return nil
	}
	for f := range strings.SplitSeq(v, "|") {
		parts := strings.Split(f, ",")
		if len(parts) != 4 {
			p.fail(key, f, "a frame PC,BASE,OBJ,SYM")
			return nil
		}
		out = append(out, RawFrame{
			PC: p.hex(key, parts[0]), Base: p.hex(key, parts[1]),
			Object: p.text(key, parts[2]), Symbol: p.text(key, parts[3]),
		})
	}
	return out
}

func (p *parser) field(e *Event, k, v string) {
	switch k {
	case "conn":
		e.Conn = p.int(k, v)
	case "pid":
		e.PID = p.int(k, v)
	case "tid":
		e.TID = p.int(k, v)
	case "call":
		e.Call = p.text(k, v)
	case "stack":
		e.Stack = p.int(k, v)
	case "ppid":
		e.PPID = p.int(k, v)
	case "exe":
		e.Exe = p.text(k, v)
	case "backend":
		e.Backend = p.oneOf(k, v, "cuda", "acl", "cuda,acl")
	case "refuse":
		e.Refuse = p.bool(k, v)
	case "version":
		e.Version = p.int(k, v)
	case "fork":
		e.Fork = p.bool(k, v)
	case "id":
		e.ID = p.int(k, v)
	case "frames":
		e.Frames = p.frames(k, v)
	case "addr":
		e.Addr = p.hex(k, v)
	case "size":
		e.Size = p.uint(k, v)
	case "kind":
		e.Kind = p.oneOf(k, v, "device", "host", "async", "pool")
	case "pool":
		e.Pool = p.hex(k, v)
	case "stream":
		e.Stream = p.stream(k, v)
	case "capture":
		e.Capture = p.int(k, v)
	case "tcap":
		e.TCap = p.int(k, v)
	case "mode":
		e.Mode = p.oneOf(k, v, "global", "thread-local", "relaxed")
	case "event":
		e.EventHandle = p.hex(k, v)
	case "what":
		if e.Name == "sync" {
			e.What = p.oneOf(k, v, "device", "stream", "event")
		} else {
			e.What = p.oneOf(k, v, "copy", "memset", "kernel")
		}
	case "w":
		e.Writes = append(e.Writes, p.span(k, v))
	case "r":
		e.Reads = append(e.Reads, p.span(k, v))
	case "func":
		e.Func = p.hex(k, v)
	case "arg":
		e.Args = append(e.Args, p.arg(k, v))
	case "nolayout":
		e.NoLayout = p.bool(k, v)
	case "graph":
		e.Graph = p.hex(k, v)
	case "exec":
		e.Exec = p.hex(k, v)
	case "ok":
		e.OK = p.bool(k, v)
	case "stale":
		e.Stale = p.bool(k, v)
	case "refused":
		e.Refused = p.bool(k, v)
	case "n":
		if e.Repeat = p.int(k, v); e.Repeat < 1 {
			p.fail(k, v, "a count of 1 or more")
		}
	case "text":
		e.Text = p.text(k, v)
	}
}

// check applies the rules that tie one field to another.
func check(e *Event, has func(key string) bool) error {
	switch e.Name {
	case "op":
		if e.What == "kernel" && !has("func") {
			return errors.New("op: missing field func (a kernel op names its function)")
		}
		if e.Capture == 0 && e.TCap == 0 {
			return errors.New("op: capture and tcap both 0 (an op is sent only inside a capture)")
		}
	case "sync":
		if e.What == "stream" && !has("stream") {
			return errors.New("sync: missing field stream (what=stream)")
		}
		if e.What == "event" && !has("event") {
			return errors.New("sync: missing field event (what=event)")
		}
	case "begin", "join", "end":
		if e.Capture == 0 {
			return fmt.Errorf("%s: field capture: 0 is not a capture id (they start at 1)", e.Name)
		}
	}
	return nil
}

// unescape undoes the stream's escapes (%25, %20, %7C, %2C, %0A; any %XX is accepted).
func unescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("%% at %d without two hex digits", i)
		}
		n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("bad escape %q", s[i:i+3])
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), nil
}

// hex formats an address or handle as the stream and the report write it.
func hex(n uint64) string { return "0x" + strconv.FormatUint(n, 16) }

// ReadEvents reads a recorded stream (one event a line) and calls fn for each event in order.
// Blank lines and lines starting with # are skipped. An error names name:line; fn's error stops
// the reading and is returned wrapped the same way.
func ReadEvents(r io.Reader, name string, fn func(Event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		e, err := ParseEvent(line)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
		if err := fn(e); err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", name, n+1, err)
	}
	return nil
}
