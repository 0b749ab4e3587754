package main_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/leakcheck"
)

// TestReplaycheck runs the CLI's own scripts (testdata/script/*.txtar), one spec per script, and
// the negative controls of the script setup. TestMain (script_test.go) runs it.
func TestReplaycheck(t *testing.T) {
	scriptDeadline, _ = t.Deadline()
	RegisterFailHandler(Fail)
	leakcheck.Suite(t)
	RunSpecs(t, "cmd/replaycheck")
}

// cgoNeutral marks the specs whose subject does not change with cgo: the docs' checks, the make
// targets, the run's journal, shards and signals on the simulator, the script runner. make test
// runs this package with cgo and again without it (NOCGO_PKGS); its cgo-free pass leaves these
// out (-ginkgo.label-filter='!cgo-neutral'), having run them once. make check runs them all.
var cgoNeutral = Label("cgo-neutral")
