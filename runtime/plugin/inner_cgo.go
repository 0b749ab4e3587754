//go:build cgo

package plugin

// The INNER device: the Go functions behind the rc_device table replaycheck hands the plugin. Each
// is exported to C and reached through an adapter of the table's exact type (plugin_cgo.go); self
// is the runtime/cgo.Handle of the Runtime's state. The preamble holds declarations only, as cgo
// requires of a file with //export.

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#include <stdint.h>
#include <string.h>
#include "replaycheck/runtime.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"sync"
	"unsafe"

	"github.com/replaycheck/replaycheck/device"
)

// state is what the inner table's self names: the Go device, the plugin, and the outer call in
// progress: its name, the inner failures it saw, and the first rule of the ABI an inner call broke.
// Outer calls are serialised per Runtime; the inner calls of one outer call may come from several
// of the plugin's threads at once (threads of its own that the call waits for), and a thread of
// the plugin's may call in between calls (which the ABI forbids, and the rules report), so all but
// the fixed fields are under mu.
type state struct {
	dev          device.Device
	plugin, path string // the plugin's Name and Path, for the errors of the rules it breaks

	// inner is held shared by every inner call while it runs, and whole by settle, which ends the
	// outer call for them: an inner call is made inside the call it serves or not at all.
	inner sync.RWMutex

	mu sync.Mutex
	op string // the outer call in progress (its Go name), "" between calls
	// query: the call in progress is holds or slots_changed, which make no inner call.
	query     bool
	failures  []innerFailure
	violation error
	// made are the streams, events and graphs the inner device made through this table and has
	// not destroyed, a stream's with the flags it was made with: what a handle the runtime answers
	// must be (Runtime.issued).
	made map[handle]device.StreamFlags
}

// note keeps a handle the inner device made, with a stream's flags.
func (st *state) note(kind string, id uint64, f device.StreamFlags) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.made == nil {
		st.made = map[handle]device.StreamFlags{}
	}
	st.made[handle{kind, id}] = f
}

// forget drops a handle the inner device destroyed, when e (the destroy's error) is nil.
func (st *state) forget(e error, kind string, id uint64) error {
	if e == nil {
		st.mu.Lock()
		delete(st.made, handle{kind, id})
		st.mu.Unlock()
	}
	return e
}

// madeAs says whether the inner device made the handle through this table and has not destroyed
// it, and a stream's flags.
func (st *state) madeAs(kind string, id uint64) (device.StreamFlags, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	f, ok := st.made[handle{kind, id}]
	return f, ok
}

// calling records the outer call in progress: op ("" for none), and whether it is a query.
func (st *state) calling(op string, query bool) {
	st.mu.Lock()
	st.op, st.query = op, query
	st.mu.Unlock()
}

// settle ends the outer call for the inner calls: it waits for those in flight, and a later one
// finds no call in progress.
func (st *state) settle() {
	st.inner.Lock()
	defer st.inner.Unlock()
	st.calling("", false)
}

// current is the outer call in progress, and whether it is a query.
func (st *state) current() (op string, query bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.op, st.query
}

// end returns the inner failures the outer call saw, oldest first, and forgets them: the next
// call starts with none, since an inner call fails only inside a call (state.broken).
func (st *state) end() []innerFailure {
	st.mu.Lock()
	defer st.mu.Unlock()
	f := st.failures
	st.failures = nil
	return f
}

// noThreadArg stands for the thread of an inner call that takes none (host_write, host_read).
const noThreadArg = ^C.uint32_t(0)

// inner runs one inner call, named op, for thread t (noThreadArg: one that takes none): f with the
// Go device. A failure is written into err and remembered for the pass-through; a panic (a device
// bug, or self naming a closed Runtime) is an internal error, never a crash of the process through
// C. An inner call that breaks a rule of the ABI (a thread that is none; any inner call from holds
// or slots_changed; stream flags rc_stream_flags does not name) is not made: it fails with the
// runtime's error naming the rule, which is also the outer call's error whatever the plugin
// answers (Runtime.do).
func inner(self C.uintptr_t, t C.uint32_t, err *C.rc_error, op string, f func(dev device.Device) error) C.int32_t {
	return innerOf(self, t, err, op, nil, func(st *state) error { return f(st.dev) })
}

