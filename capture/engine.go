package capture

import (
	"context"
	"errors"
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// Options tune one run.
type Options struct {
	// Timeout bounds one instance (default one minute). The engine stops between calls once it
	// has passed, and the instance ends in error (timeout); a device call still in flight a grace
	// period later (a quarter of Timeout, 100ms to 10s) is not waited for: the instance ends "timeout
	// in <call>" and its device is abandoned (Result.DeviceState).
	Timeout time.Duration
	// Faults are injected into every instance, after the probe's own (probes.Fault; run --fault).
	Faults []probes.Fault
	// Runtime is the runtime under test (runtime/guard.Reference is replaycheck's own); an
	// instance without one ends in error.
	Runtime *runtime.UnderTest
	// NoSideEffectCheck turns off the check that a refusal changed nothing. For the detector's
	// negative control only.
	NoSideEffectCheck bool
	// CheckSlotLog checks the runtime's slot log (SlotsChangedSince; a plugin's slots_changed):
	// every snapshot a guarded call is checked against is read in full as well, and a slot whose
	// holding changed without the log or the engine naming it ends the instance in error
	// (ErrRuntime). It costs what the log saves: a question per buffer per call.
	CheckSlotLog bool

	// knobs are the engine's internal switches as a test tuned them (knobs.go; export_test.go's
	// Tune); nil: the defaults.
	knobs *knobs
}

// run is the state of one instance's run. Its methods are spread by job: the op interpreter
// (ops.go), buffers (buffers.go), captures and the ledger (captures.go), replays, verification
// and forensics (verify.go), refusals (sideeffects.go), teardown (teardown.go), and the outcome
// (classify.go).
type run struct {
	ctx    context.Context
	dev    runtime.Runtime // the runtime under test, in front of the backend's device
	in     probes.Instance
	p      *probes.Probe
	res    *Result
	tl     timeline
	oracle *probes.Oracle
	opt    Options

	streams map[string]device.Stream
	events  map[string]device.Event
	bufs    map[string]*allocation
	// byID is what bufs holds, by the id of the name in the probe's name table (probes.Plan).
	byID   []*allocation
	gen    uint64
	graphs map[string]device.Graph
	// setup is the engine's own stream, never part of a capture, used to initialise buffers
	// allocated while a capture is active without making a synchronous (unsafe) call.
	setup device.Stream

	capture   string // name of the capture in progress, "" when none
	captureID uint64
	// captured counts the fill, copy and axpy ops that went into the capture in progress (the
	// graph check compares it with the graph's work nodes).
	captured int
	// entries are where each capture with a graph has its entries in the ledger (entriesOf): a
	// capture's are one run, for captures run one at a time.
	entries   map[string]span
	staleSeen map[staleKey]bool
	member    membership   // whether a stream's kernel work goes into the capture (captures.go)
	spans     probes.Spans // the op being issued resolved (resolve)
	// resolved are the allocations resolve found for the op being issued (sizeOf), so that
	// issuing it and entering it into the ledger look none up again (live). Any allocation, grow
	// or free empties it (setBuf, dropBuf): what it holds is always live.
	resolved []*allocation
	before   snapshot // the state before the call being made, guarded (sideeffects.go)
	// changed are the buffer names allocated, grown or freed since the last snapshot (setBuf,
	// dropBuf), kept while refusals are checked.
	changed []string
	times   phaseTimes
	// threadModes are the capture interaction modes the probe's exchange-mode ops replaced, by
	// thread: teardown gives each thread its mode back.
	threadModes map[device.Thread]device.CaptureMode
	verifier    // how verification reaches device bytes (compare.go)
	// roundLaunch is the round's last launch that took (replays; the zero Step when none), the
	// step a fault the device reports at the round's synchronisation is charged to; poisoned: that
	// fault was sticky, and the device runs nothing more (replayFaulted).
	roundLaunch probes.Step
	poisoned    bool

	// watch times every call into the backend's device (watch.go).
	watch *watch
	// faults are the instance's injected faults (faults.go), res.Faults their records; armed says
	// which have been armed on the device.
	faults []probes.Fault
	armed  []bool
	// cur is the engine call being made: what a timeout in a device call names.
	cur deviceCall
	// runs issues the capture in progress's ops in runs where it can (runs.go); nil when not.
	runs *runner
	// walker is the backend device's walk of a graph's nodes under the watch, nil where the run
	// walks through the runtime under test (walkerOf, walkGraph).
	walker device.GraphWalker
	// knobs are the instance's internal switches (knobs.go).
	knobs knobs
}

// Run executes one probe instance end to end on dev and classifies it: prepare, each capture, between,
// then Replays rounds of replay, comparing every checked buffer byte for byte with the oracle after
// every round. Run never panics and never returns nil; every failure is in the Result.
func Run(ctx context.Context, dev device.Device, in probes.Instance, opt Options) (res *Result) {
	p := in.Probe
	rut := opt.Runtime
	res = &Result{
		ID: in.ID(), Probe: p.ID(), Set: p.Set, Hazard: p.Hazard, Labels: p.Labels,
		Mode: in.Mode, Guarded: in.Guarded, Replays: in.Replays,
		Backend: dev.Backend(), Platform: dev.Platform(), Device: dev.Describe(),
	}
	res.Expected, res.RejectedBy = in.ExpectedOn(res.Platform)
	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	if rut == nil {
		// The engine knows no runtime of its own: its caller picks one (guard.Reference).
		res.Outcome, res.Reason = probes.Errored, "no runtime under test (capture.Options.Runtime is nil)"
		res.Error = &RunError{Kind: ErrHarness, Message: res.Reason}
		return res
	}
	res.Runtime = rut.Name

	caps := dev.Capabilities()
	if _, why := lacking(p, caps); why != "" {
		res.Outcome, res.Reason = probes.Skipped, fmt.Sprintf("backend %s lacks capability %s", dev.Backend(), why)
		return res
	}
	faults := instanceFaults(p, opt)
	for _, f := range faults {
		res.Faults = append(res.Faults, FaultRecord{Fault: f.String()})
	}
	if len(faults) > 0 && (!caps.FaultInjection || device.ExtensionsOf(dev).Faults == nil) {
		res.Outcome, res.Reason = probes.Skipped, fmt.Sprintf("backend %s lacks capability %q, which the injected faults need (%s): a real driver library cannot be made to fail on purpose", dev.Backend(), "fault-injection", res.Faults[0].Fault)
		return res
	}
	if opt.Timeout <= 0 {
		opt.Timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	r := &run{
		ctx: ctx, in: in, p: p, res: res, oracle: probes.NewOracle(p), opt: opt, knobs: opt.knobsOf(),
		streams: map[string]device.Stream{}, events: map[string]device.Event{},
		bufs: map[string]*allocation{}, byID: make([]*allocation, p.BufferIDs()), graphs: map[string]device.Graph{}, entries: map[string]span{},
		staleSeen: map[staleKey]bool{}, threadModes: map[device.Thread]device.CaptureMode{},
		watch: newWatch(dev), faults: faults, armed: make([]bool, len(faults)),
	}
	events, kernels := expectedEvents(p, in.Replays)
	r.tl.events, r.tl.kernels.Hint = make([]Event, 0, events), kernels
	if ext := device.ExtensionsOf(dev); ext.Threads != nil && (rut.Direct || handsBatchView(ext)) {
		r.watch.tr = ext.Threads
	}
	r.watch.run(ctx, opt.Timeout, func() { r.instance(rut) }, r.abandon)
	return res
}

// handsBatchView reports whether the batch may run under a runtime of the user's own. The built-in
// runtime makes its device calls on the engine's goroutine, so the batch runs them inline whatever
// wraps the device. A runtime of the user's own may make them from threads of its own (a plugin's
// workers, threads the plugin starts): it is batched only when it will be handed the batch's view
// itself: a device that states both the batch and its view (device.Extensions Threads and Batch),
// whose Main calls run inline on whichever goroutine makes them while the engine waits for the
// device. A wrapper that forwards only the batch would hand the runtime calls that reach the
// device itself, and a Main call from another thread would wait for the batch that waits for it.
func handsBatchView(ext device.Extensions) bool {
	return ext.Threads != nil && ext.Batch != nil
}

// instance is the whole of one instance, on the goroutine the watch runs it on: open the runtime
// under test over the watched device, the body, teardown, the leak check and the outcome.
func (r *run) instance(rut *runtime.UnderTest) {
	res, dev := r.res, watched{Device: r.watch.dev, w: r.watch}
	defer func() {
		// A panic outside the body (opening or finishing the runtime) is the harness's too.
		if v := recover(); v != nil {
			res.Outcome, res.Reason = probes.Errored, fmt.Sprintf("panic: %v", v)
			res.Error = &RunError{Kind: ErrHarness, Message: res.Reason}
		}
	}()
	// What the device holds before the runtime is opened: a runtime that makes streams or buffers
	// when it opens, and releases them when it finishes, leaves it as it found it.
	base := dev.Counters()
	rt, err := rut.Open(dev, r.in.Guarded)
	if err != nil {
		// A runtime that fails to open must leave nothing behind either.
		err = fail(ErrSetup, nil, fmt.Errorf("opening runtime %s: %w", rut.Name, err))
		res.Leaks = dev.Counters().Leaks(base)
		err = withLeaks(err, res.Leaks, "after the runtime failed to open")
		res.Outcome, res.Reason, res.Error = probes.Errored, err.Error(), runErrorOf(err)
		return
	}
	if capability, why := lacking(r.p, rt.Capabilities()); why != "" {
		// The runtime in front of the device can do less than the device (a plugin's streams).
		res.Outcome, res.Reason = probes.Skipped, fmt.Sprintf("runtime %s lacks capability %s", rut.Name, why)
		if l := runtime.ExtensionsOf(rt).Lacks; l != nil {
			if because := l.Lacks(capability); because != "" {
				res.Reason += ": " + because
			}
		}
		err := finish(rt, rut.Name)
		res.Leaks = dev.Counters().Leaks(base)
		err = withLeaks(err, res.Leaks, "after the runtime finished")
		if err != nil {
			res.Outcome, res.Reason, res.Error = probes.Errored, err.Error(), runErrorOf(err)
		}
		return
	}
	r.dev = rt
	r.cmp, r.walker = comparerOf(dev, r.opt.Runtime.Direct), walkerOf(dev, r.opt.Runtime.Direct)
	err = r.safely(r.body)
	if len(r.faults) > 0 {
		r.disarmFaults(err)
	}
	lost := r.deviceGone(err)
	if lost {
		// Nothing can be released on a lost device: closing it (a reset) releases everything.
		r.tl.enter(PhaseTeardown)
		r.tl.skippedCall("teardown", "the device is lost: every call fails; closing it releases what the instance made")
	} else if terr := r.safely(r.teardown); err == nil {
		err = terr
	}
	if ferr := finish(rt, rut.Name); ferr != nil && err == nil {
		err = ferr
	}
	if !lost {
		res.Leaks = dev.Counters().Leaks(base)
		err = withLeaks(err, res.Leaks, "after teardown")
	}
	res.Timeline = r.tl.log()
	res.Timings = r.times.timings()
	r.classify(err)
	r.releaseScratch()
}

// withLeaks is err with the leaks found at the point when names: a leak error of its own when err
// is nil, else appended to err, whose kind stays (the earlier failure is the cause to look at; what
// it left behind follows from it).
func withLeaks(err error, leaks []string, when string) error {
	switch {
	case len(leaks) == 0:
		return err
	case err == nil:
		return failf(ErrLeak, nil, "leaked %s: %s", when, strings.Join(leaks, "; "))
	}
	return fmt.Errorf("%w; and leaked %s: %s", err, when, strings.Join(leaks, "; "))
}

// finish ends the runtime under test, named name, whose failure to end is its own error.
func finish(rt runtime.Runtime, name string) error {
	if err := rt.Finish(); err != nil {
		return fail(ErrRuntime, nil, fmt.Errorf("finishing runtime %s: %w", name, err))
	}
	return nil
}

// lacking names the first capability p needs that caps lacks (capability), and says so: quoted,
// and why where the probe does not list it in requires; "" when caps has all.
func lacking(p *probes.Probe, caps device.Capabilities) (capability, why string) {
	for _, need := range p.Requires {
		if !caps.Has(need) {
			return need, strconv.Quote(need)
		}
	}
	if len(p.NonBlocking) > 0 && !caps.NonBlockingStreams {
		const c = "non-blocking-streams"
		return c, fmt.Sprintf("%q, which the probe's non-blocking streams need (%s)", c, strings.Join(p.NonBlocking, ", "))
	}
	return "", ""
}

// expectedEvents is about how many events an instance of p records when every call succeeds, and
// how many of its calls are kept compact: its timeline's events are sized for them up front rather
// than copied as they grow, and its first block of compact records is no larger than needed (a
// capture of 100,000 ops).
func expectedEvents(p *probes.Probe, replays int) (events, kernels int) {
	n := len(p.Prepare) + len(p.Between) + 2*len(p.Streams) + 2*len(p.Events) + 3*len(p.Buffers) + 16
	for _, c := range p.Captures {
		n += 4
		for _, op := range c.Ops {
			if op.Kind.TouchesData() {
				kernels++ // recorded compactly when it takes (Timeline)
			} else {
				n++
			}
		}
	}
	perRound := len(p.Replay.Each) + max(len(p.Replay.Order), len(p.Captures)) + 2
	// Uneventful rounds past KeptRounds leave one event between them (Result.Timeline); the
	// rounds of a corrupted instance grow it as they come. Bounded: a wrong guess should not cost
	// more than a timeline of 128 Ki events.
	return min(n+min(replays, KeptRounds+2)*perRound, 1<<17), kernels
}

// kindOf is the ErrorKind of a fatal error, "" for nil.
func kindOf(err error) ErrorKind {
	if err == nil {
		return ""
	}
	return runErrorOf(err).Kind
}

// abandon ends the instance whose device call (the backend's method call) did not return in
// time: called by the watch with the instance's goroutine inside that call, so the result is
// Run's to finish. The device is abandoned.
func (r *run) abandon(call string, at time.Time) {
	res := r.res
	kind, why := ErrTimeout, fmt.Sprintf("within the instance's %v timeout (and %v of grace)", r.opt.Timeout, grace(r.opt.Timeout))
	if errors.Is(r.ctx.Err(), context.Canceled) {
		kind, why = ErrInterrupted, fmt.Sprintf("within %v of the run being abandoned", grace(r.opt.Timeout))
	}
	what, callOf := r.cur.String(), "device"
	switch {
	case r.watch.own:
		// The runtime under test's own code never returned (runtimeCall), not a device call.
		why += ", inside the runtime under test's own code"
		callOf = "runtime"
	case call == "Launch":
		r.hangFired(r.cur.String())
	}
	if !strings.HasPrefix(what, call) {
		what += fmt.Sprintf(" (its %s call %s)", callOf, call)
	}
	msg := fmt.Sprintf("%s in %s: %s did not return %s; device %s abandoned", kind, call, what, why, r.watch.dev.Describe())
	ev := Event{Step: r.cur.stepRef(), Call: r.cur.String(), Thread: device.Main, Err: "no return: abandoned after " + r.watch.inFlight(at)}
	r.tl.record(ev, nil)
	for i := range r.res.Faults {
		if !r.res.Faults[i].Fired && r.res.Faults[i].Detail == "" {
			r.res.Faults[i].Detail = "did not fire: the instance ended first"
		}
	}
	res.Outcome, res.Reason = probes.Errored, msg
	res.Error = &RunError{Kind: kind, Step: r.cur.stepRef(), Message: msg, Call: call}
	res.DeviceState = DeviceAbandoned
	res.Timeline = r.tl.log()
	res.Timings = r.times.timings()
}

// safely runs f, turning a panic into a harness error so one broken probe cannot take the suite
// down.
func (r *run) safely(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = failf(ErrHarness, nil, "panic: %v", v)
		}
	}()
	return f()
}

