// Package capture is the engine: it runs ONE probe instance end to end on a runtime.Device and
// classifies what happened.
//
// Run allocates the probe's streams, events and buffers, issues prepare, each capture (begin, ops,
// end), between, then Replays rounds (each ops, every graph of the round's order launched), and after
// every round reads every checked buffer back and compares it byte for byte with the probes.Oracle,
// which the engine drives in step with the device. The result carries a timeline of every device
// call (thread, code, class, whether it was captured or ran eagerly), the residency ledger of the
// buffers captured ops named, and on a difference the first differing ranges and, for each captured
// range whose allocation changed since capture, which live buffer owns it now.
//
// Outcomes follow ARCHITECTURE.md: error > corrupted > rejected > refused > exact. A rejected or
// refused op has no effect for the oracle; ops naming a buffer whose allocation failed are skipped;
// a capture whose end failed yields no graph. Leaked device objects after teardown make the
// instance an error. The engine holds no platform rules: what is rejected is the device's business.
package capture
