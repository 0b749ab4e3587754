// Package harness is the Ginkgo glue: it turns loaded probe sets into a spec tree (one spec per
// instance, with typed labels), holds the suite configuration (backend, profile, replays, seed,
// chosen by flags or environment) and opens the one device a suite process uses.
//
// It contains no engine logic: every spec calls capture.Run and judges the Result with
// verdict.Judge. The suite's central invariant (no guarded instance ends corrupted) is a
// ReportAfterSuite over the results every spec attached to its report, in every parallel process:
// it runs nothing again, and holds over the instances the run selected.
// Specs are generated while the tree is built (Register is called from the suite's TestX before
// RunSpecs), never in BeforeSuite, as Ginkgo requires for specs generated from data.
package harness
