package watch_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/internal/cbuild"
	"github.com/replaycheck/replaycheck/watch"
	"github.com/replaycheck/replaycheck/watch/interpose"
)

// With REPLAYCHECK_HARDWARE=cuda or =acl (make device-check sets it): a few hazard programs of
// testdata/programs and their clean twins, built the dlopen way, run under watch.Run over the
// driver the dynamic loader finds (on a device host, the real one) and over a fake built here,
// and the two runs must find the same: the kinds, how many sites and launches, refused and
// possible, no disagreement, and the same exit and output. Without it the specs labelled hardware
// skip at once; the PTX check and the comparison's own checks always run. With it, only the
// specs labelled hardware run (init below).

const hardwareEnv = "REPLAYCHECK_HARDWARE"

// hardwareScenario is one program run on the device and on the fake.
type hardwareScenario struct {
	program, arg string
	refuse       bool
}

func (h hardwareScenario) backend() string { return strings.SplitN(h.program, "_", 2)[0] }

func (h hardwareScenario) String() string {
	s := h.program + " " + h.arg
	if h.refuse {
		s += ", --refuse"
	}
	return s
}

var hardwareScenarios = []hardwareScenario{
	{program: "cuda_realloc", arg: "hazard"},
	{program: "cuda_realloc", arg: "clean"},
	{program: "cuda_kernel", arg: "hazard"},
	{program: "cuda_kernel", arg: "clean"},
	{program: "cuda_kernel", arg: "hazard-extra"},
	{program: "cuda_kernel", arg: "clean-extra"},
	{program: "cuda_kernel", arg: "hazard-ex"},
	{program: "cuda_kernel", arg: "clean-ex"},
	{program: "cuda_free", arg: "hazard"},
	{program: "cuda_free", arg: "clean"},
	{program: "acl_realloc", arg: "hazard"},
	{program: "acl_realloc", arg: "clean"},
	{program: "acl_kernel", arg: "hazard"},
	{program: "acl_kernel", arg: "clean"},
}

// refusedOnDevice are the --refuse runs: the bystander's bytes must stay intact on the device.
var refusedOnDevice = []hardwareScenario{
	{program: "cuda_realloc", arg: "hazard", refuse: true},
	{program: "acl_realloc", arg: "hazard", refuse: true},
}

// expected is programs_test.go's scenario for h: what the fake must show, so that two runs that
// found nothing (a program that never reached the driver) do not pass for two that agree.
func (h hardwareScenario) expected() scenario {
	for _, s := range scenarios() {
		if s.program == h.program && s.arg == h.arg && s.refuse == h.refuse {
			return s
		}
	}
	panic(fmt.Sprintf("no scenario %v in programs_test.go", h))
}

// watchedRun is one watched run of a program: its result, output and event stream.
type watchedRun struct {
	where                  string // "device" or "fake"
	res                    *watch.Result
	stdout, stderr, events string
}

// tallyKey groups findings for the comparison.
type tallyKey struct {
	kind              watch.Kind
	refused, possible bool
}

// tally counts a run's findings by kind, refused and possible: distinct sites and occurrences.
func tally(res *watch.Result) map[tallyKey][2]int {
	t := map[tallyKey][2]int{}
	for _, f := range res.Findings {
		k := tallyKey{f.Kind, f.Refused, f.Possible}
		c := t[k]
		c[0]++
		c[1] += f.Count
		t[k] = c
	}
	return t
}

