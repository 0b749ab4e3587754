package sim_test

import (
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/device/sim/situations"
)

// stage prepares d for one situation, with the simulator's own invalidation of a capture, so that
// the rules on invalidated captures are exercised on every profile.
func stage(d *sim.Device, mode device.CaptureMode, when string) *situations.Stage {
	GinkgoHelper()
	st := situations.New(d, mode, situations.Flags(when))
	st.Invalidate = func(s device.Stream) { Expect(d.InvalidateCapture(s)).To(BeTrue()) }
	return st
}

// variants are stage set-ups that are not a condition's, for the facts below.
var variants = map[string]func(st *situations.Stage){
	// graph-range-freed over an allocation of 2 MiB.
	"graph-range-freed, 2 MiB": func(st *situations.Stage) {
		st.X = st.Malloc(2 * MiB)
		situations.ByCondition["graph-range-freed"](st)
	},
}

// ruleEntries makes one table entry per profile rule, call and capture mode.
func ruleEntries() []TableEntry {
	var out []TableEntry
	for _, name := range sim.Profiles() {
		p, err := sim.LoadProfile(name)
		if err != nil {
			out = append(out, Entry(fmt.Sprintf("%s loads", name), name, -1, "", device.Global, device.Global))
			continue
		}
		for i, r := range p.Rules {
			verdict := "allowed"
			if !r.Allow {
				verdict = fmt.Sprintf("%d %s", r.Code, r.Class)
			}
			for _, c := range situations.Cases(r) {
				out = append(out, Entry(fmt.Sprintf("%s rule %d [%s, %s, %v, caller %v]: %s -> %s", name, i+1, r.Source, c.Call, c.Mode, c.CallerMode, r.Situation, verdict),
					name, i, c.Call, c.Mode, c.CallerMode))
			}
		}
	}
	return out
}

var _ = Describe("profile rules, as the device applies them", func() {
	DescribeTable("every rule of every profile decides its situation",
		func(profile string, index int, call string, mode, callerMode device.CaptureMode) {
			p, err := sim.LoadProfile(profile)
			Expect(err).NotTo(HaveOccurred())
			r := p.Rules[index]
			d := onProfile(profile)
			st := stage(d, mode, r.When)
			st.Meet(r, callerMode)
			err = st.Do(call)

			if st.Also != 0 {
				// Another capture the call concerns: invalidated by a rule that says so, else as it was.
				want := device.CaptureActive
				if !r.Allow && r.Invalidates {
					want = device.CaptureInvalidated
				}
				Expect(status(d, st.Also)).To(Equal(want), "the other capture after the call")
			}
			if r.Allow {
				Expect(err).NotTo(HaveOccurred(), "the platform lets %s through: %s", call, r.Situation)
				return
			}
			if r.Crash != "" {
				// The platform's process dies in the call: an error naming the signal, the device
				// gone with the process, and the capture the call ends over with no graph.
				e := expectError(err, 0, device.ClassDeviceLost)
				Expect(e.Crash).To(Equal(r.Crash))
				Expect(e.Error()).To(ContainSubstring("crashes the process (signal " + r.Crash + ")"))
				Expect(e.Detail).To(ContainSubstring(r.Situation))
				if st.Watch != 0 && call == "EndCapture" {
					Expect(status(d, st.Watch)).To(Equal(device.CaptureNone))
				}
				return
			}
			e := expectError(err, r.Code, r.Class)
			Expect(e.Name).To(Equal(r.Name))
			Expect(e.Op).To(Equal(call))
			Expect(e.Detail).To(ContainSubstring(r.Situation))
			Expect(e.Invalidated).To(Equal(r.Invalidates && st.WasStatus == device.CaptureActive))
			if st.Watch == 0 {
				return
			}
			want := st.WasStatus
			switch {
			case r.EndsCapture:
				want = device.CaptureNone
			case r.Invalidates:
				want = device.CaptureInvalidated
			}
			Expect(status(d, st.Watch)).To(Equal(want), "capture state after the rejection")
		},
		ruleEntries(),
	)

	It("has a test situation for every condition the simulator knows", func() {
		for c := range situations.ByCondition {
			Expect(sim.Conditions()).To(ContainElement(c))
		}
		for c := range variants {
			Expect(sim.Conditions()).NotTo(ContainElement(c), "a variant is no condition")
		}
		for _, c := range situations.NonBlocking {
			Expect(sim.Conditions()).To(ContainElement(c))
		}
		for _, c := range sim.Conditions() {
			Expect(situations.ByCondition).To(HaveKey(c))
			Expect(sim.ConditionDoc(c)).NotTo(BeEmpty())
		}
	})
})