// innerOf is inner for a call with a rule of its own (rule returns the violation, or nil; it is
// asked after the rules of every call) and that keeps state of its own (f gets the state).
func innerOf(self C.uintptr_t, t C.uint32_t, err *C.rc_error, op string, rule func(st *state) error, f func(st *state) error) (status C.int32_t) {
	var st *state
	defer func() {
		if v := recover(); v != nil {
			e := &device.Error{Backend: "replaycheck", Op: op, Class: device.ClassInternal,
				Detail: fmt.Sprintf("inner call failed: %v", v)}
			status = fail(st, err, e)
		}
	}()
	st = cgo.Handle(self).Value().(*state)
	st.inner.RLock()
	defer st.inner.RUnlock()
	v := st.broken(t, op)
	if v == nil && rule != nil {
		v = rule(st)
	}
	if v != nil {
		st.mu.Lock()
		if st.violation == nil {
			st.violation = v
		}
		st.mu.Unlock()
		if err != nil {
			writeError(err, toC(v))
		}
		return statusError
	}
	if e := f(st); e != nil {
		return fail(st, err, e)
	}
	return statusOK
}

// broken is the rule of the ABI an inner call named op for thread t breaks, or nil.
func (st *state) broken(t C.uint32_t, op string) error {
	field := op
	if op == "malloc" || op == "free" {
		field += "_" // the table's names
	}
	outer, query := st.current()
	switch {
	case outer == "":
		return &device.Error{Backend: BackendPrefix + st.plugin, Op: "between calls", Class: device.ClassInternal,
			Detail: fmt.Sprintf("%s: a thread of the runtime made a device call (the inner device's %s) while no call of replaycheck's into the runtime was in progress: a runtime makes inner calls inside the call they serve, from its thread or a thread the call waits for (runtime.h, Threads); the call was not made",
				st.path, field)}
	case query && outer == "RefusalRule":
		return &device.Error{Backend: BackendPrefix + st.plugin, Op: outer, Class: device.ClassInternal,
			Detail: fmt.Sprintf("%s: refusal_rule made a device call (the inner device's %s): it names a rule from the runtime's own state, makes no inner call and never changes anything (runtime.h: rc_runtime.refusal_rule); the call was not made",
				st.path, field)}
	case query:
		return &device.Error{Backend: BackendPrefix + st.plugin, Op: outer, Class: device.ClassInternal,
			Detail: fmt.Sprintf("%s: %s made a device call (the inner device's %s): holds and slots_changed answer from the runtime's own state, make no inner call and never change anything (runtime.h: rc_runtime.holds, slots_changed); the call was not made",
				st.path, entryOf(outer), field)}
	case t != noThreadArg && t != C.uint32_t(device.Main) && t != C.uint32_t(device.Other):
		return &device.Error{Backend: BackendPrefix + st.plugin, Op: outer, Class: device.ClassInternal,
			Detail: fmt.Sprintf("%s: %s passed thread %d to the inner device's %s, which is neither RC_THREAD_MAIN (0) nor RC_THREAD_OTHER (1): a runtime passes the inner device the t of the call it forwards (runtime.h, Threads); the call was not made",
				st.path, entryOf(outer), uint32(t), field)}
	}
	return nil
}

// takeViolation returns the rule of the ABI broken since it was last asked, if any, and forgets it.
func (st *state) takeViolation() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	v := st.violation
	st.violation = nil
	return v
}

// fail writes e into err and remembers it for the outer call's pass-through.
func fail(st *state, err *C.rc_error, e error) C.int32_t {
	c := toC(e)
	if err != nil {
		writeError(err, c)
	}
	if st != nil {
		st.mu.Lock()
		st.failures = append(st.failures, innerFailure{c: c, err: e})
		st.mu.Unlock()
	}
	return statusError
}

func writeError(dst *C.rc_error, c cError) {
	C.memset(unsafe.Pointer(dst), 0, C.sizeof_rc_error)
	dst.code = C.int32_t(c.code)
	dst.invalidated = C.uint32_t(c.invalidated)
	putString(unsafe.Pointer(&dst.name[0]), c.name, nameSize)
	putString(unsafe.Pointer(&dst.class_name[0]), c.class, classSize)
	putString(unsafe.Pointer(&dst.message[0]), c.message, messageSize)
}

// putString writes s (already fitted) and its NUL into a C char array of size bytes.
func putString(dst unsafe.Pointer, s string, size int) {
	b := unsafe.Slice((*byte)(dst), size)
	n := copy(b[:size-1], s)
	b[n] = 0
}

