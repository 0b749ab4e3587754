package main_test

// The CLI's scripts are testscripts (github.com/rogpeppe/go-internal/testscript): each
// testdata/script/NAME.txtar is an archive whose comment is a script and whose files are extracted
// into a fresh $WORK, the directory the script runs in. Each script is one Ginkgo spec,
// "replaycheck scripts NAME".
//
// replaycheck runs as a real process: TestMain registers it with testscript.Main, which puts a copy
// of this test binary named replaycheck on the scripts' PATH and runs cli.Command when it is started
// under that name, as main.go does. Exit statuses are the process's, and a crash (a fault in cgo
// code, an unrecovered panic in any goroutine) fails the one script that ran it, not the test
// binary. Scripts see only testscript's environment (PATH, HOME=/no-home, TMPDIR=$WORK/.tmp,
// GOTRACEBACK=system, ...), $REPO (the repository root) and what `env` sets: REPLAYCHECK_* from the
// caller's shell do not leak in.
//
// The language is testscript's (go doc github.com/rogpeppe/go-internal/testscript): exec, ! exec,
// stdout/stderr REGEX (multi-line mode), cmp stdout FILE, env KEY=VALUE, [cond] prefixes, skip,
// and so on. Commands must be run with `exec replaycheck ...` (Params.RequireExplicitExec). On top:
//
//	exits N PROG [ARGS...]   run PROG like exec; it must exit with exactly status N (N >= 1) and
//	                         must not have crashed. This is how a script checks 1 (a verdict
//	                         failed) against 2 (usage or input error): `! exec` only checks
//	                         non-zero. A Go runtime crash also exits 2, so stderr that shows one
//	                         (panic:, fatal error:, SIGSEGV: ...) fails the command whatever N is;
//	                         death by a signal fails it too. Use it for every expected failure.
//
//	[backend:NAME]           true when backend NAME opens here and has a device: carried by this
//	                         binary (acl and cuda need cgo) and, for them, its driver library
//	                         found; a name replaycheck does not know is an error, not a silent skip.
//	[cgo]                    true when the binary was built with cgo.
//	[exec:PROG]              testscript's own: PROG is on PATH (e.g. [exec:gcc]).
//
// Running and updating:
//
//	go test ./cmd/replaycheck                                  every spec, scripts included
//	go test ./cmd/replaycheck -args -ginkgo.focus=bad_flags    one script
//	go test ./cmd/replaycheck -update                          rewrite the archive files that
//	                                                           `cmp stdout FILE` / `cmp stderr FILE`
//	                                                           compare against to the actual output
//	                                                           (testscript's UpdateScripts)
//	REPLAYCHECK_UPDATE_SCRIPTS=1 go test ./cmd/replaycheck     the same where test flags cannot be
//	                                                           passed (make test, go test ./...)
//	go test ./cmd/replaycheck -args -testwork                  keep each script's $WORK (the
//	                                                           failure log prints its path)
//
// -update rewrites only cmp targets that are files of the archive; regexp assertions (stdout,
// stderr) are never rewritten, and a script that fails for another reason still fails. Review the
// diff of testdata/script before committing it.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/replaycheck/replaycheck/cmd/replaycheck/internal/cli"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/watch/interpose"
)

var updateScripts = flag.Bool("update", false,
	"rewrite the files that testdata/script/*.txtar compare stdout/stderr against (cmp) to the actual output")

// updateEnv is the environment variable that turns on -update where passing test flags is awkward.
const updateEnv = "REPLAYCHECK_UPDATE_SCRIPTS"

// scriptDeadline is the go test -timeout deadline, set by TestReplaycheck; testscript interrupts a
// hanging command a little before it, so the failure names the script rather than the binary
// dying with a stack dump.
var scriptDeadline time.Time

// TestMain makes this test binary also be the commands the scripts exec, chosen by os.Args[0].
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		// Exactly what main.go runs.
		"replaycheck": func() { os.Exit(cli.Command(os.Args[1:])) },
		// For the negative controls below only: a process that dies of a segmentation fault.
		"replaycheck-test-segfault": segfault,
	})
}

var _ = Describe("replaycheck scripts", func() {
	// Specs are generated from the files during tree construction, one per script.
	scripts, err := filepath.Glob(filepath.Join("testdata", "script", "*.txtar"))
	if err != nil || len(scripts) == 0 {
		It("finds its scripts", func() {
			Fail(fmt.Sprintf("no scripts under testdata/script (glob error: %v)", err))
		})
		return
	}
	for _, path := range scripts {
		It(strings.TrimSuffix(filepath.Base(path), ".txtar"), func() {
			update := *updateScripts || os.Getenv(updateEnv) == "1"
			runScript(scriptParams(path, update)).report()
		})
	}
})

