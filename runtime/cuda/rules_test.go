//go:build cgo

package cuda_test

import (
	"context"
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/sim"
)

// The fake libcuda.so.1 through the binding against the simulator on the cuda profile, rule by
// rule: every rule, for each call, capture mode and caller mode it names, sets its situation up on
// both devices, makes the call on both and compares what they answer and what becomes of the
// captures, once with every stream of the situation blocking and once non-blocking. Under the
// stream kind the rule's situation needs (nonBlockingSituations) the answer must be the rule's
// own, so that every rule, allow rows included, is exercised over the fake. The situations are
// the simulator's (runtime/sim rules_test.go), over runtime.Device; the one the simulator sets up
// with its own InvalidateCapture invalidates the capture with a rule (a sync of the capturing
// stream) instead.

// ruleStage is a device prepared so that one call meets one situation; watch is the stream whose
// capture the call concerns (0 when none), also another capture's origin the call concerns.
type ruleStage struct {
	d         runtime.Device
	flags     runtime.StreamFlags // every stream the situation makes
	x, y      runtime.Ptr
	pinned    runtime.Ptr
	watch     runtime.Stream
	also      runtime.Stream
	target    runtime.Stream
	event     runtime.Event
	graph     runtime.Graph
	caller    runtime.Thread
	mode      runtime.CaptureMode
	wasStatus runtime.CaptureStatus
}

// nonBlockingSituations are the conditions whose situation is a capture of non-blocking streams
// only: on CUDA the legacy stream's rules decide the others (as in the simulator's rule specs).
var nonBlockingSituations = []string{"any-capture", "default-stream-during-capture"}

var ruleSituations = map[string]func(st *ruleStage){
	"stream-capturing":     func(st *ruleStage) { st.begin(runtime.Main) },
	"any-capture":          func(st *ruleStage) { st.begin(runtime.Main) },
	"blocking-capture":     func(st *ruleStage) { st.begin(runtime.Main) },
	"caller-began-capture": func(st *ruleStage) { st.begin(runtime.Main) },
	"other-thread-began-capture": func(st *ruleStage) {
		st.begin(runtime.Other)
	},
	"event-captured": func(st *ruleStage) {
		st.begin(runtime.Main)
		Expect(st.d.Fill(runtime.Main, st.watch, st.x, 1)).To(Succeed())
		Expect(st.d.Record(runtime.Main, st.event, st.watch)).To(Succeed())
	},
	"event-recorded-outside": func(st *ruleStage) {
		side := st.stream()
		Expect(st.d.Fill(runtime.Main, side, st.x, 1)).To(Succeed())
		Expect(st.d.Record(runtime.Main, st.event, side)).To(Succeed())
		st.begin(runtime.Main)
	},
	"event-in-other-capture": func(st *ruleStage) {
		elsewhere := st.stream()
		Expect(st.d.BeginCapture(runtime.Main, elsewhere, runtime.Relaxed)).To(Succeed())
		Expect(st.d.Record(runtime.Main, st.event, elsewhere)).To(Succeed())
		st.begin(runtime.Main)
	},
	"capture-invalidated": func(st *ruleStage) {
		st.begin(runtime.Main)
		Expect(st.d.Record(runtime.Main, st.event, st.watch)).To(Succeed())
		e, ok := runtime.AsError(st.d.SyncStream(runtime.Main, st.watch))
		Expect(ok).To(BeTrue())
		Expect(e.Invalidated).To(BeTrue(), "a sync of the capturing stream invalidates the capture")
		st.wasStatus = runtime.CaptureInvalidated
	},
	"stream-outside-capture": func(st *ruleStage) {
		st.begin(runtime.Main)
		st.target = st.stream()
		Expect(st.d.Record(runtime.Main, st.event, st.target)).To(Succeed())
	},
	"default-stream": func(st *ruleStage) { st.target = runtime.DefaultStream },
	"stream-not-capturing": func(st *ruleStage) {
		st.target = st.stream()
	},
	"stream-not-origin": func(st *ruleStage) {
		st.begin(runtime.Main)
		Expect(st.d.Record(runtime.Main, st.event, st.watch)).To(Succeed())
		st.target = st.stream()
		Expect(st.d.Wait(runtime.Main, st.target, st.event)).To(Succeed())
	},
	"end-from-other-thread": func(st *ruleStage) {
		st.begin(runtime.Main)
		Expect(st.d.Fill(runtime.Main, st.watch, st.x, 1)).To(Succeed())
		st.caller = runtime.Other
	},
	"fork-unjoined": func(st *ruleStage) {
		st.begin(runtime.Main)
		Expect(st.d.Record(runtime.Main, st.event, st.watch)).To(Succeed())
		side := st.stream()
		Expect(st.d.Wait(runtime.Main, side, st.event)).To(Succeed())
		Expect(st.d.Fill(runtime.Main, side, st.y, 1)).To(Succeed())
	},
	"graph-range-freed": func(st *ruleStage) {
		st.captureFillOfX()
		Expect(st.d.Free(runtime.Main, st.x)).To(Succeed())
	},
	"capture-fill-freed": func(st *ruleStage) {
		st.begin(runtime.Main)
		Expect(st.d.Fill(runtime.Main, st.watch, st.x, 1)).To(Succeed())
		old, err := st.d.ExchangeCaptureMode(runtime.Other, runtime.Relaxed)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.d.Free(runtime.Other, st.x)).To(Succeed())
		_, err = st.d.ExchangeCaptureMode(runtime.Other, old)
		Expect(err).NotTo(HaveOccurred())
	},
	"caller-began-other-capture": func(st *ruleStage) {
		st.beginAlso(runtime.Main)
		st.begin(runtime.Main)
		Expect(st.d.Fill(runtime.Main, st.watch, st.x, 1)).To(Succeed())
	},
	"other-thread-began-other-capture": func(st *ruleStage) {
		st.beginAlso(runtime.Other)
		st.begin(runtime.Main)
		Expect(st.d.Fill(runtime.Main, st.watch, st.x, 1)).To(Succeed())
	},
	"default-stream-joins-capture": func(st *ruleStage) {
		st.begin(runtime.Main)
		Expect(st.d.Fill(runtime.Main, st.watch, st.x, 1)).To(Succeed())
		Expect(st.d.Record(runtime.Main, st.event, st.watch)).To(Succeed())
		st.target = runtime.DefaultStream
	},
	"default-stream-during-capture": func(st *ruleStage) {
		st.begin(runtime.Main)
		st.target = runtime.DefaultStream
	},
	"default-stream-during-blocking-capture": func(st *ruleStage) {
		st.begin(runtime.Main)
		st.target = runtime.DefaultStream
	},
	"pageable-copy-in-capture": func(st *ruleStage) {
		h, err := st.d.AllocHost(runtime.Main, st.x.Bytes, runtime.Pageable)
		Expect(err).NotTo(HaveOccurred())
		st.x = h
		st.begin(runtime.Main)
	},
	"graph-range-stale": func(st *ruleStage) {
		st.captureFillOfX()
		Expect(st.d.Free(runtime.Main, st.x)).To(Succeed())
		st.malloc(2 * st.x.Bytes)
		st.x = st.malloc(st.x.Bytes) // the bystander on the captured address
	},
}

