// Package conformance is the backend conformance suite of the device API: one set of Ginkgo specs
// that every device.Device must pass, whatever platform it drives. The simulator runs it on each
// of its profiles (device/sim/conformance_test.go); a real backend (ACL, CUDA) runs it unchanged
// from its own suite:
//
//	var _ = conformance.Describe("acl", func(ctx context.Context) (device.Device, error) {
//		b, err := backends.Open("acl", backends.Config{})
//		if err != nil {
//			return nil, err
//		}
//		return b.Open(ctx, 0)
//	}, conformance.Options{Memory: 64 << 30})
//
// Options carry what the suite must know of the platform and cannot ask the device: the memory to
// cycle, whether synchronous copies are legacy-stream work (SyncCopiesOnLegacyStream) and whether
// EndCapture instantiates the graph, an unsafe call the other captures in progress may refuse
// (EndCaptureInstantiates). The simulator's cuda profile and the cuda binding, on the fake libcuda
// and on the driver, set both; the cann profile and the acl binding neither.
//
// Every spec opens a fresh device and closes it at the end (Close must succeed). The specs use only
// the public runtime API. Every spec is labelled "conformance", plus Options.Labels.
//
// # What the suite checks
//
// Errors. Every failure is a *device.Error (not wrapped) whose Class is one of device.Classes(),
// never the guards' ClassRefused, whose Backend is Device.Backend() and whose Op is set. A failed
// call changes no counter. Where the class is checked beyond that, see "Class families" below.
//
// Device memory. Malloc(n) returns a non-zero Ptr with Bytes == n. Live ranges never overlap, in
// address or in content, also after frees hand memory out again; cycling twice Options.Memory
// through Malloc and Free succeeds (freed memory is taken back). Write and Read round-trip whole
// allocations and sub-ranges from either thread; a host buffer of the wrong length fails and writes
// nothing. Malloc of 0 or fewer bytes fails; Malloc beyond the device fails out-of-memory or
// invalid-value and leaves the device usable. Free of an unknown pointer, of the zero Ptr, of an
// interior pointer or a second time fails and frees nothing. Mallocs and Frees count successful
// calls; LiveAllocs and LiveBytes (the sum of the Ptrs' Bytes, as requested) are what is live.
//
// Host memory. AllocHost of both kinds returns a range of the requested length that overlaps no
// device or host range, counted in HostAllocs and LiveHostAllocs (not in device counters); FreeHost
// counts HostFrees. HostWrite and HostRead round-trip; outside one live host allocation (past its
// end, device memory, freed memory) or with the wrong length they fail. FreeHost of device or
// unknown memory, a double FreeHost, Free of host memory, AllocHost of 0 bytes or of an unknown
// kind fail. Copy moves host to device and device to host for both kinds, and device to device; a
// copy moves min(dst.Bytes, src.Bytes) bytes and nothing past them.
//
// Streams. A stream runs its work in enqueue order (fill, copy of it, fill again); Fill touches its
// sub-range only; with capability "kernels" Axpy computes y = a*x + y over little-endian uint32
// lanes, wrapping. Streams and work can be created and issued from either thread. SyncDevice waits
// for every stream. LiveStreams counts created streams; a destroyed stream is refused. The default
// stream exists without being created, takes work, synchronises, orders with other streams through
// events, reports no capture, cannot be destroyed and is not counted.
//
// Events. Record then Wait orders a second stream's later work after the first stream's; a wait
// follows the latest record. After SyncEvent, or SyncStream of the recording stream, QueryEvent
// reports true. LiveEvents counts events; a destroyed event is refused by every call.
//
// Capture, in every mode of device.CaptureModes(). BeginCapture makes CaptureInfo report Active, a
// non-zero ID, the origin and the mode, from either thread; a stream in no capture reports
// CaptureNone and ID 0. Captured work does not run at capture time (not even after a SyncStream
// once the capture ended); EndCapture returns a non-zero Graph and counts CapturesDone and
// LiveGraphs; Launch runs the graph (Launches), on any stream, from either thread, and a capture
// begun and ended on Other works as on Main. A fork (Record on the origin, Wait on a side stream)
// puts the side stream into the capture with the same ID, origin and mode; its work is in the
// graph, ordered by the fork and by the join (Record on the side stream, Wait on the origin) before
// EndCapture; afterwards every stream of the capture runs eagerly again. Work on a stream outside
// the capture runs once, at once, and is not replayed. Two captures in progress at once have
// distinct IDs and end with their own graphs; where EndCapture instantiates the graph
// (Options.EndCaptureInstantiates: CUDA) and both are Global or both ThreadLocal, ending the first
// fails capture-unsupported instead, with no graph, the first capture over and the second
// invalidated. HostWrite and HostRead are allowed during a capture.
//
// Replay. One graph launched N times back to back runs N times in order (a shift graph whose result
// counts the launches; with "kernels" an axpy graph accumulating N*a*x). A graph reads and writes
// the addresses it captured: data written into a captured device buffer, or into a captured pinned
// host staging buffer, between launches is what the next launch reads, and a captured copy to
// pinned host memory writes it again on every launch. Launches on one stream run in launch order;
// an event recorded after one launch and waited before another orders them across streams. Two
// graphs over one buffer replay alternately, each its own work. A graph outlives its capture
// stream. With "graph-introspection" GraphNodes lists a memset node writing the filled range, a
// memcpy node reading and writing the copied ranges (and, with "kernels", a kernel node: with its
// ranges, reading x and y and writing y, or with none when the backend cannot read kernel
// parameters), of the kinds device.GraphNode names, or, on a platform that names no kind for a
// fill or a copy (ACL), at least one "task" node without ranges for each; without it GraphNodes
// fails not-supported. DestroyGraph releases the graph, and the destroyed graph is refused.
//
// Capture rules common to the platforms. EndCapture of a stream in no capture fails with no graph.
// BeginCapture on the default stream, with an unknown mode, or on a stream already capturing
// fails; the last leaves the first capture as it was. Synchronising the capturing stream and
// SyncDevice during a capture are refused in every mode; QueryEvent and SyncEvent on an event
// recorded inside the capture fail captured-event. EndCapture on a forked stream fails
// capture-unmatched and leaves the capture to its origin (active, or invalidated as CUDA does). EndCapture with a forked stream never
// joined back fails capture-unjoined, makes no graph and ends the capture (its streams run eagerly
// again). After any refusal inside a capture, the capture is invalidated exactly when the error's
// Invalidated field says so, and active otherwise; an active capture then ends with a graph holding
// the work captured before the refusal, an invalidated one fails capture-invalidated with no graph
// and is over.
//
// Threads. Main and Other are the device's threads; any other Thread value is refused. Objects made
// on one thread serve the other, and many goroutines may drive one device at once (allocations stay
// disjoint, counters exact). Each thread starts in capture interaction mode Global;
// ExchangeCaptureMode sets one thread's mode and returns the one it replaces; an unknown mode fails
// and keeps the mode. With capability "thread-rules" the suite checks, for Write and Read, every
// combination of the thread that began the capture, the calling thread, the capture's mode and the
// caller's interaction mode. Where synchronous copies are legacy-stream work
// (Options.SyncCopiesOnLegacyStream: CUDA, whose legacy stream synchronises with every blocking
// stream) every one of them fails capture-implicit and invalidates the capture. Elsewhere the rule
// the platforms document for potentially unsafe calls decides: a Relaxed caller is never refused;
// a Global or ThreadLocal caller is refused during its own Global or ThreadLocal capture; a Global
// caller is also refused during another thread's Global capture. A refused copy does nothing. With
// "thread-rules" the suite also ends a Global capture of Main, in each interaction mode of Main,
// while another capture of each mode, Main's own or the other thread's, is in progress: it ends with
// its graph and leaves the other active, except where EndCapture instantiates the graph
// (Options.EndCaptureInstantiates) and the same rule minds the other capture: then it fails
// capture-unsupported with no graph, the capture is over and the other is invalidated. A Global or
// ThreadLocal capture ended from the thread that did not begin it fails wrong-thread with no graph
// (with "thread-rules"); a Relaxed one ends normally (always).
//
// Handles. A destroyed stream, event or graph, a handle the device never issued, and the zero Event
// and Graph are refused by every call that names them, with nothing counted, and the live handles
// keep working.
//
// Life. A freshly opened device has nothing live (the default stream is not counted). The
// counters show one live object of each kind (Leaks names allocations, host allocations,
// streams, events and graphs) and none after they are destroyed; Launches is history and stays.
// Backend and Describe are non-empty. Close succeeds with objects and a capture left, and calls
// afterwards fail.
//
// Fault injection (with "fault-injection"; the device is then a device.FaultInjector). The N-th
// allocation fails out-of-memory and holds nothing; the N-th launch fails internal and leaves the
// device usable; device-lost fails its launch device-lost, and every later call, from either
// thread, answers the same code, until Close, which succeeds. FiredFaults lists what fired in
// order, ClearFaults disarms what has not, and a fault that cannot fire (a hang with N 0, an
// unknown kind) is refused invalid-value. With Options.ErrorCode (the simulator's profile, which
// the fakes' tables come from), each answer is the platform's code and name for its class. The
// simulator and the fake libraries have it; a real driver does not.
//
// # Class families
//
// A class is portable, but which one a platform reports for a situation follows from its code
// table. The suite pins a single class only where runtime/errors.go defines one for exactly that
// situation and both platforms have a dedicated code for it: captured-event (ACL 107028, CUDA 907),
// capture-unmatched (107036, 903), capture-unjoined (107025, 904), wrong-thread (107038, 908) and
// capture-invalidated for the end of an invalidated capture. Elsewhere it accepts a family:
//
//   - a synchronisation during a capture: capture-unsupported (CUDA 900) or captured-stream
//     (ACL 107027);
//   - a synchronous copy a capture mode forbids: capture-mode (ACL 107030) or capture-unsupported
//     (900, CUDA's documented answer where the copy is not legacy-stream work); where it is
//     (Options.SyncCopiesOnLegacyStream), capture-implicit only (CUDA 906, measured);
//   - EndCapture of a stream in no capture: capture-not-capturing (ACL 107029) or capture-conflict
//     (CUDA 401 ILLEGAL_STATE, measured on an H200; cuStreamEndCapture documents INVALID_VALUE);
//   - EndCapture whose graph's instantiation another capture in progress forbids (only where
//     Options.EndCaptureInstantiates): capture-unsupported (CUDA 900, measured on an H200);
//   - BeginCapture on a stream already capturing: capture-conflict, captured-stream or invalid-value;
//   - BeginCapture on the default stream: invalid-value (ACL 100000), not-supported, or
//     capture-unsupported (CUDA 900, measured on an H200);
//   - Malloc beyond the device: out-of-memory or invalid-value;
//   - Free of an unknown or interior pointer: invalid-value, illegal-address or internal;
//   - everything else (bad handles, bad lengths, bad threads or modes, calls after Close): any
//     valid class.
//
// # What the suite deliberately does not check
//
// Platform differences, which the simulator's own specs pin per profile:
//
//   - whether a refusal invalidates the capture (CUDA's 900/902/903/905/906/907 do, ACL's never) -
//     only that Error.Invalidated and CaptureInfo agree, and how each state then ends (a synchronous
//     copy that is legacy-stream work is the exception: it must invalidate);
//   - whether a failed wrong-thread EndCapture ends the capture (ACL) or leaves it (CUDA): both are
//     accepted, and the capture must then end properly from its thread;
//   - Malloc and Free during a capture (unchecked on ACL, refused by mode on CUDA), pinned
//     AllocHost/FreeHost during a capture, a copy of pageable host memory during a capture (ACL
//     refuses it, CUDA captures it), and any use of the default stream while another stream
//     captures (CUDA refuses it, 906; ACL lets most of it through);
//   - waiting, inside a capture, on an event recorded outside it or in another capture (verify rows
//     on CUDA: refused or a no-op);
//   - launching a graph into a capturing stream, and destroying a stream of a capture in progress;
//   - replay of a graph whose captured memory was freed or handed to another allocation (the hazard
//     replaycheck exists to find: silent on one platform, illegal-address on another, or either on
//     one platform by the size of the freed allocation, as on CUDA; decided by the simulator's
//     profiles and the probes, not by this contract).
//
// Properties the API does not promise:
//
//   - allocator policy: address reuse after Free (LIFO or otherwise), rounding to
//     device.PoolGranularity, alignment, where host addresses lie; freed memory may be handed out
//     again, but need not be, and need not keep its bytes;
//   - memmove semantics of overlapping copies, and whether ranges handed to Fill, Copy or Axpy are
//     validated against live allocations (an asynchronous fault on hardware);
//   - host-to-host copies, Fill or Axpy of host memory, and Axpy on mismatched or unaligned sizes;
//   - QueryEvent of an event never recorded (CUDA reports complete; ACL's query reports the
//     record status), and whether a Read or Write waits for stream work: specs synchronise the
//     stream before every Read;
//   - concurrency between launches on different streams that nothing orders, replay order of
//     independent graph branches, timing;
//   - the exact number and kinds of nodes in a graph (a platform may add event or empty nodes);
//   - handle reuse after destroy (a destroyed handle is only checked before any new one is made);
//   - counters of a closed device, a second Close, the code and name a faulted device answers
//     unless Options.ErrorCode gives them, and the hang fault (the simulator's abandon_test and
//     the engine's fault specs);
//   - the platform code and name in an error, and its Detail;
//   - that calls issued for Main and Other really run on two distinct locked OS threads: the API
//     shows no thread id, so the suite sees thread identity only through the capture rules (with
//     "thread-rules"); the simulator's threads_test checks the OS threads with a test hook.
package conformance
