//go:build cgo

package harness_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/replaycheck/replaycheck/runtime/plugin/seed"
)

// -replaycheck.isolate: a runtime plugin that faults in its copy entry point fails the specs that
// copy and no other, and the suite runs to its end; without isolation the same fault ends the
// suite's process (the negative control).
var _ = Describe("the catalog suite with -replaycheck.isolate", Ordered, func() {
	var suite, plugin string
	BeforeAll(func() {
		var err error
		suite, err = gexec.CompileTest(filepath.Join("..", "specs"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
		plugin, err = seed.Build(GinkgoT().TempDir(), seed.Reference)
		Expect(err).NotTo(HaveOccurred())
	})
	catalog := func(args ...string) *gexec.Session {
		GinkgoHelper()
		cmd := exec.Command(suite, append([]string{"-replaycheck.run=^basic/", "-replaycheck.runtime=" + plugin}, args...)...)
		cmd.Dir = filepath.Join("..", "specs")
		cmd.Env = append(os.Environ(), "REPLAYCHECK_PROBES=", "REPLAYCHECK_SEED_CRASH=copy")
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		return s.Wait("3m")
	}

	It("fails the crashed specs and runs every other", func() {
		s := catalog("-replaycheck.isolate")
		Expect(s.ExitCode()).To(Equal(1))
		out := string(s.Out.Contents())
		Expect(out).To(ContainSubstring("crashed (signal SIGSEGV during Copy)"))
		m := regexp.MustCompile(`Ran 36 of 36 Specs`).FindString(out)
		Expect(m).NotTo(BeEmpty(), "every spec ran")
		Expect(out).To(MatchRegexp(`([1-9]\d*) Passed`))
	})

	It("dies with the plugin without isolation", func() {
		s := catalog()
		Expect(s.ExitCode()).To(Equal(2))
		Expect(string(s.Err.Contents()) + string(s.Out.Contents())).To(ContainSubstring("SIGSEGV"))
		Expect(string(s.Out.Contents())).NotTo(ContainSubstring("Ran 36 of 36 Specs"))
	})
})
