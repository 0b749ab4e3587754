package run_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/google/uuid"

	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/run"
)

// catalog is the repository's probe catalog.
var catalog = filepath.Join("..", "specs")

func ids(ins []probes.Instance) []string {
	out := make([]string, len(ins))
	for i, in := range ins {
		out[i] = in.ID()
	}
	return out
}

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

var _ = Describe("Defaults", func() {
	It("defaults to the simulator, the backends' default profile, both guard settings and auto baselines", func() {
		c := run.Defaults(env(nil))
		Expect(c.Backend).To(Equal("sim"))
		Expect(c.Profile).To(Equal(backends.DefaultProfile))
		Expect(c.Guards).To(Equal("both"))
		Expect(c.Baseline).To(Equal("auto"))
		Expect(c.Check()).To(Succeed())
	})

	It("takes what the flag takes from the environment: REPLAYCHECK_REPLAYS=0 is each probe's own", func() {
		c := run.Defaults(env(map[string]string{run.EnvReplays: "0", run.EnvShard: "2/3", run.EnvSeed: "9", run.EnvModes: "global"}))
		Expect(c.Check()).To(Succeed())
		Expect(c.Replays).To(Equal(0))
		Expect(c.Shard).To(Equal(run.Shard{K: 2, N: 3}))
		Expect(c.Seed).To(Equal(uint64(9)))
		Expect(c.Modes).To(Equal("global"))
	})

	It("reports a malformed variable unless a flag replaced it", func() {
		c := run.Defaults(env(map[string]string{run.EnvReplays: "lots"}))
		Expect(c.Check()).To(MatchError(ContainSubstring(`REPLAYCHECK_REPLAYS="lots"`)))
		c.Set("replays")
		Expect(c.Check()).To(Succeed())

		c = run.Defaults(env(map[string]string{run.EnvReplays: "-1"}))
		Expect(c.Check()).To(MatchError(ContainSubstring("0 (each probe's own) to")))
	})

	It("names a bad setting as its flag", func() {
		c := run.Defaults(env(nil))
		c.Guards = "maybe"
		err := c.Check()
		var se *run.SettingError
		Expect(errors.As(err, &se)).To(BeTrue())
		Expect(se.Setting).To(Equal("guards"))
		Expect(err).To(MatchError(`--guards: "maybe" is not off, on or both`))
	})

	It("reads --replays, --seed and their variables as the probe language writes a number", func() {
		c := run.Defaults(env(map[string]string{run.EnvReplays: "0x10", run.EnvSeed: "10"}))
		Expect(c.Check()).To(Succeed())
		Expect(c.Replays).To(Equal(16))
		Expect(c.Seed).To(Equal(uint64(10)))
		for _, bad := range []string{"010", "+5", "-1", "1_000", ""} {
			c := run.Defaults(env(map[string]string{run.EnvReplays: bad}))
			if bad != "" {
				Expect(c.Check()).To(MatchError(ContainSubstring("REPLAYCHECK_REPLAYS")), bad)
			}
			Expect(run.ReplaysFlag(&c).Set(bad)).NotTo(Succeed(), bad)
			Expect(run.SeedFlag(&c).Set(bad)).NotTo(Succeed(), bad)
		}
		Expect(run.ReplaysFlag(&c).Set("9223372036854775808")).To(MatchError(ContainSubstring("too large")))
		Expect(run.ReplaysFlag(&c).Set("0x20")).To(Succeed())
		Expect(c.Replays).To(Equal(32))
		Expect(run.SeedFlag(&c).Set("18446744073709551615")).To(Succeed())
		Expect(c.Seed).To(Equal(uint64(18446744073709551615)))
		Expect(run.ReplaysFlag(&c).String()).To(Equal("32"))
	})

	It("blames a bad value on the variable it came from, until a flag gives the setting", func() {
		c := run.Defaults(env(map[string]string{run.EnvGuards: "maybe", run.EnvModes: "sideways"}))
		err := c.Check()
		var se *run.SettingError
		Expect(errors.As(err, &se)).To(BeTrue())
		Expect(se.Env).To(Equal(run.EnvModes))
		Expect(err).To(MatchError(HavePrefix(`REPLAYCHECK_MODES: `)))
		c.Modes = ""
		Expect(c.Check()).To(MatchError(`REPLAYCHECK_GUARDS: "maybe" is not off, on or both`))
		c.Set("guards")
		Expect(c.Check()).To(MatchError(`--guards: "maybe" is not off, on or both`))
	})
})

