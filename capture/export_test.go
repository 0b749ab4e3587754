package capture

import (
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// SetReadChunk sets the read-back chunk and returns what restores it.
func SetReadChunk(n int) (restore func()) {
	old := readChunk
	readChunk = n
	return func() { readChunk = old }
}

// EqualByReading is the chunked read-back comparison of p on dev with want.
func EqualByReading(dev runtime.Device, p runtime.Ptr, want []byte) (bool, error) {
	g, err := guard.New(dev, guard.Program)
	if err != nil {
		return false, err
	}
	r := &run{dev: g}
	return r.equalByReading(&allocation{ptr: p}, want)
}

// DifferingRanges lists every differing range of got against want.
func DifferingRanges(want, got []byte) [][2]int {
	var out [][2]int
	differingRanges(want, got, func(off, end int) bool { out = append(out, [2]int{off, end}); return true })
	return out
}

// CountDifferingRanges counts every differing range of got against want, keeping none.
func CountDifferingRanges(want, got []byte) int {
	n := 0
	differingRanges(want, got, func(off, end int) bool { n++; return true })
	return n
}

// FirstDifferingRanges lists the differing ranges of got against want until f has kept limit of
// them (as diff does), and how many times f was called.
func FirstDifferingRanges(want, got []byte, limit int) (out [][2]int, calls int) {
	differingRanges(want, got, func(off, end int) bool {
		calls++
		out = append(out, [2]int{off, end})
		return len(out) < limit
	})
	return out, calls
}
