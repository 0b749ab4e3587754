package capture

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replaycheck/replaycheck/device"
)

// The watch: every call into the backend's device is timed, so a call that never returns (a hang in
// the driver) ends the instance in a timeout that names it instead of hanging the run. So is every
// call into the code of a runtime of the user's own that asks (device.CallWatcher: the plugin
// loader does, for each call into C), with the device calls it makes nested in it.
//
// The instance runs on a goroutine of its own, which holds watch.mu at all times except inside a
// call into the backend's device (the watched device sits between the runtime under test and the
// backend) or into the code of a runtime of the user's own (runtimeCall). Run waits for that
// goroutine or for the instance's context. When the context ends, Run tries watch.mu until it has
// it: then either the instance has finished, or it is inside a device call. A call that is still in
// flight a grace period after the later of the deadline and its own start is abandoned: Run builds
// the result from what the instance recorded (it touches nothing while it is inside a call) and
// returns; the device is given up (device.Abandoner); if the call ever returns, the instance's
// goroutine parks for good instead of touching the result.

// watch is one instance's device watch.
type watch struct {
	dev device.Device // the backend's device
	inj device.FaultInjector
	// mu is a plain mutex, locked by one goroutine and unlocked by another: a capture of 100,000
	// ops takes it 200,000 times, and Run only needs to try it (TryLock) once the deadline passed.
	mu sync.Mutex
	// base is when the watch began: a call's start is kept as the time since base, a monotonic
	// reading that costs half of time.Now.
	base time.Time
	// late is set once the instance's context ended (run). Only then does a call's start matter
	// (a call that began earlier gets its grace from the deadline), so only then is the clock read
	// for each call: a capture of 100,000 ops would spend a tenth of its time reading it.
	late atomic.Bool
	// expired is when run saw the context end; only run's goroutine (and stuck, which it calls)
	// reads it.
	expired time.Time
	// tr runs the instance as one session on the device's Main thread (device.ThreadRunner), nil
	// when it must not (see Run); onThread is set once the body runs there.
	tr       device.ThreadRunner
	onThread bool
	// inRuntime is set while a call into a runtime of the user's own is in flight (runtimeCall),
	// with mu released for it: the device calls it makes are nested in it (doNested).
	inRuntime atomic.Bool
	// over is set once the instance is over (finished, or given up): a call made through the
	// watched device afterwards (a runtime's close freeing what it kept, at the end of the run)
	// has no instance to time, and no lock to lend, and goes straight through.
	over atomic.Bool

	// Guarded by mu.
	call    string        // the backend call in flight, "" when none
	started time.Duration // when the call in flight began, since base; unknown (-1) before late
	// own: the call in flight is the runtime under test's own code, not a device call it made.
	own       bool
	finished  bool // the instance's goroutine is done
	abandoned bool
	// armed counts the faults armed and not seen firing; fired is how many FiredFaults the watch
	// has seen, and newly the faults that fired since the engine last asked, each with its call.
	armed int
	fired int
	newly []firedFault
}

// firedFault is a fault that fired, and the backend call it fired in.
type firedFault struct {
	device.Fault
	call string
}

// grace is how long a call may stay in flight past the instance's deadline (or, for a call that
// began after it, past its own start) before its device is abandoned: a quarter of the timeout,
// between 100ms and 10s. A slow call that returns within it costs nothing but the instance.
func grace(timeout time.Duration) time.Duration {
	return min(max(timeout/4, 100*time.Millisecond), 10*time.Second)
}

func newWatch(dev device.Device) *watch {
	w := &watch{dev: dev, base: time.Now()}
	if dev.Capabilities().FaultInjection {
		if w.inj = device.ExtensionsOf(dev).Faults; w.inj != nil {
			// The device lists every fault fired since it opened: earlier instances' are not ours.
			w.fired = len(w.inj.FiredFaults())
		}
	}
	return w
}

// do makes one backend call, named call, with the watch's lock released for its duration (and
// taken back even when the call panics).
func (w *watch) do(call string, f func()) {
	if w.over.Load() {
		f()
		return
	}
	if w.inRuntime.Load() {
		w.doNested(call, f)
		return
	}
	w.call, w.started = call, w.now()
	w.mu.Unlock()
	defer w.back(call)
	f()
}

