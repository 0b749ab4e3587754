// Package guard implements kernel-mode guards: a decorator over any device.Device that turns every
// case in which a graph replay would silently write wrong data into a clean refusal.
//
// A captured graph replays the device addresses it captured. A re-base (free + malloc to grow a
// buffer), work enqueued on a stream outside the capture, or an allocation made during the capture
// and freed later make the replay write somewhere the program no longer means, and the platform
// reports nothing. Program mode (guards off) lets all of that through, as the platform does; kernel
// mode (guards on) refuses it ahead of time.
//
// # Execution mode
//
// A context latches its execution identity once (Latch): Program or Kernel. Latching the held mode
// again is idempotent; latching the other mode is refused with an error of class
// device.ClassInvalidState, in both directions; there is no unlatch. New latches the Device's mode
// when it is built, so a Device never changes mode.
//
// # Pass-through
//
// Every device.Device method of a *Device calls the inner device's method of the same name, on the
// same Thread, with the same arguments, and returns what it returned, unless a guard refuses the
// call first. In program mode nothing is refused, and stream work (fill, copy, axpy) is passed
// straight through: the ranges a capture touched are kept only in kernel mode, for the guards that
// read them. Guard errors carry Backend "guard".
//
// # Refusals
//
// A refusal is a *device.Error of class device.ClassRefused whose Op names the call and whose
// Detail names what was protected (slot and key, capacity and request, capture and stream, captured
// range and generation), wrapped in a *runtime.Refusal that names the guard that refused
// (runtime.RefusedBy): runtime.GuardRetained, GuardArena, GuardCaptureWatch, GuardResidency or
// GuardIsolation, the guards below; a guard removed by Options.Disabled names nothing, and the
// hazard it covers reaches the guard after it. A refusal is decided before the inner device is asked to do anything that
// changes state: no address, size, content, allocator counter, slot or capture changes. (The guard
// may query the inner device's CaptureInfo to decide.) Misuse of the guard's own API (an unknown
// slot, a pointer that does not match what a slot holds, a negative size) is class
// device.ClassInvalidValue, also without side effect.
//
// # runtime.Slots
//
// A buffer that grows is held in a slot named by a key: runtime.Plain, runtime.Retained or runtime.Arena. Provision is the
// growth and first-allocation path; it reports how it served the request (runtime.Served):
//
//   - a request at or below the slot's current capacity is served runtime.InPlace: the same Ptr is returned
//     (address and size unchanged) and the allocator is not called. A zero request for an empty slot
//     is served runtime.InPlace too: nothing is allocated and the slot stays empty;
//   - the first allocation of an empty slot is runtime.Allocated, in either mode;
//   - growth of a runtime.Plain slot, and in program mode of every slot, is runtime.Rebased: free, then malloc at the
//     new size (the address may change; the caller initialises the new buffer);
//   - in kernel mode, growth of a runtime.Retained slot that holds a buffer is refused before anything is
//     freed, and growth of a committed runtime.Arena region above its capacity is refused before any
//     allocation or free. The buffer stays usable at the same address with its contents.
//
// A runtime.Plain slot re-bases in kernel mode too: the residency check then refuses the replay of any graph
// that captured the old allocation.
//
// Release frees what a slot holds; in kernel mode it refuses a runtime.Retained buffer and a committed runtime.Arena
// region. A plain Free of a pointer a runtime.Retained slot or committed runtime.Arena region holds is refused in
// kernel mode as well; in program mode it frees and empties the slot.
//
// # runtime.Arena bank
//
// CommitBank commits several runtime.Arena regions at once, and Provision of an runtime.Arena slot is a bank of one
// region. The first commit of an empty region allocates it; a committed region asked for its
// capacity or less is served in place with no allocator call; a zero request for an uncommitted
// region is permitted and allocates nothing. In kernel mode a request above a committed region's
// capacity refuses the whole commit before any allocation or free: the regions committed earlier
// stay committed as they were, and the other regions of the refused call are not committed either.
// In program mode such a request re-bases the region. Every allocation of a commit is made before
// anything is published or freed: if one fails, every allocation this commit made is freed, no
// region changes, and the allocator's error is returned (wrapped), in kernel mode as in program
// mode, on a first commit as on a later one. A re-based region's old block is freed only after the
// whole bank is published.
//
// # Pools
//
// ReservePool reserves one segment for a named pool: device memory through the inner Malloc, or
// host memory through AllocHost. PoolAlloc and PoolFree then serve blocks from the segment with no
// device call, as a caching allocator does: a request is rounded up to device.PoolGranularity and
// served from the smallest free block that holds it (the lowest address among equals), the rest of
// the block staying free; a freed block merges with its free neighbours. A request no free block
// holds fails with device.ClassOutOfMemory (Backend "guard"), changing nothing; a pool never
// grows. Every block handed out enters the residency ledger as an allocation of its own, so a
// block freed and handed out again is a new generation. Retire frees every segment.
//
// # Host memory
//
// AllocHost and FreeHost pass through and enter the residency ledger: a captured copy reads or
// writes host memory on every replay, so a staging buffer freed and reused is stale like device
// memory. HostWrite and HostRead (the CPU's own accesses) pass through unguarded: no guard sees
// them.
//
// # Capture watch
//
// In kernel mode, while a capture begun through this Device (BeginCapture) is active: Malloc, Free,
// AllocHost, FreeHost, ReservePool, PoolAlloc, PoolFree, Retire, and any Provision, Release or
// CommitBank that would call the allocator are refused; and
// Fill, Copy, Axpy, Record, Wait and Launch enqueued on a stream that is not part of that capture
// are refused, because the work would run once, eagerly, and never replay. The one exception is the
// Wait that forks a stream into the capture: a Wait on an event that was last recorded, through this
// Device, on a stream of the active capture. Stream membership is what the inner device's
// CaptureInfo reports; when CaptureInfo fails the guard refuses (it cannot prove membership).
//
// The guard keys each capture by a sequence number of its own, never shared and never reused. The
// platform's capture ID (CaptureInfo's ID) is kept only to match streams to a capture, and only
// when it is non-zero. A capture whose ID the guard could not learn at BeginCapture (CaptureInfo
// failed or reported ID 0) is known by its origin stream: it is watched like any other, and ended by
// EndCapture on that origin, but no stream can be shown to be part of it, so in kernel mode all stream
// work is refused while it is active. Several such captures are watched side by side; ending one
// leaves the others watched.
//
// In kernel mode DestroyStream is refused for a stream that is part of an active capture (its
// origin, or a stream CaptureInfo puts in it), and, while a capture is active, for a stream whose
// membership CaptureInfo cannot establish: the platform would end or break the capture behind the
// guard's back. The Detail names the capture.
//
// A capture stops being watched when EndCapture ends it (the guard asks CaptureInfo afterwards, so
// an EndCapture that fails but ends the capture counts too), and when a DestroyStream that goes
// through (in program mode, or with the capture watch removed) destroys its origin or leaves it
// ended, as CaptureInfo on its origin reports; events recorded in it then fork into nothing.
//
// # Residency check
//
// The guard keeps a ledger of the allocations made through it (Malloc, Provision, CommitBank), each
// with an allocation generation that grows with every allocation: a free and a re-allocation at the
// same address is a different generation. While a capture is active, every range that a captured Fill,
// Copy or Axpy touches (read or written) is recorded with the generation of the allocation that
// contains it, and a Launch on a capturing stream adds the launched graph's ranges. In kernel mode,
// before every Launch, each range the graph captured must still lie inside a live allocation of the
// generation it had at capture; otherwise the Launch is refused and the Detail names the range, its
// generation at capture and what holds it now. Pointer equality alone is not enough. A graph that
// was not captured through this Device, and a captured range that lay in no allocation this Device
// made, cannot be vouched for and are refused too.
//
// # Replay isolation
//
// In kernel mode a Launch is refused while a graph launched through this Device on another stream
// may still be running and shares memory with it (a range one of them writes and the other touches):
// concurrent replays would race. A launch stops being in flight when the guard sees it complete:
// SyncDevice, SyncStream of its stream, SyncEvent or a successful QueryEvent of an event recorded
// on its stream after it; or it is ordered before the launching stream by a Wait on such an event.
// Launches on one stream run in order and never conflict.
//
// # Teardown
//
// Retire ends the context's life: it frees every buffer a slot holds (runtime.Retained and runtime.Arena included, in
// either mode), after which Provision and CommitBank fail with device.ClassInvalidState.
//
// # Negative controls
//
// Options.Disabled removes individual kernel-mode guards. It exists for negative-control tests only:
// a test removes one guard and shows the hazard it covers going through. Production callers use New.
//
// A *Device is safe for concurrent use from the device's threads: its bookkeeping is kept under one
// mutex, held across the inner calls whose outcome it must stay consistent with.
package guard
