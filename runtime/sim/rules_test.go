package sim_test

import (
	"fmt"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/sim"
)

// stage is a device prepared so that one call meets one situation. watch is the stream whose
// capture the call concerns (0 when none).
type stage struct {
	d         *sim.Device
	x, y      runtime.Ptr
	pinned    runtime.Ptr // a pinned host buffer, allocated before any capture
	watch     runtime.Stream
	also      runtime.Stream // the origin of another capture in progress the call concerns (0 when none)
	target    runtime.Stream
	event     runtime.Event
	graph     runtime.Graph
	caller    runtime.Thread
	mode      runtime.CaptureMode
	wasStatus runtime.CaptureStatus
}

// situations set a stage up for each condition of the simulator, by name. A rule's spec uses the
// situation of its condition; a condition without one fails the coverage spec below.
var situations = map[string]func(st *stage){
	"stream-capturing": func(st *stage) { st.begin(main) },
	// A capture of non-blocking streams only: on CUDA the legacy stream's own rules do not apply
	// then (blocking-capture does).
	"any-capture":      func(st *stage) { st.beginNonBlocking(main) },
	"blocking-capture": func(st *stage) { st.begin(main) },
	"caller-began-capture": func(st *stage) {
		st.begin(main)
	},
	"other-thread-began-capture": func(st *stage) {
		st.begin(other)
	},
	"event-captured": func(st *stage) {
		st.begin(main)
		Expect(st.d.Fill(main, st.watch, st.x, 1)).To(Succeed())
		Expect(st.d.Record(main, st.event, st.watch)).To(Succeed())
	},
	"event-recorded-outside": func(st *stage) {
		side := newStream(st.d)
		Expect(st.d.Fill(main, side, st.x, 1)).To(Succeed())
		Expect(st.d.Record(main, st.event, side)).To(Succeed())
		st.begin(main)
	},
	"event-in-other-capture": func(st *stage) {
		elsewhere := newStream(st.d)
		Expect(st.d.BeginCapture(main, elsewhere, runtime.Relaxed)).To(Succeed())
		Expect(st.d.Record(main, st.event, elsewhere)).To(Succeed())
		st.begin(main)
	},
	"capture-invalidated": func(st *stage) {
		st.begin(main)
		Expect(st.d.Record(main, st.event, st.watch)).To(Succeed())
		Expect(st.d.InvalidateCapture(st.watch)).To(BeTrue())
		st.wasStatus = runtime.CaptureInvalidated
	},
	"stream-outside-capture": func(st *stage) {
		st.begin(main)
		st.target = newStream(st.d)
		Expect(st.d.Record(main, st.event, st.target)).To(Succeed()) // an eager record
	},
	"default-stream": func(st *stage) { st.target = 0 },
	"stream-not-capturing": func(st *stage) {
		st.target = newStream(st.d)
	},
	"stream-not-origin": func(st *stage) {
		st.begin(main)
		Expect(st.d.Record(main, st.event, st.watch)).To(Succeed())
		st.target = newStream(st.d)
		Expect(st.d.Wait(main, st.target, st.event)).To(Succeed())
	},
	"end-from-other-thread": func(st *stage) {
		st.begin(main)
		Expect(st.d.Fill(main, st.watch, st.x, 1)).To(Succeed())
		st.caller = other
	},
	"fork-unjoined": func(st *stage) {
		st.begin(main)
		Expect(st.d.Record(main, st.event, st.watch)).To(Succeed())
		side := newStream(st.d)
		Expect(st.d.Wait(main, side, st.event)).To(Succeed())
		Expect(st.d.Fill(main, side, st.y, 1)).To(Succeed())
	},
	"graph-range-freed": func(st *stage) {
		st.captureFillOfX()
		Expect(st.d.Free(main, st.x)).To(Succeed()) // returned to the driver, not handed out again
	},
	// Not a condition: graph-range-freed over an allocation of 2 MiB, for the facts below.
	"graph-range-freed, 2 MiB": func(st *stage) {
		st.x = malloc(st.d, 2*MiB)
		st.captureFillOfX()
		Expect(st.d.Free(main, st.x)).To(Succeed())
	},
	"capture-fill-freed": func(st *stage) {
		st.begin(main)
		Expect(st.d.Fill(main, st.watch, st.x, 1)).To(Succeed())
		// Freed by a thread whose RELAXED interaction mode lets it free during any capture.
		old, err := st.d.ExchangeCaptureMode(other, runtime.Relaxed)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.d.Free(other, st.x)).To(Succeed())
		_, err = st.d.ExchangeCaptureMode(other, old)
		Expect(err).NotTo(HaveOccurred())
	},
	"caller-began-other-capture": func(st *stage) {
		st.beginAlso(main)
		st.begin(main)
		Expect(st.d.Fill(main, st.watch, st.x, 1)).To(Succeed())
	},
	"other-thread-began-other-capture": func(st *stage) {
		st.beginAlso(other)
		st.begin(main)
		Expect(st.d.Fill(main, st.watch, st.x, 1)).To(Succeed())
	},
	"default-stream-joins-capture": func(st *stage) {
		st.begin(main)
		Expect(st.d.Fill(main, st.watch, st.x, 1)).To(Succeed())
		Expect(st.d.Record(main, st.event, st.watch)).To(Succeed())
		st.target = runtime.DefaultStream
	},
	"default-stream-during-capture": func(st *stage) {
		st.beginNonBlocking(main)
		st.target = runtime.DefaultStream
	},
	"default-stream-during-blocking-capture": func(st *stage) {
		st.begin(main)
		st.target = runtime.DefaultStream
	},
	"pageable-copy-in-capture": func(st *stage) {
		h, err := st.d.AllocHost(main, st.x.Bytes, runtime.Pageable)
		Expect(err).NotTo(HaveOccurred())
		st.x = h // the copy's source
		st.begin(main)
	},
	"graph-range-stale": func(st *stage) {
		st.captureFillOfX()
		Expect(st.d.Free(main, st.x)).To(Succeed())
		malloc(st.d, 2*st.x.Bytes)
		st.x = malloc(st.d, st.x.Bytes) // the bystander on the captured address
	},
}