func newRuleStage(d runtime.Device, mode runtime.CaptureMode, flags runtime.StreamFlags) *ruleStage {
	GinkgoHelper()
	st := &ruleStage{d: d, flags: flags, caller: runtime.Main, mode: mode}
	st.x, st.y = st.malloc(4<<10), st.malloc(4<<10)
	var err error
	st.event, err = d.CreateEvent(runtime.Main)
	Expect(err).NotTo(HaveOccurred())
	st.target = st.stream()
	st.pinned, err = d.AllocHost(runtime.Main, 4<<10, runtime.Pinned)
	Expect(err).NotTo(HaveOccurred())
	return st
}

func (st *ruleStage) malloc(n int64) runtime.Ptr {
	GinkgoHelper()
	p, err := st.d.Malloc(runtime.Main, n)
	Expect(err).NotTo(HaveOccurred())
	return p
}

// stream is a new stream of the stage's kind.
func (st *ruleStage) stream() runtime.Stream {
	GinkgoHelper()
	s, err := st.d.CreateStream(runtime.Main, st.flags)
	Expect(err).NotTo(HaveOccurred())
	return s
}

func (st *ruleStage) begin(t runtime.Thread) {
	GinkgoHelper()
	Expect(st.d.BeginCapture(t, st.target, st.mode)).To(Succeed())
	st.watch = st.target
	st.wasStatus = runtime.CaptureActive
}

func (st *ruleStage) beginAlso(t runtime.Thread) {
	GinkgoHelper()
	st.also = st.stream()
	Expect(st.d.BeginCapture(t, st.also, st.mode)).To(Succeed())
	Expect(st.d.Fill(t, st.also, st.y, 2)).To(Succeed())
}

func (st *ruleStage) captureFillOfX() {
	GinkgoHelper()
	s := st.stream()
	Expect(st.d.BeginCapture(runtime.Main, s, st.mode)).To(Succeed())
	Expect(st.d.Fill(runtime.Main, s, st.x, 1)).To(Succeed())
	g, err := st.d.EndCapture(runtime.Main, s)
	Expect(err).NotTo(HaveOccurred())
	st.graph, st.target = g, s
}

