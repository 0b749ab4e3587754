// Package watch watches an unmodified program's driver calls and finds stale graph replays.
//
// The program runs with the C interposer (watch/interpose) preloaded; the interposer sends one
// event per call that matters (docs/watch-events.md) and this package keeps the model and makes
// the findings (docs/watch.md).
package watch
