package reports

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
)

// RuntimeBuiltin names the runtime under test when it is replaycheck's own reference guards
// (runtime/guard), in program or kernel mode.
const RuntimeBuiltin = "builtin"

// Report is one platform run: where it ran and what every instance did. Its JSON form is a
// Document (WriteJSON), which also holds several runs.
type Report struct {
	Tool    string    `json:"tool"`
	Version string    `json:"version"`
	Started time.Time `json:"started"`
	Backend string    `json:"backend"`
	Profile string    `json:"profile,omitempty"`
	Device  string    `json:"device"`
	// Runtime is the runtime under test ("" is RuntimeBuiltin).
	Runtime string  `json:"runtime"`
	Summary Summary `json:"summary"`
	Results []Entry `json:"results"`
	// Baseline is the platform baseline unguarded results are judged against (nil: none). Set it
	// before Add.
	Baseline *Baseline `json:"-"`
	// BaselineFile names the baseline used, for readers of the report.
	BaselineFile string `json:"baseline,omitempty"`
	// Enforcement is the enforcement table, written as the report's last section when set.
	Enforcement *Table `json:"enforcement,omitempty"`

	opt Options
}

// Options decide what a Report keeps.
type Options struct {
	// AllTimelines keeps the timeline of every instance; by default only instances whose verdict
	// is not pass keep theirs.
	AllTimelines bool
}

// Summary counts verdicts and outcomes.
type Summary struct {
	Total           int `json:"total"`
	Pass            int `json:"pass"`
	Fail            int `json:"fail"`
	Skip            int `json:"skip"`
	Uncharacterised int `json:"uncharacterised"`
	// ByOutcome counts instances per outcome name (exact, rejected, refused, corrupted, error, skipped).
	ByOutcome map[string]int `json:"by_outcome"`
}

// Failed reports whether any instance failed its verdict.
func (s Summary) Failed() bool { return s.Fail > 0 }

// Entry is one probe instance, flattened from a capture.Result.
type Entry struct {
	Probe string `json:"probe"` // "set/name"
	ID    string `json:"id"`    // "set/name@mode/guards-on|off"
	// Backend, Profile and Runtime say where the instance ran and which runtime was under test.
	Backend    string   `json:"backend"`
	Profile    string   `json:"profile,omitempty"`
	Runtime    string   `json:"runtime"`
	Set        string   `json:"set"`
	Hazard     string   `json:"hazard"`
	Labels     []string `json:"labels,omitempty"`
	Mode       string   `json:"mode"`   // global, thread-local, relaxed
	Guards     string   `json:"guards"` // on, off
	Replays    int      `json:"replays"`
	Outcome    string   `json:"outcome"`
	Expected   string   `json:"expected,omitempty"`
	RejectedBy []string `json:"rejected_by,omitempty"`
	// Verdict is pass, fail, skip or uncharacterised; VerdictReason says why when it is not pass.
	Verdict       string `json:"verdict"`
	VerdictReason string `json:"verdict_reason"`
	// Reason is the engine's sentence explaining the outcome.
	Reason string `json:"reason"`

	Rounds          int `json:"rounds"`
	CorruptedRounds int `json:"corrupted_rounds"`
	FirstCorrupted  int `json:"first_corrupted"`

	Rejection  *Rejection  `json:"rejection,omitempty"`
	Refusal    *Refusal    `json:"refusal,omitempty"`
	Mismatches []Mismatch  `json:"mismatches,omitempty"`
	Stale      []Stale     `json:"stale,omitempty"`
	Ledger     []Residency `json:"ledger,omitempty"`
	Timeline   []Event     `json:"timeline,omitempty"`
	// SkippedSteps are probe steps not issued because they name a buffer whose allocation failed.
	SkippedSteps []string `json:"skipped_steps,omitempty"`
	Leaks        []string `json:"leaks,omitempty"`
	DurationMS   float64  `json:"duration_ms"`
}

