package capture

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// Options tune one run.
type Options struct {
	// Timeout bounds one instance (default one minute). Device calls are not interrupted: the
	// engine stops between calls and the instance ends in error.
	Timeout time.Duration
	// Guard configures the guard decorator every instance runs behind. Its Disabled switches are
	// for negative-control tests only.
	Guard guard.Options
}

// errFatal marks a failure that ends the instance in error (setup, a broken invariant, a timeout).
type errFatal struct{ err error }

func (e errFatal) Error() string { return e.err.Error() }

// allocation is a live buffer the engine holds for a probe buffer name.
type allocation struct {
	ptr   runtime.Ptr
	gen   uint64 // the engine's allocation generation: a free and re-allocation is a new one
	init  probes.Pattern
	slot  guard.Slot
	place probes.Place
	host  bool // host memory: the CPU reads and writes it, no driver call
}

type run struct {
	ctx    context.Context
	dev    runtime.Device // the guard decorator over the backend's device
	guard  *guard.Device
	in     probes.Instance
	p      *probes.Probe
	res    *Result
	oracle *probes.Oracle

	streams map[string]runtime.Stream
	events  map[string]runtime.Event
	bufs    map[string]*allocation
	gen     uint64
	graphs  map[string]runtime.Graph
	// setup is the engine's own stream, never part of a capture, used to initialise buffers
	// allocated while a capture is active without making a synchronous (unsafe) call.
	setup runtime.Stream

	capture   string // name of the capture in progress, "" when none
	captureID uint64
	phase     string
	round     int
	ledgerSet map[string]int // capture/buffer/generation -> index in the ledger
	staleSeen map[string]bool
	// threadModes are the capture interaction modes the probe's exchange-mode ops replaced, by
	// thread: teardown gives each thread its mode back.
	threadModes map[runtime.Thread]runtime.CaptureMode
}

