package reports

import (
	"encoding/json"
	"github.com/replaycheck/replaycheck/runtime"
	"time"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/verdict"
	"github.com/replaycheck/replaycheck/watch"
)

// Report is one platform run: where it ran and what every instance did. Its JSON form is a
// Document (WriteJSON), which also holds several runs.
type Report struct {
	Tool    string `json:"tool"`
	Version string `json:"version"`
	// RunID identifies the run (a UUID): the same in its journal, its report and a resumed run.
	RunID   string    `json:"run_id,omitempty"`
	Host    string    `json:"host,omitempty"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	// Driver and RuntimeVersion are the versions the device's backend reports, where it knows them.
	Driver         string `json:"driver,omitempty"`
	RuntimeVersion string `json:"runtime_version,omitempty"`
	// Config is the run's configuration as the run layer records it (nil when unknown).
	Config  json.RawMessage `json:"config,omitempty"`
	Backend string          `json:"backend"`
	// Platform is the platform key of the device the run used (device.Device.Platform), the
	// key of its baseline; Profile is the simulator profile, when the backend has one.
	Platform string `json:"platform"`
	Profile  string `json:"profile,omitempty"`
	Device   string `json:"device"`
	// Runtime is the runtime under test ("" is runtime.Builtin).
	Runtime string  `json:"runtime"`
	Summary Summary `json:"summary"`
	Results []Entry `json:"results"`
	// Baseline is the platform baseline unguarded results are judged against (nil: none). Set it
	// before Add.
	Baseline *verdict.Baseline `json:"-"`
	// BaselineFile names the baseline used, for readers of the report.
	BaselineFile string `json:"baseline,omitempty"`
	// Enforcement is the enforcement table, written as the report's last section when set.
	Enforcement *Table `json:"enforcement,omitempty"`
	// NotRun are the ids of selected instances the run never ran (it was interrupted), in
	// selection order: neither passed nor in error, so not in Results or the Summary.
	NotRun []string `json:"not_run,omitempty"`
	// Watch is what `replaycheck watch` ran and saw, Findings what it found (see watch.go): set,
	// the report is a watch report, which has no Results, and every writer renders it as one.
	Watch    *WatchRun       `json:"watch,omitempty"`
	Findings []watch.Finding `json:"findings,omitempty"`

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
	// ByOutcome counts instances per outcome name (exact, rejected, refused, corrupted, error,
	// skipped).
	ByOutcome map[string]int `json:"by_outcome"`
}

// Failed reports whether any instance failed its verdict.
func (s Summary) Failed() bool { return s.Fail > 0 }

// Entry is one probe instance as a report holds it: the engine's result, as it is, and its
// verdict. Its JSON form is the result's fields with "verdict" beside them.
type Entry struct {
	capture.Result
	Verdict verdict.Verdict `json:"verdict"`
	// DeviceChange says what the run did with the device after this instance lost or abandoned
	// it (Result.DeviceState); nil when the device went on.
	DeviceChange *DeviceChange `json:"device_change,omitempty"`
}

// DeviceChange is what a run did with a device an instance lost or abandoned: the instances that
// follow run on a fresh device, or are skipped, saying why.
type DeviceChange struct {
	// State is the instance's capture.DeviceState: lost or abandoned.
	State capture.DeviceState `json:"state"`
	// Device describes the device given up: a lost one is closed (a reset where a fresh one
	// replaces it), an abandoned one is left with its worker blocked and never called again.
	Device string `json:"device"`
	// Replacement describes the fresh device the following instances run on; "" when none could
	// be opened, and every following instance is skipped.
	Replacement string `json:"replacement,omitempty"`
	// Detail says why no device replaced it, and what closing a lost device reported.
	Detail string `json:"detail,omitempty"`
}

// New starts an empty report stamped with the current time. The caller fills in Backend,
// Platform, Profile and Device once the device is open.
func New(tool, version string, opt Options) *Report {
	return &Report{
		Tool: tool, Version: version, Started: time.Now().UTC(),
		Summary: Summary{ByOutcome: map[string]int{}},
		Results: []Entry{},
		opt:     opt,
	}
}

// Add judges res against r.Baseline (verdict.Judge), appends it, counts it in the summary and
// returns the entry as stored. A nil res is ignored.
func (r *Report) Add(res *capture.Result) Entry {
	if res == nil {
		return Entry{}
	}
	return r.AddEntry(Entry{Result: *res, Verdict: verdict.Judge(res, r.Baseline)})
}

// Trim is e as a report with these options keeps it: without its timeline when it passed, unless
// the report keeps all. A worker of an isolated run trims its entry before sending it: the
// timeline of a probe of 100,000 ops is 20 MB of JSON to encode, send and decode for nothing.
func (o Options) Trim(e Entry) Entry {
	if e.Verdict.Status == verdict.Pass && !o.AllTimelines {
		e.Timeline = capture.Timeline{}
	}
	return e
}

// AddEntry appends an entry already judged (e.g. one a Ginkgo process recorded), counts it and
// returns it as stored: without its timeline when it passed, unless the report keeps all.
func (r *Report) AddEntry(e Entry) Entry {
	e = r.opt.Trim(e)
	r.Results = append(r.Results, e)
	r.Summary.count(e)
	return e
}

func (r *Report) runtime() string {
	if r.Runtime == "" {
		return runtime.Builtin
	}
	return r.Runtime
}

func (s *Summary) count(e Entry) {
	if s.ByOutcome == nil {
		s.ByOutcome = map[string]int{}
	}
	s.Total++
	s.ByOutcome[string(e.Outcome)]++
	switch e.Verdict.Status {
	case verdict.Pass:
		s.Pass++
	case verdict.Fail:
		s.Fail++
	case verdict.Skip:
		s.Skip++
	case verdict.Uncharacterised:
		s.Uncharacterised++
	}
}
