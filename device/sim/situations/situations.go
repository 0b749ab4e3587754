// Package situations sets a device.Device up so that one device call meets one condition of the
// simulator's profile rules (device/sim Conditions): the situations the rule specs of the
// simulator (device/sim rules_test.go, every rule of every profile) and of the cuda binding
// (device/cuda rules_test.go, every cuda rule on the fake libcuda against the simulator) share.
// It is test support: Ginkgo/Gomega code for specs, imported only by _test files, never by the
// product, and it needs no cgo.
//
// # The contract
//
// New prepares a Stage on a device: two device buffers X and Y of 4 KiB, an Event, a pinned host
// buffer of 4 KiB, a Target stream, the Main thread as Caller and the capture mode every capture
// of the situation uses. Every stream the stage makes is of the stage's kind (Flags). ByCondition
// holds, for every condition the simulator knows and none other, the function that sets the
// condition's situation up on a fresh Stage; Meet does that for a rule (the allocation size its
// freed-bytes names, its pageable copy, the caller's interaction mode). Do then issues one device
// call, by its device.Device method name, from Caller on Target with the stage's objects. Cases
// lists the calls a rule decides, with the capture and caller modes each is tried in.
//
// Watch is the stream whose capture the call concerns (0 when none) and WasStatus that capture's
// state before the call; Also is the origin of another capture in progress the call concerns (0
// when none). Graph is the graph a situation captured, for a Launch.
//
// A capture-invalidated situation invalidates its capture through Stage.Invalidate when set (the
// simulator's specs use its test-only InvalidateCapture, so that every profile's rules on
// invalidated captures can be exercised); otherwise with a rule: a sync of the capturing stream,
// which must invalidate (CUDA's 900; CANN's 107027 does not).
//
// NonBlocking lists the conditions whose situation is a capture of non-blocking streams only: on
// CUDA the legacy stream's rules decide the others. Flags gives the kind a condition needs.
package situations

