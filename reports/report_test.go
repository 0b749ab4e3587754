package reports_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/verdict"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with the current output")

func ptr[T any](v T) *T { return &v }

// mustStep reads a step's text form.
func mustStep(text string) probes.Step {
	s, err := probes.ParseStep(text)
	if err != nil {
		panic(err)
	}
	return s
}

// stepAt is an event's step.
func stepAt(text string) *probes.Step { return ptr(mustStep(text)) }

// Hand-built results, one per shape a writer must render: exact, corrupted with mismatches and a
// stale range (expected, so it passes), corrupted where exact was promised (fails), rejected,
// skipped, uncharacterised, and an engine error with a leak.
func exactResult() *capture.Result {
	return &capture.Result{
		ID: "basic/copy@global/guards-off", Probe: "basic/copy", Set: "basic", Hazard: "none",
		Mode: device.Global, Guarded: false, Replays: 3, Backend: "sim", Platform: "sim/cann", Runtime: runtime.Builtin, Device: "sim device 0 (cann)",
		Outcome: probes.Exact, Expected: probes.Exact,
		Reason: "3 of 3 rounds byte-identical to the oracle, no error",
		Rounds: 3,
		Ledger: []capture.Residency{
			{Capture: "main", Buffer: "src", Range: device.Ptr{Addr: 0x100000000, Bytes: 64}, Generation: 1, Access: capture.AccessRead},
			{Capture: "main", Buffer: "dst", Range: device.Ptr{Addr: 0x100000200, Bytes: 64}, Generation: 2, Access: capture.AccessWrite},
		},
		Timeline: capture.TimelineOf(
			capture.Event{Seq: 1, Phase: "capture", Step: stepAt("capture main op 1"), Call: "Copy(dst 0x100000200+64 <- src 0x100000000+64) on main", Captured: true},
		),
		Duration: 1500 * time.Microsecond,
	}
}

func rebaseTimeline() []capture.Event {
	return []capture.Event{
		{Seq: 1, Phase: "setup", Call: "CreateStream main"},
		{Seq: 2, Phase: "setup", Call: "Malloc(dst, 64) = 0x100000000+64"},
		{Seq: 3, Phase: "capture", Step: stepAt("capture main begin"), Call: "BeginCapture(main, global)"},
		{Seq: 4, Phase: "capture", Step: stepAt("capture main op 1"), Call: "Fill(dst 0x100000000+64, 0x07) on main", Captured: true},
		{Seq: 5, Phase: "capture", Step: stepAt("capture main end"), Call: "EndCapture(main) from main"},
		{Seq: 6, Phase: "between", Step: stepAt("between op 1"), Call: "Free(dst 0x100000000+64) (grow to 128)"},
		{Seq: 7, Phase: "between", Step: stepAt("between op 1"), Call: "Malloc(dst, 128) = 0x100000400+128"},
		{Seq: 8, Phase: "between", Step: stepAt("between op 2"), Call: "Malloc(bystander, 64) = 0x100000000+64", Thread: device.Other},
		{Seq: 9, Phase: "replay", Step: stepAt("replay 1 main"), Call: "Launch(graph main) on main", Round: 1},
		{Seq: 10, Phase: "verify", Call: "SyncDevice (verify)", Round: 1},
	}
}

