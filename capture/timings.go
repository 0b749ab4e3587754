package capture

import (
	"slices"
	"time"
)

// phaseTimes collects an instance's phase timings as it runs.
type phaseTimes struct {
	capture  time.Duration
	rounds   []time.Duration
	verify   time.Duration
	verified int64
}

// timings summarises them: the replay rounds' median and 99th percentile (nearest rank), and
// the verification rate.
func (p phaseTimes) timings() Timings {
	t := Timings{Capture: p.capture, Verify: p.verify, VerifiedBytes: p.verified}
	if n := len(p.rounds); n > 0 {
		rounds := slices.Clone(p.rounds)
		slices.Sort(rounds)
		t.ReplayMedian = rounds[(n-1)/2]
		t.ReplayP99 = rounds[min(n-1, (99*n+99)/100-1)]
	}
	if p.verify > 0 {
		t.VerifyRate = float64(p.verified) / p.verify.Seconds()
	}
	return t
}
