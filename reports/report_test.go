package reports_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/runtime"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with the current output")

func ptr[T any](v T) *T { return &v }

// Hand-built results, one per shape a writer must render: exact, corrupted with mismatches and a
// stale range (expected, so it passes), corrupted where exact was promised (fails), rejected,
// skipped, uncharacterised, and an engine error with a leak.
func exactResult() *capture.Result {
	return &capture.Result{
		ID: "basic/copy@global/guards-off", Probe: "basic/copy", Set: "basic", Hazard: "none",
		Mode: runtime.Global, Guarded: false, Replays: 3, Backend: "sim", Device: "sim device 0 (cann)",
		Outcome: probes.Exact, Expected: probes.Exact,
		Reason: "3 of 3 rounds byte-identical to the oracle, no error",
		Rounds: 3,
		Ledger: []capture.Residency{
			{Capture: "main", Buffer: "src", Range: runtime.Ptr{Addr: 0x100000000, Bytes: 64}, Generation: 1},
			{Capture: "main", Buffer: "dst", Range: runtime.Ptr{Addr: 0x100000200, Bytes: 64}, Generation: 2},
		},
		Timeline: []capture.Event{
			{Seq: 1, Phase: "capture", Step: "capture main op 1", Call: "Copy(dst 0x100000200+64 <- src 0x100000000+64) on main", Captured: true},
		},
		Duration: 1500 * time.Microsecond,
	}
}

func rebaseTimeline() []capture.Event {
	return []capture.Event{
		{Seq: 1, Phase: "setup", Call: "CreateStream main"},
		{Seq: 2, Phase: "setup", Call: "Malloc(dst, 64) = 0x100000000+64"},
		{Seq: 3, Phase: "capture", Step: "capture main begin", Call: "BeginCapture(main, global)"},
		{Seq: 4, Phase: "capture", Step: "capture main op 1", Call: "Fill(dst 0x100000000+64, 0x07) on main", Captured: true},
		{Seq: 5, Phase: "capture", Step: "capture main end", Call: "EndCapture(main) from main"},
		{Seq: 6, Phase: "between", Step: "between op 1", Call: "Free(dst 0x100000000+64) (grow to 128)"},
		{Seq: 7, Phase: "between", Step: "between op 1", Call: "Malloc(dst, 128) = 0x100000400+128"},
		{Seq: 8, Phase: "between", Step: "between op 2", Call: "Malloc(bystander, 64) = 0x100000000+64", Thread: runtime.Other},
		{Seq: 9, Phase: "replay", Step: "replay 1 main", Call: "Launch(graph main) on main", Round: 1},
		{Seq: 10, Phase: "verify", Call: "SyncDevice (verify)", Round: 1},
	}
}

func corruptedResult(expected probes.Outcome) *capture.Result {
	r := &capture.Result{
		ID: "rebase/grow-after-capture@global/guards-off", Probe: "rebase/grow-after-capture", Set: "rebase",
		Hazard: "rebase", Labels: []string{"retained"},
		Mode: runtime.Global, Guarded: false, Replays: 2, Backend: "sim", Device: "sim device 0 (cann)",
		Outcome: probes.Corrupted, Expected: expected,
		Reason: "2 of 2 rounds differ from the oracle, first at round 1 (dst at offset 0, 128 bytes); " +
			"graph main captured dst at 0x100000000+64, now buffer bystander 0x100000000+64 (generation 3)",
		Rounds: 2, CorruptedRounds: 2, FirstCorrupted: 1,
		Mismatches: []capture.Mismatch{
			{Round: 1, Buffer: "dst", Offset: 0, Length: 128,
				Want: bytes.Repeat([]byte{0x07}, capture.MaxShownBytes), Got: make([]byte, capture.MaxShownBytes)},
			{Round: 1, Buffer: "bystander", Offset: 4, Length: 2, Want: []byte{0, 0}, Got: []byte{7, 7}},
		},
		Ledger: []capture.Residency{{Capture: "main", Buffer: "dst", Range: runtime.Ptr{Addr: 0x100000000, Bytes: 64}, Generation: 1}},
		Stale: []capture.StaleRange{{
			Capture: "main", Buffer: "dst", Range: runtime.Ptr{Addr: 0x100000000, Bytes: 64}, Generation: 1,
			Now: "buffer bystander 0x100000000+64 (generation 3)", Owners: []string{"bystander"},
		}},
		Timeline: rebaseTimeline(),
		Duration: 2 * time.Millisecond,
	}
	if expected == probes.Exact {
		r.ID = "rebase/promised-exact@relaxed/guards-off"
		r.Probe = "rebase/promised-exact"
		r.Mode = runtime.Relaxed
	}
	return r
}