func corruptedResult(expected probes.Outcome) *capture.Result {
	r := &capture.Result{
		ID: "rebase/grow-after-capture@global/guards-off", Probe: "rebase/grow-after-capture", Set: "rebase",
		Hazard: "rebase", Labels: []string{"retained"},
		Mode: device.Global, Guarded: false, Replays: 2, Backend: "sim", Platform: "sim/cann", Runtime: runtime.Builtin, Device: "sim device 0 (cann)",
		Outcome: probes.Corrupted, Expected: expected,
		Reason: "2 of 2 rounds differ from the oracle, first at round 1 (dst at offset 0, 128 bytes); " +
			"graph main captured dst at 0x100000000+64, now buffer bystander 0x100000000+64 (generation 3)",
		Rounds: 2, CorruptedRounds: 2, FirstCorrupted: 1,
		Mismatches: []capture.Mismatch{
			{Round: 1, Buffer: "dst", Offset: 0, Length: 128,
				Want: bytes.Repeat([]byte{0x07}, capture.MaxShownBytes), Got: make([]byte, capture.MaxShownBytes)},
			{Round: 1, Buffer: "bystander", Offset: 4, Length: 2, Want: []byte{0, 0}, Got: []byte{7, 7}},
		},
		Differences: []capture.Difference{
			{Round: 1, Buffer: "dst", Ranges: 1, Bytes: 128, BufferBytes: 128},
			{Round: 1, Buffer: "bystander", Ranges: 1, Bytes: 2, BufferBytes: 64},
		},
		Ledger: []capture.Residency{{Capture: "main", Buffer: "dst", Range: device.Ptr{Addr: 0x100000000, Bytes: 64}, Generation: 1, Access: capture.AccessWrite}},
		Stale: []capture.StaleRange{{
			Capture: "main", Buffer: "dst", Range: device.Ptr{Addr: 0x100000000, Bytes: 64}, Generation: 1,
			Access: capture.AccessWrite, Round: 1, Ran: true,
			Now: "buffer bystander 0x100000000+64 (generation 3)", Owners: []string{"bystander"},
		}},
		Timeline: capture.TimelineOf(rebaseTimeline()...),
		Duration: 2 * time.Millisecond,
	}
	if expected == probes.Exact {
		r.ID = "rebase/promised-exact@relaxed/guards-off"
		r.Probe = "rebase/promised-exact"
		r.Mode = device.Relaxed
	}
	return r
}

func rejectedResult() *capture.Result {
	return &capture.Result{
		ID: "sync/sync-in-capture@thread-local/guards-off", Probe: "sync/sync-in-capture", Set: "sync",
		Hazard: "sync-in-capture", Mode: device.ThreadLocal, Replays: 2, Backend: "sim", Platform: "sim/cann", Runtime: runtime.Builtin, Device: "sim device 0 (cann)",
		Outcome: probes.Rejected, Expected: probes.Rejected, RejectedBy: []device.Class{device.ClassCapturedStream},
		Reason: "platform rejected capture main op 2 (SyncStream) with 107027 ACL_ERROR_RT_STREAM_CAPTURED " +
			"[captured-stream], capture not invalidated, later replays exact",
		Rounds: 2,
		Rejection: &capture.Rejection{
			Step: mustStep("capture main op 2"), Op: "SyncStream", Code: 107027, Name: "ACL_ERROR_RT_STREAM_CAPTURED",
			Class: device.ClassCapturedStream, DuringCapture: true, ReplaysExact: ptr(true),
		},
		Timeline: capture.TimelineOf(
			capture.Event{Seq: 4, Phase: "capture", Step: stepAt("capture main op 2"), Call: "SyncStream(main)", Code: 107027,
				Class: device.ClassCapturedStream, Err: "sim: SyncStream: captured-stream (code 107027 ACL_ERROR_RT_STREAM_CAPTURED)"},
		),
		Duration: 700 * time.Microsecond,
	}
}

func skippedResult() *capture.Result {
	return &capture.Result{
		ID: "rebase/grow-after-capture@global/guards-on", Probe: "rebase/grow-after-capture", Set: "rebase",
		Hazard: "rebase", Mode: device.Global, Guarded: true, Replays: 2, Backend: "sim", Platform: "sim/cann", Runtime: runtime.Builtin, Device: "sim device 0 (cann)",
		Outcome: probes.Skipped, Expected: probes.Refused,
		Reason: "guards on needs runtime/guard, which this build does not have yet",
	}
}

