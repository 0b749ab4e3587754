package run

import (
	"encoding/json"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/guard"
	"os"
	"slices"
	"time"

	"context"
	"errors"
	"fmt"
	"github.com/google/uuid"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/run/proc"
	"github.com/replaycheck/replaycheck/verdict"
)

// Tool is the tool name reports and journal headers carry.
const Tool = "replaycheck"

// Sink receives every entry of a run as it finishes, in selection order, as the report stores it
// (reports.Report.AddEntry). An error stops the run after that instance: a journal that cannot be
// written must not let the run go on unrecorded.
type Sink interface {
	Result(reports.Entry) error
}

// Starter is a Sink that learns the run's identity once the device is open, before the first
// result (the journal writes it as its header).
type Starter interface {
	Start(Header) error
}

// Platform is device 0 of a backend, open for a run.
type Platform struct {
	Backend device.Backend
	Device  device.Device
	// Name is the backend's name, Key the device's platform key (the key of its baseline),
	// Description the device's, Profile the simulator profile ("" for a backend without profiles).
	Name, Key, Description, Profile string
	// Driver and RuntimeVersion are the versions the backend reports for device 0, where known.
	Driver, RuntimeVersion string
}

// Open opens the configured backend and its device 0.
func Open(ctx context.Context, c Config) (*Platform, error) {
	b, err := backends.Open(c.Backend, c.backendConfig())
	if err != nil {
		return nil, err
	}
	dev, err := b.Open(ctx, 0)
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("opening device 0 of backend %s: %w", c.Backend, err)
	}
	p := &Platform{Backend: b, Device: dev, Name: b.Name(), Key: dev.Platform(), Description: dev.Describe(),
		Profile: backends.ProfileOf(c.Backend, c.Profile)}
	if info, err := b.Info(ctx, 0); err == nil {
		p.Driver, p.RuntimeVersion = info.Driver, info.Runtime
	}
	return p, nil
}

// Close closes the device, then the backend.
func (p *Platform) Close() error { return errors.Join(p.Device.Close(), p.Backend.Close()) }

// NewReport starts the report of a run of c on p, judged against baseline (nil: none).
func NewReport(c Config, p *Platform, baseline *verdict.Baseline) *reports.Report {
	rep := reports.New(Tool, c.version(), c.reportOptions())
	rep.Backend, rep.Platform, rep.Device, rep.Profile = p.Name, p.Key, p.Description, p.Profile
	rep.Driver, rep.RuntimeVersion = p.Driver, p.RuntimeVersion
	rep.Runtime = c.runtimeName()
	rep.RunID = uuid.NewString()
	rep.Host, _ = os.Hostname()
	rep.Config, _ = json.Marshal(c)
	if baseline != nil {
		rep.Baseline, rep.BaselineFile = baseline, baseline.File
	}
	return rep
}

func (c Config) version() string {
	if c.Version == "" {
		return "dev"
	}
	return c.Version
}

// runtimeName is the runtime under test as reports name it: "" for the built-in guards.
func (c Config) runtimeName() string {
	if c.RuntimeUnderTest != nil {
		return c.RuntimeUnderTest.Name
	}
	return ""
}

// options are the engine options of every instance of a run of c: the runtime under test is
// RuntimeUnderTest, or replaycheck's reference guards with Guard's switches.
func (c Config) options() capture.Options {
	rut := c.RuntimeUnderTest
	if rut == nil {
		rut = guard.Reference(c.Guard)
	}
	return capture.Options{Timeout: c.Timeout, Runtime: rut, Faults: c.faults(), CheckSlotLog: c.CheckSlotLog}
}

// Instance runs one instance on dev with the engine (capture.Run, under c's per-instance timeout,
// through c's runtime under test) and judges it against baseline (verdict.Judge). It is the one
// place both front ends run and judge an instance; c.RuntimeUnderTest must already be loaded
// (LoadRuntime) when c names a runtime plugin.
func Instance(ctx context.Context, dev device.Device, in probes.Instance, c Config, baseline *verdict.Baseline) reports.Entry {
	if gone, ok := dev.(*noDevice); ok {
		return gone.skipped(in, c, baseline) // no device left (Platform.Recover)
	}
	if err := c.faultClash(in.Probe); err != nil {
		return clashEntry(in, c, dev, baseline, err) // the run's fault would never fire
	}
	res := capture.Run(ctx, dev, in, c.options())
	return reports.Entry{Result: *res, Verdict: verdict.Judge(res, baseline)}
}

