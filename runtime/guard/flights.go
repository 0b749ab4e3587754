package guard

import (
	"cmp"
	"slices"

	"github.com/replaycheck/replaycheck/device"
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
	seq uint64 // launches so far; a launch's sequence number orders it on its stream
	// airborne are the launches in flight, by stream, each stream's in launch order: a launch is
	// checked against the other streams' only, and a round of n launches on one stream would
	// otherwise pass over n flights per launch.
	airborne map[device.Stream][]flight
	// fences maps an event recorded outside any capture to its stream and the last launch before it.
	fences map[device.Event]fence
	// ordered[s][o] is the last launch on stream o that a Wait on s has ordered before s.
	ordered map[device.Stream]map[device.Stream]uint64
}

type flight struct {
	seq    uint64
	graph  device.Graph
	stream device.Stream
	fp     *footprint
}

// footprint is what a graph captured through the Device touches: its ranges in capture order
// and, built the first time a launch is checked against the graph in flight, an index of them by
// address. Checking each range of one graph against each of another's would cost the product of
// their sizes per launch: two graphs of 100,000 nodes, 10^10 comparisons.
type footprint struct {
	ranges []capturedRange
	index  *footprintIndex
}

// footprintIndex answers whether any range of a footprint, or any written one, overlaps a range;
// all lists them, by their place in the footprint's ranges.
type footprintIndex struct {
	all, written device.Ranges
}

// indexed returns fp's index, building it on first use.
func (fp *footprint) indexed() *footprintIndex {
	if fp.index == nil {
		var all, written []device.Ptr
		for _, r := range fp.ranges {
			all = append(all, r.ptr)
			if r.write {
				written = append(written, r.ptr)
			}
		}
		fp.index = &footprintIndex{all: device.NewRanges(all), written: device.NewRanges(written)}
	}
	return fp.index
}

type fence struct {
	stream device.Stream
	upTo   uint64
}

func newFlights() flights {
	return flights{airborne: map[device.Stream][]flight{}, fences: map[device.Event]fence{}, ordered: map[device.Stream]map[device.Stream]uint64{}}
}

// launch records g launched on s with what it captured.
func (f *flights) launch(g device.Graph, s device.Stream, fp *footprint) {
	f.seq++
	f.airborne[s] = append(f.airborne[s], flight{seq: f.seq, graph: g, stream: s, fp: fp})
}

// isolated refuses a launch of g on s while a graph in flight on another stream, not ordered
// before s, shares memory with g with at least one of them writing it.
func (f *flights) isolated(g device.Graph, s device.Stream, ranges []capturedRange) error {
	// The flights that may race with it, checked in launch order: the refusal names the earliest.
	var racing []flight
	for o, fls := range f.airborne {
		if o == s {
			continue
		}
		for _, fl := range fls {
			if fl.seq > f.ordered[s][o] {
				racing = append(racing, fl)
			}
		}
	}
	slices.SortFunc(racing, func(a, b flight) int { return cmp.Compare(a.seq, b.seq) })
	for _, fl := range racing {
		if a, b, ok := conflict(ranges, fl.fp); ok {
			return refusal(runtime.GuardIsolation, "Launch", "replay of %v on %v refused: %v, launched on %v, may still be running and nothing orders it before %v; both touch %v (%s by this graph, %s by that one): concurrent replays would race",
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

// conflict finds a range of xs and one of ys's that overlap with at least one written: the first
// such range of xs, in order, and the first of ys's it conflicts with. The index of ys tells
// which range of xs conflicts at all and lists the ranges it overlaps: a launch costs
// O(len(xs) log len(ys)) and the overlaps found, not O(len(xs) len(ys)).
func conflict(xs []capturedRange, ys *footprint) (capturedRange, capturedRange, bool) {
	if ys == nil || len(ys.ranges) == 0 {
		return capturedRange{}, capturedRange{}, false
	}
	idx := ys.indexed()
	for _, x := range xs {
		against := idx.written // a read conflicts only with a write
		if x.write {
			against = idx.all
		}
		if !against.Overlaps(x.ptr) {
			continue
		}
		first := len(ys.ranges)
		idx.all.Overlapping(x.ptr, func(i int) { // i is the range's place in ys.ranges
			if i < first && (x.write || ys.ranges[i].write) {
				first = i
			}
		})
		if first < len(ys.ranges) {
			return x, ys.ranges[first], true
		}
	}
	return capturedRange{}, capturedRange{}, false
}

func overlap(p, q device.Ptr) device.Ptr {
	lo, hi := max(p.Addr, q.Addr), min(p.End(), q.End())
	return device.Ptr{Addr: lo, Bytes: int64(hi - lo)}
}

// land drops the launches on s up to sequence number upTo: they have completed.
func (f *flights) land(s device.Stream, upTo uint64) {
	fls := f.airborne[s]
	i := 0
	for i < len(fls) && fls[i].seq <= upTo {
		i++
	}
	if i == len(fls) {
		delete(f.airborne, s)
		return
	}
	f.airborne[s] = fls[i:]
}

func (f *flights) landAll() { clear(f.airborne) }

// record notes that e, recorded on s outside any capture, follows every launch on s so far.
func (f *flights) record(e device.Event, s device.Stream) {
	f.fences[e] = fence{stream: s, upTo: f.seq}
}

// landEvent lands what an event that has completed follows.
func (f *flights) landEvent(e device.Event) {
	if fe, ok := f.fences[e]; ok {
		f.land(fe.stream, fe.upTo)
	}
}

// wait orders what e follows before everything later on s.
func (f *flights) wait(s device.Stream, e device.Event) {
	fe, ok := f.fences[e]
	if !ok || fe.stream == s {
		return
	}
	if f.ordered[s] == nil {
		f.ordered[s] = map[device.Stream]uint64{}
	}
	f.ordered[s][fe.stream] = max(f.ordered[s][fe.stream], fe.upTo)
}
