package plugin_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/leakcheck"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/runtime/plugin"
)

// A *plugin.Runtime is what the engine drives, in every build.
var _ capture.Runtime = (*plugin.Runtime)(nil)

func TestPlugin(t *testing.T) {
	RegisterFailHandler(Fail)
	leakcheck.Suite(t)
	RunSpecs(t, "runtime/plugin")
}
