// Package runtime is the seam between replaycheck's engine and the runtime under test: the layer a
// framework puts between its programs and the device driver, which owns an allocator (slots that
// provision and grow named buffers, pools, an arena bank) and may refuse any device call.
//
// The engine (package capture) drives a runtime only through [Runtime]; it opens one for each
// instance through an [UnderTest]. Two implementations stand behind the seam as peers, and neither
// imports the other:
//
//   - runtime/guard: replaycheck's reference guards, in Go, in program mode (everything let
//     through, as the platform would) or kernel mode (the guards);
//   - runtime/plugin: a team's own runtime, loaded from a shared library through the C ABI of
//     include/replaycheck/runtime.h.
//
// The package holds the seam's vocabulary and nothing else: slots ([Slot]), how a request was
// served ([Served]), arena regions ([Region]), the Backend names a runtime's own errors carry
// ([GuardBackend], [PluginBackend]) so that the engine can tell them from the platform's, and who
// refused a call ([Refusal], [RefusedBy]: a reference guard, [Guards], or a plugin's rule). The
// device a runtime sits in front of is package device's; nothing here imports the engine.
package runtime