var _ = Describe("Shard", func() {
	var all []probes.Instance
	BeforeEach(func() {
		ps, err := run.Load(catalog)
		Expect(err).NotTo(HaveOccurred())
		all, err = run.Select(ps, run.Defaults(env(nil)))
		Expect(err).NotTo(HaveOccurred())
		Expect(len(all)).To(BeNumerically(">", 100))
	})

	It("reads K/N and nothing else", func() {
		Expect(run.ParseShard("2/5")).To(Equal(run.Shard{K: 2, N: 5}))
		Expect(run.ParseShard("")).To(Equal(run.Shard{}))
		for _, bad := range []string{"0/3", "4/3", "1/0", "1", "a/b", "1/2/3", "-1/2", "01/02", "+1/2"} {
			_, err := run.ParseShard(bad)
			Expect(err).To(HaveOccurred(), bad)
		}
	})

	It("splits the catalog into disjoint parts whose union, in selection order, is the whole", func() {
		for _, n := range []int{1, 2, 3, 7, 16} {
			seen := map[string]int{}
			var merged []string
			for k := 1; k <= n; k++ {
				c := run.Defaults(env(nil))
				c.Shard = run.Shard{K: k, N: n}
				ps, err := run.Load(catalog)
				Expect(err).NotTo(HaveOccurred())
				part, err := run.Select(ps, c)
				if errors.Is(err, run.ErrNothingSelected) {
					continue // a small catalog over many shards may leave one empty
				}
				Expect(err).NotTo(HaveOccurred())
				for _, id := range ids(part) {
					seen[id]++
					merged = append(merged, id)
				}
			}
			for id, times := range seen {
				Expect(times).To(Equal(1), "%s is in %d shards of %d", id, times, n)
			}
			order := ids(all)
			slices.SortFunc(merged, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
			Expect(merged).To(Equal(order), "the %d shards together", n)
		}
	})

	It("places an instance by its id alone: FNV-1a 64 of the id, mod N, is K-1", func() {
		// Pinned: a host that computes shards differently would split a catalog differently.
		Expect(run.Shard{K: 4, N: 7}.Holds("basic/simple-replay@global/guards-on")).To(BeTrue())
		Expect(run.Shard{K: 3, N: 3}.Holds("basic/simple-replay@global/guards-on")).To(BeTrue())
		Expect(run.Shard{K: 1, N: 7}.Holds("hazards/rebase-after-capture@global/guards-off")).To(BeTrue())
		Expect(run.Shard{K: 2, N: 3}.Holds("hazards/rebase-after-capture@global/guards-off")).To(BeTrue())
		Expect(run.Shard{K: 1, N: 3}.Holds("hazards/rebase-after-capture@global/guards-off")).To(BeFalse())
	})

	It("says when a shard holds nothing the other settings select", func() {
		ps, err := run.Load(catalog)
		Expect(err).NotTo(HaveOccurred())
		c := run.Defaults(env(nil))
		c.Run, c.Shard = `^basic/simple-replay@global/guards-on$`, run.Shard{K: 1, N: 3}
		_, err = run.Select(ps, c)
		Expect(err).To(MatchError(run.ErrNothingSelected))
		Expect(err).To(MatchError(ContainSubstring("--shard 1/3 holds none of the 1 instance")))

		c = run.Defaults(env(nil))
		c.Probes, c.Guards = []string{"hazards/host-staging-overwritten"}, "on" // a probe of guards [off]
		_, err = run.Select(ps, c)
		Expect(err).To(MatchError(HaveSuffix("no probe runs with --guards on (a probe's own modes and guards limit what can be selected)")))
		c.Modes = "relaxed"
		_, err = run.Select(ps, c)
		Expect(err).To(MatchError(ContainSubstring("no probe runs with --modes relaxed and --guards on (")))
	})
})

var _ = Describe("Covers", func() {
	It("takes exactly the catalog instances Select selects, under every narrowing", func() {
		ps, err := run.Load(catalog)
		Expect(err).NotTo(HaveOccurred())
		all, err := run.Select(ps, run.Defaults(env(nil)))
		Expect(err).NotTo(HaveOccurred())
		narrowings := map[string]func(*run.Config){
			"none":           func(*run.Config) {},
			"--probe":        func(c *run.Config) { c.Probes = []string{"basic/simple-replay", "hazards/rebase-after-capture"} },
			"--modes":        func(c *run.Config) { c.Modes = "relaxed,thread-local" },
			"--guards off":   func(c *run.Config) { c.Guards = "off" },
			"--run":          func(c *run.Config) { c.Run = `^hazards/.*@global` },
			"--shard":        func(c *run.Config) { c.Shard = run.Shard{K: 2, N: 3} },
			"all of them":    func(c *run.Config) { c.Modes, c.Guards, c.Run, c.Shard = "global", "on", "a", run.Shard{K: 1, N: 2} },
			"probe and mode": func(c *run.Config) { c.Probes, c.Modes = []string{"basic/simple-replay"}, "global" },
		}
		for name, narrow := range narrowings {
			c := run.Defaults(env(nil))
			narrow(&c)
			selected, err := run.Select(ps, c)
			Expect(err).NotTo(HaveOccurred(), name)
			want := map[string]bool{}
			for _, id := range ids(selected) {
				want[id] = true
			}
			for _, id := range ids(all) {
				covered, err := c.Covers(id)
				Expect(err).NotTo(HaveOccurred())
				Expect(covered).To(Equal(want[id]), "%s: %s", name, id)
			}
		}
		c := run.Defaults(env(nil))
		c.Probes = []string{"basic/simple-replay", "basic/simple-replay"}
		twice, err := run.Select(ps, c)
		Expect(err).NotTo(HaveOccurred())
		c.Probes = c.Probes[:1]
		Expect(run.Select(ps, c)).To(Equal(twice), "a probe id given twice selects its instances once")
		c.Profile = "cann, cuda,cann"
		Expect(c.Profiles()).To(Equal([]string{"cann", "cuda"}))
		_, err = c.Covers("not an id")
		Expect(err).To(MatchError(ContainSubstring(`instance id "not an id"`)))
	})
})

// recorder is a Sink that keeps what it is handed.
type recorder struct {
	header  *run.Header
	entries []reports.Entry
	fail    string // an id whose entry the sink refuses
}

func (r *recorder) Start(h run.Header) error { r.header = &h; return nil }
func (r *recorder) Result(e reports.Entry) error {
	r.entries = append(r.entries, e)
	if e.ID == r.fail {
		return errors.New("disk full")
	}
	return nil
}

// finding is what an entry says about its instance, without what depends on the device's history
// (addresses, capture and stream numbers: a resumed run starts on a fresh device) or on time.
type finding struct {
	ID, Outcome, Status, Rule, ErrorKind, RejectionClass string
	Rounds, CorruptedRounds, FirstCorrupted, Code        int
}

func stripped(rep *reports.Report) []finding {
	out := make([]finding, len(rep.Results))
	for i, e := range rep.Results {
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

var _ = Describe("Execute", func() {
	var cfg run.Config
	var instances []probes.Instance
	BeforeEach(func() {
		cfg = run.Defaults(env(nil))
		cfg.Paths, cfg.Replays, cfg.Run = []string{catalog}, 2, `^(basic|hazards)/`
		ps, err := run.Load(cfg.Paths...)
		Expect(err).NotTo(HaveOccurred())
		instances, err = run.Select(ps, cfg)
		Expect(err).NotTo(HaveOccurred())
	})

	It("runs and judges every instance in order, hands each to the sinks as it finishes, and finds the platform's baseline", func() {
		var rec recorder
		rep, err := run.Execute(context.Background(), cfg, instances, &rec)
		Expect(err).NotTo(HaveOccurred())
		Expect(rep.Platform).To(Equal("sim/cann"))
		Expect(rep.BaselineFile).To(HaveSuffix(filepath.Join("baselines", "sim-cann.yaml")))
		Expect(rep.NotRun).To(BeEmpty())
		Expect(ids2(rep.Results)).To(Equal(ids(instances)))
		Expect(rec.entries).To(Equal(rep.Results))
		Expect(rec.header.Instances).To(Equal(ids(instances)))
		Expect(rec.header.Platform).To(Equal("sim/cann"))
		Expect(rep.Summary.Failed()).To(BeFalse())
	})

	It("starts nothing once its context is done, and lists what it did not run", func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		rep, err := run.Execute(ctx, cfg, instances)
		Expect(err).NotTo(HaveOccurred())
		Expect(rep.Results).To(BeEmpty())
		Expect(rep.NotRun).To(Equal(ids(instances)))
		Expect(rep.Summary.Total).To(Equal(0))
	})

	It("stops after the instance whose entry a sink refused", func() {
		rec := recorder{fail: instances[2].ID()}
		rep, err := run.Execute(context.Background(), cfg, instances, &rec)
		Expect(err).To(MatchError(ContainSubstring("disk full")))
		Expect(rep.Results).To(HaveLen(3))
		Expect(rep.NotRun).To(Equal(ids(instances[3:])))
	})

	It("fails before running anything on a bad configuration", func() {
		cfg.Backend = "tpu"
		rep, err := run.Execute(context.Background(), cfg, instances)
		Expect(rep).To(BeNil())
		Expect(err).To(MatchError(ContainSubstring(`unknown backend "tpu"`)))
	})

	Describe("the journal", func() {
		var dir string
		var full *reports.Report
		BeforeEach(func() {
			dir = filepath.Join(GinkgoT().TempDir(), "out")
			j, err := run.Create(dir)
			Expect(err).NotTo(HaveOccurred())
			full, err = run.Execute(context.Background(), cfg, instances, j)
			Expect(err).NotTo(HaveOccurred())
			Expect(j.Close()).To(Succeed())
		})

		It("is a header line and one entry line per instance, which read back as the report holds them", func() {
			data, err := os.ReadFile(filepath.Join(dir, run.JournalFile))
			Expect(err).NotTo(HaveOccurred())
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			Expect(lines).To(HaveLen(1 + len(instances)))
			var h map[string]any
			Expect(json.Unmarshal([]byte(lines[0]), &h)).To(Succeed())
			Expect(h).To(HaveKeyWithValue("journal", run.JournalFormat))
			Expect(h).To(HaveKeyWithValue("platform", "sim/cann"))
			Expect(h).To(HaveKeyWithValue("runtime", "builtin"))
			Expect(h["config"]).To(HaveKeyWithValue("paths", ConsistOf(BeAnExistingFile())))

			j, err := run.ReadJournal(dir)
			Expect(err).NotTo(HaveOccurred())
			Expect(j.Runs).To(HaveLen(1))
			Expect(j.Runs[0].Entries).To(Equal(full.Results))
		})

		It("refuses a second run into the same directory, unless the first never started", func() {
			_, err := run.Create(dir)
			Expect(err).To(MatchError(ContainSubstring("already holds a journal")))

			other := filepath.Join(GinkgoT().TempDir(), "never")
			j, err := run.Create(other)
			Expect(err).NotTo(HaveOccurred())
			bad := cfg
			bad.Profile = "rocm"
			rep, err := run.Execute(context.Background(), bad, instances, j)
			Expect(rep).To(BeNil())
			Expect(err).To(MatchError(ContainSubstring(`unknown profile "rocm"`)))
			Expect(j.Close()).To(Succeed())
			j, err = run.Create(other)
			Expect(err).NotTo(HaveOccurred(), "an empty journal is not left behind")
			Expect(j.Close()).To(Succeed())
		})

		It("resumes after a torn last line and gives the uninterrupted run's report", func() {
			path := filepath.Join(dir, run.JournalFile)
			data, err := os.ReadFile(path)
			Expect(err).NotTo(HaveOccurred())
			lines := strings.SplitAfter(string(data), "\n")
			// The header, five entries, and half of the sixth: a run killed while writing it.
			kept := strings.Join(lines[:6], "") + lines[6][:len(lines[6])/2]
			Expect(os.WriteFile(path, []byte(kept), 0o644)).To(Succeed())

			j, err := run.ReadJournal(dir)
			Expect(err).NotTo(HaveOccurred())
			Expect(j.Runs[0].Entries).To(HaveLen(5))

			var rec recorder
			reps, err := resume(dir, "", &rec)
			Expect(err).NotTo(HaveOccurred())
			Expect(reps).To(HaveLen(1))
			rep := reps[0]
			Expect(rec.entries).To(HaveLen(len(instances)-5), "only the new entries go to the sinks")
			Expect(stripped(rep)).To(Equal(stripped(full)))
			Expect(rep.Started).To(Equal(full.Started))
			Expect(rep.Summary).To(Equal(full.Summary))
			Expect(rep.RunID).To(Equal(full.RunID), "a resumed run is the run the journal began")
			Expect(uuid.Validate(rep.RunID)).To(Succeed())
			Expect(rep.Host).NotTo(BeEmpty())
			Expect(rep.Ended).To(BeTemporally(">=", rep.Started))
			Expect(string(rep.Config)).To(ContainSubstring(`"backend":"sim"`))

			j, err = run.ReadJournal(dir)
			Expect(err).NotTo(HaveOccurred())
			Expect(ids2(j.Runs[0].Entries)).To(Equal(ids(instances)), "the torn line was cut off before appending")
		})

		It("refuses a journal broken in the middle, or without a header", func() {
			path := filepath.Join(dir, run.JournalFile)
			data, err := os.ReadFile(path)
			Expect(err).NotTo(HaveOccurred())
			lines := strings.SplitAfter(string(data), "\n")
			lines[2] = "{not json\n"
			Expect(os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644)).To(Succeed())
			_, err = run.ReadJournal(dir)
			Expect(err).To(MatchError(ContainSubstring("results.jsonl:3:")))

			Expect(os.WriteFile(path, []byte(lines[0][:10]), 0o644)).To(Succeed())
			_, err = run.ReadJournal(dir)
			Expect(err).To(MatchError(ContainSubstring("no header")))
		})

		It("refuses an entry no run writes, even as the last line: an outcome outside the schema, an instance twice", func() {
			path := filepath.Join(dir, run.JournalFile)
			data, err := os.ReadFile(path)
			Expect(err).NotTo(HaveOccurred())
			lines := strings.SplitAfter(string(data), "\n")
			last := len(lines) - 2 // the final element is the "" after the last newline
			Expect(lines[last]).To(ContainSubstring(`"outcome":`))
			bogus := regexp.MustCompile(`"outcome":"[a-z]+"`).ReplaceAllString(lines[last], `"outcome":"bogus"`)
			Expect(os.WriteFile(path, []byte(strings.Join(lines[:last], "")+bogus), 0o644)).To(Succeed())
			_, err = run.ReadJournal(dir)
			Expect(err).To(MatchError(MatchRegexp(`results\.jsonl:%d: instance \S+: .*outcome.*"bogus"`, last+1)))

			Expect(os.WriteFile(path, []byte(strings.Join(lines[:last+1], "")+lines[last]), 0o644)).To(Succeed())
			_, err = run.ReadJournal(dir)
			Expect(err).To(MatchError(MatchRegexp(`results\.jsonl:%d: instance \S+: again \(first on line %d\)`, last+2, last+1)))
		})

		It("refuses to be resumed by another version than the one that began it", func() {
			_, err := resume(dir, "v9.9.9", nil)
			Expect(err).To(MatchError(ContainSubstring("the journal was written by replaycheck dev, this is replaycheck v9.9.9")))
		})

		It("refuses a header of another format anywhere, even as the last line", func() {
			path := filepath.Join(dir, run.JournalFile)
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			Expect(err).NotTo(HaveOccurred())
			_, err = f.WriteString(`{"journal":"replaycheck-journal/v2"}` + "\n")
			Expect(err).NotTo(HaveOccurred())
			Expect(f.Close()).To(Succeed())
			_, err = run.ReadJournal(dir)
			Expect(err).To(MatchError(MatchRegexp(`results\.jsonl:\d+: not a replaycheck journal header \(want "replaycheck-journal/v1", found "replaycheck-journal/v2"\)`)))
		})

		It("writes every final file whole, by renaming", func() {
			full.NotRun = []string{"x/y@global/guards-on"}
			Expect(run.WriteReport(dir, full)).To(Succeed())
			var doc struct {
				Runs []struct {
					NotRun []string `json:"not_run"`
				}
				Results []reports.Entry
			}
			data, err := os.ReadFile(filepath.Join(dir, run.ReportJSON))
			Expect(err).NotTo(HaveOccurred())
			Expect(json.Unmarshal(data, &doc)).To(Succeed())
			Expect(doc.Results).To(HaveLen(len(instances)))
			Expect(doc.Runs[0].NotRun).To(Equal([]string{"x/y@global/guards-on"}))
			text, err := os.ReadFile(filepath.Join(dir, run.ReportText))
			Expect(err).NotTo(HaveOccurred())
			Expect(string(text)).To(ContainSubstring("not run: 1 instance (the run was interrupted)\n  x/y@global/guards-on\n"))
			Expect(string(text)).To(ContainSubstring("enforcement"), "the text ends with the enforcement table")

			// Every format, each as its writer writes it.
			Expect(run.ReportFiles()).To(Equal([]string{run.ReportJSON, run.ReportText, run.ReportJUnit, run.ReportMD, run.ReportHTML}))
			for name, write := range map[string]func(io.Writer, ...*reports.Report) error{
				run.ReportJSON: reports.WriteJSON, run.ReportJUnit: reports.WriteJUnit,
				run.ReportMD: reports.WriteMarkdown, run.ReportHTML: reports.WriteHTML,
			} {
				var want bytes.Buffer
				Expect(write(&want, full)).To(Succeed())
				got, err := os.ReadFile(filepath.Join(dir, name))
				Expect(err).NotTo(HaveOccurred())
				Expect(string(got)).To(Equal(want.String()), name)
			}
			left, err := filepath.Glob(filepath.Join(dir, ".*"))
			Expect(err).NotTo(HaveOccurred())
			Expect(left).To(BeEmpty(), "no temporary file is left behind")
		})
	})

	Describe("a plan of several profiles", func() {
		var dir string
		var full []*reports.Report
		BeforeEach(func() {
			cfg.Profile = "cann,cuda"
			cfg.Run = `^basic/`
			ps, err := run.Load(cfg.Paths...)
			Expect(err).NotTo(HaveOccurred())
			instances, err = run.Select(ps, cfg)
			Expect(err).NotTo(HaveOccurred())
			dir = filepath.Join(GinkgoT().TempDir(), "plan")
			j, err := run.Create(dir)
			Expect(err).NotTo(HaveOccurred())
			full = nil
			run.ExecutePlan(context.Background(), cfg, instances, func(rep *reports.Report, err error) {
				Expect(err).NotTo(HaveOccurred())
				full = append(full, rep)
			}, j)
			Expect(j.Close()).To(Succeed())
		})

		It("makes one run per profile, journalled one after the other, each header naming the plan", func() {
			Expect(full).To(HaveLen(2))
			Expect(full[0].Platform).To(Equal("sim/cann"))
			Expect(full[1].Platform).To(Equal("sim/cuda"))
			j, err := run.ReadJournal(dir)
			Expect(err).NotTo(HaveOccurred())
			Expect(j.Runs).To(HaveLen(2))
			for k, r := range j.Runs {
				Expect(r.Header.Config.Plan).To(Equal([]string{"cann", "cuda"}))
				Expect(r.Header.Platform).To(Equal(full[k].Platform))
				Expect(r.Entries).To(Equal(full[k].Results))
				Expect(r.Complete()).To(BeTrue())
			}
		})

		// cut keeps the journal's first n lines.
		cut := func(n int) {
			path := filepath.Join(dir, run.JournalFile)
			data, err := os.ReadFile(path)
			Expect(err).NotTo(HaveOccurred())
			lines := strings.SplitAfter(string(data), "\n")
			Expect(os.WriteFile(path, []byte(strings.Join(lines[:n], "")), 0o644)).To(Succeed())
		}

		It("resumes within the second run: the first is read back, the second continued", func() {
			cut(1 + len(instances) + 1 + 2) // the first run whole, the second's header and two entries
			var rec recorder
			reps, err := resume(dir, "", &rec)
			Expect(err).NotTo(HaveOccurred())
			Expect(reps).To(HaveLen(2))
			Expect(rec.entries).To(HaveLen(len(instances)-2), "only the second run's missing entries run")
			for k := range reps {
				Expect(stripped(reps[k])).To(Equal(stripped(full[k])))
				Expect(reps[k].RunID).To(Equal(full[k].RunID))
			}
			j, err := run.ReadJournal(dir)
			Expect(err).NotTo(HaveOccurred())
			Expect(j.Runs).To(HaveLen(2))
			Expect(ids2(j.Runs[1].Entries)).To(Equal(ids(instances)))
		})

		It("resumes a plan whose second run never began: it runs afresh and is appended", func() {
			cut(1 + len(instances))
			var rec recorder
			reps, err := resume(dir, "", &rec)
			Expect(err).NotTo(HaveOccurred())
			Expect(reps).To(HaveLen(2))
			Expect(rec.header.Platform).To(Equal("sim/cuda"))
			Expect(stripped(reps[1])).To(Equal(stripped(full[1])))
			Expect(reps[1].RunID).NotTo(Equal(full[1].RunID), "a run that never began is a new run")
			j, err := run.ReadJournal(dir)
			Expect(err).NotTo(HaveOccurred())
			Expect(j.Runs).To(HaveLen(2))
			Expect(j.Runs[1].Complete()).To(BeTrue())
		})

		It("refuses a journal whose unfinished run is followed by another", func() {
			path := filepath.Join(dir, run.JournalFile)
			data, err := os.ReadFile(path)
			Expect(err).NotTo(HaveOccurred())
			lines := strings.SplitAfter(string(data), "\n")
			// Drop the first run's last entry: an unfinished run before a whole one.
			kept := append(slices.Clone(lines[:len(instances)]), lines[len(instances)+1:]...)
			Expect(os.WriteFile(path, []byte(strings.Join(kept, "")), 0o644)).To(Succeed())
			_, err = resume(dir, "", nil)
			Expect(err).To(MatchError(ContainSubstring("run 1 of the journal (profile cann) is unfinished but another follows it")))
		})
	})
})

// resume resumes dir's journal (run.Resume) as version, gathering each run's report; the first
// run error is returned with them.
func resume(dir, version string, rec *recorder) ([]*reports.Report, error) {
	var reps []*reports.Report
	var first error
	var sinks []run.Sink
	if rec != nil {
		sinks = append(sinks, rec)
	}
	err := run.Resume(context.Background(), dir, version, func(rep *reports.Report, err error) {
		if rep != nil {
			reps = append(reps, rep)
		}
		if first == nil {
			first = err
		}
	}, sinks...)
	if err != nil {
		return nil, err
	}
	return reps, first
}

func ids2(es []reports.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}
