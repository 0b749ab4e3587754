package capture

import (
	"fmt"
	"strconv"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// The op interpreter: each probe op becomes one device call through the runtime under test, its
// effect reported to the oracle, its error sorted into a refusal, a rejection or a fatal failure.

// deviceCall is one call the engine makes for a probe step.
type deviceCall struct {
	step   probes.Step
	desc   string
	thread device.Thread
	// enqueues names the probe stream of stream work (fill, copy, axpy, record, wait): after it
	// took, the engine asks whether it went into the capture in progress or ran eagerly.
	enqueues string
	// op is set for a kernel call (kernel): fill, copy or axpy, which, when it takes effect,
	// changes no stream's capture membership (see membership). Its description is built from op
	// and its ranges w (and x) only when it is needed (text): a capture's kernel call that took is
	// recorded without one.
	op   *probes.Op
	w, x device.Ptr
}

// kernel reports whether the call is a fill, copy or axpy (op).
func (c *deviceCall) kernel() bool { return c.op != nil }

// text is the call's description, cut from t's blocks of text.
func (c *deviceCall) text(t *timeline) string {
	if !c.kernel() {
		return c.desc
	}
	return t.text(func(b []byte) []byte { return describeKernel(b, c.op, c.w, c.x) })
}

// String is the call's description as a string of its own, for messages.
func (c *deviceCall) String() string {
	if !c.kernel() {
		return c.desc
	}
	return string(describeKernel(nil, c.op, c.w, c.x))
}

// stepRef is a pointer to a copy of the call's step, nil for an engine call of its own.
func (c *deviceCall) stepRef() *probes.Step {
	if c.step == (probes.Step{}) {
		return nil
	}
	return stepRef(c.step)
}

// exec makes a call as it is: the call returns nothing worth recording.
func exec(f func() error) func() (string, error) { return func() (string, error) { return "", f() } }

// call makes one device call for a probe step with do and records it; do returns what the call
// returned worth recording ("" for nothing). took is false when the call was refused or rejected
// (the first of each is kept in the result); err is fatal. do is not part of c so that it does not
// escape with c's description: a closure that stays on the stack costs no allocation per call.
func (r *run) call(c deviceCall, do func() (string, error)) (took bool, err error) {
	if err := r.ctx.Err(); err != nil {
		return false, fail(ErrTimeout, c.stepRef(), fmt.Errorf("%s: %w", c.step, err))
	}
	if !c.kernel() {
		r.member = membership{} // see membership
	}
	var before *snapshot
	if r.checksRefusals() {
		if before, err = r.snap(); err != nil {
			return false, fail(ErrRuntime, c.stepRef(), fmt.Errorf("%s: %w", c.step, err))
		}
	}
	r.cur = c
	ret, callErr := do()
	if c.kernel() && callErr == nil && r.capture != "" && !r.watch.hasFired() && r.tl.compact(c.step, c.op) {
		// The bulk of a capture: work that took, recorded compactly (Timeline).
		captured, err := r.inCapture(c.enqueues, true)
		if err != nil {
			return false, fail(ErrSetup, c.stepRef(), err)
		}
		r.tl.kernel(&c, captured)
		return true, nil
	}
	step := r.tl.keep(c.step)
	ev := Event{Step: step, Call: c.text(&r.tl), Returned: ret, Thread: c.thread}
	if ferr := r.faultFired(step, ev.Call, callErr); ferr != nil {
		r.tl.record(ev, callErr)
		return false, ferr
	}
	if callErr != nil {
		r.member = membership{}
	} else if c.enqueues != "" && r.capture != "" {
		if ev.Captured, err = r.inCapture(c.enqueues, c.kernel()); err != nil {
			return false, fail(ErrSetup, step, err)
		}
		ev.Eager = !ev.Captured
	}
	r.tl.record(ev, callErr)
	if before == nil || !device.IsRefusal(callErr) {
		return r.outcomeOf(step, callErr)
	}
	first := r.res.Refusal == nil
	checks, cerr := r.checkRefusal(*step, before)
	took, oerr := r.outcomeOf(step, callErr)
	if first {
		r.res.Refusal.Checked = checks
	}
	if cerr != nil {
		return false, cerr
	}
	return took, oerr
}

// checksRefusals reports whether a refused call is checked for side effects: in a guarded
// instance, unless the check is switched off (its negative control).
func (r *run) checksRefusals() bool { return r.in.Guarded && !r.opt.NoSideEffectCheck }

// outcomeOf records the effect of a probe call's error: nil took effect; a refusal or a platform
// rejection did not (the first of each is kept); anything that is not a device error is fatal.
func (r *run) outcomeOf(step *probes.Step, err error) (bool, error) {
	if err == nil {
		return true, nil
	}
	e, ok := device.AsError(err)
	if !ok {
		return false, fail(ErrHarness, step, fmt.Errorf("%s: %w", step, err))
	}
	if e.Class == device.ClassRefused {
		if r.res.Refusal == nil {
			r.res.Refusal = &Refusal{Step: *step, Op: e.Op, Detail: e.Detail}
		}
		return false, nil
	}
	switch {
	case deviceLost(err):
		// Not an answer to the op: the device is gone, and nothing after it would mean anything.
		return false, fail(ErrDeviceLost, step, fmt.Errorf("%s: %w", step, err))
	case poolExhausted(err):
		// The probe's pool cannot hold the request (fragmentation the loader's count of live
		// bytes cannot see): the probe's error, not replaycheck's nor the platform's answer.
		return false, fail(ErrSetup, step, fmt.Errorf("%s: %w", step, err))
	case guardMisuse(err):
		return false, fail(ErrHarness, step, fmt.Errorf("%s: %w", step, err))
	case runtimeFailure(err):
		// The runtime under test failed on its own: not an answer of the platform.
		return false, fail(ErrRuntime, step, fmt.Errorf("%s: %w", step, err))
	}
	if r.res.Rejection == nil {
		r.res.Rejection = rejectionOf(*step, e)
		r.res.Rejection.DuringCapture, r.res.Rejection.Invalidated = r.capture != "", e.Invalidated
	}
	return false, nil
}

// rejectionOf is the platform's rejection e of the call at step, as a result records it.
func rejectionOf(step probes.Step, e *device.Error) *Rejection {
	return &Rejection{Step: step, Op: e.Op, Code: e.Code, Name: e.Name, Class: e.Class}
}

func (r *run) ops(phase probes.Phase, capture string, ops []*probes.Op) error {
	for i := 0; i < len(ops); i++ {
		if r.runs != nil && capture != "" {
			n, err := r.issueRun(capture, ops, i)
			if err != nil {
				return err
			}
			if n > 0 {
				i += n - 1
				continue
			}
		}
		op := ops[i]
		step := probes.OpStep(phase, capture, i)
		acc, why := r.resolve(op)
		if why != "" {
			// Neither the device nor the oracle sees the op: an earlier op that the platform
			// rejected or a guard refused left nothing for it to act on as written.
			r.tl.skipped(step, op, why)
			r.res.Skipped = append(r.res.Skipped, step)
			continue
		}
		took, err := r.issue(step, op, acc)
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

// resolve returns the ranges a fill, copy or axpy touches at the buffers' sizes now (held in
// r.spans until the next op: nothing keeps them), or why an op
// cannot be issued as written. Each reason follows from an earlier op that did not take effect: an
// allocation that failed, a free that was refused (the name is still allocated, and an alloc of
// it again is skipped), a grow that was refused (a range sized for the new size no longer fits).
func (r *run) resolve(op *probes.Op) (acc probes.Access, why string) {
	switch {
	case r.oracle.Skips(op):
		return acc, "names a buffer whose allocation did not take effect"
	case op.Kind == probes.OpAlloc && r.bufs[op.Buffer] != nil:
		return acc, fmt.Sprintf("buffer %q is still allocated: its free did not take effect", op.Buffer)
	}
	r.resolved = r.resolved[:0]
	switch op.Kind {
	case probes.OpFill, probes.OpCopy, probes.OpAxpy:
		if err := op.ResolveInto(r.sizeOf, &r.spans); err != nil {
			return acc, fmt.Sprintf("%v, which the probe's ranges assumed resized: an op that was to resize it (a grow, or a free and an alloc) did not take effect", err)
		}
		return r.spans.View(), ""
	}
	return acc, ""
}

// issue performs one probe op on the device; acc is what a fill, copy or axpy touches (resolve).
func (r *run) issue(step probes.Step, op *probes.Op, acc probes.Access) (bool, error) {
	switch op.Kind {
	case probes.OpFill, probes.OpCopy, probes.OpAxpy:
		return r.kernel(step, op, acc)
	case probes.OpWrite, probes.OpRead:
		return r.transfer(step, op)
	case probes.OpRecord, probes.OpWait, probes.OpSync, probes.OpSyncDevice, probes.OpQuery, probes.OpSyncEvent:
		return r.ordering(step, op)
	case probes.OpAlloc:
		at := step // a copy: taking step's address would put every op's step on the heap
		return r.allocate(&at, op.Thread, op.Buffer, *op.Bytes, op.Pattern, op.Slot, op.Place)
	case probes.OpFree:
		a, err := r.buf(step, op.Buffer)
		if err != nil {
			return false, err
		}
		desc, f := r.release(op.Thread, op.Buffer, a)
		took, err := r.call(deviceCall{step: step, desc: desc, thread: op.Thread}, exec(f))
		if took {
			r.dropBuf(op.Buffer)
		}
		return took, err
	case probes.OpGrow:
		return r.grow(step, op)
	case probes.OpExchangeMode:
		t := op.Thread
		var old device.CaptureMode
		took, err := r.call(deviceCall{step: step, desc: fmt.Sprintf("ExchangeCaptureMode(%s)", op.Mode), thread: t}, func() (string, error) {
			var err error
			old, err = r.dev.ExchangeCaptureMode(t, op.Mode)
			return old.String(), err
		})
		if _, ok := r.threadModes[t]; took && !ok {
			r.threadModes[t] = old
		}
		return took, err
	}
	at := step
	return false, failf(ErrHarness, &at, "%s: op %q is not implemented by the engine", step, op.Kind)
}

// kernel issues fill, copy or axpy over acc, the op's resolved ranges: stream work, captured or
// eager. Its call is described without fmt (describeKernel), and only when it is read.
func (r *run) kernel(step probes.Step, op *probes.Op, acc probes.Access) (bool, error) {
	t, s := op.Thread, r.streams[op.Stream]
	w, err := r.span(step, acc.Writes[0])
	if err != nil {
		return false, err
	}
	var x device.Ptr // the source of a copy, x of an axpy
	if op.Kind != probes.OpFill {
		if x, err = r.span(step, acc.Reads[0]); err != nil {
			return false, err
		}
	}
	c := deviceCall{step: step, thread: t, enqueues: op.Stream, op: op, w: w, x: x}
	do := func() (string, error) {
		switch op.Kind {
		case probes.OpFill:
			return "", r.dev.Fill(t, s, w, op.Value)
		case probes.OpCopy:
			return "", r.dev.Copy(t, s, w, x)
		}
		return "", r.dev.Axpy(t, s, w, x, op.A)
	}
	took, err := r.call(c, do)
	if took && err == nil && r.capture != "" && r.tl.lastCaptured() {
		r.captured++
		r.noteCaptured(acc)
	}
	return took, err
}

// span is the device range of a resolved span of a live buffer.
func (r *run) span(step probes.Step, sp probes.Span) (device.Ptr, error) {
	a, err := r.buf(step, sp.Buffer)
	if err != nil {
		return device.Ptr{}, err
	}
	return a.ptr.Slice(sp.Off, sp.Len), nil
}

// describeKernel appends the description of a fill, copy or axpy of w (and x): e.g.
// "Fill(b 0x100000000+64, 0x07) on main", "Copy(dst 0x…+8 <- src 0x…+8) on s1",
// "Axpy(y 0x…+16 += 3 * x 0x…+16) on main".
func describeKernel(b []byte, op *probes.Op, w, x device.Ptr) []byte {
	named := func(b []byte, name string, p device.Ptr) []byte {
		return p.Append(append(append(b, name...), ' '))
	}
	switch op.Kind {
	case probes.OpFill:
		const hex = "0123456789abcdef"
		b = named(append(b, "Fill("...), op.Dst, w)
		b = append(b, ", 0x"...)
		b = append(b, hex[op.Value>>4], hex[op.Value&15], ')')
	case probes.OpCopy:
		b = named(append(b, "Copy("...), op.Dst, w)
		b = named(append(b, " <- "...), op.Src, x)
		b = append(b, ')')
	case probes.OpAxpy:
		b = named(append(b, "Axpy("...), op.Y, w)
		b = strconv.AppendUint(append(b, " += "...), uint64(op.A), 10)
		b = named(append(b, " * "...), op.X, x)
		b = append(b, ')')
	}
	return append(append(b, " on "...), op.Stream...)
}

// transfer issues a write or a read of a whole buffer: a synchronous device transfer, or the CPU's
// access to host memory.
func (r *run) transfer(step probes.Step, op *probes.Op) (bool, error) {
	t := op.Thread
	name := op.Dst
	if op.Kind == probes.OpRead {
		name = op.Src
	}
	a, err := r.buf(step, name)
	if err != nil {
		return false, err
	}
	c := deviceCall{step: step, thread: t}
	var do func() (string, error)
	switch {
	case op.Kind == probes.OpWrite && a.host:
		data := op.Pattern.Bytes(a.ptr.Bytes)
		c.desc, do = fmt.Sprintf("HostWrite(%s %v, %s)", name, a.ptr, op.Pattern), exec(func() error { return r.dev.HostWrite(a.ptr, data) })
	case op.Kind == probes.OpWrite:
		data := op.Pattern.Bytes(a.ptr.Bytes)
		c.desc, do = fmt.Sprintf("Write(%s %v, %s)", name, a.ptr, op.Pattern), exec(func() error { return r.dev.Write(t, a.ptr, data) })
	case a.host:
		data := make([]byte, a.ptr.Bytes)
		c.desc, do = fmt.Sprintf("HostRead(%s %v)", name, a.ptr), exec(func() error { return r.dev.HostRead(data, a.ptr) })
	default:
		data := make([]byte, a.ptr.Bytes)
		c.desc, do = fmt.Sprintf("Read(%s %v)", name, a.ptr), exec(func() error { return r.dev.Read(t, data, a.ptr) })
	}
	return r.call(c, do)
}

// ordering issues the ops that order work: events recorded and waited on, synchronisation, queries.
func (r *run) ordering(step probes.Step, op *probes.Op) (bool, error) {
	t, s, e := op.Thread, r.streams[op.Stream], r.events[op.Event]
	c := deviceCall{step: step, thread: t}
	var do func() (string, error)
	switch op.Kind {
	case probes.OpRecord:
		c.desc, c.enqueues = fmt.Sprintf("Record(%s) on %s", op.Event, op.Stream), op.Stream
		do = exec(func() error { return r.dev.Record(t, e, s) })
	case probes.OpWait:
		c.desc, c.enqueues = fmt.Sprintf("Wait(%s) on %s", op.Event, op.Stream), op.Stream
		do = exec(func() error { return r.dev.Wait(t, s, e) })
	case probes.OpSync:
		c.desc, do = "SyncStream("+op.Stream+")", exec(func() error { return r.dev.SyncStream(t, s) })
	case probes.OpSyncDevice:
		c.desc, do = "SyncDevice()", exec(func() error { return r.dev.SyncDevice(t) })
	case probes.OpSyncEvent:
		c.desc, do = "SyncEvent("+op.Event+")", exec(func() error { return r.dev.SyncEvent(t, e) })
	case probes.OpQuery:
		c.desc = "QueryEvent(" + op.Event + ")"
		do = func() (string, error) {
			done, err := r.dev.QueryEvent(t, e)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("complete:%v", done), nil
		}
	}
	return r.call(c, do)
}