type abandonKey struct{}

// AbandonWith returns ctx for Execute or Resume with a second, harder stop: cancelling ctx stops
// the run after the instance in flight, and once abandon is done as well the instance in flight is
// abandoned too: the context capture.Run got is cancelled, and the engine stops at its next step
// between device calls. An instance that has not stopped within AbandonWait is inside a device
// call (or a runtime plugin's own code) that may never return: Execute stops waiting for it and
// returns at once, leaving that call its device, the backend and a runtime plugin Execute loaded
// (they are closed if the call ever returns), and its error wraps ErrAbandonedInCall. An abandoned
// instance is listed as not run, never journalled. Without AbandonWith the instance in flight
// always finishes, bounded by the per-instance timeout and its grace.
func AbandonWith(ctx, abandon context.Context) context.Context {
	return context.WithValue(ctx, abandonKey{}, abandon)
}

// AbandonWait is how long Execute waits for an abandoned instance to stop between device calls
// (AbandonWith) before it leaves the instance inside its call. The engine checks its context
// before every call, and a call on a healthy device takes well under this.
var AbandonWait = 250 * time.Millisecond

// ErrAbandonedInCall is wrapped by Execute's error when the run was abandoned (AbandonWith) with
// its instance in flight still inside a call: that call keeps the platform's device and, when
// Execute loaded one, the runtime plugin; a front end that loaded the plugin itself must not unload
// it either.
var ErrAbandonedInCall = errors.New("abandoned inside a call")

// abandonOf is ctx's abandon context (AbandonWith); nil without one.
func abandonOf(ctx context.Context) context.Context {
	a, _ := ctx.Value(abandonKey{}).(context.Context)
	return a
}

// instanceContext is the context one instance runs under: ctx's values without its cancellation,
// cancelled when the abandon context is done.
func instanceContext(ctx context.Context) (context.Context, context.CancelFunc) {
	inst, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if a := abandonOf(ctx); a != nil {
		stop := context.AfterFunc(a, cancel)
		return inst, func() { stop(); cancel() }
	}
	return inst, cancel
}

// await runs one instance on a goroutine of its own and returns its entry; ok is false when the
// run was abandoned (AbandonWith) and the instance did not stop within AbandonWait: it is then
// still inside a call, and its entry, when it comes, goes to left.
func await(ctx context.Context, wait time.Duration, instance func() reports.Entry) (e reports.Entry, ok bool, left <-chan reports.Entry) {
	ch := make(chan reports.Entry, 1)
	go func() { ch <- instance() }()
	var abandon <-chan struct{} // nil, never ready, without an abandon context
	if a := abandonOf(ctx); a != nil {
		abandon = a.Done()
	}
	select {
	case e = <-ch:
		return e, true, nil
	case <-abandon:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case e = <-ch:
		return e, true, nil
	case <-t.C:
		return reports.Entry{}, false, ch
	}
}

// Execute runs instances, in order, on device 0 of the configured backend and returns the report.
// It opens the backend and the device (closing both before it returns), loads c.Runtime unless
// c.RuntimeUnderTest is given, finds the baseline of the opened device's platform
// (Config.LocateBaseline), then runs and judges each instance (Instance) and hands its entry to
// every sink as it finishes.
//
// Once ctx is done no further instance starts; the one in flight finishes (see AbandonWith), and
// the instances not run are listed in the report's NotRun, neither passed nor in error. After an
// instance that lost or abandoned the device, the rest run on a fresh one or are skipped
// (Platform.Recover).
//
// A nil report with an error means nothing ran: a bad configuration, a backend, device, runtime
// plugin or baseline that could not be had, or a Starter that refused the header. A report with an
// error is a run whose device did not close cleanly or whose sink failed (the run stopped there).
func Execute(ctx context.Context, c Config, instances []probes.Instance, sinks ...Sink) (*reports.Report, error) {
	return execute(ctx, c, instances, nil, sinks)
}

