//go:build cgo

package harness_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/replaycheck/replaycheck/harness"
	"github.com/replaycheck/replaycheck/internal/cbuild"
)

// The catalog suite with a runtime plugin under test (-replaycheck.runtime): runtime/plugin's
// passthrough test plugin, which forwards everything and guards nothing.
var _ = Describe("the catalog suite through a runtime plugin", Ordered, func() {
	var suite, passthrough string
	BeforeAll(func() {
		var err error
		suite, err = gexec.CompileTest(filepath.Join("..", "specs"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
		include, err := filepath.Abs(filepath.Join("..", "include"))
		Expect(err).NotTo(HaveOccurred())
		passthrough = filepath.Join(GinkgoT().TempDir(), "passthrough.so")
		cc := cbuild.Compiler()
		cmd := exec.Command(cc[0], append(cc[1:], "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-pthread", "-I"+include,
			"-o", passthrough, filepath.Join("..", "runtime", "plugin", "testdata", "passthrough.c"))...)
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	})

	run := func(args ...string) *gexec.Session {
		cmd := exec.Command(suite, append([]string{"-replaycheck.replays=2", "-replaycheck.runtime=" + passthrough}, args...)...)
		cmd.Dir = filepath.Join("..", "specs")
		cmd.Env = append(os.Environ(), "REPLAYCHECK_PROBES=", "REPLAYCHECK_RUNTIME=")
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		return s.Wait("2m")
	}

	It("judges the unguarded instances as the platform's baseline does, and names the runtime in the report", func() {
		file := filepath.Join(GinkgoT().TempDir(), "report.json")
		s := run("-ginkgo.label-filter=set:hazards && guards:off", "-replaycheck.report="+file)
		Expect(s).To(gexec.Exit(0))
		data, err := os.ReadFile(file)
		Expect(err).NotTo(HaveOccurred())
		var doc struct {
			Runs    []struct{ Runtime string }
			Summary struct{ Total, Pass int }
			Results []struct{ Runtime string }
		}
		Expect(json.Unmarshal(data, &doc)).To(Succeed())
		Expect(doc.Runs).To(ConsistOf(HaveField("Runtime", "passthrough")))
		Expect(doc.Summary.Total).To(BeNumerically(">", 0))
		Expect(doc.Summary.Pass).To(Equal(doc.Summary.Total))
		Expect(doc.Results).To(HaveEach(HaveField("Runtime", "passthrough")))
	})

	It("fails the central invariant: a runtime that guards nothing lets guarded instances corrupt", func() {
		s := run("-ginkgo.label-filter=set:hazards && guards:on")
		Expect(s).NotTo(gexec.Exit(0))
		out := string(s.Out.Contents())
		Expect(out).To(ContainSubstring("[ReportAfterSuite] " + harness.InvariantName))
		Expect(out).To(ContainSubstring("hazards/rebase-after-capture@global/guards-on"))
	})

	It("fails, not passes, when the plugin ends the process with _exit(0) in a call", func() {
		// The suite runs in a supervised child of the test binary (harness.Supervise): before, the
		// binary exited 0 and go test printed ok.
		DeferCleanup(os.Unsetenv, "RC_TEST_EXIT")
		Expect(os.Setenv("RC_TEST_EXIT", "launch:_exit")).To(Succeed())
		s := run("-replaycheck.run=^basic/simple-replay@global/")
		Expect(s).To(gexec.Exit(2))
		Expect(string(s.Err.Contents())).To(ContainSubstring("replaycheck suite: the run's process exited with status 0 before the run finished, which only code that ends it without replaycheck's exit handlers does (a runtime plugin or driver library calling _exit(0), say): "))
	})

	It("fails at once on a runtime plugin that does not load", func() {
		cmd := exec.Command(suite, "-replaycheck.runtime=/nonexistent/runtime.so")
		cmd.Dir = filepath.Join("..", "specs")
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(s, "1m").Should(gexec.Exit())
		Expect(s.ExitCode()).NotTo(Equal(0))
		Expect(string(s.Out.Contents()) + string(s.Err.Contents())).To(ContainSubstring("/nonexistent/runtime.so"))
	})
})