func rejectedResult() *capture.Result {
	return &capture.Result{
		ID: "sync/sync-in-capture@thread-local/guards-off", Probe: "sync/sync-in-capture", Set: "sync",
		Hazard: "sync-in-capture", Mode: runtime.ThreadLocal, Replays: 2, Backend: "sim", Device: "sim device 0 (cann)",
		Outcome: probes.Rejected, Expected: probes.Rejected, RejectedBy: []runtime.Class{runtime.ClassCapturedStream},
		Reason: "platform rejected capture main op 2 (SyncStream) with 107027 ACL_ERROR_RT_STREAM_CAPTURED " +
			"[captured-stream], capture not invalidated, later replays exact",
		Rounds: 2,
		Rejection: &capture.Rejection{
			Step: "capture main op 2", Op: "SyncStream", Code: 107027, Name: "ACL_ERROR_RT_STREAM_CAPTURED",
			Class: runtime.ClassCapturedStream, ReplaysExact: ptr(true),
		},
		Timeline: []capture.Event{
			{Seq: 4, Phase: "capture", Step: "capture main op 2", Call: "SyncStream(main)", Code: 107027,
				Class: runtime.ClassCapturedStream, Err: "sim: SyncStream: captured-stream (code 107027 ACL_ERROR_RT_STREAM_CAPTURED)"},
		},
		Duration: 700 * time.Microsecond,
	}
}

func skippedResult() *capture.Result {
	return &capture.Result{
		ID: "rebase/grow-after-capture@global/guards-on", Probe: "rebase/grow-after-capture", Set: "rebase",
		Hazard: "rebase", Mode: runtime.Global, Guarded: true, Replays: 2, Backend: "sim", Device: "sim device 0 (cann)",
		Outcome: probes.Skipped, Expected: probes.Refused,
		Reason: "guards on needs runtime/guard, which this build does not have yet",
	}
}

func uncharacterisedResult() *capture.Result {
	return &capture.Result{
		ID: "offcap/side-stream@global/guards-off", Probe: "offcap/side-stream", Set: "offcap",
		Hazard: "off-capture", Mode: runtime.Global, Replays: 2, Backend: "sim", Device: "sim device 0 (cann)",
		Outcome: probes.Exact, Reason: "2 of 2 rounds byte-identical to the oracle, no error", Rounds: 2,
		Timeline: []capture.Event{{Seq: 1, Phase: "prepare", Step: "prepare op 1", Call: "Fill(a 0x100000000+8, 0x01) on main"}},
		Duration: 300 * time.Microsecond,
	}
}

func erroredResult() *capture.Result {
	return &capture.Result{
		ID: "leak/forgotten-graph@global/guards-off", Probe: "leak/forgotten-graph", Set: "leak",
		Hazard: "none", Mode: runtime.Global, Replays: 1, Backend: "sim", Device: "sim device 0 (cann)",
		Outcome: probes.Errored, Expected: probes.Exact, Rounds: 1,
		Reason: "leaked after teardown: graphs: 1 live, 0 before",
		Leaks:  []string{"graphs: 1 live, 0 before"},
	}
}

func sampleReport(opt reports.Options) *reports.Report {
	rep := reports.New("replaycheck", "v0.0.0-test", opt)
	rep.Started = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rep.Backend, rep.Profile, rep.Device = "sim", "cann", "sim device 0 (cann)"
	for _, r := range []*capture.Result{
		exactResult(), corruptedResult(probes.Corrupted), corruptedResult(probes.Exact),
		rejectedResult(), skippedResult(), uncharacterisedResult(), erroredResult(),
	} {
		rep.Add(r)
	}
	return rep
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("updating golden file: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run go test ./reports -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got); run go test ./reports -update if the change is intended:\n%s", name, diff)
	}
}

func TestWriteTextGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := reports.WriteText(&buf, sampleReport(reports.Options{}), reports.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.txt", buf.Bytes())
}

func TestWriteTextColorGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := reports.WriteText(&buf, sampleReport(reports.Options{}), reports.TextOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	golden(t, "report-color.txt", buf.Bytes())
}

func TestWriteJSONGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := reports.WriteJSON(&buf, sampleReport(reports.Options{})); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json", buf.Bytes())
}

