package measure_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/run"
	"github.com/replaycheck/replaycheck/run/measure"
)

// The repository's measurements: specs/measure/rules.yaml and its probes.
var (
	tableFile = filepath.Join("..", "..", "specs", "measure", "rules.yaml")
	probeDir  = filepath.Join("..", "..", "specs", "measure", "probes")
)

func loadRepo() (*measure.Table, []*probes.Probe) {
	GinkgoHelper()
	t, err := measure.LoadTable(tableFile)
	Expect(err).NotTo(HaveOccurred())
	sets, err := probes.Load(probes.DefaultLimits(), probeDir)
	Expect(err).NotTo(HaveOccurred())
	var ps []*probes.Probe
	for _, s := range sets {
		ps = append(ps, s.Probes...)
	}
	return t, ps
}

func embedded() map[string]*sim.Profile {
	GinkgoHelper()
	out := map[string]*sim.Profile{}
	for _, name := range sim.Profiles() {
		p, err := sim.LoadProfile(name)
		Expect(err).NotTo(HaveOccurred())
		out[name] = p
	}
	return out
}

// measureSim runs the repository's measurements on the simulator with profile, compared with
// against (nil: the embedded profile).
func measureSim(profile string, against *sim.Profile) *measure.Report {
	GinkgoHelper()
	t, ps := loadRepo()
	cfg := run.Defaults(func(string) string { return "" })
	cfg.Backend, cfg.Profile = "sim", profile
	rep, err := measure.Run(context.Background(), measure.Options{Config: cfg, Table: t, Probes: ps, Against: against, AgainstPath: "mutated.yaml"})
	Expect(err).NotTo(HaveOccurred())
	return rep
}

var _ = Describe("the repository's measurement table", func() {
	It("resolves against both profiles and the measurement probes", func() {
		t, ps := loadRepo()
		Expect(t.Resolve(embedded(), ps)).To(Succeed())
	})

	It("names every rule tagged verify in either profile", func() {
		t, _ := loadRepo()
		for name, p := range embedded() {
			Expect(t.Uncovered(p)).To(BeEmpty(), "profile %s", name)
		}
	})

	It("misses a verify rule no measurement names (negative control of the coverage check)", func() {
		t, _ := loadRepo()
		p := embedded()["cuda"]
		i := slices.IndexFunc(p.Rules, func(r sim.Rule) bool { return r.Source == "measured" })
		Expect(i).To(BeNumerically(">=", 0))
		p.Rules[i].Source = "verify"
		Expect(t.Uncovered(p)).To(Equal([]string{p.Rules[i].Situation}))
	})

	It("keeps specs/measure out of the catalog: loading specs reads none of its probes", func() {
		sets, err := probes.Load(probes.DefaultLimits(), filepath.Join("..", "..", "specs"))
		Expect(err).NotTo(HaveOccurred())
		for _, s := range sets {
			Expect(s.Name).NotTo(HavePrefix("measure-"))
		}
	})
})

