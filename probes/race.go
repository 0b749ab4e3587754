package probes

import (
	"fmt"
	"slices"

	"github.com/replaycheck/replaycheck/internal/addrmap"
	"github.com/replaycheck/replaycheck/internal/plural"
)

// happensBefore orders the ops of one capture's ops list with vector clocks. Ops on one stream are
// ordered in list order; `record e` on s then a later `wait e` on t orders everything before the
// record on s before everything after the wait on t. Only events recorded inside the list by a
// stream that has joined the capture order anything: the origin has joined, and a stream joins by
// waiting on such an event. A stream that never joins keeps a clock of its own ops only, so its
// ops are unordered with every other stream's.
type happensBefore struct {
	capture string
	index   map[string]int
	// clock[s][u] is how many data ops of stream u are ordered before stream s's next op.
	clock  [][]int
	joined []bool
	// events holds the clock an event's latest record in the list carries; nil when a stream that
	// had not joined recorded it.
	events map[string][]int
	// done[s] lists stream s's data ops in list order: done[s][k] is the one with clock k+1.
	done [][]*dataAccess
	// wrote[s] and read[s] hold, by buffer, the last of stream s's data ops to write and to read
	// each byte (shadow): whether any of a stream's unordered ops conflicts with a new op is one
	// look at them, where comparing with every unordered op is quadratic in a capture whose
	// streams run side by side.
	wrote, read []map[string]*shadow
	// budget is how many more op pairs (an op compared with another, or with a piece of a
	// shadow) the check may compare. With the shadows it is about linear in the ops, but a
	// capture with many races compares each racing op with every unordered one, for the message;
	// past the budget the check stops (exhausted) rather than stall the loader.
	budget    int
	exhausted bool
	// knobs are the check's switches (directScan, and the budget it started with).
	knobs raceKnobs
}

// defaultDirectScan is how many unordered ops of a stream a new op is compared with one by one
// before the stream's shadows are asked first: past it, a stream whose ops run beside the new
// one's would make the check quadratic.
const defaultDirectScan = 32

// defaultRaceBudget bounds the op pairs one capture's race check compares: far above any real
// probe, about a second.
const defaultRaceBudget = 20_000_000

// raceKnobs are the race check's internal switches. Nothing package-level steers the check: a
// load takes them from its Limits (Limits.race), where only tests set them (export_test.go's
// tuneRace, the one way they do), and the defaults otherwise.
type raceKnobs struct {
	directScan int // see defaultDirectScan; 0: the shadows are always asked first
	budget     int // see defaultRaceBudget
}

// raceKnobs are the race check's knobs under lim.
func (lim Limits) raceKnobs() raceKnobs {
	if lim.race != nil {
		return *lim.race
	}
	return raceKnobs{directScan: defaultDirectScan, budget: defaultRaceBudget}
}

type dataAccess struct {
	op     *Op
	stream string
	seq    int // index in the ops list
	writes []Span
	reads  []Span
}

func newHappensBefore(streams []string, c *Capture, k raceKnobs) *happensBefore {
	h := &happensBefore{capture: c.Name, index: map[string]int{}, events: map[string][]int{}, knobs: k}
	for i, s := range streams {
		h.index[s] = i
	}
	h.clock = make([][]int, len(streams))
	for i := range h.clock {
		h.clock[i] = make([]int, len(streams))
	}
	h.joined = make([]bool, len(streams))
	h.done = make([][]*dataAccess, len(streams))
	h.wrote, h.read = make([]map[string]*shadow, len(streams)), make([]map[string]*shadow, len(streams))
	for i := range streams {
		h.wrote[i], h.read[i] = map[string]*shadow{}, map[string]*shadow{}
	}
	h.budget = k.budget
	h.joined[h.index[c.Stream]] = true
	return h
}

func (h *happensBefore) record(stream, event string) {
	s := h.index[stream]
	if !h.joined[s] {
		h.events[event] = nil
		return
	}
	h.events[event] = slices.Clone(h.clock[s])
}

func (h *happensBefore) wait(stream, event string) {
	ev := h.events[event]
	if ev == nil {
		return // recorded outside the list or by a stream outside the capture: no order
	}
	t := h.index[stream]
	for u, n := range ev {
		h.clock[t][u] = max(h.clock[t][u], n)
	}
	h.joined[t] = true
}