func newStage(d *sim.Device, mode runtime.CaptureMode) *stage {
	GinkgoHelper()
	st := &stage{d: d, x: malloc(d, 4*KiB), y: malloc(d, 4*KiB), event: newEvent(d), caller: main, mode: mode}
	st.target = newStream(d)
	var err error
	st.pinned, err = d.AllocHost(main, 4*KiB, runtime.Pinned)
	Expect(err).NotTo(HaveOccurred())
	return st
}

// sizeWithin is an allocation size at the edge of r: its lower bound, or just below its upper one.
func sizeWithin(r sim.ByteRange) int64 {
	if r.AtLeast > 0 {
		return int64(r.AtLeast)
	}
	return int64(r.Below) - sim.Granularity
}

// captureFillOfX captures a fill of x on a new stream, which becomes the target, and keeps the
// graph for a Launch.
func (st *stage) captureFillOfX() {
	GinkgoHelper()
	s := newStream(st.d)
	Expect(st.d.BeginCapture(main, s, st.mode)).To(Succeed())
	Expect(st.d.Fill(main, s, st.x, 1)).To(Succeed())
	g, err := st.d.EndCapture(main, s)
	Expect(err).NotTo(HaveOccurred())
	st.graph, st.target = g, s
}

// beginAlso starts another capture, in the stage's mode, on a stream of its own from thread t.
func (st *stage) beginAlso(t runtime.Thread) {
	GinkgoHelper()
	st.also = newStream(st.d)
	Expect(st.d.BeginCapture(t, st.also, st.mode)).To(Succeed())
	Expect(st.d.Fill(t, st.also, st.y, 2)).To(Succeed())
}

// beginNonBlocking starts the watched capture from thread t on a new non-blocking stream, the
// target from then on.
func (st *stage) beginNonBlocking(t runtime.Thread) {
	GinkgoHelper()
	s, err := st.d.CreateStream(main, runtime.NonBlocking)
	Expect(err).NotTo(HaveOccurred())
	st.target = s
	st.begin(t)
}

// begin starts the watched capture on the target stream from thread t.
func (st *stage) begin(t runtime.Thread) {
	GinkgoHelper()
	Expect(st.d.BeginCapture(t, st.target, st.mode)).To(Succeed())
	st.watch = st.target
	st.wasStatus = runtime.CaptureActive
}

