package run_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/run"
)

// cancelling is a Sink that cancels the run's context once it has been handed n entries.
type cancelling struct {
	n      int
	cancel context.CancelFunc
}

func (s *cancelling) Result(reports.Entry) error {
	if s.n--; s.n == 0 {
		s.cancel()
	}
	return nil
}

// How a run ends early: interrupted between instances, abandoned inside a call, or unable to
// write one of its final files.
var _ = Describe("a run stopped early", func() {
	var cfg run.Config
	var instances []probes.Instance
	BeforeEach(func() {
		cfg = run.Defaults(env(nil))
		cfg.Paths, cfg.Replays, cfg.Run = []string{catalog}, 2, `^basic/`
		ps, err := run.Load(cfg.Paths...)
		Expect(err).NotTo(HaveOccurred())
		instances, err = run.Select(ps, cfg)
		Expect(err).NotTo(HaveOccurred())
	})

	It("lists every run of a plan, the runs it never began with every instance not run, and resumes to the whole", func() {
		cfg.Profile = "cann,cuda"
		dir := filepath.Join(GinkgoT().TempDir(), "plan")
		j, err := run.Create(dir)
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var reps []*reports.Report
		run.ExecutePlan(ctx, cfg, instances, func(rep *reports.Report, err error) {
			Expect(err).NotTo(HaveOccurred())
			reps = append(reps, rep)
		}, j, &cancelling{n: 2, cancel: cancel})
		Expect(j.Close()).To(Succeed())

		Expect(reps).To(HaveLen(2), "both profiles' runs")
		Expect(reps[0].Platform).To(Equal("sim/cann"))
		Expect(reps[0].Results).To(HaveLen(2))
		Expect(reps[0].NotRun).To(Equal(ids(instances[2:])))
		Expect(reps[1].Platform).To(Equal("sim/cuda"))
		Expect(reps[1].Profile).To(Equal("cuda"))
		Expect(reps[1].Results).To(BeEmpty())
		Expect(reps[1].NotRun).To(Equal(ids(instances)), "the run that never began lists every instance")
		doc := reports.DocumentOf(reps...)
		Expect(doc.Runs).To(HaveLen(2))
		Expect(doc.Runs[1].NotRun).To(HaveLen(len(instances)))

		jr, err := run.ReadJournal(dir)
		Expect(err).NotTo(HaveOccurred())
		Expect(jr.Runs).To(HaveLen(1), "nothing of the run that never began is journalled")
		rendered := jr.Reports()
		Expect(rendered).To(HaveLen(2), "the journal's reports name the run that never began, as the run's did")
		Expect(rendered[1].Platform).To(Equal("sim/cuda"))
		Expect(rendered[1].NotRun).To(Equal(ids(instances)))
		Expect(rendered[1].Device).To(BeEmpty())
		resumed, err := resume(dir, "", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(resumed).To(HaveLen(2))
		for _, r := range resumed {
			Expect(r.NotRun).To(BeEmpty())
			Expect(ids2(r.Results)).To(Equal(ids(instances)))
		}
	})

	It("reads back the journal's part of an unfinished run that a stopped resume does not continue", func() {
		cfg.Profile = "cann,cuda"
		dir := filepath.Join(GinkgoT().TempDir(), "plan")
		j, err := run.Create(dir)
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Stopped two instances into the second run.
		run.ExecutePlan(ctx, cfg, instances, func(*reports.Report, error) {}, j, &cancelling{n: len(instances) + 2, cancel: cancel})
		Expect(j.Close()).To(Succeed())

		var reps []*reports.Report
		Expect(run.Resume(ctx, dir, "", func(rep *reports.Report, err error) {
			Expect(err).NotTo(HaveOccurred())
			reps = append(reps, rep)
		})).To(Succeed())
		Expect(reps).To(HaveLen(2))
		Expect(reps[0].NotRun).To(BeEmpty())
		Expect(ids2(reps[1].Results)).To(Equal(ids(instances[:2])), "what the journal holds of the second run")
		Expect(reps[1].NotRun).To(Equal(ids(instances[2:])))
	})

	It("abandons an instance inside a hung call at once on the second stop, leaving it its device", func() {
		// A grace of 2s (a quarter of the timeout): the engine alone would give the hung call
		// that long after the abandon before it lets go.
		cfg.Timeout, cfg.Faults, cfg.Run = 8*time.Second, []string{"hang@1"}, `^basic/simple-replay@global/`
		ps, err := run.Load(cfg.Paths...)
		Expect(err).NotTo(HaveOccurred())
		instances, err = run.Select(ps, cfg)
		Expect(err).NotTo(HaveOccurred())
		Expect(instances).To(HaveLen(2))

		stop, stopRun := context.WithCancel(context.Background())
		defer stopRun()
		abandon, abandonRun := context.WithCancel(context.Background())
		defer abandonRun()
		var rec recorder
		type ended struct {
			rep *reports.Report
			err error
		}
		done := make(chan ended, 1)
		go func() {
			rep, err := run.Execute(run.AbandonWith(stop, abandon), cfg, instances, &rec)
			done <- ended{rep, err}
		}()
		Consistently(done, "300ms").ShouldNot(Receive(), "the first instance hangs in its first launch")
		stopRun()
		Consistently(done, "200ms").ShouldNot(Receive(), "the first stop waits for the instance in flight")
		abandonRun()
		abandonedAt := time.Now()
		var e ended
		Eventually(done, "10s").Should(Receive(&e))
		Expect(time.Since(abandonedAt)).To(BeNumerically("<", run.AbandonWait+time.Second),
			"Execute returned well within the engine's grace of 2s")
		Expect(e.rep).NotTo(BeNil())
		Expect(e.err).To(MatchError(run.ErrAbandonedInCall))
		Expect(e.err).To(MatchError(ContainSubstring(instances[0].ID() + " abandoned inside a call")))
		Expect(e.rep.Results).To(BeEmpty())
		Expect(e.rep.NotRun).To(Equal(ids(instances)))
		Expect(rec.entries).To(BeEmpty(), "an abandoned instance is never journalled")
		// The instance left behind lets go of its call after the grace and closes the platform:
		// the suite's leak check, five seconds after the last spec, sees nothing else of it.
	})

	It("writes every final file it can, and names each it cannot", func() {
		rep, err := run.Execute(context.Background(), cfg, instances)
		Expect(err).NotTo(HaveOccurred())
		dir := GinkgoT().TempDir()
		// A directory where report.json goes: the rename over it fails.
		Expect(os.MkdirAll(filepath.Join(dir, run.ReportJSON, "x"), 0o755)).To(Succeed())
		written, err := run.WriteReportFiles(dir, rep)
		Expect(err).To(MatchError(ContainSubstring("writing " + filepath.Join(dir, run.ReportJSON) + ": ")))
		Expect(written).To(Equal([]string{run.ReportText, run.ReportJUnit, run.ReportMD, run.ReportHTML}))
		for _, name := range written {
			Expect(filepath.Join(dir, name)).To(BeARegularFile())
		}
		Expect(run.WriteReport(dir, rep)).To(MatchError(ContainSubstring(run.ReportJSON)))
		left, err := filepath.Glob(filepath.Join(dir, ".*"))
		Expect(err).NotTo(HaveOccurred())
		Expect(left).To(BeEmpty(), "no temporary file is left behind")
	})
})

var _ = Describe("a resumed run", func() {
	It("keeps the faults its journal began with, even one a fresh run would refuse at a probe's own", func() {
		path := faultSet("launch-fail@2")
		c := run.Defaults(env(nil))
		c.Paths, c.Baseline = []string{path}, "none"
		ps, err := run.Load(path)
		Expect(err).NotTo(HaveOccurred())
		ins, err := run.Select(ps, c)
		Expect(err).NotTo(HaveOccurred())
		dir := filepath.Join(GinkgoT().TempDir(), "j")
		j, err := run.Create(dir)
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		run.ExecutePlan(ctx, c, ins, func(*reports.Report, error) {}, j, &cancelling{n: 1, cancel: cancel})
		Expect(j.Close()).To(Succeed())

		// As an earlier build wrote it: with a --fault at the call of the probe's own.
		file := filepath.Join(dir, run.JournalFile)
		data, err := os.ReadFile(file)
		Expect(err).NotTo(HaveOccurred())
		text := strings.Replace(string(data), `"timeout_ns"`, `"faults":["device-lost@2"],"timeout_ns"`, 1)
		Expect(text).NotTo(Equal(string(data)))
		Expect(os.WriteFile(file, []byte(text), 0o644)).To(Succeed())
		c.Faults = []string{"device-lost@2"}
		Expect(c.CheckFaults(ins)).NotTo(Succeed(), "a fresh run refuses it")

		reps, err := resume(dir, "", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(reps).To(HaveLen(1))
		Expect(reps[0].NotRun).To(BeEmpty())
		Expect(reps[0].Results).To(HaveLen(3))
	})
})