// scriptParams are the parameters every script runs with, the negative controls' included.
func scriptParams(file string, update bool) testscript.Params {
	return testscript.Params{
		Files:               []string{file},
		Cmds:                map[string]func(*testscript.TestScript, bool, []string){"exits": cmdExits},
		Condition:           condition,
		Setup:               setup,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       update,
		Deadline:            scriptDeadline,
	}
}

// setup completes each script's environment.
func setup(env *testscript.Env) error {
	// Under go test -race every replaycheck the scripts exec is race-enabled too, and by default
	// sleeps a second before exiting (GORACE atexit_sleep_ms=1000): a minute for the scripts.
	// testscript passes the caller's GORACE on; an atexit_sleep_ms in it wins.
	if gorace := env.Getenv("GORACE"); !strings.Contains(gorace, "atexit_sleep_ms") {
		env.Setenv("GORACE", strings.TrimSpace(gorace+" atexit_sleep_ms=10"))
	}
	// $REPO is the repository root, for scripts that build from its files (a runtime plugin
	// against include/replaycheck/runtime.h).
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return err
	}
	env.Setenv("REPO", root)
	// $FAKECUDA is a directory holding the fake libcuda.so.1 and $WATCHLIB the watch interposer,
	// both built once per test process, for the watch scripts (unset when they could not be built,
	// and $WATCHLIB_ERROR says why).
	watchLibs.Do(func() {
		dir, err := os.MkdirTemp("", "replaycheck-scripts-")
		if err != nil {
			watchLibs.err = err
			return
		}
		watchLibs.dir = dir
		if _, watchLibs.err = fake.Build(filepath.Join(dir, "fake"), fake.CUDA, fake.Variant{}); watchLibs.err != nil {
			return
		}
		watchLibs.lib, watchLibs.err = interpose.Build(dir)
	})
	if watchLibs.err != nil {
		// Only the watch scripts need them, and they fail on the missing variables.
		env.Setenv("WATCHLIB_ERROR", watchLibs.err.Error())
		return nil
	}
	env.Setenv("FAKECUDA", filepath.Join(watchLibs.dir, "fake"))
	env.Setenv("WATCHLIB", watchLibs.lib)
	return nil
}

// watchLibs are the libraries the watch scripts run with, built once per test process and
// removed by AfterSuite.
var watchLibs struct {
	sync.Once
	dir, lib string
	err      error
}

var _ = AfterSuite(func() {
	if watchLibs.dir != "" {
		Expect(os.RemoveAll(watchLibs.dir)).To(Succeed())
	}
})

// goCrash matches what the Go runtime writes to stderr when a process crashes: an unrecovered
// panic, a fatal error (an unexpected fault address among them), or a signal caught in cgo code.
// All of them exit with status 2, the CLI's usage error.
var goCrash = regexp.MustCompile(`(?m)^(panic: |fatal error: |unexpected fault address |SIG[A-Z]+: ).*`)

// cmdExits is the script command `exits N PROG [ARGS...]`.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exits (exits N already expects a failure)")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits N program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil || want < 1 {
		ts.Fatalf("exits: status %q is not a number >= 1 (a command that must succeed is exec)", args[0])
	}
	prog := args[1]
	err = ts.Exec(prog, args[2:]...)
	if err != nil {
		ts.Logf("[%v]", err)
	}
	got := 0
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) || !exit.Exited() {
			// Not started, killed by a signal, or interrupted at the deadline.
			ts.Fatalf("%s did not exit with a status: %v", prog, err)
		}
		got = exit.ExitCode()
	}
	if crash := goCrash.FindString(ts.ReadFile("stderr")); crash != "" {
		ts.Fatalf("%s crashed (its exit status is the Go runtime's): %s", prog, crash)
	}
	if got != want {
		ts.Fatalf("%s: exit status %d, want %d", prog, got, want)
	}
}

// condition answers the conditions testscript does not know itself.
func condition(cond string) (bool, error) {
	if cond == "cgo" {
		return cgoBuild, nil
	}
	name, ok := strings.CutPrefix(cond, "backend:")
	if !ok {
		return false, fmt.Errorf("unknown condition %q (replaycheck adds cgo and backend:NAME)", cond)
	}
	// A name replaycheck does not know is a typo in the script, which would otherwise skip its
	// lines forever.
	if !slices.Contains(backends.Known(), name) {
		return false, fmt.Errorf("unknown backend %q in condition (known: %s)", name, strings.Join(backends.Known(), ", "))
	}
	b, err := backends.Open(name, backends.Config{})
	if err != nil {
		return false, nil
	}
	defer b.Close()
	n, err := b.Devices(context.Background())
	return err == nil && n > 0, nil
}

