package reports_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/watch"
)

// staleFinding is a refused stale replay met three times: graph 0x5000 launched after the buffer it
// captured was freed and allocated again at the same address.
func staleFinding() watch.Finding {
	return watch.Finding{
		Kind: watch.StaleReplay, Refused: true, PID: 4242, TID: 4250, Call: "cuGraphLaunch",
		Detail:   "graph 0x5000 launched while 0x7f0000001000+256, which it captured, was freed and allocated again (generation 2)",
		Graph:    &watch.Graph{Handle: "0x5000", Exec: "0x5100", PID: 4242, Capture: 1, Stream: "0x10", Mode: "global", LaunchStream: "0x10"},
		Range:    &watch.Range{Addr: "0x7f0000001000", Bytes: 256},
		Captured: &watch.Site{Call: "cuMemcpyHtoDAsync_v2", What: "copy"},
		AtCapture: &watch.Holder{Addr: "0x7f0000001000", Bytes: 256, Kind: "device", Generation: 1, Call: "cuMemAlloc_v2",
			Freed: true, FreedBy: "cuMemFree_v2"},
		Now: &watch.Holder{Addr: "0x7f0000001000", Bytes: 256, Kind: "device", Generation: 2, Call: "cuMemAlloc_v2"},
		Stacks: []watch.Stack{
			{Role: "finding", Frames: []watch.Frame{
				{PC: "0x401a2b", Object: "/opt/app/serve", Offset: "0x1a2b", Function: "step", File: "serve.c", Line: 88},
				{PC: "0x401c00", Object: "/opt/app/serve", Offset: "0x1c00", Function: "main", File: "serve.c", Line: 120},
			}},
			{Role: "freed", Frames: []watch.Frame{
				{PC: "0x401900", Object: "/opt/app/serve", Offset: "0x1900", Function: "shrink_cache"},
			}},
		},
		Count: 3,
	}
}

// allocFinding is an allocation in a forked child's capture, outside any graph: no graph, a stack
// without frames (the writers must still write an array).
func allocFinding() watch.Finding {
	return watch.Finding{
		Kind: watch.AllocInCapture, PID: 4243, Call: "cuMemAllocAsync",
		Detail: "cuMemAllocAsync of 1024 bytes while capture 2 was active | *not* a pool block",
		Range:  &watch.Range{Addr: "0x7f0000100000", Bytes: 1024},
		Now:    &watch.Holder{Addr: "0x7f0000100000", Bytes: 1024, Kind: "async", Generation: 1, Call: "cuMemAllocAsync"},
		Stacks: []watch.Stack{{Role: "finding"}},
		Count:  1,
	}
}

// watchReport is the report of a watched program that a signal killed after two findings, with
// one suppression used, one unused and a note from the interposer.
func watchReport() *reports.Report {
	rep := reports.New("replaycheck", "v0.0.0-test", reports.Options{})
	rep.Started = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	rep.Ended = rep.Started.Add(1500 * time.Millisecond)
	rep.Backend, rep.Platform = "cuda", "watch/cuda"
	rep.Watch = &reports.WatchRun{
		Program: []string{"./serve", "--model", "tiny llama"}, ExitCode: 139, Signal: "SIGSEGV",
		Backend: "cuda", Refuse: true,
		Processes:          []reports.WatchProcess{{PID: 4242, Exe: "/opt/app/serve"}, {PID: 4243, PPID: 4242, Exe: "/opt/app/serve"}},
		Suppressed:         map[string]int{"torch-warmup": 2, "never-met": 0},
		UnusedSuppressions: []string{"old-nccl"},
		Notes:              []string{"kernel 0x9000 has no parameter layout: skipped"},
	}
	rep.Findings = []watch.Finding{staleFinding(), allocFinding()}
	return rep
}

// cleanWatch is a watched program that exited 0 with nothing found.
func cleanWatch() *reports.Report {
	rep := reports.New("replaycheck", "v0.0.0-test", reports.Options{})
	rep.Backend, rep.Platform = "acl", "watch/acl"
	rep.Watch = &reports.WatchRun{Program: []string{"./infer"}, Backend: "acl",
		Processes: []reports.WatchProcess{{PID: 77, Exe: "/usr/bin/infer"}}}
	return rep
}

func render(write func(*bytes.Buffer) error) string {
	GinkgoHelper()
	var buf bytes.Buffer
	Expect(write(&buf)).To(Succeed())
	return buf.String()
}

