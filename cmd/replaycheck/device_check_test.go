package main_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/internal/cbuild"
)

// scripts/device-check.sh (make device-check), run as a device host without Go runs it (from the
// binaries of make device-bundle), over CUDA driver libraries built here with the system C
// compiler: the fake (device/fake) and a shim (shimSource) whose cuInit never returns or which
// names a device that is not the fake. What the script promises a host with a broken or a fake
// driver: `replaycheck devices` ends within STEP_TIMEOUT even when the driver hangs in its
// initialisation, killed if SIGTERM does not end it, and no baseline is written for the fake
// library or from a run whose conformance suite passed nothing on the hardware; a failed
// conformance suite or benchmark does not stop the steps after it; and summary.md and the output
// end with a result section naming every step that failed, the script exiting 1 when one did.
//
// Each run has a root of its own, a temporary directory holding what the script reads: a copy of
// scripts/device-check.sh (the script cds to the directory above its own), a copy of the catalog
// specs/ with its baselines, and the bundle in build/device-bundle/. GO names no program, so the
// script takes the bundle's path. What it writes (build/device-check/<time>/, and a baseline under
// specs/baselines/ were it to write one) lands in that root, never in this clone, and every spec
// checks that the root's files outside build/ are the ones it started with.
//
// The bundle's replaycheck is this package's CLI built with cgo. Its cuda.test and capture.test are
// stand-ins: cuda.test prints the count of hardware specs the script decides on (as device/cuda's
// suite prints it), capture.test one result line of the benchmark, each exiting with the status a
// spec gives it. So a run takes about a second, not the suites' time (they have specs of their
// own), and the script's devices, catalog and baseline steps run the real CLI over the driver
// library. Its watch.test is a stand-in too (passing, or as a spec says): the watch package runs
// its specs labelled hardware itself, the fake standing in for the device. For the runs that write a baseline, the bundle's replaycheck is a wrapper of that CLI
// whose `replaycheck devices` gives the fake library a platform key of a device (disguisedSource).
var _ = Describe("scripts/device-check.sh on a host without a device", Ordered, ContinueOnFailure, func() {
	// The CLI, the fake libcuda, a shim whose cuInit hangs, and a shim naming a device "Shim GPU";
	// disguised wraps the CLI (disguisedSource).
	var replaycheck, disguised, fakeCUDA, hangCUDA, shimCUDA string

	BeforeAll(func() {
		if runtime.GOOS != "linux" {
			Skip("the spec finds the script's processes in /proc (Linux)")
		}
		if !cgoBuild {
			Skip("the device check runs a cgo build of replaycheck over C driver libraries: this test binary was built without cgo")
		}
		for _, prog := range []string{"bash", "timeout"} {
			if _, err := exec.LookPath(prog); err != nil {
				Skip(fmt.Sprintf("scripts/device-check.sh needs %s: %v", prog, err))
			}
		}
		if _, err := exec.LookPath(cbuild.Compiler()[0]); err != nil {
			Skip("no C compiler: " + err.Error())
		}
		dir := GinkgoT().TempDir()
		errs := make([]error, 4)
		var wg sync.WaitGroup
		wg.Go(func() {
			replaycheck = filepath.Join(dir, "replaycheck")
			// As make device-bundle builds it: with cgo, so it carries the cuda backend.
			cmd := exec.Command("go", "build", "-o", replaycheck, ".")
			cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[0] = fmt.Errorf("go build: %w\n%s", err, out)
			}
		})
		wg.Go(func() { fakeCUDA, errs[1] = fake.Build(filepath.Join(dir, "fake"), fake.CUDA, fake.Variant{}) })
		wg.Go(func() { hangCUDA, errs[2] = buildShim(filepath.Join(dir, "hang"), true) })
		wg.Go(func() { shimCUDA, errs[3] = buildShim(filepath.Join(dir, "shim"), false) })
		wg.Wait()
		Expect(errors.Join(errs...)).NotTo(HaveOccurred())
		disguised = filepath.Join(dir, "replaycheck-disguised")
		Expect(os.WriteFile(disguised, fmt.Appendf(nil, disguisedSource, replaycheck), 0o755)).To(Succeed())
	})

	It("ends `replaycheck devices` within STEP_TIMEOUT, killing a driver that hangs in cuInit, and exits 1 saying why", func() {
		root := newCheckRoot(replaycheck, "hardware specs: 3 passed, 0 failed, 0 skipped", 0, 0)
		r := runDeviceCheck(root, 30*time.Second, "STEP_TIMEOUT=1", "REPLAYCHECK_CUDA_LIB="+hangCUDA)
		Expect(r.exit).To(Equal(1), r.output)
		const why = "replaycheck devices failed or did not end within 1s: a driver that hangs while it initialises cannot be checked"
		Expect(r.output).To(ContainSubstring(why))
		Expect(r.summary).To(ContainSubstring(why))
		Expect(r.summary).NotTo(ContainSubstring("## conformance"), "the check went on past devices")
		Expect(r.result()).To(Equal("1 step failed:\n" +
			"- devices: FAILED (replaycheck devices failed or did not end within 1s); see devices.txt; the steps after it did not run\n"))
		// SIGTERM at 1 s, which the hung call outlives; SIGKILL 5 s later (timeout -k 5); slack for a
		// loaded machine.
		Expect(r.took).To(BeNumerically("<", 20*time.Second), "the script took %v", r.took)
		r.unchanged()
	})

	It("writes no baseline for the fake library, though its conformance suite passed specs, and exits 1 saying why", func() {
		root := newCheckRoot(replaycheck, "hardware specs: 3 passed, 0 failed, 0 skipped", 0, 0)
		r := runDeviceCheck(root, time.Minute, "STEP_TIMEOUT=60", "REPLAYCHECK_CUDA_LIB="+fakeCUDA)
		r.unchanged()
		Expect(r.exit).To(Equal(1), r.output)
		Expect(r.summary).To(ContainSubstring("backend: cuda"))
		// Not the other refusal: the suite's count let this run through.
		Expect(r.summary).To(ContainSubstring("\nhardware specs: 3 passed, 0 failed, 0 skipped\n"))
		Expect(r.summary).NotTo(ContainSubstring("no spec passed on the hardware"))
		Expect(r.summary).To(ContainSubstring("not written: cuda/12.4-replaycheck-fake is not a device this run checked"))
		Expect(r.files).To(ContainElements("devices.txt", "devices.json", "conformance.log", "run.json", "run.txt", "summary.md"))
		Expect(r.result()).To(Equal("1 step failed:\n" + baselineNotWritten))
	})

	It("stops at a catalog run that broke (the shim opens no device for it), after saying no conformance spec passed on the hardware, and writes no baseline", func() {
		root := newCheckRoot(replaycheck, "hardware specs: 0 passed, 3 failed, 0 skipped", 1, 0)
		r := runDeviceCheck(root, time.Minute, "STEP_TIMEOUT=60", "REPLAYCHECK_CUDA_LIB="+shimCUDA)
		r.unchanged()
		Expect(r.exit).To(Equal(1), r.output)
		Expect(r.summary).To(MatchRegexp(`(?m)^\s+device 0: Shim GPU; .*platform cuda/12\.4-shim-gpu$`))
		Expect(r.summary).To(ContainSubstring("backend: cuda"))
		Expect(r.summary).To(ContainSubstring("no spec passed on the hardware (hardware specs: 0 passed, 3 failed, 0 skipped): the run above did not check the device"))
		Expect(r.summary).To(ContainSubstring("BROKEN: replaycheck run exited 2 (json) and 2 (text); see run.stderr"))
		Expect(r.summary).NotTo(ContainSubstring("## baseline"))
		Expect(r.result()).To(Equal("2 steps failed:\n" +
			"- conformance suite on the real driver: FAILED (hardware specs: 0 passed, 3 failed, 0 skipped); see conformance.log\n" +
			"- the catalog, every mode, guards off and on: BROKEN (replaycheck run exited 2 for json, 2 for text); see run.stderr; the steps after it did not run\n"))
	})

	It("goes on past a failed conformance suite to every later step, a watch step whose specs passed none on the device (all skipped) among them, then names them, and the baseline not written, and exits 1", func() {
		root := newCheckRoot(replaycheck, "hardware specs: 3 passed, 2 failed, 0 skipped", 1, 0)
		writeStandIn(root, "watch.test", "Ran 0 of 287 Specs in 0.001 seconds\nwatch hardware specs: 0 passed, 0 failed, 16 skipped\n", 0)
		r := runDeviceCheck(root, time.Minute, "STEP_TIMEOUT=60", "REPLAYCHECK_CUDA_LIB="+fakeCUDA)
		r.unchanged()
		Expect(r.exit).To(Equal(1), r.output)
		Expect(r.summary).To(ContainSubstring("FAILED: see conformance.log"))
		Expect(r.summary).To(ContainSubstring("\nhardware specs: 3 passed, 2 failed, 0 skipped\n"))
		for _, section := range []string{"the catalog, every mode, guards off and on", watchStep, "verification throughput", "baseline"} {
			Expect(r.summary).To(ContainSubstring("\n## "+section+"\n"), "the check stopped before %s", section)
		}
		Expect(r.files).To(ContainElements("run.json", "run.txt", "table.txt", "watch.log", "watch-bench.txt", "verify-bench.txt"))
		Expect(r.summary).To(ContainSubstring("    BenchmarkVerifyReadBack256MiB/pinned-copy-2"))
		Expect(r.summary).To(ContainSubstring("\n## " + watchStep + "\n\npassed (Ran 0 of 287 Specs)\n" +
			"no watch spec passed on the device (watch hardware specs: 0 passed, 0 failed, 16 skipped): the run above compared nothing\n"))
		Expect(r.result()).To(Equal("3 steps failed:\n" +
			"- conformance suite on the real driver: FAILED (hardware specs: 3 passed, 2 failed, 0 skipped); see conformance.log\n" +
			"- " + watchStep + ": FAILED (watch hardware specs: 0 passed, 0 failed, 16 skipped; see watch.log)\n" +
			baselineNotWritten))
	})

	It("goes on past failed watch specs and benchmarks, and a failed benchmark, to the baseline, then names them, and exits 1", func() {
		root := newCheckRoot(replaycheck, "hardware specs: 3 passed, 0 failed, 0 skipped", 0, 2)
		// The watch binary is the specs and the benchmarks at once: both exit 1.
		writeStandIn(root, "watch.test", "Ran 11 of 287 Specs in 0.001 seconds\nwatch hardware specs: 10 passed, 1 failed, 5 skipped\n", 1)
		r := runDeviceCheck(root, time.Minute, "STEP_TIMEOUT=60", "REPLAYCHECK_CUDA_LIB="+fakeCUDA)
		r.unchanged()
		Expect(r.exit).To(Equal(1), r.output)
		Expect(r.summary).To(ContainSubstring("\n## " + watchStep + "\n\nFAILED: see watch.log\n"))
		Expect(r.summary).To(ContainSubstring("\n## verification throughput\n\nFAILED: see verify-bench.txt\n"))
		Expect(r.summary).To(ContainSubstring("\n## baseline\n"))
		Expect(r.result()).To(Equal("3 steps failed:\n" +
			"- " + watchStep + ": FAILED (watch hardware specs: 10 passed, 1 failed, 5 skipped; see watch.log; the benchmarks exited 1; see watch-bench.txt)\n" +
			"- verification throughput: FAILED (the benchmark exited 2); see verify-bench.txt\n" +
			baselineNotWritten))
	})

	It("writes the baseline from a device whose conformance suite failed but passed hardware specs, says right after it that it must be reviewed, and exits 1", func() {
		root := newCheckRoot(disguised, "hardware specs: 3 passed, 2 failed, 0 skipped", 1, 0)
		r := runDeviceCheck(root, time.Minute, "STEP_TIMEOUT=60", "REPLAYCHECK_CUDA_LIB="+fakeCUDA)
		Expect(r.changed()).To(Equal([]string{fakeBaseline}))
		Expect(r.exit).To(Equal(1), r.output)
		Expect(r.summary).To(MatchRegexp(`\n## baseline\n\nwrote specs/baselines/cuda-12\.4-replaycheck-fake\.yaml: [0-9]+ instances of cuda/12\.4-replaycheck-fake\n` +
			`this baseline was recorded from a device whose conformance suite failed \(hardware specs: 3 passed, 2 failed, 0 skipped; see conformance\.log\): review it before it is committed\n`))
		Expect(r.result()).To(Equal("1 step failed:\n" +
			"- conformance suite on the real driver: FAILED (hardware specs: 3 passed, 2 failed, 0 skipped); see conformance.log\n"))
	})

	It("writes the baseline from a device whose every step passed, says no step failed, and exits 0", func() {
		root := newCheckRoot(disguised, "hardware specs: 3 passed, 0 failed, 0 skipped", 0, 0)
		r := runDeviceCheck(root, time.Minute, "STEP_TIMEOUT=60", "REPLAYCHECK_CUDA_LIB="+fakeCUDA)
		Expect(r.changed()).To(Equal([]string{fakeBaseline}))
		Expect(r.exit).To(Equal(0), r.output)
		Expect(r.summary).To(ContainSubstring("\n## " + watchStep + "\n\npassed (Ran 11 of 287 Specs)\n" +
			"watch hardware specs: 11 passed, 0 failed, 5 skipped\n" +
			"    BenchmarkLaunch100Nodes-2 \t 4 \t 142276671 ns/op \t 1.05 x-unwatched\n\n## verification throughput\n"))
		Expect(r.files).To(ContainElements("watch.log", "watch-bench.txt"))
		Expect(r.summary).To(ContainSubstring("wrote specs/baselines/cuda-12.4-replaycheck-fake.yaml"))
		Expect(r.summary).NotTo(ContainSubstring("review it"))
		// The measurement table ends the check, right before the result.
		Expect(r.files).To(ContainElements("measure.txt", "measure.stderr"))
		Expect(r.summary).To(MatchRegexp(`\n## verify rules measured\n\nexit status 0 \(0: every measured rule agrees with its profile; .*\n\n` +
			`    measure: cuda/12\.4-replaycheck-fake \(backend cuda\) against profile cuda \(the embedded profile\), table specs/measure/rules\.yaml\n` +
			`(?s:.*)\n    agree +cuda rule [0-9]+ \(verify\): synchronous copy while only non-blocking streams capture (?s:.*)` +
			`\n\n    [0-9]+ measurements: [0-9]+ agree, 0 disagree, 0 inconclusive, 0 not measured\n\n## result\n`))
		Expect(r.result()).To(Equal("no step failed\n"))
	})

	It("reports a measured rule that disagrees with its profile as a finding, not a failed step, and a measurement that broke as a failed step", func() {
		root := newCheckRoot(disguised, "hardware specs: 3 passed, 0 failed, 0 skipped", 0, 0)
		// The table pairs the non-blocking copies with the blocking-capture rule, which says 906.
		rules := filepath.Join(root, "specs", "measure", "rules.yaml")
		data, err := os.ReadFile(rules)
		Expect(err).NotTo(HaveOccurred())
		wrong := strings.ReplaceAll(string(data), "rule: synchronous copy while only non-blocking streams capture\n",
			"rule: synchronous copy while a blocking stream captures, by any thread in any interaction mode (legacy-stream work that would depend on the capturing blocking stream)\n")
		Expect(wrong).NotTo(Equal(string(data)))
		Expect(os.WriteFile(rules, []byte(wrong), 0o644)).To(Succeed())
		r := runDeviceCheck(root, time.Minute, "STEP_TIMEOUT=60", "REPLAYCHECK_CUDA_LIB="+fakeCUDA)
		Expect(r.exit).To(Equal(0), r.output)
		Expect(r.summary).To(MatchRegexp(`\n    disagree +cuda rule [0-9]+ \(measured\): synchronous copy while a blocking stream captures.* +allowed\n`))
		Expect(r.result()).To(Equal("no step failed; findings: a measured rule disagreed with its profile or decided nothing (measure.txt)\n"))

		root = newCheckRoot(disguised, "hardware specs: 3 passed, 0 failed, 0 skipped", 0, 0)
		Expect(os.Remove(filepath.Join(root, "specs", "measure", "rules.yaml"))).To(Succeed())
		r = runDeviceCheck(root, time.Minute, "STEP_TIMEOUT=60", "REPLAYCHECK_CUDA_LIB="+fakeCUDA)
		Expect(r.exit).To(Equal(1), r.output)
		Expect(r.summary).To(ContainSubstring("BROKEN: replaycheck measure exited 2; see measure.stderr"))
		Expect(r.result()).To(Equal("1 step failed:\n- verify rules measured: BROKEN (replaycheck measure exited 2); see measure.stderr\n"))
	})

	It("stops at the build step without Go or the bundle's replaycheck, saying so in the result", func() {
		root := newCheckRoot(replaycheck, "hardware specs: 3 passed, 0 failed, 0 skipped", 0, 0)
		Expect(os.Remove(filepath.Join(root, "build", "device-bundle", "replaycheck"))).To(Succeed())
		r := runDeviceCheck(root, time.Minute, "STEP_TIMEOUT=60", "REPLAYCHECK_CUDA_LIB="+fakeCUDA)
		r.unchanged()
		Expect(r.exit).To(Equal(1), r.output)
		Expect(r.summary).NotTo(ContainSubstring("## devices"))
		Expect(r.result()).To(Equal("1 step failed:\n" +
			"- build: FAILED (no Go toolchain and no build/device-bundle/replaycheck); the steps after it did not run\n"))
	})

	It("names the step in which a command broke (set -e), with its exit status, in the result", func() {
		root := newCheckRoot(replaycheck, "hardware specs: 3 passed, 0 failed, 0 skipped", 0, 0)
		// A replaycheck whose `replaycheck version` exits 3.
		cli := filepath.Join(root, "build", "device-bundle", "replaycheck")
		Expect(os.Remove(cli)).To(Succeed())
		Expect(os.WriteFile(cli, []byte("#!/bin/sh\nexit 3\n"), 0o755)).To(Succeed())
		r := runDeviceCheck(root, time.Minute, "STEP_TIMEOUT=60", "REPLAYCHECK_CUDA_LIB="+fakeCUDA)
		r.unchanged()
		Expect(r.exit).To(Equal(1), r.output)
		Expect(r.summary).NotTo(ContainSubstring("## devices"))
		Expect(r.result()).To(Equal("1 step failed:\n" +
			"- build: broke (exit status 3; see the output above); the steps after it did not run\n"))
	})
})

