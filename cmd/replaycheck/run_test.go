package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/run"
)

// finding is what a report says about one instance, without what depends on the device's history
// (addresses, capture and stream numbers differ when instances run on another device: a resumed
// run, a shard, the other front) or on time.
type finding struct {
	ID, Outcome, Status, Rule, ErrorKind, RejectionClass string
	Rounds, CorruptedRounds, FirstCorrupted, Code        int
}

func findings(es []reports.Entry) []finding {
	out := make([]finding, len(es))
	for i, e := range es {
		f := finding{ID: e.ID, Outcome: string(e.Outcome), Status: string(e.Verdict.Status), Rule: string(e.Verdict.Rule),
			Rounds: e.Rounds, CorruptedRounds: e.CorruptedRounds, FirstCorrupted: e.FirstCorrupted}
		if e.Error != nil {
			f.ErrorKind = string(e.Error.Kind)
		}
		if e.Rejection != nil {
			f.RejectionClass, f.Code = string(e.Rejection.Class), e.Rejection.Code
		}
		out[i] = f
	}
	return out
}

func readDocument(file string) *reports.Document {
	GinkgoHelper()
	data, err := os.ReadFile(file)
	Expect(err).NotTo(HaveOccurred())
	var d reports.Document
	Expect(json.Unmarshal(data, &d)).To(Succeed(), "%s is not a report document", file)
	return &d
}

