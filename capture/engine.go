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

// Options tune one instance.
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

// instance is the state of one probe instance as the engine runs it. Its methods are spread by
// job: the op interpreter (ops.go), buffers (buffers.go), captures and the ledger (captures.go),
// batches of ops (batches.go), replays, verification and forensics (verify.go), refusals
// (sideeffects.go), teardown (teardown.go), and the outcome (classify.go). Its state is grouped by
// concern in the structs it embeds below.
type instance struct {
	ctx    context.Context
	dev    runtime.Runtime // the runtime under test, in front of the backend's device
	spec   probes.Instance
	p      *probes.Probe
	res    *Result
	tl     timeline
	oracle *probes.Oracle
	opt    Options
	// knobs are the instance's internal switches (knobs.go).
	knobs knobs

	handles  // the device objects the probe's names stand for
	buffers  // the allocations the probe's buffers stand for
	ledger   // the capture in progress and what went into it
	watching // how device calls are watched and timed out
	injected // the instance's injected faults

	before snapshot // the state before the call being made, guarded (sideeffects.go)
	times  phaseTimes
	// threadModes are the capture interaction modes the probe's exchange-mode ops replaced, by
	// thread: teardown gives each thread its mode back.
	threadModes map[device.Thread]device.CaptureMode
	verifier    // how verification reaches device bytes (compare.go)
	// roundLaunch is the round's last launch that took (replays; the zero Step when none), the
	// step a fault the device reports at the round's synchronisation is charged to; poisoned: that
	// fault was sticky, and the device runs nothing more (replayFaulted).
	roundLaunch probes.Step
	poisoned    bool

	// batches issues the capture in progress's ops in batches where it can (batches.go); nil when
	// not.
	batches *batcher

	priv privatePools // the probe's graph-private pools (privatepool.go)

	region region // the captures a phases list left open (region.go)
}

// handles are the device objects an instance made for the probe's names, and the engine's own
// stream.
type handles struct {
	streams map[string]device.Stream
	events  map[string]device.Event
	graphs  map[string]device.Graph
	// setup is the engine's own stream, never part of a capture, used to initialise buffers
	// allocated while a capture is active without making a synchronous (unsafe) call.
	setup device.Stream
}

// buffers are an instance's allocations (buffers.go) and those of the op being issued.
type buffers struct {
	bufs map[string]*allocation
	// byID is what bufs holds, by the id of the name in the probe's name table (probes.Plan).
	byID []*allocation
	gen  uint64
	// changed are the buffer names allocated, grown or freed since the last snapshot (setBuf,
	// dropBuf), kept while refusals are checked.
	changed []string
	spans   probes.Spans // the op being issued resolved (resolve)
	// resolved are the allocations resolve found for the op being issued (sizeOf), so that
	// issuing it and entering it into the ledger look none up again (live). Any allocation, grow
	// or free empties it (setBuf, dropBuf): what it holds is always live.
	resolved []*allocation
}

// ledger is the capture in progress and where each capture's entries are in the ledger
// (Result.Ledger; captures.go).
type ledger struct {
	capture   string // name of the capture in progress, "" when none
	captureID uint64
	// captured counts the fill, copy and axpy ops that went into the capture in progress (the
	// graph check compares it with the graph's work nodes).
	captured int
	// entries are where each capture with a graph has its entries in the ledger (entriesOf): a
	// capture's are contiguous, for captures run one at a time.
	entries   map[string]span
	staleSeen map[staleKey]bool
	member    membership // whether a stream's kernel work goes into the capture (captures.go)
}

// watching is how an instance's device calls are watched (watch.go).
type watching struct {
	// watch times every call into the backend's device.
	watch *watch
	// cur is the engine call being made: what a timeout in a device call names.
	cur deviceCall
	// walker is the backend device's walk of a graph's nodes under the watch, nil where the
	// instance walks through the runtime under test (walkerOf, walkGraph).
	walker device.GraphWalker
}

