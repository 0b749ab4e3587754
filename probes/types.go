package probes

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/replaycheck/replaycheck/device"
)

// Version is the only probe-language version this package reads.
const Version = "replaycheck/v1"

// Pos is a position in a probe file. Line and Col are 1-based. A decoded value's Pos is where it
// is used: for a value reached through a YAML alias within a probe, the alias (see the package
// doc).
type Pos struct {
	File string
	Line int
	Col  int
}

// String is "file:line:col", the file as FileText writes it.
func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", FileText(p.File), p.Line, p.Col) }

// FileText writes a file name for a message: as it is, unless it holds a C0 or C1 control
// character or DEL (newline and tab included: a diagnostic is one line) or is not UTF-8; then
// Go-quoted with every non-ASCII character escaped ("a\x1b[2Jb.yaml"), as the control-character
// rule quotes names and descriptions. A file name is outside input as much as a file's text is:
// printed raw, an escape sequence in it would reach the terminal.
func FileText(name string) string {
	if !utf8.ValidString(name) || strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }) >= 0 {
		return strconv.QuoteToASCII(name)
	}
	return name
}

// Set is one probe file.
type Set struct {
	Pos         Pos // of the document
	Name        string
	Description string
	Defaults    Defaults
	Probes      []*Probe
}

// Defaults are the set-level values a probe inherits for keys it does not give.
type Defaults struct {
	Replays int                  // 0: not given
	Modes   []device.CaptureMode // nil: not given
	Guards  []bool               // nil: not given; true = on (kernel mode), false = off (program mode)
}

// Built-in defaults when neither the probe nor its set gives a key: DefaultReplays, DefaultModes
// and DefaultGuards.
var DefaultReplays = 10

// DefaultModes returns the built-in capture modes, a fresh slice.
func DefaultModes() []device.CaptureMode {
	return []device.CaptureMode{device.Global, device.ThreadLocal, device.Relaxed}
}

// DefaultGuards returns the built-in guard settings (true = on), a fresh slice.
func DefaultGuards() []bool { return []bool{true, false} }

// Hazard names what a probe provokes.
type Hazard string

// Hazards lists the defined hazards, a fresh slice.
func Hazards() []Hazard { return slices.Clone(hazards) }

var hazards = []Hazard{
	"none", "rebase", "pool-reuse", "off-capture", "alloc-in-capture", "free-in-capture", "replay-after-free",
	"host-staging", "host-work-in-capture", "concurrent-replay", "default-stream", "sync-in-capture",
	"event-misuse", "capture-dependency", "dangling-fork", "wrong-thread", "unsafe-call",
	"unmatched-end", "capture-conflict",
}

// DefaultStream is the stream name every probe may use without declaring it: the platform's
// default stream (CUDA's legacy NULL stream, ACL's default stream).
const DefaultStream = "default"

// Probe is one probe, with defaults already resolved.
type Probe struct {
	Pos         Pos
	Set         string
	Name        string
	Description string
	Hazard      Hazard
	Labels      []string
	Requires    []string

	Pools   []*Pool   // reserved in declaration order, before the buffers
	Buffers []*Buffer // in declaration (allocation) order
	Streams []string  // in declaration order; Streams[0] is the stream ops default to
	// NonBlocking names the declared streams created non-blocking (device.NonBlocking: CUDA's
	// CU_STREAM_NON_BLOCKING, which the legacy default stream does not synchronise with), in the
	// order written; nil: every stream is blocking. A backend without the non-blocking-streams
	// capability skips the probe.
	NonBlocking []string
	Events      []string

	Prepare  []*Op
	Captures []*Capture // `capture:` becomes one capture named "main"
	Between  []*Op
	Replay   Replay
	Check    []string // nil: every live buffer
	Expect   Expect

	Replays int
	Modes   []device.CaptureMode
	Guards  []bool

	// Faults are injected into every instance's device (see Fault); a backend without the
	// fault-injection capability skips the probe.
	Faults []Fault

	// Phases is the probe's sequence when it gives a phases list (phases.go): eager entries and
	// captures in order, its captures also in Captures; nil for a probe of prepare, captures and
	// between, which have nothing between two captures. Stages lists either.
	Phases []Stage

	// names is the probe's buffer name table and its capture plans (plan.go), made on first use.
	names *names
}

// ID is "set/name".
func (p *Probe) ID() string { return p.Set + "/" + p.Name }

