// Package plural writes a count with its noun: "1 stale range", "2 stale ranges". Messages that
// say "(s)" or "1 more ranges" read as machine output; every count a person reads goes through
// Count.
package plural

import "strconv"

// Count is n followed by noun, with an "s" added unless n is 1. noun is the singular, with any
// words before it ("more stale range"); nouns whose plural is not "s" added are not asked for.
func Count[N ~int | ~int64 | ~uint64](n N, noun string) string {
	s := strconv.FormatInt(int64(n), 10) + " " + noun
	if n != 1 {
		s += "s"
	}
	return s
}
