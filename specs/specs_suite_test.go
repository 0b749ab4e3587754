package specs_test

import (
	"flag"
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/harness"
	"github.com/replaycheck/replaycheck/probes"
)

var cfg = harness.RegisterFlags(flag.CommandLine)

// TestCatalog runs every probe of specs/*.yaml on the configured backend (default sim/cann):
// one spec per instance, passing when the outcome matches the probe's expectation.
func TestCatalog(t *testing.T) {
	RegisterFailHandler(Fail)
	paths := []string{"."}
	if extra := os.Getenv("REPLAYCHECK_PROBES"); extra != "" {
		paths = append(paths, extra)
	}
	sets, err := probes.Load(probes.DefaultLimits(), paths...)
	if err != nil {
		t.Fatalf("the probe catalog does not load:\n%v", err)
	}
	if _, err := harness.Register(cfg, sets); err != nil {
		t.Fatal(err)
	}
	RunSpecs(t, "replaycheck catalog")
}
