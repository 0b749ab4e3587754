package reports

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/replaycheck/replaycheck/watch"
)

// Document is the JSON form of a run: one shape whatever was selected. A run over several
// platform profiles has one entry in Runs per profile; Results holds every instance of every
// run, each naming its backend, profile and runtime; Enforcement is one table over all runs.
type Document struct {
	Tool    string    `json:"tool"`
	Version string    `json:"version"`
	Started time.Time `json:"started"`
	Runs    []Run     `json:"runs"`
	// Summary counts every result of every run.
	Summary     Summary `json:"summary"`
	Results     []Entry `json:"results"`
	Enforcement *Table  `json:"enforcement,omitempty"` // nil for watch reports
	// Watch and Findings are a watch report's (Report.Watch, Report.Findings): absent from the
	// report of a run.
	Watch    *WatchRun       `json:"watch,omitempty"`
	Findings []watch.Finding `json:"findings,omitempty"`
}

// Run is the header of one platform run of a Document.
type Run struct {
	// Platform is backend/profile, the key of its baseline ("sim/cann").
	Platform string  `json:"platform"`
	Backend  string  `json:"backend"`
	Profile  string  `json:"profile,omitempty"`
	Device   string  `json:"device,omitempty"`
	Runtime  string  `json:"runtime"`
	Baseline string  `json:"baseline,omitempty"`
	Summary  Summary `json:"summary"`
	// NotRun are the ids of the instances the run never ran (Report.NotRun).
	NotRun []string `json:"not_run,omitempty"`
	// RunID, Host, Started and Ended identify the run; Driver and RuntimeVersion are the device's
	// versions where known; Config is the run's configuration.
	RunID          string          `json:"run_id,omitempty"`
	Host           string          `json:"host,omitempty"`
	Started        time.Time       `json:"started"`
	Ended          time.Time       `json:"ended,omitzero"`
	Driver         string          `json:"driver,omitempty"`
	RuntimeVersion string          `json:"runtime_version,omitempty"`
	Config         json.RawMessage `json:"config,omitempty"`
}

// DocumentOf gathers runs into one Document, with the enforcement table over all of them, and a
// watch report's header (the first run's that has one) and findings (every run's).
func DocumentOf(runs ...*Report) *Document {
	d := &Document{Runs: []Run{}, Results: []Entry{}, Summary: Summary{ByOutcome: map[string]int{}}}
	for i, r := range runs {
		if i == 0 {
			d.Tool, d.Version, d.Started = r.Tool, r.Version, r.Started
		}
		d.Runs = append(d.Runs, runOf(r))
		for _, e := range r.Results {
			d.Results = append(d.Results, e)
			d.Summary.count(e)
		}
		if d.Watch == nil && r.Watch != nil {
			d.Watch = r.Watch
		}
		for _, f := range r.Findings {
			d.Findings = append(d.Findings, findingAsWritten(f))
		}
	}
	// A watch report has no instances, so no enforcement table: null, not a table of empty columns.
	if !slices.ContainsFunc(runs, func(r *Report) bool { return !r.IsWatch() }) {
		return d
	}
	d.Enforcement = EnforcementTable(runs...)
	return d
}

// WriteJSON writes runs as one indented Document (see DocumentOf), byte for byte what
// WriteJSONValue writes for it, but one result at a time: results with 100,000-call timelines
// make a document of hundreds of MB, which json.Encoder would build whole in memory twice (compact,
// then indented) before writing a byte.
func WriteJSON(w io.Writer, runs ...*Report) error {
	d := DocumentOf(runs...)
	results := d.Results
	d.Results = []Entry{}
	var shell bytes.Buffer
	if err := WriteJSONValue(&shell, d); err != nil {
		return err
	}
	// A top-level key is the only text indented by two spaces after a line break: nested keys are
	// indented deeper, and a line break inside a string is escaped.
	const empty = "\n  \"results\": [],\n"
	head, tail, ok := bytes.Cut(shell.Bytes(), []byte(empty))
	if !ok {
		return fmt.Errorf("writing JSON report: no results key in %.200q", shell.Bytes())
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(head)
	bw.WriteString("\n  \"results\": [")
	var one bytes.Buffer
	enc := json.NewEncoder(&one)
	enc.SetIndent("    ", "  ") // an element of the document's results, two levels deep
	enc.SetEscapeHTML(false)
	for i := range results {
		one.Reset()
		if err := enc.Encode(&results[i]); err != nil {
			return fmt.Errorf("writing JSON report: %w", err)
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		bw.Write(bytes.TrimSuffix(one.Bytes(), []byte("\n")))
	}
	if len(results) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("],\n")
	bw.Write(tail)
	if err := bw.Flush(); err != nil { // a bufio.Writer keeps its first error
		return fmt.Errorf("writing JSON report: %w", err)
	}
	return nil
}

// WriteJSONValue writes any report value (a Document, a Table) as one indented JSON document.
func WriteJSONValue(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// Calls and reasons quote code like "y += 3 * x"; HTML escaping would only make them unreadable.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("writing JSON report: %w", err)
	}
	return nil
}