var _ = Describe("measuring on the simulator", func() {
	for _, profile := range []string{"cann", "cuda"} {
		It(fmt.Sprintf("agrees with the %s profile on every row, each rejection decided by the rule its row names", profile), func() {
			rep := measureSim(profile, nil)
			Expect(rep.Platform).To(Equal("sim/" + profile))
			Expect(rep.Failed()).To(BeFalse(), "%+v", rep.Rows)
			Expect(rep.Count(measure.Agree)).To(BeNumerically(">", 0))
			for _, row := range rep.Rows {
				Expect(row.Profile).To(Equal(profile))
				if row.Status == measure.NotMeasured {
					continue
				}
				Expect(row.Status).To(Equal(measure.Agree), "%+v", row)
				if !row.Says.Allowed {
					// The simulator names the rule that answered: the probe reaches the rule its row names.
					Expect(row.Detail).To(ContainSubstring(fmt.Sprintf("(profile %s, rule %d)", profile, row.RuleIndex)), "%+v", row)
				}
			}
		})
	}

	// Each mutation changes what one rule says; the rows of that rule, and only they, disagree.
	DescribeTable("disagrees where the profile compared with says otherwise (negative controls)",
		func(profile, situation string, mutate func(r *sim.Rule)) {
			against, err := sim.LoadProfile(profile)
			Expect(err).NotTo(HaveOccurred())
			_, rule, err := measure.FindRule(against, situation)
			Expect(err).NotTo(HaveOccurred())
			mutate(rule)
			rep := measureSim(profile, against)
			Expect(rep.Failed()).To(BeTrue())
			Expect(rep.Against).To(Equal("mutated.yaml"))
			var disagree int
			for _, row := range rep.Rows {
				if row.Rule == situation && row.Status != measure.NotMeasured {
					Expect(row.Status).To(Equal(measure.Disagree), "%+v", row)
					disagree++
				} else {
					Expect(row.Status).To(BeElementOf(measure.Agree, measure.NotMeasured), "%+v", row)
				}
			}
			Expect(disagree).To(BeNumerically(">", 0))
		},
		Entry("another code", "cann", "replay of a graph whose captured memory was freed and returned to the driver since capture",
			func(r *sim.Rule) { r.Code++ }),
		Entry("a rejecting rule made an allow rule", "cuda", "cuEventQuery or cuEventSynchronize, on an event not recorded in a capture, by the capturing thread in GLOBAL or THREAD_LOCAL mode",
			func(r *sim.Rule) {
				*r = sim.Rule{Situation: r.Situation, Source: r.Source, Calls: r.Calls, When: r.When, Modes: r.Modes, ModeNames: r.ModeNames, Allow: true}
			}),
		Entry("an allow rule made a rejecting one", "cuda", "synchronous copy while only non-blocking streams capture",
			func(r *sim.Rule) {
				r.Allow, r.Code, r.Name, r.Class = false, 900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", device.ClassCaptureUnsupported
			}),
		Entry("invalidation dropped", "cuda", "synchronisation of the legacy default stream while a blocking stream captures",
			func(r *sim.Rule) { r.Invalidates = false }),
		Entry("the cross-capture record made the wait's conflict", "cann", "record, on a capturing stream, an event last recorded in another capture (the event moves to the stream's capture)",
			func(r *sim.Rule) {
				r.Allow, r.Code, r.Name, r.Class, r.Invalidates = false, 107032, "ACL_ERROR_STREAM_CAPTURE_CONFLICT", device.ClassCaptureConflict, true
			}),
		Entry("the cross-capture wait's invalidation dropped", "cann", "wait on an event recorded in another capture (both captures are invalidated)",
			func(r *sim.Rule) { r.Invalidates = false }),
	)

	It("refuses to compare a device with another family's profile", func() {
		t, ps := loadRepo()
		cfg := run.Defaults(func(string) string { return "" })
		cfg.Backend, cfg.Profile = "sim", "cann"
		_, err := measure.Run(context.Background(), measure.Options{Config: cfg, Table: t, Probes: ps, Against: embedded()["cuda"], AgainstPath: "cuda.yaml"})
		Expect(err).To(MatchError(ContainSubstring("cuda.yaml is profile cuda, but the device sim/cann is cann")))
	})
})

