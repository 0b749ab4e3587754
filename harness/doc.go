// Package harness is the Ginkgo glue: it turns loaded probe sets into a spec tree (one spec per
// instance, with typed labels), holds the suite configuration (package run's Config, with its
// environment defaults and rules, chosen by -replaycheck.* flags) and opens the one device a suite
// process uses (run.Open).
//
// It contains no engine or judging logic of its own: Ginkgo owns the loop over instances, so each
// spec runs and judges its instance with run.Instance, the CLI's code path (run.Execute) for one
// instance, and the instances are those run.Select picks. The suite's central invariant (no guarded instance ends corrupted) is a
// ReportAfterSuite over the results every spec attached to its report, in every parallel process:
// it runs nothing again, and holds over the instances the run selected.
// Specs are generated while the tree is built (Register is called from the suite's TestX before
// RunSpecs), never in BeforeSuite, as Ginkgo requires for specs generated from data.
//
// A suite's test binary calls ServeWorker (it is the worker of -replaycheck.isolate) and Supervise
// (the suite runs in a supervised child of the binary, so that a runtime plugin's _exit(0) is no
// pass) from an init function, and runs its specs with RunSpecs, which says that the suite
// finished. See specs/specs_suite_test.go.
package harness
