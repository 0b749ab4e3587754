package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/run"
)

var reportCommand = &command{
	name:     "report",
	summary:  "write a saved report or journal again in any format (render), or combine several (merge)",
	argsHelp: "render FILE | merge FILE...",
	detail: `Rebuild reports from files a run wrote, without running or judging anything again: each FILE is
a report.json (run --format json, or DIR/report.json of run --out DIR), a results.jsonl journal, or
an output directory (its report.json, else its journal). The stored verdicts are kept, every timeline
in the file is kept, and the summaries and the enforcement table are computed again.

  render  writes FILE's report(s) in --format (default text), exactly as run --format would have
          written them: one run per runs[] entry of a report.json, one run for a journal (instances
          its header selected that it does not hold are listed as not run).
  merge   combines FILEs (the shards of one run, or the runs of several platforms) into one report
          (default --format json). Entries of the same platform go into one run; runs keep the order
          in which their platform first appears; the entries of a run are ordered by instance id.
          It is an error when two files hold the same instance id for one platform, or disagree on a
          platform's backend, device or runtime. Ids a file lists as not run are dropped when
          another file ran them.

Every format says when a run is incomplete (an interrupted run, or a journal whose run is still
going) and lists the instances not run: JUnit as <error type="not-run"> testcases, Markdown and
HTML as a warning and a list, text and JSON as run writes them (runs[].not_run).

A file is read as strictly as the schema (schema/report.schema.json) reads: a value outside its
vocabularies (an outcome, a verdict status or rule, an error kind, ...) and an instance held twice
by one run are errors naming the file, the line (a journal's line, or the line of the value in a
report.json) and the JSON path of the value.

Exit 0 when no verdict fails and every selected instance ran; 1 when a verdict fails or an
instance did not run (as run exits; the instances not run are counted on stderr); 2 for usage or
input errors (a file that is neither a report nor a journal is named, with the line of the JSON
error; a value outside the schema, or an instance twice in one run, with its file and line).`,
	flags: func(fs *flag.FlagSet, env Env) func(context.Context, []string) int {
		f := &runFlags{fs: fs}
		fs.StringVar(&f.format, "format", "", "report format: text, json, junit, markdown or html (default: text for render, json for merge)")
		fs.BoolVar(&f.color, "color", false, "color the verdict marks of the text report")
		fs.BoolVar(&f.verbose, "v", false, "text report: the detail of every instance with a finding or a refusal, not only of failed ones")
		fs.BoolVar(&f.table, "table", false, "print the enforcement table, then every failing verdict, instead of the report (text or json)")
		return func(_ context.Context, args []string) int {
			if len(args) == 0 || (args[0] != "render" && args[0] != "merge") {
				fmt.Fprintf(env.Stderr, "replaycheck report: want render or merge first%s\n", verbTypo(args, "render", "merge"))
				return ExitUsage
			}
			verb, files := args[0], args[1:]
			name := "replaycheck report " + verb
			if f.format == "" {
				f.format = "text"
				if verb == "merge" {
					f.format = "json"
				}
			}
			if err := f.checkFormat(); err != nil {
				fmt.Fprintf(env.Stderr, "%s: %v\n", name, err)
				return ExitUsage
			}
			switch {
			case verb == "render" && len(files) != 1:
				fmt.Fprintf(env.Stderr, "%s: want one FILE, got %d\n", name, len(files))
				return ExitUsage
			case verb == "merge" && len(files) == 0:
				fmt.Fprintf(env.Stderr, "%s: want at least one FILE\n", name)
				return ExitUsage
			}
			var runs []*reports.Report
			var err error
			if verb == "render" {
				runs, err = readReportFile(files[0])
			} else {
				runs, err = mergeReportFiles(files)
			}
			if err != nil {
				fmt.Fprintf(env.Stderr, "%s: %v\n", name, err)
				return ExitUsage
			}
			if err := writeRuns(env, f, runs); err != nil {
				fmt.Fprintf(env.Stderr, "%s: writing the report: %v\n", name, err)
				return ExitUsage // an output error, as run's
			}
			// As run exits: 1 for a failed verdict, and for instances not run, which a report
			// that looks whole would otherwise pass off as a clean run.
			code := ExitOK
			for _, r := range runs {
				if n := len(r.NotRun); n > 0 {
					fmt.Fprintf(env.Stderr, "%s: incomplete: %s: %d of %s not run (the run was interrupted)\n",
						name, reports.RunName(r), n, plural.Count(n+len(r.Results), "instance"))
					code = ExitFail
				}
				if r.Summary.Failed() {
					code = ExitFail
				}
			}
			return code
		}
	},
}

// readReportFile rebuilds the reports a report.json, a journal or an output directory holds.
func readReportFile(path string) ([]*reports.Report, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		dir := path
		if path = filepath.Join(dir, run.ReportJSON); !exists(path) {
			path = filepath.Join(dir, run.JournalFile)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	first, _, _ := bytes.Cut(data, []byte("\n"))
	var probe struct {
		Journal *string `json:"journal"`
	}
	if json.Unmarshal(first, &probe) == nil && probe.Journal != nil {
		j, err := run.ReadJournalFile(path) // it refuses what a run never writes, naming the line
		if err != nil {
			return nil, err
		}
		return j.Reports(), nil
	}
	doc, err := reports.ReadDocument(data)
	if re := (*reports.ReadError)(nil); errors.As(err, &re) {
		switch {
		case re.NotReport && re.Line == 0:
			return nil, fmt.Errorf("%s: neither a report (JSON: %v) nor a journal (no \"journal\" header)", path, re.Err)
		case re.NotReport:
			return nil, fmt.Errorf("%s: neither a report (JSON) nor a journal: line %d: %v", path, re.Line, re.Err)
		case re.Line > 0:
			// FILE:LINE: instance ID: PATH: what is wrong, as run.ReadJournalFile's errors read.
			return nil, fmt.Errorf("%s:%d: %s", path, re.Line, re.Detail())
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	runs, err := doc.Reports()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return runs, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// mergeReportFiles combines the reports of files: one run per platform, in the order platforms
// first appear, its entries ordered by instance id.
func mergeReportFiles(files []string) ([]*reports.Report, error) {
	sources := make([]reports.Source, len(files))
	for i, file := range files {
		runs, err := readReportFile(file)
		if err != nil {
			return nil, err
		}
		sources[i] = reports.Source{Name: file, Runs: runs}
	}
	return reports.Merge(sources)
}
