package main_test

import (
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// A binary built without cgo runs everything on the simulator and says plainly why the device
// backends are missing.
var _ = Describe("a binary built without cgo", func() {
	It("lists acl and cuda as unavailable because it was built without cgo, and loads no runtime plugin", func() {
		bin := filepath.Join(GinkgoT().TempDir(), "replaycheck")
		build := exec.Command("go", "build", "-o", bin, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))

		out, err = exec.Command(bin, "devices").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(string(out)).To(MatchRegexp(`(?m)^sim\s+usable`))
		Expect(string(out)).To(MatchRegexp(`(?m)^acl\s+unavailable\s+built without cgo \(CGO_ENABLED=0\)`))
		Expect(string(out)).To(MatchRegexp(`(?m)^cuda\s+unavailable\s+built without cgo \(CGO_ENABLED=0\)`))

		cmd := exec.Command(bin, "run", "--backend", "cuda", "--probe", "basic/simple-replay", "../../specs")
		out, _ = cmd.CombinedOutput()
		Expect(cmd.ProcessState.ExitCode()).To(Equal(2))
		Expect(string(out)).To(ContainSubstring(`backend "cuda": built without cgo`))

		cmd = exec.Command(bin, "run", "--runtime", "reference.so", "--probe", "basic/simple-replay", "../../specs")
		out, _ = cmd.CombinedOutput()
		Expect(cmd.ProcessState.ExitCode()).To(Equal(2))
		Expect(string(out)).To(ContainSubstring("--runtime: runtime plugin reference.so: runtime plugins need a cgo build"))
	})
})