// ExecutePlan makes one run (Execute) per profile of c.Profile ("cann,cuda"), in order, over the
// same instances and sinks, each run's configuration naming the whole plan (Config.Plan). done is
// called with each run's report and error as Execute returns them. The plan stops after a run
// that ran nothing (a nil report: nothing more is called), and after a run that did not run every
// instance (an interrupt, a failed sink) or once ctx is done: each run that did not begin then is
// still handed to done, as a report that lists every instance as not run (no device was opened
// for it, and the journal holds nothing of it), so the reports name every run of the plan.
func ExecutePlan(ctx context.Context, c Config, instances []probes.Instance, done func(*reports.Report, error), sinks ...Sink) {
	runPlan(ctx, c, instances, nil, done, sinks)
}

// runPlan is ExecutePlan continuing a journal's invocation (j; nil for a fresh one): a run the
// journal holds whole is read back, the one it holds in part is resumed, the others run afresh,
// with the journal as the first sink.
func runPlan(ctx context.Context, c Config, instances []probes.Instance, j *Journal, done func(*reports.Report, error), sinks []Sink) {
	plan := c.plan()
	if j != nil {
		sinks = append([]Sink{j}, sinks...)
	}
	stopped := false
	for k, profile := range plan {
		rc := c
		rc.Profile = profile
		if len(plan) > 1 {
			rc.Plan = plan
		}
		var prior *JournalRun
		if j != nil && k < len(j.Runs) {
			prior = j.Runs[k]
			if prior.Complete() {
				done(prior.Report(), nil)
				continue
			}
		}
		if stopped || (k > 0 && ctx.Err() != nil) {
			// Interrupted before this run: it does not start (or resume: the journal's part of
			// it is read back).
			if prior != nil {
				done(prior.Report(), nil)
			} else {
				done(notStarted(rc, idsOf(instances)), nil)
			}
			continue
		}
		if prior != nil {
			j.resuming = prior
		}
		rc.resumed = j != nil
		rep, err := execute(ctx, rc, instances, prior, sinks)
		done(rep, err)
		if rep == nil {
			return
		}
		stopped = len(rep.NotRun) > 0
	}
}

// notStarted is the report of a run of a plan that never began: every instance not run, and
// what the configuration says of the platform (no device was opened).
func notStarted(c Config, ids []string) *reports.Report {
	rep := reports.New(Tool, c.version(), c.reportOptions())
	rep.Backend, rep.Profile = c.Backend, backends.ProfileOf(c.Backend, c.Profile)
	rep.Platform = verdict.PlatformKey(rep.Backend, rep.Profile)
	rep.Runtime = c.runtimeName()
	rep.Config, _ = json.Marshal(c)
	rep.NotRun = slices.Clone(ids)
	return rep
}

func idsOf(instances []probes.Instance) []string {
	ids := make([]string, len(instances))
	for i, in := range instances {
		ids[i] = in.ID()
	}
	return ids
}