// injected are the instance's injected faults (faults.go), res.Faults their records; armed says
// which have been armed on the device.
type injected struct {
	faults []probes.Fault
	armed  []bool
}

// Run executes one probe instance end to end on dev and classifies it: prepare, each capture,
// between, then Replays rounds of replay, comparing every checked buffer byte for byte with the
// oracle after every round. Run never panics and never returns nil; every failure is in the Result.
func Run(ctx context.Context, dev device.Device, spec probes.Instance, opt Options) (res *Result) {
	p := spec.Probe
	rut := opt.Runtime
	res = &Result{
		ID: spec.ID(), Probe: p.ID(), Set: p.Set, Hazard: p.Hazard, Labels: p.Labels,
		Mode: spec.Mode, Guarded: spec.Guarded, Replays: spec.Replays,
		Backend: dev.Backend(), Platform: dev.Platform(), Device: dev.Describe(),
	}
	res.Expected, res.RejectedBy = spec.ExpectedOn(res.Platform)
	res.RefusedBy = spec.RefusedByOn(res.Platform)
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
	in := &instance{
		ctx: ctx, spec: spec, p: p, res: res, oracle: probes.NewOracle(p), opt: opt, knobs: opt.knobsOf(),
		handles:     handles{streams: map[string]device.Stream{}, events: map[string]device.Event{}, graphs: map[string]device.Graph{}},
		buffers:     buffers{bufs: map[string]*allocation{}, byID: make([]*allocation, p.BufferIDs())},
		ledger:      ledger{entries: map[string]span{}, staleSeen: map[staleKey]bool{}},
		watching:    watching{watch: newWatch(dev)},
		injected:    injected{faults: faults, armed: make([]bool, len(faults))},
		threadModes: map[device.Thread]device.CaptureMode{},
	}
	events, kernels := expectedEvents(p, spec.Replays)
	in.tl.events, in.tl.kernels.Hint = make([]Event, 0, events), kernels
	if ext := device.ExtensionsOf(dev); ext.Threads != nil && (rut.Direct || handsSessionView(ext)) {
		in.watch.tr = ext.Threads
	}
	in.watch.supervise(ctx, opt.Timeout, func() { in.whole(rut) }, in.abandon)
	return res
}

// handsSessionView reports whether a device that states a session (Extensions.Threads) may run
// one under a runtime of the user's own. A direct runtime (runtime.UnderTest.Direct) makes its
// device calls on the engine's goroutine, so the session runs them inline whatever wraps the
// device. A runtime of the user's own may make them from threads of its own (a plugin's workers,
// threads the plugin starts): it gets a session only when the device states the session's view
// too (Extensions.Session), whose Main calls run inline on whichever goroutine makes them while the
// engine waits for the device. Through a wrapper that forwards only the session, its calls would
// reach the device itself, and a Main call from another thread would wait for the session that
// waits for it.
func handsSessionView(ext device.Extensions) bool {
	return ext.Session != nil
}