func watchText(rep *reports.Report) string {
	return render(func(b *bytes.Buffer) error { return reports.WriteText(b, rep, reports.TextOptions{}) })
}

// expectInOrder fails unless each of parts occurs in s after the one before.
func expectInOrder(s string, parts ...string) {
	GinkgoHelper()
	at := 0
	for _, p := range parts {
		i := strings.Index(s[at:], p)
		Expect(i).To(BeNumerically(">=", 0), "%q not found after offset %d in:\n%s", p, at, s)
		at += i + len(p)
	}
}

var _ = Describe("a watch report", func() {
	Describe("as text", func() {
		It("has the header, each finding with its stacks, the suppressions, the notes and the summary line last", func() {
			out := watchText(watchReport())
			expectInOrder(out,
				"replaycheck v0.0.0-test watch  backend cuda  refuse on\n",
				"program   ./serve --model 'tiny llama'\n",
				"exit      killed by SIGSEGV\n",
				"processes 4242 /opt/app/serve\n", "          4243 /opt/app/serve (child of 4242)\n",
				"\n"+watch.Describe(staleFinding())+"\n",
				"\n"+watch.Describe(allocFinding())+"\n",
				"\nsuppressed: torch-warmup: 2\n",
				"unused suppression: old-nccl\n",
				"note: kernel 0x9000 has no parameter layout: skipped\n",
			)
			// What a user must read of the stale replay, whatever watch.Describe's layout.
			stale := out[strings.Index(out, "watch: stale-replay"):strings.Index(out, "watch: alloc-in-capture")]
			for _, want := range []string{"[refused]", "0x5000", "capture 1", "0x7f0000001000", "cuMemcpyHtoDAsync_v2",
				"generation 1", "generation 2", "freed by cuMemFree_v2", "step (serve.c:88)", "main (serve.c:120)", "shrink_cache"} {
				Expect(stale).To(ContainSubstring(want))
			}
			Expect(out).NotTo(ContainSubstring("never-met"), "a suppression that kept nothing out is not a count")
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			Expect(lines[len(lines)-1]).To(Equal("2 findings (2 kinds), 2 suppressed"))
			Expect(out).NotTo(ContainSubstring("PROBE"), "no run table in a watch report")
		})

		It("marks each finding's first line in red for a terminal, and only when asked", func() {
			colored := render(func(b *bytes.Buffer) error {
				return reports.WriteText(b, watchReport(), reports.TextOptions{Color: true})
			})
			Expect(colored).To(ContainSubstring("\x1b[1;31mwatch: stale-replay in pid 4242: "))
			Expect(strings.Count(colored, "\x1b[0m")).To(Equal(2))
			Expect(watchText(watchReport())).NotTo(ContainSubstring("\x1b["))
		})

		It("counts kinds, not findings, in the summary line", func() {
			rep := watchReport()
			rep.Findings = append(rep.Findings, staleFinding())
			rep.Watch.Suppressed = nil
			Expect(reports.WatchSummary(rep)).To(Equal("3 findings (2 kinds), 0 suppressed"))
		})

		It("says a clean watch found nothing and how the program exited", func() {
			out := watchText(cleanWatch())
			Expect(out).To(ContainSubstring("exit      exit status 0\n"))
			Expect(out).To(ContainSubstring("refuse off"))
			Expect(out).NotTo(ContainSubstring("watch: "))
			Expect(out).To(HaveSuffix("\n0 findings (0 kinds), 0 suppressed\n"))
		})

		It("is not what a run report writes (the negative control: a run has no watch header)", func() {
			out := string(writeText(sampleReport(reports.Options{}), reports.TextOptions{}))
			Expect(out).NotTo(ContainSubstring(" watch "))
			Expect(out).NotTo(ContainSubstring("suppressed"))
		})
	})

	Describe("as a Markdown summary", func() {
		It("has a verdict line, a table of the findings, each finding's text, the suppressions and notes", func() {
			out := string(writeMarkdown(watchReport()))
			expectInOrder(out,
				"# replaycheck v0.0.0-test watch `./serve --model 'tiny llama'`\n",
				"- ❌ **2 findings (2 kinds), 2 suppressed**<br><sub>killed by SIGSEGV, backend cuda, refuse on</sub>",
				"## Findings (2)",
				"| Kind | Count | PID | Graph | Range | Detail | Refused |",
				"| stale-replay | 3 | 4242 | 0x5000 (capture 1) | 0x7f0000001000+256 | graph 0x5000 launched",
				"| alloc-in-capture | 1 | 4243 | - | 0x7f0000100000+1024 | ",
				"### ❌ 1. stale-replay in pid 4242",
				"```text\n"+watch.Describe(staleFinding())+"\n```",
				"### ❌ 2. alloc-in-capture in pid 4243",
				"```text\n"+watch.Describe(allocFinding())+"\n```",
				"## Suppressed (2)", "- torch-warmup: 2",
				"## Unused suppressions (1)", "- old-nccl",
				"## Notes (1)", "- kernel 0x9000 has no parameter layout: skipped",
			)
			var rows []string
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "| ") {
					rows = append(rows, l)
				}
			}
			Expect(rows).To(HaveLen(4), "header, rule and a row per finding")
			for _, r := range rows {
				Expect(cellCount(r)).To(Equal(7), "the detail's pipe stays in its cell: %s", r)
			}
			Expect(rows[2]).To(HaveSuffix("| yes |"), "the stale replay was refused")
			Expect(rows[3]).To(HaveSuffix("| - |"))
			Expect(rows[3]).To(ContainSubstring(`\*not\*`), "Markdown in a detail is escaped")
			Expect(out).NotTo(ContainSubstring("## Outcomes"), "no run matrix in a watch summary")
		})

		It("marks a clean watch ✅ and says there are no findings", func() {
			out := string(writeMarkdown(cleanWatch()))
			Expect(out).To(ContainSubstring("- ✅ **0 findings (0 kinds), 0 suppressed**"))
			Expect(out).To(ContainSubstring("## Findings (0)\n\nNo findings.\n"))
			Expect(out).NotTo(ContainSubstring("| Kind |"))
		})

		It("never marks ✅ a program a signal killed", func() {
			rep := cleanWatch()
			rep.Watch.Signal = "SIGABRT"
			Expect(string(writeMarkdown(rep))).To(ContainSubstring("- ⚠️ **0 findings"))
		})
	})

	Describe("as JUnit", func() {
		It("is one testsuite \"replaycheck watch\" with a failing testcase per finding", func() {
			d := parseJUnit(writeJUnit(watchReport()))
			Expect(d.Suites).To(HaveLen(1))
			s := d.Suites[0]
			Expect(s.Name).To(Equal(reports.WatchSuite))
			Expect(s.Tests).To(Equal(3), "two findings and the signal")
			Expect(s.Failures).To(Equal(2))
			Expect(s.Errors).To(Equal(1))
			Expect(d.Failures).To(Equal(2))
			stale := caseNamed(s, "stale-replay graph 0x5000 range 0x7f0000001000+256")
			Expect(stale.Classname).To(Equal("stale-replay"))
			Expect(stale.Failure).NotTo(BeNil())
			Expect(stale.Failure.Message).To(HavePrefix("watch: stale-replay in pid 4242: " + staleFinding().Detail))
			Expect(stale.Failure.Message).NotTo(ContainSubstring("\n"))
			Expect(stale.Failure.Type).To(Equal("stale-replay"))
			Expect(stale.Failure.Body).To(Equal(watch.Describe(staleFinding())))
			Expect(stale.Failure.Body).To(HavePrefix(stale.Failure.Message + "\n"))
			Expect(stale.Failure.Body).To(ContainSubstring("step (serve.c:88)"), "the body has the stacks")
			alloc := caseNamed(s, "alloc-in-capture range 0x7f0000100000+1024")
			Expect(alloc.Failure).NotTo(BeNil())
			crash := caseNamed(s, "program killed by SIGSEGV")
			Expect(crash.Error).NotTo(BeNil())
			Expect(crash.Error.Type).To(Equal("signal"))
			props := map[string]string{}
			for _, p := range s.Properties {
				props[p.Name] = p.Value
			}
			Expect(props).To(HaveKeyWithValue("program", "./serve --model 'tiny llama'"))
			Expect(props).To(HaveKeyWithValue("backend", "cuda"))
			Expect(props).To(HaveKeyWithValue("refuse", "on"))
		})

		It("names two sites at one graph and range apart", func() {
			rep := watchReport()
			other := staleFinding()
			other.Call = "cuGraphLaunch_ptsz"
			rep.Findings = append(rep.Findings, other)
			s := parseJUnit(writeJUnit(rep)).Suites[0]
			caseNamed(s, "stale-replay graph 0x5000 range 0x7f0000001000+256")
			caseNamed(s, "stale-replay graph 0x5000 range 0x7f0000001000+256 #2")
		})

		It("is one passing testcase \"no findings\" for a clean watch", func() {
			d := parseJUnit(writeJUnit(cleanWatch()))
			Expect(d.Suites).To(HaveLen(1))
			s := d.Suites[0]
			Expect(s.Name).To(Equal(reports.WatchSuite))
			Expect(s.Cases).To(HaveLen(1))
			c := s.Cases[0]
			Expect(c.Name).To(Equal("no findings"))
			Expect(c.Failure).To(BeNil())
			Expect(c.Error).To(BeNil())
			Expect(c.Skipped).To(BeNil())
			Expect(d.Failures + d.Errors + d.Skipped).To(BeZero())
		})
	})

	Describe("as HTML", func() {
		write := func(rep *reports.Report) string {
			return render(func(b *bytes.Buffer) error { return reports.WriteHTML(b, rep) })
		}

		It("has a Findings table, a row per finding opening onto its stacks, and the suppressions and notes", func() {
			out := write(watchReport())
			counts, err := page([]byte(out))
			Expect(err).NotTo(HaveOccurred(), "the page does not parse")
			Expect(counts["table.findings"]).To(Equal(1))
			Expect(counts["details.finding"]).To(Equal(2), "one expandable row per finding")
			Expect(counts["tr"]).To(Equal(3), "the header and a row per finding")
			Expect(counts["svg.matrix"]).To(BeZero())
			Expect(counts["p.legend"]).To(BeZero(), "the outcome legend says nothing of findings")
			Expect(counts["script"]).To(BeZero())
			Expect(out).To(ContainSubstring("<title>replaycheck v0.0.0-test watch report</title>"))
			expectInOrder(out,
				"2 findings (2 kinds), 2 suppressed", "killed by SIGSEGV, backend cuda, refuse on",
				"<th>kind</th><th>count</th><th>pid</th><th>graph</th><th>range</th>",
				`<td class="kind">stale-replay</td><td>3</td><td>4242</td><td>0x5000 (capture 1)</td><td>0x7f0000001000&#43;256</td>`,
				"<pre>watch: stale-replay in pid 4242", "step (serve.c:88)", "</pre>",
				"<td>refused</td>",
				`<td class="kind">alloc-in-capture</td>`,
				"<h3>Suppressed</h3>", "torch-warmup: 2", "<h3>Unused suppressions</h3>", "old-nccl",
				"<h3>Notes</h3>", "kernel 0x9000 has no parameter layout: skipped",
			)
		})

		It("escapes what a finding says", func() {
			rep := watchReport()
			rep.Findings[1].Detail = `<script>alert("x")</script>`
			out := write(rep)
			Expect(out).NotTo(ContainSubstring("<script>"))
			Expect(out).To(ContainSubstring("&lt;script&gt;"))
		})

		It("says a clean watch found nothing", func() {
			out := write(cleanWatch())
			counts, err := page([]byte(out))
			Expect(err).NotTo(HaveOccurred())
			Expect(counts["table.findings"]).To(BeZero())
			Expect(counts["p.clean"]).To(Equal(1))
			Expect(out).To(ContainSubstring("No findings."))
		})
	})

	Describe("as JSON", func() {
		writeDoc := func(rep *reports.Report) map[string]any {
			GinkgoHelper()
			var doc map[string]any
			Expect(json.Unmarshal([]byte(render(func(b *bytes.Buffer) error { return reports.WriteJSON(b, rep) })), &doc)).To(Succeed())
			return doc
		}

		It("has findings[] with every field of a finding, and the watch header", func() {
			doc := writeDoc(watchReport())
			fs := doc["findings"].([]any)
			Expect(fs).To(HaveLen(2))
			stale := fs[0].(map[string]any)
			for _, key := range []string{"kind", "refused", "pid", "graph", "range", "stacks", "count", "call", "detail", "captured", "at_capture", "now"} {
				Expect(stale).To(HaveKey(key))
			}
			Expect(stale["kind"]).To(Equal("stale-replay"))
			Expect(stale["refused"]).To(BeTrue())
			alloc := fs[1].(map[string]any)
			Expect(alloc).To(HaveKeyWithValue("graph", BeNil()))
			Expect(alloc["stacks"].([]any)[0].(map[string]any)["frames"]).To(Equal([]any{}), "frames are an array, never null")
			w := doc["watch"].(map[string]any)
			Expect(w["program"]).To(Equal([]any{"./serve", "--model", "tiny llama"}))
			Expect(w["signal"]).To(Equal("SIGSEGV"))
			Expect(w["refuse"]).To(BeTrue())
			Expect(w["suppressed"]).To(HaveKeyWithValue("torch-warmup", BeNumerically("==", 2)))
			Expect(doc["results"]).To(BeEmpty())
		})

		It("leaves a run report without findings or watch (the existing format unchanged)", func() {
			doc := writeDoc(sampleReport(reports.Options{}))
			Expect(doc).NotTo(HaveKey("findings"))
			Expect(doc).NotTo(HaveKey("watch"))
		})

		It("is valid against the schema, clean or not", func() {
			schema := decoded(reports.Schema())
			for _, rep := range []*reports.Report{watchReport(), cleanWatch()} {
				Expect(validate(schema, schema, writeDoc(rep), "$")).To(BeEmpty())
			}
		})

		It("fails the schema without a finding's kind, or with a kind no checker makes (the negative controls)", func() {
			schema := decoded(reports.Schema())
			doc := writeDoc(watchReport())
			f := doc["findings"].([]any)[0].(map[string]any)
			delete(f, "kind")
			Expect(validate(schema, schema, doc, "$")).To(ConsistOf(ContainSubstring(`$.findings[0]: required "kind" missing`)))
			f["kind"] = "stale-ish"
			Expect(validate(schema, schema, doc, "$")).To(ConsistOf(ContainSubstring(`$.findings[0].kind: stale-ish is not one of`)))
			f["kind"] = "stale-replay"
			Expect(validate(schema, schema, doc, "$")).To(BeEmpty(), "the control: the same document with its kind back is valid")
		})

		It("requires what the issue names of every finding, and the watch header's program", func() {
			schema := decoded(reports.Schema())
			finding := schema["$defs"].(map[string]any)["Finding"].(map[string]any)
			Expect(finding["required"]).To(ContainElements("kind", "refused", "pid", "graph", "range", "stacks"))
			run := schema["$defs"].(map[string]any)["WatchRun"].(map[string]any)
			Expect(run["required"]).To(ContainElements("program", "exit_code", "backend", "refuse"))
			for _, key := range []string{"range", "stacks", "graph"} {
				doc := writeDoc(watchReport())
				delete(doc["findings"].([]any)[0].(map[string]any), key)
				Expect(validate(schema, schema, doc, "$")).To(ConsistOf(ContainSubstring(`required "` + key + `" missing`)))
			}
		})

		It("reads back: the findings and the header survive, and the text is the same", func() {
			rep := watchReport()
			data := []byte(render(func(b *bytes.Buffer) error { return reports.WriteJSON(b, rep) }))
			d, err := reports.ReadDocument(data)
			Expect(err).NotTo(HaveOccurred())
			runs, err := d.Reports()
			Expect(err).NotTo(HaveOccurred())
			Expect(runs).To(HaveLen(1))
			Expect(runs[0].Watch).To(Equal(rep.Watch))
			Expect(runs[0].Findings).To(HaveLen(2))
			Expect(runs[0].Findings[0]).To(Equal(rep.Findings[0]))
			Expect(runs[0].Findings[1].Stacks[0].Frames).To(BeEmpty())
			Expect(watchText(runs[0])).To(Equal(watchText(rep)))
			var again bytes.Buffer
			Expect(reports.WriteJSON(&again, runs[0])).To(Succeed())
			Expect(again.String()).To(Equal(string(data)), "written again, byte for byte")
		})

		It("refuses on reading a finding of a kind no checker makes, naming its line and path", func() {
			data := []byte(render(func(b *bytes.Buffer) error { return reports.WriteJSON(b, watchReport()) }))
			bad := regexp.MustCompile(`"kind": "alloc-in-capture"`).ReplaceAll(data, []byte(`"kind": "alloc-in-kapture"`))
			Expect(bad).NotTo(Equal(data))
			re := readErr(bad)
			Expect(re.Path).To(Equal("findings[1].kind"))
			Expect(re.Line).To(Equal(lineOf(bad, `"kind": "alloc-in-kapture"`, 0)))
			Expect(re.Error()).To(ContainSubstring(`"alloc-in-kapture" is not one of stale-replay,`))
		})
	})
})