// do issues call from the stage's caller with the stage's objects.
func (st *stage) do(call string) error {
	d, t, s := st.d, st.caller, st.target
	switch call {
	case "Malloc":
		_, err := d.Malloc(t, 4*KiB)
		return err
	case "Free":
		return d.Free(t, st.y)
	case "AllocHost":
		_, err := d.AllocHost(t, 4*KiB, runtime.Pinned)
		return err
	case "FreeHost":
		return d.FreeHost(t, st.pinned)
	case "Write":
		return d.Write(t, st.y, make([]byte, st.y.Bytes))
	case "Read":
		return d.Read(t, make([]byte, st.y.Bytes), st.y)
	case "Fill":
		return d.Fill(t, s, st.y, 3)
	case "Copy":
		return d.Copy(t, s, st.y, st.x)
	case "Axpy":
		return d.Axpy(t, s, st.y, st.x, 3)
	case "Record":
		return d.Record(t, st.event, s)
	case "Wait":
		return d.Wait(t, s, st.event)
	case "SyncStream":
		return d.SyncStream(t, s)
	case "SyncDevice":
		return d.SyncDevice(t)
	case "QueryEvent":
		_, err := d.QueryEvent(t, st.event)
		return err
	case "SyncEvent":
		return d.SyncEvent(t, st.event)
	case "BeginCapture":
		return d.BeginCapture(t, s, st.mode)
	case "EndCapture":
		_, err := d.EndCapture(t, s)
		return err
	case "Launch":
		return d.Launch(t, st.graph, s)
	}
	Fail("no way to issue " + call)
	return nil
}

// ruleEntries makes one table entry per profile rule, call and capture mode.
func ruleEntries() []TableEntry {
	var out []TableEntry
	for _, name := range sim.Profiles() {
		p, err := sim.LoadProfile(name)
		if err != nil {
			out = append(out, Entry(fmt.Sprintf("%s loads", name), name, -1, "", runtime.Global, runtime.Global))
			continue
		}
		for i, r := range p.Rules {
			modes := r.Modes
			if len(modes) == 0 {
				modes = runtime.CaptureModes()
			}
			callers := r.CallerModes
			if len(callers) == 0 {
				callers = []runtime.CaptureMode{runtime.Global}
			}
			for _, call := range r.Calls {
				for _, m := range modes {
					for _, cm := range callers {
						verdict := "allowed"
						if !r.Allow {
							verdict = fmt.Sprintf("%d %s", r.Code, r.Class)
						}
						out = append(out, Entry(fmt.Sprintf("%s rule %d [%s, %s, %v, caller %v]: %s -> %s", name, i+1, r.Source, call, m, cm, r.Situation, verdict),
							name, i, call, m, cm))
					}
				}
			}
		}
	}
	return out
}

var _ = Describe("profile rules, as the device applies them", func() {
	DescribeTable("every rule of every profile decides its situation",
		func(profile string, index int, call string, mode, callerMode runtime.CaptureMode) {
			p, err := sim.LoadProfile(profile)
			Expect(err).NotTo(HaveOccurred())
			r := p.Rules[index]
			setup, ok := situations[r.When]
			Expect(ok).To(BeTrue(), "no test situation for condition %q", r.When)

			d := onProfile(profile)
			st := newStage(d, mode)
			if !r.FreedBytes.IsZero() {
				st.x = malloc(d, sizeWithin(r.FreedBytes))
			}
			setup(st)
			if r.Pageable {
				// A pageable copy on a stream outside the capture: the platform turns it into a
				// synchronous copy, which the capture's rules then judge.
				st.x, err = d.AllocHost(main, st.x.Bytes, runtime.Pageable)
				Expect(err).NotTo(HaveOccurred())
				st.target = newStream(d)
			}
			_, err = d.ExchangeCaptureMode(st.caller, callerMode)
			Expect(err).NotTo(HaveOccurred())
			err = st.do(call)

			if st.also != 0 {
				// Another capture the call concerns: invalidated by a rule that says so, else as it was.
				want := runtime.CaptureActive
				if !r.Allow && r.Invalidates {
					want = runtime.CaptureInvalidated
				}
				Expect(status(d, st.also)).To(Equal(want), "the other capture after the call")
			}
			if r.Allow {
				Expect(err).NotTo(HaveOccurred(), "the platform lets %s through: %s", call, r.Situation)
				return
			}
			e := expectError(err, r.Code, r.Class)
			Expect(e.Name).To(Equal(r.Name))
			Expect(e.Op).To(Equal(call))
			Expect(e.Detail).To(ContainSubstring(r.Situation))
			Expect(e.Invalidated).To(Equal(r.Invalidates && st.wasStatus == runtime.CaptureActive))
			if st.watch == 0 {
				return
			}
			want := st.wasStatus
			switch {
			case r.EndsCapture:
				want = runtime.CaptureNone
			case r.Invalidates:
				want = runtime.CaptureInvalidated
			}
			Expect(status(d, st.watch)).To(Equal(want), "capture state after the rejection")
		},
		ruleEntries(),
	)

	It("has a test situation for every condition the simulator knows", func() {
		for c := range situations {
			if !strings.Contains(c, ", ") {
				Expect(sim.Conditions()).To(ContainElement(c), "a situation named like a condition is one")
			}
		}
		for _, c := range sim.Conditions() {
			Expect(situations).To(HaveKey(c))
			Expect(sim.ConditionDoc(c)).NotTo(BeEmpty())
		}
	})
})