// whole is the whole of one instance, on the goroutine the watch runs it on: open the runtime
// under test over the watched device, the body, teardown, the leak check and the outcome.
func (in *instance) whole(rut *runtime.UnderTest) {
	res, dev := in.res, watched{Device: in.watch.dev, w: in.watch}
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
	rt, err := rut.Open(dev, in.spec.Guarded)
	if err != nil {
		// A runtime that fails to open must leave nothing behind either.
		err = fail(ErrSetup, nil, fmt.Errorf("opening runtime %s: %w", rut.Name, err))
		res.Leaks = dev.Counters().Leaks(base)
		err = withLeaks(err, res.Leaks, "after the runtime failed to open")
		res.Outcome, res.Reason, res.Error = probes.Errored, err.Error(), runErrorOf(err)
		return
	}
	capability, why := lacking(in.p, rt.Capabilities())
	if why == "" {
		capability, why = in.lacksPrivatePools(rt)
	}
	if why != "" {
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
	in.dev = rt
	in.cmp, in.walker = comparerOf(dev, rut.Direct), walkerOf(dev, rut.Direct)
	err = in.safely(in.body)
	if len(in.faults) > 0 {
		in.disarmFaults(err)
	}
	lost := in.deviceGone(err)
	if lost {
		// Nothing can be released on a lost device: closing it (a reset) releases everything.
		in.tl.enter(PhaseTeardown)
		in.tl.skippedCall("teardown", "the device is lost: every call fails; closing it releases what the instance made")
	} else if terr := in.safely(in.teardown); err == nil {
		err = terr
	}
	if ferr := finish(rt, rut.Name); ferr != nil && err == nil {
		err = ferr
	}
	if !lost {
		res.Leaks = dev.Counters().Leaks(base)
		err = withLeaks(err, res.Leaks, "after teardown")
	}
	res.Timeline = in.tl.log()
	res.Timings = in.times.timings()
	in.classify(err)
	in.releaseScratch()
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
	n := 2*len(p.Streams) + 2*len(p.Events) + 3*len(p.Buffers) + 16
	for _, st := range p.Stages() {
		switch {
		case st.Eager():
			n += len(st.Ops) + 1 // and the SyncDevice that ends the stage
			continue
		case st.Part == probes.PartBegin || st.Part == probes.PartEnd:
			n += 2
			continue
		case st.Part == "":
			n += 4
		}
		for _, op := range st.Issued() {
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
func (in *instance) abandon(call string, at time.Time) {
	res := in.res
	kind, why := ErrTimeout, fmt.Sprintf("within the instance's %v timeout (and %v of grace)", in.opt.Timeout, grace(in.opt.Timeout))
	if errors.Is(in.ctx.Err(), context.Canceled) {
		kind, why = ErrInterrupted, fmt.Sprintf("within %v of the run being abandoned", grace(in.opt.Timeout))
	}
	what, callOf := in.cur.String(), "device"
	switch {
	case in.watch.own:
		// The runtime under test's own code never returned (runtimeCall), not a device call.
		why += ", inside the runtime under test's own code"
		callOf = "runtime"
	case call == "Launch":
		in.hangFired(in.cur.String())
	}
	if !strings.HasPrefix(what, call) {
		what += fmt.Sprintf(" (its %s call %s)", callOf, call)
	}
	msg := fmt.Sprintf("%s in %s: %s did not return %s; device %s abandoned", kind, call, what, why, in.watch.dev.Describe())
	ev := Event{Step: in.cur.stepRef(), Call: in.cur.String(), Thread: device.Main, Err: "no return: abandoned after " + in.watch.inFlight(at)}
	in.tl.record(ev, nil)
	for i := range in.res.Faults {
		if !in.res.Faults[i].Fired && in.res.Faults[i].Detail == "" {
			in.res.Faults[i].Detail = "did not fire: the instance ended first"
		}
	}
	res.Outcome, res.Reason = probes.Errored, msg
	res.Error = &RunError{Kind: kind, Step: in.cur.stepRef(), Message: msg, Call: call}
	res.DeviceState = DeviceAbandoned
	res.Timeline = in.tl.log()
	res.Timings = in.times.timings()
}

// safely runs f, turning a panic into a harness error so one broken probe cannot take the suite
// down.
func (in *instance) safely(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = failf(ErrHarness, nil, "panic: %v", v)
		}
	}()
	return f()
}

func (in *instance) body() error {
	if err := in.armAllocFaults(); err != nil {
		return err
	}
	if err := in.setupObjects(); err != nil {
		return err
	}
	// The probe's stages in order (probes.Probe.Stages): prepare, each capture, between; or the
	// entries of its phases list, eager work between two captures included.
	for _, st := range in.p.Stages() {
		if st.Part != "" {
			// A begin, ops or end entry: captures left open (region.go).
			if err := in.regionStage(st); err != nil {
				return err
			}
			continue
		}
		if st.Capture != nil {
			if err := in.runCapture(st.Capture); err != nil {
				return err
			}
			continue
		}
		in.tl.enter(timelinePhase(st.Phase))
		if err := in.eager(st, st.Ops); err != nil {
			return err
		}
	}
	return in.replays()
}

// timelinePhase is the timeline's phase of an eager stage's calls.
func timelinePhase(p probes.Phase) Phase {
	switch p {
	case probes.PhasePrepare:
		return PhasePrepare
	case probes.PhaseBetween:
		return PhaseBetween
	case probes.PhaseEach:
		return PhaseEach
	}
	return PhaseEager
}

// eager issues the ops of an eager stage st (prepare, an eager entry of phases, between, or each,
// st's ops or ops) and waits for the device: an eager phase is complete before the next begins,
// whatever streams its work went to (on real hardware nothing else orders work on a side stream
// before a capture or a launch on another).
func (in *instance) eager(st probes.Stage, ops []*probes.Op) error {
	if len(ops) == 0 {
		return nil
	}
	if err := in.ops(st.Step(0), ops); err != nil {
		return err
	}
	return in.must(fmt.Sprintf("SyncDevice (end of %s)", st), func() error { return in.dev.SyncDevice(device.Main) })
}

func (in *instance) setupObjects() error {
	in.tl.enter(PhaseSetup)
	for _, name := range in.p.Streams {
		var s device.Stream
		call, kind := "CreateStream "+name, device.Blocking
		if slices.Contains(in.p.NonBlocking, name) {
			call, kind = call+" (non-blocking)", device.NonBlocking
		}
		if err := in.must(call, func() (err error) { s, err = in.dev.CreateStream(device.Main, kind); return }); err != nil {
			return err
		}
		in.streams[name] = s
	}
	// The default stream is the platform's: never created, never destroyed.
	in.streams[probes.DefaultStream] = device.DefaultStream
	if err := in.must("CreateStream (engine setup stream)", func() (err error) { in.setup, err = in.dev.CreateStream(device.Main, device.Blocking); return }); err != nil {
		return err
	}
	for _, pl := range in.p.Pools {
		call := fmt.Sprintf("ReservePool(%s, %d", pl.Name, pl.Bytes)
		if pl.Host != 0 {
			call += ", " + pl.Host.String() + " host"
		}
		if err := in.must(call+")", func() error { return in.dev.ReservePool(device.Main, pl.Name, pl.Bytes, pl.Host) }); err != nil {
			return err
		}
		if err := in.makePrivate(pl); err != nil {
			return err
		}
	}
	for _, name := range in.p.Events {
		var e device.Event
		if err := in.must("CreateEvent "+name, func() (err error) { e, err = in.dev.CreateEvent(device.Main); return }); err != nil {
			return err
		}
		in.events[name] = e
	}
	for _, b := range in.p.Buffers {
		// A declared buffer is setup, not one of the probe's ops: a failure ends the instance in
		// error, never as a platform rejection of a step.
		if _, err := in.allocate(nil, device.Main, b.Name, b.Bytes, b.Init, b.Slot, b.Place); err != nil {
			return err
		}
	}
	return nil
}

// must makes an engine call outside the probe's ops and records it: any error ends the instance
// in error (ErrSetup), the device's error kept in the chain.
func (in *instance) must(call string, f func() error) error {
	return in.mustReturn(call, func() (string, error) { return "", f() })
}

// mustReturn is must for a call that returns something worth recording.
func (in *instance) mustReturn(call string, f func() (string, error)) error {
	if err := in.ctx.Err(); err != nil {
		return fail(ErrTimeout, nil, fmt.Errorf("%s: %w", call, err))
	}
	in.cur = deviceCall{desc: call}
	in.member = membership{}
	ret, err := f()
	in.tl.record(Event{Call: call, Returned: ret, Thread: device.Main}, err)
	if ferr := in.faultFired(nil, call, err); ferr != nil {
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