import (
	"slices"

	g "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

// Bytes is the size of the stage's buffers X, Y and its pinned host buffer, and of a Malloc or an
// AllocHost that Do issues.
const Bytes = 4 << 10

// Stage is a device prepared so that one call meets one situation.
type Stage struct {
	Device    device.Device
	Flags     device.StreamFlags // the kind of every stream the stage makes
	X, Y      device.Ptr
	Pinned    device.Ptr    // a pinned host buffer, allocated before any capture
	Watch     device.Stream // the stream whose capture the call concerns (0 when none)
	Also      device.Stream // the origin of another capture in progress the call concerns (0 when none)
	Target    device.Stream
	Event     device.Event
	Graph     device.Graph
	Caller    device.Thread
	Mode      device.CaptureMode
	WasStatus device.CaptureStatus

	// Invalidate, when set, marks the capture of its stream invalidated; when nil, the
	// capture-invalidated situation invalidates it with a sync of the capturing stream.
	Invalidate func(device.Stream)
}

// NonBlocking are the conditions whose situation is a capture of non-blocking streams only.
var NonBlocking = []string{"any-capture", "default-stream-during-capture"}

// Flags is the stream kind the situation of condition when needs.
func Flags(when string) device.StreamFlags {
	if slices.Contains(NonBlocking, when) {
		return device.NonBlocking
	}
	return device.Blocking
}

// ByCondition sets a stage up for each condition of the simulator, by name.
var ByCondition = map[string]func(st *Stage){
	"stream-capturing": func(st *Stage) { st.Begin(device.Main) },
	// A capture of non-blocking streams only (Flags): on CUDA the legacy stream's own rules do not
	// apply then (blocking-capture does).
	"any-capture":                func(st *Stage) { st.Begin(device.Main) },
	"blocking-capture":           func(st *Stage) { st.Begin(device.Main) },
	"caller-began-capture":       func(st *Stage) { st.Begin(device.Main) },
	"other-thread-began-capture": func(st *Stage) { st.Begin(device.Other) },
	"event-captured": func(st *Stage) {
		st.Begin(device.Main)
		Expect(st.Device.Fill(device.Main, st.Watch, st.X, 1)).To(Succeed())
		Expect(st.Device.Record(device.Main, st.Event, st.Watch)).To(Succeed())
	},
	"event-recorded-outside": func(st *Stage) {
		side := st.Stream()
		Expect(st.Device.Fill(device.Main, side, st.X, 1)).To(Succeed())
		Expect(st.Device.Record(device.Main, st.Event, side)).To(Succeed())
		st.Begin(device.Main)
	},
	"event-in-other-capture": func(st *Stage) {
		elsewhere := st.Stream()
		Expect(st.Device.BeginCapture(device.Main, elsewhere, device.Relaxed)).To(Succeed())
		Expect(st.Device.Record(device.Main, st.Event, elsewhere)).To(Succeed())
		st.Also = elsewhere // the event's capture: a rule that invalidates acts on both
		st.Begin(device.Main)
	},
	"capture-invalidated": func(st *Stage) {
		st.Begin(device.Main)
		Expect(st.Device.Record(device.Main, st.Event, st.Watch)).To(Succeed())
		if st.Invalidate != nil {
			st.Invalidate(st.Watch)
		} else {
			e, ok := device.AsError(st.Device.SyncStream(device.Main, st.Watch))
			Expect(ok).To(BeTrue())
			Expect(e.Invalidated).To(BeTrue(), "a sync of the capturing stream invalidates the capture")
		}
		st.WasStatus = device.CaptureInvalidated
	},
	"stream-outside-capture": func(st *Stage) {
		st.Begin(device.Main)
		st.Target = st.Stream()
		Expect(st.Device.Record(device.Main, st.Event, st.Target)).To(Succeed()) // an eager record
	},
	"default-stream":       func(st *Stage) { st.Target = device.DefaultStream },
	"stream-not-capturing": func(st *Stage) { st.Target = st.Stream() },
	"stream-not-origin": func(st *Stage) {
		st.Begin(device.Main)
		Expect(st.Device.Record(device.Main, st.Event, st.Watch)).To(Succeed())
		st.Target = st.Stream()
		Expect(st.Device.Wait(device.Main, st.Target, st.Event)).To(Succeed())
	},
	"end-from-other-thread": func(st *Stage) {
		st.Begin(device.Main)
		Expect(st.Device.Fill(device.Main, st.Watch, st.X, 1)).To(Succeed())
		st.Caller = device.Other
	},
	"fork-unjoined": func(st *Stage) {
		st.Begin(device.Main)
		Expect(st.Device.Record(device.Main, st.Event, st.Watch)).To(Succeed())
		side := st.Stream()
		Expect(st.Device.Wait(device.Main, side, st.Event)).To(Succeed())
		Expect(st.Device.Fill(device.Main, side, st.Y, 1)).To(Succeed())
	},
	"graph-range-freed": func(st *Stage) {
		st.CaptureFillOfX()
		Expect(st.Device.Free(device.Main, st.X)).To(Succeed()) // returned to the driver, not handed out again
	},
	"capture-fill-freed": func(st *Stage) {
		st.Begin(device.Main)
		Expect(st.Device.Fill(device.Main, st.Watch, st.X, 1)).To(Succeed())
		// Freed by a thread whose RELAXED interaction mode lets it free during any capture.
		old, err := st.Device.ExchangeCaptureMode(device.Other, device.Relaxed)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Device.Free(device.Other, st.X)).To(Succeed())
		_, err = st.Device.ExchangeCaptureMode(device.Other, old)
		Expect(err).NotTo(HaveOccurred())
	},
	"capture-copy-freed": func(st *Stage) {
		st.Begin(device.Main)
		Expect(st.Device.Copy(device.Main, st.Watch, st.Y, st.X)).To(Succeed())
		// The copy's source freed by a thread whose RELAXED interaction mode lets it free.
		old, err := st.Device.ExchangeCaptureMode(device.Other, device.Relaxed)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Device.Free(device.Other, st.X)).To(Succeed())
		_, err = st.Device.ExchangeCaptureMode(device.Other, old)
		Expect(err).NotTo(HaveOccurred())
	},
	"caller-began-other-capture": func(st *Stage) {
		st.BeginAlso(device.Main)
		st.Begin(device.Main)
		Expect(st.Device.Fill(device.Main, st.Watch, st.X, 1)).To(Succeed())
	},
	"other-thread-began-other-capture": func(st *Stage) {
		st.BeginAlso(device.Other)
		st.Begin(device.Main)
		Expect(st.Device.Fill(device.Main, st.Watch, st.X, 1)).To(Succeed())
	},
	"default-stream-joins-capture": func(st *Stage) {
		st.Begin(device.Main)
		Expect(st.Device.Fill(device.Main, st.Watch, st.X, 1)).To(Succeed())
		Expect(st.Device.Record(device.Main, st.Event, st.Watch)).To(Succeed())
		st.Target = device.DefaultStream
	},
	// A capture of non-blocking streams only (Flags).
	"default-stream-during-capture": func(st *Stage) {
		st.Begin(device.Main)
		st.Target = device.DefaultStream
	},
	"default-stream-during-blocking-capture": func(st *Stage) {
		st.Begin(device.Main)
		st.Target = device.DefaultStream
	},
	"pageable-copy-in-capture": func(st *Stage) {
		h, err := st.Device.AllocHost(device.Main, st.X.Bytes, device.Pageable)
		Expect(err).NotTo(HaveOccurred())
		st.X = h // the copy's source
		st.Begin(device.Main)
	},
	"graph-range-stale": func(st *Stage) {
		st.CaptureFillOfX()
		Expect(st.Device.Free(device.Main, st.X)).To(Succeed())
		st.Malloc(2 * st.X.Bytes)
		st.X = st.Malloc(st.X.Bytes) // the bystander on the captured address
	},
}