// readError reads an rc_error the plugin filled. A field without its NUL is read to its end.
func readError(src *C.rc_error) cError {
	return cError{
		code:        int32(src.code),
		invalidated: uint32(src.invalidated),
		name:        getString(unsafe.Pointer(&src.name[0]), nameSize),
		class:       getString(unsafe.Pointer(&src.class_name[0]), classSize),
		message:     getString(unsafe.Pointer(&src.message[0]), messageSize),
	}
}

func getString(src unsafe.Pointer, size int) string {
	b := unsafe.Slice((*byte)(src), size)
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func goPtr(p C.rc_ptr) device.Ptr { return device.Ptr{Addr: uint64(p.addr), Bytes: int64(p.bytes)} }
func cPtr(p device.Ptr) C.rc_ptr {
	return C.rc_ptr{addr: C.uint64_t(p.Addr), bytes: C.int64_t(p.Bytes)}
}

// cBytes is the plugin's buffer of p.Bytes bytes at src, as a Go slice over C memory.
func cBytes(src unsafe.Pointer, p device.Ptr) ([]byte, error) {
	switch {
	case p.Bytes < 0:
		return nil, &device.Error{Backend: "replaycheck", Class: device.ClassInvalidValue, Detail: fmt.Sprintf("negative length in %v", p)}
	case p.Bytes == 0:
		return []byte{}, nil
	case src == nil:
		return nil, &device.Error{Backend: "replaycheck", Class: device.ClassInvalidValue, Detail: fmt.Sprintf("NULL buffer for %v", p)}
	}
	return unsafe.Slice((*byte)(src), p.Bytes), nil
}

func setPtr(out *C.rc_ptr, p device.Ptr) {
	if out != nil {
		*out = cPtr(p)
	}
}

func th(t C.uint32_t) device.Thread { return device.Thread(t) }

//export rcpInnerMalloc
func rcpInnerMalloc(self C.uintptr_t, t C.uint32_t, bytes C.int64_t, out *C.rc_ptr, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "malloc", func(d device.Device) error {
		p, e := d.Malloc(th(t), int64(bytes))
		if e == nil {
			setPtr(out, p)
		}
		return e
	})
}

//export rcpInnerFree
func rcpInnerFree(self C.uintptr_t, t C.uint32_t, p C.rc_ptr, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "free", func(d device.Device) error { return d.Free(th(t), goPtr(p)) })
}

//export rcpInnerWrite
func rcpInnerWrite(self C.uintptr_t, t C.uint32_t, dst C.rc_ptr, src unsafe.Pointer, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "write", func(d device.Device) error {
		b, e := cBytes(src, goPtr(dst))
		if e != nil {
			return e
		}
		return d.Write(th(t), goPtr(dst), append([]byte(nil), b...))
	})
}

//export rcpInnerRead
func rcpInnerRead(self C.uintptr_t, t C.uint32_t, dst unsafe.Pointer, src C.rc_ptr, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "read", func(d device.Device) error {
		b, e := cBytes(dst, goPtr(src))
		if e != nil {
			return e
		}
		return d.Read(th(t), b, goPtr(src)) // into the plugin's buffer: no copy of a copy
	})
}

//export rcpInnerAllocHost
func rcpInnerAllocHost(self C.uintptr_t, t C.uint32_t, bytes C.int64_t, kind C.uint32_t, out *C.rc_ptr, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "alloc_host", func(d device.Device) error {
		p, e := d.AllocHost(th(t), int64(bytes), device.HostMemory(kind))
		if e == nil {
			setPtr(out, p)
		}
		return e
	})
}

//export rcpInnerFreeHost
func rcpInnerFreeHost(self C.uintptr_t, t C.uint32_t, p C.rc_ptr, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "free_host", func(d device.Device) error { return d.FreeHost(th(t), goPtr(p)) })
}

//export rcpInnerHostWrite
func rcpInnerHostWrite(self C.uintptr_t, dst C.rc_ptr, src unsafe.Pointer, err *C.rc_error) C.int32_t {
	return inner(self, noThreadArg, err, "host_write", func(d device.Device) error {
		b, e := cBytes(src, goPtr(dst))
		if e != nil {
			return e
		}
		return d.HostWrite(goPtr(dst), append([]byte(nil), b...))
	})
}