// compareRuns lists how the device's run differs from the fake's, or why either cannot be
// compared (a disagreement: the checker's two views of one run differ); nil when they agree.
func compareRuns(device, fake watchedRun) []string {
	var diffs []string
	for _, r := range []watchedRun{device, fake} {
		for _, d := range r.res.Disagreements {
			diffs = append(diffs, fmt.Sprintf("%s: disagreement: %s", r.where, d.Description))
		}
	}
	if device.res.ExitCode != fake.res.ExitCode || device.res.Signal != fake.res.Signal {
		diffs = append(diffs, fmt.Sprintf("exit: device %d %s, fake %d %s",
			device.res.ExitCode, device.res.Signal, fake.res.ExitCode, fake.res.Signal))
	}
	if device.stdout != fake.stdout {
		diffs = append(diffs, fmt.Sprintf("stdout: device %q, fake %q", device.stdout, fake.stdout))
	}
	dt, ft := tally(device.res), tally(fake.res)
	keys := map[tallyKey]bool{}
	for k := range dt {
		keys[k] = true
	}
	for k := range ft {
		keys[k] = true
	}
	var lines []string
	for k := range keys {
		if dt[k] != ft[k] {
			lines = append(lines, fmt.Sprintf("%s (refused %v, possible %v): device %d sites, %d launches; fake %d sites, %d launches",
				k.kind, k.refused, k.possible, dt[k][0], dt[k][1], ft[k][0], ft[k][1]))
		}
	}
	slices.Sort(lines)
	return append(diffs, lines...)
}

// describeRun says what a run found, for a failing assertion and the log.
func describeRun(r watchedRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: exit %d %s, stdout %q, stderr %q, %d findings\n", r.where, r.res.ExitCode, r.res.Signal, r.stdout, r.stderr, len(r.res.Findings))
	describeResult(&b, r.res)
	return b.String()
}