// Rejection is the first error the platform returned for an op of the probe.
type Rejection struct {
	Step  string `json:"step"`
	Op    string `json:"op"`
	Code  int    `json:"code"`
	Name  string `json:"name,omitempty"`
	Class string `json:"class"`
	// DuringCapture: the op was issued while a capture was in progress; invalidated and
	// replays_exact speak of that capture.
	DuringCapture bool `json:"during_capture"`
	Invalidated   bool `json:"invalidated"`
	// ReplaysExact is absent when there were no replays after a non-invalidating rejection.
	ReplaysExact *bool `json:"replays_exact,omitempty"`
}

// Refusal is the first guard refusal and the side-effect checks made after it.
type Refusal struct {
	Step    string            `json:"step"`
	Op      string            `json:"op"`
	Detail  string            `json:"detail,omitempty"`
	Checked []SideEffectCheck `json:"checked,omitempty"`
}

// SideEffectCheck is one check that a refusal changed nothing.
type SideEffectCheck struct {
	What string `json:"what"`
	Held bool   `json:"held"`
}

// Mismatch is one differing range of a checked buffer. Want and Got are hex samples of at most
// capture.MaxShownBytes bytes from Offset; Length is the whole differing run.
type Mismatch struct {
	Round  int    `json:"round"`
	Buffer string `json:"buffer"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
	Want   string `json:"want"`
	Got    string `json:"got"`
}

// Range is a device address range; Addr is 0x-prefixed hex so JSON readers keep every bit.
type Range struct {
	Addr  string `json:"addr"`
	Bytes int64  `json:"bytes"`
}

func rangeOf(p runtime.Ptr) Range { return Range{Addr: fmt.Sprintf("%#x", p.Addr), Bytes: p.Bytes} }

func (r Range) String() string { return fmt.Sprintf("%s+%d", r.Addr, r.Bytes) }

// Stale is a captured range a launch touched after its allocation changed, and what holds it now.
type Stale struct {
	Capture    string `json:"capture"`
	Buffer     string `json:"buffer"`
	Range      Range  `json:"range"`
	Generation uint64 `json:"generation"`
	Access     string `json:"access"` // read, write or read-write
	Round      int    `json:"round"`  // the first round whose launch touched it
	// Ran is false when the platform rejected that launch.
	Ran    bool     `json:"ran"`
	Now    string   `json:"now"`
	Owners []string `json:"owners,omitempty"`
}

// Residency is one captured buffer in the residency ledger.
type Residency struct {
	Capture    string `json:"capture"`
	Buffer     string `json:"buffer"`
	Range      Range  `json:"range"`
	Generation uint64 `json:"generation"`
	Access     string `json:"access,omitempty"`
}

// Event is one device call of the timeline.
type Event struct {
	Seq      int    `json:"seq"`
	Phase    string `json:"phase"`
	Step     string `json:"step,omitempty"`
	Call     string `json:"call"`
	Thread   string `json:"thread"`
	Captured bool   `json:"captured"`
	Code     int    `json:"code,omitempty"`
	Class    string `json:"class,omitempty"`
	Error    string `json:"error,omitempty"`
	Skipped  bool   `json:"skipped,omitempty"`
	Round    int    `json:"round,omitempty"`
}

// New starts an empty report stamped with the current time. The caller fills in Backend, Profile
// and Device once the device is open.
func New(tool, version string, opt Options) *Report {
	return &Report{
		Tool: tool, Version: version, Started: time.Now().UTC(),
		Summary: Summary{ByOutcome: map[string]int{}},
		Results: []Entry{},
		opt:     opt,
	}
}

// Add appends res, judged against r.Baseline, counts it in the summary and returns the entry as
// stored. A nil res is ignored.
func (r *Report) Add(res *capture.Result) Entry {
	if res == nil {
		return Entry{}
	}
	e := EntryOf(res)
	v, why := Judge(res, r.Baseline)
	e.Verdict, e.VerdictReason = string(v), why
	return r.AddEntry(e)
}

// AddEntry appends an entry already judged (e.g. one a Ginkgo process recorded), counts it and
// returns it as stored: without its timeline when it passed, unless the report keeps all, and
// naming the report's backend, profile and runtime when it names none.
func (r *Report) AddEntry(e Entry) Entry {
	if e.Verdict == string(capture.Pass) && !r.opt.AllTimelines {
		e.Timeline = nil
	}
	if e.Backend == "" {
		e.Backend, e.Profile = r.Backend, r.Profile
	}
	if e.Runtime == "" {
		e.Runtime = r.runtime()
	}
	r.Results = append(r.Results, e)
	r.Summary.count(e)
	return e
}

func (r *Report) runtime() string {
	if r.Runtime == "" {
		return RuntimeBuiltin
	}
	return r.Runtime
}

func (s *Summary) count(e Entry) {
	if s.ByOutcome == nil {
		s.ByOutcome = map[string]int{}
	}
	s.Total++
	s.ByOutcome[e.Outcome]++
	switch capture.Verdict(e.Verdict) {
	case capture.Pass:
		s.Pass++
	case capture.Fail:
		s.Fail++
	case capture.Skip:
		s.Skip++
	case capture.Uncharacterised:
		s.Uncharacterised++
	}
}

// EntryOf flattens res, timeline included, with the verdict capture gives it.
func EntryOf(res *capture.Result) Entry {
	verdict, why := res.Verdict()
	e := Entry{
		Probe: res.Probe, ID: res.ID, Set: res.Set, Hazard: string(res.Hazard),
		Labels: res.Labels, Mode: res.Mode.String(), Guards: probes.GuardsName(res.Guarded),
		Replays: res.Replays, Outcome: string(res.Outcome), Expected: string(res.Expected),
		Verdict: string(verdict), VerdictReason: why, Reason: res.Reason,
		Rounds: res.Rounds, CorruptedRounds: res.CorruptedRounds, FirstCorrupted: res.FirstCorrupted,
		SkippedSteps: res.Skipped, Leaks: res.Leaks,
		DurationMS: float64(res.Duration.Microseconds()) / 1000,
	}
	for _, c := range res.RejectedBy {
		e.RejectedBy = append(e.RejectedBy, string(c))
	}
	if rej := res.Rejection; rej != nil {
		e.Rejection = &Rejection{
			Step: rej.Step, Op: rej.Op, Code: rej.Code, Name: rej.Name, Class: string(rej.Class),
			DuringCapture: rej.DuringCapture, Invalidated: rej.Invalidated, ReplaysExact: rej.ReplaysExact,
		}
	}
	if ref := res.Refusal; ref != nil {
		e.Refusal = &Refusal{Step: ref.Step, Op: ref.Op, Detail: ref.Detail}
		for _, c := range ref.Checked {
			e.Refusal.Checked = append(e.Refusal.Checked, SideEffectCheck{What: c.What, Held: c.Held})
		}
	}
	for _, m := range res.Mismatches {
		e.Mismatches = append(e.Mismatches, Mismatch{
			Round: m.Round, Buffer: m.Buffer, Offset: m.Offset, Length: m.Length,
			Want: hex.EncodeToString(m.Want), Got: hex.EncodeToString(m.Got),
		})
	}
	for _, s := range res.Stale {
		e.Stale = append(e.Stale, Stale{
			Capture: s.Capture, Buffer: s.Buffer, Range: rangeOf(s.Range), Generation: s.Generation,
			Access: string(s.Access), Round: s.Round, Ran: s.Ran, Now: s.Now, Owners: s.Owners,
		})
	}
	for _, l := range res.Ledger {
		e.Ledger = append(e.Ledger, Residency{Capture: l.Capture, Buffer: l.Buffer, Range: rangeOf(l.Range), Generation: l.Generation, Access: string(l.Access)})
	}
	for _, ev := range res.Timeline {
		e.Timeline = append(e.Timeline, Event{
			Seq: ev.Seq, Phase: ev.Phase, Step: ev.Step, Call: ev.Call, Thread: ev.Thread.String(),
			Captured: ev.Captured, Code: ev.Code, Class: string(ev.Class), Error: ev.Err,
			Skipped: ev.Skipped, Round: ev.Round,
		})
	}
	return e
}