//export rcpInnerHostRead
func rcpInnerHostRead(self C.uintptr_t, dst unsafe.Pointer, src C.rc_ptr, err *C.rc_error) C.int32_t {
	return inner(self, noThreadArg, err, "host_read", func(d device.Device) error {
		b, e := cBytes(dst, goPtr(src))
		if e != nil {
			return e
		}
		return d.HostRead(b, goPtr(src))
	})
}

//export rcpInnerCreateStream
func rcpInnerCreateStream(self C.uintptr_t, t C.uint32_t, out *C.uint64_t, err *C.rc_error) C.int32_t {
	return innerOf(self, t, err, "create_stream", nil, func(st *state) error {
		return st.createStream(t, device.Blocking, out)
	})
}

//export rcpInnerCreateStreamWithFlags
func rcpInnerCreateStreamWithFlags(self C.uintptr_t, t C.uint32_t, flags C.uint32_t, out *C.uint64_t, err *C.rc_error) C.int32_t {
	f := device.StreamFlags(flags)
	known := func(st *state) error {
		if f == device.Blocking || f == device.NonBlocking {
			return nil
		}
		outer, _ := st.current()
		return &device.Error{Backend: BackendPrefix + st.plugin, Op: outer, Class: device.ClassInternal,
			Detail: fmt.Sprintf("%s: %s passed stream flags %#x to the inner device's create_stream_with_flags, which are neither RC_STREAM_BLOCKING (0) nor RC_STREAM_NON_BLOCKING (1) (runtime.h: rc_stream_flags); the call was not made",
				st.path, entryOf(outer), uint32(flags))}
	}
	return innerOf(self, t, err, "create_stream_with_flags", known, func(st *state) error { return st.createStream(t, f, out) })
}

// createStream makes an inner stream with flags for thread t, answers it in out, and keeps its
// flags.
func (st *state) createStream(t C.uint32_t, f device.StreamFlags, out *C.uint64_t) error {
	s, e := st.dev.CreateStream(th(t), f)
	if e != nil {
		return e
	}
	if out != nil {
		*out = C.uint64_t(s)
	}
	st.note(handleStream, uint64(s), f)
	return nil
}

//export rcpInnerDestroyStream
func rcpInnerDestroyStream(self C.uintptr_t, t C.uint32_t, s C.uint64_t, err *C.rc_error) C.int32_t {
	return innerOf(self, t, err, "destroy_stream", nil, func(st *state) error {
		return st.forget(st.dev.DestroyStream(th(t), device.Stream(s)), handleStream, uint64(s))
	})
}

//export rcpInnerCreateEvent
func rcpInnerCreateEvent(self C.uintptr_t, t C.uint32_t, out *C.uint64_t, err *C.rc_error) C.int32_t {
	return innerOf(self, t, err, "create_event", nil, func(st *state) error {
		ev, e := st.dev.CreateEvent(th(t))
		if e != nil {
			return e
		}
		if out != nil {
			*out = C.uint64_t(ev)
		}
		st.note(handleEvent, uint64(ev), 0)
		return nil
	})
}

//export rcpInnerDestroyEvent
func rcpInnerDestroyEvent(self C.uintptr_t, t C.uint32_t, ev C.uint64_t, err *C.rc_error) C.int32_t {
	return innerOf(self, t, err, "destroy_event", nil, func(st *state) error {
		return st.forget(st.dev.DestroyEvent(th(t), device.Event(ev)), handleEvent, uint64(ev))
	})
}

//export rcpInnerFill
func rcpInnerFill(self C.uintptr_t, t C.uint32_t, s C.uint64_t, dst C.rc_ptr, value C.uint8_t, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "fill", func(d device.Device) error {
		return d.Fill(th(t), device.Stream(s), goPtr(dst), byte(value))
	})
}

//export rcpInnerCopy
func rcpInnerCopy(self C.uintptr_t, t C.uint32_t, s C.uint64_t, dst, src C.rc_ptr, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "copy", func(d device.Device) error {
		return d.Copy(th(t), device.Stream(s), goPtr(dst), goPtr(src))
	})
}

//export rcpInnerAxpy
func rcpInnerAxpy(self C.uintptr_t, t C.uint32_t, s C.uint64_t, y, x C.rc_ptr, a C.uint32_t, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "axpy", func(d device.Device) error {
		return d.Axpy(th(t), device.Stream(s), goPtr(y), goPtr(x), uint32(a))
	})
}

