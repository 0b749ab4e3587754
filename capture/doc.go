// Package capture is the engine: it runs ONE probe instance end to end on a runtime.Device and
// classifies what happened.
//
// Run allocates the probe's streams, events and buffers, issues prepare, each capture (begin, ops,
// end), between, then Replays rounds (each ops, every graph of the round's order launched), and after
// every round reads every checked buffer back (a device read, or the CPU's read of host memory) and
// compares it byte for byte with the probes.Oracle, which the engine drives in step with the
// device. Buffers are provisioned where the probe places them: through their slot, from a pool of
// the runtime under test, or as host memory. The result carries a timeline of every device call
// (thread, code, class, whether it was captured or ran eagerly), the residency ledger of the
// buffers captured ops named (with how they touch them), the first differing ranges, and every
// stale range a launch touched: a captured range whose allocation was freed, or freed and handed
// out again, since capture, with the first round and which live buffer owns it now.
//
// Outcomes: error > corrupted > rejected > refused > exact. Bytes that differ from the oracle, or
// a launch that ran over a stale range although no checked byte differs, are corrupted. A rejected
// or refused op has no effect for the oracle; ops naming a buffer whose allocation failed are
// skipped; a capture whose end failed yields no graph. A declared buffer that cannot be allocated,
// and leaked device objects after teardown, make the instance an error. The engine holds no
// platform rules: what is rejected is the device's business.
//
// Guarded instances run exactly the device calls unguarded ones run: a refusal's side effects are
// judged from what a refusable call can touch (addresses, sizes, allocator counters), never by
// synchronising and reading the device, which would serialise the streams (see snapshot).
package capture
