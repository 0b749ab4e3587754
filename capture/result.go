package capture

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// Result is everything the engine learned from one probe instance, and the one record of it: the
// CLI, the Ginkgo suite and every report writer use it as it is, and its JSON form (the field tags)
// reads back to the same value, so a result written by another process judges exactly as the
// original. Judging it is package verdict's business.
type Result struct {
	ID      string             `json:"id"`    // probes.Instance.ID: set/name@mode/guards-on|off
	Probe   string             `json:"probe"` // set/name
	Set     string             `json:"set"`
	Hazard  probes.Hazard      `json:"hazard"`
	Labels  []string           `json:"labels,omitempty"`
	Mode    device.CaptureMode `json:"mode"`
	Guarded bool               `json:"guarded"`
	Replays int                `json:"replays"` // rounds requested

	// Backend, Platform (the device's platform key, device.Device.Platform) and Device say
	// where the instance ran; Runtime names the runtime under test (runtime.Builtin:
	// replaycheck's own reference guards).
	Backend  string `json:"backend"`
	Platform string `json:"platform"`
	Device   string `json:"device,omitempty"`
	Runtime  string `json:"runtime"`

	Outcome probes.Outcome `json:"outcome"`
	// Expected is what the probe expects of this instance on Platform, its expect entries for the
	// platform's family and the instance's capture mode applied (probes.Instance.ExpectedOn); ""
	// when the probe leaves it to the baseline.
	Expected probes.Outcome `json:"expected,omitempty"`
	// RejectedBy are the classes that count as the expected rejection on Platform (empty: any).
	RejectedBy []device.Class `json:"rejected_by,omitempty"`
	// RefusedBy is who must make the instance's first refusal, and at which step, on Platform
	// (probes.Instance.RefusedByOn); nil when the instance is not expected refused or the probe
	// names no one.
	RefusedBy *probes.RefusedBy `json:"refused_by,omitempty"`
	// Reason is one human sentence saying why the outcome is what it is.
	Reason string `json:"reason"`
	// Error says what broke when the outcome is probes.Errored; nil otherwise.
	Error *RunError `json:"error,omitempty"`
	// Faults are the faults injected into the instance (the probe's, then the run's), each with
	// whether and where it fired.
	Faults []FaultRecord `json:"faults,omitempty"`
	// DeviceState says why the device must not run another instance after this one: lost, or
	// abandoned; "" when it can.
	DeviceState DeviceState `json:"device_state,omitempty"`

	// Rounds is how many replay rounds ran; CorruptedRounds how many of them differed from the oracle.
	Rounds          int `json:"rounds"`
	CorruptedRounds int `json:"corrupted_rounds"`
	FirstCorrupted  int `json:"first_corrupted"` // 1-based round of the first difference, 0 when none

	Rejection *Rejection `json:"rejection,omitempty"`
	Refusal   *Refusal   `json:"refusal,omitempty"`
	// Mismatches are the first differing ranges after the first corrupted round (at most
	// MaxMismatches of them).
	Mismatches []Mismatch `json:"mismatches,omitempty"`
	// Differences count, for each checked buffer that differed after the first corrupted round,
	// every differing range and byte, however few of them Mismatches shows.
	Differences []Difference `json:"differences,omitempty"`
	// Stale lists each captured range that a launch touched after its allocation stopped being the
	// one it was at capture (freed, or freed and handed out again), with the first round it
	// happened in and which live allocation owns that range now. It is kept in every outcome; a
	// stale range a launch ran over makes the outcome corrupted even when no checked byte differs.
	Stale []StaleRange `json:"stale,omitempty"`
	// Ledger is the residency ledger at the end of each capture: every buffer a captured op names,
	// with the address range and allocation generation it had.
	Ledger []Residency `json:"ledger,omitempty"`
	// Graphs are the checks of each captured graph's nodes against the ledger, on backends with
	// graph introspection. A graph that holds work the engine did not capture, or touches memory
	// it did not record, makes the outcome corrupted.
	Graphs []GraphCheck `json:"graphs,omitempty"`
	// GraphsUnread says why the instance's graphs were not read, on a device (or runtime under
	// test) that cannot list a graph's nodes: no graph check ran, so Graphs is empty however the
	// graphs hold their work. "" when every graph made was read, or none was made.
	GraphsUnread string `json:"graphs_unread,omitempty"`
	// Timeline is every call the engine made, in order, except the calls of uneventful replay
	// rounds: past the first KeptRounds, a round in which every call succeeded, no checked
	// buffer differed and no stale range was found is left out, and one event (Elided) stands
	// for each run of such rounds. The last round is always kept. Without that, a million
	// replays of a 64-byte probe kept a gigabyte of identical launches. Read it with Events.
	Timeline Timeline `json:"timeline,omitzero"`
	// Skipped are the probe steps not issued because an earlier op that did not take effect left
	// nothing for them to act on as written.
	Skipped  []probes.Step `json:"skipped_steps,omitempty"`
	Leaks    []string      `json:"leaks,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// Timings say where the time went (wall clock on the host running the engine).
	Timings Timings `json:"timings"`
}

// Timings are an instance's phases, timed.
type Timings struct {
	// Capture is the time spent in captures: begin, the capture's ops, end.
	Capture time.Duration `json:"capture_ns"`
	// ReplayMedian and ReplayP99 are over the replay rounds: from a round's first launch until
	// the device finished its work.
	ReplayMedian time.Duration `json:"replay_median_ns"`
	ReplayP99    time.Duration `json:"replay_p99_ns"`
	// Verify is the time spent reading back and comparing checked buffers, VerifiedBytes how
	// many bytes that compared, VerifyRate the bytes per second.
	Verify        time.Duration `json:"verify_ns"`
	VerifiedBytes int64         `json:"verified_bytes"`
	VerifyRate    float64       `json:"verify_bytes_per_second"`
}

// ErrorKind says what broke in an instance that ended in error.
type ErrorKind string

const (
	// ErrSetup: the device failed a call the engine makes to hold the probe's state rather than
	// for one of its ops: creating streams, events and pools, allocating declared buffers,
	// initialising contents, synchronising, re-allocating a grown buffer, tearing down; or the
	// probe's own pool has no free block for a request (a pool too small for its fragmentation).
	ErrSetup ErrorKind = "setup"
	// ErrTimeout: the instance ran past Options.Timeout.
	ErrTimeout ErrorKind = "timeout"
	// ErrInterrupted: the instance was cancelled (the context the caller gave ended).
	ErrInterrupted ErrorKind = "interrupted"
	// ErrLeak: device objects or memory were still live after teardown.
	ErrLeak ErrorKind = "leak"
	// ErrSideEffect: the runtime under test refused a call and changed state all the same: a
	// refusal that is not clean.
	ErrSideEffect ErrorKind = "side-effect"
	// ErrRuntime: the runtime under test (a loaded plugin) failed on its own: an error that is
	// neither a refusal nor the platform's answer passed through.
	ErrRuntime ErrorKind = "runtime"
	// ErrHarness: replaycheck itself is at fault: a panic, a broken engine invariant, an op the
	// engine cannot issue, or a runtime that says the engine misused its API.
	ErrHarness ErrorKind = "harness"
	// ErrCrash: the process that ran the instance died before it could report.
	ErrCrash ErrorKind = "crash"
	// ErrFault: a fault injected on purpose (a probe's faults, run --fault) fired: an allocation
	// or a launch failed.
	ErrFault ErrorKind = "fault"
	// ErrDeviceLost: the device answered device-lost (an injected fault or not): it is not used
	// again (DeviceLost).
	ErrDeviceLost ErrorKind = "device-lost"
)

// DeviceState is what an instance left its device in, when the device must not run another.
type DeviceState string

const (
	// DeviceLost: the device answered device-lost; every call but Close fails. Whoever opened it
	// closes it (a reset) and opens a fresh one where the backend can.
	DeviceLost DeviceState = "lost"
	// DeviceAbandoned: a call into the device did not return within the instance's timeout. The
	// device is given up (device.Abandoner) with its worker blocked: it is never called again,
	// not even closed.
	DeviceAbandoned DeviceState = "abandoned"
)

// FaultRecord is one fault injected into an instance.
type FaultRecord struct {
	Fault string `json:"fault"` // KIND@N, as written
	Fired bool   `json:"fired"`
	// Call is the engine's call the fault fired in ("" when it did not fire).
	Call string `json:"call,omitempty"`
	// Detail says what the fault did, or why it did not fire.
	Detail string `json:"detail,omitempty"`
}

// RunError is what ended an instance in error.
type RunError struct {
	Kind ErrorKind `json:"kind"`
	// Step is the probe step the error came from; nil for the engine's own calls.
	Step    *probes.Step `json:"step,omitempty"`
	Message string       `json:"message"`
	// Call is the device call in flight when the instance timed out in one (the backend's
	// method, e.g. "Launch"); "" otherwise.
	Call string `json:"call,omitempty"`
}

// Rejection is the first error the platform returned for an op of the probe.
type Rejection struct {
	Step  probes.Step  `json:"step"`
	Op    string       `json:"op"` // the device call
	Code  int          `json:"code"`
	Name  string       `json:"name,omitempty"`
	Class device.Class `json:"class"`
	// DuringCapture is true when the op was issued while a capture was in progress; Invalidated
	// and ReplaysExact speak of that capture.
	DuringCapture bool `json:"during_capture"`
	Invalidated   bool `json:"invalidated"`
	// ReplaysExact says, for a rejection that did not invalidate its capture, whether every replay
	// that followed was byte-identical to the oracle. Nil when there were no replays, and for a
	// rejected end, which made no graph to replay.
	ReplaysExact *bool `json:"replays_exact,omitempty"`
	// Asynchronous: the launch at Step returned, and the device reported its failure at the
	// synchronisation after the round (Op), as a GPU reports a fault of work already enqueued.
	Asynchronous bool `json:"asynchronous,omitempty"`
	// Sticky: the error poisoned the device for the rest of the process (device.Error.Sticky):
	// nothing more ran on it.
	Sticky bool `json:"sticky,omitempty"`
}

// EndedCapture reports whether the rejected call was a capture's end, which then made no graph.
func (r *Rejection) EndedCapture() bool { return r.Op == "EndCapture" }

// Refusal is the first refusal of the runtime under test.
type Refusal struct {
	Step probes.Step `json:"step"`
	Op   string      `json:"op"`
	// Guard names the guard of the runtime under test that refused (runtime.RefusedBy: a reference
	// guard, or a plugin's rule); "" when the runtime named none.
	Guard  string `json:"guard,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Checked lists the side-effect checks the engine made after the refusal (device counters,
	// slots, addresses and sizes) and whether each held.
	Checked []SideEffectCheck `json:"checked,omitempty"`
}

