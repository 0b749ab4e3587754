package probes

import (
	"fmt"
	"slices"
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
	// budget is how many more op pairs the check may compare; the check is quadratic when many
	// ops are unordered, and stops (exhausted) rather than stall the loader.
	budget    int
	exhausted bool
}

// raceBudget bounds the op pairs one capture's race check compares: far above any real probe,
// well under a second.
var raceBudget = 20_000_000

type dataAccess struct {
	op     *Op
	stream string
	seq    int // index in the ops list
	writes []Span
	reads  []Span
}

func newHappensBefore(streams []string, c *Capture) *happensBefore {
	h := &happensBefore{capture: c.Name, index: map[string]int{}, events: map[string][]int{}}
	for i, s := range streams {
		h.index[s] = i
	}
	h.clock = make([][]int, len(streams))
	for i := range h.clock {
		h.clock[i] = make([]int, len(streams))
	}
	h.joined = make([]bool, len(streams))
	h.done = make([][]*dataAccess, len(streams))
	h.budget = raceBudget
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
		unordered := h.done[u][h.clock[s][u]:]
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
		msg += fmt.Sprintf(" (and %d more earlier ops)", more)
	}
	return msg
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
