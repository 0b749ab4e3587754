// Package reports holds the runs of a replaycheck invocation and renders them; it judges nothing.
//
// A Report is one platform run: where it ran and one Entry per probe instance. An Entry is the
// engine's capture.Result as it is, with the verdict package verdict gave it (Report.Add asks
// verdict.Judge; AddEntry takes an entry already judged, such as one a parallel Ginkgo process
// recorded). Its JSON form is the result's own fields with "verdict" beside them: enums as their
// names, device addresses as 0x-prefixed hex strings, byte samples as hex, durations in
// nanoseconds.
//
// Timelines are the bulk of a result and matter only when something went wrong, so AddEntry keeps
// an instance's timeline only when its verdict is not pass, unless Options.AllTimelines says
// always. Everything else of a result is kept.
//
// Writers:
//   - WriteText: one aligned line per instance for a terminal, a detail block under every instance
//     that failed, ended in error or corrupted data, and a summary line.
//   - WriteJSON: one indented Document of one or more runs, the machine-readable record.
//   - WriteJUnit: JUnit XML for CI test reporters, a testsuite per run and a testcase per instance,
//     a failing verdict's detail block as its failure's body.
//   - WriteMarkdown: a CI job summary (GitHub's $GITHUB_STEP_SUMMARY): a verdict line per run, the
//     outcome matrix, each failure with its detail block, and the enforcement table
//     (WriteMarkdownTable).
//   - WriteHTML: one self-contained page: the SVG outcome matrix, each finding, a picture of the
//     captured memory.
//   - WriteTable: the enforcement table (EnforcementTable) of what each platform did with every
//     unguarded hazard probe; WriteFailures: one line per failing verdict.
//
// A run that did not reach every instance it selected (Report.NotRun: it was interrupted) is
// incomplete, and every writer says so and lists those instances, so that no format passes it off
// as a clean run: text and JSON list them, JUnit makes each a testcase with an <error
// type="not-run">, Markdown marks the run ⚠️ (never ✅) and lists them, HTML shows a banner and
// the list.
//
// Writers only read what they are given; they may be called any number of times.
//
// Readers: ReadDocument reads a JSON report back and refuses what no run writes, naming its line
// and JSON path: a value outside the schema's closed vocabularies (CheckEntry, which a journal's
// reader applies to each entry too), an instance one platform's run holds twice, a result of a
// platform runs[] does not name. Fields it does not know are ignored.
package reports
