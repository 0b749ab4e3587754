package guard

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/addrmap"
)

// allocation is one live block the guard saw allocated.
type allocation struct {
	ptr device.Ptr
	// gen grows with every allocation made through the Device, so a free and a re-allocation at
	// the same address is told apart from the original.
	gen uint64
}

// ledger is the residency ledger: the live allocations made through one Device, by address.
type ledger struct {
	live    addrmap.Map[allocation]
	nextGen uint64
}

// add enters a new allocation with the next generation. Two live blocks cannot share an address:
// one already there was freed behind the guard's back, and is replaced.
func (l *ledger) add(p device.Ptr) allocation {
	l.nextGen++
	a := allocation{ptr: p, gen: l.nextGen}
	l.live.Put(p.Addr, a)
	return a
}

// remove drops the allocation that starts at addr, if any.
func (l *ledger) remove(addr uint64) { l.live.Delete(addr) }

// containing returns the live allocation that holds all of r.
func (l *ledger) containing(r device.Ptr) (allocation, bool) {
	_, a, ok := l.live.Floor(r.Addr)
	// r.End() < r.Addr would be an overflowing range: never inside anything.
	if ok && r.End() >= r.Addr && a.ptr.Contains(r) {
		return a, true
	}
	return allocation{}, false
}

// overlapping returns the live allocations that share a byte with r, for telling what holds a stale
// range now.
func (l *ledger) overlapping(r device.Ptr) []allocation {
	var out []allocation
	for _, a := range l.live.All() {
		if a.ptr.Overlaps(r) {
			out = append(out, a)
		}
	}
	return out
}

// capturedRange is a range a captured op touches, with the generation of the allocation that held
// it at capture (0: none the guard made), and whether the op writes it.
type capturedRange struct {
	ptr   device.Ptr
	gen   uint64
	write bool
}

func (r capturedRange) String() string {
	if r.gen == 0 {
		return fmt.Sprintf("%v (in no allocation made through the guard at capture)", r.ptr)
	}
	return fmt.Sprintf("%v (allocation generation %d at capture)", r.ptr, r.gen)
}

// capture is an active capture begun through the Device.
type capture struct {
	// seq is the Device's own key for the capture: assigned at BeginCapture, never 0, never reused.
	seq uint64
	// id is the platform's capture ID (CaptureInfo's ID), used only to match streams; 0 when the
	// platform did not report one.
	id     uint64
	origin device.Stream
	mode   device.CaptureMode
	// ranges are what the capture's ops touched, in order, repeats included until the end
	// (distinct).
	ranges []capturedRange
}

func (c *capture) String() string {
	if c.id == 0 {
		return fmt.Sprintf("capture #%d (no platform capture ID, origin %v, %v mode)", c.seq, c.origin, c.mode)
	}
	return fmt.Sprintf("capture #%d (platform capture ID %d, origin %v, %v mode)", c.seq, c.id, c.origin, c.mode)
}

// touch records the ranges a captured op reads or writes, with the generation that holds each now.
func (c *capture) touch(l *ledger, write bool, ptrs ...device.Ptr) {
	for _, p := range ptrs {
		if p.Bytes <= 0 {
			continue
		}
		r := capturedRange{ptr: p, write: write}
		if a, ok := l.containing(p); ok {
			r.gen = a.gen
		}
		c.add(r)
	}
}

func (c *capture) add(r capturedRange) {
	if n := len(c.ranges); n > 0 && c.ranges[n-1] == r {
		return // the same range as the op before: the commonest repeat, dropped at once
	}
	c.ranges = append(c.ranges, r)
}

// distinct drops the repeats of rs in place, keeping each range's first occurrence, in order: a
// graph whose ops touch one range many times is checked for it once per launch. Done once when
// the capture ends, by sorting an index, rather than through a set consulted by every captured
// op (a quarter of the cost of a guarded capture of 100,000 ops).
func distinct(rs []capturedRange) []capturedRange {
	if len(rs) < 2 {
		return rs
	}
	order := make([]int32, len(rs))
	for i := range order {
		order[i] = int32(i)
	}
	compare := func(a, b capturedRange) int {
		return cmp.Or(cmp.Compare(a.ptr.Addr, b.ptr.Addr), cmp.Compare(a.ptr.Bytes, b.ptr.Bytes),
			cmp.Compare(a.gen, b.gen), compareBool(a.write, b.write))
	}
	slices.SortFunc(order, func(i, j int32) int { return cmp.Or(compare(rs[i], rs[j]), cmp.Compare(i, j)) })
	repeat := make([]bool, len(rs))
	for k := 1; k < len(order); k++ {
		if rs[order[k]] == rs[order[k-1]] {
			repeat[order[k]] = true // order[k-1] is an earlier occurrence of the same range
		}
	}
	out := rs[:0]
	for i, r := range rs {
		if !repeat[i] {
			out = append(out, r)
		}
	}
	return out
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

// stale explains why r may not be replayed, or returns "" when it is still resident. holder names
// who holds an allocation now ("" when no one in particular); free says where a freed range lies.
func (l *ledger) stale(r capturedRange, holder func(allocation) string, free func(device.Ptr) string) string {
	if r.gen == 0 {
		return fmt.Sprintf("captured range %v: the guard cannot vouch for it", r)
	}
	a, ok := l.containing(r.ptr)
	if ok && a.gen == r.gen {
		return ""
	}
	if ok {
		return fmt.Sprintf("captured range %v now lies in allocation generation %d at %v%s: same address, different allocation", r, a.gen, a.ptr, holder(a))
	}
	now := l.overlapping(r.ptr)
	if len(now) == 0 {
		return fmt.Sprintf("captured range %v is no longer inside any live allocation (freed%s)", r, free(r.ptr))
	}
	var held string
	for i, a := range now {
		if i > 0 {
			held += ", "
		}
		held += fmt.Sprintf("generation %d at %v%s", a.gen, a.ptr, holder(a))
	}
	return fmt.Sprintf("captured range %v is no longer inside one live allocation; it overlaps %s", r, held)
}