func uncharacterisedResult() *capture.Result {
	return &capture.Result{
		ID: "offcap/side-stream@global/guards-off", Probe: "offcap/side-stream", Set: "offcap",
		Hazard: "off-capture", Mode: device.Global, Replays: 2, Backend: "sim", Platform: "sim/cann", Runtime: runtime.Builtin, Device: "sim device 0 (cann)",
		Outcome: probes.Exact, Reason: "2 of 2 rounds byte-identical to the oracle, no error", Rounds: 2,
		Timeline: capture.TimelineOf(capture.Event{Seq: 1, Phase: "prepare", Step: stepAt("prepare op 1"), Call: "Fill(a 0x100000000+8, 0x01) on main"}),
		Duration: 300 * time.Microsecond,
	}
}

func erroredResult() *capture.Result {
	return &capture.Result{
		ID: "leak/forgotten-graph@global/guards-off", Probe: "leak/forgotten-graph", Set: "leak",
		Hazard: "none", Mode: device.Global, Replays: 1, Backend: "sim", Platform: "sim/cann", Runtime: runtime.Builtin, Device: "sim device 0 (cann)",
		Outcome: probes.Errored, Expected: probes.Exact, Rounds: 1,
		Reason: "leaked after teardown: graphs: 1 live, 0 before",
		Error:  &capture.RunError{Kind: capture.ErrLeak, Message: "leaked after teardown: graphs: 1 live, 0 before"},
		Leaks:  []string{"graphs: 1 live, 0 before"},
	}
}

func sampleReport(opt reports.Options) *reports.Report {
	rep := reports.New("replaycheck", "v0.0.0-test", opt)
	rep.Started = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rep.Backend, rep.Platform, rep.Profile, rep.Device = "sim", "sim/cann", "cann", "sim device 0 (cann)"
	for _, r := range []*capture.Result{
		exactResult(), corruptedResult(probes.Corrupted), corruptedResult(probes.Exact),
		rejectedResult(), skippedResult(), uncharacterisedResult(), erroredResult(),
	} {
		rep.Add(r)
	}
	return rep
}

// expectGolden compares got with testdata/name, or rewrites it under -update.
func expectGolden(name string, got []byte) {
	GinkgoHelper()
	path := filepath.Join("testdata", name)
	if *update {
		Expect(os.WriteFile(path, got, 0o644)).To(Succeed(), "updating golden file %s", path)
		return
	}
	want, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred(), "reading golden file (run go test ./reports -update to create it)")
	Expect(got).To(matchGolden(name, want))
}

// goldenMatcher matches bytes equal to a golden file's content; its failure message is the
// cmp.Diff of the two, in full (Gomega's own formatting would truncate a long report).
type goldenMatcher struct {
	name string
	want []byte
	diff string
}

func matchGolden(name string, want []byte) *goldenMatcher {
	return &goldenMatcher{name: name, want: want}
}

func (m *goldenMatcher) Match(actual any) (bool, error) {
	got, ok := actual.([]byte)
	if !ok {
		return false, fmt.Errorf("matchGolden expects []byte, got %T", actual)
	}
	m.diff = cmp.Diff(string(m.want), string(got))
	return m.diff == "", nil
}

func (m *goldenMatcher) FailureMessage(any) string {
	return fmt.Sprintf("%s differs from the golden file (-want +got); run go test ./reports -update if the change is intended:\n%s", m.name, m.diff)
}

func (m *goldenMatcher) NegatedFailureMessage(any) string {
	return fmt.Sprintf("%s matches the golden file, and was expected not to", m.name)
}

func writeText(rep *reports.Report, opt reports.TextOptions) []byte {
	GinkgoHelper()
	var buf bytes.Buffer
	Expect(reports.WriteText(&buf, rep, opt)).To(Succeed())
	return buf.Bytes()
}

func writeJSON(rep *reports.Report) []byte {
	GinkgoHelper()
	var buf bytes.Buffer
	Expect(reports.WriteJSON(&buf, rep)).To(Succeed())
	return buf.Bytes()
}

var _ = Describe("the writers' output", func() {
	DescribeTable("matches its golden file under testdata/ (go test ./reports -update rewrites them)",
		func(golden string, write func(*reports.Report) []byte) {
			expectGolden(golden, write(sampleReport(reports.Options{})))
		},
		Entry("plain text", "report.txt", func(rep *reports.Report) []byte {
			return writeText(rep, reports.TextOptions{})
		}),
		Entry("colored text", "report-color.txt", func(rep *reports.Report) []byte {
			return writeText(rep, reports.TextOptions{Color: true})
		}),
		Entry("JSON", "report.json", writeJSON),
	)
})