// Run executes one probe instance end to end on dev and classifies it: prepare, each capture, between,
// then Replays rounds of replay, comparing every checked buffer byte for byte with the oracle after
// every round. Run never panics and never returns nil; every failure is in the Result.
func Run(ctx context.Context, dev runtime.Device, in probes.Instance, opt Options) (res *Result) {
	p := in.Probe
	res = &Result{
		ID: in.ID(), Probe: p.ID(), Set: p.Set, Hazard: p.Hazard, Labels: p.Labels,
		Mode: in.Mode, Guarded: in.Guarded, Replays: in.Replays,
		Backend: dev.Backend(), Device: dev.Describe(),
		Expected: in.Expected(), RejectedBy: p.Expect.RejectedBy,
	}
	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()

	caps := dev.Capabilities()
	for _, need := range p.Requires {
		if !caps.Has(need) {
			res.Outcome, res.Reason = probes.Skipped, fmt.Sprintf("backend %s lacks capability %q", dev.Backend(), need)
			return res
		}
	}
	if opt.Timeout <= 0 {
		opt.Timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	mode := guard.Program
	if in.Guarded {
		mode = guard.Kernel
	}
	gd, err := guard.NewWithOptions(dev, mode, opt.Guard)
	if err != nil {
		res.Outcome, res.Reason = probes.Errored, err.Error()
		return res
	}
	r := &run{
		ctx: ctx, dev: gd, guard: gd, in: in, p: p, res: res, oracle: probes.NewOracle(p),
		streams: map[string]runtime.Stream{}, events: map[string]runtime.Event{},
		bufs: map[string]*allocation{}, graphs: map[string]runtime.Graph{}, ledgerSet: map[string]int{},
		staleSeen: map[string]bool{}, threadModes: map[runtime.Thread]runtime.CaptureMode{},
	}
	base := dev.Counters()
	err = r.safely(r.body)
	if terr := r.safely(r.teardown); err == nil {
		err = terr
	}
	if err == nil {
		res.Leaks = dev.Counters().Leaks(base)
		if len(res.Leaks) > 0 {
			err = fmt.Errorf("leaked after teardown: %s", strings.Join(res.Leaks, "; "))
		}
	}
	r.classify(err)
	return res
}

// safely runs f, turning a panic into an error so one broken probe cannot take the suite down.
func (r *run) safely(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return f()
}

func (r *run) body() error {
	if err := r.setupObjects(); err != nil {
		return err
	}
	r.phase = "prepare"
	if err := r.eager(probes.PhasePrepare, r.p.Prepare); err != nil {
		return err
	}
	for _, c := range r.p.Captures {
		if err := r.runCapture(c); err != nil {
			return err
		}
	}
	r.phase = "between"
	if err := r.eager(probes.PhaseBetween, r.p.Between); err != nil {
		return err
	}
	return r.replays()
}

// eager issues an eager phase's ops and waits for the device: an eager phase is complete before
// the next begins, whatever streams its work went to (on real hardware nothing else orders work on
// a side stream before a capture or a launch on another).
func (r *run) eager(phase probes.Phase, ops []*probes.Op) error {
	if len(ops) == 0 {
		return nil
	}
	if err := r.ops(phase, "", ops); err != nil {
		return err
	}
	return r.must(fmt.Sprintf("SyncDevice (end of %s)", phase), func() error { return r.dev.SyncDevice(runtime.Main) })
}

func (r *run) setupObjects() error {
	r.phase = "setup"
	for _, name := range r.p.Streams {
		var s runtime.Stream
		if err := r.must("CreateStream "+name, func() (err error) { s, err = r.dev.CreateStream(runtime.Main); return }); err != nil {
			return err
		}
		r.streams[name] = s
	}
	// The default stream is the platform's: never created, never destroyed.
	r.streams[probes.DefaultStream] = runtime.DefaultStream
	if err := r.must("CreateStream (engine setup stream)", func() (err error) { r.setup, err = r.dev.CreateStream(runtime.Main); return }); err != nil {
		return err
	}
	for _, pl := range r.p.Pools {
		call := fmt.Sprintf("ReservePool(%s, %d", pl.Name, pl.Bytes)
		if pl.Host != 0 {
			call += ", " + pl.Host.String() + " host"
		}
		if err := r.must(call+")", func() error { return r.guard.ReservePool(runtime.Main, pl.Name, pl.Bytes, pl.Host) }); err != nil {
			return err
		}
	}
	for _, name := range r.p.Events {
		var e runtime.Event
		if err := r.must("CreateEvent "+name, func() (err error) { e, err = r.dev.CreateEvent(runtime.Main); return }); err != nil {
			return err
		}
		r.events[name] = e
	}
	for _, b := range r.p.Buffers {
		// A declared buffer is setup, not one of the probe's ops: a failure ends the instance in
		// error, never as a platform rejection of a step.
		if _, err := r.allocate("", runtime.Main, b.Name, b.Bytes, b.Init, b.Slot, b.Place); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) lastErr() string {
	if n := len(r.res.Timeline); n > 0 {
		return r.res.Timeline[n-1].Err
	}
	return "unknown error"
}

// must makes an engine call outside the probe's ops: any error ends the instance in error.
func (r *run) must(call string, f func() error) error {
	if err := r.ctx.Err(); err != nil {
		return errFatal{fmt.Errorf("%s: %w", call, err)}
	}
	ev := r.record("", call, runtime.Main, f())
	if ev.Err != "" {
		return errFatal{fmt.Errorf("%s: %s", call, ev.Err)}
	}
	return nil
}

// record appends a timeline event for a device call that returned err.
func (r *run) record(step, call string, t runtime.Thread, err error) *Event {
	ev := Event{Seq: len(r.res.Timeline) + 1, Phase: r.phase, Step: step, Call: call, Thread: t, Round: r.round}
	if err != nil {
		ev.Err = err.Error()
		ev.Class = runtime.ClassOf(err)
		if e, ok := runtime.AsError(err); ok {
			ev.Code = e.Code
		}
	}
	r.res.Timeline = append(r.res.Timeline, ev)
	return &r.res.Timeline[len(r.res.Timeline)-1]
}

// outcomeOf records the effect of a probe call's error: nil took effect; a guard refusal or a
// platform rejection did not (the first of each is kept); anything that is not a device error is
// fatal.
func (r *run) outcomeOf(step, call string, err error) (bool, error) {
	if err == nil {
		return true, nil
	}
	e, ok := runtime.AsError(err)
	if !ok {
		return false, errFatal{fmt.Errorf("%s: %s: %w", step, call, err)}
	}
	if e.Backend == guard.Backend && e.Class != runtime.ClassRefused {
		// The guard said the engine used its API wrongly: a harness bug, not a platform answer.
		return false, errFatal{fmt.Errorf("%s: %s: %w", step, call, err)}
	}
	if e.Class == runtime.ClassRefused {
		if r.res.Refusal == nil {
			r.res.Refusal = &Refusal{Step: step, Op: e.Op, Detail: e.Detail}
		}
		return false, nil
	}
	if r.res.Rejection == nil {
		r.res.Rejection = &Rejection{Step: step, Op: e.Op, Code: e.Code, Name: e.Name, Class: e.Class, DuringCapture: r.capture != "", Invalidated: e.Invalidated}
	}
	return false, nil
}

// call issues one device call for a probe step and records it.
func (r *run) call(step, call string, t runtime.Thread, f func() error) (bool, error) {
	if err := r.ctx.Err(); err != nil {
		return false, errFatal{fmt.Errorf("%s: %w", step, err)}
	}
	var before *snapshot
	if r.in.Guarded {
		before = r.snap()
	}
	err := f()
	r.record(step, call, t, err)
	if before == nil || !runtime.IsRefusal(err) {
		return r.outcomeOf(step, call, err)
	}
	first := r.res.Refusal == nil
	checks, cerr := r.checkRefusal(step, before)
	took, oerr := r.outcomeOf(step, call, err)
	if first {
		r.res.Refusal.Checked = checks
	}
	if cerr != nil {
		return false, cerr
	}
	return took, oerr
}

func (r *run) ops(phase probes.Phase, capture string, ops []*probes.Op) error {
	for i, op := range ops {
		step := probes.Step{Phase: phase, Capture: capture, Index: i}.String()
		if why := r.skipReason(op); why != "" {
			// Neither the device nor the oracle sees the op: an earlier op that the platform
			// rejected or a guard refused left nothing for it to act on as written.
			ev := r.record(step, string(op.Kind)+" (skipped: "+why+")", op.Thread, nil)
			ev.Skipped = true
			r.res.Skipped = append(r.res.Skipped, step)
			continue
		}
		took, err := r.issue(step, op)
		if err != nil {
			return err
		}
		if capture != "" {
			r.oracle.Capture(capture, op, took)
		} else {
			r.oracle.Eager(op, took)
		}
	}
	return nil
}

// skipReason says why an op cannot be issued as written, "" when it can. Each case follows from an
// earlier op that did not take effect: an allocation that failed, a free that was refused (the name
// is still allocated), a grow that was refused (a range sized for the grown buffer no longer fits).
func (r *run) skipReason(op *probes.Op) string {
	switch {
	case r.oracle.Skips(op):
		return "names a buffer whose allocation failed"
	case op.Kind == probes.OpAlloc && r.bufs[op.Buffer] != nil:
		return fmt.Sprintf("buffer %q is still allocated: its free did not take effect", op.Buffer)
	}
	switch op.Kind {
	case probes.OpFill, probes.OpCopy, probes.OpAxpy:
		if _, err := op.Resolve(r.sizeOf); err != nil {
			return fmt.Sprintf("%v, which the probe's ranges assumed grown: a grow did not take effect", err)
		}
	}
	return ""
}

func (r *run) buf(step, name string) (*allocation, error) {
	a := r.bufs[name]
	if a == nil {
		return nil, errFatal{fmt.Errorf("%s: buffer %q is not allocated on the device", step, name)}
	}
	return a, nil
}

func (r *run) sizeOf(name string) int64 {
	if a := r.bufs[name]; a != nil {
		return a.ptr.Bytes
	}
	return 0
}

// issue performs one probe op on the device.
func (r *run) issue(step string, op *probes.Op) (bool, error) {
	t := op.Thread
	s := r.streams[op.Stream]
	on := fmt.Sprintf(" on %s", op.Stream)
	switch op.Kind {
	case probes.OpFill, probes.OpCopy, probes.OpAxpy:
		acc, err := op.Resolve(r.sizeOf)
		if err != nil {
			return false, errFatal{fmt.Errorf("%s: %w", step, err)}
		}
		span := func(sp probes.Span) (runtime.Ptr, error) {
			a, err := r.buf(step, sp.Buffer)
			if err != nil {
				return runtime.Ptr{}, err
			}
			return a.ptr.Slice(sp.Off, sp.Len), nil
		}
		var f func() error
		var desc string
		w, err := span(acc.Writes[0])
		if err != nil {
			return false, err
		}
		switch op.Kind {
		case probes.OpFill:
			desc = fmt.Sprintf("Fill(%s %v, %#02x)", op.Dst, w, op.Value)
			f = func() error { return r.dev.Fill(t, s, w, op.Value) }
		case probes.OpCopy:
			src, err := span(acc.Reads[0])
			if err != nil {
				return false, err
			}
			desc = fmt.Sprintf("Copy(%s %v <- %s %v)", op.Dst, w, op.Src, src)
			f = func() error { return r.dev.Copy(t, s, w, src) }
		case probes.OpAxpy:
			x, err := span(acc.Reads[0])
			if err != nil {
				return false, err
			}
			desc = fmt.Sprintf("Axpy(%s %v += %d * %s %v)", op.Y, w, op.A, op.X, x)
			f = func() error { return r.dev.Axpy(t, s, w, x, op.A) }
		}
		took, err := r.call(step, desc+on, t, f)
		if took && err == nil {
			r.noteCaptured(op, acc)
		}
		return took, err
	case probes.OpWrite:
		a, err := r.buf(step, op.Dst)
		if err != nil {
			return false, err
		}
		data := op.Pattern.Bytes(a.ptr.Bytes)
		if a.host {
			return r.call(step, fmt.Sprintf("HostWrite(%s %v, %s)", op.Dst, a.ptr, op.Pattern), t,
				func() error { return r.dev.HostWrite(a.ptr, data) })
		}
		return r.call(step, fmt.Sprintf("Write(%s %v, %s)", op.Dst, a.ptr, op.Pattern), t,
			func() error { return r.dev.Write(t, a.ptr, data) })
	case probes.OpRead:
		a, err := r.buf(step, op.Src)
		if err != nil {
			return false, err
		}
		data := make([]byte, a.ptr.Bytes)
		if a.host {
			return r.call(step, fmt.Sprintf("HostRead(%s %v)", op.Src, a.ptr), t,
				func() error { return r.dev.HostRead(data, a.ptr) })
		}
		return r.call(step, fmt.Sprintf("Read(%s %v)", op.Src, a.ptr), t,
			func() error { return r.dev.Read(t, data, a.ptr) })
	case probes.OpRecord:
		e := r.events[op.Event]
		took, err := r.call(step, fmt.Sprintf("Record(%s)%s", op.Event, on), t, func() error { return r.dev.Record(t, e, s) })
		if took && err == nil {
			r.noteCaptured(op, probes.Access{})
		}
		return took, err
	case probes.OpWait:
		e := r.events[op.Event]
		took, err := r.call(step, fmt.Sprintf("Wait(%s)%s", op.Event, on), t, func() error { return r.dev.Wait(t, s, e) })
		if took && err == nil {
			r.noteCaptured(op, probes.Access{})
		}
		return took, err
	case probes.OpSync:
		return r.call(step, "SyncStream("+op.Stream+")", t, func() error { return r.dev.SyncStream(t, s) })
	case probes.OpSyncDevice:
		return r.call(step, "SyncDevice()", t, func() error { return r.dev.SyncDevice(t) })
	case probes.OpQuery:
		e := r.events[op.Event]
		var done bool
		took, err := r.call(step, "QueryEvent("+op.Event+")", t, func() (err error) { done, err = r.dev.QueryEvent(t, e); return })
		if took {
			r.res.Timeline[len(r.res.Timeline)-1].Call += fmt.Sprintf(" = complete:%v", done)
		}
		return took, err
	case probes.OpSyncEvent:
		e := r.events[op.Event]
		return r.call(step, "SyncEvent("+op.Event+")", t, func() error { return r.dev.SyncEvent(t, e) })
	case probes.OpAlloc:
		return r.allocate(step, t, op.Buffer, *op.Bytes, op.Pattern, op.Slot, op.Place)
	case probes.OpFree:
		a, err := r.buf(step, op.Buffer)
		if err != nil {
			return false, err
		}
		call, f := r.release(t, op.Buffer, a)
		took, err := r.call(step, call, t, f)
		if took {
			delete(r.bufs, op.Buffer)
		}
		return took, err
	case probes.OpGrow:
		return r.grow(step, t, op)
	case probes.OpExchangeMode:
		var old runtime.CaptureMode
		took, err := r.call(step, fmt.Sprintf("ExchangeCaptureMode(%s)", op.Mode), t, func() (err error) {
			old, err = r.dev.ExchangeCaptureMode(t, op.Mode)
			return
		})
		if took {
			if _, ok := r.threadModes[t]; !ok {
				r.threadModes[t] = old
			}
			r.res.Timeline[len(r.res.Timeline)-1].Call += " = " + old.String()
		}
		return took, err
	}
	return false, errFatal{fmt.Errorf("%s: op %q is not implemented by the engine", step, op.Kind)}
}

// allocate provisions a buffer where its place says (its slot, its pool, or host memory) and
// writes its init pattern. step is "" for a declared buffer: setup, whose failure is fatal.
func (r *run) allocate(step string, t runtime.Thread, name string, n int64, init probes.Pattern, slot probes.Slot, place probes.Place) (bool, error) {
	gs, err := guard.ParseSlot(string(slot))
	if err != nil {
		return false, errFatal{fmt.Errorf("%s: %w", step, err)}
	}
	var ptr runtime.Ptr
	var call string
	var f func() error
	switch {
	case place.Pool != "":
		call = fmt.Sprintf("PoolAlloc(%s %s, %d)", place.Pool, name, n)
		f = func() (err error) { ptr, err = r.guard.PoolAlloc(t, place.Pool, n); return }
	case place.Host != 0:
		call = fmt.Sprintf("AllocHost(%s %s, %d)", place.Host, name, n)
		f = func() (err error) { ptr, err = r.dev.AllocHost(t, n, place.Host); return }
	default:
		call = fmt.Sprintf("Provision(%s %s, %d)", slot, name, n)
		f = func() (err error) { ptr, _, err = r.guard.Provision(t, gs, name, runtime.Ptr{}, n); return }
	}
	if step == "" {
		if err := r.must(call, f); err != nil {
			return false, err
		}
	} else if took, err := r.call(step, call, t, f); !took || err != nil {
		return took, err
	}
	r.gen++
	r.bufs[name] = &allocation{ptr: ptr, gen: r.gen, init: init, slot: gs, place: place, host: r.isHost(place)}
	r.res.Timeline[len(r.res.Timeline)-1].Call += " = " + ptr.String()
	return true, r.initialise(name, init)
}

// isHost reports whether a place is host memory: a host buffer, or a block of a host pool.
func (r *run) isHost(place probes.Place) bool {
	if place.Pool != "" {
		pl := r.p.Pool(place.Pool)
		return pl != nil && pl.Host != 0
	}
	return place.Host != 0
}

// release returns the call that frees a buffer where its place says, and its description.
func (r *run) release(t runtime.Thread, name string, a *allocation) (string, func() error) {
	switch {
	case a.place.Pool != "":
		return fmt.Sprintf("PoolFree(%s %s %v)", a.place.Pool, name, a.ptr), func() error { return r.guard.PoolFree(t, a.place.Pool, a.ptr) }
	case a.place.Host != 0:
		return fmt.Sprintf("FreeHost(%s %s %v)", a.place.Host, name, a.ptr), func() error { return r.dev.FreeHost(t, a.ptr) }
	}
	return fmt.Sprintf("Release(%s %s %v)", a.slot, name, a.ptr), func() error { return r.guard.Release(t, a.slot, name, a.ptr) }
}

func (r *run) initialise(name string, init probes.Pattern) error {
	a := r.bufs[name]
	if a.host {
		// The CPU writes host memory: no driver call, no capture rule.
		data := init.Bytes(a.ptr.Bytes)
		return r.must(fmt.Sprintf("HostWrite(%s %v, %s) (init)", name, a.ptr, init), func() error { return r.dev.HostWrite(a.ptr, data) })
	}
	if r.capture == "" {
		data := init.Bytes(a.ptr.Bytes)
		return r.must(fmt.Sprintf("Write(%s %v, %s) (init)", name, a.ptr, init), func() error { return r.dev.Write(runtime.Main, a.ptr, data) })
	}
	var value byte
	switch init.Kind {
	case probes.PatZero, "":
	case probes.PatFill:
		value = init.Byte
	default:
		return errFatal{fmt.Errorf("buffer %q is allocated inside a capture with init %s: only zero and fill:B can be initialised there without a synchronous copy", name, init)}
	}
	return r.must(fmt.Sprintf("Fill(%s %v, %#02x) (init, engine stream)", name, a.ptr, value), func() error {
		return r.dev.Fill(runtime.Main, r.setup, a.ptr, value)
	})
}

// grow sends a growth request through the buffer's slot: served in place when it fits; otherwise
// re-provisioned by free then malloc at the new size and the buffer's init again (a re-base: the
// address may change), unless a kernel-mode guard refuses it first. A pooled or host buffer has no
// slot: it is served in place when it fits, and re-based by a free and an allocation otherwise.
func (r *run) grow(step string, t runtime.Thread, op *probes.Op) (bool, error) {
	a, err := r.buf(step, op.Buffer)
	if err != nil {
		return false, err
	}
	if a.place != (probes.Place{}) {
		return r.regrow(step, t, op, a)
	}
	gs := a.slot
	var ptr runtime.Ptr
	var served guard.Served
	took, err := r.call(step, fmt.Sprintf("Provision(%s %s %v, %d) (grow)", a.slot, op.Buffer, a.ptr, *op.Bytes), t, func() (err error) {
		ptr, served, err = r.guard.Provision(t, gs, op.Buffer, a.ptr, *op.Bytes)
		return
	})
	if err != nil {
		return took, err
	}
	if !took {
		if held, _, ok := r.guard.Holds(op.Buffer); !ok || held != gs {
			// The old allocation is gone and the new one failed: the probe has lost a buffer the
			// oracle still holds, which no outcome but error describes honestly.
			return false, errFatal{fmt.Errorf("%s: grow of %q freed the old allocation and the new one failed: %s", step, op.Buffer, r.lastErr())}
		}
		return false, nil
	}
	ev := &r.res.Timeline[len(r.res.Timeline)-1]
	ev.Call += fmt.Sprintf(" = %v [%v]", ptr, served)
	if served == guard.InPlace {
		return true, nil
	}
	r.gen++
	r.bufs[op.Buffer] = &allocation{ptr: ptr, gen: r.gen, init: a.init, slot: a.slot, place: a.place, host: a.host}
	return true, r.initialise(op.Buffer, a.init)
}

// regrow grows a pooled or host buffer: in place when the request fits, else free, then allocate at
// the new size and initialise again.
func (r *run) regrow(step string, t runtime.Thread, op *probes.Op, a *allocation) (bool, error) {
	n := *op.Bytes
	if n <= a.ptr.Bytes {
		r.record(step, fmt.Sprintf("grow(%s %v, %d) = in place [no call]", op.Buffer, a.ptr, n), t, nil)
		return true, nil
	}
	call, free := r.release(t, op.Buffer, a)
	if took, err := r.call(step, call+" (grow)", t, free); !took || err != nil {
		return took, err
	}
	delete(r.bufs, op.Buffer)
	took, err := r.allocate(step, t, op.Buffer, n, a.init, probes.SlotPlain, a.place)
	if err == nil && !took {
		return false, errFatal{fmt.Errorf("%s: grow of %q freed the old allocation and the new one failed: %s", step, op.Buffer, r.lastErr())}
	}
	return took, err
}

// eagerMark tags a timeline call that was enqueued during a capture on a stream outside it.
const eagerMark = "[eager:"

// noteCaptured marks the last timeline event as captured when its stream is part of the capture in
// progress, and enters the buffers it touches into the residency ledger.
func (r *run) noteCaptured(op *probes.Op, acc probes.Access) {
	if r.capture == "" {
		return
	}
	ev := &r.res.Timeline[len(r.res.Timeline)-1]
	info, err := r.dev.CaptureInfo(runtime.Main, r.streams[op.Stream])
	if err != nil || info.Status != runtime.CaptureActive || info.ID != r.captureID {
		ev.Call += " " + eagerMark + " stream " + op.Stream + " is not part of the capture]"
		return
	}
	ev.Captured = true
	note := func(spans []probes.Span, how string) {
		for _, sp := range spans {
			a := r.bufs[sp.Buffer]
			key := fmt.Sprintf("%s/%s/%d", r.capture, sp.Buffer, a.gen)
			if i, ok := r.ledgerSet[key]; ok {
				r.res.Ledger[i].Access = r.res.Ledger[i].Access.With(how)
				continue
			}
			r.ledgerSet[key] = len(r.res.Ledger)
			r.res.Ledger = append(r.res.Ledger, Residency{Capture: r.capture, Buffer: sp.Buffer, Range: a.ptr, Generation: a.gen, Access: Access(how)})
		}
	}
	note(acc.Writes, AccessWrite)
	note(acc.Reads, AccessRead)
}

func (r *run) runCapture(c *probes.Capture) error {
	r.phase = "capture"
	origin := r.streams[c.Stream]
	step := fmt.Sprintf("capture %s begin", c.Name)
	took, err := r.call(step, fmt.Sprintf("BeginCapture(%s, %s)", c.Stream, r.in.Mode), runtime.Main,
		func() error { return r.dev.BeginCapture(runtime.Main, origin, r.in.Mode) })
	if err != nil {
		return err
	}
	if !took {
		// Nothing is being captured: the ops would run eagerly and mean something else, so they are
		// not issued, and there is no graph to replay.
		for i := range c.Ops {
			s := probes.Step{Phase: probes.PhaseCapture, Capture: c.Name, Index: i}.String()
			ev := r.record(s, string(c.Ops[i].Kind)+" (skipped: the capture did not begin)", c.Ops[i].Thread, nil)
			ev.Skipped = true
			r.res.Skipped = append(r.res.Skipped, s)
		}
		r.oracle.EndCapture(c.Name, false)
		return nil
	}
	info, err := r.dev.CaptureInfo(runtime.Main, origin)
	if err != nil {
		return errFatal{fmt.Errorf("CaptureInfo after begin: %w", err)}
	}
	// The capture stays "in progress" for the engine until its end returns: until then the engine
	// makes no synchronous call of its own (an unsafe call during a capture); a buffer allocated
	// meanwhile is initialised on the engine's own stream.
	r.capture, r.captureID = c.Name, info.ID
	defer func() { r.capture = "" }()
	if err := r.ops(probes.PhaseCapture, c.Name, c.Ops); err != nil {
		r.capture = ""
		r.abandonCapture(c)
		return err
	}

	step = fmt.Sprintf("capture %s end", c.Name)
	var g runtime.Graph
	took, err = r.call(step, fmt.Sprintf("EndCapture(%s) from %s", c.EndStream, c.EndThread), c.EndThread,
		func() (err error) { g, err = r.dev.EndCapture(c.EndThread, r.streams[c.EndStream]); return })
	if err != nil {
		return err
	}
	if took {
		r.graphs[c.Name] = g
	} else {
		// No graph: nothing will replay these ranges, so they explain no difference.
		r.res.Ledger = slices.DeleteFunc(r.res.Ledger, func(l Residency) bool { return l.Capture == c.Name })
	}
	r.oracle.EndCapture(c.Name, took)
	r.capture = ""
	return r.abandonCapture(c)
}

// abandonCapture ends a capture the probe left active (its end failed or was never reached) so the
// streams are usable again; the graph, if any, is destroyed and never replayed.
func (r *run) abandonCapture(c *probes.Capture) error {
	origin := r.streams[c.Stream]
	info, err := r.dev.CaptureInfo(runtime.Main, origin)
	if err != nil || info.Status == runtime.CaptureNone {
		return nil
	}
	prev := r.phase
	r.phase = "cleanup"
	defer func() { r.phase = prev }()
	var g runtime.Graph
	g, err = r.dev.EndCapture(runtime.Main, origin)
	if err == nil {
		r.record("", fmt.Sprintf("EndCapture(%s) (cleanup: the probe left the capture active)", c.Stream), runtime.Main, nil)
		return r.must("DestroyGraph (cleanup)", func() error { return r.dev.DestroyGraph(runtime.Main, g) })
	}
	r.record("", fmt.Sprintf("EndCapture(%s) (cleanup)", c.Stream), runtime.Main, err)
	if info, ierr := r.dev.CaptureInfo(runtime.Main, origin); ierr == nil && info.Status != runtime.CaptureNone {
		return errFatal{fmt.Errorf("capture %s is still %s after cleanup: %v", c.Name, info.Status, err)}
	}
	return nil
}

func (r *run) replays() error {
	r.phase = "replay"
	for round := 1; round <= r.in.Replays; round++ {
		r.round = round
		r.phase = "each"
		if err := r.eager(probes.PhaseEach, r.p.Replay.Each); err != nil {
			return err
		}
		r.phase = "replay"
		for _, lc := range r.p.Replay.Order {
			g, ok := r.graphs[lc.Capture]
			if !ok {
				r.oracle.Launch(lc.Capture, false)
				continue
			}
			step := fmt.Sprintf("replay %d %s", round, lc.Capture)
			stream := r.streams[lc.Stream]
			took, err := r.call(step, fmt.Sprintf("Launch(graph %s) on %s", lc.Capture, lc.Stream), runtime.Main,
				func() error { return r.dev.Launch(runtime.Main, g, stream) })
			if err != nil {
				return err
			}
			// A launch the platform ran, or rejected after looking at it, touched what the graph
			// captured; one a guard refused touched nothing.
			if ev := r.res.Timeline[len(r.res.Timeline)-1]; took || ev.Class != runtime.ClassRefused {
				r.noteStale(lc.Capture, round, took)
			}
			r.oracle.Launch(lc.Capture, took)
		}
		if err := r.verify(round); err != nil {
			return err
		}
		r.res.Rounds = round
	}
	r.round = 0
	return nil
}

// verify compares every checked live buffer with the oracle after a round.
func (r *run) verify(round int) error {
	r.phase = "verify"
	if err := r.must("SyncDevice (verify)", func() error { return r.dev.SyncDevice(runtime.Main) }); err != nil {
		return err
	}
	// The timeline keeps one verify sync per round and not the reads: they add nothing a reader needs.
	names := r.p.Check
	if names == nil {
		names = r.oracle.Live()
	}
	differs := false
	for _, name := range names {
		want, live := r.oracle.Bytes(name)
		if !live {
			continue
		}
		a, err := r.buf("verify", name)
		if err != nil {
			return err
		}
		if a.ptr.Bytes != int64(len(want)) {
			return errFatal{fmt.Errorf("verify: buffer %q is %d bytes on the device and %d in the oracle", name, a.ptr.Bytes, len(want))}
		}
		got, err := r.contents(a)
		if err != nil {
			return errFatal{fmt.Errorf("verify: reading %s: %w", name, err)}
		}
		if bytes.Equal(got, want) {
			continue
		}
		differs = true
		if r.res.FirstCorrupted == 0 {
			r.res.Mismatches = append(r.res.Mismatches, diff(round, name, want, got, MaxMismatches-len(r.res.Mismatches))...)
		}
	}
	if differs {
		r.res.CorruptedRounds++
		if r.res.FirstCorrupted == 0 {
			r.res.FirstCorrupted = round
		}
	}
	return nil
}

// diff returns up to limit differing ranges of got against want. Differing runs separated by fewer
// than mergeGap equal bytes form one range: a pattern that differs in some bytes of every lane (iota32
// against zero) is one finding, not one per lane.
func diff(round int, name string, want, got []byte, limit int) []Mismatch {
	const mergeGap = 16
	var out []Mismatch
	for i := 0; i < len(want) && len(out) < limit; {
		if want[i] == got[i] {
			i++
			continue
		}
		end := i + 1 // one past the last differing byte of the range
		for j := end; j < len(want) && j < end+mergeGap; j++ {
			if want[j] != got[j] {
				end = j + 1
			}
		}
		show := min(end-i, MaxShownBytes)
		out = append(out, Mismatch{
			Round: round, Buffer: name, Offset: int64(i), Length: int64(end - i),
			Want: append([]byte(nil), want[i:i+show]...), Got: append([]byte(nil), got[i:i+show]...),
		})
		i = end
	}
	return out
}

// noteStale records, the first time a launch of capture's graph touches it, each range the graph
// captured that is no longer the allocation it captured: the buffer was freed, or freed and
// allocated again (a re-base, a pool block handed out again). That is a use of stale memory
// whether or not a checked byte differs yet; Result.Stale says which live buffers own the range
// now. ran is false when the platform rejected the launch.
func (r *run) noteStale(capture string, round int, ran bool) {
	for _, l := range r.res.Ledger {
		if l.Capture != capture {
			continue
		}
		if a := r.bufs[l.Buffer]; a != nil && a.gen == l.Generation {
			continue
		}
		key := fmt.Sprintf("%s/%s/%d", l.Capture, l.Buffer, l.Generation)
		if r.staleSeen[key] {
			continue
		}
		r.staleSeen[key] = true
		s := StaleRange{Capture: l.Capture, Buffer: l.Buffer, Range: l.Range, Generation: l.Generation, Access: l.Access, Round: round, Ran: ran}
		var now []string
		for _, name := range r.liveNames() {
			a := r.bufs[name]
			if a.ptr.Overlaps(l.Range) {
				s.Owners = append(s.Owners, name)
				now = append(now, fmt.Sprintf("buffer %s %v (generation %d)", name, a.ptr, a.gen))
			}
		}
		if len(now) == 0 {
			s.Now = "free (no live allocation of the probe)"
		} else {
			s.Now = strings.Join(now, ", ")
		}
		r.res.Stale = append(r.res.Stale, s)
	}
}

// contents reads a buffer back: a synchronous device read, or the CPU's read of host memory.
func (r *run) contents(a *allocation) ([]byte, error) {
	data := make([]byte, a.ptr.Bytes)
	if a.host {
		return data, r.dev.HostRead(data, a.ptr)
	}
	return data, r.dev.Read(runtime.Main, data, a.ptr)
}

// liveNames lists the engine's live buffers in allocation (generation) order.
func (r *run) liveNames() []string {
	names := slices.Collect(maps.Keys(r.bufs))
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(r.bufs[a].gen, r.bufs[b].gen) })
	return names
}

