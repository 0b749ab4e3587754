package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// makeCommand is make with args in the checkout, as a user types it: without the MAKE* variables
// of a make test this suite may run under (a sub-make would announce its directory).
func makeCommand(args ...string) *exec.Cmd {
	GinkgoHelper()
	mk, err := exec.LookPath("make")
	if err != nil {
		Skip("make is not installed")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(mk, args...)
	cmd.Dir = root
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MAKE") && !strings.HasPrefix(kv, "MFLAGS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

// The README's way onto the PATH: make install with a PREFIX.
var _ = Describe("make install", cgoNeutral, func() {
	It("installs a working replaycheck into PREFIX/bin, and into DESTDIR/PREFIX/bin", func() {
		tmp := GinkgoT().TempDir()
		bin := filepath.Join(tmp, "build", "replaycheck") // not the checkout's bin/
		for _, c := range []struct {
			args      []string
			installed string
		}{
			{[]string{"PREFIX=" + filepath.Join(tmp, "prefix")}, filepath.Join(tmp, "prefix", "bin", "replaycheck")},
			{[]string{"PREFIX=/opt/rc", "DESTDIR=" + filepath.Join(tmp, "stage")}, filepath.Join(tmp, "stage", "opt", "rc", "bin", "replaycheck")},
		} {
			cmd := makeCommand(append([]string{"install", "BIN=" + bin}, c.args...)...)
			out, err := cmd.CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "make install %v:\n%s", c.args, out)
			st, err := os.Stat(c.installed)
			Expect(err).NotTo(HaveOccurred(), "make install %v put nothing at %s:\n%s", c.args, c.installed, out)
			Expect(st.Mode().Perm()&0o111).To(Equal(os.FileMode(0o111)), "installed executable by all")
			version, err := exec.Command(c.installed, "version").Output()
			Expect(err).NotTo(HaveOccurred())
			Expect(string(version)).To(HavePrefix("replaycheck "))
		}
	})
})

// make test prints, at its end, the line of each test a suite skipped for a missing tool (go test
// shows a passing package's output only with -v). The suites are a fake go here, which appends such
// a line to $REPLAYCHECK_SKIP_LOG as reports/browser_test.go does: the Makefile's part alone.
var _ = Describe("make test's skipped tests", cgoNeutral, func() {
	const line = "SKIPPED the fake browser test: no Chromium"
	// fakeGo is a go command for make test: go list prints two packages for ./... and one for the
	// race packages, go test appends line to the skip log when skip is set and exits with status.
	fakeGo := func(skip bool, status int) string {
		GinkgoHelper()
		script := "#!/bin/sh\ncase \"$1\" in\nlist) if [ \"$2\" = ./... ]; then printf './a\\n./b\\n'; else echo ./a; fi;;\ntest)\n"
		if skip {
			script += "\t[ -n \"$REPLAYCHECK_SKIP_LOG\" ] && echo '" + line + "' >> \"$REPLAYCHECK_SKIP_LOG\"\n"
		}
		script += "\texit " + strconv.Itoa(status) + ";;\nesac\nexit 0\n"
		path := filepath.Join(GinkgoT().TempDir(), "go")
		Expect(os.WriteFile(path, []byte(script), 0o755)).To(Succeed())
		return path
	}
	// makeTest runs make test over the fake go, without the gofmt pass (another engineer's file
	// mid-edit must not fail this).
	makeTest := func(goCmd string) (string, int) {
		GinkgoHelper()
		cmd := makeCommand("-o", "fmt-check", "test", "GO="+goCmd)
		out, err := cmd.CombinedOutput()
		if exit, ok := err.(*exec.ExitError); ok {
			return string(out), exit.ExitCode()
		}
		Expect(err).NotTo(HaveOccurred())
		return string(out), 0
	}

	It("prints the skip line once at the end of a passing make test", func() {
		out, status := makeTest(fakeGo(true, 0))
		Expect(status).To(Equal(0), out)
		Expect(out).To(HaveSuffix("\nmake test: skipped:\n  " + line + "\n"))
	})

	It("prints it when the suites fail too, and keeps their status", func() {
		out, status := makeTest(fakeGo(true, 1))
		Expect(status).NotTo(Equal(0), out)
		Expect(out).To(ContainSubstring("make test: skipped:\n  " + line + "\n"))
	})

	It("prints nothing of the kind when nothing was skipped (the control)", func() {
		out, status := makeTest(fakeGo(false, 0))
		Expect(status).To(Equal(0), out)
		Expect(out).NotTo(ContainSubstring("skipped"))
	})
})

// The browser test's half: without Chromium it appends one line to $REPLAYCHECK_SKIP_LOG, and
// with REPLAYCHECK_REQUIRE_BROWSER set it fails instead.
var _ = Describe("the browser test without Chromium", cgoNeutral, func() {
	run := func(require bool) (string, string, error) {
		GinkgoHelper()
		goCmd, err := exec.LookPath("go")
		if err != nil {
			Skip("go is not on PATH")
		}
		log := filepath.Join(GinkgoT().TempDir(), "skips")
		cmd := exec.Command(goCmd, "test", "-count=1", "./reports", "-args", "-ginkgo.focus=headless Chromium")
		cmd.Dir = filepath.Join("..", "..")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "REPLAYCHECK_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "REPLAYCHECK_CHROMIUM=/nonexistent/chromium", "REPLAYCHECK_SKIP_LOG="+log)
		if require {
			cmd.Env = append(cmd.Env, "REPLAYCHECK_REQUIRE_BROWSER=1")
		}
		out, err := cmd.CombinedOutput()
		skips, _ := os.ReadFile(log)
		return string(out), string(skips), err
	}

	It("skips, writing one line that says what and how to require it", func() {
		out, skips, err := run(false)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(skips).To(Equal("SKIPPED the HTML report's browser test (reports/browser_test.go): " +
			"REPLAYCHECK_CHROMIUM=/nonexistent/chromium: stat /nonexistent/chromium: no such file or directory; " +
			"set REPLAYCHECK_REQUIRE_BROWSER=1 to make this a failure\n"))
	})

	It("fails instead with REPLAYCHECK_REQUIRE_BROWSER set, writing no skip line", func() {
		out, skips, err := run(true)
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("REPLAYCHECK_REQUIRE_BROWSER is set"))
		Expect(skips).To(BeEmpty())
	})
})