func TestEmptyReport(t *testing.T) {
	rep := reports.New("replaycheck", "dev", reports.Options{})
	rep.Backend = "sim"
	var text, js bytes.Buffer
	if err := reports.WriteText(&text, rep, reports.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := "replaycheck dev  backend sim\n\n0 instances\n"; text.String() != want {
		t.Errorf("empty text report = %q, want %q", text.String(), want)
	}
	if err := reports.WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	// An empty run is still a document with an empty results array, not null.
	if !strings.Contains(js.String(), `"results": []`) {
		t.Errorf("empty JSON report has no empty results array:\n%s", js.String())
	}
}

func TestSummaryCounts(t *testing.T) {
	s := sampleReport(reports.Options{}).Summary
	want := reports.Summary{
		Total: 7, Pass: 3, Fail: 2, Skip: 1, Uncharacterised: 1,
		ByOutcome: map[string]int{"exact": 2, "corrupted": 2, "rejected": 1, "skipped": 1, "error": 1},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	if !s.Failed() {
		t.Error("Failed() = false with two failing instances")
	}
}

func TestTimelineKeptOnlyWhenNotPass(t *testing.T) {
	for _, tc := range []struct {
		opt      reports.Options
		passKeep bool
	}{{reports.Options{}, false}, {reports.Options{AllTimelines: true}, true}} {
		rep := sampleReport(tc.opt)
		for _, e := range rep.Results {
			has := len(e.Timeline) > 0
			switch {
			case e.Verdict == "pass" && has != tc.passKeep:
				t.Errorf("AllTimelines=%v: pass %s has timeline=%v", tc.opt.AllTimelines, e.ID, has)
			case e.Verdict != "pass" && e.ID != "rebase/grow-after-capture@global/guards-on" && e.ID != "leak/forgotten-graph@global/guards-off" && !has:
				t.Errorf("AllTimelines=%v: %s %s lost its timeline", tc.opt.AllTimelines, e.Verdict, e.ID)
			}
		}
	}
}

func TestEntryFlattening(t *testing.T) {
	e := reports.EntryOf(corruptedResult(probes.Corrupted))
	if e.Mode != "global" || e.Guards != "off" || e.Verdict != "pass" || e.Outcome != "corrupted" || e.Expected != "corrupted" {
		t.Errorf("enums flattened wrong: mode %q guards %q verdict %q outcome %q expected %q", e.Mode, e.Guards, e.Verdict, e.Outcome, e.Expected)
	}
	if got := e.Stale[0].Range; got.Addr != "0x100000000" || got.Bytes != 64 {
		t.Errorf("stale range = %+v, want addr 0x100000000, 64 bytes", got)
	}
	if got := e.Mismatches[1]; got.Want != "0000" || got.Got != "0707" {
		t.Errorf("mismatch bytes = want %q got %q, want hex 0000 and 0707", got.Want, got.Got)
	}
	if e.DurationMS != 2 {
		t.Errorf("duration_ms = %v, want 2", e.DurationMS)
	}

	// The JSON field names are the contract with CI scripts: decode generically and look them up.
	var buf bytes.Buffer
	if err := reports.WriteJSON(&buf, sampleReport(reports.Options{})); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("report is not JSON: %v", err)
	}
	for _, key := range []string{"probe", "id", "set", "hazard", "mode", "guards", "outcome", "verdict", "verdict_reason", "reason", "rounds", "corrupted_rounds", "first_corrupted", "duration_ms"} {
		for i, r := range doc.Results {
			if _, ok := r[key]; !ok {
				t.Errorf("results[%d] has no %q", i, key)
			}
		}
	}
	rej, ok := doc.Results[3]["rejection"].(map[string]any)
	if !ok {
		t.Fatalf("results[3] has no rejection object: %v", doc.Results[3])
	}
	for _, key := range []string{"step", "op", "code", "name", "class", "invalidated", "replays_exact"} {
		if _, ok := rej[key]; !ok {
			t.Errorf("rejection has no %q", key)
		}
	}
	if _, ok := doc.Results[4]["expected"]; !ok {
		t.Error("skipped instance lost its expectation")
	}
	if _, ok := doc.Results[5]["expected"]; ok {
		t.Error("uncharacterised instance has an expected key; it must be omitted")
	}
}

func TestTextShowsWhatWentWrong(t *testing.T) {
	var buf bytes.Buffer
	if err := reports.WriteText(&buf, sampleReport(reports.Options{}), reports.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"FAIL  rebase/promised-exact",
		"want 07070707",
		"got  00000000",
		"graph main captured dst at 0x100000000+64 (generation 1)",
		"now buffer bystander",
		"107027 ACL_ERROR_RT_STREAM_CAPTURED [captured-stream]",
		"between op 2",
		"(thread other)",
		"leak      graphs: 1 live, 0 before",
		"7 instances: 3 pass, 2 fail, 1 skip, 1 uncharacterised (exact 2, rejected 1, corrupted 2, error 1, skipped 1)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	// Engine bookkeeping is not what a reader needs under a failure.
	if strings.Contains(out, "SyncDevice (verify)") || strings.Contains(out, "CreateStream main") {
		t.Errorf("text report shows engine bookkeeping in a timeline:\n%s", out)
	}
}

type failingWriter struct{ n int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.n--; f.n < 0 {
		return 0, os.ErrClosed
	}
	return len(p), nil
}

func TestWriteErrorsSurface(t *testing.T) {
	if err := reports.WriteText(&failingWriter{n: 2}, sampleReport(reports.Options{}), reports.TextOptions{}); err == nil {
		t.Error("WriteText swallowed a write error")
	}
	if err := reports.WriteJSON(&failingWriter{}, sampleReport(reports.Options{})); err == nil {
		t.Error("WriteJSON swallowed a write error")
	}
}
