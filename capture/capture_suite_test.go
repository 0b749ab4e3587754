package capture_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/leakcheck"
)

func TestCapture(t *testing.T) {
	RegisterFailHandler(Fail)
	// Injected hangs keep their driver thread and instance goroutine for good.
	leakcheck.Suite(t, leakcheck.HungSimCall, leakcheck.HungCCall, leakcheck.AbandonedCall, leakcheck.AbandonedSession, leakcheck.ParkedInstance)
	RunSpecs(t, "capture engine")
}
