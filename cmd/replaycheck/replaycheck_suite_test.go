package main_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// TestReplaycheck runs the CLI's own scripts (testdata/script/*.txtar), one spec per script, and
// the negative controls of the script runner.
func TestReplaycheck(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "cmd/replaycheck")
}
