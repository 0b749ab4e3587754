package capture

import (
	"errors"

	"github.com/replaycheck/replaycheck/probes"
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

// EqualByReadingOnThread is EqualByReading made as the engine makes it inside its batch on the
// device's Main thread (runtime.ThreadRunner, found through wrappers).
func EqualByReadingOnThread(dev runtime.Device, p runtime.Ptr, want []byte) (eq bool, err error) {
	g, err := guard.New(dev, guard.Program)
	if err != nil {
		return false, err
	}
	tr, ok := runtime.As[runtime.ThreadRunner](dev)
	if !ok {
		return false, errors.New("no ThreadRunner")
	}
	r := &run{dev: g, watch: &watch{onThread: true}}
	if terr := tr.OnThread(runtime.Main, func(runtime.Device) { eq, err = r.equalByReading(&allocation{ptr: p}, want) }); terr != nil {
		return false, terr
	}
	return eq, err
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

// DescribeKernel is the timeline's description of a fill, copy or axpy of w (and x).
func DescribeKernel(op *probes.Op, w, x runtime.Ptr) string {
	return string(describeKernel(nil, op, w, x))
}

// TimelineTexts cuts the texts of build(i) for i < n from one timeline's blocks of text, as it
// cuts call descriptions.
func TimelineTexts(n int, build func(i int) string) []string {
	var t timeline
	out := make([]string, n)
	for i := range out {
		out[i] = t.text(func(b []byte) []byte { return append(b, build(i)...) })
	}
	return out
}