var _ = Describe("watched programs on the device and on the fake", Label("hardware"), Ordered, ContinueOnFailure, func() {
	var backend, fakes, interposer string
	// standIn: no device was named, so the fake stands in for it too: the specs then check the
	// comparison's own path (builds, runs, tallies), not a device.
	var standIn bool
	programs := map[string]string{}

	BeforeAll(func() {
		backend = os.Getenv(hardwareEnv)
		if backend == "" {
			backend, standIn = "cuda", true
			GinkgoWriter.Printf("%s is not set: the fake stands in for the device (make device-check sets it to cuda or acl)\n", hardwareEnv)
		}
		Expect(backend).To(BeElementOf("cuda", "acl"), "%s names the device's backend", hardwareEnv)
		_, err := exec.LookPath(cbuild.Compiler()[0])
		Expect(err).NotTo(HaveOccurred(), "the programs, the fake and the interposer are C, built here")

		dir := GinkgoT().TempDir()
		fakes = filepath.Join(dir, "fake")
		lib := fake.CUDA
		if backend == "acl" {
			lib = fake.ACL
		}
		var names []string
		for _, h := range append(slices.Clone(hardwareScenarios), refusedOnDevice...) {
			if h.backend() == backend && !slices.Contains(names, h.program) {
				names = append(names, h.program)
			}
		}
		errs := make([]error, len(names)+2)
		var wg sync.WaitGroup
		wg.Go(func() { _, errs[0] = fake.Build(fakes, lib, fake.Variant{}) })
		wg.Go(func() { interposer, errs[1] = interpose.Build(filepath.Join(dir, "interpose")) })
		for i, name := range names {
			programs[name] = filepath.Join(dir, "bin", name)
			wg.Go(func() { errs[i+2] = buildDlopen(name, programs[name]) })
		}
		wg.Wait()
		Expect(errors.Join(errs...)).NotTo(HaveOccurred())
	})

	// watchOn runs the program under watch: over the driver the environment gives (the device),
	// or with the fake first on the library path.
	watchOn := func(h hardwareScenario, onFake bool) watchedRun {
		GinkgoHelper()
		r := watchedRun{where: "device"}
		var env []string
		if onFake || standIn {
			if onFake {
				r.where = "fake"
			}
			env = []string{"LD_LIBRARY_PATH=" + fakes, "REPLAYCHECK_FAKE_MEMORY=67108864"}
		}
		// A device's first context and the PTX's JIT take seconds; a hung driver must not hold
		// the suite.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var stdout, stderr, events bytes.Buffer
		res, err := watch.Run(ctx, watch.Config{
			Program: []string{programs[h.program], h.arg}, Env: env, Backend: h.backend(), Refuse: h.refuse,
			Interposer: interposer, Stdout: &stdout, Stderr: &stderr, Events: &events,
		})
		Expect(err).NotTo(HaveOccurred(), "watching %v on the %s", h, r.where)
		r.res, r.stdout, r.stderr, r.events = res, stdout.String(), stderr.String(), events.String()
		return r
	}

	// both runs h on the device and on the fake, logs what each found, checks that each reached
	// the driver (a capture ended, a graph launched) and that the fake shows what
	// programs_test.go's scenario says, and returns the runs.
	both := func(h hardwareScenario) (device, fake watchedRun) {
		GinkgoHelper()
		if h.backend() != backend {
			Skip(fmt.Sprintf("a %s program; %s=%s", h.backend(), hardwareEnv, backend))
		}
		device, fake = watchOn(h, false), watchOn(h, true)
		report := describeRun(device) + describeRun(fake)
		GinkgoWriter.Printf("%v\n%s", h, report)
		launch := `cuGraphLaunch`
		if h.backend() == "acl" {
			launch = `aclmdlRIExecuteAsync`
		}
		for _, r := range []watchedRun{device, fake} {
			Expect(r.events).To(MatchRegexp(`(?m)^end .*\bok=1\b`), "%s: no capture ended well\n%s", r.where, report)
			Expect(r.events).To(MatchRegexp(`(?m)^launch .*\bcall=`+launch+`\b`), "%s: no launch\n%s", r.where, report)
		}
		s := h.expected()
		got := map[watch.Kind]int{}
		for _, f := range fake.res.Findings {
			got[f.Kind]++
		}
		Expect(got).To(Equal(s.kinds), "the fake's findings are not programs_test.go's\n%s", report)
		Expect(fake.stdout).To(MatchRegexp("^"+s.stdout+"$"), "the fake's output is not programs_test.go's\n%s", report)
		return device, fake
	}

	for _, h := range hardwareScenarios {
		It(h.String()+": the device's findings are the fake's", func() {
			device, fake := both(h)
			Expect(compareRuns(device, fake)).To(BeEmpty(), "the device and the fake differ:\n%s%s", describeRun(device), describeRun(fake))
		})
	}
	for _, h := range refusedOnDevice {
		It(h.String()+": the refused replay leaves the bystander's bytes intact on the device", func() {
			device, fake := both(h)
			Expect(device.stdout).To(HaveSuffix(" bystander=intact\n"), "%s%s", describeRun(device), describeRun(fake))
			Expect(device.events).To(MatchRegexp(`(?m)^launch .*\brefused=1\b`), "%s", describeRun(device))
			Expect(compareRuns(device, fake)).To(BeEmpty(), "the device and the fake differ:\n%s%s", describeRun(device), describeRun(fake))
		})
	}
})

// With REPLAYCHECK_HARDWARE the suite runs only the specs labelled hardware, unless the command
// line filters otherwise (a later flag.Parse wins): make device-check runs the test binary through
// a helper that passes the testing package's flags only, not Ginkgo's.
func init() {
	if os.Getenv(hardwareEnv) != "" {
		if err := flag.Set("ginkgo.label-filter", "hardware"); err != nil {
			panic(err)
		}
	}
}

