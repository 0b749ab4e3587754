package capture

import (
	"fmt"
	"strconv"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
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
func (in *instance) call(c deviceCall, do func() (string, error)) (took bool, err error) {
	if err := in.ctx.Err(); err != nil {
		return false, fail(ErrTimeout, c.stepRef(), fmt.Errorf("%s: %w", c.step, err))
	}
	if !c.kernel() {
		in.member = membership{} // see membership
	}
	var before *snapshot
	if in.checksRefusals() {
		if before, err = in.snap(); err != nil {
			return false, fail(ErrRuntime, c.stepRef(), fmt.Errorf("%s: %w", c.step, err))
		}
	}
	in.cur = c
	ret, callErr := do()
	if c.kernel() && callErr == nil && in.capture != "" && !in.watch.hasFired() && in.tl.compact(c.step, c.op) {
		// The bulk of a capture: work that took, recorded compactly (Timeline).
		captured, err := in.inCapture(c.enqueues, true)
		if err != nil {
			return false, fail(ErrSetup, c.stepRef(), err)
		}
		in.tl.kernel(&c, captured)
		return true, nil
	}
	step := in.tl.keep(c.step)
	ev := Event{Step: step, Call: c.text(&in.tl), Returned: ret, Thread: c.thread}
	if ferr := in.faultFired(step, ev.Call, callErr); ferr != nil {
		in.tl.record(ev, callErr)
		return false, ferr
	}
	if callErr != nil {
		in.member = membership{}
	} else if c.enqueues != "" && in.capture != "" {
		if ev.Captured, err = in.inCapture(c.enqueues, c.kernel()); err != nil {
			return false, fail(ErrSetup, step, err)
		}
		ev.Eager = !ev.Captured
	}
	in.tl.record(ev, callErr)
	if before == nil || !device.IsRefusal(callErr) {
		return in.outcomeOf(step, callErr)
	}
	first := in.res.Refusal == nil
	checks, cerr := in.checkRefusal(*step, before)
	took, oerr := in.outcomeOf(step, callErr)
	if first {
		in.res.Refusal.Checked = checks
	}
	if cerr != nil {
		return false, cerr
	}
	return took, oerr
}

// checksRefusals reports whether a refused call is checked for side effects: in a guarded
// instance, unless the check is switched off (its negative control).
func (in *instance) checksRefusals() bool { return in.spec.Guarded && !in.opt.NoSideEffectCheck }

// outcomeOf records the effect of a probe call's error: nil took effect; a refusal or a platform
// rejection did not (the first of each is kept); anything that is not a device error is fatal.
func (in *instance) outcomeOf(step *probes.Step, err error) (bool, error) {
	if err == nil {
		return true, nil
	}
	e, ok := device.AsError(err)
	if !ok {
		return false, fail(ErrHarness, step, fmt.Errorf("%s: %w", step, err))
	}
	if e.Class == device.ClassRefused {
		if in.res.Refusal == nil {
			in.res.Refusal = &Refusal{Step: *step, Op: e.Op, Guard: runtime.RefusedBy(err), Detail: e.Detail}
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
	if in.res.Rejection == nil {
		in.res.Rejection = rejectionOf(*step, e)
		in.res.Rejection.DuringCapture, in.res.Rejection.Invalidated = in.capture != "", e.Invalidated
	}
	return false, nil
}

// rejectionOf is the platform's rejection e of the call at step, as a result records it.
func rejectionOf(step probes.Step, e *device.Error) *Rejection {
	return &Rejection{Step: step, Op: e.Op, Code: e.Code, Name: e.Name, Class: e.Class}
}

// ops issues ops, those of a capture (at.Capture, the capture in progress) or of an eager stage;
// at is the step of the first, whose Index the others' steps replace.
func (in *instance) ops(at probes.Step, ops []*probes.Op) error {
	capture := at.Capture
	for i := 0; i < len(ops); i++ {
		if in.batches != nil && capture != "" {
			n, err := in.issueBatch(capture, ops, i)
			if err != nil {
				return err
			}
			if n > 0 {
				i += n - 1
				continue
			}
		}
		step := at
		step.Index = i
		if err := in.issueOp(step, ops[i]); err != nil {
			return err
		}
	}
	return nil
}

// issueOp issues op at step, an op of a capture (step.Capture, the capture in progress) or of an
// eager stage, and tells the oracle what it did.
func (in *instance) issueOp(step probes.Step, op *probes.Op) error {
	acc, why := in.resolve(op)
	if why != "" {
		// Neither the device nor the oracle sees the op: an earlier op that the platform
		// rejected or a guard refused left nothing for it to act on as written.
		in.tl.skipped(step, op, why)
		in.res.Skipped = append(in.res.Skipped, step)
		return nil
	}
	took, err := in.issue(step, op, acc)
	if err != nil {
		return err
	}
	if step.Capture != "" {
		in.oracle.Capture(step.Capture, op, took)
	} else {
		in.oracle.Eager(op, took)
	}
	return nil
}

// resolve returns the ranges a fill, copy or axpy touches at the buffers' sizes now (held in
// r.spans until the next op: nothing keeps them), or why an op
// cannot be issued as written. Each reason follows from an earlier op that did not take effect: an
// allocation that failed, a free that was refused (the name is still allocated, and an alloc of
// it again is skipped), a grow that was refused (a range sized for the new size no longer fits).
func (in *instance) resolve(op *probes.Op) (acc probes.Access, why string) {
	switch {
	case in.oracle.Skips(op):
		return acc, "names a buffer whose allocation did not take effect"
	case op.Kind == probes.OpAlloc && in.bufs[op.Buffer] != nil:
		return acc, fmt.Sprintf("buffer %q is still allocated: its free did not take effect", op.Buffer)
	}
	in.resolved = in.resolved[:0]
	switch op.Kind {
	case probes.OpFill, probes.OpCopy, probes.OpAxpy:
		if err := op.ResolveInto(in.sizeOf, &in.spans); err != nil {
			return acc, fmt.Sprintf("%v, which the probe's ranges assumed resized: an op that was to resize it (a grow, or a free and an alloc) did not take effect", err)
		}
		return in.spans.View(), ""
	}
	return acc, ""
}

// issue performs one probe op on the device; acc is what a fill, copy or axpy touches (resolve).
func (in *instance) issue(step probes.Step, op *probes.Op, acc probes.Access) (bool, error) {
	switch op.Kind {
	case probes.OpFill, probes.OpCopy, probes.OpAxpy:
		return in.kernel(step, op, acc)
	case probes.OpWrite, probes.OpRead:
		return in.transfer(step, op)
	case probes.OpRecord, probes.OpWait, probes.OpSync, probes.OpSyncDevice, probes.OpQuery, probes.OpSyncEvent:
		return in.ordering(step, op)
	case probes.OpAlloc:
		at := step // a copy: taking step's address would put every op's step on the heap
		return in.allocate(&at, op.Thread, op.Buffer, *op.Bytes, op.Pattern, op.Slot, op.Place)
	case probes.OpFree:
		a, err := in.buf(step, op.Buffer)
		if err != nil {
			return false, err
		}
		desc, f := in.release(op.Thread, op.Buffer, a)
		took, err := in.call(deviceCall{step: step, desc: desc, thread: op.Thread}, exec(f))
		if took {
			in.dropBuf(op.Buffer)
		}
		return took, err
	case probes.OpGrow:
		return in.grow(step, op)
	case probes.OpDestroy:
		return in.destroy(step, op)
	case probes.OpExchangeMode:
		t := op.Thread
		var old device.CaptureMode
		took, err := in.call(deviceCall{step: step, desc: fmt.Sprintf("ExchangeCaptureMode(%s)", op.Mode), thread: t}, func() (string, error) {
			var err error
			old, err = in.dev.ExchangeCaptureMode(t, op.Mode)
			return old.String(), err
		})
		if _, ok := in.threadModes[t]; took && !ok {
			in.threadModes[t] = old
		}
		return took, err
	}
	at := step
	return false, failf(ErrHarness, &at, "%s: op %q is not implemented by the engine", step, op.Kind)
}

// kernel issues fill, copy or axpy over acc, the op's resolved ranges: stream work, captured or
// eager. Its call is described without fmt (describeKernel), and only when it is read.
func (in *instance) kernel(step probes.Step, op *probes.Op, acc probes.Access) (bool, error) {
	t, s := op.Thread, in.streams[op.Stream]
	w, err := in.span(step, acc.Writes[0])
	if err != nil {
		return false, err
	}
	var x device.Ptr // the source of a copy, x of an axpy
	if op.Kind != probes.OpFill {
		if x, err = in.span(step, acc.Reads[0]); err != nil {
			return false, err
		}
	}
	c := deviceCall{step: step, thread: t, enqueues: op.Stream, op: op, w: w, x: x}
	do := func() (string, error) {
		switch op.Kind {
		case probes.OpFill:
			return "", in.dev.Fill(t, s, w, op.Value)
		case probes.OpCopy:
			return "", in.dev.Copy(t, s, w, x)
		}
		return "", in.dev.Axpy(t, s, w, x, op.A)
	}
	took, err := in.call(c, do)
	if took && err == nil && in.capture != "" && in.tl.lastCaptured() {
		in.captured++
		in.noteCaptured(acc)
	}
	return took, err
}

// span is the device range of a resolved span of a live buffer.
func (in *instance) span(step probes.Step, sp probes.Span) (device.Ptr, error) {
	a, err := in.buf(step, sp.Buffer)
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
func (in *instance) transfer(step probes.Step, op *probes.Op) (bool, error) {
	t := op.Thread
	name := op.Dst
	if op.Kind == probes.OpRead {
		name = op.Src
	}
	a, err := in.buf(step, name)
	if err != nil {
		return false, err
	}
	c := deviceCall{step: step, thread: t}
	var do func() (string, error)
	switch {
	case op.Kind == probes.OpWrite && a.host:
		data := op.Pattern.Bytes(a.ptr.Bytes)
		c.desc, do = fmt.Sprintf("HostWrite(%s %v, %s)", name, a.ptr, op.Pattern), exec(func() error { return in.dev.HostWrite(a.ptr, data) })
	case op.Kind == probes.OpWrite:
		data := op.Pattern.Bytes(a.ptr.Bytes)
		c.desc, do = fmt.Sprintf("Write(%s %v, %s)", name, a.ptr, op.Pattern), exec(func() error { return in.dev.Write(t, a.ptr, data) })
	case a.host:
		data := make([]byte, a.ptr.Bytes)
		c.desc, do = fmt.Sprintf("HostRead(%s %v)", name, a.ptr), exec(func() error { return in.dev.HostRead(data, a.ptr) })
	default:
		data := make([]byte, a.ptr.Bytes)
		c.desc, do = fmt.Sprintf("Read(%s %v)", name, a.ptr), exec(func() error { return in.dev.Read(t, data, a.ptr) })
	}
	return in.call(c, do)
}

// ordering issues the ops that order work: events recorded and waited on, synchronisation, queries.
func (in *instance) ordering(step probes.Step, op *probes.Op) (bool, error) {
	t, s, e := op.Thread, in.streams[op.Stream], in.events[op.Event]
	c := deviceCall{step: step, thread: t}
	var do func() (string, error)
	switch op.Kind {
	case probes.OpRecord:
		c.desc, c.enqueues = fmt.Sprintf("Record(%s) on %s", op.Event, op.Stream), op.Stream
		do = exec(func() error { return in.dev.Record(t, e, s) })
	case probes.OpWait:
		c.desc, c.enqueues = fmt.Sprintf("Wait(%s) on %s", op.Event, op.Stream), op.Stream
		do = exec(func() error { return in.dev.Wait(t, s, e) })
	case probes.OpSync:
		c.desc, do = "SyncStream("+op.Stream+")", exec(func() error { return in.dev.SyncStream(t, s) })
	case probes.OpSyncDevice:
		c.desc, do = "SyncDevice()", exec(func() error { return in.dev.SyncDevice(t) })
	case probes.OpSyncEvent:
		c.desc, do = "SyncEvent("+op.Event+")", exec(func() error { return in.dev.SyncEvent(t, e) })
	case probes.OpQuery:
		c.desc = "QueryEvent(" + op.Event + ")"
		do = func() (string, error) {
			done, err := in.dev.QueryEvent(t, e)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("complete:%v", done), nil
		}
	}
	return in.call(c, do)
}