// fact is one row of docs/platforms.md, written out by hand: the profiles must agree.
type fact struct {
	profile string
	mode    runtime.CaptureMode
	when    string // the stage situation
	call    string
	code    int // 0: allowed
	class   runtime.Class
	after   runtime.CaptureStatus // the watched capture's state after the call
}

func checkFact(f fact) {
	d := onProfile(f.profile)
	st := newStage(d, f.mode)
	situations[f.when](st)
	err := st.do(f.call)
	if f.code == 0 {
		Expect(err).NotTo(HaveOccurred())
	} else {
		e := expectError(err, f.code, f.class)
		Expect(e.Invalidated).To(Equal(f.after == runtime.CaptureInvalidated && st.wasStatus == runtime.CaptureActive))
	}
	if st.watch != 0 {
		Expect(status(d, st.watch)).To(Equal(f.after))
	}
}

const (
	active      = runtime.CaptureActive
	invalidated = runtime.CaptureInvalidated
	none        = runtime.CaptureNone
)

var _ = Describe("docs/platforms.md, row by row", func() {
	DescribeTable("cann: rejections never invalidate",
		checkFact,
		Entry("sync the capturing stream: 107027", fact{"cann", runtime.Global, "stream-capturing", "SyncStream", 107027, runtime.ClassCapturedStream, active}),
		Entry("sync the device while capturing: 107027", fact{"cann", runtime.Relaxed, "any-capture", "SyncDevice", 107027, runtime.ClassCapturedStream, active}),
		Entry("query an event recorded in the capture: 107028", fact{"cann", runtime.Global, "event-captured", "QueryEvent", 107028, runtime.ClassCapturedEvent, active}),
		Entry("sync an event recorded in the capture: 107028", fact{"cann", runtime.Relaxed, "event-captured", "SyncEvent", 107028, runtime.ClassCapturedEvent, active}),
		Entry("wait on an event recorded before the capture: 107024", fact{"cann", runtime.Global, "event-recorded-outside", "Wait", 107024, runtime.ClassCaptureDependency, active}),
		Entry("end with an unjoined fork: 107025", fact{"cann", runtime.Global, "fork-unjoined", "EndCapture", 107025, runtime.ClassCaptureUnjoined, none}),
		Entry("end on a stream that is not the origin: 107036", fact{"cann", runtime.Global, "stream-not-origin", "EndCapture", 107036, runtime.ClassCaptureUnmatched, active}),
		Entry("end on a stream that is not capturing: 107029", fact{"cann", runtime.Global, "stream-not-capturing", "EndCapture", 107029, runtime.ClassCaptureNotCapturing, none}),
		Entry("GLOBAL capture ended on another thread: 107038", fact{"cann", runtime.Global, "end-from-other-thread", "EndCapture", 107038, runtime.ClassWrongThread, none}),
		Entry("THREAD_LOCAL capture ended on another thread: 107038", fact{"cann", runtime.ThreadLocal, "end-from-other-thread", "EndCapture", 107038, runtime.ClassWrongThread, none}),
		Entry("RELAXED capture ended on another thread: allowed", fact{"cann", runtime.Relaxed, "end-from-other-thread", "EndCapture", 0, "", none}),
		Entry("write by the capturing thread, GLOBAL: 107030", fact{"cann", runtime.Global, "caller-began-capture", "Write", 107030, runtime.ClassCaptureMode, active}),
		Entry("read by the capturing thread, THREAD_LOCAL: 107030", fact{"cann", runtime.ThreadLocal, "caller-began-capture", "Read", 107030, runtime.ClassCaptureMode, active}),
		Entry("write by the capturing thread, RELAXED: allowed", fact{"cann", runtime.Relaxed, "caller-began-capture", "Write", 0, "", active}),
		Entry("write by another thread, GLOBAL: 107030", fact{"cann", runtime.Global, "other-thread-began-capture", "Write", 107030, runtime.ClassCaptureMode, active}),
		Entry("write by another thread, THREAD_LOCAL: allowed", fact{"cann", runtime.ThreadLocal, "other-thread-began-capture", "Write", 0, "", active}),
		Entry("read by another thread, RELAXED: allowed", fact{"cann", runtime.Relaxed, "other-thread-began-capture", "Read", 0, "", active}),
		Entry("malloc during a GLOBAL capture: unchecked", fact{"cann", runtime.Global, "caller-began-capture", "Malloc", 0, "", active}),
		Entry("free during a GLOBAL capture: unchecked", fact{"cann", runtime.Global, "caller-began-capture", "Free", 0, "", active}),
		Entry("capture on the default stream: 100000", fact{"cann", runtime.Global, "default-stream", "BeginCapture", 100000, runtime.ClassInvalidValue, none}),
		Entry("work on a stream outside the capture: runs", fact{"cann", runtime.Global, "stream-outside-capture", "Fill", 0, "", active}),
		Entry("replay after a re-base: no error", fact{"cann", runtime.Global, "graph-range-stale", "Launch", 0, "", none}),
		Entry("replay over memory returned to the driver: 507011 (verify)", fact{"cann", runtime.Global, "graph-range-freed", "Launch", 507011, runtime.ClassIllegalAddress, none}),
		Entry("replay over 2 MiB returned to the driver: 507011 (verify)", fact{"cann", runtime.Global, "graph-range-freed, 2 MiB", "Launch", 507011, runtime.ClassIllegalAddress, none}),
		Entry("end while the thread's other GLOBAL capture is in progress: a graph", fact{"cann", runtime.Global, "caller-began-other-capture", "EndCapture", 0, "", none}),
		Entry("end while another thread's GLOBAL capture is in progress: a graph", fact{"cann", runtime.Global, "other-thread-began-other-capture", "EndCapture", 0, "", none}),
		Entry("pageable copy on the capturing stream: 107000, not invalidated", fact{"cann", runtime.Relaxed, "pageable-copy-in-capture", "Copy", 107000, runtime.ClassInvalidValue, active}),
		Entry("work on the default stream during a capture: runs", fact{"cann", runtime.Global, "default-stream-during-capture", "Fill", 0, "", active}),
		Entry("the default stream joining a capture: 107031", fact{"cann", runtime.Global, "default-stream-joins-capture", "Wait", 107031, runtime.ClassCaptureImplicit, active}),
		Entry("aclrtMallocHost during a GLOBAL capture: unchecked", fact{"cann", runtime.Global, "caller-began-capture", "AllocHost", 0, "", active}),
	)

	DescribeTable("cuda: 900/902/903/905/906/907 invalidate",
		checkFact,
		Entry("sync the capturing stream: 900", fact{"cuda", runtime.Global, "stream-capturing", "SyncStream", 900, runtime.ClassCaptureUnsupported, invalidated}),
		Entry("sync the device while capturing: 900", fact{"cuda", runtime.Relaxed, "any-capture", "SyncDevice", 900, runtime.ClassCaptureUnsupported, invalidated}),
		Entry("query an event recorded in the capture: 907, invalidated (measured)", fact{"cuda", runtime.Global, "event-captured", "QueryEvent", 907, runtime.ClassCapturedEvent, invalidated}),
		Entry("sync an event recorded in a RELAXED capture: 907, invalidated (measured)", fact{"cuda", runtime.Relaxed, "event-captured", "SyncEvent", 907, runtime.ClassCapturedEvent, invalidated}),
		Entry("wait on an event recorded before the capture: 905 (verify)", fact{"cuda", runtime.Global, "event-recorded-outside", "Wait", 905, runtime.ClassCaptureDependency, invalidated}),
		Entry("wait on an event of another capture: 902", fact{"cuda", runtime.Global, "event-in-other-capture", "Wait", 902, runtime.ClassCaptureConflict, invalidated}),
		Entry("end with an unjoined fork: 904", fact{"cuda", runtime.Global, "fork-unjoined", "EndCapture", 904, runtime.ClassCaptureUnjoined, none}),
		Entry("end on a stream that is not the origin: 903, invalidated (measured)", fact{"cuda", runtime.Global, "stream-not-origin", "EndCapture", 903, runtime.ClassCaptureUnmatched, invalidated}),
		Entry("end on a stream that is not capturing: 401 (measured)", fact{"cuda", runtime.Global, "stream-not-capturing", "EndCapture", 401, runtime.ClassCaptureConflict, none}),
		Entry("GLOBAL capture ended on another thread: 908", fact{"cuda", runtime.Global, "end-from-other-thread", "EndCapture", 908, runtime.ClassWrongThread, active}),
		Entry("RELAXED capture ended on another thread: allowed", fact{"cuda", runtime.Relaxed, "end-from-other-thread", "EndCapture", 0, "", none}),
		// A synchronous copy is legacy-stream work: 906 during any capture, whatever the modes (measured).
		Entry("write by the capturing thread, GLOBAL: 906 (measured)", fact{"cuda", runtime.Global, "caller-began-capture", "Write", 906, runtime.ClassCaptureImplicit, invalidated}),
		Entry("read by the capturing thread, THREAD_LOCAL: 906 (measured)", fact{"cuda", runtime.ThreadLocal, "caller-began-capture", "Read", 906, runtime.ClassCaptureImplicit, invalidated}),
		Entry("write by the capturing thread, RELAXED: 906 (measured)", fact{"cuda", runtime.Relaxed, "caller-began-capture", "Write", 906, runtime.ClassCaptureImplicit, invalidated}),
		Entry("read by the capturing thread, RELAXED: 906 (measured)", fact{"cuda", runtime.Relaxed, "caller-began-capture", "Read", 906, runtime.ClassCaptureImplicit, invalidated}),
		Entry("write by another thread, GLOBAL: 906 (measured)", fact{"cuda", runtime.Global, "other-thread-began-capture", "Write", 906, runtime.ClassCaptureImplicit, invalidated}),
		Entry("write by another thread, THREAD_LOCAL: 906 (measured)", fact{"cuda", runtime.ThreadLocal, "other-thread-began-capture", "Write", 906, runtime.ClassCaptureImplicit, invalidated}),
		Entry("read by another thread, RELAXED: 906 (measured)", fact{"cuda", runtime.Relaxed, "other-thread-began-capture", "Read", 906, runtime.ClassCaptureImplicit, invalidated}),
		Entry("cuMemAlloc by the capturing thread, GLOBAL: 900", fact{"cuda", runtime.Global, "caller-began-capture", "Malloc", 900, runtime.ClassCaptureUnsupported, invalidated}),
		Entry("cuMemAlloc by another thread, GLOBAL: 900", fact{"cuda", runtime.Global, "other-thread-began-capture", "Malloc", 900, runtime.ClassCaptureUnsupported, invalidated}),
		Entry("cuMemAlloc by another thread, THREAD_LOCAL: allowed", fact{"cuda", runtime.ThreadLocal, "other-thread-began-capture", "Malloc", 0, "", active}),
		Entry("cuMemFree by the capturing thread, THREAD_LOCAL: 900 (verify)", fact{"cuda", runtime.ThreadLocal, "caller-began-capture", "Free", 900, runtime.ClassCaptureUnsupported, invalidated}),
		Entry("work enqueued into an invalidated capture: 901", fact{"cuda", runtime.Global, "capture-invalidated", "Fill", 901, runtime.ClassCaptureInvalidated, invalidated}),
		Entry("end of an invalidated capture: 901, no graph", fact{"cuda", runtime.Global, "capture-invalidated", "EndCapture", 901, runtime.ClassCaptureInvalidated, none}),
		Entry("capture on the legacy stream: 900 (measured)", fact{"cuda", runtime.Global, "default-stream", "BeginCapture", 900, runtime.ClassCaptureUnsupported, none}),
		Entry("work on a stream outside the capture: runs", fact{"cuda", runtime.Global, "stream-outside-capture", "Copy", 0, "", active}),
		Entry("replay after a re-base: no error", fact{"cuda", runtime.Global, "graph-range-stale", "Launch", 0, "", none}),
		Entry("replay over an allocation of 4 KiB freed with cuMemFree: silent (measured)", fact{"cuda", runtime.Global, "graph-range-freed", "Launch", 0, "", none}),
		Entry("replay over an allocation of 2 MiB freed with cuMemFree: 700 (measured)", fact{"cuda", runtime.Global, "graph-range-freed, 2 MiB", "Launch", 700, runtime.ClassIllegalAddress, none}),
		Entry("pageable copy on the capturing stream: captured (verify)", fact{"cuda", runtime.Relaxed, "pageable-copy-in-capture", "Copy", 0, "", active}),
		Entry("work on the legacy stream during a capture of a blocking stream: 906", fact{"cuda", runtime.Relaxed, "default-stream-during-blocking-capture", "Fill", 906, runtime.ClassCaptureImplicit, invalidated}),
		Entry("work on the legacy stream during a capture of non-blocking streams: runs", fact{"cuda", runtime.Global, "default-stream-during-capture", "Fill", 0, "", active}),
		Entry("a synchronous copy during a capture of a blocking stream: 906", fact{"cuda", runtime.Relaxed, "blocking-capture", "Write", 906, runtime.ClassCaptureImplicit, invalidated}),
		Entry("a synchronous copy during a capture of non-blocking streams: runs", fact{"cuda", runtime.Global, "any-capture", "Write", 0, "", active}),
	)
})

