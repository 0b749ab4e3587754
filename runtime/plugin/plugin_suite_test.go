package plugin_test

import (
	"github.com/replaycheck/replaycheck/runtime"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/leakcheck"

	"github.com/replaycheck/replaycheck/runtime/plugin"
)

// A *plugin.Runtime is what the engine drives, in every build.
var (
	_ runtime.Runtime = (*plugin.Runtime)(nil)
	_ runtime.Lacker  = (*plugin.Runtime)(nil)
)

func TestPlugin(t *testing.T) {
	RegisterFailHandler(Fail)
	// Specs give instances up on a hang inside the plugin's call: a device call that hangs under
	// it, and the plugin's own code that never returns (a call into C).
	leakcheck.Suite(t, leakcheck.HungSimCall, leakcheck.HungCCall, leakcheck.AbandonedSession)
	RunSpecs(t, "runtime/plugin")
}