// baselineNotWritten is the result's line for the baseline step over the fake library; fakeBaseline
// the baseline a run over the disguised CLI writes; watchStep the watch step's title.
const (
	watchStep          = "watch on the device and on the fake"
	baselineNotWritten = "- baseline: not written: cuda/12.4-replaycheck-fake is not a device this run checked (see the conformance suite above)\n"
	fakeBaseline       = "specs/baselines/cuda-12.4-replaycheck-fake.yaml"
)

// disguisedSource is a replaycheck (a format: the CLI's path fills %[1]q) whose `replaycheck
// devices` names the fake library's platform as a device's is named, so that the script writes its
// baseline (named after the fake's key all the same: baseline write opens the driver itself).
const disguisedSource = `#!/bin/sh
# A stand-in for the bundle's replaycheck (cmd/replaycheck/device_check_test.go).
if [ "$1" = devices ]; then
	out=$(%[1]q "$@") || exit
	printf '%%s\n' "$out" | sed 's/replaycheck-fake/disguised-gpu/g'
	exit
fi
exec %[1]q "$@"
`

// result checks that the run's summary.md and output end with the same result section, its last
// line saying how long the run took and where its files are, and returns the section between its
// title and that line.
func (r checkRun) result() string {
	GinkgoHelper()
	_, section, found := strings.Cut(r.summary, "\n## result\n\n")
	Expect(found).To(BeTrue(), "no result section in summary.md:\n%s", r.summary)
	Expect(r.output).To(HaveSuffix("\n## result\n\n"+section), "the output does not end with summary.md's result section")
	took := regexp.MustCompile(`\n\ntook [0-9]+ s; everything is in build/device-check/[0-9]{8}T[0-9]{6}Z\n$`)
	loc := took.FindStringIndex(section)
	Expect(loc).NotTo(BeNil(), "the result section does not end with the took line:\n%s", section)
	return section[:loc[0]+1]
}