func (r *run) teardown() error {
	r.phase = "teardown"
	r.round = 0
	var errs []error
	keep := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	for _, c := range r.p.Captures {
		if info, err := r.dev.CaptureInfo(runtime.Main, r.streams[c.Stream]); err == nil && info.Status != runtime.CaptureNone {
			g, err := r.dev.EndCapture(runtime.Main, r.streams[c.Stream])
			if err == nil {
				keep("DestroyGraph", r.dev.DestroyGraph(runtime.Main, g))
			}
		}
	}
	for _, c := range r.p.Captures {
		if g, ok := r.graphs[c.Name]; ok {
			keep("DestroyGraph "+c.Name, r.dev.DestroyGraph(runtime.Main, g))
		}
	}
	if len(r.streams) > 0 || r.setup != 0 {
		keep("SyncDevice", r.dev.SyncDevice(runtime.Main))
	}
	// Host buffers have no slot: the engine frees what the probe left.
	for _, name := range r.liveNames() {
		if a := r.bufs[name]; a.place.Host != 0 {
			keep("FreeHost "+name, r.dev.FreeHost(runtime.Main, a.ptr))
		}
	}
	// Retire frees every slot's buffer, retained and arena included, and every pool's segment, as a
	// context's exit does.
	keep("Retire", r.guard.Retire(runtime.Main))
	for t, mode := range r.threadModes {
		_, err := r.dev.ExchangeCaptureMode(t, mode)
		keep(fmt.Sprintf("ExchangeCaptureMode(%s) on thread %s", mode, t), err)
	}
	for _, name := range r.p.Events {
		if e, ok := r.events[name]; ok {
			keep("DestroyEvent "+name, r.dev.DestroyEvent(runtime.Main, e))
		}
	}
	for _, name := range r.p.Streams {
		if s, ok := r.streams[name]; ok {
			keep("DestroyStream "+name, r.dev.DestroyStream(runtime.Main, s))
		}
	}
	if r.setup != 0 {
		keep("DestroyStream (engine setup stream)", r.dev.DestroyStream(runtime.Main, r.setup))
	}
	if len(errs) > 0 {
		return errFatal{fmt.Errorf("teardown: %w", errors.Join(errs...))}
	}
	return nil
}
