package guard

import (
	"github.com/replaycheck/replaycheck/runtime"
)

// flights tracks the graphs launched through the Device that may still be running, for the
// replay-isolation check: two graphs replayed concurrently on different streams that share memory
// (one writing what the other touches) race, and the platform says nothing.
//
// A launch is in flight until the guard sees it complete: a SyncDevice, a SyncStream of its stream,
// or a SyncEvent or successful QueryEvent of an event recorded on its stream after it. A Wait of
// stream s on such an event orders the launch before everything later on s, so it no longer races
// with work launched on s.
type flights struct {
	seq      uint64 // launches so far; a launch's sequence number orders it on its stream
	airborne []flight
	// fences maps an event recorded outside any capture to its stream and the last launch before it.
	fences map[runtime.Event]fence
	// ordered[s][o] is the last launch on stream o that a Wait on s has ordered before s.
	ordered map[runtime.Stream]map[runtime.Stream]uint64
}

type flight struct {
	seq    uint64
	graph  runtime.Graph
	stream runtime.Stream
	ranges []capturedRange
}

type fence struct {
	stream runtime.Stream
	upTo   uint64
}

func newFlights() flights {
	return flights{fences: map[runtime.Event]fence{}, ordered: map[runtime.Stream]map[runtime.Stream]uint64{}}
}

// launch records g launched on s with the ranges it captured.
func (f *flights) launch(g runtime.Graph, s runtime.Stream, ranges []capturedRange) {
	f.seq++
	f.airborne = append(f.airborne, flight{seq: f.seq, graph: g, stream: s, ranges: ranges})
}

// isolated refuses a launch of g on s while a graph in flight on another stream, not ordered
// before s, shares memory with g with at least one of them writing it.
func (f *flights) isolated(g runtime.Graph, s runtime.Stream, ranges []capturedRange) error {
	for _, fl := range f.airborne {
		if fl.stream == s || fl.seq <= f.ordered[s][fl.stream] {
			continue
		}
		if a, b, ok := conflict(ranges, fl.ranges); ok {
			return refusal("Launch", "replay of %v on %v refused: %v, launched on %v, may still be running and nothing orders it before %v; both touch %v (%s by this graph, %s by that one): concurrent replays would race",
				g, s, fl.graph, fl.stream, s, overlap(a.ptr, b.ptr), access(a), access(b))
		}
	}
	return nil
}

func access(r capturedRange) string {
	if r.write {
		return "written"
	}
	return "read"
}

// conflict finds a range of xs and one of ys that overlap with at least one written.
func conflict(xs, ys []capturedRange) (capturedRange, capturedRange, bool) {
	for _, x := range xs {
		for _, y := range ys {
			if (x.write || y.write) && x.ptr.Overlaps(y.ptr) {
				return x, y, true
			}
		}
	}
	return capturedRange{}, capturedRange{}, false
}

func overlap(p, q runtime.Ptr) runtime.Ptr {
	lo, hi := max(p.Addr, q.Addr), min(p.End(), q.End())
	return runtime.Ptr{Addr: lo, Bytes: int64(hi - lo)}
}

// land drops the launches on s up to sequence number upTo: they have completed.
func (f *flights) land(s runtime.Stream, upTo uint64) {
	kept := f.airborne[:0]
	for _, fl := range f.airborne {
		if fl.stream != s || fl.seq > upTo {
			kept = append(kept, fl)
		}
	}
	f.airborne = kept
}

func (f *flights) landAll() { f.airborne = nil }

// record notes that e, recorded on s outside any capture, follows every launch on s so far.
func (f *flights) record(e runtime.Event, s runtime.Stream) {
	f.fences[e] = fence{stream: s, upTo: f.seq}
}

// landEvent lands what an event that has completed follows.
func (f *flights) landEvent(e runtime.Event) {
	if fe, ok := f.fences[e]; ok {
		f.land(fe.stream, fe.upTo)
	}
}

// wait orders what e follows before everything later on s.
func (f *flights) wait(s runtime.Stream, e runtime.Event) {
	fe, ok := f.fences[e]
	if !ok || fe.stream == s {
		return
	}
	if f.ordered[s] == nil {
		f.ordered[s] = map[runtime.Stream]uint64{}
	}
	f.ordered[s][fe.stream] = max(f.ordered[s][fe.stream], fe.upTo)
}