// segfault dies as a fault in C code loaded into the CLI would kill it: a SIGSEGV the Go runtime
// cannot recover from. It reads address 0x8000: above the first page, where a fault would be an
// ordinary (recoverable) nil-pointer panic, and inside the low 64 KiB that Linux
// (vm.mmap_min_addr), Windows and macOS leave unmapped.
func segfault() {
	p := (*byte)(unsafe.Add(unsafe.Pointer(nil), 0x8000))
	fmt.Println(*p)
	os.Exit(0) // not reached
}

// scriptT is the testscript.T one script runs with. testscript expects FailNow and Skip to end the
// script's goroutine, as testing.T's do (runtime.Goexit), and writes the script's log in a deferred
// call after FailNow. Ginkgo's GinkgoT() fails by panicking on the spec's own goroutine instead, so
// a script runs on a goroutine of its own (see runScript), and scriptT records what happened for
// the spec to report afterwards, with the log as the failure message. The negative controls read
// the same record.
type scriptT struct {
	verbose bool
	log     strings.Builder
	failed  bool
	skipped bool
	skipMsg string
}

var _ testscript.T = (*scriptT)(nil)

func (t *scriptT) Log(args ...any)   { t.log.WriteString(fmt.Sprintln(args...)) }
func (t *scriptT) Fatal(args ...any) { t.Log(args...); t.FailNow() }
func (t *scriptT) FailNow()          { t.failed = true; runtime.Goexit() }
func (t *scriptT) Skip(args ...any) {
	t.skipped, t.skipMsg = true, strings.TrimSpace(fmt.Sprintln(args...))
	t.Log(args...)
	runtime.Goexit()
}

// Parallel is a no-op: Ginkgo decides what runs in parallel (ginkgo -p), one spec per script.
func (t *scriptT) Parallel() {}

// Run runs the one script of the run in place: RunT calls it once per file, and every run here
// has one file.
func (t *scriptT) Run(_ string, f func(testscript.T)) { f(t) }
func (t *scriptT) Verbose() bool                      { return t.verbose }

// runScript runs the script p names and returns what happened; it never fails the spec itself.
func runScript(p testscript.Params) *scriptT {
	_, rc := GinkgoConfiguration()
	t := &scriptT{verbose: rc.Verbose || rc.VeryVerbose}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			// A panic in testscript itself: report it as this script's failure (Goexit is not a panic).
			if r := recover(); r != nil {
				t.failed = true
				fmt.Fprintf(&t.log, "panic: %v\n%s", r, debug.Stack())
			}
		}()
		testscript.RunT(t, p)
	}()
	<-done
	return t
}

// report turns the record into the spec's result.
func (t *scriptT) report() {
	GinkgoHelper()
	log := t.log.String()
	if !t.failed {
		fmt.Fprint(GinkgoWriter, log)
		if t.skipped {
			Skip(t.skipMsg)
		}
		return
	}
	// The log is testscript's transcript of the failing phase, ending in FAIL: file:line: why;
	// that line comes first too, so the reason is not lost under the commands' output.
	why := "script failed"
	if i := strings.LastIndex(log, "FAIL: "); i >= 0 {
		why, _, _ = strings.Cut(log[i:], "\n")
	}
	Fail(why + "\n\nscript log:\n" + log)
}