// With REPLAYCHECK_HARDWARE, for make device-check's watch.log: what each spec labelled hardware
// found on the device and on the fake (its GinkgoWriter output, passed or not), then one line, as
// the bindings' suites print theirs, of how they went.
var _ = ReportAfterSuite("watch hardware specs", func(r Report) {
	if os.Getenv(hardwareEnv) == "" {
		return
	}
	var passed, failed, skipped int
	for _, sp := range r.SpecReports {
		if sp.LeafNodeType != types.NodeTypeIt || !slices.Contains(sp.Labels(), "hardware") {
			continue
		}
		switch {
		case sp.State.Is(types.SpecStatePassed):
			passed++
		case sp.State.Is(types.SpecStateSkipped | types.SpecStatePending):
			skipped++
			continue
		default:
			failed++
		}
		fmt.Printf("\n--- %s: %s\n%s", sp.State, sp.LeafNodeText, sp.CapturedGinkgoWriterOutput)
	}
	fmt.Printf("\nwatch hardware specs: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
})

// buildDlopen compiles testdata/programs/<name>.c the dlopen way into out: the driver is the one
// the dynamic loader finds.
func buildDlopen(name, out string) error {
	src, err := filepath.Abs(filepath.Join("testdata", "programs", name+".c"))
	if err != nil {
		return err
	}
	include, err := filepath.Abs(filepath.Join("..", "include"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	cc := cbuild.Compiler()
	args := append(slices.Clone(cc[1:]), "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-pthread",
		"-I"+include, "-DRC_ATTACH=RC_ATTACH_DLOPEN", "-o", out, src, "-ldl")
	if b, err := exec.Command(cc[0], args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", cc[0], strings.Join(args, " "), err, b)
	}
	return nil
}

var _ = Describe("cuda_kernel.c's PTX", func() {
	It("is device/cuda's AxpyPTX, so that a device runs the kernel the binding loads", func() {
		want, err := goConst(filepath.Join("..", "device", "cuda", "cuda.go"), "AxpyPTX")
		Expect(err).NotTo(HaveOccurred())
		Expect(want).To(ContainSubstring("st.global.u32"), "AxpyPTX is the whole kernel")
		got, err := cStringVar(filepath.Join("testdata", "programs", "cuda_kernel.c"), "axpy_ptx")
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(want))
	})

	It("is read from C string literals as the compiler reads them", func() {
		got, err := cStrings(`"a\tb\n"  "c\"d\\"
			"e";`)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal("a\tb\nc\"d\\e"))
		for _, bad := range []string{`"open;`, `"x" y;`, `"\x41";`, `"x"`} {
			_, err := cStrings(bad)
			Expect(err).To(HaveOccurred(), "%s", bad)
		}
	})

	It("is told apart from another text", func() {
		path := filepath.Join(GinkgoT().TempDir(), "k.c")
		Expect(os.WriteFile(path, []byte("static const char axpy_ptx[] = \"ret;\\n\";\n"), 0o644)).To(Succeed())
		got, err := cStringVar(path, "axpy_ptx")
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal("ret;\n"))
		want, err := goConst(filepath.Join("..", "device", "cuda", "cuda.go"), "AxpyPTX")
		Expect(err).NotTo(HaveOccurred())
		Expect(got).NotTo(Equal(want))
		_, err = cStringVar(path, "other_ptx")
		Expect(err).To(HaveOccurred())
		_, err = goConst(filepath.Join("..", "device", "cuda", "cuda.go"), "NoSuchConst")
		Expect(err).To(HaveOccurred())
	})
})

// goConst is the value of the string constant name declared in the Go file at path (device/cuda's
// AxpyPTX is in a cgo file, which this package cannot import without cgo).
func goConst(path, name string) (string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return "", err
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for i, n := range v.Names {
				if n.Name != name || i >= len(v.Values) {
					continue
				}
				lit, ok := v.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return "", fmt.Errorf("%s: %s is not a string literal", path, name)
				}
				return strconv.Unquote(lit.Value)
			}
		}
	}
	return "", fmt.Errorf("%s: no constant %s", path, name)
}

// cStringVar is the value of `name[] = "..." "...";` in the C file at path.
func cStringVar(path, name string) (string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	_, rest, ok := strings.Cut(string(src), " "+name+"[] =")
	if !ok {
		return "", fmt.Errorf("%s: no %s[] =", path, name)
	}
	s, err := cStrings(rest)
	if err != nil {
		return "", fmt.Errorf("%s: %s: %w", path, name, err)
	}
	return s, nil
}

