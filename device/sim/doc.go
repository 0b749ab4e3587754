// Package sim is the embedded, pure-Go simulated device: a device.Backend that runs everywhere
// (no cgo) and reproduces the capture and replay hazards of ACLGraph and CUDA graphs for the same
// reasons the hardware does.
//
// # What the simulator promises
//
// Threads. Each Device owns two device.Workers, one per device.Thread (Main, Other). Every Device
// method runs its body on the worker its Thread argument names, so calls come from two distinct,
// locked OS threads. A call already on its worker's thread runs there inline; OnThread
// (device.ThreadRunner) runs a session on a worker, its calls as one hand-off, as the engine runs
// an instance, and hands the session a view of the Device whose calls for that thread run with no
// check of the OS thread while the session lasts, on whichever goroutine makes them (InSession,
// device.SessionView: a runtime plugin's thread that the session waits for). Device state is
// guarded by one mutex. Capture-mode rules use the Thread that began a capture and the Thread that
// makes a call.
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
// Host memory. AllocHost hands out host memory from a second caching allocator of the same kind,
// at hostBase + i<<40, below every device's addresses: pinned (a driver call, subject to the
// profile's rules) or pageable (the program's malloc: no rule). HostWrite and HostRead are the
// CPU's own accesses: no worker hop, no rule. Copy moves bytes device to device, host to device and
// device to host (host to host is invalid-value); Fill and Axpy take device memory only. A captured
// copy names the host address, and every replay reads or writes it again.
//
// Sparse memory. Backing pages (PageSize) are materialised on the first non-zero write; untouched
// memory reads as zero, so a 16 GiB device costs what is touched (Device.ResidentBytes). Host and
// device memory share one page map.
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
// status, id, origin and mode; GraphNodes lists nodes in capture order with their reads and writes,
// and WalkGraph (device.GraphWalker) visits the same nodes without making the list.
//
// Replay. Launch queues a graph's nodes on the stream, against the addresses recorded at capture
// time, whatever they hold now: no liveness check, as on the platforms; that is the hazard
// replaycheck exists for. With Options.Seed == 0 a graph's nodes run in capture order; otherwise
// each step picks at random, reproducibly for the seed, among the nodes whose dependencies have run,
// which exposes missing dependencies between independent branches. Queued work runs when the device
// next has to settle it: at any call but another Launch or a CaptureInfo (a synchronisation, a
// record, any eager work, a host access). Launches on one stream run in order; launches on
// different streams run concurrently, interleaved one node of each stream in turn (with a seed, a
// random stream's next node each step), so graphs that share memory race as they do on hardware.
//
// Threads' capture interaction modes. ExchangeCaptureMode sets the calling thread's mode (each
// thread starts in Global) and returns the old one; a profile rule can be restricted to callers in
// some modes (caller-modes), which is how the platforms' rules for unsafe calls read.
//
// The default stream. Handle 0 is the platform's default stream: it always exists, takes eager
// work, is never destroyed and is not counted among the live streams.
//
// Platform rules are data. A Profile (profiles/*.yaml, embedded; see Profiles) lists rules that
// bind device calls under named conditions (see Conditions) and capture modes to the platform's
// answer: allowed, or an error code, name and device.Class, whether the rejection invalidates the
// captures the condition names, and whether a failed EndCapture still terminates the capture it was
// asked to end (a rule on the other captures in progress at an end, as CUDA's refused instantiation
// of the graph, does both: the capture is over without a graph and the others are invalidated). A
// rule on freed memory may be restricted to freed allocations of some sizes (freed-bytes). The
// first matching rejecting rule decides; allow rules document what the platform lets through and
// never pre-empt a rejection. A rejected call has no other effect. A rule may instead say the
// platform's process dies in the call (crash: the signal): the device answers a *device.Error
// whose Crash names it (class device-lost), which the engine reports as a crash, and ends the
// capture the call ends with no graph, as if the instance ran in a process of its own. "cann"
// encodes CANN 9.0 (rejections leave the capture active, but an event crossing two captures: 107032
// and both invalidated, each end then failing 507903; aclrtMalloc and aclrtFree are unchecked);
// "cuda" encodes the CUDA driver API (900/902/903/905/906/907 invalidate, then work enqueued into
// the capture fails 901 and its end fails 901 with no graph; a capture holding a copy from memory
// freed during it crashes the process at the graph's instantiation). Options.ProfileYAML runs a
// device on a profile document instead, to try a corrected row. Failures outside the rules (bad
// arguments, out of memory) use the profile's codes for their class. Every error is a
// *device.Error{Backend: "sim", Op: the method name, ...} whose Detail names the situation, the
// objects involved and the profile rule.
//
// Counters are exact: Mallocs, Frees, Launches and CapturesDone count successful calls; the live
// counts are what exists. Close destroys everything and stops the workers.
//
// Fault injection (device.FaultInjector). InjectFault arms a fault that fires at the N-th call of
// its kind after it was armed: alloc-fail counts the Mallocs that pass their argument and capture
// checks and fails one out-of-memory, touching nothing; launch-fail, device-lost and hang count
// Launch calls and answer one before the device looks at it. launch-fail fails it with the profile's
// internal code and the device goes on; device-lost fails it with the profile's device-lost code,
// and every later call but Close fails the same way (a poisoned card: Close releases everything,
// as a reset does); hang blocks the worker that makes the call forever, before the device lock is
// taken, so Counters and the other thread still answer. Abandon gives such a device up: Close
// returns at once. FiredFaults lists what fired. Device.FailMalloc(n), the older form, makes the
// n-th next Malloc fail out-of-memory. The backend's Recovers says yes: every Open is a fresh
// device.
//
// Stale replays. A launch whose graph captured a range that now lies in another allocation
// (graph-range-stale) or in none, the memory returned to the driver (graph-range-freed), is
// decided by the profile: silent, or an error such as CUDA's illegal address, which CUDA answers
// for a freed allocation of 2 MiB or more only (a smaller one stays mapped). A freed range is
// judged by the size, as requested, of the allocation it lay in at capture. A rejected launch runs
// nothing; on hardware such a fault is asynchronous and poisons the context, which the simulator
// does not model.
//
// # What it does not model
//
//   - Timing and asynchrony of eager work: it completes at enqueue, so no event is ever pending and
//     no race between eagerly running streams is observable. Races inside a graph show up through a
//     seeded replay order, races between graphs through concurrent launches.
//   - Implicit synchronisation of the default stream with other streams outside a capture.
//   - Merging two captures through an event (not-supported when a profile lets it through),
//     launching a graph into a capturing stream (not-supported), graph-in-graph capture and
//     external event nodes.
//   - Event flags: every event is capture-capable (ACL's aclrtCreateEvent without ACL_EVENT_SYNC
//     would fail 207000 when recorded into a capture).
//   - Destroying a stream of a capture in progress ends that capture without a graph; the platforms
//     differ and no probe depends on it.
//   - Several devices of one backend share nothing (no peer access); opening one index twice gives
//     two independent devices.
//   - A crash on a replay: on an H200 a replay over pinned host memory given back to the driver
//     crashed the process (the bindings keep such memory, see device/internal/bind). The simulator
//     replays. (The crash at the instantiation of a graph holding a copy from memory freed during
//     the capture is a rule of the cuda profile, capture-copy-freed.)
package sim
