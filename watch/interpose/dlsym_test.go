package interpose_test

import (
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/cbuild"
)

var _ = Describe("the interposer's dlsym", func() {
	It("resolves RTLD_NEXT after the caller's object, not after the interposer", func() {
		dir := GinkgoT().TempDir()
		next, prog := filepath.Join(dir, "next.so"), filepath.Join(dir, "next_main")
		cc := cbuild.Compiler()
		for _, args := range [][]string{
			{"-shared", "-fPIC", "-o", next, filepath.Join("testdata", "next.c"), "-ldl"},
			{"-o", prog, filepath.Join("testdata", "next_main.c"), "-ldl"},
		} {
			a := append(append(cc[1:len(cc):len(cc)], "-std=c11", "-Wall", "-Wextra", "-Werror"), args...)
			out, err := exec.Command(cc[0], a...).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "%s", out)
		}
		run := func(preload string) string {
			cmd := exec.Command(prog)
			cmd.Env = []string{"LD_PRELOAD=" + preload}
			out, err := cmd.CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "%s", out)
			return string(out)
		}
		alone := run(next)
		Expect(alone).To(HavePrefix("next: hello\n"))
		// The interposer first, next.so after it: both next.so's lookup and the program's own
		// answer as they do without the interposer.
		Expect(run(built.lib + " " + next)).To(Equal(alone))
		Expect(strings.Count(alone, "next.so")).To(Equal(1), "the program's RTLD_NEXT finds next.so's puts")
	})
})