var _ = Describe("an empty report", func() {
	var rep *reports.Report
	BeforeEach(func() {
		rep = reports.New("replaycheck", "dev", reports.Options{})
		rep.Backend = "sim"
	})

	It("writes as a header and a zero count in text", func() {
		Expect(string(writeText(rep, reports.TextOptions{}))).To(Equal("replaycheck dev  backend sim\n\n0 instances\n"))
	})

	It("is still a JSON document with an empty results array, not null", func() {
		js := string(writeJSON(rep))
		Expect(js).To(ContainSubstring(`"results": []`), "empty JSON report has no empty results array")
	})
})

var _ = Describe("the summary", func() {
	It("counts verdicts and outcomes, and fails a run with failing instances", func() {
		s := sampleReport(reports.Options{}).Summary
		want := reports.Summary{
			Total: 7, Pass: 3, Fail: 2, Skip: 1, Uncharacterised: 1,
			ByOutcome: map[string]int{"exact": 2, "corrupted": 2, "rejected": 1, "skipped": 1, "error": 1},
		}
		Expect(s).To(Equal(want), "summary (-want +got):\n%s", cmp.Diff(want, s))
		Expect(s.Failed()).To(BeTrue(), "Failed() = false with two failing instances")
	})
})

var _ = Describe("timelines", func() {
	// Instances that never ran far enough to have a timeline: the skipped one and the leak.
	noTimeline := map[string]bool{
		"rebase/grow-after-capture@global/guards-on": true,
		"leak/forgotten-graph@global/guards-off":     true,
	}
	DescribeTable("are kept for every instance that did not pass, and for passes only when asked",
		func(opt reports.Options, passKeep bool) {
			for _, e := range sampleReport(opt).Results {
				has := e.Timeline.Len() > 0
				switch {
				case e.Verdict.Status == verdict.Pass:
					Expect(has).To(Equal(passKeep), "AllTimelines=%v: pass %s has timeline=%v", opt.AllTimelines, e.ID, has)
				case !noTimeline[e.ID]:
					Expect(has).To(BeTrue(), "AllTimelines=%v: %s %s lost its timeline", opt.AllTimelines, e.Verdict, e.ID)
				}
			}
		},
		Entry("by default, passes drop theirs", reports.Options{}, false),
		Entry("with AllTimelines, passes keep theirs", reports.Options{AllTimelines: true}, true),
	)
})

var _ = Describe("the JSON form of a result", func() {
	var e map[string]any
	BeforeEach(func() {
		data, err := json.Marshal(reports.Entry{Result: *corruptedResult(probes.Corrupted)})
		Expect(err).NotTo(HaveOccurred())
		Expect(json.Unmarshal(data, &e)).To(Succeed())
	})

	It("writes enums as their names", func() {
		Expect(e).To(HaveKeyWithValue("mode", "global"))
		Expect(e).To(HaveKeyWithValue("guarded", false))
		Expect(e).To(HaveKeyWithValue("outcome", "corrupted"))
		Expect(e).To(HaveKeyWithValue("expected", "corrupted"))
	})

	It("writes a stale range's address in hex and keeps its size", func() {
		Expect(e["stale"]).To(ConsistOf(HaveKeyWithValue("range", map[string]any{"addr": "0x100000000", "bytes": 64.0})))
	})

	It("writes mismatch bytes as hex", func() {
		Expect(e["mismatches"]).To(ContainElement(SatisfyAll(HaveKeyWithValue("want", "0000"), HaveKeyWithValue("got", "0707"))))
	})

	It("writes steps in their text form", func() {
		Expect(e["timeline"]).To(ContainElement(HaveKeyWithValue("step", "replay 1 main")))
	})

	It("gives the duration in nanoseconds", func() {
		Expect(e).To(HaveKeyWithValue("duration_ns", 2e6))
	})

	It("reads back to the same result", func() {
		for _, res := range []*capture.Result{
			exactResult(), corruptedResult(probes.Corrupted), corruptedResult(probes.Exact),
			rejectedResult(), skippedResult(), uncharacterisedResult(), erroredResult(),
		} {
			data, err := json.Marshal(res)
			Expect(err).NotTo(HaveOccurred())
			var back capture.Result
			Expect(json.Unmarshal(data, &back)).To(Succeed())
			Expect(&back).To(Equal(res), "%s", res.ID)
		}
	})
})

