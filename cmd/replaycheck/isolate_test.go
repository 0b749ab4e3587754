package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/run"
	"github.com/replaycheck/replaycheck/runtime/plugin/seed"
)

// run --isolate: a SIGSEGV inside a driver library or a runtime plugin ends that instance in error
// and the run goes on; without --isolate the same crash ends the process (the negative control).
var _ = Describe("replaycheck run --isolate", Ordered, func() {
	var bin, catalog string
	// basic is a selection in which the crashing call (a device-to-device copy) is made by some
	// instances and not by others, crashing ones before healthy ones.
	basic := []string{"--run", "^basic/"}

	BeforeAll(func() {
		if !cgoBuild {
			Skip("the fake driver libraries and runtime plugins need a cgo build")
		}
		var err error
		catalog, err = filepath.Abs(filepath.Join("..", "..", "specs"))
		Expect(err).NotTo(HaveOccurred())
		bin = filepath.Join(GinkgoT().TempDir(), "replaycheck")
		out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	})

	// replaycheck runs the binary with env added and waits for it.
	replaycheck := func(env []string, args ...string) *gexec.Session {
		GinkgoHelper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(s, "3m").Should(gexec.Exit())
		return s
	}
	selected := func(args ...string) []string {
		GinkgoHelper()
		out, err := exec.Command(bin, append([]string{"list"}, append(args, catalog)...)...).Output()
		Expect(err).NotTo(HaveOccurred())
		var ids []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			ids = append(ids, strings.Fields(l)[0])
		}
		return ids
	}
	// journal is the entries of dir's results.jsonl (the header left out).
	journal := func(dir string) []reports.Entry {
		GinkgoHelper()
		data, err := os.ReadFile(filepath.Join(dir, run.JournalFile))
		Expect(err).NotTo(HaveOccurred())
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		var es []reports.Entry
		for _, l := range lines[1:] {
			var e reports.Entry
			Expect(json.Unmarshal([]byte(l), &e)).To(Succeed(), l)
			es = append(es, e)
		}
		return es
	}
	// survives checks an isolated run that crashed in call: every selected instance journalled in
	// order, the ones that made the call as crashed (SIGSEGV, naming it), the others not in error,
	// a healthy one after a crashed one, and exit status 1.
	survives := func(s *gexec.Session, dir, call string, args ...string) {
		GinkgoHelper()
		Expect(s.ExitCode()).To(Equal(1))
		es := journal(dir)
		Expect(entryIDs(es)).To(Equal(selected(args...)))
		crashed, after := 0, false
		for _, e := range es {
			if e.Error != nil && e.Error.Kind == "crash" {
				Expect(e.Outcome).To(BeEquivalentTo("error"))
				Expect(e.Error.Message).To(Equal("crashed (signal SIGSEGV during " + call + ")"))
				Expect(e.Verdict.Status).To(BeEquivalentTo("fail"))
				crashed++
				continue
			}
			Expect(e.Error).To(BeNil(), e.ID)
			after = after || crashed > 0
		}
		Expect(crashed).To(BeNumerically(">", 0))
		Expect(after).To(BeTrue(), "an instance after a crashed one ran")
		Expect(crashed).To(BeNumerically("<", len(es)))
		Expect(filepath.Join(dir, run.ReportJSON)).To(BeAnExistingFile())
	}
	// dies checks the negative control: the same crash without --isolate ends the process with the
	// Go runtime's report of the signal, the journal holding only what ran before it.
	dies := func(s *gexec.Session, dir string, args ...string) {
		GinkgoHelper()
		Expect(s.ExitCode()).To(Equal(2))
		Expect(string(s.Err.Contents())).To(ContainSubstring("SIGSEGV"))
		Expect(len(journal(dir))).To(BeNumerically("<", len(selected(args...))))
		Expect(filepath.Join(dir, run.ReportJSON)).NotTo(BeAnExistingFile())
	}

	It("survives a SIGSEGV in the fake CUDA driver library", func() {
		lib, err := fake.Build(GinkgoT().TempDir(), fake.CUDA, fake.Variant{})
		Expect(err).NotTo(HaveOccurred())
		env := []string{"REPLAYCHECK_CUDA_LIB=" + lib, "REPLAYCHECK_FAKE_CRASH=cuMemcpyDtoDAsync_v2"}
		args := append([]string{"--backend", "cuda"}, basic...)
		dir := filepath.Join(GinkgoT().TempDir(), "isolated")
		survives(replaycheck(env, append(append([]string{"run", "--isolate", "--out", dir}, args...), catalog)...), dir, "Copy", basic...)

		dir = filepath.Join(GinkgoT().TempDir(), "in-process")
		dies(replaycheck(env, append(append([]string{"run", "--out", dir}, args...), catalog)...), dir, basic...)
	})

	It("survives a SIGSEGV in a runtime plugin", func() {
		plugin, err := seed.Build(GinkgoT().TempDir(), seed.Reference)
		Expect(err).NotTo(HaveOccurred())
		env := []string{"REPLAYCHECK_SEED_CRASH=copy"}
		args := append([]string{"--runtime", plugin}, basic...)
		dir := filepath.Join(GinkgoT().TempDir(), "isolated")
		survives(replaycheck(env, append(append([]string{"run", "--isolate", "--out", dir}, args...), catalog)...), dir, "Copy", basic...)

		dir = filepath.Join(GinkgoT().TempDir(), "in-process")
		dies(replaycheck(env, append(append([]string{"run", "--out", dir}, args...), catalog)...), dir, basic...)
	})

	// In process, an instance given up on a hang inside a plugin's call leaves that call blocked
	// for good: unloading the plugin on the way out must not wait for it.
	It("exits after instances hang inside a runtime plugin's call, saying the runtimes were left open", func() {
		plugin, err := seed.Build(GinkgoT().TempDir(), seed.Reference)
		Expect(err).NotTo(HaveOccurred())
		s := replaycheck(nil, "run", "--runtime", plugin, "--fault", "hang@1", "--timeout", "1s", "--run", "^basic/simple-replay", catalog)
		Expect(s.ExitCode()).To(Equal(1))
		Expect(string(s.Err.Contents())).To(SatisfyAll(
			ContainSubstring("unloading the runtime plugin: runtime plugin "+plugin+": "),
			MatchRegexp(`\d+ runtimes? left open, each still inside a call that never returned \(an instance given up on a timeout\): Launch x\d+`),
			ContainSubstring("the library stays loaded")))
		Expect(string(s.Out.Contents())).To(ContainSubstring("timeout in Launch"))

		// Isolated, the worker exits once it has written its entry: the parent reports the
		// instance's own timeout, not a worker killed after the grace for the run's way out.
		s = replaycheck(nil, "run", "--isolate", "--runtime", plugin, "--fault", "hang@1", "--timeout", "1s", "--run", "^basic/simple-replay@global/guards-on", catalog)
		Expect(s.ExitCode()).To(Equal(1))
		Expect(string(s.Out.Contents())).To(SatisfyAll(
			ContainSubstring("timeout in Launch: Launch(graph main) on main did not return within the instance's 1s timeout"),
			Not(ContainSubstring("the worker was killed"))))

		// The plugin's own code that never returns, no device call in flight: timed all the same.
		s = replaycheck([]string{"REPLAYCHECK_SEED_HANG=launch"}, "run", "--runtime", plugin, "--timeout", "1s", "--run", "^basic/simple-replay@global/guards-on", catalog)
		Expect(s.ExitCode()).To(Equal(1))
		Expect(string(s.Out.Contents())).To(ContainSubstring("timeout in Launch: Launch(graph main) on main did not return within the instance's 1s timeout (and 250ms of grace), inside the runtime under test's own code"))
		Expect(string(s.Err.Contents())).To(ContainSubstring("1 runtime left open, each still inside a call that never returned (an instance given up on a timeout): Launch x1"))
	})

	It("checks a runtime plugin's slot log in every isolated worker with --check-slot-log", func() {
		plugin, err := seed.Build(GinkgoT().TempDir(), seed.Reference)
		Expect(err).NotTo(HaveOccurred())
		dir := filepath.Join(GinkgoT().TempDir(), "isolated")
		args := []string{"run", "--isolate", "--check-slot-log", "--guards", "on", "--run", "^(guards|hazards)/", "--runtime", plugin, "--out", dir, catalog}
		s := replaycheck(nil, args...)
		Expect(s.ExitCode()).To(Equal(0), string(s.Out.Contents()))
		header, err := os.ReadFile(filepath.Join(dir, run.JournalFile))
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.SplitN(string(header), "\n", 2)[0]).To(ContainSubstring(`"check_slot_log":true`))
		Expect(journal(dir)).To(HaveLen(len(selected("--guards", "on", "--run", "^(guards|hazards)/"))))
	})

	It("gives healthy instances the outcomes and verdicts of an in-process run", func() {
		// Two profiles and the seed: the child gets the whole configuration.
		args := []string{"--run", "^(basic|platform)/", "--profile", "cann,cuda", "--seed", "7"}
		in, iso := filepath.Join(GinkgoT().TempDir(), "in"), filepath.Join(GinkgoT().TempDir(), "iso")
		Expect(replaycheck(nil, append(append([]string{"run", "--out", in}, args...), catalog)...).ExitCode()).To(Equal(0))
		Expect(replaycheck([]string{run.EnvIsolate + "=1"}, append(append([]string{"run", "--out", iso}, args...), catalog)...).ExitCode()).To(Equal(0))
		want, got := readDocument(filepath.Join(in, run.ReportJSON)), readDocument(filepath.Join(iso, run.ReportJSON))
		Expect(len(want.Results)).To(BeNumerically(">", 100))
		Expect(findings(got.Results)).To(Equal(findings(want.Results)))
		Expect(got.Runs).To(HaveLen(2))
		for i := range got.Runs {
			Expect(got.Runs[i].Summary).To(Equal(want.Runs[i].Summary))
		}
	})
})