func (r *run) body() error {
	if err := r.armAllocFaults(); err != nil {
		return err
	}
	if err := r.setupObjects(); err != nil {
		return err
	}
	r.tl.enter(PhasePrepare)
	if err := r.eager(probes.PhasePrepare, r.p.Prepare); err != nil {
		return err
	}
	for _, c := range r.p.Captures {
		if err := r.runCapture(c); err != nil {
			return err
		}
	}
	r.tl.enter(PhaseBetween)
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
	return r.must(fmt.Sprintf("SyncDevice (end of %s)", phase), func() error { return r.dev.SyncDevice(device.Main) })
}

func (r *run) setupObjects() error {
	r.tl.enter(PhaseSetup)
	for _, name := range r.p.Streams {
		var s device.Stream
		call, kind := "CreateStream "+name, device.Blocking
		if slices.Contains(r.p.NonBlocking, name) {
			call, kind = call+" (non-blocking)", device.NonBlocking
		}
		if err := r.must(call, func() (err error) { s, err = r.dev.CreateStream(device.Main, kind); return }); err != nil {
			return err
		}
		r.streams[name] = s
	}
	// The default stream is the platform's: never created, never destroyed.
	r.streams[probes.DefaultStream] = device.DefaultStream
	if err := r.must("CreateStream (engine setup stream)", func() (err error) { r.setup, err = r.dev.CreateStream(device.Main, device.Blocking); return }); err != nil {
		return err
	}
	for _, pl := range r.p.Pools {
		call := fmt.Sprintf("ReservePool(%s, %d", pl.Name, pl.Bytes)
		if pl.Host != 0 {
			call += ", " + pl.Host.String() + " host"
		}
		if err := r.must(call+")", func() error { return r.dev.ReservePool(device.Main, pl.Name, pl.Bytes, pl.Host) }); err != nil {
			return err
		}
	}
	for _, name := range r.p.Events {
		var e device.Event
		if err := r.must("CreateEvent "+name, func() (err error) { e, err = r.dev.CreateEvent(device.Main); return }); err != nil {
			return err
		}
		r.events[name] = e
	}
	for _, b := range r.p.Buffers {
		// A declared buffer is setup, not one of the probe's ops: a failure ends the instance in
		// error, never as a platform rejection of a step.
		if _, err := r.allocate(nil, device.Main, b.Name, b.Bytes, b.Init, b.Slot, b.Place); err != nil {
			return err
		}
	}
	return nil
}

