package capture

import (
	"errors"
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// Knobs are the engine's internal switches (knobs.go), as the specs set them.
type Knobs = knobs

// Tune returns opt with the engine's knobs as set leaves them, from their defaults: the one way the
// specs set a knob. An instance run with the options holds its own copy, and nothing package-level
// changes: there is nothing to restore.
func Tune(opt Options, set func(k *Knobs)) Options {
	k := opt.knobsOf()
	set(&k)
	opt.knobs = &k
	return opt
}

// EqualByReading is the chunked read-back comparison of p on dev with want, with opt's knobs.
func (opt Options) EqualByReading(dev device.Device, p device.Ptr, want []byte) (bool, error) {
	g, err := guard.New(dev, guard.Program)
	if err != nil {
		return false, err
	}
	in := &instance{dev: g, knobs: opt.knobsOf()}
	return in.equalByReading(&allocation{ptr: p}, want)
}

// EqualByReadingOnThread is EqualByReading made as the engine makes it inside its session on the
// device's Main thread (the device.ThreadRunner its Extensions state).
func (opt Options) EqualByReadingOnThread(dev device.Device, p device.Ptr, want []byte) (eq bool, err error) {
	g, err := guard.New(dev, guard.Program)
	if err != nil {
		return false, err
	}
	tr := device.ExtensionsOf(dev).Threads
	if tr == nil {
		return false, errors.New("no ThreadRunner")
	}
	in := &instance{dev: g, watching: watching{watch: &watch{onThread: true}}, knobs: opt.knobsOf()}
	if terr := tr.OnThread(device.Main, func(device.Device) { eq, err = in.equalByReading(&allocation{ptr: p}, want) }); terr != nil {
		return false, terr
	}
	return eq, err
}

// DifferingRanges lists every differing range of got against want.
func DifferingRanges(want, got []byte) [][2]int {
	loc := localise(want, got, len(want), defaultSegmentBytes)
	return spans(loc.kept)
}

// Localise is the localisation the engine makes of a differing buffer: its first limit ranges,
// and every differing range and byte counted.
func Localise(want, got []byte, limit int) (kept [][2]int, ranges int, differing int64) {
	return Options{}.Localise(want, got, limit)
}

// Localise is the package's Localise with opt's knobs (the least a scanning goroutine scans).
func (opt Options) Localise(want, got []byte, limit int) (kept [][2]int, ranges int, differing int64) {
	loc := localise(want, got, limit, opt.knobsOf().SegmentBytes)
	return spans(loc.kept), loc.ranges, loc.bytes
}

// LocaliseSegments is Localise with the buffers scanned in segments cut at the given offsets
// (multiples of 1 KiB) instead of one per CPU, and the segments joined.
func LocaliseSegments(want, got []byte, limit int, cuts []int) (kept [][2]int, ranges int, differing int64) {
	loc := localiseAt(want, got, limit, cuts)
	return spans(loc.kept), loc.ranges, loc.bytes
}

// LocaliseSegmentsUnjoined is LocaliseSegments with a broken join, for negative controls: each
// segment's ranges as they are, none joined with the previous segment's last.
func LocaliseSegmentsUnjoined(want, got []byte, limit int, cuts []int) (kept [][2]int, ranges int, differing int64) {
	lo := 0
	for _, hi := range append(cuts, len(want)) {
		s := scanSegment(want[lo:hi], got[lo:hi], lo, limit+1)
		ranges += s.ranges
		differing += s.bytes
		for _, r := range s.kept {
			if len(kept) < limit {
				kept = append(kept, [2]int{r.off, r.end})
			}
		}
		lo = hi
	}
	return kept, ranges, differing
}

func spans(s []span) [][2]int {
	if len(s) == 0 {
		return nil
	}
	out := make([][2]int, 0, len(s))
	for _, r := range s {
		out = append(out, [2]int{r.off, r.end})
	}
	return out
}

// DescribeKernel is the timeline's description of a fill, copy or axpy of w (and x).
func DescribeKernel(op *probes.Op, w, x device.Ptr) string {
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

// LedgerHolds is the graph check's answer to whether p lies inside a buffer capture's ops
// touched with access how, according to ledger.
func LedgerHolds(ledger []Residency, capture string, p device.Ptr, how Access) bool {
	var entries []Residency
	for _, l := range ledger {
		if l.Capture == capture {
			entries = append(entries, l)
		}
	}
	return newLedgerIndex(entries).holds(p, how)
}

// Snapshots is an engine instance reduced to its buffers and the snapshot a guarded call is checked
// against, over rt.
type Snapshots struct{ in *instance }

func NewSnapshots(rt runtime.Runtime) *Snapshots {
	return &Snapshots{in: &instance{dev: rt, buffers: buffers{bufs: map[string]*allocation{}}, spec: probes.Instance{Guarded: true}, p: &probes.Probe{}}}
}

// Set makes the engine hold p for name (an allocation, or a growth); Drop frees name.
func (s *Snapshots) Set(name string, p device.Ptr) {
	s.in.gen++
	s.in.setBuf(name, &allocation{ptr: p, gen: s.in.gen})
}

func (s *Snapshots) Drop(name string) { s.in.dropBuf(name) }

// Take takes the snapshot a call would be checked against and returns the buffer states it
// holds, and those read in full now.
func (s *Snapshots) Take() (kept, full map[string]string) {
	snap, err := s.in.snap()
	if err != nil {
		panic(err)
	}
	kept, full = map[string]string{}, map[string]string{}
	for name, st := range snap.bufs {
		kept[name] = fmt.Sprintf("%+v", st)
	}
	for name, a := range s.in.bufs {
		full[name] = fmt.Sprintf("%+v", s.in.stateOf(name, a))
	}
	return kept, full
}

// CompactCalls is how many of a timeline's calls are kept compact (a capture's work that took).
func CompactCalls(tl Timeline) int {
	if tl.log == nil {
		return 0
	}
	return tl.log.calls
}