var _ = Describe("a capture after a rejection", func() {
	var x, y runtime.Ptr
	var early runtime.Event

	// sequence begins a GLOBAL capture on s, fills x, provokes three rejections, fills y, and ends.
	sequence := func(d *sim.Device, s runtime.Stream) (runtime.Graph, []error, error) {
		GinkgoHelper()
		x, y = malloc(d, 1*KiB), malloc(d, 1*KiB)
		early = newEvent(d)
		side := newStream(d)
		Expect(d.Fill(main, side, x, 0x33)).To(Succeed())
		Expect(d.Record(main, early, side)).To(Succeed())
		Expect(d.BeginCapture(main, s, runtime.Global)).To(Succeed())
		var errs []error
		errs = append(errs, d.Fill(main, s, x, 1))
		errs = append(errs, d.SyncStream(main, s))
		errs = append(errs, d.Wait(main, s, early))
		errs = append(errs, d.Write(main, y, filled(y.Bytes, 0x77)))
		errs = append(errs, d.Fill(main, s, y, 2))
		g, err := d.EndCapture(main, s)
		return g, errs, err
	}

	It("cann: the capture stays active, the end returns a graph, the rejected calls did nothing", func() {
		d := onProfile("cann")
		s := newStream(d)
		g, errs, err := sequence(d, s)
		Expect(errs[0]).NotTo(HaveOccurred())
		Expect(expectError(errs[1], 107027, runtime.ClassCapturedStream).Invalidated).To(BeFalse())
		Expect(expectError(errs[2], 107024, runtime.ClassCaptureDependency).Invalidated).To(BeFalse())
		Expect(expectError(errs[3], 107030, runtime.ClassCaptureMode).Invalidated).To(BeFalse())
		Expect(errs[4]).NotTo(HaveOccurred())
		Expect(err).NotTo(HaveOccurred())
		Expect(g).NotTo(BeZero())
		Expect(d.GraphDeps(g)).To(Equal([][]int{{}, {0}}), "the dropped wait added no dependency")
		Expect(read(d, y)).To(Equal(filled(y.Bytes, 0)), "the rejected write wrote nothing")
		Expect(d.Launch(main, g, s)).To(Succeed())
		Expect(read(d, x)).To(Equal(filled(x.Bytes, 1)))
		Expect(read(d, y)).To(Equal(filled(y.Bytes, 2)))
	})

	It("cuda: the first rejection invalidates, later work fails 901, the end fails 901 with no graph", func() {
		d := onProfile("cuda")
		s := newStream(d)
		g, errs, err := sequence(d, s)
		Expect(errs[0]).NotTo(HaveOccurred())
		Expect(expectError(errs[1], 900, runtime.ClassCaptureUnsupported).Invalidated).To(BeTrue())
		Expect(expectError(errs[2], 901, runtime.ClassCaptureInvalidated).Invalidated).To(BeFalse())
		Expect(expectError(errs[3], 906, runtime.ClassCaptureImplicit).Invalidated).To(BeFalse(), "already invalidated")
		expectError(errs[4], 901, runtime.ClassCaptureInvalidated)
		expectError(err, 901, runtime.ClassCaptureInvalidated)
		Expect(g).To(BeZero())
		Expect(status(d, s)).To(Equal(runtime.CaptureNone), "the failed end terminated the capture")
		c := d.Counters()
		Expect(c.LiveGraphs).To(BeZero())
		Expect(c.CapturesDone).To(BeZero())
		Expect(d.Fill(main, s, y, 9)).To(Succeed())
		Expect(read(d, y)).To(Equal(filled(y.Bytes, 9)), "the stream runs eagerly again")
	})

	It("cuda: an allocation refused during a GLOBAL capture allocates nothing", func() {
		d := onProfile("cuda")
		s := newStream(d)
		before := d.Counters()
		Expect(d.BeginCapture(main, s, runtime.Global)).To(Succeed())
		_, err := d.Malloc(main, 4*KiB)
		Expect(expectError(err, 900, runtime.ClassCaptureUnsupported).Invalidated).To(BeTrue())
		after := d.Counters()
		Expect(after.LiveAllocs).To(Equal(before.LiveAllocs))
		Expect(after.Mallocs).To(Equal(before.Mallocs))
		info, err := d.CaptureInfo(main, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Status).To(Equal(runtime.CaptureInvalidated))
	})

	It("cuda: a synchronous copy fails 906 in every capture mode, from either thread, in every interaction mode, and writes nothing", func() {
		for _, m := range runtime.CaptureModes() {
			for _, began := range []runtime.Thread{main, other} {
				for _, caller := range []runtime.Thread{main, other} {
					for _, cm := range runtime.CaptureModes() {
						at := fmt.Sprintf("%v capture begun on %v, copy by %v in interaction mode %v", m, began, caller, cm)
						d := onProfile("cuda")
						s, x := newStream(d), malloc(d, 1*KiB)
						Expect(d.Write(main, x, filled(x.Bytes, 1))).To(Succeed())
						Expect(d.BeginCapture(began, s, m)).To(Succeed())
						_, err := d.ExchangeCaptureMode(caller, cm)
						Expect(err).NotTo(HaveOccurred())
						e := expectError(d.Write(caller, x, filled(x.Bytes, 2)), 906, runtime.ClassCaptureImplicit)
						Expect(e.Invalidated).To(BeTrue(), at)
						Expect(status(d, s)).To(Equal(runtime.CaptureInvalidated), at)
						e = expectError(d.Read(caller, make([]byte, x.Bytes), x), 906, runtime.ClassCaptureImplicit)
						Expect(e.Invalidated).To(BeFalse(), "%s: already invalidated", at)
						_, err = d.EndCapture(began, s)
						expectError(err, 901, runtime.ClassCaptureInvalidated)
						Expect(read(d, x)).To(Equal(filled(x.Bytes, 1)), "%s: the rejected write wrote nothing", at)
					}
				}
			}
		}
	})

	It("cuda: a thread in RELAXED interaction mode may allocate during a GLOBAL capture, but its synchronous copy still fails 906", func() {
		d := onProfile("cuda")
		s := newStream(d)
		Expect(d.BeginCapture(main, s, runtime.Global)).To(Succeed())
		_, err := d.ExchangeCaptureMode(other, runtime.Relaxed)
		Expect(err).NotTo(HaveOccurred())
		p, err := d.Malloc(other, 4*KiB)
		Expect(err).NotTo(HaveOccurred(), "the mode rule for cuMemAlloc lets a relaxed thread allocate")
		Expect(status(d, s)).To(Equal(runtime.CaptureActive))
		e := expectError(d.Write(other, p, filled(p.Bytes, 1)), 906, runtime.ClassCaptureImplicit)
		Expect(e.Invalidated).To(BeTrue())
	})

	It("cann: a failed end on a non-origin stream leaves the capture to be ended properly", func() {
		d := onProfile("cann")
		s, side := newStream(d), newStream(d)
		e, back := newEvent(d), newEvent(d)
		Expect(d.BeginCapture(main, s, runtime.Global)).To(Succeed())
		Expect(d.Record(main, e, s)).To(Succeed())
		Expect(d.Wait(main, side, e)).To(Succeed())
		_, err := d.EndCapture(main, side)
		expectError(err, 107036, runtime.ClassCaptureUnmatched)
		Expect(d.Record(main, back, side)).To(Succeed())
		Expect(d.Wait(main, s, back)).To(Succeed())
		g, err := d.EndCapture(main, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(g).NotTo(BeZero())
	})
})

var _ = Describe("the embedded profiles", func() {
	It("are cann and cuda, and each names every class it uses validly", func() {
		Expect(sim.Profiles()).To(Equal([]string{"cann", "cuda"}))
		for _, name := range sim.Profiles() {
			p, err := sim.LoadProfile(name)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.Name).To(Equal(name))
			for _, r := range p.Rules {
				Expect(slices.Contains([]string{"measured", "source", "doc", "verify"}, r.Source)).To(BeTrue())
				if !r.Allow {
					Expect(runtime.ValidClass(r.Class)).To(BeTrue())
				}
			}
		}
	})
})
