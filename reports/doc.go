// Package reports is the result model of a replaycheck run and its writers.
//
// A Report collects one Entry per probe instance. An Entry is a JSON-friendly flattening of a
// capture.Result together with its verdict (capture.Result.Verdict): enums become their names,
// device addresses 0x-prefixed hex strings, byte samples hex strings, durations milliseconds.
// Nothing is judged here: the outcome comes from the engine and the verdict from capture.
//
// Timelines are the bulk of a result and matter only when something went wrong, so Add keeps an
// instance's timeline only when its verdict is not pass, unless Options.AllTimelines says always.
// Everything else of a result is kept.
//
// Writers:
//   - WriteText: one aligned line per instance for a terminal, a detail block under every instance
//     that failed, ended in error or corrupted data, and a summary line.
//   - WriteJSON: one indented JSON document with a "results" array, the machine-readable record.
//
// Writers only read the Report; they may be called any number of times.
package reports
