package runtime

import (
	"cmp"
	"slices"
)

// Ranges is a set of ranges that answers, in O(log n), whether any of them overlaps a range or
// contains it (Ptr.Overlaps, Ptr.Contains): the ranges sorted by address, with the largest end
// among each prefix. The ranges that start before a range ends (or at or before it starts) are a
// prefix, and one of them overlaps (or contains) it exactly when the largest end among them lies
// past its start (or reaches its end). Asking each of n ranges about each of n others costs n²:
// the guards and the engine ask it of graphs of 100,000 nodes.
type Ranges struct {
	addr   []uint64
	maxEnd []uint64
}

// NewRanges indexes ps; the slice is sorted in place.
func NewRanges(ps []Ptr) Ranges {
	slices.SortFunc(ps, func(a, b Ptr) int { return cmp.Compare(a.Addr, b.Addr) })
	x := Ranges{addr: make([]uint64, len(ps)), maxEnd: make([]uint64, len(ps))}
	var end uint64
	for i, p := range ps {
		end = max(end, p.End())
		x.addr[i], x.maxEnd[i] = p.Addr, end
	}
	return x
}

// Overlaps reports whether a range of x overlaps p.
func (x Ranges) Overlaps(p Ptr) bool {
	k, _ := slices.BinarySearch(x.addr, p.End()) // the ranges that start before p ends
	return k > 0 && x.maxEnd[k-1] > p.Addr
}

// Contains reports whether a range of x contains p.
func (x Ranges) Contains(p Ptr) bool {
	// The ranges that start at or before p: the first index past them.
	k, _ := slices.BinarySearchFunc(x.addr, p.Addr, func(a, t uint64) int {
		if a <= t {
			return -1
		}
		return 1
	})
	return k > 0 && x.maxEnd[k-1] >= p.End()
}
