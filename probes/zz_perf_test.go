package probes_test

import (
	"os"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/probes"
)

func TestPerfTmp(t *testing.T) {
	data, _ := os.ReadFile("/tmp/perf/perf.yaml")
	start := time.Now()
	_, err := probes.Parse("perf.yaml", data, probes.DefaultLimits())
	t.Logf("%v err=%v", time.Since(start), err != nil)
}
