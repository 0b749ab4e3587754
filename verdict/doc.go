// Package verdict decides whether a result passes, and owns what a verdict is judged against.
//
// Judge is the one place a verdict is decided: a capture.Result against its probe's expectation
// and, for an unguarded instance, the platform baseline. The expectation is the one of the
// result's platform and capture mode: the result records it (Expected, RejectedBy, RefusedBy),
// each field from the most specific of the probe's expect.platforms.FAMILY.modes.MODE,
// expect.modes.MODE, expect.platforms.FAMILY and its own expectation (probes.Instance.ExpectedOn,
// RefusedByOn). A refused instance whose probe names who must refuse passes only when its first
// refusal (Refusal: the guard the runtime named, the step) is that one: a regression in one guard
// then fails, rather than hiding behind the guard after it. The Verdict says which rule decided it
// (Rule), why in a sentence, and, when the platform's behaviour changed, the typed Drift. Judge
// reads only fields a Result keeps in its JSON form, so a result written by another process and
// read back judges exactly as the original.
//
// A Baseline records what one platform (backend/profile) did with every unguarded instance of a
// catalog: outcome and, for a rejection, class, code and whether the capture was invalidated. It is
// read strictly (errors name the file and line) and written sorted, one instance per line, so it
// diffs well under version control. Only unguarded instances are recorded: the guards are the
// runtime's, the baseline is the platform's.
package verdict