// access adds a data op and describes its race with the earliest unordered earlier op whose spans
// overlap its own with at least one write; "" when there is none.
func (h *happensBefore) access(op *Op, seq int, acc Access) string {
	s := h.index[op.Stream]
	me := &dataAccess{op: op, stream: op.Stream, seq: seq, writes: acc.Writes, reads: acc.Reads}

	var (
		first *dataAccess
		over  Span
		kind  string
		more  int
	)
	for u := range h.done {
		if u == s {
			continue // same stream: ordered
		}
		c := h.clock[s][u]
		unordered := h.done[u][c:]
		if len(unordered) > h.knobs.directScan {
			conflicts, ok := h.mayConflict(me, u, c)
			if !ok {
				h.exhausted = true
				return ""
			}
			if !conflicts {
				continue // none of them touches what the new op does: nothing to compare
			}
		}
		if h.budget -= len(unordered); h.budget < 0 {
			h.exhausted = true
			return ""
		}
		for _, a := range unordered {
			sp, k, ok := conflict(me, a)
			if !ok {
				continue
			}
			if first == nil || a.seq < first.seq {
				if first != nil {
					more++
				}
				first, over, kind = a, sp, k
			} else {
				more++
			}
		}
	}
	k := len(h.done[s])
	for _, sp := range me.writes {
		shadowOf(h.wrote[s], sp.Buffer).assign(sp.Off, sp.End(), k)
	}
	for _, sp := range me.reads {
		shadowOf(h.read[s], sp.Buffer).assign(sp.Off, sp.End(), k)
	}
	h.clock[s][s]++
	h.done[s] = append(h.done[s], me)
	if first == nil {
		return ""
	}
	msg := fmt.Sprintf("%s on stream %s and %s on stream %s race on %s (%s): no stream order or record/wait inside capture %s orders them",
		opRef(op), op.Stream, opRef(first.op), first.stream, over, kind, h.capture)
	for _, st := range []string{op.Stream, first.stream} {
		if !h.joined[h.index[st]] {
			msg += fmt.Sprintf("; stream %s has not joined the capture", st)
			break
		}
	}
	if more > 0 {
		msg += " (and " + plural.Count(more, "more earlier op") + ")"
	}
	return msg
}

// mayConflict reports whether one of stream u's ops from its k-th on (those not ordered before
// me) writes a byte me touches or reads a byte me writes. It is exact: the last of u's ops to
// write (or read) a byte is ordered before me only when every earlier one of u's is. ok is false
// when the budget ran out.
func (h *happensBefore) mayConflict(me *dataAccess, u, k int) (conflicts, ok bool) {
	look := func(shadows map[string]*shadow, spans []Span) bool {
		for _, sp := range spans {
			if sh := shadows[sp.Buffer]; sh != nil && sh.since(sp.Off, sp.End(), k, &h.budget) {
				return true
			}
		}
		return false
	}
	conflicts = look(h.wrote[u], me.writes) || look(h.read[u], me.writes) || look(h.wrote[u], me.reads)
	return conflicts, h.budget >= 0
}

// shadow holds, for one stream and one buffer, which of the stream's data ops last touched each
// byte range (in one way: writing or reading): disjoint ranges by offset, each with that op's
// index in the stream's list of data ops.
type shadow struct{ pieces addrmap.Map[piece] }

type piece struct {
	end int64 // the range is [its key, end)
	k   int
}

func shadowOf(m map[string]*shadow, buffer string) *shadow {
	sh := m[buffer]
	if sh == nil {
		sh = &shadow{}
		m[buffer] = sh
	}
	return sh
}

// assign makes op k the last to touch [off, end): pieces it covers go, pieces it cuts keep what
// lies outside it.
func (sh *shadow) assign(off, end int64, k int) {
	if end <= off {
		return
	}
	if at, p, ok := sh.pieces.Floor(uint64(off)); ok && int64(at) < off && p.end > off {
		sh.pieces.Put(at, piece{end: off, k: p.k}) // the part before off stays
		if p.end > end {
			sh.pieces.Put(uint64(end), piece{end: p.end, k: p.k}) // and the part after end
		}
	}
	var covered []uint64
	var tail *piece
	var tailAt int64
	for at, p := range sh.pieces.From(uint64(off)) {
		if int64(at) >= end {
			break
		}
		covered = append(covered, at)
		if p.end > end {
			tail, tailAt = &piece{end: p.end, k: p.k}, end
		}
	}
	for _, at := range covered {
		sh.pieces.Delete(at)
	}
	if tail != nil {
		sh.pieces.Put(uint64(tailAt), *tail)
	}
	sh.pieces.Put(uint64(off), piece{end: end, k: k})
}

// since reports whether an op at index k or later was the last to touch a byte of [off, end);
// each piece looked at costs one of budget.
func (sh *shadow) since(off, end int64, k int, budget *int) bool {
	if end <= off {
		return false // an empty span overlaps nothing (Span.Overlaps)
	}
	if at, p, ok := sh.pieces.Floor(uint64(off)); ok && int64(at) < off && p.end > off {
		*budget--
		if p.k >= k {
			return true
		}
	}
	for at, p := range sh.pieces.From(uint64(off)) {
		if int64(at) >= end || *budget < 0 {
			return false
		}
		*budget--
		if p.k >= k {
			return true
		}
	}
	return false
}

// conflict reports the first overlap between b and a with at least one write, write-write first.
func conflict(b, a *dataAccess) (Span, string, bool) {
	if sp, ok := overlap(b.writes, a.writes); ok {
		return sp, "write-write", true
	}
	if sp, ok := overlap(b.writes, a.reads); ok {
		return sp, "read-write", true
	}
	if sp, ok := overlap(b.reads, a.writes); ok {
		return sp, "read-write", true
	}
	return Span{}, "", false
}

// overlap returns the first shared byte range of two span lists. Spans name buffers, not
// allocations: the oracle applies a graph's ops to whatever buffer has the name at launch, and a
// buffer freed and allocated again may well land on its old address.
func overlap(xs, ys []Span) (Span, bool) {
	for _, x := range xs {
		for _, y := range ys {
			if x.Overlaps(y) {
				off := max(x.Off, y.Off)
				return Span{Buffer: x.Buffer, Off: off, Len: min(x.End(), y.End()) - off}, true
			}
		}
	}
	return Span{}, false
}