//export rcpInnerRecord
func rcpInnerRecord(self C.uintptr_t, t C.uint32_t, ev, s C.uint64_t, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "record", func(d device.Device) error {
		return d.Record(th(t), device.Event(ev), device.Stream(s))
	})
}

//export rcpInnerWait
func rcpInnerWait(self C.uintptr_t, t C.uint32_t, s, ev C.uint64_t, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "wait", func(d device.Device) error {
		return d.Wait(th(t), device.Stream(s), device.Event(ev))
	})
}

//export rcpInnerSyncStream
func rcpInnerSyncStream(self C.uintptr_t, t C.uint32_t, s C.uint64_t, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "sync_stream", func(d device.Device) error { return d.SyncStream(th(t), device.Stream(s)) })
}

//export rcpInnerSyncDevice
func rcpInnerSyncDevice(self C.uintptr_t, t C.uint32_t, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "sync_device", func(d device.Device) error { return d.SyncDevice(th(t)) })
}

//export rcpInnerQueryEvent
func rcpInnerQueryEvent(self C.uintptr_t, t C.uint32_t, ev C.uint64_t, complete *C.uint32_t, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "query_event", func(d device.Device) error {
		done, e := d.QueryEvent(th(t), device.Event(ev))
		if e == nil && complete != nil {
			*complete = 0
			if done {
				*complete = 1
			}
		}
		return e
	})
}

//export rcpInnerSyncEvent
func rcpInnerSyncEvent(self C.uintptr_t, t C.uint32_t, ev C.uint64_t, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "sync_event", func(d device.Device) error { return d.SyncEvent(th(t), device.Event(ev)) })
}

//export rcpInnerExchangeCaptureMode
func rcpInnerExchangeCaptureMode(self C.uintptr_t, t C.uint32_t, mode C.uint32_t, old *C.uint32_t, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "exchange_capture_mode", func(d device.Device) error {
		m, e := d.ExchangeCaptureMode(th(t), device.CaptureMode(mode))
		if e == nil && old != nil {
			*old = C.uint32_t(m)
		}
		return e
	})
}

//export rcpInnerBeginCapture
func rcpInnerBeginCapture(self C.uintptr_t, t C.uint32_t, s C.uint64_t, mode C.uint32_t, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "begin_capture", func(d device.Device) error {
		return d.BeginCapture(th(t), device.Stream(s), device.CaptureMode(mode))
	})
}

//export rcpInnerEndCapture
func rcpInnerEndCapture(self C.uintptr_t, t C.uint32_t, s C.uint64_t, out *C.uint64_t, err *C.rc_error) C.int32_t {
	return innerOf(self, t, err, "end_capture", nil, func(st *state) error {
		g, e := st.dev.EndCapture(th(t), device.Stream(s))
		if out != nil {
			// A failed end may still name a graph on some platforms; the graph is what the device said.
			*out = C.uint64_t(g)
		}
		if e == nil {
			st.note(handleGraph, uint64(g), 0)
		}
		return e
	})
}

//export rcpInnerCaptureInfo
func rcpInnerCaptureInfo(self C.uintptr_t, t C.uint32_t, s C.uint64_t, out *C.rc_capture_info, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "capture_info", func(d device.Device) error {
		info, e := d.CaptureInfo(th(t), device.Stream(s))
		if e == nil && out != nil {
			*out = C.rc_capture_info{status: C.uint32_t(info.Status), mode: C.uint32_t(info.Mode), id: C.uint64_t(info.ID), origin: C.rc_stream(info.Origin)}
		}
		return e
	})
}

//export rcpInnerLaunch
func rcpInnerLaunch(self C.uintptr_t, t C.uint32_t, g, s C.uint64_t, err *C.rc_error) C.int32_t {
	return inner(self, t, err, "launch", func(d device.Device) error {
		return d.Launch(th(t), device.Graph(g), device.Stream(s))
	})
}

//export rcpInnerDestroyGraph
func rcpInnerDestroyGraph(self C.uintptr_t, t C.uint32_t, g C.uint64_t, err *C.rc_error) C.int32_t {
	return innerOf(self, t, err, "destroy_graph", nil, func(st *state) error {
		return st.forget(st.dev.DestroyGraph(th(t), device.Graph(g)), handleGraph, uint64(g))
	})
}