var _ = Describe("Observe", func() {
	step := probes.OpStep(probes.PhaseCapture, "main", 1)
	end := probes.CaptureStep("main", probes.StepEnd)
	result := func(events ...capture.Event) *capture.Result {
		return &capture.Result{ID: "s/p@global/guards-off", Outcome: probes.Exact, Timeline: capture.TimelineOf(events...)}
	}

	It("reads a call that succeeded as allowed", func() {
		a, _, ok, _ := measure.Observe(result(capture.Event{Step: &step, Call: "QueryEvent(e)"}), step)
		Expect(ok).To(BeTrue())
		Expect(a).To(Equal(measure.Answer{Allowed: true}))
	})

	It("reads a rejected call's code, name and the invalidation its capture's end shows", func() {
		res := result(
			capture.Event{Step: &step, Call: "SyncStream(default)", Code: 906, Class: device.ClassCaptureImplicit,
				Err: "cuda: SyncStream: capture-implicit (code 906 CUDA_ERROR_STREAM_CAPTURE_IMPLICIT): the driver's words"},
			capture.Event{Step: &end, Call: "EndCapture(main)", Code: 901, Class: device.ClassCaptureInvalidated})
		a, detail, ok, _ := measure.Observe(res, step)
		Expect(ok).To(BeTrue())
		Expect(a).To(Equal(measure.Answer{Code: 906, Name: "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", Class: device.ClassCaptureImplicit, Invalidated: true}))
		Expect(detail).To(ContainSubstring("the driver's words"))
		// The same answer with a capture that ended with a graph: not invalidated.
		res.Timeline = capture.TimelineOf(res.Timeline.Events()[0], capture.Event{Step: &end, Call: "EndCapture(main)"})
		a, _, _, _ = measure.Observe(res, step)
		Expect(a.Invalidated).To(BeFalse())
	})

	It("takes a launch's asynchronous fault from the rejection charged to the launch", func() {
		launch := probes.LaunchStep(1, "main")
		res := result(capture.Event{Step: &launch, Call: "Launch(graph main)"})
		res.Outcome = probes.Rejected
		res.Rejection = &capture.Rejection{Step: launch, Op: "SyncDevice", Code: 507011, Name: "ACL_ERROR_RT_MODEL_EXECUTE", Class: device.ClassIllegalAddress, Asynchronous: true}
		a, _, ok, _ := measure.Observe(res, launch)
		Expect(ok).To(BeTrue())
		Expect(a.Code).To(Equal(507011))
		Expect(a.String()).To(Equal("507011 ACL_ERROR_RT_MODEL_EXECUTE (at the synchronisation), capture not invalidated"))
	})

	It("decides nothing from an instance in error, or one that never made the call", func() {
		res := result(capture.Event{Step: &step, Call: "QueryEvent(e)"})
		res.Outcome, res.Reason = probes.Errored, "crashed (signal SIGSEGV during EndCapture)"
		_, _, ok, why := measure.Observe(res, step)
		Expect(ok).To(BeFalse())
		Expect(why).To(ContainSubstring("crashed"))

		_, _, ok, why = measure.Observe(result(), step)
		Expect(ok).To(BeFalse())
		Expect(why).To(Equal("the instance made no call at step capture main op 2"))
	})

	It("agrees only on the same code and invalidation, or on two allows", func() {
		a := measure.Answer{Code: 906, Invalidated: true}
		Expect(a.Agrees(measure.Answer{Code: 906, Invalidated: true})).To(BeTrue())
		Expect(a.Agrees(measure.Answer{Code: 906})).To(BeFalse())
		Expect(a.Agrees(measure.Answer{Code: 900, Invalidated: true})).To(BeFalse())
		Expect(a.Agrees(measure.Answer{Allowed: true})).To(BeFalse())
		Expect(measure.Answer{Allowed: true}.Agrees(measure.Answer{Allowed: true})).To(BeTrue())
	})
})