// checkRun is one run of scripts/device-check.sh in a root of its own.
type checkRun struct {
	root   string
	before map[string]string // tree(root) before the run
	// output is the script's stdout and stderr; summary its summary.md; files the names in its
	// build/device-check/<time>/.
	output, summary string
	files           []string
	// run is the run's build/device-check/<time>/.
	run  string
	exit int
	took time.Duration
}

// newCheckRoot makes a root for one run (see the Describe above) whose stand-in conformance suite
// prints hardware, its count of hardware specs, and exits with status, and whose stand-in benchmark
// exits with benchStatus.
func newCheckRoot(replaycheck, hardware string, status, benchStatus int) string {
	GinkgoHelper()
	root := GinkgoT().TempDir()
	repo := filepath.Join("..", "..")
	script, err := os.ReadFile(filepath.Join(repo, "scripts", "device-check.sh"))
	Expect(err).NotTo(HaveOccurred())
	bundle := filepath.Join(root, "build", "device-bundle")
	// The test binaries run in their packages' directories.
	for _, d := range []string{"scripts", filepath.Join("device", "cuda"), "capture", "watch", filepath.Join("build", "device-bundle")} {
		Expect(os.MkdirAll(filepath.Join(root, d), 0o755)).To(Succeed())
	}
	Expect(os.WriteFile(filepath.Join(root, "scripts", "device-check.sh"), script, 0o755)).To(Succeed())
	Expect(os.CopyFS(filepath.Join(root, "specs"), os.DirFS(filepath.Join(repo, "specs")))).To(Succeed())
	Expect(os.Symlink(replaycheck, filepath.Join(bundle, "replaycheck"))).To(Succeed())
	writeStandIn(root, "cuda.test", "Ran 3 of 3 Specs in 0.001 seconds\n"+hardware+"\n", status)
	writeStandIn(root, "capture.test", "BenchmarkVerifyReadBack256MiB/pinned-copy-2 \t 5 \t 16604713 ns/op\n", benchStatus)
	// Its specs and its benchmarks at once: the script reads each line from its own run.
	writeStandIn(root, "watch.test", "Ran 11 of 287 Specs in 0.001 seconds\nwatch hardware specs: 11 passed, 0 failed, 5 skipped\n"+
		"BenchmarkLaunch100Nodes-2 \t 4 \t 142276671 ns/op \t 1.05 x-unwatched\n", 0)
	return root
}