func (st *ruleStage) do(call string) error {
	d, t, s := st.d, st.caller, st.target
	switch call {
	case "Malloc":
		_, err := d.Malloc(t, 4<<10)
		return err
	case "Free":
		return d.Free(t, st.y)
	case "AllocHost":
		_, err := d.AllocHost(t, 4<<10, runtime.Pinned)
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

func (st *ruleStage) status(s runtime.Stream) runtime.CaptureStatus {
	GinkgoHelper()
	info, err := st.d.CaptureInfo(runtime.Main, s)
	Expect(err).NotTo(HaveOccurred())
	return info.Status
}

// ruleOutcome is what a device answered one rule's call, and what became of the captures.
type ruleOutcome struct {
	Code        int
	Name        string
	Class       runtime.Class
	Invalidated bool
	Watch, Also runtime.CaptureStatus
}

// playRule sets rule r's situation up on d with streams of kind flags, makes call from a thread in
// callerMode and reports the outcome.
func playRule(d runtime.Device, r sim.Rule, call string, mode, callerMode runtime.CaptureMode, flags runtime.StreamFlags) (ruleOutcome, *ruleStage) {
	GinkgoHelper()
	st := newRuleStage(d, mode, flags)
	if !r.FreedBytes.IsZero() {
		size := int64(r.FreedBytes.AtLeast)
		if size == 0 {
			size = int64(r.FreedBytes.Below) - sim.Granularity
		}
		st.x = st.malloc(size)
	}
	setup, ok := ruleSituations[r.When]
	Expect(ok).To(BeTrue(), "no situation for condition %q", r.When)
	setup(st)
	if r.Pageable {
		h, err := d.AllocHost(runtime.Main, st.x.Bytes, runtime.Pageable)
		Expect(err).NotTo(HaveOccurred())
		st.x, st.target = h, st.stream()
	}
	_, err := d.ExchangeCaptureMode(st.caller, callerMode)
	Expect(err).NotTo(HaveOccurred())
	var out ruleOutcome
	if err := st.do(call); err != nil {
		e, ok := runtime.AsError(err)
		Expect(ok).To(BeTrue(), "want a *runtime.Error, got %T: %v", err, err)
		out = ruleOutcome{Code: e.Code, Name: e.Name, Class: e.Class, Invalidated: e.Invalidated}
	}
	if st.watch != 0 {
		out.Watch = st.status(st.watch)
	}
	if st.also != 0 {
		out.Also = st.status(st.also)
	}
	return out, st
}

// cudaRuleEntries makes one entry per rule of the cuda profile, call, capture mode, caller mode
// and stream kind.
func cudaRuleEntries() []TableEntry {
	p := profile("cuda")
	var out []TableEntry
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
					for _, f := range []runtime.StreamFlags{runtime.Blocking, runtime.NonBlocking} {
						kind := map[runtime.StreamFlags]string{runtime.Blocking: "blocking", runtime.NonBlocking: "non-blocking"}[f]
						out = append(out, Entry(fmt.Sprintf("rule %d [%s, %v, caller %v, %s streams]: %s", i+1, call, m, cm, kind, r.Situation),
							i, call, m, cm, f))
					}
				}
			}
		}
	}
	return out
}

var _ = Describe("the cuda profile's rules, the fake against the simulator", func() {
	DescribeTable("answers every rule's situation as the simulator does, and as the rule says under the stream kind it needs",
		func(ctx SpecContext, index int, call string, mode, callerMode runtime.CaptureMode, flags runtime.StreamFlags) {
			r := profile("cuda").Rules[index]
			b, err := sim.New(sim.Options{Profile: "cuda", Memory: 1 << 30})
			Expect(err).NotTo(HaveOccurred())
			simDev, err := b.Open(context.Background(), 0)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(simDev.Close)
			want, _ := playRule(simDev, r, call, mode, callerMode, flags)
			_, fakeDev := open(ctx, libs.full)
			got, st := playRule(fakeDev, r, call, mode, callerMode, flags)
			Expect(got).To(Equal(want), "the fake answers %s as the simulator does", call)

			natural := runtime.Blocking
			if slices.Contains(nonBlockingSituations, r.When) {
				natural = runtime.NonBlocking
			}
			if flags != natural {
				return
			}
			if r.Allow {
				Expect(got.Code).To(BeZero(), "the platform lets %s through: %s", call, r.Situation)
				return
			}
			Expect([]any{got.Code, got.Name, got.Class}).To(Equal([]any{r.Code, r.Name, r.Class}))
			Expect(got.Invalidated).To(Equal(r.Invalidates && st.wasStatus == runtime.CaptureActive))
		},
		cudaRuleEntries(),
	)

	It("has a situation for every condition of the cuda profile", func() {
		for _, r := range profile("cuda").Rules {
			Expect(ruleSituations).To(HaveKey(r.When))
		}
		for c := range ruleSituations {
			Expect(sim.Conditions()).To(ContainElement(c))
		}
		for _, c := range nonBlockingSituations {
			Expect(sim.Conditions()).To(ContainElement(c))
		}
	})
})
