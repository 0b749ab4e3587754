// Package plugin loads a runtime plugin: a shared library that implements the runtime plugin ABI
// (include/replaycheck/runtime.h) and puts a team's own runtime (its allocator and its capture
// guards) under replaycheck's probes.
//
// Load opens the library (internal/dl), resolves rc_runtime_abi_version, rc_runtime_open
// and rc_runtime_close (a missing one fails the load and is named) and refuses a library whose
// version is not MinABIVersion (1) to ABIVersion (4), naming the file and the versions; each
// version's tables are the next one's without its last entries (version 2 added
// rc_runtime.slots_changed, version 3 rc_runtime.create_stream_with_flags and the inner
// rc_inner around rc_device, version 4 rc_runtime.refusal_rule), and rc_runtime_open gets the
// version the plugin reported.
// Plugin.Open puts the runtime in front of one device for one probe instance: it hands the plugin
// the device as the INNER rc_device table (the first member of an rc_inner), calls rc_runtime_open in RC_MODE_KERNEL (guarded) or RC_MODE_PROGRAM, and
// returns a *Runtime: a device.Device and the allocator calls the engine drives
// (runtime.Runtime), every one of them a call into the plugin's rc_runtime table. capture's
// RuntimeUnderTest is built over it by the front ends (replaycheck run --runtime, the suite's
// -replaycheck.runtime flag). A Runtime whose plugin fills slots_changed passes its slot log on
// (SlotsVersion, SlotsChangedSince, as runtime/guard's Device does), so that the engine's snapshot
// before a guarded call asks holds only about the slots that changed; without one it answers that
// it keeps no log, and the engine asks about every buffer.
//
// # Errors
//
// Every call returns RC_OK, RC_REFUSED or RC_ERROR, mapped to Go as follows.
//
//   - RC_REFUSED is a *device.Error{Backend: "runtime:" + Name, Op, Class: device.ClassRefused,
//     Detail: err.message}. When the runtime names the rule that refused (refusal_rule, ABI
//     version 4, asked right after the call as holds is asked, under the same watch), the error is
//     a *runtime.Refusal naming it around that one (runtime.RefusedBy reads it); a plugin of an
//     older version, or one whose refusal_rule is NULL or answers NULL or "", names none.
//   - RC_ERROR that forwards an inner device error is that error, unchanged. Every inner call the
//     plugin makes during one outer call that fails writes the Go error into the plugin's rc_error
//     (code, name, class_name, invalidated, message = Detail) and is remembered, with the exact
//     rc_error written, for the duration of the outer call. When the outer call returns RC_ERROR
//     with an rc_error equal field for field to one of those (the latest that matches wins), the
//     original Go error is returned as it was: the platform's Backend, Op, Code, Name, Class and
//     Invalidated pass through to the report.
//   - Any other RC_ERROR is the runtime's own failure: *device.Error{Backend: "runtime:" + Name,
//     Op, Code, Name, Class, Invalidated, Detail: err.message}, with Class the class_name when it
//     is a valid class (device.ValidClass) other than "refused" and device.ClassInternal
//     otherwise (the Detail then says what the plugin wrote).
//   - Any other status is a device.ClassInternal error naming it.
//
// Strings read from the plugin (rc_error's fields, slots_changed's keys) are cleaned first: a byte
// that is not UTF-8 becomes U+FFFD and a C0 or C1 control character or DEL its Go escape (\n,
// \x1b, \u009b), so that a message cannot forge a report line or reach the terminal as an escape
// sequence, and every report format shows the same text. The pass-through above compares the
// rc_error as the plugin wrote it, before it is cleaned.
//
// # Rules of the ABI checked at the boundary
//
// A plugin's answer or call that breaks the ABI is the runtime's own failure, a
// device.ClassInternal *device.Error with Backend "runtime:" + Name (the engine's ErrRuntime),
// whose Detail names the plugin's path, the entry point and the rule:
//
//   - provision that returns RC_OK with *served not RC_IN_PLACE, RC_ALLOCATED or RC_REBASED, an
//     empty *out (or one at address 0) for a request of more than 0 bytes, RC_IN_PLACE with *out
//     not cur or cur too small, *out smaller than the request, or *out past the end of the address
//     space (Runtime.Provision);
//   - commit_bank that returns RC_OK with an out[i] left unwritten (the loader sets each to
//     {UINT64_MAX, -1}), an out[i] that breaks what provision's *out must keep for its region's
//     bytes, or two regions' buffers sharing a byte (Runtime.CommitBank);
//   - device.malloc_, device.alloc_host or pool_alloc that returns RC_OK with *out left unwritten
//     (preset as commit_bank's), or breaking what provision's *out must keep (Runtime.allocated);
//   - device.create_stream, create_stream_with_flags, device.create_event or device.end_capture
//     that returns RC_OK with *out left unwritten (preset to UINT64_MAX), a stream 0 (the default
//     stream), a handle the inner device has not made through the runtime's inner table or has
//     destroyed (the loader notes what the inner calls make and destroy), or a handle of its kind
//     the runtime answered before and has not destroyed (Runtime.issued);
//   - device.create_stream or create_stream_with_flags that returns RC_OK with a stream the
//     runtime made through the inner table of the other kind;
//   - an inner call for a thread that is neither RC_THREAD_MAIN nor RC_THREAD_OTHER, or an inner
//     create_stream_with_flags with flags that are neither RC_STREAM_BLOCKING nor
//     RC_STREAM_NON_BLOCKING: not made, it fails, and the outer call returns the rule's error
//     whatever the plugin returns;
//   - an inner call from holds or slots_changed, which must change nothing: not made, it fails, and
//     as neither can return an error, the next call into the plugin returns it (Runtime.Close,
//     when none follows);
//   - a rule's name from refusal_rule that is not 1 to runtime.MaxRuleBytes bytes of lower-case
//     letters, digits and '-' (not starting with '-'), or an inner call it makes (not made): the
//     refused call fails with the rule's error instead;
//   - an inner call while no call into the plugin is in progress (a thread of the plugin's on its
//     own schedule): not made, it fails, and the next call into the plugin returns the rule's
//     error (Runtime.Close, when none follows).
//
// A plugin that calls exit() or quick_exit() would end the process with the plugin's status. The
// loader registers an atexit and an at_quick_exit handler (once, at the first Load) that write
// which plugin and entry point were in flight to stderr and _exit 2: when the thread ending the
// process is inside a call into a plugin; or, except for exit() in a race-enabled build (whose own
// exit(0) runs atexit handlers while calls given up on a timeout may be in flight), when any call
// is in flight, or else when a plugin is loaded and not closed (an exit between calls).
//
// # Threads
//
// Every call that names a thread t is made into the plugin on an OS thread that serves t, one call
// at a time per Runtime (a mutex serialises them): the plugin needs no lock of its own. When the
// device the Runtime was opened on is a session's view for t (device.SessionView: the engine runs
// an instance as one session on the simulator's thread for Main), the call is made where the caller
// is, on the device's own thread for t, and the plugin's inner calls run inline: no hand-off
// between OS threads. Otherwise it is made on a locked OS thread of the Runtime's own for t
// (device.Worker, started on first use). The engine makes all of an instance's calls inside its
// session, so the thread is the same for every call made for one t during the Runtime's life. The t
// the plugin passes to an inner call reaches the Go device as it is (device.Thread(t)); the device
// runs the call on its own worker for t (the simulator's and the drivers' locked threads), so the
// platform sees the thread the probe named, whatever thread the plugin forwarded from; but under a
// session for t, an inner call for t from another thread of the plugin's (one the call waits for)
// runs on that thread, since t's thread is blocked in the call and handing it there would wait for
// it. rc_runtime_open and rc_runtime_close run on the Main thread. host_write, host_read, holds and
// slots_changed name no thread: they are made from the caller's goroutine, still one call at a
// time.
//
// Every call into the plugin, holds and slots_changed included, is made under the watch of the
// device it was opened on, when that device has one (device.CallWatcher, the engine's watched
// device): code of the plugin's that never returns ends its instance in a timeout instead of
// hanging the run.
//
// A Runtime still inside a call when Plugin.CloseRuntimes runs (an instance the engine gave up on:
// the call never returns) is left open rather than waited for, and Plugin.Close then leaves the
// library loaded; both say so in their error.
//
// # Memory
//
// Nothing replaycheck passes to the plugin points into Go memory the plugin could keep: the inner
// rc_device table and the rc_runtime the plugin fills are C allocations that live until Close; the
// bytes of write and host_write are copied into C memory for the call, and read and host_read are
// read into C memory and copied out (one C buffer per Runtime, reused from call to call: a fresh
// one per chunk of a verification was fresh memory each time). Inner write and host_write copy the
// plugin's bytes into a Go slice before the device sees them; inner read and host_read read
// straight into the plugin's buffer (after a failed one its contents are unspecified). Exactly
// ptr.bytes bytes move, and a Go slice whose length differs from its Ptr's Bytes is refused before
// the plugin is called (device.ClassInvalidValue).
//
// Plugin.Close frees the loader's C memory but for the few hundred bytes that tell the exit
// handler which plugin was loaded: a handler already running on a thread of the plugin's may be
// reading them. An embedder that loads and closes plugins in a loop keeps that much per Load.
//
// Without cgo the package still builds: Load fails with an error wrapping dl.ErrNoCgo.
package plugin