// The setup is only worth something if it can fail: each script below is wrong in one way, and
// must fail for that reason; the correct ones must pass.
var _ = Describe("script runner", cgoNeutral, func() {
	const okProbe = `
-- ok.yaml --
version: replaycheck/v1
set: basic
probes:
  - name: fill
    hazard: none
    modes: [global]
    guards: [off]
    replays: 1
    buffers:
      dst: {bytes: 64}
    streams: [main]
    capture:
      stream: main
      ops:
        - fill: {dst: dst, value: 7}
    expect:
      guarded: exact
      unguarded: exact
`
	// run writes script (with the probe file) into a fresh directory and runs it as the specs do.
	run := func(script string, update bool) (*scriptT, string) {
		file := filepath.Join(GinkgoT().TempDir(), "control.txtar")
		Expect(os.WriteFile(file, []byte(script+okProbe), 0o644)).To(Succeed())
		return runScript(scriptParams(file, update)), file
	}

	DescribeTable("reports a broken expectation",
		func(script, want string) {
			t, _ := run(script, false)
			Expect(t.failed).To(BeTrue(), "the script passed; log:\n%s", t.log.String())
			Expect(t.log.String()).To(ContainSubstring("FAIL: "))
			Expect(t.log.String()).To(ContainSubstring(want))
		},
		Entry("exec that fails", "exec replaycheck validate missing.yaml\n", "unexpected command failure"),
		Entry("! exec that succeeds", "! exec replaycheck validate ok.yaml\n", "unexpected command success"),
		Entry("wrong exit code", "exits 1 replaycheck validate missing.yaml\n", "exit status 2, want 1"),
		Entry("exits, but the command succeeds", "exits 2 replaycheck validate ok.yaml\n", "exit status 0, want 2"),
		Entry("exits 0", "exits 0 replaycheck validate ok.yaml\n", "is not a number >= 1"),
		Entry("! exits", "! exits 2 replaycheck validate missing.yaml\n", "unsupported: ! exits"),
		Entry("exits without a program", "exits 2\n", "usage: exits N program"),
		Entry("stdout that does not match", "exec replaycheck validate ok.yaml\nstdout '^nope$'\n", "no match for `^nope$` found in stdout"),
		Entry("stdout that must not match", "exec replaycheck validate ok.yaml\n! stdout '^ok'\n", "unexpected match for `^ok` found in stdout"),
		Entry("stderr that does not match", "exec replaycheck validate ok.yaml\nstderr .\n", "no match for `.` found in stderr"),
		Entry("cmp that differs", "exec replaycheck validate ok.yaml\ncmp stdout ok.yaml\n", "stdout and ok.yaml differ"),
		Entry("replaycheck without exec", "replaycheck validate ok.yaml\n", "use 'exec replaycheck'"),
		Entry("unknown program", "exec replaycheck-nonexistent\n", "executable file not found"),
		Entry("unknown command", "frobnicate\n", `unknown command "frobnicate"`),
		Entry("assertion before exec", "stdout .\n", "no match for `.` found in stdout"),
		Entry("unterminated quote", "stdout 'abc\n", "unterminated quoted argument"),
		Entry("unknown condition", "[frob] exec replaycheck validate ok.yaml\n", `unknown condition "frob"`),
		Entry("unknown backend in a condition", "[backend:tpu] exec replaycheck validate ok.yaml\n", `unknown backend "tpu"`),
		Entry("a backend that is present", "[backend:sim] exec replaycheck validate missing.yaml\n", "unexpected command failure"),
		Entry("a segfault under exec", "exec replaycheck-test-segfault\n", "unexpected command failure"),
		// The runtime's crash exits 2 like a usage error; the exact status alone would pass it.
		Entry("a segfault under exits 2", "exits 2 replaycheck-test-segfault\n", "crashed (its exit status is the Go runtime's): unexpected fault address 0x8000"),
	)

	It("passes a correct script", func() {
		t, _ := run(`exec replaycheck validate ok.yaml
stdout '^ok: 1 probe file, 1 probe, 1 instance$'
! stderr .
exits 2 replaycheck validate missing.yaml
stderr '^missing.yaml: read: '
! stdout .
[backend:sim] exec replaycheck run --guards off ok.yaml
[backend:sim] stdout '^ok\s+basic/fill'
[backend:acl] exec replaycheck-nonexistent
[!backend:cuda] exits 2 replaycheck validate missing.yaml
[!exec:replaycheck] exec replaycheck-nonexistent
`, false)
		Expect(t.failed).To(BeFalse(), "log:\n%s", t.log.String())
		Expect(t.skipped).To(BeFalse())
	})

	It("contains a segfault: the script fails, the test binary lives on", func() {
		// In-process, this fault would have ended the whole test binary.
		t, _ := run("exec replaycheck-test-segfault\n", false)
		Expect(t.failed).To(BeTrue())
		Expect(t.log.String()).To(ContainSubstring("signal SIGSEGV: segmentation violation"))
		Expect(t.log.String()).To(ContainSubstring("unexpected command failure"))
	})

	It("skips a script that says skip, with its reason", func() {
		t, _ := run("[backend:sim] skip 'no device here'\nexec replaycheck-nonexistent\n", false)
		Expect(t.failed).To(BeFalse(), "log:\n%s", t.log.String())
		Expect(t.skipped).To(BeTrue())
		Expect(t.skipMsg).To(Equal("no device here"))
	})

	It("rewrites a cmp file of the archive with -update, and only then", func() {
		script := "exec replaycheck validate ok.yaml\ncmp stdout want\n-- want --\nstale\n"
		t, file := run(script, false)
		Expect(t.failed).To(BeTrue())
		Expect(t.log.String()).To(ContainSubstring("stdout and want differ"))

		t, file = run(script, true)
		Expect(t.failed).To(BeFalse(), "log:\n%s", t.log.String())
		updated, err := os.ReadFile(file)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(updated)).To(ContainSubstring("-- want --\nok: 1 probe file, 1 probe, 1 instance\n"))
		Expect(string(updated)).NotTo(ContainSubstring("stale"))

		// The rewritten script passes as it is.
		t = runScript(scriptParams(file, false))
		Expect(t.failed).To(BeFalse(), "log:\n%s", t.log.String())
	})
})
