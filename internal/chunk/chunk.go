// Package chunk keeps a long record of values, one appended at a time, in blocks.
//
// A record of 100,000 values in one slice is either copied as it doubles or, sized up front, zeroed
// whole and then written again from memory once the zeroing has pushed it out of the cache. In
// blocks of at most Block values, nothing is copied and each block is written while its zeroing
// has left it in the cache. The oracle's programs, the engine's compact timeline records and the
// loader's sizes (a pointer to a value stays valid: values never move) use it.
package chunk

import "iter"

// Block is the most values a block holds.
const Block = 4096

// Log is values in the order they were added. The zero Log is empty. A copy of a Log is a view of
// the values it held then: adding to the original does not change it.
type Log[T any] struct {
	full [][]T // the blocks before last, each full
	last []T   // the block being filled
	n    int
	// Hint is how many values the log is expected to hold: the first block is no larger.
	Hint int
}

// Add appends v and returns where it is kept: a value never moves once added.
func (l *Log[T]) Add(v T) *T {
	if len(l.last) == cap(l.last) {
		l.grow()
	}
	l.last = append(l.last, v)
	l.n++
	return &l.last[len(l.last)-1]
}

func (l *Log[T]) grow() {
	if l.last != nil {
		l.full = append(l.full, l.last)
	}
	size := l.Hint - l.n // what the hint leaves, else as many as the log holds already
	if size <= 0 {
		size = max(l.n, 8)
	}
	l.last = make([]T, 0, min(size, Block))
}

// Share appends the values of vs without copying them: vs becomes a block of the log, which the
// caller must never change afterwards (a plan's values, shared by every log that replays it). The
// next Add starts a block of its own.
func (l *Log[T]) Share(vs []T) {
	if len(vs) == 0 {
		return
	}
	if len(l.last) > 0 {
		l.full = append(l.full, l.last)
	}
	l.full = append(l.full, vs[:len(vs):len(vs)])
	l.last = nil
	l.n += len(vs)
}

// Len is how many values the log holds.
func (l *Log[T]) Len() int { return l.n }

// Blocks yields the values in order, block after block. They are the log's own: not to be changed.
func (l *Log[T]) Blocks() iter.Seq[[]T] {
	return func(yield func([]T) bool) {
		for _, b := range l.full {
			if !yield(b) {
				return
			}
		}
		if len(l.last) > 0 {
			yield(l.last)
		}
	}
}
