// Package watch watches an unmodified program's driver calls and finds stale graph replays.
//
// The program runs with the C interposer (watch/interpose) preloaded; the interposer sends one
// event per call that matters (docs/watch-events.md) and this package keeps the model and makes
// the findings (docs/watch.md).
//
// The checker's contract: ParseEvent and ReadEvents turn lines into Events, strictly (an unknown
// event, a missing or malformed field is an error naming it; unknown keys are ignored). A Checker
// takes the events of every process in the order they were read; Add returns each distinct site
// (kind and the symbolic frames of the finding's and the captured call's stacks) once, when first
// met and not suppressed, and Result has every site with its count, the suppressions used and
// unused, the notes, the processes and the launches whose stale= verdict the checker does not
// share. The model is per process: a fork starts an empty one, an exec starts over. An
// allocation is one generation at its address, a driver allocation or an annotated pool block;
// a captured range names the allocations that held it (block and segment), so a launch is stale
// when one of them has ended, unless it was a block of a private pool whose range is free or
// taken by another capture into that pool.
package watch
