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