// New prepares a stage on d whose captures use mode and whose streams are of kind flags.
func New(d device.Device, mode device.CaptureMode, flags device.StreamFlags) *Stage {
	g.GinkgoHelper()
	st := &Stage{Device: d, Flags: flags, Caller: device.Main, Mode: mode}
	st.X, st.Y = st.Malloc(Bytes), st.Malloc(Bytes)
	var err error
	st.Event, err = d.CreateEvent(device.Main)
	Expect(err).NotTo(HaveOccurred())
	st.Target = st.Stream()
	st.Pinned, err = d.AllocHost(device.Main, Bytes, device.Pinned)
	Expect(err).NotTo(HaveOccurred())
	return st
}

// Meet sets rule r's situation up on the stage: X of the size r's freed-bytes names, the
// situation of r's condition, r's pageable copy on a stream outside the capture, and the caller
// in interaction mode callerMode.
func (st *Stage) Meet(r sim.Rule, callerMode device.CaptureMode) {
	g.GinkgoHelper()
	setup, ok := ByCondition[r.When]
	Expect(ok).To(BeTrue(), "no situation for condition %q", r.When)
	if !r.FreedBytes.IsZero() {
		st.X = st.Malloc(SizeWithin(r.FreedBytes))
	}
	setup(st)
	if r.Pageable {
		// A pageable copy on a stream outside the capture: the platform turns it into a
		// synchronous copy, which the capture's rules then judge.
		h, err := st.Device.AllocHost(device.Main, st.X.Bytes, device.Pageable)
		Expect(err).NotTo(HaveOccurred())
		st.X, st.Target = h, st.Stream()
	}
	_, err := st.Device.ExchangeCaptureMode(st.Caller, callerMode)
	Expect(err).NotTo(HaveOccurred())
}

// SizeWithin is an allocation size at the edge of r: its lower bound, or just below its upper one.
func SizeWithin(r sim.ByteRange) int64 {
	if r.AtLeast > 0 {
		return int64(r.AtLeast)
	}
	return int64(r.Below) - sim.Granularity
}

// Malloc allocates n bytes of device memory from Main.
func (st *Stage) Malloc(n int64) device.Ptr {
	g.GinkgoHelper()
	p, err := st.Device.Malloc(device.Main, n)
	Expect(err).NotTo(HaveOccurred())
	return p
}

// Stream is a new stream of the stage's kind.
func (st *Stage) Stream() device.Stream {
	g.GinkgoHelper()
	s, err := st.Device.CreateStream(device.Main, st.Flags)
	Expect(err).NotTo(HaveOccurred())
	return s
}