// runtimeCall makes one call into a runtime of the user's own (device.CallWatcher), named call,
// under the watch as a device call is: code of the user's that never returns ends the instance in
// a timeout naming it instead of hanging the run. The device calls it makes are watched nested in
// it. Only a runtime of the user's own asks: the built-in one is Go code of replaycheck's.
func (w *watch) runtimeCall(call string, f func()) {
	if w.over.Load() {
		f()
		return
	}
	w.call, w.started, w.own = call, w.now(), true
	w.inRuntime.Store(true)
	w.mu.Unlock()
	defer func() {
		w.back(call)
		w.own = false
		w.inRuntime.Store(false)
	}()
	f()
}

// doNested makes a device call that a runtime call in flight (runtimeCall) makes, from whichever
// thread the runtime makes it on: mu is free, so it is taken to name the call, and again to put
// the runtime call's name back once the device call returned.
func (w *watch) doNested(call string, f func()) {
	w.mu.Lock()
	if w.abandoned {
		w.mu.Unlock()
		select {} // Run has given the instance up: touch nothing, ever
	}
	outer, since := w.call, w.started
	w.call, w.started, w.own = call, w.now(), false
	w.mu.Unlock()
	defer func() {
		w.back(call)
		w.call, w.started, w.own = outer, since, true
		w.mu.Unlock()
	}()
	f()
}

// now is the start of a call beginning now, for started: unknown (-1) before the context ended.
func (w *watch) now() time.Duration {
	if !w.late.Load() {
		return -1
	}
	return time.Since(w.base)
}

// back takes the lock back after call returned, and notes the faults that fired in it.
func (w *watch) back(call string) {
	w.mu.Lock()
	if w.abandoned {
		// Run has given the instance up and owns its result: touch nothing, ever.
		w.mu.Unlock()
		select {}
	}
	w.call = ""
	if w.armed > 0 {
		fired := w.inj.FiredFaults()
		for _, f := range fired[min(w.fired, len(fired)):] {
			w.newly = append(w.newly, firedFault{Fault: f, call: call})
			w.armed--
		}
		w.fired = len(fired)
	}
}

// supervise runs body on a goroutine of its own and returns once body has finished, or once the
// context ended and a device call stayed in flight past its grace: then stuck is called, with the
// lock held and the instance's goroutine inside the call, and supervise returns true. timeout is
// the instance's limit, for the grace.
func (w *watch) supervise(ctx context.Context, timeout time.Duration, body func(), stuck func(call string, abandonedAt time.Time)) (abandoned bool) {
	done := make(chan struct{})
	w.mu.Lock() // handed to the instance's goroutine
	go func() {
		defer close(done)
		defer func() {
			w.finished = true
			w.over.Store(true)
			w.mu.Unlock()
		}()
		w.session(body)
	}()
	select {
	case <-done:
		return false
	case <-ctx.Done():
	}
	// late first: a call whose start was not read began before expired.
	w.late.Store(true)
	w.expired = time.Now()
	expired := w.expired
	g := grace(timeout)
	var poll *time.Ticker
	for {
		if !w.mu.TryLock() {
			// The instance is between calls, where it sees the context has ended and stops, or it
			// is about to make a call: look again shortly.
			if poll == nil {
				poll = time.NewTicker(time.Millisecond)
				defer poll.Stop()
			}
			select {
			case <-done:
				return false
			case <-poll.C:
			}
			continue
		}
		if w.finished {
			w.mu.Unlock()
			return false
		}
		// The instance is inside a call: it holds the lock everywhere else.
		limit := expired
		if at, ok := w.startedAt(); ok && at.After(expired) {
			limit = at
		}
		limit = limit.Add(g)
		if now := time.Now(); !now.Before(limit) {
			w.abandoned = true
			w.over.Store(true)
			if a := device.ExtensionsOf(w.dev).Abandon; a != nil {
				a.Abandon()
			}
			stuck(w.call, now)
			w.mu.Unlock()
			return true
		} else {
			// Give the call the rest of its grace; then look again (it may be a later call).
			w.mu.Unlock()
			t := time.NewTimer(limit.Sub(now))
			select {
			case <-done:
				t.Stop()
				return false
			case <-t.C:
			}
		}
	}
}

// startedAt is when the call in flight began; false when it began before the deadline, unread.
func (w *watch) startedAt() (time.Time, bool) {
	return w.base.Add(w.started), w.started >= 0
}

// inFlight says how long the call in flight at has been: "1.25s", or "more than 250ms" for a call
// that began before the deadline (its start was not read).
func (w *watch) inFlight(at time.Time) string {
	if start, ok := w.startedAt(); ok {
		return at.Sub(start).Round(time.Millisecond).String()
	}
	return "more than " + at.Sub(w.expired).Round(time.Millisecond).String()
}

