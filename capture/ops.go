package capture

import (
	"fmt"

	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
)

// The op interpreter: each probe op becomes one device call through the runtime under test, its
// effect reported to the oracle, its error sorted into a refusal, a rejection or a fatal failure.

// deviceCall is one call the engine makes for a probe step.
type deviceCall struct {
	step   probes.Step
	desc   string
	thread runtime.Thread
	// do makes the call; it returns what the call returned worth recording ("" for nothing).
	do func() (string, error)
	// enqueues names the probe stream of stream work (fill, copy, axpy, record, wait): after it
	// took, the engine asks whether it went into the capture in progress or ran eagerly.
	enqueues string
}

// exec makes a call as it is: the call returns nothing worth recording.
func exec(f func() error) func() (string, error) { return func() (string, error) { return "", f() } }

// call issues one device call for a probe step and records it. took is false when the call was
// refused or rejected (the first of each is kept in the result); err is fatal.
func (r *run) call(c deviceCall) (took bool, err error) {
	if err := r.ctx.Err(); err != nil {
		return false, fail(ErrTimeout, &c.step, fmt.Errorf("%s: %w", c.step, err))
	}
	var before *snapshot
	if r.in.Guarded && !r.opt.NoSideEffectCheck {
		before = r.snap()
	}
	r.current, r.currentStep = c.desc, &c.step
	ret, callErr := c.do()
	ev := Event{Step: &c.step, Call: c.desc, Returned: ret, Thread: c.thread}
	if ferr := r.faultFired(&c.step, c.desc, callErr); ferr != nil {
		r.tl.record(ev, callErr)
		return false, ferr
	}
	if callErr == nil && c.enqueues != "" && r.capture != "" {
		if ev.Captured, err = r.inCapture(c.enqueues); err != nil {
			return false, fail(ErrSetup, &c.step, err)
		}
		ev.Eager = !ev.Captured
	}
	r.tl.record(ev, callErr)
	if before == nil || !runtime.IsRefusal(callErr) {
		return r.outcomeOf(c.step, callErr)
	}
	first := r.res.Refusal == nil
	checks, cerr := r.checkRefusal(c.step, before)
	took, oerr := r.outcomeOf(c.step, callErr)
	if first {
		r.res.Refusal.Checked = checks
	}
	if cerr != nil {
		return false, cerr
	}
	return took, oerr
}

// outcomeOf records the effect of a probe call's error: nil took effect; a refusal or a platform
// rejection did not (the first of each is kept); anything that is not a device error is fatal.
func (r *run) outcomeOf(step probes.Step, err error) (bool, error) {
	if err == nil {
		return true, nil
	}
	e, ok := runtime.AsError(err)
	if !ok {
		return false, fail(ErrHarness, &step, fmt.Errorf("%s: %w", step, err))
	}
	if e.Class == runtime.ClassRefused {
		if r.res.Refusal == nil {
			r.res.Refusal = &Refusal{Step: step, Op: e.Op, Detail: e.Detail}
		}
		return false, nil
	}
	switch {
	case deviceLost(err):
		// Not an answer to the op: the device is gone, and nothing after it would mean anything.
		return false, fail(ErrDeviceLost, &step, fmt.Errorf("%s: %w", step, err))
	case guardMisuse(err):
		return false, fail(ErrHarness, &step, fmt.Errorf("%s: %w", step, err))
	case runtimeFailure(err):
		// The runtime under test failed on its own: not an answer of the platform.
		return false, fail(ErrRuntime, &step, fmt.Errorf("%s: %w", step, err))
	}
	if r.res.Rejection == nil {
		r.res.Rejection = &Rejection{Step: step, Op: e.Op, Code: e.Code, Name: e.Name, Class: e.Class, DuringCapture: r.capture != "", Invalidated: e.Invalidated}
	}
	return false, nil
}

