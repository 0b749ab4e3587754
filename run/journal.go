package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"time"

	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
)

// Files of an output directory.
const (
	JournalFile = "results.jsonl" // the journal, written as the run goes
	ReportJSON  = "report.json"   // the final report, reports.WriteJSON
	ReportText  = "report.txt"    // the final report, reports.WriteText with the enforcement table
)

// JournalFormat is the journal header's "journal" value; a reader refuses any other.
const JournalFormat = "replaycheck-journal/v1"

// Header is the journal's first line: the run's identity and everything needed to run the rest of
// it again (Resume).
type Header struct {
	Journal  string    `json:"journal"` // JournalFormat
	Tool     string    `json:"tool"`
	Version  string    `json:"version"`
	RunID    string    `json:"run_id"`
	Host     string    `json:"host,omitempty"`
	Started  time.Time `json:"started"`
	Backend  string    `json:"backend"`
	Profile  string    `json:"profile,omitempty"`
	Platform string    `json:"platform"` // the opened device's platform key
	Device   string    `json:"device"`
	Runtime  string    `json:"runtime"` // the runtime under test's name; "builtin" for the built-in guards
	Baseline string    `json:"baseline,omitempty"`
	// Config is the run's configuration (Config's JSON form; paths absolute).
	Config Config `json:"config"`
	// Instances are the ids of the selected instances, in selection order: the report's order.
	Instances []string `json:"instances"`
}

// Journal is an output directory's results.jsonl: a Sink (and Starter) that writes each finished
// entry as one line and syncs it to disk before the next instance starts, and, read back
// (ReadJournal), what an interrupted run finished.
type Journal struct {
	Dir     string
	Header  Header
	Entries []reports.Entry // the entries read back, in journal order

	f       *os.File
	started bool  // the header is on disk (a journal read back, or Start ran)
	valid   int64 // bytes of the file up to the end of its last whole line
}

// Create makes dir (and its parents) and a new, empty journal in it. A directory that already
// holds a journal is an error: resume it, or choose another.
func Create(dir string) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, JournalFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%s already holds a journal (%s): resume it, or write to another directory", dir, JournalFile)
	}
	if err != nil {
		return nil, err
	}
	return &Journal{Dir: dir, f: f}, nil
}

// Start writes the header (Starter). On a journal being resumed the header is already there and
// must name the same selection.
func (j *Journal) Start(h Header) error {
	if j.started {
		if !slices.Equal(h.Instances, j.Header.Instances) {
			return fmt.Errorf("resuming %s: the selection is not the one the journal began", j.Dir)
		}
		return nil
	}
	if j.f == nil {
		return fmt.Errorf("journal %s is not open for writing", j.Dir)
	}
	h.Config.Paths = slices.Clone(h.Config.Paths)
	for i, p := range h.Config.Paths {
		if abs, err := filepath.Abs(p); err == nil {
			h.Config.Paths[i] = abs
		}
	}
	if err := j.writeLine(h); err != nil {
		return err
	}
	j.Header, j.started = h, true
	return syncDir(j.Dir)
}

// Result appends e as one line and syncs it (Sink).
func (j *Journal) Result(e reports.Entry) error {
	if j.f == nil || !j.started {
		return fmt.Errorf("journal %s: a result before the header", j.Dir)
	}
	return j.writeLine(e)
}

// writeLine writes v as one JSON line in one write, then syncs the file: a crash loses at most
// the line being written, which a reader recognises as torn.
func (j *Journal) writeLine(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("journal %s: %w", j.Dir, err)
	}
	line = append(line, '\n')
	if _, err := j.f.Write(line); err != nil {
		return fmt.Errorf("journal %s: %w", j.Dir, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal %s: %w", j.Dir, err)
	}
	j.valid += int64(len(line))
	return nil
}

// Close closes the journal's file. A journal created but never started (the run failed before
// its device was open) is removed, so the directory can be used again.
func (j *Journal) Close() error {
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	if !j.started && j.valid == 0 {
		err = errors.Join(err, os.Remove(filepath.Join(j.Dir, JournalFile)))
	}
	return err
}

// ReadJournal reads dir's journal: its header and every whole entry line. A torn last line (a
// run killed while writing it) is ignored; any other line that is not an entry is an error.
func ReadJournal(dir string) (*Journal, error) {
	return ReadJournalFile(filepath.Join(dir, JournalFile))
}

