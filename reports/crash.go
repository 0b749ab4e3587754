package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
)

// crashed reports whether e ended in a crash: its process died inside a call, or, on the
// simulator, a profile rule says the platform's would (device.Error.Crash).
func crashed(e Entry) bool {
	return e.Outcome == probes.Errored && e.Error != nil && e.Error.Kind == capture.ErrCrash
}

// crashAdvice says, for a simulator run, which probes crash the platform's process and that a
// device runs them with --isolate; "" when none did, or the run was on a device (where an instance
// that crashed was isolated already: the process of an instance that was not is gone).
func crashAdvice(rep *Report) string {
	if rep.Backend != "sim" {
		return ""
	}
	n := 0
	var names []string
	for _, e := range rep.Results {
		if !crashed(e) {
			continue
		}
		n++
		if !slices.Contains(names, e.Probe) {
			names = append(names, e.Probe)
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("crash: in %s (of %s) the platform's process dies inside a call (the simulator's profile says so, and the simulator goes on); "+
		"on a device, run %s with --isolate, which runs each instance in a process of its own and reports it crashed: without it the run dies in that call",
		pluralInstances(n), strings.Join(names, ", "), map[bool]string{true: "it", false: "them"}[len(names) == 1])
}
