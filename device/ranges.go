package device

import (
	"cmp"
	"slices"
)

// Ranges is a set of ranges that answers, in O(log n), whether any of them overlaps a range or
// contains it (Ptr.Overlaps, Ptr.Contains), and lists those that overlap it: the ranges sorted by
// address, with the largest end among each prefix. The ranges that start before a range ends (or
// at or before it starts) are a prefix, and one of them overlaps (or contains) it exactly when
// the largest end among them lies past its start (or reaches its end). Asking each of n ranges
// about each of n others costs n²: the guards and the engine ask it of graphs of 100,000 nodes.
type Ranges struct {
	addr, end, maxEnd []uint64
	// given[i] is where the i-th range by address was in the slice NewRanges was given.
	given []int
}

// NewRanges indexes ps (left as it is).
func NewRanges(ps []Ptr) Ranges {
	given := make([]int, len(ps))
	for i := range given {
		given[i] = i
	}
	slices.SortFunc(given, func(i, j int) int { return cmp.Compare(ps[i].Addr, ps[j].Addr) })
	x := Ranges{addr: make([]uint64, len(ps)), end: make([]uint64, len(ps)), maxEnd: make([]uint64, len(ps)), given: given}
	var most uint64
	for k, i := range given {
		p := ps[i]
		most = max(most, p.End())
		x.addr[k], x.end[k], x.maxEnd[k] = p.Addr, p.End(), most
	}
	return x
}

// Overlaps reports whether a range of x overlaps p.
func (x Ranges) Overlaps(p Ptr) bool {
	k := x.before(p.End())
	return k > 0 && x.maxEnd[k-1] > p.Addr
}

// Contains reports whether a range of x contains p.
func (x Ranges) Contains(p Ptr) bool {
	// The ranges that start at or before p.
	k, _ := slices.BinarySearchFunc(x.addr, p.Addr, func(a, t uint64) int {
		if a <= t {
			return -1
		}
		return 1
	})
	return k > 0 && x.maxEnd[k-1] >= p.End()
}

// Overlapping calls f with the index, in the slice NewRanges was given, of each range of x that
// overlaps p, from the highest address down. It looks at the ranges that start before p ends only
// while one of them may still reach into p: for ranges that do not overlap one another, O(log n)
// plus one call per range found.
func (x Ranges) Overlapping(p Ptr, f func(i int)) {
	for k := x.before(p.End()) - 1; k >= 0 && x.maxEnd[k] > p.Addr; k-- {
		if x.end[k] > p.Addr {
			f(x.given[k])
		}
	}
}

// before is how many ranges of x start before addr.
func (x Ranges) before(addr uint64) int {
	k, _ := slices.BinarySearch(x.addr, addr)
	return k
}