// cStrings reads adjacent C string literals up to the ';' that ends them, with the escapes a
// PTX text needs; any other escape is an error, not a guess.
func cStrings(src string) (string, error) {
	var b strings.Builder
	i := 0
	for {
		for i < len(src) && strings.ContainsRune(" \t\r\n", rune(src[i])) {
			i++
		}
		switch {
		case i == len(src):
			return "", errors.New("no ';' after the string literals")
		case src[i] == ';':
			return b.String(), nil
		case src[i] != '"':
			return "", fmt.Errorf("%q where a string literal or ';' was expected", src[i])
		}
		for i++; ; i++ {
			if i >= len(src) || src[i] == '\n' {
				return "", errors.New("an unterminated string literal")
			}
			c := src[i]
			if c == '"' {
				i++
				break
			}
			if c != '\\' {
				b.WriteByte(c)
				continue
			}
			if i++; i >= len(src) {
				return "", errors.New("an unterminated string literal")
			}
			esc, ok := map[byte]byte{'n': '\n', 't': '\t', '\\': '\\', '"': '"', '\'': '\''}[src[i]]
			if !ok {
				return "", fmt.Errorf("the escape \\%c", src[i])
			}
			b.WriteByte(esc)
		}
	}
}

var _ = Describe("the device's and the fake's runs compared", func() {
	finding := func(k watch.Kind, count int, refused, possible bool) watch.Finding {
		return watch.Finding{Kind: k, Count: count, Refused: refused, Possible: possible}
	}
	runOf := func(where string, fs ...watch.Finding) watchedRun {
		res := &watch.Result{}
		res.Findings = fs
		return watchedRun{where: where, res: res, stdout: "launch=0\n"}
	}
	same := func() (watchedRun, watchedRun) {
		return runOf("device", finding(stale, 1, false, true), finding(freed, 2, false, true)),
			runOf("fake", finding(freed, 2, false, true), finding(stale, 1, false, true))
	}

	It("agree when they found the same, in any order", func() {
		d, f := same()
		Expect(compareRuns(d, f)).To(BeEmpty())
		Expect(compareRuns(runOf("device"), runOf("fake"))).To(BeEmpty())
	})

	DescribeTable("differ", func(change func(d, f *watchedRun), want string) {
		d, f := same()
		change(&d, &f)
		Expect(compareRuns(d, f)).To(ContainElement(ContainSubstring(want)))
	},
		Entry("in a kind", func(d, f *watchedRun) { d.res.Findings[0].Kind = shared }, "stale-replay (refused false, possible true): device 0 sites"),
		Entry("in a count of sites", func(d, f *watchedRun) {
			d.res.Findings = append(d.res.Findings, finding(stale, 1, false, true))
		}, "device 2 sites, 2 launches; fake 1 sites, 1 launches"),
		Entry("in a count of launches", func(d, f *watchedRun) { f.res.Findings[1].Count = 3 }, "device 1 sites, 1 launches; fake 1 sites, 3 launches"),
		Entry("in refused", func(d, f *watchedRun) { d.res.Findings[0].Refused = true }, "(refused true, possible true): device 1 sites"),
		Entry("in possible", func(d, f *watchedRun) { f.res.Findings[0].Possible = false }, "(refused false, possible false): device 0 sites"),
		Entry("by a disagreement of either", func(d, f *watchedRun) {
			f.res.Disagreements = append(f.res.Disagreements, watch.Disagreement{Description: "the ledger lost a range"})
		}, "fake: disagreement: the ledger lost a range"),
		Entry("in the exit", func(d, f *watchedRun) { d.res.ExitCode = 3 }, "exit: device 3 , fake 0 "),
		Entry("in the output", func(d, f *watchedRun) { d.stdout = "launch=700\n" }, `stdout: device "launch=700\n", fake "launch=0\n"`),
	)
})