// must makes an engine call outside the probe's ops and records it: any error ends the instance
// in error (ErrSetup), the device's error kept in the chain.
func (r *run) must(call string, f func() error) error {
	return r.mustReturn(call, func() (string, error) { return "", f() })
}

// mustReturn is must for a call that returns something worth recording.
func (r *run) mustReturn(call string, f func() (string, error)) error {
	if err := r.ctx.Err(); err != nil {
		return fail(ErrTimeout, nil, fmt.Errorf("%s: %w", call, err))
	}
	r.cur = deviceCall{desc: call}
	r.member = membership{}
	ret, err := f()
	r.tl.record(Event{Call: call, Returned: ret, Thread: device.Main}, err)
	if ferr := r.faultFired(nil, call, err); ferr != nil {
		return ferr
	}
	if err == nil {
		return nil
	}
	kind := ErrSetup
	switch {
	case guardMisuse(err):
		kind = ErrHarness
	case runtimeFailure(err):
		kind = ErrRuntime
	}
	return fail(kind, nil, fmt.Errorf("%s: %w", call, err))
}

// runtimeFailure reports whether err is the runtime under test failing on its own (a plugin's own
// error, not a refusal and not the platform's answer passed through).
func runtimeFailure(err error) bool {
	e, ok := device.AsError(err)
	return ok && strings.HasPrefix(e.Backend, runtime.PluginBackend) && e.Class != device.ClassRefused
}

// poolExhausted reports whether err is the reference guards' pool without a free block for a
// request (runtime/guard PoolAlloc).
func poolExhausted(err error) bool {
	e, ok := device.AsError(err)
	return ok && e.Backend == runtime.GuardBackend && e.Class == device.ClassOutOfMemory
}

// guardMisuse reports whether err is the reference guards saying the engine used their API
// wrongly (anything but a refusal or an exhausted pool): a harness bug, never a platform answer.
func guardMisuse(err error) bool {
	e, ok := device.AsError(err)
	return ok && e.Backend == runtime.GuardBackend && e.Class != device.ClassRefused
}