// Buffer returns the declared buffer called name, or nil.
func (p *Probe) Buffer(name string) *Buffer {
	for _, b := range p.Buffers {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// Pool returns the declared pool called name, or nil.
func (p *Probe) Pool(name string) *Pool {
	for _, pl := range p.Pools {
		if pl.Name == name {
			return pl
		}
	}
	return nil
}

// Capture returns the capture called name, or nil.
func (p *Probe) Capture(name string) *Capture {
	for _, c := range p.Captures {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Slot is a buffer's allocation point.
type Slot string

const (
	SlotPlain    Slot = "plain"
	SlotRetained Slot = "retained"
	SlotArena    Slot = "arena"
)

// Buffer is a declared buffer.
type Buffer struct {
	Pos   Pos
	Name  string
	Bytes int64
	Init  Pattern
	Slot  Slot
	Place Place
}

// Place says where a buffer's memory comes from. The zero Place is device memory from the
// runtime's own allocation points (its slot).
type Place struct {
	// Host is the kind of a host buffer; 0 for device memory.
	Host device.HostMemory
	// Pool names the pool that serves the buffer; "" when it is not pooled.
	Pool string
}

func (pl Place) String() string {
	switch {
	case pl.Pool != "":
		return "pool " + pl.Pool
	case pl.Host != 0:
		return pl.Host.String() + " host memory"
	}
	return "device memory"
}

// Pool is a caching allocator the probe's runtime keeps: one segment reserved from the device
// (or, with Host, from host memory) before prepare, from which pooled buffers are served with no
// allocator call. See runtime/guard for its reuse policy.
type Pool struct {
	Pos   Pos
	Name  string
	Bytes int64
	Host  device.HostMemory // 0: a device pool
	// Private makes the pool graph-private (privatepool.go): only a capture into it allocates
	// from it, and a block freed stays its own for later captures into it.
	Private bool
}

// Capture is one capture sequence.
type Capture struct {
	Pos    Pos
	Name   string // "main" for the single `capture:` form
	Stream string // origin stream
	Ops    []*Op
	// Thread is the thread that begins the capture: main, unless a begin entry of a phases list
	// names another.
	Thread device.Thread
	// EndThread is the thread that ends the capture.
	EndThread device.Thread
	// EndStream is the stream the capture is ended on; defaults to Stream. (Extension: lets probes
	// end on a non-origin stream or on one that is not capturing.)
	EndStream string
	// Pool is the graph-private pool the capture allocates from (privatepool.go): its pool key,
	// else the private pool named like the capture when one is declared; "" for none.
	Pool string
}

// Replay describes one replay round.
type Replay struct {
	Pos    Pos
	Stream string   // launch stream; default the first capture's stream
	Order  []Launch // default each capture once, in declaration order, on Stream
	Each   []*Op
}

// Launch is one graph launch of a replay round: the capture's graph, on a stream. Launches on
// different streams that nothing orders run concurrently.
type Launch struct {
	Pos     Pos
	Capture string
	Stream  string // resolved: Replay.Stream when the entry names none
}

// Captures lists the capture names a round launches, in order.
func (r Replay) Captures() []string {
	out := make([]string, len(r.Order))
	for i, l := range r.Order {
		out[i] = l.Capture
	}
	return out
}

// Outcome is the verdict of one probe instance. The zero value is not an outcome.
type Outcome string

const (
	Exact     Outcome = "exact"     // every replay byte-identical to the oracle, no error anywhere
	Rejected  Outcome = "rejected"  // the platform returned an error for an op, and no byte differs
	Refused   Outcome = "refused"   // a guard refused an op or a replay without side effect, no byte differs
	Corrupted Outcome = "corrupted" // bytes differ from the oracle after some replay
	Errored   Outcome = "error"     // setup failed, timeout, crash or leak
	Skipped   Outcome = "skipped"   // not run (missing capability, guards not available)
)

// Rank orders outcomes by precedence: a higher rank wins when several apply.
func (o Outcome) Rank() int {
	switch o {
	case Exact:
		return 1
	case Refused:
		return 2
	case Rejected:
		return 3
	case Corrupted:
		return 4
	case Errored:
		return 5
	}
	return 0
}

// Expect is what a probe promises.
type Expect struct {
	Pos        Pos
	Guarded    Outcome // required: exact, refused or rejected
	Unguarded  Outcome // "" when the platform baseline decides
	RejectedBy []device.Class
	// RefusedBy is who must refuse an instance expected refused: expect.refused-by; nil when the
	// probe names no one.
	RefusedBy *RefusedBy
	// Platforms is what the probe promises instead on the platforms of a family (PlatformFamilies),
	// where that platform answers otherwise: expect.platforms. For applies it.
	Platforms map[string]PlatformExpect
	// Modes is what the probe promises instead in a capture mode, on every platform:
	// expect.modes. For applies it.
	Modes map[device.CaptureMode]ModeExpect
}

// PlatformExpect is a probe's expectation on the platforms of one family: each field it gives
// replaces the probe's own there. "" and nil are not given; a RejectedBy given empty means any
// class. Modes is what it promises instead in a capture mode on those platforms (platform ×
// mode: expect.platforms.FAMILY.modes).
type PlatformExpect struct {
	Pos        Pos // of the family's key
	Guarded    Outcome
	Unguarded  Outcome
	RejectedBy []device.Class
	RefusedBy  *RefusedBy
	Modes      map[device.CaptureMode]ModeExpect
}

// ModeExpect is a probe's expectation in one capture mode (expect.modes, or a platform family's
// modes): each field it gives replaces the less specific one there, as PlatformExpect's do.
type ModeExpect struct {
	Pos        Pos // of the mode's key
	Guarded    Outcome
	Unguarded  Outcome
	RejectedBy []device.Class
	RefusedBy  *RefusedBy
}

// RefusedBy is who must refuse an instance expected refused (expect.refused-by): the guard or
// runtime rule that makes the instance's first refusal, and the step it refuses. A field left ""
// names any; a RefusedBy given empty (refused-by: {}) names anyone anywhere, in place of a less
// specific entry's.
type RefusedBy struct {
	// Guard is a reference guard's name (retained, arena, capture-watch, residency, isolation) or a
	// runtime plugin's rule name.
	Guard string `json:"guard,omitempty"`
	// Step is a phase, naming every step of it (RefusalPhases: prepare, capture, between, each,
	// replay), or one step in its text form (Step.String: "between op 1", "capture main end",
	// "replay 2 main").
	Step string `json:"step,omitempty"`
}

// RefusalPhases are the phases refused-by's step may name whole, in a fresh slice.
func RefusalPhases() []Phase {
	return []Phase{PhasePrepare, PhaseCapture, PhaseBetween, PhaseEach, PhaseReplay}
}

// ParseRefusalStep reads refused-by's step: a phase of RefusalPhases, or a step ParseStep reads.
// It returns the step's text as Matches compares it (a step as Step.String writes it).
func ParseRefusalStep(text string) (string, error) {
	if slices.Contains(RefusalPhases(), Phase(text)) {
		return text, nil
	}
	s, err := ParseStep(text)
	if err != nil {
		var phases []string
		for _, p := range RefusalPhases() {
			phases = append(phases, string(p))
		}
		return "", fmt.Errorf("%w, or a phase (%s)", err, strings.Join(phases, ", "))
	}
	return s.String(), nil
}

// Matches reports whether a refusal by guard ("" when the runtime named none) at step is one r
// names.
func (r RefusedBy) Matches(guard string, step Step) bool {
	if r.Guard != "" && r.Guard != guard {
		return false
	}
	switch {
	case r.Step == "":
		return true
	case slices.Contains(RefusalPhases(), Phase(r.Step)):
		return step.Phase == Phase(r.Step)
	}
	want, err := ParseStep(r.Step)
	return err == nil && want == step
}

// String says whom r names, for messages: "guard retained at between op 1", "guard residency at
// any step", "any guard at replay", "any guard at any step".
func (r RefusedBy) String() string { return RefusalText(r.Guard, r.Step) }

// RefusalText names a refusal by guard ("" any, or none named) at step ("" any), as RefusedBy's
// String does.
func RefusalText(guard, step string) string {
	who, where := "any guard", "any step"
	if guard != "" {
		who = "guard " + guard
	}
	if step != "" {
		where = step
	}
	return who + " at " + where
}

// RefusedByOn is who must refuse this instance on the platform whose key is platform (the most
// specific expectation, as ExpectedOn's): nil when the instance is not expected refused there, or
// the probe names no one (or anyone anywhere). The engine records it in the result
// (capture.Result.RefusedBy), which the verdict judges; it is a copy, the caller's.
func (in Instance) RefusedByOn(platform string) *RefusedBy {
	e := in.Probe.Expect.For(Family(platform), in.Mode)
	if in.expected(e) != Refused || e.RefusedBy == nil || *e.RefusedBy == (RefusedBy{}) {
		return nil
	}
	r := *e.RefusedBy
	return &r
}

// On is what the probe promises on the platform whose key is platform (device.Device.Platform),
// whatever the capture mode: its own expectation, with the fields that expect.platforms gives for
// the platform's family (Family) in their place. A key of no known family gets the probe's own.
// The result has no Platforms and no Modes. An instance's expectation is For's.
func (e Expect) On(platform string) Expect { return e.OnFamily(Family(platform)) }

// OnFamily is what the probe promises on the platforms of family (PlatformFamilies), whatever
// the capture mode: On for any platform key of that family.
func (e Expect) OnFamily(family string) Expect {
	out := e
	out.Platforms, out.Modes = nil, nil
	o, ok := e.Platforms[family]
	if ok {
		out.override(o.Guarded, o.Unguarded, o.RejectedBy, o.RefusedBy)
	}
	return out
}

// For is what the probe promises on the platforms of family ("" for a platform key of no
// family) in capture mode: field by field, the most specific expectation that gives it —
// expect.platforms.FAMILY.modes.MODE, then expect.modes.MODE, then expect.platforms.FAMILY, then
// the probe's own. The result has no Platforms and no Modes.
func (e Expect) For(family string, mode device.CaptureMode) Expect {
	out := e.OnFamily(family)
	if m, ok := e.Modes[mode]; ok {
		out.override(m.Guarded, m.Unguarded, m.RejectedBy, m.RefusedBy)
	}
	if m, ok := e.Platforms[family].Modes[mode]; ok {
		out.override(m.Guarded, m.Unguarded, m.RejectedBy, m.RefusedBy)
	}
	return out
}

// override puts the fields given ("" and nil are not) in place of e's.
func (e *Expect) override(guarded, unguarded Outcome, rejectedBy []device.Class, refusedBy *RefusedBy) {
	if guarded != "" {
		e.Guarded = guarded
	}
	if unguarded != "" {
		e.Unguarded = unguarded
	}
	if rejectedBy != nil {
		e.RejectedBy = rejectedBy
	}
	if refusedBy != nil {
		e.RefusedBy = refusedBy
	}
}

// OpKind is the op's key in the probe file.
type OpKind string

const (
	OpFill       OpKind = "fill"
	OpCopy       OpKind = "copy"
	OpAxpy       OpKind = "axpy"
	OpWrite      OpKind = "write"
	OpRead       OpKind = "read"
	OpRecord     OpKind = "record"
	OpWait       OpKind = "wait"
	OpSync       OpKind = "sync"
	OpSyncDevice OpKind = "sync-device"
	OpQuery      OpKind = "query"
	OpSyncEvent  OpKind = "sync-event"
	OpAlloc      OpKind = "alloc"
	OpFree       OpKind = "free"
	OpGrow       OpKind = "grow"
	// OpExchangeMode sets the calling thread's capture interaction mode, as
	// aclmdlRICaptureThreadExchangeMode and cuThreadExchangeStreamCaptureMode do.
	OpExchangeMode OpKind = "exchange-mode"
)

// Intent says when a probe means an op inside a capture's ops list to take effect: on every
// replay, as part of the graph, or once, when it is issued. The oracle holds the probe to it.
type Intent string

const (
	// IntentDefault: fill, copy and axpy replay; every other op applies once.
	IntentDefault Intent = ""
	IntentReplay  Intent = "replay"
	IntentOnce    Intent = "once"
)

// Enqueued reports whether the op is stream work (recorded into a graph when issued during
// capture).
func (k OpKind) Enqueued() bool {
	switch k {
	case OpFill, OpCopy, OpAxpy, OpRecord, OpWait:
		return true
	}
	return false
}

// Op is one op. Fields that do not apply to Kind are zero. Optional byte counts and offsets are nil
// when not given; defaults are resolved when the op is issued (ResolveRange).
type Op struct {
	Pos    Pos
	Kind   OpKind
	Stream string // "" when not given: the phase's default stream
	Thread device.Thread

	Dst, Src string // fill/write: Dst; copy: Dst, Src; read: Src
	Y, X     string // axpy
	Buffer   string // alloc, free, grow
	Capture  string // destroy: the capture whose graph it destroys
	Event    string // record, wait, query, sync-event

	Value   byte    // fill
	Pattern Pattern // write value, alloc init
	A       uint32  // axpy

	Offset    *int64 // fill
	Bytes     *int64 // fill, copy; alloc and grow (required there)
	DstOffset *int64 // copy
	SrcOffset *int64 // copy

	Slot  Slot  // alloc
	Place Place // alloc

	Intent Intent             // fill, copy, axpy, write inside a capture's ops
	Mode   device.CaptureMode // exchange-mode

	at fieldsAt // where each field was written, for the checks after decoding
}

// fieldsAt holds where an op's fields were written, by each field's place in its kind's keys
// (opFields); zero for a field not written. A probe may have 100,000 ops and each op several
// fields: kept in the op, they cost no map entry each.
type fieldsAt [maxOpKeys]struct{ line, col int32 }

// buffers are the buffer names op's fields hold, "" where a field holds none.
func (op *Op) buffers() [5]string { return [...]string{op.Buffer, op.Dst, op.Src, op.Y, op.X} }

// Replays reports whether the probe means the op, issued inside a capture's ops list, to take
// effect on every replay: its Intent, or by default when it is enqueued data work.
func (op *Op) Replays() bool {
	switch op.Intent {
	case IntentReplay:
		return true
	case IntentOnce:
		return false
	}
	return op.Kind.TouchesData()
}

// Phase is a part of a probe.
type Phase string

const (
	PhasePrepare Phase = "prepare"
	PhaseCapture Phase = "capture"
	PhaseBetween Phase = "between"
	PhaseEach    Phase = "each"
	PhaseReplay  Phase = "replay"
)