// session runs body on the device's Main thread, one hand-off for the whole instance, when the
// device can (tr): every Main call then runs there inline instead of costing a round trip between
// OS threads. The watch is unchanged: each call still releases the lock for its duration, so a
// call that hangs inside the session is still the call named in the timeout. Otherwise body runs on
// the instance's goroutine and each call is handed off on its own.
func (w *watch) session(body func()) {
	if w.tr != nil && w.tr.OnThread(device.Main, func(on device.Device) {
		w.onThread = true
		// The instance's calls go to the session's view of the device, which runs them with no check
		// of the OS thread; a wrapper's view is the wrapper itself (device.ThreadRunner, ThreadsVia).
		// Run reads dev (to abandon it) only under mu, which the instance holds here.
		dev := w.dev
		w.dev = on
		defer func() { w.dev = dev }()
		body()
	}) == nil {
		return
	}
	body()
}

// arm arms f on the device.
func (w *watch) arm(f device.Fault) error {
	var err error
	w.do("InjectFault", func() { err = w.inj.InjectFault(f) })
	if err == nil {
		w.armed++
	}
	return err
}

// disarm disarms every fault not fired.
func (w *watch) disarm() error {
	if w.armed == 0 {
		return nil
	}
	var err error
	w.do("ClearFaults", func() { err = w.inj.ClearFaults() })
	w.armed = 0
	return err
}

// hasFired reports whether a fault fired since the last take.
func (w *watch) hasFired() bool { return len(w.newly) > 0 }

// takeFired returns the faults that fired since the last take, each with its call.
func (w *watch) takeFired() []firedFault {
	out := w.newly
	w.newly = nil
	return out
}

// watched is the backend's device as the runtime under test sees it: each call made under the
// watch.
type watched struct {
	device.Device
	w *watch
}

func (d watched) Counters() (c device.Counters) {
	d.w.do("Counters", func() { c = d.Device.Counters() })
	return
}
func (d watched) Malloc(t device.Thread, n int64) (p device.Ptr, err error) {
	d.w.do("Malloc", func() { p, err = d.Device.Malloc(t, n) })
	return
}
func (d watched) Free(t device.Thread, p device.Ptr) (err error) {
	d.w.do("Free", func() { err = d.Device.Free(t, p) })
	return
}
func (d watched) Write(t device.Thread, dst device.Ptr, src []byte) (err error) {
	d.w.do("Write", func() { err = d.Device.Write(t, dst, src) })
	return
}
func (d watched) Read(t device.Thread, dst []byte, src device.Ptr) (err error) {
	d.w.do("Read", func() { err = d.Device.Read(t, dst, src) })
	return
}
func (d watched) AllocHost(t device.Thread, n int64, kind device.HostMemory) (p device.Ptr, err error) {
	d.w.do("AllocHost", func() { p, err = d.Device.AllocHost(t, n, kind) })
	return
}
func (d watched) FreeHost(t device.Thread, p device.Ptr) (err error) {
	d.w.do("FreeHost", func() { err = d.Device.FreeHost(t, p) })
	return
}
func (d watched) HostWrite(dst device.Ptr, src []byte) (err error) {
	d.w.do("HostWrite", func() { err = d.Device.HostWrite(dst, src) })
	return
}
func (d watched) HostRead(dst []byte, src device.Ptr) (err error) {
	d.w.do("HostRead", func() { err = d.Device.HostRead(dst, src) })
	return
}
func (d watched) CreateStream(t device.Thread, f device.StreamFlags) (s device.Stream, err error) {
	d.w.do("CreateStream", func() { s, err = d.Device.CreateStream(t, f) })
	return
}
func (d watched) DestroyStream(t device.Thread, s device.Stream) (err error) {
	d.w.do("DestroyStream", func() { err = d.Device.DestroyStream(t, s) })
	return
}
func (d watched) CreateEvent(t device.Thread) (e device.Event, err error) {
	d.w.do("CreateEvent", func() { e, err = d.Device.CreateEvent(t) })
	return
}
func (d watched) DestroyEvent(t device.Thread, e device.Event) (err error) {
	d.w.do("DestroyEvent", func() { err = d.Device.DestroyEvent(t, e) })
	return
}
func (d watched) Fill(t device.Thread, s device.Stream, dst device.Ptr, v byte) (err error) {
	d.w.do("Fill", func() { err = d.Device.Fill(t, s, dst, v) })
	return
}
func (d watched) Copy(t device.Thread, s device.Stream, dst, src device.Ptr) (err error) {
	d.w.do("Copy", func() { err = d.Device.Copy(t, s, dst, src) })
	return
}
func (d watched) Axpy(t device.Thread, s device.Stream, y, x device.Ptr, a uint32) (err error) {
	d.w.do("Axpy", func() { err = d.Device.Axpy(t, s, y, x, a) })
	return
}

