package sim_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/leakcheck"
)

func TestSim(t *testing.T) {
	RegisterFailHandler(Fail)
	// The abandoned-device spec leaves a hung worker and the launch it blocks, on purpose.
	leakcheck.Suite(t, leakcheck.HungSimCall, launchForeverFunc)
	RunSpecs(t, "device/sim")
}