// The JSON field names are the contract with CI scripts: decode generically and look them up.
var _ = Describe("the JSON field names", func() {
	var results []map[string]any
	BeforeEach(func() {
		var doc struct {
			Results []map[string]any `json:"results"`
		}
		Expect(json.Unmarshal(writeJSON(sampleReport(reports.Options{})), &doc)).To(Succeed(), "report is not JSON")
		results = doc.Results
		Expect(results).To(HaveLen(7))
	})

	It("name every field of every result", func() {
		for _, key := range []string{"probe", "id", "set", "hazard", "mode", "guarded", "backend", "platform", "runtime", "outcome", "verdict", "reason", "rounds", "corrupted_rounds", "first_corrupted", "duration_ns"} {
			for i, r := range results {
				Expect(r).To(HaveKey(key), "results[%d] has no %q", i, key)
			}
		}
	})

	It("name every field of a rejection", func() {
		Expect(results[3]).To(HaveKeyWithValue("rejection", BeAssignableToTypeOf(map[string]any{})), "results[3] has no rejection object")
		rej := results[3]["rejection"].(map[string]any)
		for _, key := range []string{"step", "op", "code", "name", "class", "invalidated", "replays_exact"} {
			Expect(rej).To(HaveKey(key), "rejection has no %q", key)
		}
	})

	It("give every verdict its status and the rule that decided it", func() {
		for i, r := range results {
			Expect(r["verdict"]).To(SatisfyAll(HaveKey("status"), HaveKey("rule")), "results[%d]", i)
		}
	})

	It("keep a skipped instance's expectation", func() {
		Expect(results[4]).To(HaveKey("expected"), "skipped instance lost its expectation")
	})

	It("omit the expectation of an uncharacterised instance", func() {
		Expect(results[5]).NotTo(HaveKey("expected"), "uncharacterised instance has an expected key; it must be omitted")
	})
})

var _ = Describe("the JSON document", func() {
	type doc struct {
		Runs []struct {
			Platform, Backend, Profile, Runtime string
			Summary                             struct{ Total int }
		}
		Summary     struct{ Total int }
		Results     []map[string]any
		Enforcement *struct{ Columns []any }
	}
	decode := func(runs ...*reports.Report) doc {
		GinkgoHelper()
		var buf bytes.Buffer
		Expect(reports.WriteJSON(&buf, runs...)).To(Succeed())
		var d doc
		Expect(json.Unmarshal(buf.Bytes(), &d)).To(Succeed())
		return d
	}
	It("has one shape for one run and for several, and every result names its backend, platform and runtime", func() {
		cann := sampleReport(reports.Options{})
		cuda := sampleReport(reports.Options{})
		cuda.Platform, cuda.Profile = "sim/cuda", "cuda"
		for i := range cuda.Results {
			cuda.Results[i].Platform = "sim/cuda"
		}
		one, two := decode(cann), decode(cann, cuda)
		Expect(one.Runs).To(HaveLen(1))
		Expect(two.Runs).To(HaveLen(2))
		Expect(two.Runs[1].Platform).To(Equal("sim/cuda"))
		Expect(two.Runs[1].Runtime).To(Equal(runtime.Builtin))
		Expect(one.Summary.Total).To(Equal(7))
		Expect(two.Summary.Total).To(Equal(14))
		Expect(two.Results).To(HaveLen(14))
		Expect(one.Enforcement).NotTo(BeNil())
		Expect(two.Enforcement.Columns).To(HaveLen(6))
		for _, r := range append(one.Results, two.Results...) {
			Expect(r).To(HaveKeyWithValue("backend", "sim"))
			Expect(r).To(HaveKeyWithValue("runtime", "builtin"))
			Expect(r).To(HaveKey("platform"))
		}
		Expect(two.Results[13]).To(HaveKeyWithValue("platform", "sim/cuda"))
	})

	// WriteJSON writes one result at a time; what it writes must be the document json.Encoder
	// writes whole, to the byte.
	It("is written one result at a time as json.Encoder writes it whole", func() {
		cuda := sampleReport(reports.Options{AllTimelines: true})
		cuda.Platform, cuda.Profile = "sim/cuda", "cuda"
		empty := reports.New("replaycheck", "v0.0.0-test", reports.Options{})
		single := sampleReport(reports.Options{})
		single.Results = single.Results[:1]
		for _, runs := range [][]*reports.Report{
			{sampleReport(reports.Options{})}, {sampleReport(reports.Options{AllTimelines: true}), cuda}, {empty}, {single}, {empty, single},
		} {
			var streamed, whole bytes.Buffer
			Expect(reports.WriteJSON(&streamed, runs...)).To(Succeed())
			Expect(reports.WriteJSONValue(&whole, reports.DocumentOf(runs...))).To(Succeed())
			Expect(streamed.String()).To(Equal(whole.String()))
		}
	})
})