func entryIDs(es []reports.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// journalLines counts the whole lines of dir's journal (0 while there is none).
func journalLines(dir string) int {
	data, _ := os.ReadFile(filepath.Join(dir, run.JournalFile))
	return bytes.Count(data, []byte("\n"))
}

// The run layer end to end, through the real binary: journal, resume, signals, shards, and the
// two fronts agreeing.
var _ = Describe("replaycheck run --out, --resume, --shard and signals", Ordered, cgoNeutral, func() {
	var bin string
	catalog, err := filepath.Abs(filepath.Join("..", "..", "specs"))
	if err != nil {
		panic(err)
	}
	// slow is a selection of the catalog that runs long enough (a few seconds) to be interrupted
	// between instances: every probe in global mode, 50 replay rounds each.
	slow := []string{"--modes", "global", "--replays", "50", catalog}

	BeforeAll(func() {
		bin = filepath.Join(GinkgoT().TempDir(), "replaycheck")
		build := exec.Command("go", "build", "-o", bin, ".")
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	})

	start := func(args ...string) *gexec.Session {
		GinkgoHelper()
		s, err := gexec.Start(exec.Command(bin, args...), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		return s
	}
	runOK := func(args ...string) {
		GinkgoHelper()
		Eventually(start(args...), "2m").Should(gexec.Exit(0))
	}
	// interrupted starts a run into dir, waits until the journal holds its header and a few
	// entries, and sends sig.
	interrupted := func(dir string, sig os.Signal) *gexec.Session {
		GinkgoHelper()
		s := start(append([]string{"run", "--out", dir}, slow...)...)
		Eventually(func() int { return journalLines(dir) }, "1m", "2ms").Should(BeNumerically(">=", 4))
		Expect(s.Command.Process.Signal(sig)).To(Succeed())
		return s
	}

	var full *reports.Document
	BeforeAll(func() {
		dir := filepath.Join(GinkgoT().TempDir(), "full")
		runOK(append([]string{"run", "--out", dir}, slow...)...)
		full = readDocument(filepath.Join(dir, run.ReportJSON))
		Expect(len(full.Results)).To(BeNumerically(">", 50))
		Expect(full.Runs[0].NotRun).To(BeEmpty())
		Expect(journalLines(dir)).To(Equal(1 + len(full.Results)))
	})

	It("resumes a run killed mid-run (SIGKILL, a torn last line) to the uninterrupted run's report", func() {
		dir := filepath.Join(GinkgoT().TempDir(), "killed")
		s := interrupted(dir, syscall.SIGKILL)
		Eventually(s, "1m").Should(gexec.Exit())
		kept := journalLines(dir) - 1
		Expect(kept).To(BeNumerically("<", len(full.Results)), "the kill landed mid-run")
		Expect(filepath.Join(dir, run.ReportJSON)).NotTo(BeAnExistingFile())
		// A line the kill cut short.
		f, err := os.OpenFile(filepath.Join(dir, run.JournalFile), os.O_APPEND|os.O_WRONLY, 0)
		Expect(err).NotTo(HaveOccurred())
		_, err = f.WriteString(`{"id":"basic/simple-rep`)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Close()).To(Succeed())

		runOK("run", "--resume", dir)
		resumed := readDocument(filepath.Join(dir, run.ReportJSON))
		Expect(resumed.Runs[0].NotRun).To(BeEmpty())
		Expect(findings(resumed.Results)).To(Equal(findings(full.Results)))
		Expect(resumed.Summary).To(Equal(full.Summary))
		Expect(journalLines(dir)).To(Equal(1 + len(full.Results)))
		Expect(filepath.Join(dir, run.ReportText)).To(BeAnExistingFile())
	})

	DescribeTable("stops after the instance in flight on a signal, with a complete journal and the instances not run listed",
		func(sig syscall.Signal, code int) {
			dir := filepath.Join(GinkgoT().TempDir(), "signalled")
			s := interrupted(dir, sig)
			Eventually(s, "1m").Should(gexec.Exit(code))
			Expect(string(s.Err.Contents())).To(ContainSubstring("stopping after the instance in flight"))
			Expect(string(s.Err.Contents())).To(MatchRegexp(`interrupted: \d+ of \d+ instances not run`))
			Expect(string(s.Out.Contents())).To(ContainSubstring("not run: "), "stdout keeps the report")

			doc := readDocument(filepath.Join(dir, run.ReportJSON))
			notRun := doc.Runs[0].NotRun
			Expect(notRun).NotTo(BeEmpty())
			j, err := run.ReadJournal(dir)
			Expect(err).NotTo(HaveOccurred())
			Expect(j.Runs).To(HaveLen(1))
			Expect(j.Runs[0].Entries).To(HaveLen(len(doc.Results)), "every instance that ran is journalled")
			Expect(journalLines(dir)).To(Equal(1+len(doc.Results)), "no torn line")
			Expect(append(entryIDs(doc.Results), notRun...)).To(Equal(j.Runs[0].Header.Instances),
				"what ran, then what did not, is the selection")
			Expect(findings(doc.Results)).To(Equal(findings(full.Results[:len(doc.Results)])))
			text, err := os.ReadFile(filepath.Join(dir, run.ReportText))
			Expect(err).NotTo(HaveOccurred())
			Expect(string(text)).To(ContainSubstring("  " + notRun[0] + "\n"))

			// And the stopped run resumes to the whole.
			runOK("run", "--resume", dir)
			Expect(findings(readDocument(filepath.Join(dir, run.ReportJSON)).Results)).To(Equal(findings(full.Results)))
		},
		Entry("SIGINT: 130", syscall.SIGINT, 130),
		Entry("SIGTERM: 143", syscall.SIGTERM, 143),
	)

	It("abandons the instance in flight on a second signal, and never journals it", func() {
		dir := filepath.Join(GinkgoT().TempDir(), "abandoned")
		// One instance that would replay for minutes.
		s := start("run", "--out", dir, "--probe", "basic/simple-replay", "--modes", "global",
			"--replays", "1000000", "--timeout", "10m", catalog)
		Eventually(func() int { return journalLines(dir) }, "1m", "2ms").Should(Equal(1))
		// The first instance is replaying (for minutes): give a race-built binary on a loaded
		// machine time to reach it, or the signal stops a run with nothing in flight (100ms was not
		// always enough at a load average of 10).
		time.Sleep(time.Second)
		Expect(s.Command.Process.Signal(syscall.SIGINT)).To(Succeed())
		Eventually(s.Err, "10s").Should(gbytes.Say("stopping after the instance in flight"))
		Consistently(s, "300ms").ShouldNot(gexec.Exit(), "the first signal lets the instance in flight finish")
		Expect(s.Command.Process.Signal(syscall.SIGINT)).To(Succeed())
		Eventually(s, "30s").Should(gexec.Exit(130))
		doc := readDocument(filepath.Join(dir, run.ReportJSON))
		Expect(doc.Results).To(BeEmpty())
		Expect(doc.Runs[0].NotRun).To(Equal([]string{"basic/simple-replay@global/guards-on", "basic/simple-replay@global/guards-off"}))
		Expect(journalLines(dir)).To(Equal(1))
	})

	It("abandons an instance hung inside a device call at once on a second signal", func() {
		dir := filepath.Join(GinkgoT().TempDir(), "hung")
		// A grace of 7.5s (a quarter of the timeout): the engine alone lets the hung call have it.
		s := start("run", "--out", dir, "--probe", "basic/simple-replay", "--fault", "hang@1", "--timeout", "30s", catalog)
		Eventually(func() int { return journalLines(dir) }, "1m", "2ms").Should(Equal(1))
		time.Sleep(500 * time.Millisecond) // the first instance is inside its hung launch
		Expect(s.Command.Process.Signal(syscall.SIGINT)).To(Succeed())
		Eventually(s.Err, "10s").Should(gbytes.Say("stopping after the instance in flight"))
		Expect(s.Command.Process.Signal(syscall.SIGINT)).To(Succeed())
		abandoned := time.Now()
		Eventually(s, "30s").Should(gexec.Exit(130))
		Expect(time.Since(abandoned)).To(BeNumerically("<", 3*time.Second), "well within the engine's grace of 7.5s")
		Expect(string(s.Err.Contents())).To(ContainSubstring("basic/simple-replay@global/guards-on abandoned inside a call still in flight"))
		doc := readDocument(filepath.Join(dir, run.ReportJSON))
		Expect(doc.Results).To(BeEmpty())
		Expect(doc.Runs[0].NotRun).To(HaveLen(6))
		Expect(journalLines(dir)).To(Equal(1), "an abandoned instance is never journalled")
	})

	It("lists every profile's run, with its instances not run, when a plan is interrupted", func() {
		dir := filepath.Join(GinkgoT().TempDir(), "plan-interrupted")
		s := start("run", "--out", dir, "--profile", "cann,cuda", "--probe", "basic/simple-replay", "--replays", "200000", catalog)
		Eventually(func() int { return journalLines(dir) }, "1m", "2ms").Should(Equal(1))
		Expect(s.Command.Process.Signal(syscall.SIGINT)).To(Succeed())
		Eventually(s, "1m").Should(gexec.Exit(130))
		doc := readDocument(filepath.Join(dir, run.ReportJSON))
		Expect(doc.Runs).To(HaveLen(2))
		Expect(doc.Runs[1].Platform).To(Equal("sim/cuda"))
		Expect(doc.Runs[1].NotRun).To(HaveLen(6), "the run that never began lists every instance")
		notRun := len(doc.Runs[0].NotRun) + len(doc.Runs[1].NotRun)
		Expect(notRun).To(Equal(12 - len(doc.Results)))
		Expect(string(s.Err.Contents())).To(ContainSubstring(fmt.Sprintf("interrupted: %d of 12 instances not run (sim/cann: %d, sim/cuda: 6)", notRun, len(doc.Runs[0].NotRun))))
		text, err := os.ReadFile(filepath.Join(dir, run.ReportText))
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Count(string(text), "(the run was interrupted)")).To(Equal(2))
	})

	It("exits 2, not 1, when the report cannot be written to stdout", func() {
		full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
		if err != nil {
			Skip("no /dev/full here")
		}
		defer full.Close()
		var stderr bytes.Buffer
		cmd := exec.Command(bin, "run", "--probe", "basic/simple-replay", catalog)
		cmd.Stdout, cmd.Stderr = full, &stderr
		Expect(cmd.Run()).To(MatchError(ContainSubstring("exit status 2")), stderr.String())
		Expect(stderr.String()).To(ContainSubstring("replaycheck run: writing the report: "))
	})

	It("splits the selection into shards that, merged in selection order, are the whole run", func() {
		args := []string{"run", "--format", "json", "--replays", "2", catalog}
		whole := start(args...)
		Eventually(whole, "2m").Should(gexec.Exit(0))
		var all reports.Document
		Expect(json.Unmarshal(whole.Out.Contents(), &all)).To(Succeed())
		order := entryIDs(all.Results)

		var merged []reports.Entry
		for _, k := range []string{"1/3", "2/3", "3/3"} {
			s := start(append(slices.Clone(args), "--shard", k)...)
			Eventually(s, "2m").Should(gexec.Exit(0))
			var part reports.Document
			Expect(json.Unmarshal(s.Out.Contents(), &part)).To(Succeed())
			Expect(part.Results).NotTo(BeEmpty())
			Expect(len(part.Results)).To(BeNumerically("<", len(all.Results)))
			merged = append(merged, part.Results...)
		}
		slices.SortFunc(merged, func(a, b reports.Entry) int { return slices.Index(order, a.ID) - slices.Index(order, b.ID) })
		Expect(findings(merged)).To(Equal(findings(all.Results)))
	})

	It("merges the shards' output directories (report merge) into the whole run, ordered by id", func() {
		args := []string{"run", "--format", "json", "--replays", "2", catalog}
		whole := start(args...)
		Eventually(whole, "2m").Should(gexec.Exit(0))
		var all reports.Document
		Expect(json.Unmarshal(whole.Out.Contents(), &all)).To(Succeed())
		slices.SortStableFunc(all.Results, func(a, b reports.Entry) int { return strings.Compare(a.ID, b.ID) })

		merge := []string{"report", "merge"}
		for i, k := range []string{"1/3", "2/3", "3/3"} {
			dir := filepath.Join(GinkgoT().TempDir(), "shard", string(rune('1'+i)))
			runOK(append(slices.Clone(args), "--shard", k, "--out", dir)...)
			merge = append(merge, dir)
		}
		s := start(merge...)
		Eventually(s, "2m").Should(gexec.Exit(0))
		var merged reports.Document
		Expect(json.Unmarshal(s.Out.Contents(), &merged)).To(Succeed())
		Expect(merged.Runs).To(HaveLen(1))
		Expect(merged.Runs[0].NotRun).To(BeEmpty())
		Expect(merged.Summary.Total).To(Equal(all.Summary.Total))
		Expect(findings(merged.Results)).To(Equal(findings(all.Results)))
	})

	It("gives the same outcome and verdict per instance as the Ginkgo suite", func() {
		suite, err := gexec.CompileTest(catalog)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
		dir := filepath.Join(GinkgoT().TempDir(), "suite")
		cmd := exec.Command(suite, "-ginkgo.label-filter=set:hazards || set:incidents", "-replaycheck.replays=2",
			"-replaycheck.report="+dir+"/")
		cmd.Dir = catalog
		cmd.Env = append(os.Environ(), "REPLAYCHECK_PROBES=")
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(s, "2m").Should(gexec.Exit(0))
		fromSuite := readDocument(filepath.Join(dir, run.ReportJSON))
		for _, name := range run.ReportFiles() {
			Expect(filepath.Join(dir, name)).To(BeAnExistingFile(), "the suite writes every format into a directory")
		}

		cli := start("run", "--format", "json", "--replays", "2", "--run", "^(hazards|incidents)/", catalog)
		Eventually(cli, "2m").Should(gexec.Exit(0))
		var fromCLI reports.Document
		Expect(json.Unmarshal(cli.Out.Contents(), &fromCLI)).To(Succeed())

		// The suite reports in id order, the CLI in selection order.
		byID := func(es []reports.Entry) map[string]finding {
			m := map[string]finding{}
			for _, f := range findings(es) {
				m[f.ID] = f
			}
			return m
		}
		Expect(len(fromCLI.Results)).To(BeNumerically(">", 50))
		Expect(byID(fromSuite.Results)).To(Equal(byID(fromCLI.Results)))
		Expect(fromSuite.Runs[0].Platform).To(Equal(fromCLI.Runs[0].Platform))
		// Each names the file relative to its own working directory.
		Expect(filepath.Base(fromSuite.Runs[0].Baseline)).To(Equal("sim-cann.yaml"))
		Expect(filepath.Base(fromCLI.Runs[0].Baseline)).To(Equal("sim-cann.yaml"))
	})

	It("refuses settings beside --resume, and a second run into a journalled directory", func() {
		dir := filepath.Join(GinkgoT().TempDir(), "once")
		runOK("run", "--out", dir, "--probe", "basic/simple-replay", "--replays", "2", catalog)
		s := start("run", "--out", dir, "--probe", "basic/simple-replay", catalog)
		Eventually(s, "1m").Should(gexec.Exit(2))
		Expect(string(s.Err.Contents())).To(ContainSubstring("already holds a journal"))
		s = start("run", "--resume", dir, "--replays", "3")
		Eventually(s, "1m").Should(gexec.Exit(2))
		Expect(string(s.Err.Contents())).To(ContainSubstring("--resume takes the run's settings"))

		// A journal another build wrote is not resumed by this one.
		path := filepath.Join(dir, run.JournalFile)
		data, err := os.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(path, bytes.Replace(data, []byte(`"version":"dev"`), []byte(`"version":"v1.2.3"`), 1), 0o644)).To(Succeed())
		s = start("run", "--resume", dir)
		Eventually(s, "1m").Should(gexec.Exit(2))
		Expect(string(s.Err.Contents())).To(ContainSubstring("the journal was written by replaycheck v1.2.3, this is replaycheck dev"))
	})

	It("writes every format of a run of several profiles into one directory, and resumes it mid-way", func() {
		dir := filepath.Join(GinkgoT().TempDir(), "plan")
		args := []string{"--profile", "cann,cuda", "--run", "^basic/", "--replays", "2", catalog}
		s := start(append([]string{"run", "--out", dir}, args...)...)
		Eventually(s, "2m").Should(gexec.Exit(0))
		Expect(string(s.Err.Contents())).To(ContainSubstring("wrote results.jsonl and report.json, report.txt, junit.xml, summary.md, report.html in " + dir))
		whole := readDocument(filepath.Join(dir, run.ReportJSON))
		Expect(whole.Runs).To(HaveLen(2))
		for _, name := range run.ReportFiles() {
			Expect(filepath.Join(dir, name)).To(BeAnExistingFile())
		}
		junit, err := os.ReadFile(filepath.Join(dir, run.ReportJUnit))
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Count(string(junit), "<testsuite ")).To(Equal(2), "one testsuite per profile")

		// Keep the first run, the second's header and one entry: killed during the second profile.
		n := len(whole.Results) / 2
		data, err := os.ReadFile(filepath.Join(dir, run.JournalFile))
		Expect(err).NotTo(HaveOccurred())
		lines := strings.SplitAfter(string(data), "\n")
		Expect(os.WriteFile(filepath.Join(dir, run.JournalFile), []byte(strings.Join(lines[:1+n+2], "")), 0o644)).To(Succeed())
		for _, name := range run.ReportFiles() {
			Expect(os.Remove(filepath.Join(dir, name))).To(Succeed())
		}
		runOK("run", "--resume", dir)
		resumed := readDocument(filepath.Join(dir, run.ReportJSON))
		Expect(resumed.Runs).To(HaveLen(2))
		Expect(findings(resumed.Results)).To(Equal(findings(whole.Results)))
		Expect(journalLines(dir)).To(Equal(2 + len(whole.Results)))
	})
})
