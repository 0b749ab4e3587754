// Package sim is the embedded, pure-Go simulated device: a runtime.Backend that runs everywhere
// (no cgo) and reproduces the capture and replay hazards of ACLGraph and CUDA graphs for the same
// reasons the hardware does.
//
// # What the simulator promises
//
// Threads. Each Device owns two runtime.Workers, one per runtime.Thread (Main, Other). Every Device
// method runs its body on the worker its Thread argument names, so calls come from two distinct,
// locked OS threads. Device state is guarded by one mutex. Capture-mode rules use the Thread that
// began a capture and the Thread that makes a call.
//
// Address space. Device i's addresses start at 0x7f0000000000 + i<<40. Requests are rounded up to
// Granularity (512 bytes). Freed blocks go to a free list per block size and are reused LIFO: free
// + malloc of the same rounded size returns the old address, and after a re-base (free A; malloc a
// bigger A', which gets fresh space) the next allocation of A's size lands on A's old address,
// the one a graph captured. Fresh space comes from a bump pointer; when it is exhausted, the
// smallest larger cached block is handed out whole; when none fits, Malloc fails out-of-memory.
// Malloc of 0 or fewer bytes, and Free of a Ptr that is not exactly a live allocation (unknown,
// already freed, or a sub-range), fail invalid-value. Freed memory keeps its bytes.
//
// Sparse memory. Backing pages (PageSize) are materialised on the first non-zero write; untouched
// memory reads as zero, so a 16 GiB device costs what is touched (Device.ResidentBytes).
//
// Streams. Fill, Copy and Axpy check at enqueue that every range they name is non-empty and lies
// inside one allocation live at that moment, and every call checks its handles (invalid-value
// otherwise). Work on a stream that belongs to no capture runs at enqueue: a valid linearisation
// of in-order streams, in which every event is complete once recorded, so QueryEvent reports true
// and synchronisation returns at once. Copy moves
// min(dst.Bytes, src.Bytes) bytes with memmove semantics. Axpy computes y[i] = a*x[i] + y[i] over
// little-endian uint32 lanes, wrapping; x and y must have the same size, a multiple of 4. Write and
// Read are synchronous and need len == Ptr.Bytes.
//
// Capture. BeginCapture(t, s, mode) starts a capture on s. Work enqueued on a stream that belongs to
// a capture is not run: it becomes a node of the capture's DAG that depends on the stream's last
// nodes. Record on such a stream makes the event part of the capture (it names the stream's last
// nodes). Wait on such an event by a stream in no capture forks that stream into the capture;
// by a stream of the capture, it adds the event's nodes to the stream's dependencies (a join).
// Streams in no capture keep running eagerly while a capture is in progress elsewhere, and their
// work is not in any graph. EndCapture on the origin stream returns a Graph; all streams of the
// capture run eagerly again, and events recorded in it read as never recorded. A forked stream
// whose last nodes are not ancestors of the origin's last nodes is unjoined. CaptureInfo reports
// status, id, origin and mode; GraphNodes lists nodes in capture order with their reads and writes.
//
// Replay. Launch runs a graph's nodes against the addresses recorded at capture time, whatever
// they hold now: no liveness check, as on the platforms; that is the hazard replaycheck exists
// for. With Options.Seed == 0 nodes run in capture order; otherwise each step picks at random,
// reproducibly for the seed, among the nodes whose dependencies have run, which exposes missing
// dependencies between independent branches.
//
// Platform rules are data. A Profile (profiles/*.yaml, embedded; see Profiles) lists rules that
// bind device calls under named conditions (see Conditions) and capture modes to the platform's
// answer: allowed, or an error code, name and runtime.Class, whether the rejection invalidates the
// capture, and whether a failed EndCapture still terminates it. The first matching rejecting rule
// decides; allow rules document what the platform lets through and never pre-empt a rejection. A
// rejected call has no other effect. "cann" encodes CANN 9.0 (rejections never invalidate;
// aclrtMalloc and aclrtFree are unchecked); "cuda" encodes the CUDA driver API (900/902/905
// invalidate, then work enqueued into the capture fails 901 and its end fails 901 with no graph).
// Options.ProfileYAML runs a device on a profile document instead, to try a corrected row.
// Failures outside the rules (bad arguments, out of memory) use the profile's codes for their
// class. Every error is a *runtime.Error{Backend: "sim", Op: the method name, ...} whose Detail
// names the situation, the objects involved and the profile rule.
//
// Counters are exact: Mallocs, Frees, Launches and CapturesDone count successful calls; the live
// counts are what exists. Close destroys everything and stops the workers.
//
// Fault injection: Device.FailMalloc(n) makes the n-th next Malloc fail out-of-memory.
//
// # What it does not model
//
//   - Timing and asynchrony: work completes at enqueue, so no event is ever pending and no race
//     between eagerly running streams is observable. Races inside a graph show up only through
//     a seeded replay order.
//   - A default (NULL) stream: handle 0 is accepted only by BeginCapture, to let the profiles
//     answer "capture on the default stream"; everywhere else it is invalid-value.
//   - Merging two captures through an event (not-supported when a profile lets it through),
//     launching a graph into a capturing stream (not-supported), graph-in-graph capture, external
//     event nodes, and per-thread capture-mode exchange (every thread behaves as if its interaction
//     mode were GLOBAL, the platforms' default).
//   - Event flags: every event is capture-capable (ACL's aclrtCreateEvent without ACL_EVENT_SYNC
//     would fail 207000 when recorded into a capture).
//   - Destroying a stream of a capture in progress ends that capture without a graph; the platforms
//     differ and no probe depends on it.
//   - Several devices of one backend share nothing (no peer access); opening one index twice gives
//     two independent devices.
package sim
