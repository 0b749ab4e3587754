// Package addrmap keeps values by address, in address order, for finding among many live
// allocations the one that holds an address. A single sorted slice moves half of itself on every
// insert or delete, so n allocations made and freed cost O(n²): a probe of 40,000 buffers spent a
// third of its time there. A Map keeps its entries in chunks of at most chunkMax, so Put, Delete
// and Floor cost two binary searches and a move within one chunk.
package addrmap

import (
	"iter"
	"slices"
)

// chunkMax is the most entries one chunk holds before it splits: small enough that moving within
// it is cheap, large enough that the list of chunks stays short.
const chunkMax = 512

// Map maps addresses to values, kept in address order. The zero Map is empty and ready to use.
type Map[V any] struct {
	chunks []*chunk[V] // in address order, none empty
	n      int
}

type chunk[V any] struct {
	keys []uint64 // ascending
	vals []V
}

// Len is the number of entries.
func (m *Map[V]) Len() int { return m.n }

// Put sets the value at key, replacing one already there.
func (m *Map[V]) Put(key uint64, v V) {
	if len(m.chunks) == 0 {
		m.chunks = []*chunk[V]{{keys: []uint64{key}, vals: []V{v}}}
		m.n = 1
		return
	}
	ci := max(m.chunkOf(key), 0) // a key below every chunk goes into the first
	c := m.chunks[ci]
	i, found := slices.BinarySearch(c.keys, key)
	if found {
		c.vals[i] = v
		return
	}
	c.keys = slices.Insert(c.keys, i, key)
	c.vals = slices.Insert(c.vals, i, v)
	m.n++
	if len(c.keys) > chunkMax {
		half := len(c.keys) / 2
		next := &chunk[V]{keys: slices.Clone(c.keys[half:]), vals: slices.Clone(c.vals[half:])}
		clear(c.vals[half:]) // let go of what the values point to
		c.keys, c.vals = c.keys[:half:half], c.vals[:half:half]
		m.chunks = slices.Insert(m.chunks, ci+1, next)
	}
}

// Delete removes the entry at key and reports whether there was one.
func (m *Map[V]) Delete(key uint64) bool {
	ci := m.chunkOf(key)
	if ci < 0 {
		return false
	}
	c := m.chunks[ci]
	i, found := slices.BinarySearch(c.keys, key)
	if !found {
		return false
	}
	c.keys = slices.Delete(c.keys, i, i+1)
	c.vals = slices.Delete(c.vals, i, i+1)
	m.n--
	if len(c.keys) == 0 {
		m.chunks = slices.Delete(m.chunks, ci, ci+1)
	}
	return true
}

// Floor returns the entry with the greatest key at or below key; ok is false when there is none.
func (m *Map[V]) Floor(key uint64) (at uint64, v V, ok bool) {
	ci := m.chunkOf(key)
	if ci < 0 {
		return 0, v, false
	}
	c := m.chunks[ci]
	i, found := slices.BinarySearch(c.keys, key)
	if !found {
		i-- // the chunk's first key is at or below key, so i >= 0
	}
	return c.keys[i], c.vals[i], true
}

// All yields the entries in address order.
func (m *Map[V]) All() iter.Seq2[uint64, V] {
	return func(yield func(uint64, V) bool) {
		for _, c := range m.chunks {
			for i, k := range c.keys {
				if !yield(k, c.vals[i]) {
					return
				}
			}
		}
	}
}

// From yields the entries at or above key, in address order. The map must not change while it
// yields.
func (m *Map[V]) From(key uint64) iter.Seq2[uint64, V] {
	return func(yield func(uint64, V) bool) {
		for ci := max(m.chunkOf(key), 0); ci < len(m.chunks); ci++ {
			c := m.chunks[ci]
			i, _ := slices.BinarySearch(c.keys, key) // 0 in every chunk after the first
			for ; i < len(c.keys); i++ {
				if !yield(c.keys[i], c.vals[i]) {
					return
				}
			}
		}
	}
}

// chunkOf is the index of the last chunk whose first key is at or below key; -1 when key is below
// every chunk (or there is none).
func (m *Map[V]) chunkOf(key uint64) int {
	i, _ := slices.BinarySearchFunc(m.chunks, key, func(c *chunk[V], k uint64) int {
		if c.keys[0] <= k {
			return -1
		}
		return 1
	})
	return i - 1
}