// Who names who refused: "guard retained", or "guard" when the runtime named none.
func (r *Refusal) Who() string {
	if r.Guard == "" {
		return "guard"
	}
	return "guard " + r.Guard
}

// Reason is the result's reason when the refusal decides its outcome: "guard retained refused
// between op 1 (Provision): DETAIL".
func (r *Refusal) Reason() string {
	return fmt.Sprintf("%s refused %s (%s): %s", r.Who(), r.Step, r.Op, r.Detail)
}

// SideEffectCheck is one check that a refusal changed nothing.
type SideEffectCheck struct {
	What string `json:"what"`
	Held bool   `json:"held"`
}

// Mismatch is one differing range of a checked buffer.
type Mismatch struct {
	Round  int    `json:"round"`
	Buffer string `json:"buffer"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"` // the whole differing run
	Want   Bytes  `json:"want"`   // up to MaxShownBytes of the oracle's bytes from Offset
	Got    Bytes  `json:"got"`    // the device's bytes over the same range
}

// Difference is how much of one checked buffer differed from the oracle after a round: its
// differing ranges (as Mismatch counts them: runs parted by fewer than 16 equal bytes are one) and
// bytes, out of the buffer's size.
type Difference struct {
	Round       int    `json:"round"`
	Buffer      string `json:"buffer"`
	Ranges      int64  `json:"ranges"`
	Bytes       int64  `json:"bytes"`
	BufferBytes int64  `json:"buffer_bytes"`
}

