package specs_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/leakcheck"

	"github.com/replaycheck/replaycheck/harness"
	"github.com/replaycheck/replaycheck/probes"
)

var cfg = harness.RegisterFlags(flag.CommandLine)

// -replaycheck.isolate starts this test binary again as the worker of each instance; and the suite
// runs in a supervised child of this binary (harness.Supervise).
func init() {
	harness.ServeWorker()
	harness.Supervise()
}

// TestCatalog runs every probe of specs/*.yaml on the configured backend (default sim/cann):
// one spec per instance, passing when the outcome matches the probe's expectation.
func TestCatalog(t *testing.T) {
	RegisterFailHandler(Fail)
	// REPLAYCHECK_PROBES adds probe files or directories (a path list) to the catalog.
	paths := append([]string{"."}, filepath.SplitList(os.Getenv("REPLAYCHECK_PROBES"))...)
	sets, err := probes.Load(probes.DefaultLimits(), paths...)
	if err != nil {
		t.Fatalf("the probe catalog does not load:\n%v", err)
	}
	if err := harness.Register(cfg, sets, "."); err != nil {
		t.Fatal(err)
	}
	leakcheck.Suite(t)
	harness.RunSpecs(t, "replaycheck catalog")
}