// writeStandIn makes the root's bundle's test binary name a script that prints lines and exits
// with status.
func writeStandIn(root, name, lines string, status int) {
	GinkgoHelper()
	text := fmt.Sprintf("#!/bin/sh\n# A stand-in for the bundle's %s (cmd/replaycheck/device_check_test.go).\ncat <<'EOF'\n%sEOF\nexit %d\n",
		name, lines, status)
	path := filepath.Join(root, "build", "device-bundle", name)
	Expect(os.RemoveAll(path)).To(Succeed())
	Expect(os.WriteFile(path, []byte(text), 0o755)).To(Succeed())
}

// runDeviceCheck runs the root's scripts/device-check.sh with env added to a copy of this
// process's environment without REPLAYCHECK_* and the script's own variables, and fails the spec if
// it has not ended within limit or if any process it started is still alive when it has.
func runDeviceCheck(root string, limit time.Duration, env ...string) checkRun {
	GinkgoHelper()
	r := checkRun{root: root, before: tree(root)}
	// Every process the run starts inherits marker: the ones still alive carry it.
	marker := "REPLAYCHECK_DEVICE_CHECK_SPEC=" + root
	cmd := exec.Command(filepath.Join(root, "scripts", "device-check.sh"))
	cmd.Dir = root
	for _, kv := range os.Environ() {
		key, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(key, "REPLAYCHECK_") && !slices.Contains([]string{"GO", "BUNDLE", "BACKEND", "STEP_TIMEOUT"}, key) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, marker, "GO="+filepath.Join(root, "no-go-here"),
		"REPLAYCHECK_ACL_LIB="+filepath.Join(root, "no-acl", "libascendcl.so"))
	cmd.Env = append(cmd.Env, env...)
	// A file, not a pipe: a process the script left behind would hold a pipe open.
	outPath := filepath.Join(GinkgoT().TempDir(), "output")
	out, err := os.Create(outPath)
	Expect(err).NotTo(HaveOccurred())
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() {
		for _, pid := range processesWith(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var ended bool
	select {
	case <-done:
		ended = true
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
	}
	r.took = time.Since(start)
	left := processesWith(marker)
	printed, err := os.ReadFile(outPath)
	Expect(err).NotTo(HaveOccurred())
	r.output = string(printed)
	fmt.Fprintf(GinkgoWriter, "scripts/device-check.sh took %v, exit status %d:\n%s", r.took, cmd.ProcessState.ExitCode(), r.output)
	Expect(ended).To(BeTrue(), "scripts/device-check.sh did not end within %v; output:\n%s", limit, r.output)
	Expect(left).To(BeEmpty(), "processes the run started are alive after it ended; output:\n%s", r.output)
	r.exit = cmd.ProcessState.ExitCode()

	runs, err := filepath.Glob(filepath.Join(root, "build", "device-check", "*"))
	Expect(err).NotTo(HaveOccurred())
	Expect(runs).To(HaveLen(1), "one build/device-check/<time>/ per run; output:\n%s", r.output)
	r.run = runs[0]
	summary, err := os.ReadFile(filepath.Join(runs[0], "summary.md"))
	Expect(err).NotTo(HaveOccurred())
	r.summary = string(summary)
	entries, err := os.ReadDir(runs[0])
	Expect(err).NotTo(HaveOccurred())
	for _, e := range entries {
		r.files = append(r.files, e.Name())
	}
	return r
}

// unchanged checks that the run left the root's files and directories outside build/ as they were:
// no baseline written under specs/baselines/, nothing else either.
func (r checkRun) unchanged() {
	GinkgoHelper()
	Expect(r.changed()).To(BeEmpty(), "the run changed the worktree; summary.md:\n%s", r.summary)
}

// changed lists the root's paths outside build/ that the run added, changed or removed, sorted.
func (r checkRun) changed() []string {
	GinkgoHelper()
	after := tree(r.root)
	var changed []string
	for p, v := range after {
		if w, ok := r.before[p]; !ok || w != v {
			changed = append(changed, p)
		}
	}
	for p := range r.before {
		if _, ok := after[p]; !ok {
			changed = append(changed, p+" (removed)")
		}
	}
	slices.Sort(changed)
	return changed
}

// tree maps every path under root but build/ to its content, directories to "dir".
func tree(root string) map[string]string {
	GinkgoHelper()
	t := map[string]string{}
	Expect(filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		switch {
		case rel == "build":
			return filepath.SkipDir
		case d.IsDir():
			t[rel] = "dir"
			return nil
		}
		data, err := os.ReadFile(path)
		t[rel] = string(data)
		return err
	})).To(Succeed())
	return t
}