var _ = Describe("a rejection outside any capture", func() {
	It("says nothing of a capture it could not have invalidated", func() {
		res := rejectedResult()
		res.Rejection.DuringCapture, res.Rejection.Step, res.Rejection.Op = false, mustStep("between op 1"), "Malloc"
		res.Reason = "platform rejected between op 1 (Malloc) with 2 [out-of-memory]"
		rep := reports.New("replaycheck", "dev", reports.Options{})
		rep.Add(res)
		rep.Results[0].Verdict = verdict.Verdict{Status: verdict.Fail, Rule: verdict.RuleRejectedBy, Reason: "a class the probe did not name"} // show the detail block
		out := string(writeText(rep, reports.TextOptions{}))
		Expect(out).To(ContainSubstring("between op 1: Malloc returned 107027"))
		Expect(out).NotTo(ContainSubstring("capture not invalidated"))
	})
})

var _ = Describe("a stale access with no differing byte", func() {
	It("is explained on the instance's line, and in its detail with Verbose", func() {
		res := corruptedResult(probes.Corrupted)
		res.CorruptedRounds, res.FirstCorrupted, res.Mismatches = 0, 0, nil
		res.Stale[0].Access, res.Stale[0].Round = capture.AccessRead, 2
		rep := reports.New("replaycheck", "dev", reports.Options{})
		rep.Add(res)
		out := string(writeText(rep, reports.TextOptions{}))
		Expect(out).To(ContainSubstring("stale access in round 2: graph main reads freed dst; no checked byte differs yet"))
		Expect(out).NotTo(ContainSubstring("round 2's launch ran over it"), "a passing instance shows no detail by default")
		out = string(writeText(rep, reports.TextOptions{Verbose: true}))
		Expect(out).To(ContainSubstring("round 2's launch ran over it (the graph reads it)"))
	})
})