// Begin starts the watched capture on the target stream from thread t.
func (st *Stage) Begin(t device.Thread) {
	g.GinkgoHelper()
	Expect(st.Device.BeginCapture(t, st.Target, st.Mode)).To(Succeed())
	st.Watch = st.Target
	st.WasStatus = device.CaptureActive
}

// BeginAlso starts another capture, in the stage's mode, on a stream of its own from thread t.
func (st *Stage) BeginAlso(t device.Thread) {
	g.GinkgoHelper()
	st.Also = st.Stream()
	Expect(st.Device.BeginCapture(t, st.Also, st.Mode)).To(Succeed())
	Expect(st.Device.Fill(t, st.Also, st.Y, 2)).To(Succeed())
}

// CaptureFillOfX captures a fill of X on a new stream, which becomes the target, and keeps the
// graph for a Launch.
func (st *Stage) CaptureFillOfX() {
	g.GinkgoHelper()
	s := st.Stream()
	Expect(st.Device.BeginCapture(device.Main, s, st.Mode)).To(Succeed())
	Expect(st.Device.Fill(device.Main, s, st.X, 1)).To(Succeed())
	g, err := st.Device.EndCapture(device.Main, s)
	Expect(err).NotTo(HaveOccurred())
	st.Graph, st.Target = g, s
}

// Status is the capture status of stream s, asked from Main.
func (st *Stage) Status(s device.Stream) device.CaptureStatus {
	g.GinkgoHelper()
	info, err := st.Device.CaptureInfo(device.Main, s)
	Expect(err).NotTo(HaveOccurred())
	return info.Status
}

// Do issues call, a device.Device method name, from the stage's caller with the stage's objects.
func (st *Stage) Do(call string) error {
	d, t, s := st.Device, st.Caller, st.Target
	switch call {
	case "Malloc":
		_, err := d.Malloc(t, Bytes)
		return err
	case "Free":
		return d.Free(t, st.Y)
	case "AllocHost":
		_, err := d.AllocHost(t, Bytes, device.Pinned)
		return err
	case "FreeHost":
		return d.FreeHost(t, st.Pinned)
	case "Write":
		return d.Write(t, st.Y, make([]byte, st.Y.Bytes))
	case "Read":
		return d.Read(t, make([]byte, st.Y.Bytes), st.Y)
	case "Fill":
		return d.Fill(t, s, st.Y, 3)
	case "Copy":
		return d.Copy(t, s, st.Y, st.X)
	case "Axpy":
		return d.Axpy(t, s, st.Y, st.X, 3)
	case "Record":
		return d.Record(t, st.Event, s)
	case "Wait":
		return d.Wait(t, s, st.Event)
	case "SyncStream":
		return d.SyncStream(t, s)
	case "SyncDevice":
		return d.SyncDevice(t)
	case "QueryEvent":
		_, err := d.QueryEvent(t, st.Event)
		return err
	case "SyncEvent":
		return d.SyncEvent(t, st.Event)
	case "BeginCapture":
		return d.BeginCapture(t, s, st.Mode)
	case "EndCapture":
		_, err := d.EndCapture(t, s)
		return err
	case "Launch":
		return d.Launch(t, st.Graph, s)
	}
	g.Fail("no way to issue " + call)
	return nil
}

// Case is one call a rule names, in one capture mode and one caller interaction mode.
type Case struct {
	Call             string
	Mode, CallerMode device.CaptureMode
}

// Cases are the cases rule r decides: each of its calls in each capture mode it names (every mode
// when none) and each caller mode it names (Global when none).
func Cases(r sim.Rule) []Case {
	modes := r.Modes
	if len(modes) == 0 {
		modes = device.CaptureModes()
	}
	callers := r.CallerModes
	if len(callers) == 0 {
		callers = []device.CaptureMode{device.Global}
	}
	var out []Case
	for _, call := range r.Calls {
		for _, m := range modes {
			for _, cm := range callers {
				out = append(out, Case{call, m, cm})
			}
		}
	}
	return out
}
