// Package run is the one code path from a configuration to judged results, shared by both front
// ends: the CLI (cmd/replaycheck) and the Ginkgo suite (harness). It sits between the engine
// (capture), the judge (verdict) and the report (reports) on one side and the fronts on the other,
// and holds no front's concerns (terminals, Ginkgo). The processes it starts (a front's supervised
// child, the workers of crash isolation) are run/proc's: run decides what they do, proc how they
// are started, watched and ended.
//
// # Configuration
//
// Config is a run's settings. Defaults is the one place the REPLAYCHECK_* environment variables
// are read (BACKEND, PROFILE, REPLAYS, SEED, MODES, GUARDS, BASELINE, RUNTIME, SHARD, FAULT), and
// Config.Check the one place settings are validated. The rule: an environment variable is the
// default of the flag it stands for and takes exactly what that flag takes (REPLAYCHECK_REPLAYS=0
// means each probe's own replays, as --replays 0 does); a malformed one is an error only when no
// flag replaced it (Config.Set). The default profile is backends.DefaultProfile.
//
// The values of the flags whose syntax is run's own are here too (ReplaysFlag, SeedFlag,
// FaultFlag; Shard is its own flag.Value): both fronts declare the same flags, each under its own
// names (--replays, -replaycheck.replays), and a flag must take exactly what its environment
// variable takes, which Defaults parses. So the parsing lives once, beside Defaults, and the fronts
// only name the flags.
//
// # Selection
//
// Select expands probes into instances in the stable order of probes.Instances, narrowed by the
// matrix (modes, guards), the probe ids, the --run pattern and a Shard. Shard K/N holds the
// instances whose id hashes (FNV-1a 64) to K-1 modulo N: the N shards of a selection are disjoint
// and together are exactly the selection, whatever the host, so a catalog splits across hosts or
// the pods of a Kubernetes Indexed Job without coordination. Merging shards' results and sorting
// them by selection order gives the unsharded run's results.
//
// # Execution
//
// Execute opens the backend and its device 0 (Open), finds the baseline of the opened device's
// platform (Config.LocateBaseline), runs each instance with capture.Run under the per-instance
// timeout and judges it with verdict.Judge (Instance, which the Ginkgo suite calls per spec too),
// hands each entry to the sinks as it finishes and returns the reports.Report. Cancelling the
// context stops the run after the instance in flight; AbandonWith adds a second context that
// abandons that instance too, at once: one still inside a device call after AbandonWait is left
// there with the device (ErrAbandonedInCall). Instances that did not run are listed in
// Report.NotRun, neither passed nor in error. ExecutePlan makes one such run per profile of a list
// ("cann,cuda"), in order; after a run that did not finish it begins no other, and hands each run
// it did not begin as a report listing every instance as not run, so the reports name every run
// of the plan.
//
// # Faults and lost devices
//
// Config.Faults (run --fault KIND@N, REPLAYCHECK_FAULT) are injected into every selected instance
// after the probe's own (capture.Options.Faults). One fault fires per call, as in a probe file: two
// of the run's at the same call are refused by Config.Check, and one at the same call as a
// selected probe's own by Config.CheckFaults (Execute refuses the run before it opens anything;
// Instance, run alone, ends that instance in error, kind setup), naming the probe and both faults. An instance that leaves its device lost or
// abandoned (capture.Result.DeviceState) is followed by Platform.Recover, which InstanceOn (the
// one way Execute and the suite run an instance) calls after it: the device is closed (lost) or
// abandoned, and a fresh one is opened where the backend can (device.Recoverer); otherwise every
// following instance is skipped, saying which device went and why. The instance's entry says which
// (reports.Entry.DeviceChange).
//
// # Crash isolation
//
// Config.Isolate (run --isolate, REPLAYCHECK_ISOLATE, the suite's -replaycheck.isolate) runs each
// instance in a worker process, this executable again with EnvWorker set (ServeWorker answers it;
// isolate.go), started and watched by proc.RunWorker. The worker stores the name of each device
// call before it makes it on a page of memory it shares with the parent (the last-call page:
// proc.MapLastCall; the calls are traced by isolate_trace.go) and writes its judged entry on a
// pipe, so a worker that dies (a signal inside a driver library or runtime plugin, a panic, an
// exit) or outlives the instance's time limit plus WorkerGrace ends that instance in error naming
// the signal and the last call, and the run goes on. A worker opens its own device, so a device it
// loses goes with it. On Linux a worker is killed when its parent dies, even by SIGKILL (see
// run/proc): a killed run leaves no worker holding a device.
//
// # Output directory and journal
//
// A run with an output directory (replaycheck run --out DIR) writes:
//
//	DIR/results.jsonl  the journal, written as the run goes (Create, a Sink)
//	DIR/report.json    the final report, reports.WriteJSON (WriteReport, ReportFiles)
//	DIR/report.txt     reports.WriteTexts: each run's text, the enforcement table last
//	DIR/junit.xml      reports.WriteJUnit
//	DIR/summary.md     reports.WriteMarkdown
//	DIR/report.html    reports.WriteHTML
//
// The final files are written under a temporary name in DIR and renamed, so either the old file or
// the whole new one is there. One that cannot be written does not stop the others
// (WriteReportFiles names those written; the error, every failure). The journal is JSON Lines, one JSON object per line, UTF-8:
//
//   - Line 1, the header (Header): {"journal": "replaycheck-journal/v1", "tool", "version",
//     "started" (RFC 3339), "backend", "profile", "platform" (the device's platform key), "device",
//     "runtime" ("builtin" or the plugin's name), "baseline" (the file judged against, if any),
//     "config" (Config's JSON form, probe paths absolute), "instances" (the selected ids, in
//     selection order)}. It is written once the device is open.
//   - Every further line: one finished instance, exactly the reports.Entry JSON the report holds
//     (capture.Result's fields with "verdict" beside them), in selection order, of the run whose
//     header came last.
//
// An invocation of several profiles (ExecutePlan) journals one run after another in the same
// file, each header's config naming the whole plan (Config.Plan); only the last run can be
// unfinished.
//
// Each line is written with one write and synced (fsync) before the next instance starts, so a
// crash or kill loses at most the instance in flight. A line is whole once its newline is on disk;
// a reader ignores a torn last line. An abandoned instance is never journalled.
//
// Resume (and Journal.Resume) reads the journal, checks that the same version of the tool resumes
// it, loads and selects the probes again from the first header's configuration (they must select
// the same ids), cuts a torn last line off, then walks the plan: a run the journal holds whole is
// read back, the unfinished one runs the instances it lacks, appending them, and a run the plan
// names that never began runs afresh. Each run's report is the one an uninterrupted run would
// have given: the same entries in selection order, stamped with its header's identity and start.
package run