// fact is one row of docs/platforms.md, written out by hand: the profiles must agree.
type fact struct {
	profile string
	mode    device.CaptureMode
	when    string // the stage situation
	call    string
	code    int // 0: allowed
	class   device.Class
	after   device.CaptureStatus // the watched capture's state after the call
}

func checkFact(f fact) {
	d := onProfile(f.profile)
	st := stage(d, f.mode, f.when)
	setup, ok := situations.ByCondition[f.when]
	if !ok {
		setup = variants[f.when]
	}
	setup(st)
	err := st.Do(f.call)
	if f.code == 0 {
		Expect(err).NotTo(HaveOccurred())
	} else {
		e := expectError(err, f.code, f.class)
		Expect(e.Invalidated).To(Equal(f.after == device.CaptureInvalidated && st.WasStatus == device.CaptureActive))
	}
	if st.Watch != 0 {
		Expect(status(d, st.Watch)).To(Equal(f.after))
	}
}

const (
	active      = device.CaptureActive
	invalidated = device.CaptureInvalidated
	none        = device.CaptureNone
)

var _ = Describe("docs/platforms.md, row by row", func() {
	DescribeTable("cann: rejections leave the capture active, but for an event crossing two captures",
		checkFact,
		// hicann/runtime: CaptureEventWait's RT_ERROR_STREAM_CAPTURE_CONFLICT, then TerminateCapture
		// of both captures; an invalidated capture takes work and fails its end 507903.
		Entry("wait on an event of another capture: 107032, both invalidated", fact{"cann", device.Global, "event-in-other-capture", "Wait", 107032, device.ClassCaptureConflict, invalidated}),
		Entry("record an event of another capture: moves, allowed (verify)", fact{"cann", device.Relaxed, "event-in-other-capture", "Record", 0, "", active}),
		Entry("work into an invalidated capture: captured", fact{"cann", device.Global, "capture-invalidated", "Fill", 0, "", invalidated}),
		Entry("end of an invalidated capture: 507903, no model", fact{"cann", device.Global, "capture-invalidated", "EndCapture", 507903, device.ClassCaptureInvalidated, none}),
		Entry("sync the capturing stream: 107027", fact{"cann", device.Global, "stream-capturing", "SyncStream", 107027, device.ClassCapturedStream, active}),
		Entry("sync the device while capturing: 107027", fact{"cann", device.Relaxed, "any-capture", "SyncDevice", 107027, device.ClassCapturedStream, active}),
		Entry("query an event recorded in the capture: 107028", fact{"cann", device.Global, "event-captured", "QueryEvent", 107028, device.ClassCapturedEvent, active}),
		Entry("sync an event recorded in the capture: 107028", fact{"cann", device.Relaxed, "event-captured", "SyncEvent", 107028, device.ClassCapturedEvent, active}),
		Entry("wait on an event recorded before the capture: 107024", fact{"cann", device.Global, "event-recorded-outside", "Wait", 107024, device.ClassCaptureDependency, active}),
		Entry("end with an unjoined fork: 107025", fact{"cann", device.Global, "fork-unjoined", "EndCapture", 107025, device.ClassCaptureUnjoined, none}),
		Entry("end on a stream that is not the origin: 107036", fact{"cann", device.Global, "stream-not-origin", "EndCapture", 107036, device.ClassCaptureUnmatched, active}),
		Entry("end on a stream that is not capturing: 107029", fact{"cann", device.Global, "stream-not-capturing", "EndCapture", 107029, device.ClassCaptureNotCapturing, none}),
		Entry("GLOBAL capture ended on another thread: 107038", fact{"cann", device.Global, "end-from-other-thread", "EndCapture", 107038, device.ClassWrongThread, none}),
		Entry("THREAD_LOCAL capture ended on another thread: 107038", fact{"cann", device.ThreadLocal, "end-from-other-thread", "EndCapture", 107038, device.ClassWrongThread, none}),
		Entry("RELAXED capture ended on another thread: allowed", fact{"cann", device.Relaxed, "end-from-other-thread", "EndCapture", 0, "", none}),
		Entry("write by the capturing thread, GLOBAL: 107030", fact{"cann", device.Global, "caller-began-capture", "Write", 107030, device.ClassCaptureMode, active}),
		Entry("read by the capturing thread, THREAD_LOCAL: 107030", fact{"cann", device.ThreadLocal, "caller-began-capture", "Read", 107030, device.ClassCaptureMode, active}),
		Entry("write by the capturing thread, RELAXED: allowed", fact{"cann", device.Relaxed, "caller-began-capture", "Write", 0, "", active}),
		Entry("write by another thread, GLOBAL: 107030", fact{"cann", device.Global, "other-thread-began-capture", "Write", 107030, device.ClassCaptureMode, active}),
		Entry("write by another thread, THREAD_LOCAL: allowed", fact{"cann", device.ThreadLocal, "other-thread-began-capture", "Write", 0, "", active}),
		Entry("read by another thread, RELAXED: allowed", fact{"cann", device.Relaxed, "other-thread-began-capture", "Read", 0, "", active}),
		Entry("malloc during a GLOBAL capture: unchecked", fact{"cann", device.Global, "caller-began-capture", "Malloc", 0, "", active}),
		Entry("free during a GLOBAL capture: unchecked", fact{"cann", device.Global, "caller-began-capture", "Free", 0, "", active}),
		Entry("capture on the default stream: 100000", fact{"cann", device.Global, "default-stream", "BeginCapture", 100000, device.ClassInvalidValue, none}),
		Entry("work on a stream outside the capture: runs", fact{"cann", device.Global, "stream-outside-capture", "Fill", 0, "", active}),
		Entry("replay after a re-base: no error", fact{"cann", device.Global, "graph-range-stale", "Launch", 0, "", none}),
		Entry("replay over memory returned to the driver: 507011 (verify)", fact{"cann", device.Global, "graph-range-freed", "Launch", 507011, device.ClassIllegalAddress, none}),
		Entry("replay over 2 MiB returned to the driver: 507011 (verify)", fact{"cann", device.Global, "graph-range-freed, 2 MiB", "Launch", 507011, device.ClassIllegalAddress, none}),
		Entry("end while the thread's other GLOBAL capture is in progress: a graph", fact{"cann", device.Global, "caller-began-other-capture", "EndCapture", 0, "", none}),
		Entry("end while another thread's GLOBAL capture is in progress: a graph", fact{"cann", device.Global, "other-thread-began-other-capture", "EndCapture", 0, "", none}),
		Entry("pageable copy on the capturing stream: 107000, not invalidated", fact{"cann", device.Relaxed, "pageable-copy-in-capture", "Copy", 107000, device.ClassInvalidValue, active}),
		Entry("work on the default stream during a capture: runs", fact{"cann", device.Global, "default-stream-during-capture", "Fill", 0, "", active}),
		Entry("the default stream joining a capture: 107031", fact{"cann", device.Global, "default-stream-joins-capture", "Wait", 107031, device.ClassCaptureImplicit, active}),
		Entry("aclrtMallocHost during a GLOBAL capture: unchecked", fact{"cann", device.Global, "caller-began-capture", "AllocHost", 0, "", active}),
		Entry("query an uncaptured event by the capturing thread, GLOBAL: unchecked", fact{"cann", device.Global, "caller-began-capture", "QueryEvent", 0, "", active}),
		Entry("query an uncaptured event by another thread, GLOBAL: unchecked", fact{"cann", device.Global, "other-thread-began-capture", "QueryEvent", 0, "", active}),
	)

	DescribeTable("cuda: 900/902/903/905/906/907 invalidate",
		checkFact,
		Entry("sync the capturing stream: 900", fact{"cuda", device.Global, "stream-capturing", "SyncStream", 900, device.ClassCaptureUnsupported, invalidated}),
		Entry("sync the device while capturing: 900", fact{"cuda", device.Relaxed, "any-capture", "SyncDevice", 900, device.ClassCaptureUnsupported, invalidated}),
		Entry("query an event recorded in the capture: 907, invalidated (measured)", fact{"cuda", device.Global, "event-captured", "QueryEvent", 907, device.ClassCapturedEvent, invalidated}),
		Entry("sync an event recorded in a RELAXED capture: 907, invalidated (measured)", fact{"cuda", device.Relaxed, "event-captured", "SyncEvent", 907, device.ClassCapturedEvent, invalidated}),
		Entry("wait on an event recorded before the capture: 905 (verify)", fact{"cuda", device.Global, "event-recorded-outside", "Wait", 905, device.ClassCaptureDependency, invalidated}),
		Entry("wait on an event of another capture: 902", fact{"cuda", device.Global, "event-in-other-capture", "Wait", 902, device.ClassCaptureConflict, invalidated}),
		Entry("end with an unjoined fork: 904", fact{"cuda", device.Global, "fork-unjoined", "EndCapture", 904, device.ClassCaptureUnjoined, none}),
		Entry("end on a stream that is not the origin: 903, invalidated (measured)", fact{"cuda", device.Global, "stream-not-origin", "EndCapture", 903, device.ClassCaptureUnmatched, invalidated}),
		Entry("end on a stream that is not capturing: 401 (measured)", fact{"cuda", device.Global, "stream-not-capturing", "EndCapture", 401, device.ClassCaptureConflict, none}),
		Entry("GLOBAL capture ended on another thread: 908", fact{"cuda", device.Global, "end-from-other-thread", "EndCapture", 908, device.ClassWrongThread, active}),
		Entry("RELAXED capture ended on another thread: allowed", fact{"cuda", device.Relaxed, "end-from-other-thread", "EndCapture", 0, "", none}),
		// A synchronous copy is legacy-stream work: 906 during any capture, whatever the modes
		// (measured).
		Entry("write by the capturing thread, GLOBAL: 906 (measured)", fact{"cuda", device.Global, "caller-began-capture", "Write", 906, device.ClassCaptureImplicit, invalidated}),
		Entry("read by the capturing thread, THREAD_LOCAL: 906 (measured)", fact{"cuda", device.ThreadLocal, "caller-began-capture", "Read", 906, device.ClassCaptureImplicit, invalidated}),
		Entry("write by the capturing thread, RELAXED: 906 (measured)", fact{"cuda", device.Relaxed, "caller-began-capture", "Write", 906, device.ClassCaptureImplicit, invalidated}),
		Entry("read by the capturing thread, RELAXED: 906 (measured)", fact{"cuda", device.Relaxed, "caller-began-capture", "Read", 906, device.ClassCaptureImplicit, invalidated}),
		Entry("write by another thread, GLOBAL: 906 (measured)", fact{"cuda", device.Global, "other-thread-began-capture", "Write", 906, device.ClassCaptureImplicit, invalidated}),
		Entry("write by another thread, THREAD_LOCAL: 906 (measured)", fact{"cuda", device.ThreadLocal, "other-thread-began-capture", "Write", 906, device.ClassCaptureImplicit, invalidated}),
		Entry("read by another thread, RELAXED: 906 (measured)", fact{"cuda", device.Relaxed, "other-thread-began-capture", "Read", 906, device.ClassCaptureImplicit, invalidated}),
		Entry("cuMemAlloc by the capturing thread, GLOBAL: 900", fact{"cuda", device.Global, "caller-began-capture", "Malloc", 900, device.ClassCaptureUnsupported, invalidated}),
		Entry("cuMemAlloc by another thread, GLOBAL: 900", fact{"cuda", device.Global, "other-thread-began-capture", "Malloc", 900, device.ClassCaptureUnsupported, invalidated}),
		Entry("cuMemAlloc by another thread, THREAD_LOCAL: allowed", fact{"cuda", device.ThreadLocal, "other-thread-began-capture", "Malloc", 0, "", active}),
		Entry("cuMemFree by the capturing thread, THREAD_LOCAL: 900 (verify)", fact{"cuda", device.ThreadLocal, "caller-began-capture", "Free", 900, device.ClassCaptureUnsupported, invalidated}),
		// cuEventQuery and cuEventSynchronize on an event not recorded in the capture: potentially
		// unsafe calls, by the interaction modes (doc; pytorch#104555).
		Entry("query an uncaptured event by the capturing thread, GLOBAL: 900", fact{"cuda", device.Global, "caller-began-capture", "QueryEvent", 900, device.ClassCaptureUnsupported, invalidated}),
		Entry("sync an uncaptured event by the capturing thread, THREAD_LOCAL: 900", fact{"cuda", device.ThreadLocal, "caller-began-capture", "SyncEvent", 900, device.ClassCaptureUnsupported, invalidated}),
		Entry("query an uncaptured event by the capturing thread, RELAXED: allowed", fact{"cuda", device.Relaxed, "caller-began-capture", "QueryEvent", 0, "", active}),
		Entry("query an uncaptured event by another thread, GLOBAL: 900", fact{"cuda", device.Global, "other-thread-began-capture", "QueryEvent", 900, device.ClassCaptureUnsupported, invalidated}),
		Entry("sync an uncaptured event by another thread, THREAD_LOCAL: allowed", fact{"cuda", device.ThreadLocal, "other-thread-began-capture", "SyncEvent", 0, "", active}),
		Entry("work enqueued into an invalidated capture: 901", fact{"cuda", device.Global, "capture-invalidated", "Fill", 901, device.ClassCaptureInvalidated, invalidated}),
		Entry("end of an invalidated capture: 901, no graph", fact{"cuda", device.Global, "capture-invalidated", "EndCapture", 901, device.ClassCaptureInvalidated, none}),
		Entry("capture on the legacy stream: 900 (measured)", fact{"cuda", device.Global, "default-stream", "BeginCapture", 900, device.ClassCaptureUnsupported, none}),
		Entry("work on a stream outside the capture: runs", fact{"cuda", device.Global, "stream-outside-capture", "Copy", 0, "", active}),
		Entry("replay after a re-base: no error", fact{"cuda", device.Global, "graph-range-stale", "Launch", 0, "", none}),
		Entry("replay over an allocation of 4 KiB freed with cuMemFree: silent (measured)", fact{"cuda", device.Global, "graph-range-freed", "Launch", 0, "", none}),
		Entry("replay over an allocation of 2 MiB freed with cuMemFree: 700 (measured)", fact{"cuda", device.Global, "graph-range-freed, 2 MiB", "Launch", 700, device.ClassIllegalAddress, none}),
		Entry("pageable copy on the capturing stream: captured (verify)", fact{"cuda", device.Relaxed, "pageable-copy-in-capture", "Copy", 0, "", active}),
		Entry("work on the legacy stream during a capture of a blocking stream: 906", fact{"cuda", device.Relaxed, "default-stream-during-blocking-capture", "Fill", 906, device.ClassCaptureImplicit, invalidated}),
		Entry("work on the legacy stream during a capture of non-blocking streams: runs", fact{"cuda", device.Global, "default-stream-during-capture", "Fill", 0, "", active}),
		Entry("a synchronous copy during a capture of a blocking stream: 906", fact{"cuda", device.Relaxed, "blocking-capture", "Write", 906, device.ClassCaptureImplicit, invalidated}),
		Entry("a synchronous copy during a capture of non-blocking streams: runs", fact{"cuda", device.Global, "any-capture", "Write", 0, "", active}),
	)
})