// processesWith lists the processes whose environment holds entry, KEY=VALUE.
func processesWith(entry string) []int {
	GinkgoHelper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	Expect(err).NotTo(HaveOccurred())
	var pids []int
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil {
			continue // ended, or not this user's
		}
		if slices.Contains(strings.Split(string(env), "\x00"), entry) {
			pid, err := strconv.Atoi(filepath.Base(d))
			Expect(err).NotTo(HaveOccurred())
			pids = append(pids, pid)
		}
	}
	return pids
}

// shimSource is a CUDA driver library of a few lines, for a host whose driver is not the fake:
// cuInit succeeds, or with RC_HANG never returns (as a driver stuck in its initialisation), and
// the calls `replaycheck devices` makes describe one device, "Shim GPU", driver 12.4. Every other
// entry point the binding resolves (stubs, appended by buildShim) answers CUDA_ERROR_UNKNOWN
// (999) without reading its arguments.
const shimSource = `#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

API int cuInit(unsigned int flags) {
	(void)flags;
#ifdef RC_HANG
	for (;;) {
		pause(); /* returns after a signal the process handles (Go's SIGTERM handler): wait again */
	}
#endif
	return 0;
}
API int cuDriverGetVersion(int *version) { *version = 12040; return 0; }
API int cuDeviceGetCount(int *count) { *count = 1; return 0; }
API int cuDeviceGet(int *device, int ordinal) {
	if (ordinal != 0) {
		return 101; /* CUDA_ERROR_INVALID_DEVICE */
	}
	*device = 0;
	return 0;
}
API int cuDeviceGetName(char *name, int len, int device) {
	(void)device;
	if (len < 1) {
		return 1; /* CUDA_ERROR_INVALID_VALUE */
	}
	snprintf(name, (size_t)len, "%s", "Shim GPU");
	return 0;
}
API int cuDeviceTotalMem_v2(size_t *bytes, int device) { (void)device; *bytes = (size_t)1 << 30; return 0; }
API int cuGetErrorName(int code, const char **name) { (void)code; *name = "CUDA_ERROR_UNKNOWN"; return 0; }
API int cuGetErrorString(int code, const char **text) { (void)code; *text = "unknown error (the shim driver)"; return 0; }
`

// buildShim builds shimSource as dir/libcuda.so.1, with cuInit hanging when hang is set, and
// returns its path.
func buildShim(dir string, hang bool) (string, error) {
	src := []byte(shimSource)
	for _, name := range fake.CUDA.Exports() {
		if !strings.Contains(shimSource, " "+name+"(") && !slices.Contains(fake.FaultEntryPoints, name) {
			src = fmt.Appendf(src, "API int %s(void) { return 999; }\n", name)
		}
	}
	args := []string{"shim.c"}
	if hang {
		args = append([]string{"-DRC_HANG"}, args...)
	}
	return cbuild.Build(cbuild.Library{What: fmt.Sprintf("shim libcuda (hang %v)", hang), Dir: dir, Name: "libcuda.so.1",
		Sources: map[string][]byte{"shim.c": src}, Args: args})
}
