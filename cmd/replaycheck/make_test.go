package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The README's own example, `make run ARGS="--format json" > out.json`, must write a JSON
// document: make's echo of its commands would land on the same stdout.
var _ = Describe("make run", cgoNeutral, func() {
	It("writes only replaycheck's output to stdout", func() {
		mk, err := exec.LookPath("make")
		if err != nil {
			Skip("make is not installed")
		}
		root, err := filepath.Abs(filepath.Join("..", ".."))
		Expect(err).NotTo(HaveOccurred())
		// As the README says it, but into a temporary directory: make builds the CLI and runs the
		// catalog, and a test never writes into the checkout (bin/, build/report/ stay the user's).
		tmp := GinkgoT().TempDir()
		cmd := exec.Command(mk, "run", `ARGS=--format json --probe basic/simple-replay --modes global`,
			"BIN="+filepath.Join(tmp, "replaycheck"), "RUN_OUT="+filepath.Join(tmp, "report"))
		cmd.Dir = root
		cmd.Stderr = GinkgoWriter
		// As a user types it, not as a sub-make of `make test` (which would announce its directory).
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "MAKE") && !strings.HasPrefix(kv, "MFLAGS=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		out, err := cmd.Output()
		Expect(err).NotTo(HaveOccurred(), "make run failed; stdout:\n%s", out)
		var doc struct {
			Results []struct{ ID string } `json:"results"`
		}
		Expect(json.Unmarshal(out, &doc)).To(Succeed(), "make run's stdout is not one JSON document:\n%s", out)
		Expect(doc.Results).To(HaveLen(2))
		Expect(filepath.Join(tmp, "report", "report.json")).To(BeAnExistingFile())
	})
})