func (r *run) ops(phase probes.Phase, capture string, ops []*probes.Op) error {
	for i, op := range ops {
		step := probes.OpStep(phase, capture, i)
		if why := r.skipReason(op); why != "" {
			// Neither the device nor the oracle sees the op: an earlier op that the platform
			// rejected or a guard refused left nothing for it to act on as written.
			r.tl.skipped(step, op, why)
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

// issue performs one probe op on the device.
func (r *run) issue(step probes.Step, op *probes.Op) (bool, error) {
	switch op.Kind {
	case probes.OpFill, probes.OpCopy, probes.OpAxpy:
		return r.kernel(step, op)
	case probes.OpWrite, probes.OpRead:
		return r.transfer(step, op)
	case probes.OpRecord, probes.OpWait, probes.OpSync, probes.OpSyncDevice, probes.OpQuery, probes.OpSyncEvent:
		return r.ordering(step, op)
	case probes.OpAlloc:
		return r.allocate(&step, op.Thread, op.Buffer, *op.Bytes, op.Pattern, op.Slot, op.Place)
	case probes.OpFree:
		a, err := r.buf(step, op.Buffer)
		if err != nil {
			return false, err
		}
		desc, f := r.release(op.Thread, op.Buffer, a)
		took, err := r.call(deviceCall{step: step, desc: desc, thread: op.Thread, do: exec(f)})
		if took {
			delete(r.bufs, op.Buffer)
		}
		return took, err
	case probes.OpGrow:
		return r.grow(step, op)
	case probes.OpExchangeMode:
		t := op.Thread
		var old runtime.CaptureMode
		took, err := r.call(deviceCall{step: step, desc: fmt.Sprintf("ExchangeCaptureMode(%s)", op.Mode), thread: t, do: func() (string, error) {
			var err error
			old, err = r.dev.ExchangeCaptureMode(t, op.Mode)
			return old.String(), err
		}})
		if _, ok := r.threadModes[t]; took && !ok {
			r.threadModes[t] = old
		}
		return took, err
	}
	return false, failf(ErrHarness, &step, "%s: op %q is not implemented by the engine", step, op.Kind)
}

// kernel issues fill, copy or axpy: stream work over resolved ranges, captured or eager.
func (r *run) kernel(step probes.Step, op *probes.Op) (bool, error) {
	t, s := op.Thread, r.streams[op.Stream]
	acc, err := op.Resolve(r.sizeOf)
	if err != nil {
		return false, fail(ErrHarness, &step, fmt.Errorf("%s: %w", step, err))
	}
	span := func(sp probes.Span) (runtime.Ptr, error) {
		a, err := r.buf(step, sp.Buffer)
		if err != nil {
			return runtime.Ptr{}, err
		}
		return a.ptr.Slice(sp.Off, sp.Len), nil
	}
	w, err := span(acc.Writes[0])
	if err != nil {
		return false, err
	}
	c := deviceCall{step: step, thread: t, enqueues: op.Stream}
	switch op.Kind {
	case probes.OpFill:
		c.desc = fmt.Sprintf("Fill(%s %v, %#02x)", op.Dst, w, op.Value)
		c.do = exec(func() error { return r.dev.Fill(t, s, w, op.Value) })
	case probes.OpCopy:
		src, err := span(acc.Reads[0])
		if err != nil {
			return false, err
		}
		c.desc = fmt.Sprintf("Copy(%s %v <- %s %v)", op.Dst, w, op.Src, src)
		c.do = exec(func() error { return r.dev.Copy(t, s, w, src) })
	case probes.OpAxpy:
		x, err := span(acc.Reads[0])
		if err != nil {
			return false, err
		}
		c.desc = fmt.Sprintf("Axpy(%s %v += %d * %s %v)", op.Y, w, op.A, op.X, x)
		c.do = exec(func() error { return r.dev.Axpy(t, s, w, x, op.A) })
	}
	c.desc += " on " + op.Stream
	took, err := r.call(c)
	if took && err == nil {
		if r.capture != "" && r.tl.last().Captured {
			r.issued[r.capture]++
		}
		r.noteCaptured(acc)
	}
	return took, err
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
	switch {
	case op.Kind == probes.OpWrite && a.host:
		data := op.Pattern.Bytes(a.ptr.Bytes)
		c.desc, c.do = fmt.Sprintf("HostWrite(%s %v, %s)", name, a.ptr, op.Pattern), exec(func() error { return r.dev.HostWrite(a.ptr, data) })
	case op.Kind == probes.OpWrite:
		data := op.Pattern.Bytes(a.ptr.Bytes)
		c.desc, c.do = fmt.Sprintf("Write(%s %v, %s)", name, a.ptr, op.Pattern), exec(func() error { return r.dev.Write(t, a.ptr, data) })
	case a.host:
		data := make([]byte, a.ptr.Bytes)
		c.desc, c.do = fmt.Sprintf("HostRead(%s %v)", name, a.ptr), exec(func() error { return r.dev.HostRead(data, a.ptr) })
	default:
		data := make([]byte, a.ptr.Bytes)
		c.desc, c.do = fmt.Sprintf("Read(%s %v)", name, a.ptr), exec(func() error { return r.dev.Read(t, data, a.ptr) })
	}
	return r.call(c)
}

// ordering issues the ops that order work: events recorded and waited on, synchronisation, queries.
func (r *run) ordering(step probes.Step, op *probes.Op) (bool, error) {
	t, s, e := op.Thread, r.streams[op.Stream], r.events[op.Event]
	c := deviceCall{step: step, thread: t}
	switch op.Kind {
	case probes.OpRecord:
		c.desc, c.enqueues = fmt.Sprintf("Record(%s) on %s", op.Event, op.Stream), op.Stream
		c.do = exec(func() error { return r.dev.Record(t, e, s) })
	case probes.OpWait:
		c.desc, c.enqueues = fmt.Sprintf("Wait(%s) on %s", op.Event, op.Stream), op.Stream
		c.do = exec(func() error { return r.dev.Wait(t, s, e) })
	case probes.OpSync:
		c.desc, c.do = "SyncStream("+op.Stream+")", exec(func() error { return r.dev.SyncStream(t, s) })
	case probes.OpSyncDevice:
		c.desc, c.do = "SyncDevice()", exec(func() error { return r.dev.SyncDevice(t) })
	case probes.OpSyncEvent:
		c.desc, c.do = "SyncEvent("+op.Event+")", exec(func() error { return r.dev.SyncEvent(t, e) })
	case probes.OpQuery:
		c.desc = "QueryEvent(" + op.Event + ")"
		c.do = func() (string, error) {
			done, err := r.dev.QueryEvent(t, e)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("complete:%v", done), nil
		}
	}
	took, err := r.call(c)
	if took && err == nil && c.enqueues != "" {
		r.noteCaptured(probes.Access{})
	}
	return took, err
}
