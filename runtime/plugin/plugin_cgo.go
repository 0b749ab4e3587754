//go:build cgo

package plugin

// The C half of the loader is in this directory's .c files, declared in rcp.h: inner.c (the inner
// device's table), flight.c (calls in flight and the exit handlers), calls.c (every call into a
// plugin). The package's C, cgo's own included, is C11 with warnings as errors.

/*
#cgo CFLAGS: -I${SRCDIR}/../../include -std=c11 -Wall -Wextra -Werror
#include <stdlib.h>
#include <string.h>
#include "rcp.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/runtime"
	"maps"
	"runtime/cgo"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/dl"
)

// ABIVersion is the RC_ABI_VERSION of include/replaycheck/runtime.h this package was built with.
const ABIVersion = uint32(C.RC_ABI_VERSION)

// MinABIVersion is the oldest ABI version Load accepts. Version 1 is version 2 without
// rc_runtime.slots_changed, version 2 is version 3 without rc_runtime.create_stream_with_flags,
// and version 3 is version 4 without rc_runtime.refusal_rule: each version's tables are a prefix of
// the next one's, so an older plugin runs as it did (version 1 asked holds about every buffer
// before every call of a guarded instance, versions 1 and 2 create blocking streams only, and the
// refusals of versions 1 to 3 name no rule).
const MinABIVersion = uint32(1)

// Plugin is a loaded runtime plugin library.
type Plugin struct {
	lib                 *dl.Library
	path, name          string
	abi, open, closeFns unsafe.Pointer
	version             uint32 // the ABI version the plugin reported: MinABIVersion to ABIVersion
	// descs are, for each call the loader makes (by its Go name), what the exit handler says was
	// in flight: "runtime plugin P was inside its entry E". C memory, read-only after Load.
	descs map[string]*C.char

	mu       sync.Mutex
	runtimes map[*Runtime]bool // opened and not closed
	closed   bool
}

// Load opens the runtime plugin at path and checks its ABI version (see the package doc). path is
// a file: a bare name (mine.so) is the file in the working directory, never a library the system's
// loader would search its directories for.
func Load(path string) (*Plugin, error) {
	file := path
	if !strings.ContainsRune(file, '/') {
		file = "./" + file
	}
	lib, err := dl.Open(file)
	if err != nil {
		return nil, fmt.Errorf("runtime plugin: %w", err)
	}
	p := &Plugin{lib: lib, path: path, name: nameOf(path), runtimes: map[*Runtime]bool{}}
	err = lib.Resolve([]dl.Symbol{
		dl.Sym("rc_runtime_abi_version", &p.abi),
		dl.Sym("rc_runtime_open", &p.open),
		dl.Sym("rc_runtime_close", &p.closeFns),
	})
	if err != nil {
		_ = lib.Close()
		return nil, fmt.Errorf("runtime plugin: %w", err)
	}
	registerExit()
	p.version = uint32(C.rcp_abi(p.abi))
	if p.version < MinABIVersion || p.version > ABIVersion {
		_ = lib.Close()
		return nil, fmt.Errorf("runtime plugin %s: it implements ABI version %d, but this replaycheck implements ABI version %d (RC_ABI_VERSION of include/replaycheck/runtime.h) and loads versions %d to %d: rebuild the plugin against replaycheck's header",
			path, p.version, ABIVersion, MinABIVersion, ABIVersion)
	}
	p.descs = make(map[string]*C.char, len(entries)+2)
	for op, entry := range entries {
		p.descs[op] = C.CString(fmt.Sprintf("runtime plugin %s was inside its entry %s, a call replaycheck made", path, entry))
	}
	p.descs[""] = C.CString(fmt.Sprintf("runtime plugin %s was inside a call replaycheck made", path))
	p.descs[loadedDesc] = C.CString(fmt.Sprintf("runtime plugin %s was loaded, between replaycheck's calls into it (from a thread of the plugin's own, or other C code)", path))
	C.rcp_loaded_add(p.descs[loadedDesc])
	return p, nil
}

// loadedDesc keys, in Plugin.descs, what the exit handler says of the plugin when no call into it
// is in flight.
const loadedDesc = " loaded"

var exitOnce sync.Once

// registerExit registers the exit handler (see the preamble), once per process: a plugin that
// calls exit() inside a call makes the process exit 2, saying so, not with the plugin's status.
func registerExit() {
	exitOnce.Do(func() {
		strict := C.int(1)
		if raceBuild {
			strict = 0
		}
		// A failure (the C library out of room for handlers) leaves the process as it was without
		// them: a plugin's exit() then ends it with the plugin's status.
		C.rcp_register_exit(strict)
	})
}

// desc is what the exit handler says of a call named op in flight.
func (p *Plugin) desc(op string) *C.char {
	if d, ok := p.descs[op]; ok {
		return d
	}
	return p.descs[""]
}

// Name is the library's base name without its extension: "reference" for reference.so.
func (p *Plugin) Name() string { return p.name }

// Version is the ABI version the plugin implements (rc_runtime_abi_version).
func (p *Plugin) Version() uint32 { return p.version }

// Path is the path the library was loaded from.
func (p *Plugin) Path() string { return p.path }

// CloseRuntimes closes every Runtime of p still open (see Runtime.Close). The engine finishes the
// runtime of each instance itself (Runtime.Finish); Close uses this for any left open. A Runtime
// still inside a call is not waited for: it is the runtime of an instance the engine gave up on
// (a call that never returned, a timeout), which will never return. It is left open, and the
// error names it and its call.
func (p *Plugin) CloseRuntimes() error {
	p.mu.Lock()
	open := make([]*Runtime, 0, len(p.runtimes))
	for r := range p.runtimes {
		open = append(open, r)
	}
	p.mu.Unlock()
	var errs []error
	stuck := map[string]int{}
	for _, r := range open {
		if !r.mu.TryLock() {
			op, _ := r.inCall.Load().(string)
			stuck[op]++
			continue
		}
		r.mu.Unlock()
		errs = append(errs, r.Close())
	}
	if len(stuck) > 0 {
		var calls []string
		n := 0
		for _, op := range slices.Sorted(maps.Keys(stuck)) {
			calls = append(calls, fmt.Sprintf("%s x%d", op, stuck[op]))
			n += stuck[op]
		}
		errs = append(errs, fmt.Errorf("runtime plugin %s: %s left open, each still inside a call that never returned (an instance given up on a timeout): %s",
			p.path, plural.Count(n, "runtime"), strings.Join(calls, ", ")))
	}
	return errors.Join(errs...)
}

// Close closes every Runtime still open, then unloads the library. The Plugin is unusable
// afterwards. While a Runtime is still inside a call (CloseRuntimes), the library stays loaded:
// its code may yet run on that call's thread.
func (p *Plugin) Close() error {
	err := p.CloseRuntimes()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("runtime plugin %s: already closed", p.path)
	}
	p.closed = true
	if len(p.runtimes) > 0 {
		return errors.Join(err, fmt.Errorf("runtime plugin %s: the library stays loaded, since its code may still run in those calls", p.path))
	}
	// No call is in flight, and none will be made: the exit handler's texts can go, but for the
	// one it says of a loaded plugin, which a handler already running on a thread of the plugin's
	// may be reading (a few hundred bytes kept for each Load).
	C.rcp_loaded_remove(p.descs[loadedDesc])
	for op, d := range p.descs {
		if op != loadedDesc {
			C.free(unsafe.Pointer(d))
		}
	}
	p.descs = nil
	return errors.Join(err, p.lib.Close())
}

// Runtime is one opened runtime: the plugin in front of one device, for one probe instance. It is
// a device.Device and has the allocator calls of runtime.Runtime. Its methods are safe for
// concurrent use; calls into the plugin are made one at a time.
type Runtime struct {
	p       *Plugin
	dev     device.Device
	guarded bool

	mu     sync.Mutex
	inCall atomic.Value // string: the call in progress, for CloseRuntimes to name a stuck one
	closed bool
	st     *state
	h      cgo.Handle
	inner  *C.rc_inner   // C memory: the plugin may keep the pointer until rc_runtime_close
	box    *C.rcp_box    // C memory: rt, and the call in flight for the exit handler
	rt     *C.rc_runtime // &box.rt: what rc_runtime_open filled
	// sv is the device's session view, when it has one: a call for t it runs inline is made into
	// the plugin where it is (on t's thread already); any other goes to workers[t], the locked OS
	// thread of the Runtime's own for t, started on first use.
	sv device.SessionView
	// watcher times each call into the plugin as the engine times device calls, when the device
	// has one (device.CallWatcher): code of the plugin's that never returns ends the instance.
	watcher device.CallWatcher
	workers [2]*device.Worker
	// holdsCall asks holds about box.hkey into box's answer (Holds): made once, as a closure made
	// per question would be allocated per question.
	holdsCall func()
	// logged: the runtime has a slot log (ABI 2's slots_changed); keys is C memory for its
	// answers, room for keysCap keys.
	logged bool
	// flagged: the runtime creates non-blocking streams (ABI 3's create_stream_with_flags).
	flagged bool
	// ruled: the runtime names the rule behind each refusal (ABI 4's refusal_rule).
	ruled   bool
	keys    **C.char
	keysCap int
	// live are the streams, events and graphs the runtime made and has not destroyed (issued).
	live liveHandles
	// scratch is C memory for the bytes of writes and reads, scratchCap bytes (scratchOf).
	scratch    unsafe.Pointer
	scratchCap int
}

// Open puts the plugin's runtime in front of dev: rc_runtime_open in kernel mode when guarded,
// program mode otherwise. dev stays the caller's: Runtime.Close does not close it.
func (p *Plugin) Open(dev device.Device, guarded bool) (*Runtime, error) {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("runtime plugin %s: closed", p.path)
	}
	r := &Runtime{p: p, dev: dev, guarded: guarded, st: &state{dev: dev, plugin: p.name, path: p.path}}
	r.h = cgo.NewHandle(r.st)
	r.inner = (*C.rc_inner)(C.calloc(1, C.sizeof_rc_inner))
	r.box = (*C.rcp_box)(C.calloc(1, C.sizeof_rcp_box))
	r.rt = &r.box.rt
	r.holdsCall = func() { C.rt_holds_box(r.rt) }
	C.rcp_fill_inner(r.inner, C.uintptr_t(r.h))
	ext := device.ExtensionsOf(dev)
	r.sv, r.watcher = ext.Session, ext.Watch
	mode := C.uint32_t(C.RC_MODE_PROGRAM)
	if guarded {
		mode = C.RC_MODE_KERNEL
	}
	opened := false
	err := r.do(device.Main, "rc_runtime_open", func(e *C.rc_error) C.int32_t {
		status := C.rcp_open(p.open, C.uint32_t(p.version), mode, &r.inner.device, r.rt, e)
		opened = status == statusOK
		return status
	})
	if err != nil {
		if opened { // RC_OK, but it broke a rule of the ABI on the way (Runtime.do)
			r.closeRuntime()
		}
		r.release()
		return nil, err
	}
	var buf [1024]C.char
	C.rcp_missing(r.rt, &buf[0], C.size_t(len(buf)))
	if missing := C.GoString(&buf[0]); missing != "" {
		r.closeRuntime()
		r.release()
		return nil, misuse(p.name, "rc_runtime_open", device.ClassInternal, "%s: the runtime left these entries NULL: %s", p.path, missing)
	}
	// An older plugin's table ends before the entries of later versions: they are Open's zeroed
	// memory.
	r.flagged = p.version >= 3 && r.rt.create_stream_with_flags != nil
	r.ruled = p.version >= 4 && r.rt.refusal_rule != nil
	if r.logged = p.version >= 2 && r.rt.slots_changed != nil; r.logged {
		r.keysCap = 64
		r.keys = (**C.char)(C.malloc(C.size_t(r.keysCap) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	}
	p.mu.Lock()
	p.runtimes[r] = true
	p.mu.Unlock()
	return r, nil
}

// release frees what Open made; the plugin's runtime is closed already (or was never opened).
func (r *Runtime) release() {
	for _, w := range r.workers {
		if w != nil {
			w.Stop()
		}
	}
	r.h.Delete()
	C.free(unsafe.Pointer(r.inner))
	C.free(unsafe.Pointer(r.box))
	C.free(unsafe.Pointer(r.keys))
	C.free(r.scratch)
	r.inner, r.box, r.rt, r.keys, r.keysCap, r.scratch, r.scratchCap = nil, nil, nil, nil, 0, nil, 0
}

// Close ends the runtime: rc_runtime_close, then the handle, the table and the threads are
// released. The inner device is not closed: it is the caller's. A second Close is an error.
func (r *Runtime) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return misuse(r.p.name, "Close", device.ClassInvalidState, "the runtime is closed already")
	}
	r.closed = true
	r.inCall.Store("rc_runtime_close")
	r.closeRuntime()
	r.release()
	r.p.mu.Lock()
	delete(r.p.runtimes, r)
	r.p.mu.Unlock()
	// A rule the plugin broke in a call whose answer could carry no error (holds, slots_changed)
	// and that no later call reported.
	return r.st.takeViolation()
}

// closeRuntime makes the plugin's rc_runtime_close, a call in progress for its inner calls (a
// runtime releases there what it made when it opened).
func (r *Runtime) closeRuntime() {
	r.enter(device.Main, "rc_runtime_close", false, func() { C.rcp_close(r.p.closeFns, r.rt) })
}

// Finish closes the runtime at the end of an instance (runtime.Runtime): the engine lets go of it
// once the instance is retired.
func (r *Runtime) Finish() error { return r.Close() }

// Guarded reports whether the runtime was opened in kernel mode.
func (r *Runtime) Guarded() bool { return r.guarded }

// call makes one call into the plugin for thread t, on t's OS thread, one at a time. A rule of the
// ABI the plugin broke during the call (an inner call for a thread that is none), or in a query
// before it that could not say so (holds, slots_changed), is the call's error, whatever the
// plugin answered.
func (r *Runtime) call(t device.Thread, op string, f func(*C.rc_error) C.int32_t) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.usable(op, t); err != nil {
		return err
	}
	r.inCall.Store(op)
	return r.do(t, op, f)
}

// callHere is call for the calls that take no thread: made from the caller's goroutine.
func (r *Runtime) callHere(op string, f func(*C.rc_error) C.int32_t) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.usable(op, device.Main); err != nil {
		return err
	}
	r.inCall.Store(op)
	return r.do(noThread, op, f)
}

// noThread runs a call on the caller's goroutine.
const noThread device.Thread = 255

func (r *Runtime) usable(op string, t device.Thread) error {
	switch {
	case r.closed:
		return misuse(r.p.name, op, device.ClassInvalidState, "the runtime is closed")
	case t != device.Main && t != device.Other:
		return misuse(r.p.name, op, device.ClassInvalidValue, "unknown thread %d", t)
	}
	return nil
}

// do runs f (one call into the plugin) and maps its status; r.mu is held, or r is not shared yet.
func (r *Runtime) do(t device.Thread, op string, f func(*C.rc_error) C.int32_t) error {
	var cerr C.rc_error
	var status C.int32_t
	r.enter(t, op, false, func() { status = f(&cerr) })
	err := mapStatus(r.p.name, op, int32(status), readError(&cerr), r.st.end())
	if v := r.st.takeViolation(); v != nil {
		return v
	}
	if status == statusRefused && r.ruled {
		return r.named(op, err)
	}
	return err
}

// named asks the runtime which of its rules made refusal, the error of its call op
// (rc_runtime.refusal_rule, ABI version 4), and names it (runtime.Refuse). A name that breaks the
// ABI's form, or an inner call the question made, is the call's error instead.
func (r *Runtime) named(op string, refusal error) error {
	var buf [runtime.MaxRuleBytes + 1]C.char
	var n C.int64_t
	r.query("RefusalRule", func() { n = C.rt_refusal_rule(r.rt, &buf[0], C.size_t(len(buf))) })
	if v := r.st.takeViolation(); v != nil {
		return v
	}
	name := C.GoString(&buf[0])
	e, ok := device.AsError(refusal)
	switch {
	case !ok || n <= 0:
		return refusal // none named
	case n > runtime.MaxRuleBytes:
		return misuse(r.p.name, op, device.ClassInternal, "%s: refusal_rule named a rule of more than %d bytes (%q...) for the refusal of %s (runtime.h: rc_runtime.refusal_rule)",
			r.p.path, runtime.MaxRuleBytes, name, entryOf(op))
	case !runtime.ValidRule(name):
		return misuse(r.p.name, op, device.ClassInternal, "%s: refusal_rule named the rule %q for the refusal of %s: a name is lower-case letters, digits and '-', not starting with '-' (runtime.h: rc_runtime.refusal_rule)",
			r.p.path, name, entryOf(op))
	}
	return runtime.Refuse(name, e)
}

// queryOps are the names of the queries, boxed once: holds is asked about every buffer before
// every call of a guarded instance, and a string stored in inCall would be boxed every time.
var queryOps = map[string]any{"Holds": "Holds", "SlotsChangedSince": "SlotsChangedSince", "RefusalRule": "RefusalRule"}

// query makes f, a call into the plugin named op that takes no thread, cannot fail and must change
// nothing (holds, slots_changed), from the caller's goroutine under the device's watch, as every
// other call: a query that never returns ends the instance in a timeout naming it. r.mu is held.
// An inner call the plugin makes during it is not made, and is the next call's error (see call).
func (r *Runtime) query(op string, f func()) {
	boxed, ok := queryOps[op]
	if !ok {
		boxed = op
	}
	r.inCall.Store(boxed)
	r.enter(noThread, op, true, f)
}

// enter makes f, one call into the plugin named op, under the watch of the device when it has one
// (device.CallWatcher), and on t's OS thread: where it is when the device's session view runs t's
// calls inline (the engine's session on the simulator's thread for t, so the plugin's call and its
// inner calls cost no hand-off), else on the Runtime's worker for t; noThread: where it is.
func (r *Runtime) enter(t device.Thread, op string, query bool, f func()) {
	r.box.desc = r.p.desc(op)
	// For its inner calls, the call is in progress only inside the watch, where an inner call is
	// watched nested in it (and outside it, a device call from a thread of the plugin's would take
	// the engine's place); and it is over when the plugin has returned and every inner call in
	// flight has (from a thread the call did not wait for). An inner call at any other time is not
	// made (state.broken).
	call := func() {
		r.st.calling(op, query)
		defer r.st.settle()
		f()
	}
	if t != noThread && (r.sv == nil || !r.sv.InSession(t)) {
		if r.workers[t] == nil {
			r.workers[t] = device.StartWorker(nil)
		}
		inPlugin := call
		call = func() { r.workers[t].Do(inPlugin) }
	}
	if r.watcher != nil {
		r.watcher.WatchCall(op, call)
		return
	}
	call()
}

// sized checks that a Go buffer has exactly the length its Ptr says: the ABI moves p.Bytes bytes.
func (r *Runtime) sized(op string, n int, p device.Ptr) error {
	if p.Bytes < 0 || int64(n) != p.Bytes {
		return misuse(r.p.name, op, device.ClassInvalidValue, "a buffer of %d bytes for %v: the lengths must match", n, p)
	}
	return nil
}

// scratchOf is the Runtime's C buffer for the bytes of one write or read, room for n (nil for 0):
// reused from call to call under r.mu, grown when a call needs more, freed by release. A fresh
// buffer per call made every chunk of a verification fresh memory.
func (r *Runtime) scratchOf(n int) unsafe.Pointer {
	if n == 0 {
		return nil
	}
	if n > r.scratchCap {
		C.free(r.scratch)
		r.scratch, r.scratchCap = C.malloc(C.size_t(n)), n
	}
	return r.scratch
}

// staged is src copied into the scratch buffer, for the duration of the call.
func (r *Runtime) staged(src []byte) unsafe.Pointer {
	buf := r.scratchOf(len(src))
	if buf != nil {
		copy(unsafe.Slice((*byte)(buf), len(src)), src)
	}
	return buf
}

// readInto makes read, a call that fills the scratch buffer, and copies the bytes out into dst
// when the plugin succeeded.
func (r *Runtime) readInto(dst []byte, read func(buf unsafe.Pointer) C.int32_t) C.int32_t {
	buf := r.scratchOf(len(dst))
	status := read(buf)
	if status == statusOK && len(dst) > 0 {
		copy(dst, unsafe.Slice((*byte)(buf), len(dst)))
	}
	return status
}

func ct(t device.Thread) C.uint32_t { return C.uint32_t(t) }

// --- device.Device: forwarded to the inner device, which the plugin does not see. ---

func (r *Runtime) Backend() string  { return r.dev.Backend() }
func (r *Runtime) Describe() string { return r.dev.Describe() }
func (r *Runtime) Platform() string { return r.dev.Platform() }

// Capabilities are the inner device's, less non-blocking streams unless the runtime creates them
// (create_stream_with_flags, ABI version 3). Extensions states nothing beyond device.Device: the
// ABI has no batch of kernels, no session and no comparison of its own, and every call goes through
// the plugin.
func (r *Runtime) Extensions() device.Extensions { return device.Extensions{Of: r} }

// RuntimeExtensions states why the plugin lacks a capability (Lacks) and its slot log
// (slots_changed, which answers "cannot say" for a plugin of ABI version 1).
func (r *Runtime) RuntimeExtensions() runtime.Extensions {
	return runtime.Extensions{Of: r, Lacks: r, SlotLog: r}
}

func (r *Runtime) Capabilities() device.Capabilities {
	c := r.dev.Capabilities()
	c.NonBlockingStreams = c.NonBlockingStreams && r.flagged
	return c
}
func (r *Runtime) Counters() device.Counters { return r.dev.Counters() }
func (r *Runtime) GraphNodes(t device.Thread, g device.Graph) ([]device.GraphNode, error) {
	return r.dev.GraphNodes(t, g)
}

// --- device.Device: calls into the plugin's table. ---

func (r *Runtime) Malloc(t device.Thread, bytes int64) (device.Ptr, error) {
	out := cPtr(unwritten)
	err := r.call(t, "Malloc", func(e *C.rc_error) C.int32_t { return C.rt_malloc(r.rt, ct(t), C.int64_t(bytes), &out, e) })
	if err != nil {
		return device.Ptr{}, err
	}
	return r.allocated("Malloc", "", bytes, goPtr(out))
}

func (r *Runtime) Free(t device.Thread, p device.Ptr) error {
	return r.call(t, "Free", func(e *C.rc_error) C.int32_t { return C.rt_free(r.rt, ct(t), cPtr(p), e) })
}

func (r *Runtime) Write(t device.Thread, dst device.Ptr, src []byte) error {
	if err := r.sized("Write", len(src), dst); err != nil {
		return err
	}
	return r.call(t, "Write", func(e *C.rc_error) C.int32_t { return C.rt_write(r.rt, ct(t), cPtr(dst), r.staged(src), e) })
}

func (r *Runtime) Read(t device.Thread, dst []byte, src device.Ptr) error {
	if err := r.sized("Read", len(dst), src); err != nil {
		return err
	}
	return r.call(t, "Read", func(e *C.rc_error) C.int32_t {
		return r.readInto(dst, func(buf unsafe.Pointer) C.int32_t { return C.rt_read(r.rt, ct(t), buf, cPtr(src), e) })
	})
}

func (r *Runtime) AllocHost(t device.Thread, bytes int64, kind device.HostMemory) (device.Ptr, error) {
	out := cPtr(unwritten)
	err := r.call(t, "AllocHost", func(e *C.rc_error) C.int32_t {
		return C.rt_alloc_host(r.rt, ct(t), C.int64_t(bytes), C.uint32_t(kind), &out, e)
	})
	if err != nil {
		return device.Ptr{}, err
	}
	return r.allocated("AllocHost", fmt.Sprintf(" of %s memory", kind), bytes, goPtr(out))
}

func (r *Runtime) FreeHost(t device.Thread, p device.Ptr) error {
	return r.call(t, "FreeHost", func(e *C.rc_error) C.int32_t { return C.rt_free_host(r.rt, ct(t), cPtr(p), e) })
}

func (r *Runtime) HostWrite(dst device.Ptr, src []byte) error {
	if err := r.sized("HostWrite", len(src), dst); err != nil {
		return err
	}
	return r.callHere("HostWrite", func(e *C.rc_error) C.int32_t { return C.rt_host_write(r.rt, cPtr(dst), r.staged(src), e) })
}

func (r *Runtime) HostRead(dst []byte, src device.Ptr) error {
	if err := r.sized("HostRead", len(dst), src); err != nil {
		return err
	}
	return r.callHere("HostRead", func(e *C.rc_error) C.int32_t {
		return r.readInto(dst, func(buf unsafe.Pointer) C.int32_t { return C.rt_host_read(r.rt, buf, cPtr(src), e) })
	})
}

func (r *Runtime) CreateStream(t device.Thread, flags device.StreamFlags) (device.Stream, error) {
	out := C.rc_stream(unissued)
	op := "CreateStream"
	create := func(e *C.rc_error) C.int32_t { return C.rt_create_stream(r.rt, ct(t), &out, e) }
	switch {
	case flags == device.Blocking:
	case !r.flagged:
		return 0, misuse(r.p.name, "CreateStreamWithFlags", device.ClassNotSupported, "%s: the runtime creates blocking streams only: %s (capability non-blocking-streams)", r.p.path, r.blockingOnly())
	default:
		op = "CreateStreamWithFlags"
		create = func(e *C.rc_error) C.int32_t {
			return C.rt_create_stream_with_flags(r.rt, ct(t), C.uint32_t(flags), &out, e)
		}
	}
	made, err := r.issuing(t, op, handleStream, func() uint64 { return uint64(out) }, create)
	if err != nil {
		return 0, err
	}
	if err := r.issued(op, entryOf(op), handleStream, uint64(out), made); err != nil {
		return 0, err
	}
	if made.flags != flags {
		// A stream of the other kind orders the probe's work against the default stream otherwise
		// than the probe declares.
		r.live.end(nil, handleStream, uint64(out))
		return 0, misuse(r.p.name, op, device.ClassInternal, "%s: %s returned RC_OK with stream %d, which the runtime made %s through the inner device, asked for a %s one (runtime.h: rc_stream_flags)",
			r.p.path, entryOf(op), uint64(out), kindOf(made.flags), kindOf(flags))
	}
	return device.Stream(out), nil
}

// kindOf names a stream's flags as rc_stream_flags documents them.
func kindOf(f device.StreamFlags) string {
	if f == device.NonBlocking {
		return "non-blocking"
	}
	return "blocking"
}

// Lacks says why the runtime lacks a capability its inner device has (runtime.Lacker): for
// non-blocking-streams, the version it implements or the entry it left NULL.
func (r *Runtime) Lacks(capability string) string {
	if capability != "non-blocking-streams" || !r.dev.Capabilities().NonBlockingStreams {
		return ""
	}
	return r.blockingOnly()
}

// blockingOnly says why the runtime creates blocking streams only ("" when it creates both).
func (r *Runtime) blockingOnly() string {
	switch {
	case r.flagged:
		return ""
	case r.p.version < 3:
		return fmt.Sprintf("it implements ABI version %d, which has no create_stream_with_flags", r.p.version)
	}
	return "its create_stream_with_flags is NULL"
}

func (r *Runtime) DestroyStream(t device.Thread, s device.Stream) error {
	err := r.call(t, "DestroyStream", func(e *C.rc_error) C.int32_t { return C.rt_destroy_stream(r.rt, ct(t), C.rc_stream(s), e) })
	r.live.end(err, handleStream, uint64(s))
	return err
}

func (r *Runtime) CreateEvent(t device.Thread) (device.Event, error) {
	out := C.rc_event(unissued)
	made, err := r.issuing(t, "CreateEvent", handleEvent, func() uint64 { return uint64(out) },
		func(e *C.rc_error) C.int32_t { return C.rt_create_event(r.rt, ct(t), &out, e) })
	if err != nil {
		return 0, err
	}
	if err := r.issued("CreateEvent", "device.create_event", handleEvent, uint64(out), made); err != nil {
		return 0, err
	}
	return device.Event(out), nil
}

func (r *Runtime) DestroyEvent(t device.Thread, ev device.Event) error {
	err := r.call(t, "DestroyEvent", func(e *C.rc_error) C.int32_t { return C.rt_destroy_event(r.rt, ct(t), C.rc_event(ev), e) })
	r.live.end(err, handleEvent, uint64(ev))
	return err
}

// unissued is what replaycheck sets the handle a create call or end_capture answers to before the
// call: UINT64_MAX, which no inner device issues.
const unissued = ^uint64(0)

// The kinds of handle a runtime issues, as runtime.h names them.
const (
	handleStream = "stream"
	handleEvent  = "event"
	handleGraph  = "graph"
)

// liveHandles are the handles a runtime issued and has not destroyed; calls for two threads may
// answer at once.
type liveHandles struct {
	mu   sync.Mutex
	live map[handle]bool
}

// handle is one issued handle: its kind and its id.
type handle struct {
	kind string
	id   uint64
}

// begin notes id issued; it reports false when id of that kind is live already.
func (l *liveHandles) begin(kind string, id uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live[handle{kind, id}] {
		return false
	}
	if l.live == nil {
		l.live = map[handle]bool{}
	}
	l.live[handle{kind, id}] = true
	return true
}

// end notes id destroyed, when err (the destroy call's) is nil.
func (l *liveHandles) end(err error, kind string, id uint64) {
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.live, handle{kind, id})
}

// madeHandle is what the inner table recorded of a handle a runtime answered: whether the inner
// device made it through the runtime's table and has not destroyed it, and a stream's flags.
type madeHandle struct {
	ok    bool
	flags device.StreamFlags
}

// issuing makes f, a call named op that answers a handle of kind (answer reads it), and returns
// what the inner table recorded of that handle, read before the call's lock is let go.
func (r *Runtime) issuing(t device.Thread, op, kind string, answer func() uint64, f func(*C.rc_error) C.int32_t) (madeHandle, error) {
	var made madeHandle
	err := r.call(t, op, func(e *C.rc_error) C.int32_t {
		status := f(e)
		made.flags, made.ok = r.st.madeAs(kind, answer())
		return status
	})
	if err != nil {
		// A call given up on a timeout may still write made: read it only after a call that returned.
		return madeHandle{}, err
	}
	return made, nil
}

// issued checks the handle, of kind, that entry answered RC_OK with (runtime.h, rc_runtime's create
// calls and end_capture): written, not the default stream for a stream, one the inner device made
// through the runtime's inner table and has not destroyed (made), and not one the runtime issued
// before and has not destroyed. An answer that breaks one is the runtime's error, never a handle
// the engine uses: work sent to the default stream, to another stream or graph of the instance's,
// or to a handle that names nothing would be reported as the platform's or the probe's.
func (r *Runtime) issued(op, entry, kind string, id uint64, made madeHandle) error {
	var rule string
	switch {
	case id == unissued:
		rule = fmt.Sprintf("*out is UINT64_MAX as replaycheck set it: a %s that returns RC_OK writes the %s it made", entry, kind)
	case kind == handleStream && id == 0:
		rule = "*out is 0, the default stream: a stream it makes is a new one, never the default stream"
	case !made.ok:
		rule = fmt.Sprintf("*out is %s %d, which the inner device has not made through this runtime's inner table, or has destroyed since: every %s it answers is one the inner device made for it", kind, id, kind)
	case !r.live.begin(kind, id):
		rule = fmt.Sprintf("*out is %s %d, which it answered before and has not destroyed: every %s it makes is a new one", kind, id, kind)
	default:
		return nil
	}
	return misuse(r.p.name, op, device.ClassInternal, "%s: %s returned RC_OK, but %s (runtime.h: rc_runtime.%s)", r.p.path, entry, rule, entry)
}

func (r *Runtime) Fill(t device.Thread, s device.Stream, dst device.Ptr, value byte) error {
	return r.call(t, "Fill", func(e *C.rc_error) C.int32_t {
		return C.rt_fill(r.rt, ct(t), C.rc_stream(s), cPtr(dst), C.uint8_t(value), e)
	})
}

func (r *Runtime) Copy(t device.Thread, s device.Stream, dst, src device.Ptr) error {
	return r.call(t, "Copy", func(e *C.rc_error) C.int32_t {
		return C.rt_copy(r.rt, ct(t), C.rc_stream(s), cPtr(dst), cPtr(src), e)
	})
}

func (r *Runtime) Axpy(t device.Thread, s device.Stream, y, x device.Ptr, a uint32) error {
	return r.call(t, "Axpy", func(e *C.rc_error) C.int32_t {
		return C.rt_axpy(r.rt, ct(t), C.rc_stream(s), cPtr(y), cPtr(x), C.uint32_t(a), e)
	})
}

func (r *Runtime) Record(t device.Thread, ev device.Event, s device.Stream) error {
	return r.call(t, "Record", func(e *C.rc_error) C.int32_t {
		return C.rt_record(r.rt, ct(t), C.rc_event(ev), C.rc_stream(s), e)
	})
}

func (r *Runtime) Wait(t device.Thread, s device.Stream, ev device.Event) error {
	return r.call(t, "Wait", func(e *C.rc_error) C.int32_t {
		return C.rt_wait(r.rt, ct(t), C.rc_stream(s), C.rc_event(ev), e)
	})
}

func (r *Runtime) SyncStream(t device.Thread, s device.Stream) error {
	return r.call(t, "SyncStream", func(e *C.rc_error) C.int32_t { return C.rt_sync_stream(r.rt, ct(t), C.rc_stream(s), e) })
}

func (r *Runtime) SyncDevice(t device.Thread) error {
	return r.call(t, "SyncDevice", func(e *C.rc_error) C.int32_t { return C.rt_sync_device(r.rt, ct(t), e) })
}

func (r *Runtime) QueryEvent(t device.Thread, ev device.Event) (bool, error) {
	var done C.uint32_t
	err := r.call(t, "QueryEvent", func(e *C.rc_error) C.int32_t { return C.rt_query_event(r.rt, ct(t), C.rc_event(ev), &done, e) })
	return err == nil && done != 0, err
}

func (r *Runtime) SyncEvent(t device.Thread, ev device.Event) error {
	return r.call(t, "SyncEvent", func(e *C.rc_error) C.int32_t { return C.rt_sync_event(r.rt, ct(t), C.rc_event(ev), e) })
}

func (r *Runtime) ExchangeCaptureMode(t device.Thread, mode device.CaptureMode) (device.CaptureMode, error) {
	var old C.uint32_t
	err := r.call(t, "ExchangeCaptureMode", func(e *C.rc_error) C.int32_t {
		return C.rt_exchange_capture_mode(r.rt, ct(t), C.uint32_t(mode), &old, e)
	})
	if err != nil {
		return 0, err
	}
	return device.CaptureMode(old), nil
}

func (r *Runtime) BeginCapture(t device.Thread, s device.Stream, mode device.CaptureMode) error {
	return r.call(t, "BeginCapture", func(e *C.rc_error) C.int32_t {
		return C.rt_begin_capture(r.rt, ct(t), C.rc_stream(s), C.uint32_t(mode), e)
	})
}

func (r *Runtime) EndCapture(t device.Thread, s device.Stream) (device.Graph, error) {
	out := C.rc_graph(unissued)
	made, err := r.issuing(t, "EndCapture", handleGraph, func() uint64 { return uint64(out) },
		func(e *C.rc_error) C.int32_t { return C.rt_end_capture(r.rt, ct(t), C.rc_stream(s), &out, e) })
	if err != nil {
		return 0, err
	}
	if err := r.issued("EndCapture", "device.end_capture", handleGraph, uint64(out), made); err != nil {
		return 0, err
	}
	return device.Graph(out), nil
}

func (r *Runtime) CaptureInfo(t device.Thread, s device.Stream) (device.CaptureInfo, error) {
	var out C.rc_capture_info
	err := r.call(t, "CaptureInfo", func(e *C.rc_error) C.int32_t { return C.rt_capture_info(r.rt, ct(t), C.rc_stream(s), &out, e) })
	if err != nil {
		return device.CaptureInfo{}, err
	}
	return device.CaptureInfo{Status: device.CaptureStatus(out.status), ID: uint64(out.id), Origin: device.Stream(out.origin),
		Mode: device.CaptureMode(out.mode)}, nil
}

func (r *Runtime) Launch(t device.Thread, g device.Graph, s device.Stream) error {
	return r.call(t, "Launch", func(e *C.rc_error) C.int32_t { return C.rt_launch(r.rt, ct(t), C.rc_graph(g), C.rc_stream(s), e) })
}

func (r *Runtime) DestroyGraph(t device.Thread, g device.Graph) error {
	err := r.call(t, "DestroyGraph", func(e *C.rc_error) C.int32_t { return C.rt_destroy_graph(r.rt, ct(t), C.rc_graph(g), e) })
	r.live.end(err, handleGraph, uint64(g))
	return err
}

// --- The allocator calls of runtime.Runtime. ---

// Provision serves bytes for the slot named key (rc_runtime.provision). On a refusal it returns
// cur and runtime.NotServed; on another failure what the plugin left in its out parameter
// (replaycheck sets it to cur before the call) and runtime.NotServed.
func (r *Runtime) Provision(t device.Thread, slot runtime.Slot, key string, cur device.Ptr, bytes int64) (device.Ptr, runtime.Served, error) {
	ckey := C.CString(key)
	defer C.free(unsafe.Pointer(ckey))
	out := cPtr(cur)
	var served C.uint32_t
	err := r.call(t, "Provision", func(e *C.rc_error) C.int32_t {
		return C.rt_provision(r.rt, ct(t), C.uint32_t(slot), ckey, cPtr(cur), C.int64_t(bytes), &out, &served, e)
	})
	switch {
	case device.IsRefusal(err):
		return cur, runtime.NotServed, err
	case err != nil:
		return goPtr(out), runtime.NotServed, err
	}
	if err := r.servedAsPromised(key, cur, bytes, goPtr(out), uint32(served)); err != nil {
		return goPtr(out), runtime.NotServed, err
	}
	return goPtr(out), runtime.Served(served), nil
}

// servedAsPromised checks what a provision that returned RC_OK says it served against the
// contract (runtime.h, rc_runtime.provision and rc_served): an answer that breaks it is the
// runtime's error, naming the rule, never a buffer the engine goes on with.
func (r *Runtime) servedAsPromised(key string, cur device.Ptr, bytes int64, out device.Ptr, served uint32) error {
	var rule string
	switch {
	case served < uint32(runtime.InPlace) || served > uint32(runtime.Rebased):
		rule = fmt.Sprintf("*served is %d: a provision that returns RC_OK served the request RC_IN_PLACE (1), RC_ALLOCATED (2) or RC_REBASED (3)", served)
	case runtime.Served(served) == runtime.InPlace && out != cur:
		rule = fmt.Sprintf("RC_IN_PLACE with *out %v: a request served in place leaves the slot's address and size as they were, *out = cur", out)
	case out.Bytes < bytes && runtime.Served(served) == runtime.InPlace:
		rule = fmt.Sprintf("RC_IN_PLACE, but the slot holds %d bytes: a request that does not fit what the slot holds is re-based (RC_REBASED) or refused, never served in place", out.Bytes)
	default:
		rule = bufferBroken("provision", "*out", bytes, out)
	}
	if rule == "" {
		return nil
	}
	return misuse(r.p.name, "Provision", device.ClassInternal, "%s: provision of %d bytes for slot %q (holding %v) returned RC_OK, but %s (runtime.h: rc_runtime.provision, rc_served)",
		r.p.path, bytes, key, cur, rule)
}

// bufferBroken is the rule that p, the buffer entry answered RC_OK with for a request of bytes
// (named as name: "*out", "out[2]"), breaks, or "" when it keeps them all: a request of more than 0
// bytes names a buffer, which holds at least the bytes asked for, is not at address 0, and ends
// inside the address space.
func bufferBroken(entry, name string, bytes int64, p device.Ptr) string {
	switch {
	case bytes > 0 && p.IsZero():
		return fmt.Sprintf("%s is {0,0}: a %s that returns RC_OK names the buffer it served", name, entry)
	case p.Bytes < bytes:
		return fmt.Sprintf("%s %v holds %d bytes, fewer than the %d asked for", name, p, p.Bytes, bytes)
	case p.Bytes > 0 && p.Addr == 0:
		return fmt.Sprintf("%s %v is at address 0", name, p)
	case p.End() < p.Addr:
		return fmt.Sprintf("%s %v runs past the end of the address space", name, p)
	}
	return ""
}

// allocated checks the buffer the allocation op (Malloc, AllocHost, PoolAlloc: the entries
// device.malloc_, device.alloc_host, pool_alloc) answered RC_OK with for a request of bytes (from
// says of what, or is ""): written (replaycheck sets *out to unwritten before the call) and a
// buffer as bufferBroken says. An answer that breaks it is the runtime's error, never a buffer the
// engine writes to or frees.
func (r *Runtime) allocated(op, from string, bytes int64, p device.Ptr) (device.Ptr, error) {
	entry := entryOf(op)
	rule := bufferBroken(entry, "*out", bytes, p)
	if p == unwritten {
		rule = fmt.Sprintf("*out is {UINT64_MAX,-1} as replaycheck set it: a %s that returns RC_OK writes the buffer it served", entry)
	}
	if rule == "" {
		return p, nil
	}
	return device.Ptr{}, misuse(r.p.name, op, device.ClassInternal, "%s: %s of %d bytes%s returned RC_OK, but %s (runtime.h: rc_runtime.%s)",
		r.p.path, entry, bytes, from, rule, entry)
}

// Release gives back the buffer the slot named key holds (rc_runtime.release).
func (r *Runtime) Release(t device.Thread, slot runtime.Slot, key string, p device.Ptr) error {
	ckey := C.CString(key)
	defer C.free(unsafe.Pointer(ckey))
	return r.call(t, "Release", func(e *C.rc_error) C.int32_t {
		return C.rt_release(r.rt, ct(t), C.uint32_t(slot), ckey, cPtr(p), e)
	})
}

// Holds reports what the slot named key holds (rc_runtime.holds). A closed runtime holds nothing.
func (r *Runtime) Holds(key string) (runtime.Slot, device.Ptr, bool) {
	ckey := C.CString(key)
	defer C.free(unsafe.Pointer(ckey))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, device.Ptr{}, false
	}
	r.box.hkey = ckey
	r.query("Holds", r.holdsCall)
	r.box.hkey = nil
	if r.box.held == 0 {
		return 0, device.Ptr{}, false
	}
	return runtime.Slot(r.box.hslot), goPtr(r.box.hptr), true
}

// maxLoggedKeys bounds one answer of a slot log: a plugin that says it logged more is answered as
// one whose log does not reach back (every slot is read).
const maxLoggedKeys = 1 << 20

// SlotsVersion is the runtime's slot version (rc_runtime.slots_changed); 0 when it keeps no log.
func (r *Runtime) SlotsVersion() uint64 {
	_, now, _ := r.SlotsChangedSince(^uint64(0))
	return now
}

// SlotsChangedSince lists the keys of the slots whose holdings changed after version v, once per
// change in order, and the version now (rc_runtime.slots_changed). ok is false when the runtime
// keeps no log (ABI version 1, or slots_changed NULL), when its log does not reach back to v, or
// when the runtime is closed: the caller reads every slot then. Like Holds, it is made from the
// caller's goroutine.
func (r *Runtime) SlotsChangedSince(v uint64) (keys []string, now uint64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || !r.logged {
		return nil, 0, false
	}
	// Twice at most: a count above the room given asks for a second call with room for it all.
	for range 2 {
		var cnow C.uint64_t
		var cn C.int64_t
		r.query("SlotsChangedSince", func() {
			cn = C.rt_slots_changed(r.rt, C.uint64_t(v), (**C.char)(unsafe.Pointer(r.keys)), C.size_t(r.keysCap), &cnow)
		})
		n := int64(cn)
		now = uint64(cnow)
		switch {
		case n < 0 || n > maxLoggedKeys:
			return nil, now, false
		case n == 0:
			return nil, now, true
		case int(n) <= r.keysCap:
			keys = make([]string, n)
			for i, k := range unsafe.Slice(r.keys, n) {
				keys[i] = clean(C.GoString(k)) // a key no buffer has, when the plugin's was not text
			}
			return keys, now, true
		}
		grown := C.realloc(unsafe.Pointer(r.keys), C.size_t(n)*C.size_t(unsafe.Sizeof(uintptr(0))))
		if grown == nil {
			return nil, now, false
		}
		r.keys, r.keysCap = (**C.char)(grown), int(n)
	}
	return nil, now, false // the second answer asked for more room again: read every slot
}

// CommitBank commits arena regions at once (rc_runtime.commit_bank) and returns each region's
// buffer, in order.
func (r *Runtime) CommitBank(t device.Thread, regions []runtime.Region) ([]device.Ptr, error) {
	n := len(regions)
	cregions := (*C.rc_region)(C.calloc(C.size_t(max(n, 1)), C.sizeof_rc_region))
	defer C.free(unsafe.Pointer(cregions))
	cout := (*C.rc_ptr)(C.calloc(C.size_t(max(n, 1)), C.sizeof_rc_ptr))
	defer C.free(unsafe.Pointer(cout))
	outs := unsafe.Slice(cout, max(n, 1))[:n]
	for i := range outs {
		outs[i] = cPtr(unwritten)
	}
	rs := unsafe.Slice(cregions, max(n, 1))
	for i, reg := range regions {
		rs[i].key = C.CString(reg.Key)
		rs[i].bytes = C.int64_t(reg.Bytes)
	}
	defer func() {
		for i := range regions {
			C.free(unsafe.Pointer(rs[i].key))
		}
	}()
	err := r.call(t, "CommitBank", func(e *C.rc_error) C.int32_t {
		return C.rt_commit_bank(r.rt, ct(t), cregions, C.size_t(n), cout, e)
	})
	if err != nil {
		return nil, err
	}
	out := make([]device.Ptr, n)
	for i, p := range outs {
		out[i] = goPtr(p)
	}
	if err := r.bankAsPromised(regions, out); err != nil {
		return nil, err
	}
	return out, nil
}

// unwritten is what CommitBank sets every out[i] to before the call: a buffer no answer can be.
var unwritten = device.Ptr{Addr: ^uint64(0), Bytes: -1}

// bankAsPromised checks what a commit_bank that returned RC_OK says each region holds against the
// contract (runtime.h, rc_runtime.commit_bank): every out[i] written, each a buffer for its region
// as provision's *out is for its request (bufferBroken), and no two regions' buffers sharing a
// byte. An answer that breaks it is the runtime's error, naming the rule, never a bank the caller
// goes on with.
func (r *Runtime) bankAsPromised(regions []runtime.Region, out []device.Ptr) error {
	for i, p := range out {
		rule := bufferBroken("commit_bank", fmt.Sprintf("out[%d]", i), regions[i].Bytes, p)
		j := slices.IndexFunc(out[:i], func(q device.Ptr) bool { return q.Bytes > 0 && p.Bytes > 0 && q.Overlaps(p) })
		switch {
		case p == unwritten:
			rule = fmt.Sprintf("out[%d] is {UINT64_MAX,-1} as replaycheck set it: a commit_bank that returns RC_OK writes every region's buffer", i)
		case rule == "" && j >= 0:
			rule = fmt.Sprintf("out[%d] %v shares bytes with out[%d] %v, region %q's: every region has a buffer of its own", i, p, j, out[j], regions[j].Key)
		case rule == "":
			continue
		}
		return misuse(r.p.name, "CommitBank", device.ClassInternal, "%s: commit_bank of %d regions returned RC_OK, but for region %q (%d bytes), %s (runtime.h: rc_runtime.commit_bank)",
			r.p.path, len(regions), regions[i].Key, regions[i].Bytes, rule)
	}
	return nil
}

// ReservePool reserves the named pool's segment (rc_runtime.reserve_pool): device memory when host
// is 0, host memory of that kind otherwise.
func (r *Runtime) ReservePool(t device.Thread, name string, bytes int64, host device.HostMemory) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return r.call(t, "ReservePool", func(e *C.rc_error) C.int32_t {
		return C.rt_reserve_pool(r.rt, ct(t), cname, C.int64_t(bytes), C.uint32_t(host), e)
	})
}

// PoolAlloc serves a block from the named pool (rc_runtime.pool_alloc).
func (r *Runtime) PoolAlloc(t device.Thread, name string, bytes int64) (device.Ptr, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	out := cPtr(unwritten)
	err := r.call(t, "PoolAlloc", func(e *C.rc_error) C.int32_t {
		return C.rt_pool_alloc(r.rt, ct(t), cname, C.int64_t(bytes), &out, e)
	})
	if err != nil {
		return device.Ptr{}, err
	}
	return r.allocated("PoolAlloc", fmt.Sprintf(" from pool %q", name), bytes, goPtr(out))
}

// PoolFree returns a block to the named pool (rc_runtime.pool_free).
func (r *Runtime) PoolFree(t device.Thread, name string, p device.Ptr) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return r.call(t, "PoolFree", func(e *C.rc_error) C.int32_t { return C.rt_pool_free(r.rt, ct(t), cname, cPtr(p), e) })
}

// Retire frees everything the runtime holds (rc_runtime.retire).
func (r *Runtime) Retire(t device.Thread) error {
	return r.call(t, "Retire", func(e *C.rc_error) C.int32_t { return C.rt_retire(r.rt, ct(t), e) })
}
