package harness_test

import (
	"encoding/json"
	"encoding/xml"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/harness"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

var _ = Describe("Config", func() {
	parse := func(args ...string) *harness.Config {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		c := harness.RegisterFlags(fs)
		Expect(fs.Parse(args)).To(Succeed())
		return c
	}

	It("defaults to the simulator with the cann profile and every mode and guard setting", func() {
		c := parse()
		Expect(c.Backend).To(Equal("sim"))
		Expect(c.Profile).To(Equal("cann"))
		m, err := c.Matrix()
		Expect(err).NotTo(HaveOccurred())
		Expect(m.Modes).To(BeNil())
		Expect(m.Guards).To(BeNil())
	})

	It("checks a runtime's slot log when asked, as run --check-slot-log does", func() {
		Expect(parse().CheckSlotLog).To(BeFalse())
		c := parse("-replaycheck.check-slot-log")
		Expect(c.CheckSlotLog).To(BeTrue())
		Expect(c.Check()).To(Succeed())
	})

	It("selects modes, guards and replays", func() {
		c := parse("-replaycheck.modes=global, relaxed", "-replaycheck.guards=off", "-replaycheck.replays=7")
		m, err := c.Matrix()
		Expect(err).NotTo(HaveOccurred())
		Expect(m.Modes).To(Equal([]device.CaptureMode{device.Global, device.Relaxed}))
		Expect(m.Guards).To(Equal([]bool{false}))
		Expect(m.Replays).To(Equal(7))
	})

	It("takes defaults from the environment, and reports a malformed one", func() {
		GinkgoT().Setenv("REPLAYCHECK_PROFILE", "cuda")
		GinkgoT().Setenv("REPLAYCHECK_REPLAYS", "3")
		c := parse()
		Expect(c.Profile).To(Equal("cuda"))
		Expect(c.Replays).To(Equal(3))
		Expect(c.Check()).To(Succeed())

		GinkgoT().Setenv("REPLAYCHECK_REPLAYS", "many")
		Expect(parse().Check()).To(MatchError(ContainSubstring(`REPLAYCHECK_REPLAYS="many"`)))
	})

	It("selects a shard and an id pattern as the CLI does, and names the suite's flag when one is wrong", func() {
		c := parse("-replaycheck.shard=2/3", "-replaycheck.run=^hazards/")
		Expect(c.Check()).To(Succeed())
		Expect(c.Shard.String()).To(Equal("2/3"))
		Expect(c.Run).To(Equal("^hazards/"))
		Expect(parse("-replaycheck.run=(").Check()).To(MatchError(ContainSubstring("-replaycheck.run: ")))
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		harness.RegisterFlags(fs)
		Expect(fs.Parse([]string{"-replaycheck.shard=4/3"})).NotTo(Succeed())
	})

	It("injects faults into every instance with -replaycheck.fault, and names the flag when one is wrong", func() {
		c := parse("-replaycheck.fault=hang@2", "-replaycheck.fault=alloc-fail@1,launch-fail@3", "-replaycheck.replays=3")
		Expect(c.Check()).To(Succeed())
		Expect(c.Faults).To(Equal([]string{"hang@2", "alloc-fail@1", "launch-fail@3"}))
		Expect(parse("-replaycheck.fault=hang@4", "-replaycheck.replays=3").Check()).To(MatchError(HavePrefix("-replaycheck.fault: hang@4: --replays 3")))
		GinkgoT().Setenv("REPLAYCHECK_FAULT", "device-lost@0")
		Expect(parse().Check()).To(MatchError(ContainSubstring(`REPLAYCHECK_FAULT="device-lost@0"`)))
		Expect(parse("-replaycheck.fault=device-lost@1").Check()).To(Succeed(), "the flag replaces the malformed default")
		GinkgoT().Setenv("REPLAYCHECK_FAULT", "")
		GinkgoT().Setenv("REPLAYCHECK_GUARDS", "maybe")
		Expect(parse().Check()).To(MatchError(`REPLAYCHECK_GUARDS: "maybe" is not off, on or both`))
		Expect(parse("-replaycheck.guards=sometimes").Check()).To(MatchError(`-replaycheck.guards: "sometimes" is not off, on or both`))
		GinkgoT().Setenv("REPLAYCHECK_GUARDS", "")
		Expect(parse("-replaycheck.profile=cann,cuda").Check()).To(MatchError(`-replaycheck.profile: cann,cuda: the suite runs one profile per test process; run it once for each (replaycheck run takes a list)`))
		GinkgoT().Setenv("REPLAYCHECK_PROFILE", "cuda, cann")
		Expect(parse().Check()).To(MatchError(HavePrefix(`REPLAYCHECK_PROFILE: cuda, cann: the suite runs one profile`)))
		Expect(parse("-replaycheck.profile=cann").Check()).To(Succeed())
	})

	It("refuses a -replaycheck.fault at the call of a selected probe's own fault, or a filter that selects nothing, before any spec is made", func() {
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(`version: replaycheck/v1
set: t
probes:
  - name: lost
    hazard: none
    modes: [global]
    replays: 3
    buffers:
      a: {bytes: 64}
    streams: [main]
    capture:
      ops:
        - fill: {dst: a, value: 1}
    faults: [launch-fail@2]
    expect:
      guarded: exact
`), 0o644)).To(Succeed())
		sets, err := probes.Load(probes.DefaultLimits(), dir)
		Expect(err).NotTo(HaveOccurred())
		c := parse("-replaycheck.fault=device-lost@2")
		Expect(harness.Register(c, sets, dir)).To(MatchError(ContainSubstring("t/lost")))

		// A filter that selects nothing is an error too, as it is for the CLI.
		c = parse("-replaycheck.run=nomatch")
		Expect(harness.Register(c, sets, dir)).To(MatchError(ContainSubstring(`--run "nomatch" matches none of the 2 instances`)))
	})

	It("accepts REPLAYCHECK_REPLAYS=0 (each probe's own) and a malformed one replaced by the flag", func() {
		GinkgoT().Setenv("REPLAYCHECK_REPLAYS", "0")
		Expect(parse().Check()).To(Succeed())
		GinkgoT().Setenv("REPLAYCHECK_REPLAYS", "many")
		c := parse("-replaycheck.replays=4")
		Expect(c.Check()).To(Succeed())
		Expect(c.Replays).To(Equal(4))
	})

	It("rejects unknown modes, guard settings and guard names", func() {
		Expect(parse("-replaycheck.modes=sometimes").Check()).To(MatchError(ContainSubstring("unknown capture mode")))
		Expect(parse("-replaycheck.guards=maybe").Check()).To(MatchError(ContainSubstring(`guards: "maybe" is not off, on or both`)))
		Expect(parse("-replaycheck.disable-guards=moat").Check()).To(MatchError(ContainSubstring(`unknown guard "moat"`)))
	})

	It("names the runtime plugin under test, by flag or environment, and never with guards removed", func() {
		Expect(parse().Runtime).To(BeEmpty(), "the built-in guards by default")
		GinkgoT().Setenv("REPLAYCHECK_RUNTIME", "/env/reference.so")
		Expect(parse().Runtime).To(Equal("/env/reference.so"))
		c := parse("-replaycheck.runtime=/flag/mine.so")
		Expect(c.Runtime).To(Equal("/flag/mine.so"))
		Expect(c.Check()).To(Succeed())
		Expect(parse("-replaycheck.disable-guards=all").Check()).To(MatchError(ContainSubstring("runtime /env/reference.so is under test")))
	})

	It("names the guards to remove for negative controls", func() {
		d, err := parse("-replaycheck.disable-guards=residency,capture-watch").Disabled()
		Expect(err).NotTo(HaveOccurred())
		Expect(d).To(Equal(guard.Disabled{Residency: true, CaptureWatch: true}))
	})
})