var _ = Describe("a capture after a rejection", func() {
	var x, y device.Ptr
	var early device.Event

	// sequence begins a GLOBAL capture on s, fills x, provokes three rejections, fills y, and ends.
	sequence := func(d *sim.Device, s device.Stream) (device.Graph, []error, error) {
		GinkgoHelper()
		x, y = malloc(d, 1*KiB), malloc(d, 1*KiB)
		early = newEvent(d)
		side := newStream(d)
		Expect(d.Fill(main, side, x, 0x33)).To(Succeed())
		Expect(d.Record(main, early, side)).To(Succeed())
		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
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
		Expect(expectError(errs[1], 107027, device.ClassCapturedStream).Invalidated).To(BeFalse())
		Expect(expectError(errs[2], 107024, device.ClassCaptureDependency).Invalidated).To(BeFalse())
		Expect(expectError(errs[3], 107030, device.ClassCaptureMode).Invalidated).To(BeFalse())
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
		Expect(expectError(errs[1], 900, device.ClassCaptureUnsupported).Invalidated).To(BeTrue())
		Expect(expectError(errs[2], 901, device.ClassCaptureInvalidated).Invalidated).To(BeFalse())
		Expect(expectError(errs[3], 906, device.ClassCaptureImplicit).Invalidated).To(BeFalse(), "already invalidated")
		expectError(errs[4], 901, device.ClassCaptureInvalidated)
		expectError(err, 901, device.ClassCaptureInvalidated)
		Expect(g).To(BeZero())
		Expect(status(d, s)).To(Equal(device.CaptureNone), "the failed end terminated the capture")
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
		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		_, err := d.Malloc(main, 4*KiB)
		Expect(expectError(err, 900, device.ClassCaptureUnsupported).Invalidated).To(BeTrue())
		after := d.Counters()
		Expect(after.LiveAllocs).To(Equal(before.LiveAllocs))
		Expect(after.Mallocs).To(Equal(before.Mallocs))
		info, err := d.CaptureInfo(main, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Status).To(Equal(device.CaptureInvalidated))
	})

	It("cuda: a synchronous copy fails 906 in every capture mode, from either thread, in every interaction mode, and writes nothing", func() {
		for _, m := range device.CaptureModes() {
			for _, began := range []device.Thread{main, other} {
				for _, caller := range []device.Thread{main, other} {
					for _, cm := range device.CaptureModes() {
						at := fmt.Sprintf("%v capture begun on %v, copy by %v in interaction mode %v", m, began, caller, cm)
						d := onProfile("cuda")
						s, x := newStream(d), malloc(d, 1*KiB)
						Expect(d.Write(main, x, filled(x.Bytes, 1))).To(Succeed())
						Expect(d.BeginCapture(began, s, m)).To(Succeed())
						_, err := d.ExchangeCaptureMode(caller, cm)
						Expect(err).NotTo(HaveOccurred())
						e := expectError(d.Write(caller, x, filled(x.Bytes, 2)), 906, device.ClassCaptureImplicit)
						Expect(e.Invalidated).To(BeTrue(), at)
						Expect(status(d, s)).To(Equal(device.CaptureInvalidated), at)
						e = expectError(d.Read(caller, make([]byte, x.Bytes), x), 906, device.ClassCaptureImplicit)
						Expect(e.Invalidated).To(BeFalse(), "%s: already invalidated", at)
						_, err = d.EndCapture(began, s)
						expectError(err, 901, device.ClassCaptureInvalidated)
						Expect(read(d, x)).To(Equal(filled(x.Bytes, 1)), "%s: the rejected write wrote nothing", at)
					}
				}
			}
		}
	})

	It("cuda: a thread in RELAXED interaction mode may allocate during a GLOBAL capture, but its synchronous copy still fails 906", func() {
		d := onProfile("cuda")
		s := newStream(d)
		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		_, err := d.ExchangeCaptureMode(other, device.Relaxed)
		Expect(err).NotTo(HaveOccurred())
		p, err := d.Malloc(other, 4*KiB)
		Expect(err).NotTo(HaveOccurred(), "the mode rule for cuMemAlloc lets a relaxed thread allocate")
		Expect(status(d, s)).To(Equal(device.CaptureActive))
		e := expectError(d.Write(other, p, filled(p.Bytes, 1)), 906, device.ClassCaptureImplicit)
		Expect(e.Invalidated).To(BeTrue())
	})

	It("cann: a failed end on a non-origin stream leaves the capture to be ended properly", func() {
		d := onProfile("cann")
		s, side := newStream(d), newStream(d)
		e, back := newEvent(d), newEvent(d)
		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		Expect(d.Record(main, e, s)).To(Succeed())
		Expect(d.Wait(main, side, e)).To(Succeed())
		_, err := d.EndCapture(main, side)
		expectError(err, 107036, device.ClassCaptureUnmatched)
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
				if !r.Allow && r.Crash == "" {
					Expect(device.ValidClass(r.Class)).To(BeTrue())
				}
			}
		}
	})
})

