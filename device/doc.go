// Package device is the backend-neutral device API that every layer of replaycheck speaks.
//
// A Backend opens a Device. A Device allocates and frees device memory (Ptr), creates Streams and
// Events, performs synchronous host<->device copies, enqueues stream work (fill, copy, the axpy
// kernel), records and waits events, and captures a stream's work into a Graph that Launch replays.
//
// Thread affinity is part of the contract. ACL and CUDA bind a context to an OS thread and define
// capture modes per thread, so every Device method takes the Thread it must be issued from: Main is
// the device's own worker, Other a second worker. Backends run each call on a goroutine that holds
// runtime.LockOSThread for its whole life (see Worker), so a call issued from Other really comes
// from a different OS thread, on hardware and on the simulator alike. Handing a call to a locked
// thread costs OS thread wake-ups; a device whose Extensions state a ThreadRunner lets a caller run
// a session on the thread, its calls as one hand-off, through a view of the device that need not
// find out which thread each call comes from. A device whose Extensions state a KernelEnqueuer
// takes a batch of kernels (fills, copies and axpys) on one stream in one call, with exactly the
// effect of their own calls.
//
// What a device can do beyond Device it states in one value, Extensions, for itself: nothing is
// found by a type assertion or by unwrapping. A wrapper that embeds a device inherits its
// Extensions method, but what it returns is stated for the device inside, and ExtensionsOf drops
// it; a wrapper forwards an ability only by stating it for itself (see Extensions).
//
// Every failure is a *Error carrying the platform's own code and a portable Class. A guard refusal
// is an *Error of class ClassRefused. Handles (Stream, Event, Graph) are small opaque numbers owned
// by the Device that issued them; the zero Event and Graph are never valid, and the zero Stream is
// DefaultStream, the platform's default stream.
//
// Host memory (AllocHost) lives in the same Device: async copies may read and write it, and a
// captured copy touches it again on every replay. HostWrite and HostRead are the CPU's own
// accesses.
package device