var _ = Describe("a timeline with elided replay rounds", func() {
	It("counts the calls the elided rounds made in the calls in all", func() {
		res := corruptedResult(probes.Exact) // fails, so its timeline is shown
		res.Replays, res.Rounds = 50, 50
		round := func(n, seq int) []capture.Event {
			return []capture.Event{
				{Seq: seq, Phase: "replay", Step: stepAt(fmt.Sprintf("replay %d main", n)), Call: "Launch(graph main) on main", Round: n},
				{Seq: seq + 1, Phase: "verify", Call: "SyncDevice (verify)", Round: n},
			}
		}
		events := append(res.Timeline.Events(), round(2, 11)...)
		events = append(events, round(3, 13)...)
		events = append(events, capture.Event{Seq: 15, Phase: "replay", Round: 4, Elided: &capture.Elided{FromRound: 4, ToRound: 49, Calls: 92}})
		res.Timeline = capture.TimelineOf(append(events, round(50, 107)...)...)
		rep := reports.New("replaycheck", "dev", reports.Options{})
		rep.Add(res)
		out := string(writeText(rep, reports.TextOptions{}))
		Expect(out).To(ContainSubstring("timeline  6 of 108 calls (capture, between, errors)"), out)

		var buf bytes.Buffer
		Expect(reports.WriteJSON(&buf, rep)).To(Succeed())
		Expect(buf.String()).To(MatchRegexp(`"elided": \{\s*"from_round": 4,\s*"to_round": 49,\s*"calls": 92\s*\}`))
	})
})

var _ = Describe("the text report's count of differences", func() {
	It("says how much of a buffer differs where the mismatches leave ranges out, and only there", func() {
		res := corruptedResult(probes.Exact)
		res.Differences = []capture.Difference{
			{Round: 1, Buffer: "dst", Ranges: 2467642, Bytes: 2683395, BufferBytes: 256 << 20},
			{Round: 1, Buffer: "bystander", Ranges: 1, Bytes: 2, BufferBytes: 64},
		}
		rep := reports.New("replaycheck", "dev", reports.Options{})
		rep.Add(res)
		out := string(writeText(rep, reports.TextOptions{}))
		Expect(out).To(ContainSubstring("differs   round 1  dst  2467642 ranges, 2683395 of 268435456 bytes (1%), 1 of them shown"))
		Expect(out).NotTo(ContainSubstring("round 1  bystander  1 ranges"), "every range of bystander is shown above")
	})

	DescribeTable("gives a buffer's differing share as a percentage a reader can trust",
		func(part, whole int64, want string) { Expect(reports.Share(part, whole)).To(Equal(want)) },
		Entry("none", int64(0), int64(100), "0%"),
		Entry("all", int64(100), int64(100), "100%"),
		Entry("a little, never 0%", int64(1), int64(1<<30), "<0.01%"),
		Entry("nearly all, never 100%", int64(1<<30-1), int64(1<<30), ">99.9%"),
		Entry("two figures", int64(2683395), int64(256<<20), "1%"),
		Entry("two figures of a third", int64(1), int64(3), "33%"),
		Entry("nearly all, not 1e+02", int64(32640), int64(32768), "99.6%"),
		Entry("99 and a bit", int64(9901), int64(10000), "99.0%"),
		Entry("an empty buffer", int64(0), int64(0), "-"),
	)
})

var _ = Describe("the text report", func() {
	var out string
	BeforeEach(func() {
		out = string(writeText(sampleReport(reports.Options{}), reports.TextOptions{}))
	})

	DescribeTable("shows what went wrong",
		func(want string) {
			Expect(out).To(ContainSubstring(want))
		},
		Entry("a failure where exact was promised", "FAIL  rebase/promised-exact"),
		Entry("the expected bytes of a mismatch", "want 07070707"),
		Entry("the bytes it got instead", "got  00000000"),
		Entry("the address a graph captured", "graph main captured dst at 0x100000000+64 (generation 1)"),
		Entry("who owns a stale range now", "now buffer bystander"),
		Entry("a rejection's code, name and class", "107027 ACL_ERROR_RT_STREAM_CAPTURED [captured-stream]"),
		Entry("the step of a timeline event", "between op 2"),
		Entry("the thread of an event off the main thread", "(thread other)"),
		Entry("a leak", "leak      graphs: 1 live, 0 before"),
		Entry("the summary line", "7 instances: 3 pass, 2 fail, 1 skip, 1 uncharacterised (exact 2, rejected 1, corrupted 2, error 1, skipped 1)"),
	)

	// Engine bookkeeping is not what a reader needs under a failure.
	DescribeTable("hides engine bookkeeping from timelines",
		func(call string) {
			Expect(out).NotTo(ContainSubstring(call), "text report shows engine bookkeeping in a timeline")
		},
		Entry("the verify sync", "SyncDevice (verify)"),
		Entry("setup stream creation", "CreateStream main"),
	)
})