// Bytes is a byte sample, hex in JSON.
type Bytes []byte

// MarshalText writes the bytes in hex.
func (b Bytes) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(b)), nil }

// UnmarshalText reads hex.
func (b *Bytes) UnmarshalText(text []byte) error {
	v, err := hex.DecodeString(string(text))
	*b = v
	return err
}

// Residency is one captured buffer in the ledger.
type Residency struct {
	Capture    string     `json:"capture"`
	Buffer     string     `json:"buffer"`
	Range      device.Ptr `json:"range"`
	Generation uint64     `json:"generation"`
	Access     Access     `json:"access"` // how the capture's ops touch it
}

// Access is how captured ops touch a buffer.
type Access string

const (
	AccessRead      Access = "read"
	AccessWrite     Access = "write"
	AccessReadWrite Access = "read-write"
)

// With is a together with how.
func (a Access) With(how Access) Access {
	if a == "" || a == how {
		return how
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
	Capture    string     `json:"capture"`
	Buffer     string     `json:"buffer"` // the buffer the graph captured
	Range      device.Ptr `json:"range"`
	Generation uint64     `json:"generation"`
	Access     Access     `json:"access"` // how the graph touches it
	Round      int        `json:"round"`  // the first replay round whose launch touched it
	// Ran is false when the platform rejected that launch (it faulted on the range, say); true when
	// the launch ran and silently read or wrote memory the buffer no longer owns.
	Ran bool `json:"ran"`
	// Now says what holds the range now: "buffer B (generation G)", "free", or a list.
	Now string `json:"now"`
	// Owners are the live buffers overlapping the range now.
	Owners []string `json:"owners,omitempty"`
}

// Phase is the part of an instance a timeline event belongs to.
type Phase string

const (
	PhaseSetup    Phase = "setup"
	PhasePrepare  Phase = "prepare"
	PhaseCapture  Phase = "capture"
	PhaseCleanup  Phase = "cleanup" // ending a capture the probe left active
	PhaseBetween  Phase = "between"
	PhaseEager    Phase = "eager" // an eager entry of the probe's phases list, between captures or around them
	PhaseEach     Phase = "each"
	PhaseReplay   Phase = "replay"
	PhaseVerify   Phase = "verify"
	PhaseTeardown Phase = "teardown"
)

// Event is one timeline entry: one device call the engine made for the probe, or a probe step it
// did not issue.
type Event struct {
	Seq   int          `json:"seq"`
	Phase Phase        `json:"phase"`
	Step  *probes.Step `json:"step,omitempty"` // nil for the engine's own calls
	// Call is the call as issued, e.g. "Fill(dst 0x100000000+65536, 0x07) on main".
	Call string `json:"call"`
	// Returned is what the call returned besides its error: an address, a completion, a mode.
	Returned string        `json:"returned,omitempty"`
	Thread   device.Thread `json:"thread"`
	// Captured: the work was enqueued into the capture in progress rather than executed.
	Captured bool `json:"captured,omitempty"`
	// Eager: the work was enqueued during a capture on a stream that is not part of it, so it ran
	// once, now, and replays do not repeat it.
	Eager bool `json:"eager,omitempty"`
	// Skipped says why the step was not issued; "" for a call that was made.
	Skipped string       `json:"skipped,omitempty"`
	Code    int          `json:"code,omitempty"`
	Class   device.Class `json:"class,omitempty"`
	Err     string       `json:"error,omitempty"`
	Round   int          `json:"round,omitempty"` // replay round, 0 outside replays
	// Elided is set on the one event that stands for a run of uneventful replay rounds left out
	// of the timeline (Result.Timeline); such an event is no call, and its Seq is that of the
	// first call it stands for.
	Elided *Elided `json:"elided,omitempty"`
}

// KeptRounds is how many replay rounds a timeline keeps in full however uneventful: round 1, and
// round 2, the first to meet what round 1 left, and one more.
const KeptRounds = 3

// Elided is a run of replay rounds left out of a timeline: each of their calls succeeded, no
// checked buffer differed after them, and no stale range was found in them.
type Elided struct {
	FromRound int `json:"from_round"`
	ToRound   int `json:"to_round"`
	Calls     int `json:"calls"`
}

// MaxShownBytes bounds the want/got bytes kept per mismatch.
const MaxShownBytes = 32

// MaxMismatches bounds the mismatches kept per result.
const MaxMismatches = 8
