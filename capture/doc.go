// Package capture is the engine: it runs ONE probe instance end to end on a device.Device and
// classifies what happened.
//
// Run allocates the probe's streams, events and buffers, issues prepare, each capture (begin, ops,
// end), between, then Replays rounds (each ops, every graph of the round's order launched), and
// after every round reads every checked buffer back (a device read, or the CPU's read of host
// memory) and compares it byte for byte with the probes.Oracle, which the engine drives in step
// with the device. Buffers are provisioned where the probe places them: through their slot, from a
// pool of the runtime under test, or as host memory. The result carries a timeline of every device
// call (thread, code, class, whether it was captured or ran eagerly; the calls of uneventful replay
// rounds past the third and before the last counted by one event), the residency ledger of the
// buffers captured ops named (with how they touch them), the first differing ranges, and every
// stale range a launch touched: a captured range whose allocation was freed, or freed and handed
// out again, since capture, with the first round and which live buffer owns it now.
//
// Outcomes: error > corrupted > rejected > refused > exact. Bytes that differ from the oracle, or a
// launch that ran over a stale range although no checked byte differs, are corrupted. A rejected or
// refused op has no effect for the oracle; ops naming a buffer whose allocation failed are skipped;
// a capture whose end failed yields no graph. A declared buffer that cannot be allocated, and
// leaked device objects after teardown, make the instance an error. The engine holds no platform
// rules: what is rejected is the device's business.
//
// On a backend with graph introspection, each captured graph's nodes are checked against what the
// engine captured (graphs.go): a graph holding work or memory the probe never asked for is
// corrupted.
//
// A capture's fills, copies and axpys go to a runtime under test that states a batch of kernels
// (device.Extensions.Kernels) a batch at a time, from the capture's plan (probes.Plan), where no op
// needs to be seen on its own (batches.go): the result is the one the same ops give one by one.
//
// Every call goes through the runtime under test (Options.Runtime, which the caller picks:
// runtime/guard.Reference is replaycheck's own; the engine knows a runtime only through the seam,
// package runtime). A refusal must change nothing: after each one the engine compares what a
// refusable call can touch (the device's counters, each buffer's slot, address and size) with a
// snapshot taken before it, and a refusal with a side effect ends the instance in error
// (ErrSideEffect). Contents a refusal touched are the oracle's to find after the round. The
// snapshot never synchronises or reads the device, so a guarded instance runs exactly the schedule
// of an unguarded one.
//
// The Result is the one record of an instance: plain data with a JSON form that reads back to the
// same value (so a result written by another process judges exactly as the original). Its timeline
// events say what each call returned and whether work during a capture was captured or ran eagerly
// (a capture's work that took is kept compact and built into events when the timeline is read:
// Timeline.Events); its steps are typed (probes.Step); an instance that ended in error says which
// kind of failure it was (RunError). Judging a result is package verdict's.
//
// Faults and hangs. Faults injected on purpose (a probe's faults, Options.Faults; probes.Fault) are
// armed on the backend's device (its device.Extensions.Faults) as the instance reaches them, and
// one that fires ends the instance in error (ErrFault, or ErrDeviceLost for a lost device) naming
// the fault and the call; Result.Faults says what each did. A backend without the fault-injection
// capability skips such an instance. Every call into the backend's device is watched (watch.go),
// and every call into a runtime of the user's own that asks (device.CallWatcher): the instance runs
// on a goroutine of its own (as one session on the device's Main thread when the device states one:
// Extensions.Threads; under a runtime of the user's own only when the device states the session's
// view too, Extensions.Session), and a call still in flight a grace period after the time limit
// (Options.Timeout) is not waited for: the instance ends "timeout in <call>" and its device is
// abandoned (Extensions.Abandon). The engine asks a device and a runtime what they can do beyond
// their interfaces only through device.ExtensionsOf and runtime.ExtensionsOf: an ability a wrapper
// inherited by embedding never reaches it. A device that answered device-lost, or was abandoned,
// must not run another instance: Result.DeviceState says so, and whoever opened it replaces it.
// After every instance whose device is still usable, its live objects must be back where they were
// before it (ErrLeak, or a leak added to the error of an instance that already failed); a lost
// device's teardown is skipped, since only closing it releases anything.
//
// The engine is one state machine (instance) whose jobs live in their own files: the op interpreter
// (ops.go), buffers and slots (buffers.go), captures and the residency ledger (captures.go),
// captures a phases list leaves open, two or more in progress at once (region.go),
// replays, verification and stale-range forensics (verify.go), refusals (sideeffects.go), teardown
// (teardown.go), the outcome and its reason (classify.go), the timeline recorder (timeline.go),
// injected faults (faults.go) and the watch on device calls (watch.go).
package capture