var _ = Describe("the text report's skipped instances", func() {
	skipped := func(probe, reason string) *capture.Result {
		r := skippedResult()
		r.ID, r.Probe, r.Reason = probe+"@global/guards-on", probe, reason
		return r
	}
	text := func(results ...*capture.Result) string {
		rep := reports.New("replaycheck", "v0.0.0-test", reports.Options{})
		for _, r := range results {
			rep.Add(r)
		}
		return string(writeText(rep, reports.TextOptions{}))
	}
	long := `runtime mine lacks capability "non-blocking-streams", which the probe's non-blocking streams need (main): its create_stream_with_flags is NULL`

	It("lists each reason whole, with how many instances it skipped, in the order they came", func() {
		out := text(skipped("a/x", long), exactResult(), skipped("a/y", "other"), skipped("a/z", long+"\nsecond line"))
		Expect(out).To(ContainSubstring("...\n"), "the table cuts the reason short")
		Expect(out).To(HaveSuffix("\nskipped: 2 instances: " + long + "\nskipped: 1 instance: other\n"))
	})

	It("lists the first reasons, and counts the rest", func() {
		var rs []*capture.Result
		for i := range 10 {
			rs = append(rs, skipped(fmt.Sprintf("a/p%d", i), fmt.Sprintf("reason %d", i)), skipped(fmt.Sprintf("b/p%d", i), fmt.Sprintf("reason %d", i)))
		}
		out := text(rs...)
		Expect(out).To(ContainSubstring("skipped: 2 instances: reason 7\nskipped: 4 instances for 2 other reasons (the JSON report has each)\n"))
		Expect(out).NotTo(ContainSubstring("skipped: 2 instances: reason 8"))
	})

	It("says a run that skipped every instance verified nothing, and one that ran any does not", func() {
		Expect(text(skipped("a/x", "r"))).To(HaveSuffix("skipped: 1 instance: r\nnothing was verified: every instance was skipped\n"))
		Expect(text(skipped("a/x", "r"), exactResult())).NotTo(ContainSubstring("nothing was verified"))
		Expect(text()).NotTo(ContainSubstring("nothing was verified"))
	})
})

type failingWriter struct{ n int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.n--; f.n < 0 {
		return 0, os.ErrClosed
	}
	return len(p), nil
}

var _ = Describe("write errors", func() {
	It("surface from WriteText", func() {
		Expect(reports.WriteText(&failingWriter{n: 2}, sampleReport(reports.Options{}), reports.TextOptions{})).NotTo(Succeed(), "WriteText swallowed a write error")
	})

	It("surface from WriteJSON", func() {
		Expect(reports.WriteJSON(&failingWriter{}, sampleReport(reports.Options{}))).NotTo(Succeed(), "WriteJSON swallowed a write error")
	})
})

var _ = Describe("a graph holding work that was not captured", func() {
	It("is shown under the instance with the node and its range", func() {
		res := exactResult()
		res.Outcome, res.Reason = probes.Corrupted, "no checked byte differs, but graph main holds a memset node that writes 0x100000000+64, which no buffer of the capture's ops writes"
		res.Graphs = []capture.GraphCheck{{Capture: "main", Nodes: 2, Work: 2, Issued: 1, Unrecorded: []capture.NodeRange{
			{Kind: "memset", Range: device.Ptr{Addr: 0x100000000, Bytes: 64}, Access: capture.AccessWrite},
		}}}
		rep := reports.New("replaycheck", "dev", reports.Options{})
		rep.Add(res)
		out := string(writeText(rep, reports.TextOptions{}))
		Expect(out).To(ContainSubstring("graph     of capture main: 2 nodes, 2 of them work, for 1 captured fill, copy or axpy op"))
		Expect(out).To(ContainSubstring("a memset node writes 0x100000000+64, which no buffer of the capture's ops writes"))
	})
})
