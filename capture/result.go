package capture

import (
	"time"

	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
)

// Result is everything the engine learned from one probe instance. It is plain data: reports
// serialise it, the CLI and the Ginkgo suite judge it with Verdict.
type Result struct {
	ID       string // probes.Instance.ID
	Probe    string // "set/name"
	Set      string
	Hazard   probes.Hazard
	Labels   []string
	Mode     runtime.CaptureMode
	Guarded  bool
	Replays  int // rounds requested
	Backend  string
	Device   string // the device's Describe()
	Outcome  probes.Outcome
	Expected probes.Outcome // "" when the probe leaves it to the baseline
	// RejectedBy are the classes that count as the expected rejection (empty: any).
	RejectedBy []runtime.Class
	// Reason is one human sentence saying why the outcome is what it is.
	Reason string

	// Rounds is how many replay rounds ran; CorruptedRounds how many of them differed from the oracle.
	Rounds          int
	CorruptedRounds int
	FirstCorrupted  int // 1-based round of the first difference, 0 when none

	Rejection *Rejection
	Refusal   *Refusal
	// Mismatches are the first differing ranges after the first corrupted round.
	Mismatches []Mismatch
	// Ledger is the residency ledger at the end of each capture: every buffer a captured op names,
	// with the address range and allocation generation it had.
	Ledger []Residency
	// Stale lists each captured range that a launch touched after its allocation stopped being the
	// one it was at capture (freed, or freed and handed out again), with the first round it
	// happened in and which live allocation owns that range now. It is kept in every outcome; a
	// stale range a launch ran over makes the outcome corrupted even when no checked byte differs.
	Stale    []StaleRange
	Timeline []Event
	Skipped  []string // steps not issued because they name a buffer whose allocation failed
	Leaks    []string
	Duration time.Duration
}

// Rejection is the first error the platform returned for an op of the probe.
type Rejection struct {
	Step  string // e.g. "capture main op 2"
	Op    string // the device call
	Code  int
	Name  string
	Class runtime.Class
	// DuringCapture is true when the op was issued while a capture was in progress; Invalidated
	// and ReplaysExact speak of that capture.
	DuringCapture bool
	Invalidated   bool
	// ReplaysExact says, for a rejection that did not invalidate its capture, whether every replay
	// that followed was byte-identical to the oracle. Nil when there were no replays.
	ReplaysExact *bool
}

// Refusal is the first guard refusal.
type Refusal struct {
	Step   string
	Op     string
	Detail string
	// Checked lists the side-effect checks the engine made after the refusal (address, size,
	// contents, allocator counters) and whether each held.
	Checked []SideEffectCheck
}

// SideEffectCheck is one check that a refusal changed nothing.
type SideEffectCheck struct {
	What string
	Held bool
}

// Mismatch is one differing range of a checked buffer.
type Mismatch struct {
	Round  int
	Buffer string
	Offset int64
	Length int64
	Want   []byte // up to MaxShownBytes of the oracle's bytes from Offset
	Got    []byte // the device's bytes over the same range
}

// Residency is one captured buffer in the ledger.
type Residency struct {
	Capture    string
	Buffer     string
	Range      runtime.Ptr
	Generation uint64
	Access     Access // how the capture's ops touch it
}

// Access is how captured ops touch a buffer.
type Access string

const (
	AccessRead      = "read"
	AccessWrite     = "write"
	AccessReadWrite = "read-write"
)

// With is a together with how ("read" or "write").
func (a Access) With(how string) Access {
	if a == "" || a == Access(how) {
		return Access(how)
	}
	return AccessReadWrite
}

// Verb says in a sentence how a graph touches a buffer: "reads", "writes" or "reads and writes".
func (a Access) Verb() string {
	switch a {
	case AccessRead:
		return "reads"
	case AccessWrite:
		return "writes"
	}
	return "reads and writes"
}

// StaleRange is a captured range that a launch touched after it stopped holding the allocation it
// had at capture.
type StaleRange struct {
	Capture    string
	Buffer     string // the buffer the graph captured
	Range      runtime.Ptr
	Generation uint64
	Access     Access // how the graph touches it
	Round      int    // the first replay round whose launch touched it
	// Ran is false when the platform rejected that launch (it faulted on the range, say); true when
	// the launch ran and silently read or wrote memory the buffer no longer owns.
	Ran bool
	// Now says what holds the range now: "buffer B (generation G)", "free", or a list.
	Now string
	// Owners are the live buffers overlapping the range now.
	Owners []string
}

// Event is one timeline entry: one device call the engine made for the probe.
type Event struct {
	Seq      int
	Phase    string // setup, prepare, capture, between, replay, each, verify, teardown
	Step     string // the probe step, "" for engine calls outside the probe's ops
	Call     string // e.g. "Fill(dst 0x100000000+65536, 0x07) on main"
	Thread   runtime.Thread
	Captured bool // enqueued into a capture rather than executed
	Code     int
	Class    runtime.Class
	Err      string
	Skipped  bool
	Round    int // replay round, 0 outside replays
}

// MaxShownBytes bounds the want/got bytes kept per mismatch.
const MaxShownBytes = 32

// MaxMismatches bounds the mismatches kept per result.
const MaxMismatches = 8

// Verdict is how a result compares with what was expected of it.
type Verdict string

const (
	Pass            Verdict = "pass"
	Fail            Verdict = "fail"
	Skip            Verdict = "skip"
	Uncharacterised Verdict = "uncharacterised" // no expectation given: recorded, not judged
)

// Verdict judges r: the outcome must equal the expectation, and a rejection must be of one of the
// probe's rejected-by classes when it names any.
func (r *Result) Verdict() (Verdict, string) {
	switch {
	case r.Outcome == probes.Skipped:
		return Skip, r.Reason
	case r.Outcome == probes.Errored:
		// A broken run proves nothing either way, expected or not.
		return Fail, "the run ended in error: " + r.Reason
	case r.Expected == "":
		return Uncharacterised, "no expectation for this instance"
	case r.Outcome != r.Expected:
		return Fail, "expected " + string(r.Expected) + ", got " + string(r.Outcome) + ": " + r.Reason
	case r.Outcome == probes.Rejected && len(r.RejectedBy) > 0 && r.Rejection != nil:
		for _, c := range r.RejectedBy {
			if c == r.Rejection.Class {
				return Pass, ""
			}
		}
		return Fail, "rejected with class " + string(r.Rejection.Class) + ", not one of the expected rejected-by classes"
	}
	return Pass, ""
}