// execute is Execute over a journal's earlier results (prior; nil for a fresh run): the instances
// it holds are not run again, their entries go into the report where the selection puts them.
func execute(ctx context.Context, c Config, instances []probes.Instance, prior *JournalRun, sinks []Sink) (rep *reports.Report, err error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if !c.resumed {
		// A resumed run keeps the faults its journal began with: it cannot be narrowed now.
		if err := c.CheckFaults(instances); err != nil {
			return nil, err
		}
	}
	// What the run holds, closed on the way out; an instance abandoned inside a call (left)
	// keeps all of it, and closes it if that call ever returns.
	var p *Platform
	var left <-chan reports.Entry
	release := func() error { return nil }
	defer func() {
		closeAll := func() (cerr error) {
			// A device that does not close cleanly is the run's error; before the run began, the
			// error that stopped it is.
			if p != nil {
				if perr := p.Close(); perr != nil && rep != nil {
					cerr = fmt.Errorf("closing device: %w", perr)
				}
			}
			if rerr := release(); rerr != nil {
				cerr = errors.Join(cerr, fmt.Errorf("unloading the runtime plugin: %w", rerr))
			}
			return cerr
		}
		if left != nil {
			go func() {
				<-left
				_ = closeAll()
			}()
			return
		}
		if cerr := closeAll(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	if c.RuntimeUnderTest == nil && c.Runtime != "" {
		rut, rel, err := LoadRuntime(c.Runtime)
		if err != nil {
			return nil, c.Invalid("runtime", err)
		}
		release, c.RuntimeUnderTest = rel, rut
	}
	// The device opens even when ctx is already done (the report then lists every instance as
	// not run); only abandoning stops it.
	octx, cancel := instanceContext(ctx)
	p, err = Open(octx, c)
	cancel()
	if err != nil {
		return nil, err
	}
	baseline, err := c.LocateBaseline(p.Key)
	if err != nil {
		return nil, err
	}
	rep = NewReport(c, p, baseline)
	done := map[string]reports.Entry{}
	if prior != nil {
		h := prior.Header
		if h.Platform != p.Key {
			return nil, fmt.Errorf("the journal's run was started on platform %s, this device is %s", h.Platform, p.Key)
		}
		// The resumed run is the run the journal began: its identity and start.
		rep.Tool, rep.Version, rep.Started, rep.RunID, rep.Host = h.Tool, h.Version, h.Started, h.RunID, h.Host
		for _, e := range prior.Entries {
			done[e.ID] = e
		}
	}
	ids := make([]string, len(instances))
	for i, in := range instances {
		ids[i] = in.ID()
	}
	header := Header{
		Journal: JournalFormat, Tool: rep.Tool, Version: rep.Version, RunID: rep.RunID, Host: rep.Host, Started: rep.Started,
		Backend: rep.Backend, Profile: rep.Profile, Platform: rep.Platform, Device: rep.Device,
		Runtime: runtimeOrBuiltin(rep.Runtime), Baseline: rep.BaselineFile, Config: c, Instances: ids,
	}
	for _, s := range sinks {
		if st, ok := s.(Starter); ok {
			if err := st.Start(header); err != nil {
				return nil, err
			}
		}
	}

	var sinkErr, abandonErr error
	stopped := false
	for i, in := range instances {
		if e, ok := done[ids[i]]; ok {
			rep.AddEntry(e)
			continue
		}
		if stopped || ctx.Err() != nil {
			rep.NotRun = append(rep.NotRun, ids[i])
			continue
		}
		ictx, cancel := instanceContext(ctx)
		wait := AbandonWait
		if c.Isolate {
			wait += proc.WorkerWaitDelay // the worker is killed at once; its reaping may take this long
		}
		e, returned, stuck := await(ctx, wait, func() reports.Entry { return InstanceOn(ictx, p, in, c, baseline) })
		if !returned {
			// The call it is in keeps the device: nothing more runs on it, and it is not closed.
			left = stuck
			rep.NotRun = append(rep.NotRun, ids[i])
			stopped = true
			kept := "its device is"
			switch {
			case c.Isolate:
				kept = "its worker process, killed but not yet gone, is" // the parent's device is idle
			case c.Runtime != "":
				kept = "its device and the runtime plugin are"
			}
			abandonErr = fmt.Errorf("%s %w still in flight %v after the run was abandoned (a device call, or a runtime plugin's own code); %s left to that call", ids[i], ErrAbandonedInCall, wait, kept)
			cancel()
			continue
		}
		abandoned := ictx.Err() != nil && e.Error != nil && e.Error.Kind == capture.ErrInterrupted
		cancel()
		if abandoned {
			rep.NotRun = append(rep.NotRun, ids[i])
			stopped = true
			continue
		}
		e = rep.AddEntry(e)
		for _, s := range sinks {
			if err := s.Result(e); err != nil && sinkErr == nil {
				sinkErr = err
				stopped = true
			}
		}
	}
	rep.Ended = time.Now().UTC()
	return rep, errors.Join(sinkErr, abandonErr)
}

// unrunEntry is the judged entry of an instance the engine did not run to its end on the platform
// (backend, platform key, device description): skipped, or ended in error (runErr) before or
// outside the engine.
func unrunEntry(in probes.Instance, c Config, backend, platform, device string, baseline *verdict.Baseline, outcome probes.Outcome, reason string, runErr *capture.RunError) reports.Entry {
	pr := in.Probe
	res := &capture.Result{
		ID: in.ID(), Probe: pr.ID(), Set: pr.Set, Hazard: pr.Hazard, Labels: pr.Labels,
		Mode: in.Mode, Guarded: in.Guarded, Replays: in.Replays,
		Backend: backend, Platform: platform, Device: device, Runtime: runtimeOrBuiltin(c.runtimeName()),
		Outcome: outcome, Reason: reason, Error: runErr,
	}
	res.Expected, res.RejectedBy = in.ExpectedOn(platform)
	res.RefusedBy = in.RefusedByOn(platform)
	return reports.Entry{Result: *res, Verdict: verdict.Judge(res, baseline)}
}

func runtimeOrBuiltin(name string) string {
	if name == "" {
		return runtime.Builtin
	}
	return name
}