var _ = Describe("InstanceLabels", func() {
	It("labels an instance by set, hazard, mode, guards, backend and the probe's own labels", func() {
		p := &probes.Probe{Set: "hazards", Name: "x", Hazard: "rebase", Labels: []string{"retained"}}
		l := harness.InstanceLabels(probes.Instance{Probe: p, Mode: device.ThreadLocal, Guarded: true}, "sim")
		Expect([]string(l)).To(Equal([]string{
			"set:hazards", "hazard:rebase", "mode:thread-local", "guards:on", "backend:sim", "retained",
		}))
	})
})

// The suite itself, run as go test runs it: the central invariant passes with the guards and fails,
// naming the corrupted instances, when they are removed.
var _ = Describe("the catalog suite", Ordered, func() {
	var suite string
	BeforeAll(func() {
		var err error
		suite, err = gexec.CompileTest(filepath.Join("..", "specs"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
	})

	run := func(args ...string) *gexec.Session {
		// A later -ginkgo.label-filter wins over this default.
		cmd := exec.Command(suite, append([]string{"-ginkgo.label-filter=guards:on", "-replaycheck.replays=2"}, args...)...)
		cmd.Dir = filepath.Join("..", "specs")
		cmd.Env = append(os.Environ(), "REPLAYCHECK_PROBES=")
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		return s.Wait("2m")
	}

	It("holds the central invariant with every guard", func() {
		s := run()
		Expect(s).To(gexec.Exit(0))
		out := string(s.Out.Contents())
		Expect(out).To(MatchRegexp(`Ran \d{3} of \d+ Specs`), "every guarded instance of the catalog ran")
		Expect(out).To(ContainSubstring("0 Failed"))
	})

	It("fails with the drift message when the baseline says otherwise", func() {
		data, err := os.ReadFile(filepath.Join("..", "specs", "baselines", "sim-cann.yaml"))
		Expect(err).NotTo(HaveOccurred())
		const honest = "hazards/off-capture-stream@relaxed/guards-off: {outcome: corrupted}"
		Expect(string(data)).To(ContainSubstring(honest))
		tampered := filepath.Join(GinkgoT().TempDir(), "sim-cann.yaml")
		Expect(os.WriteFile(tampered, []byte(strings.Replace(string(data), honest,
			"hazards/off-capture-stream@relaxed/guards-off: {outcome: exact}", 1)), 0o644)).To(Succeed())

		cmd := exec.Command(suite, "-ginkgo.label-filter=set:hazards && guards:off", "-replaycheck.replays=2",
			"-replaycheck.baseline="+tampered)
		cmd.Dir = filepath.Join("..", "specs")
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(s, "2m").Should(gexec.Exit())
		Expect(s.ExitCode()).NotTo(Equal(0))
		out := string(s.Out.Contents())
		Expect(out).To(ContainSubstring("hazards/off-capture-stream in relaxed mode: behaviour changed: baseline says exact, now corrupted"))
		Expect(out).To(ContainSubstring("1 Failed"))
	})

	It("writes one replaycheck report with the enforcement table when asked", func() {
		file := filepath.Join(GinkgoT().TempDir(), "report.json")
		s := run("-ginkgo.label-filter=set:hazards", "-replaycheck.report="+file)
		Expect(s).To(gexec.Exit(0))
		data, err := os.ReadFile(file)
		Expect(err).NotTo(HaveOccurred())
		var rep struct {
			Summary struct{ Total, Pass int }
			Results []struct {
				ID, Outcome string
				Verdict     struct{ Status string }
			}
			Enforcement struct{ Rows []struct{ Probe string } }
		}
		Expect(json.Unmarshal(data, &rep)).To(Succeed())
		Expect(rep.Summary.Total).To(Equal(57))
		Expect(rep.Summary.Pass).To(Equal(57))
		Expect(rep.Results).To(ContainElement(SatisfyAll(
			HaveField("ID", "hazards/rebase-after-capture@global/guards-off"),
			HaveField("Outcome", "corrupted"), HaveField("Verdict.Status", "pass"))))
		Expect(rep.Enforcement.Rows).To(HaveLen(10))
	})

	It("writes the report as JUnit or Markdown when the file name says so", func() {
		dir := GinkgoT().TempDir()
		xmlFile, mdFile := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "summary.md")
		Expect(run("-ginkgo.label-filter=set:basic", "-replaycheck.report="+xmlFile)).To(gexec.Exit(0))
		Expect(run("-ginkgo.label-filter=set:basic", "-replaycheck.report="+mdFile)).To(gexec.Exit(0))
		data, err := os.ReadFile(xmlFile)
		Expect(err).NotTo(HaveOccurred())
		var suites struct {
			Tests int `xml:"tests,attr"`
			Cases []struct {
				Name string `xml:"name,attr"`
			} `xml:"testsuite>testcase"`
		}
		Expect(xml.Unmarshal(data, &suites)).To(Succeed())
		Expect(suites.Tests).To(BeNumerically(">", 0))
		Expect(suites.Cases).To(HaveLen(suites.Tests))
		md, err := os.ReadFile(mdFile)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(md)).To(SatisfyAll(HavePrefix("# replaycheck"), ContainSubstring("| basic/")))
	})

	It("fails the central invariant when the guards are removed", func() {
		s := run("-replaycheck.disable-guards=all")
		Expect(s).NotTo(gexec.Exit(0))
		out := string(s.Out.Contents())
		Expect(out).To(ContainSubstring("[ReportAfterSuite] " + harness.InvariantName))
		Expect(out).To(MatchRegexp(`\d+ guarded instances ended corrupted`))
		Expect(out).To(ContainSubstring("hazards/rebase-after-capture@global/guards-on"))
	})

	// The same suite on a device backend: the cgo binding over its fake driver library, which
	// behaves as the simulator's profile does. Unguarded instances of the fake's platform have no
	// baseline, so those without an expectation stay uncharacterised; nothing may fail.
	DescribeTable("runs on a device backend through its fake driver library",
		func(lib fake.Library, env string) {
			if why := backends.Unavailable(lib.String()); why != "" {
				Skip(why)
			}
			path, err := fake.Build(GinkgoT().TempDir(), lib, fake.Variant{})
			Expect(err).NotTo(HaveOccurred())
			cmd := exec.Command(suite, "-ginkgo.label-filter=set:hazards", "-replaycheck.replays=2", "-replaycheck.backend="+lib.String())
			cmd.Dir = filepath.Join("..", "specs")
			cmd.Env = append(os.Environ(), "REPLAYCHECK_PROBES=", env+"="+path)
			s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
			Expect(err).NotTo(HaveOccurred())
			Eventually(s, "2m").Should(gexec.Exit(0))
			Expect(string(s.Out.Contents())).To(MatchRegexp(`Ran \d+ of \d+ Specs`))
		},
		Entry("acl", fake.ACL, "REPLAYCHECK_ACL_LIB"),
		Entry("cuda", fake.CUDA, "REPLAYCHECK_CUDA_LIB"),
	)

	It("judges the invariant from the results the specs produced, in every parallel process", func() {
		broken := regexp.MustCompile(`(\d+) guarded instances? ended corrupted`)
		serial := run("-replaycheck.disable-guards=all")
		want := broken.FindStringSubmatch(string(serial.Out.Contents()))
		Expect(want).NotTo(BeNil())

		// Two processes: each instance runs once, in one of them; the invariant, judged on process
		// 1 after both finished, counts the corrupted guarded instances of both. Ginkgo runs the
		// suite compiled above in a copy of the catalog: compiling the specs package again would
		// write and then delete specs/specs.test, the binary of an outer `ginkgo -r` that has yet
		// to run it.
		dir := GinkgoT().TempDir()
		Expect(os.CopyFS(dir, os.DirFS(filepath.Join("..", "specs")))).To(Succeed())
		binary, err := os.ReadFile(suite)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(dir, "specs.test"), binary, 0o755)).To(Succeed())
		cmd := exec.Command("go", "tool", "ginkgo", "--procs=2", "--label-filter=guards:on",
			filepath.Join(dir, "specs.test"), "--", "-replaycheck.disable-guards=all", "-replaycheck.replays=2")
		cmd.Dir = filepath.Join("..", "specs") // in the module, for go tool; the suite runs in dir
		cmd.Env = append(os.Environ(), "REPLAYCHECK_PROBES=")
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(s, "3m").Should(gexec.Exit())
		Expect(s.ExitCode()).NotTo(Equal(0))
		got := broken.FindStringSubmatch(string(s.Out.Contents()))
		Expect(got).To(Equal(want), "the parallel run judged a different set of guarded instances")
	})
})