// ReadJournalFile reads the journal at path, whatever its name, as ReadJournal does; its Dir is
// path's directory.
func ReadJournalFile(path string) (*Journal, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	j := &Journal{Dir: filepath.Dir(path)}
	rest := data
	for n := 1; len(rest) > 0; n++ {
		line, after, whole := bytes.Cut(rest, []byte("\n"))
		if !whole {
			break // torn: the run died writing this line (a line is whole once its newline is written)
		}
		var err error
		if n == 1 {
			if err = json.Unmarshal(line, &j.Header); err == nil && j.Header.Journal != JournalFormat {
				return nil, fmt.Errorf("%s:1: not a replaycheck journal (want %q, found %q)", path, JournalFormat, j.Header.Journal)
			}
		} else {
			var e reports.Entry
			if err = json.Unmarshal(line, &e); err == nil && e.ID == "" {
				err = errors.New("an entry without an id")
			}
			if err == nil {
				j.Entries = append(j.Entries, e)
			}
		}
		if err != nil {
			if len(after) == 0 {
				break // the last line, torn on a disk that kept its newline but not all before it
			}
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		j.valid += int64(len(line) + 1)
		j.started = true
		rest = after
	}
	if !j.started {
		return nil, fmt.Errorf("%s: no header: the run ended before its device was open; start it again", path)
	}
	return j, nil
}

// Resume runs the instances the journal does not hold yet, appending them to it (a torn last
// line is cut off first), and returns the report of the whole run: the journalled entries and the
// new ones, in the order of instances, which must be the selection the journal began with (the
// header's ids). The configuration is the header's. Entries read back go to no sink; new ones go
// to the journal, then to sinks.
func (j *Journal) Resume(ctx context.Context, instances []probes.Instance, sinks ...Sink) (*reports.Report, error) {
	ids := make([]string, len(instances))
	for i, in := range instances {
		ids[i] = in.ID()
	}
	if !slices.Equal(ids, j.Header.Instances) {
		return nil, fmt.Errorf("resuming %s: the probe files now select other instances than the journal's %d (were they changed?)", j.Dir, len(j.Header.Instances))
	}
	f, err := os.OpenFile(filepath.Join(j.Dir, JournalFile), os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(j.valid); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(j.valid, 0); err != nil {
		f.Close()
		return nil, err
	}
	j.f = f
	defer j.Close()
	c := j.Header.Config
	return execute(ctx, c, instances, j, append([]Sink{j}, sinks...))
}

// Resume reads dir's journal, loads and selects its probes again from the header's configuration
// and resumes it (Journal.Resume). A front end that prints the probe files' problems its own way
// does these steps itself.
func Resume(ctx context.Context, dir string, sinks ...Sink) (*reports.Report, error) {
	j, err := ReadJournal(dir)
	if err != nil {
		return nil, err
	}
	ps, err := Load(j.Header.Config.Paths...)
	if err != nil {
		return nil, err
	}
	instances, err := Select(ps, j.Header.Config)
	if err != nil {
		return nil, err
	}
	return j.Resume(ctx, instances, sinks...)
}

// WriteReport writes the final files of an output directory: report.json (reports.WriteJSON) and
// report.txt (reports.WriteText, the enforcement table last). Each is written to a temporary
// file in dir, synced and renamed over its name, so a reader sees the old file or the whole new
// one, never part of one.
func WriteReport(dir string, rep *reports.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	err := writeAtomic(dir, ReportJSON, func(f *os.File) error { return reports.WriteJSON(f, rep) })
	if err != nil {
		return err
	}
	text := *rep
	text.Enforcement = reports.EnforcementTable(rep)
	return writeAtomic(dir, ReportText, func(f *os.File) error { return reports.WriteText(f, &text, reports.TextOptions{}) })
}

func writeAtomic(dir, name string, write func(*os.File) error) error {
	f, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
	}
	return syncDir(dir)
}

// syncDir makes a new or renamed name in dir durable (a no-op where directories cannot be synced).
func syncDir(dir string) error {
	if goruntime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// Report is the journal's run as a report: its header's run, its entries with their verdicts
// (nothing is judged again), every timeline they hold, and the selected instances it does not
// hold as not run.
func (j *Journal) Report() *reports.Report {
	h := j.Header
	r := reports.FromRun(h.Tool, h.Version, reports.Run{
		Backend: h.Backend, Platform: h.Platform, Profile: h.Profile, Device: h.Device,
		Runtime: h.Runtime, Baseline: h.Baseline, RunID: h.RunID, Host: h.Host, Started: h.Started,
	})
	held := map[string]bool{}
	for _, e := range j.Entries {
		held[e.ID] = true
		r.AddEntry(e)
	}
	for _, id := range h.Instances {
		if !held[id] {
			r.NotRun = append(r.NotRun, id)
		}
	}
	return r
}
