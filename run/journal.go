package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
)

// Files of an output directory.
const (
	JournalFile = "results.jsonl" // the journal, written as the run goes
	ReportJSON  = "report.json"   // the final report, reports.WriteJSON
	ReportText  = "report.txt"    // the final report for people, reports.WriteTexts
	ReportJUnit = "junit.xml"     // the final report for CI test reporters, reports.WriteJUnit
	ReportMD    = "summary.md"    // the final report as a CI job summary, reports.WriteMarkdown
	ReportHTML  = "report.html"   // the final report as one self-contained page, reports.WriteHTML
)

// reportFiles are the final files WriteReport writes, each with its writer, in the order written.
var reportFiles = []struct {
	name  string
	write func(io.Writer, ...*reports.Report) error
}{
	{ReportJSON, reports.WriteJSON},
	{ReportText, func(w io.Writer, runs ...*reports.Report) error {
		return reports.WriteTexts(w, reports.TextOptions{}, runs...)
	}},
	{ReportJUnit, reports.WriteJUnit},
	{ReportMD, reports.WriteMarkdown},
	{ReportHTML, reports.WriteHTML},
}

// ReportFiles names the final files of an output directory (WriteReport), in the order written.
func ReportFiles() []string {
	out := make([]string, len(reportFiles))
	for i, f := range reportFiles {
		out[i] = f.name
	}
	return out
}

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

// JournalRun is one run of a journal: its header line and the entries that follow it.
type JournalRun struct {
	Header  Header
	Entries []reports.Entry // in journal order

	lines map[string]int // the line of each entry's id, as the journal is read
}

// Complete reports whether the run holds an entry for every instance its header selected.
func (r *JournalRun) Complete() bool {
	held := make(map[string]bool, len(r.Entries))
	for _, e := range r.Entries {
		held[e.ID] = true
	}
	for _, id := range r.Header.Instances {
		if !held[id] {
			return false
		}
	}
	return true
}