var _ = Describe("an event wait across two captures", func() {
	// hicann/runtime ApiImpl::StreamWaitEvent: 107032 and TerminateCapture of both captures, whose
	// ends then fail (Context::StreamEndCapture); CUDA merges nothing either: 902, both invalidated.
	DescribeTable("fails both captures' ends",
		func(profile string, code, endCode int) {
			d := onProfile(profile)
			st := stage(d, device.Global, "event-in-other-capture")
			situations.ByCondition["event-in-other-capture"](st)
			expectError(st.Do("Wait"), code, device.ClassCaptureConflict)
			for _, s := range []device.Stream{st.Watch, st.Also} {
				Expect(status(d, s)).To(Equal(device.CaptureInvalidated))
				_, err := d.EndCapture(device.Main, s)
				expectError(err, endCode, device.ClassCaptureInvalidated)
				Expect(status(d, s)).To(Equal(device.CaptureNone))
			}
		},
		Entry("cann: 107032, then 507903 at each end", "cann", 107032, 507903),
		Entry("cuda: 902, then 901 at each end", "cuda", 902, 901),
	)
})

var _ = Describe("the end of a capture holding a copy from memory freed during it", func() {
	// On the H200 the driver crashed the process inside cuGraphInstantiateWithFlags (SIGSEGV).
	It("crashes on cuda: an error naming the signal, the capture over with no graph", func() {
		d := onProfile("cuda")
		st := stage(d, device.Relaxed, "capture-copy-freed")
		situations.ByCondition["capture-copy-freed"](st)
		_, err := d.EndCapture(device.Main, st.Watch)
		e := expectError(err, 0, device.ClassDeviceLost)
		Expect(e.Crash).To(Equal("SIGSEGV"))
		Expect(status(d, st.Watch)).To(Equal(device.CaptureNone))
	})

	It("makes the graph on cuda once the memory is allocated again, and on cann", func() {
		d := onProfile("cuda")
		st := stage(d, device.Relaxed, "capture-copy-freed")
		situations.ByCondition["capture-copy-freed"](st)
		again, err := d.Malloc(device.Other, st.X.Bytes) // LIFO: the freed block, at the same address
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(Equal(st.X))
		_, err = d.EndCapture(device.Main, st.Watch)
		Expect(err).NotTo(HaveOccurred())

		d = onProfile("cann")
		st = stage(d, device.Relaxed, "capture-copy-freed")
		situations.ByCondition["capture-copy-freed"](st)
		_, err = d.EndCapture(device.Main, st.Watch)
		Expect(err).NotTo(HaveOccurred())
	})
})