var _ = Describe("a measurement table", func() {
	parse := func(body string) error {
		_, err := measure.ParseTable("t.yaml", []byte("version: replaycheck-measure/v1\nmeasurements:\n"+body))
		return err
	}

	DescribeTable("is refused, naming the line, when it says something wrong on its own",
		func(body, want string) {
			Expect(parse(body)).To(MatchError(ContainSubstring(want)))
		},
		Entry("an unknown key", "  - {profile: cuda, rule: r, probe: s/p, step: capture main op 1, otherwise: o, colour: red}\n", "t.yaml:3: field colour not found"),
		Entry("an unknown family", "  - {profile: rocm, rule: r, probe: s/p, step: capture main op 1, otherwise: o}\n", `t.yaml:3: profile "rocm" is not one of cann, cuda`),
		Entry("a bad step", "  - {profile: cuda, rule: r, probe: s/p, step: capture main op zero, otherwise: o}\n", "t.yaml:3: step:"),
		Entry("no otherwise", "  - {profile: cuda, rule: r, probe: s/p, step: capture main op 1}\n", "otherwise (what an answer other than the rule's means) is required"),
		Entry("a blocked one naming a probe", "  - {profile: cuda, rule: r, probe: s/p, blocked: why}\n", "a blocked measurement names no probe, step or modes"),
		Entry("a bad mode", "  - {profile: cuda, rule: r, probe: s/p, step: capture main op 1, otherwise: o, modes: [strict]}\n", "t.yaml:3: modes:"),
	)

	It("is refused for a wrong version", func() {
		_, err := measure.ParseTable("t.yaml", []byte("version: v0\nmeasurements:\n  - {profile: cuda, rule: r, blocked: b}\n"))
		Expect(err).To(MatchError(ContainSubstring(`version is "v0"`)))
	})

	DescribeTable("does not resolve, naming the line, when its rule, probe, step or modes do not fit",
		func(line, want string) {
			_, ps := loadRepo()
			t, err := measure.ParseTable("t.yaml", []byte("version: replaycheck-measure/v1\nmeasurements:\n"+line))
			Expect(err).NotTo(HaveOccurred())
			Expect(t.Resolve(embedded(), ps)).To(MatchError(ContainSubstring(want)))
		},
		Entry("no such rule", "  - {profile: cuda, rule: no such situation, probe: measure-cuda/read-in-non-blocking-capture, step: capture main op 2, otherwise: o}\n",
			`t.yaml:3: profile cuda has no rule "no such situation"`),
		Entry("no such probe", "  - {profile: cuda, rule: synchronous copy while only non-blocking streams capture, probe: measure-cuda/nothing, step: capture main op 2, otherwise: o}\n",
			"probe measure-cuda/nothing is not among the probes loaded"),
		Entry("a step past the capture's ops", "  - {profile: cuda, rule: synchronous copy while only non-blocking streams capture, probe: measure-cuda/read-in-non-blocking-capture, step: capture main op 3, otherwise: o}\n",
			"capture main has 2 ops"),
		Entry("a mode the rule does not apply to", "  - {profile: cuda, rule: \"cuEventQuery or cuEventSynchronize, on an event not recorded in a capture, by the capturing thread in GLOBAL or THREAD_LOCAL mode\", probe: measure-cuda/query-outside-event-capturing-thread, step: capture main op 2, otherwise: o}\n",
			"mode relaxed: the rule applies to captures in global, thread-local only"),
	)
})

// Rows name their instance without the guard setting in text; the instance id keeps it.
var _ = It("writes the table with one row per measurement read and a count", func() {
	rep := measureSim("cuda", nil)
	var b strings.Builder
	Expect(measure.WriteText(&b, rep)).To(Succeed())
	Expect(b.String()).To(MatchRegexp(`(?m)^agree +cuda rule [0-9]+ \(verify\): synchronous copy while only non-blocking streams capture +measure-cuda/write-in-non-blocking-capture@global +capture main op 2 +allowed +allowed$`))
	Expect(b.String()).To(HaveSuffix(fmt.Sprintf("\n%d measurements: %d agree, 0 disagree, 0 inconclusive, 0 not measured\n", len(rep.Rows), len(rep.Rows))))
	b.Reset()
	Expect(measure.WriteJSON(&b, rep)).To(Succeed())
	Expect(b.String()).To(ContainSubstring(`"failed": false`))
	Expect(b.String()).To(ContainSubstring(`"status": "agree"`))
})