// EnqueueKernels is one watched call for the whole batch (device.KernelEnqueuer): the backend's
// own batch where it has one, else a call per kernel, all under the one watch.
func (d watched) EnqueueKernels(t device.Thread, s device.Stream, ks []device.Kernel) (n int, err error) {
	d.w.do("EnqueueKernels", func() { n, err = device.EnqueueKernels(d.Device, t, s, ks) })
	return
}
func (d watched) Record(t device.Thread, e device.Event, s device.Stream) (err error) {
	d.w.do("Record", func() { err = d.Device.Record(t, e, s) })
	return
}
func (d watched) Wait(t device.Thread, s device.Stream, e device.Event) (err error) {
	d.w.do("Wait", func() { err = d.Device.Wait(t, s, e) })
	return
}
func (d watched) SyncStream(t device.Thread, s device.Stream) (err error) {
	d.w.do("SyncStream", func() { err = d.Device.SyncStream(t, s) })
	return
}
func (d watched) SyncDevice(t device.Thread) (err error) {
	d.w.do("SyncDevice", func() { err = d.Device.SyncDevice(t) })
	return
}
func (d watched) QueryEvent(t device.Thread, e device.Event) (done bool, err error) {
	d.w.do("QueryEvent", func() { done, err = d.Device.QueryEvent(t, e) })
	return
}
func (d watched) SyncEvent(t device.Thread, e device.Event) (err error) {
	d.w.do("SyncEvent", func() { err = d.Device.SyncEvent(t, e) })
	return
}
func (d watched) ExchangeCaptureMode(t device.Thread, m device.CaptureMode) (old device.CaptureMode, err error) {
	d.w.do("ExchangeCaptureMode", func() { old, err = d.Device.ExchangeCaptureMode(t, m) })
	return
}
func (d watched) BeginCapture(t device.Thread, s device.Stream, m device.CaptureMode) (err error) {
	d.w.do("BeginCapture", func() { err = d.Device.BeginCapture(t, s, m) })
	return
}
func (d watched) EndCapture(t device.Thread, s device.Stream) (g device.Graph, err error) {
	d.w.do("EndCapture", func() { g, err = d.Device.EndCapture(t, s) })
	return
}
func (d watched) CaptureInfo(t device.Thread, s device.Stream) (info device.CaptureInfo, err error) {
	d.w.do("CaptureInfo", func() { info, err = d.Device.CaptureInfo(t, s) })
	return
}
func (d watched) Launch(t device.Thread, g device.Graph, s device.Stream) (err error) {
	d.w.do("Launch", func() { err = d.Device.Launch(t, g, s) })
	return
}
func (d watched) DestroyGraph(t device.Thread, g device.Graph) (err error) {
	d.w.do("DestroyGraph", func() { err = d.Device.DestroyGraph(t, g) })
	return
}
func (d watched) GraphNodes(t device.Thread, g device.Graph) (nodes []device.GraphNode, err error) {
	d.w.do("GraphNodes", func() { nodes, err = d.Device.GraphNodes(t, g) })
	return
}

// Close is not the runtime under test's to call: the device belongs to whoever opened it.
func (d watched) Close() error { return nil }

// Extensions states what the watched device passes on: a batch of kernels as one watched call,
// watching a runtime's own calls, and the backend's session view as it is (asking it is no device
// call): a runtime under test in front of the watched device learns that its calls for a thread
// may run where they are made. The backend's other abilities are the engine's to use (it holds
// the backend's device), not the runtime under test's.
func (d watched) Extensions() device.Extensions {
	return device.Extensions{Of: d, Kernels: d, Session: device.ExtensionsOf(d.Device).Session, Watch: d}
}

// WatchCall watches a call into the code of the runtime under test (device.CallWatcher).
func (d watched) WatchCall(call string, f func()) { d.w.runtimeCall(call, f) }