// Journal is an output directory's results.jsonl: a Sink (and Starter) that writes each finished
// entry as one line and syncs it to disk before the next instance starts, and, read back
// (ReadJournal), what an interrupted invocation finished. It holds one run per profile of the
// invocation (Config.Plan), each a header line followed by its entries; only the last can be
// unfinished, because a run that stops early ends the invocation.
type Journal struct {
	Dir  string
	Runs []*JournalRun // read back or written, in journal order

	f        *os.File
	cur      *JournalRun // the run results go to: the last one started
	resuming *JournalRun // the next Start continues this run instead of writing a header
	valid    int64       // bytes of the file up to the end of its last whole line
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

// Start writes the header of a new run (Starter). When the journal is resuming a run, the header
// is already there and must name the same selection.
func (j *Journal) Start(h Header) error {
	if r := j.resuming; r != nil {
		j.resuming = nil
		if !slices.Equal(h.Instances, r.Header.Instances) {
			return fmt.Errorf("resuming %s: the selection is not the one the journal began", j.Dir)
		}
		j.cur = r
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
	j.cur = &JournalRun{Header: h}
	j.Runs = append(j.Runs, j.cur)
	return syncDir(j.Dir)
}

// Result appends e as one line of the current run and syncs it (Sink).
func (j *Journal) Result(e reports.Entry) error {
	if j.f == nil || j.cur == nil {
		return fmt.Errorf("journal %s: a result before the header", j.Dir)
	}
	if err := j.writeLine(e); err != nil {
		return err
	}
	j.cur.Entries = append(j.cur.Entries, e)
	return nil
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
	if len(j.Runs) == 0 && j.valid == 0 {
		err = errors.Join(err, os.Remove(filepath.Join(j.Dir, JournalFile)))
	}
	return err
}

// ReadJournal reads dir's journal: its runs, each header with every whole entry line after it. A
// torn last line (a run killed while writing it) is ignored; any other line that is neither a
// header nor an entry is an error.
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
		err := j.readLine(line, n)
		var foreign *foreignError
		var bad *badEntryError
		if err != nil {
			if len(after) == 0 && !errors.As(err, &foreign) && !errors.As(err, &bad) {
				break // the last line, torn on a disk that kept its newline but not all before it
			}
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		j.valid += int64(len(line) + 1)
		rest = after
	}
	if len(j.Runs) == 0 {
		return nil, fmt.Errorf("%s: no header: the run ended before its device was open; start it again", path)
	}
	return j, nil
}

// readLine reads line n of a journal: a header starts a run, anything else is an entry of the
// last run begun.
func (j *Journal) readLine(line []byte, n int) error {
	var kind struct {
		Journal *string `json:"journal"`
	}
	if err := json.Unmarshal(line, &kind); err != nil {
		return err
	}
	if kind.Journal != nil || n == 1 {
		var h Header
		if err := json.Unmarshal(line, &h); err != nil {
			return err
		}
		if h.Journal != JournalFormat {
			return &foreignError{found: h.Journal}
		}
		j.Runs = append(j.Runs, &JournalRun{Header: h})
		return nil
	}
	var e reports.Entry
	if err := json.Unmarshal(line, &e); err != nil {
		return err
	}
	if e.ID == "" {
		return errors.New("an entry without an id")
	}
	// What a run never writes: a value outside the report schema's vocabularies, an instance twice.
	if err := reports.CheckEntry(&e); err != nil {
		return &badEntryError{fmt.Errorf("instance %s: %w", e.ID, err)}
	}
	r := j.Runs[len(j.Runs)-1]
	if at, dup := r.lines[e.ID]; dup {
		return &badEntryError{fmt.Errorf("instance %s: again (first on line %d): %s", e.ID, at, reports.OnceEach)}
	}
	if r.lines == nil {
		r.lines = map[string]int{}
	}
	r.lines[e.ID] = n
	r.Entries = append(r.Entries, e)
	return nil
}

// badEntryError is an entry that decodes but that no run writes: refused even as the last line,
// which a torn write could not have made.
type badEntryError struct{ err error }

func (e *badEntryError) Error() string { return e.err.Error() }
func (e *badEntryError) Unwrap() error { return e.err }

// foreignError is a header line of another format (or another version of this one): never a torn
// line, whatever its place.
type foreignError struct{ found string }

func (e *foreignError) Error() string {
	return fmt.Sprintf("not a replaycheck journal header (want %q, found %q)", JournalFormat, e.found)
}

// Config is the configuration the journal's invocation began with: its first run's, with the
// plan of every run it was to make.
func (j *Journal) Config() Config { return j.Runs[0].Header.Config }

// Resume continues the journal's invocation over instances, which must be the selection its
// runs began with (their headers' ids). The configuration is the first header's, and version
// must be the version that header names (Config.Version, "" for "dev"): a resumed run is one run,
// made by one build. Each run of the plan (Config.Plan) is then, in order: read back when the
// journal holds it whole, continued when it was interrupted (a torn last line is cut off first,
// and the instances it lacks run and are appended), or run afresh and appended. done is called
// with each run's report and error as Execute returns them; it stops where Execute would stop a
// front (ExecutePlan). Entries read back go to no sink; new ones go to the journal, then to sinks.
func (j *Journal) Resume(ctx context.Context, version string, instances []probes.Instance, done func(*reports.Report, error), sinks ...Sink) error {
	c := j.Config()
	c.Version = version
	if h := j.Runs[0].Header; h.Version != c.version() || h.Tool != Tool {
		return fmt.Errorf("resuming %s: the journal was written by %s %s, this is %s %s: resume it with the build that began it, or start again",
			j.Dir, h.Tool, h.Version, Tool, c.version())
	}
	plan := c.plan()
	if len(j.Runs) > len(plan) {
		return fmt.Errorf("resuming %s: the journal holds %d runs, its plan has %d", j.Dir, len(j.Runs), len(plan))
	}
	for k, r := range j.Runs {
		if got := r.Header.Config.Profile; got != plan[k] {
			return fmt.Errorf("resuming %s: run %d of the journal is profile %q, its plan says %q", j.Dir, k+1, got, plan[k])
		}
		if k < len(j.Runs)-1 && !r.Complete() {
			return fmt.Errorf("resuming %s: run %d of the journal (profile %s) is unfinished but another follows it", j.Dir, k+1, plan[k])
		}
	}
	ids := make([]string, len(instances))
	for i, in := range instances {
		ids[i] = in.ID()
	}
	if !slices.Equal(ids, j.Runs[0].Header.Instances) {
		return fmt.Errorf("resuming %s: the probe files now select other instances than the journal's %d (were they changed?)", j.Dir, len(j.Runs[0].Header.Instances))
	}
	if err := j.reopen(); err != nil {
		return err
	}
	defer j.Close()
	runPlan(ctx, c, instances, j, done, sinks)
	return nil
}

// reopen opens the journal's file for appending after its last whole line, cutting a torn line off.
func (j *Journal) reopen() error {
	f, err := os.OpenFile(filepath.Join(j.Dir, JournalFile), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(j.valid); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Seek(j.valid, 0); err != nil {
		f.Close()
		return err
	}
	j.f = f
	return nil
}

// Resume reads dir's journal, loads and selects its probes again from the header's configuration
// and resumes it (Journal.Resume) with the given version. A front end that prints the probe
// files' problems its own way does these steps itself.
func Resume(ctx context.Context, dir, version string, done func(*reports.Report, error), sinks ...Sink) error {
	j, err := ReadJournal(dir)
	if err != nil {
		return err
	}
	c := j.Config()
	ps, err := Load(c.Paths...)
	if err != nil {
		return err
	}
	instances, err := Select(ps, c)
	if err != nil {
		return err
	}
	return j.Resume(ctx, version, instances, done, sinks...)
}

// WriteReport writes the final files of an output directory from the reports of its runs:
// report.json, report.txt, junit.xml, summary.md and report.html (ReportFiles). Each is written to
// a temporary file in dir, synced and renamed over its name, so a reader sees the old file or the
// whole new one, never part of one. A file that cannot be written does not stop the others: the
// error joins every file's failure (WriteReportFiles says which were written).
func WriteReport(dir string, runs ...*reports.Report) error {
	_, err := WriteReportFiles(dir, runs...)
	return err
}

// WriteReportFiles is WriteReport, and names the files it wrote, in the order of ReportFiles.
func WriteReportFiles(dir string, runs ...*reports.Report) (written []string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var errs []error
	for _, f := range reportFiles {
		if err := writeAtomic(dir, f.name, func(w *os.File) error { return f.write(w, runs...) }); err != nil {
			errs = append(errs, err)
			continue
		}
		written = append(written, f.name)
	}
	return written, errors.Join(errs...)
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
	if runtime.GOOS == "windows" {
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

// Reports are the journal's runs as reports (JournalRun.Report), in order.
func (j *Journal) Reports() []*reports.Report {
	out := make([]*reports.Report, len(j.Runs))
	for i, r := range j.Runs {
		out[i] = r.Report()
	}
	// A plan interrupted between runs journals nothing of those it never began: each is reported
	// with every instance not run, as the interrupted invocation reported it.
	if len(j.Runs) > 0 {
		h := j.Runs[0].Header
		for k := len(j.Runs); k < len(h.Config.Plan); k++ {
			c := h.Config
			c.Profile, c.Version = h.Config.Plan[k], h.Version
			out = append(out, notStarted(c, h.Instances))
		}
	}
	return out
}

// Report is the run as a report: its header's run, its entries with their verdicts (nothing is
// judged again), every timeline they hold, and the selected instances it does not hold as not run.
func (jr *JournalRun) Report() *reports.Report {
	h := jr.Header
	r := reports.FromRun(h.Tool, h.Version, reports.Run{
		Backend: h.Backend, Platform: h.Platform, Profile: h.Profile, Device: h.Device,
		Runtime: h.Runtime, Baseline: h.Baseline, RunID: h.RunID, Host: h.Host, Started: h.Started,
	})
	held := map[string]bool{}
	for _, e := range jr.Entries {
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
