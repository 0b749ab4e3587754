package sim

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/replaycheck/replaycheck/runtime"
)

const (
	// Granularity is the allocation unit: every request is rounded up to a multiple of it, as the
	// ACL and CUDA allocators round to 512 bytes.
	Granularity = 512
	// PageSize is the unit in which backing memory is materialised on first write.
	PageSize = 64 << 10

	// addressBase is where device 0's address space starts: far from zero, so a zero or small
	// address is never valid, and shaped like a real device VA.
	addressBase = 0x7f00_0000_0000
	// addressStride separates the address spaces of devices of one backend; it also caps Memory.
	addressStride = 1 << 40
)

// allocation is one live block handed out by Malloc.
type allocation struct {
	ptr      runtime.Ptr // what the caller asked for
	capacity int64       // the block's size: ptr.Bytes rounded up, or a larger cached block
	// gen numbers allocations in the order they were made, over the device's life: a range that is
	// live again after free + malloc at the same address has a different generation.
	gen uint64
}

func (a *allocation) end() uint64 { return a.ptr.End() }

// memory is one device's address space: a caching allocator over a bump pointer, and sparse pages.
type memory struct {
	base, limit uint64
	bump        uint64
	// cache holds freed blocks by capacity; each list is a stack, so reuse is LIFO.
	cache map[int64][]uint64
	live  map[uint64]*allocation
	// sorted is live sorted by address, for finding the allocation that contains a range.
	sorted  []*allocation
	nextGen uint64
	// pages materialise on first non-zero write; an absent page reads as zeros. Pages are never
	// dropped on free: freed memory keeps its bytes, as a caching allocator's memory does.
	pages map[uint64][]byte
}

func newMemory(base uint64, size int64) *memory {
	return &memory{
		base: base, limit: base + uint64(size), bump: base,
		cache: map[int64][]uint64{}, live: map[uint64]*allocation{}, pages: map[uint64][]byte{},
	}
}

func roundUp(n int64) int64 { return (n + Granularity - 1) / Granularity * Granularity }

// alloc returns a block for bytes (> 0), or nil when the device is out of memory. Order: a cached
// block of exactly the rounded size (LIFO), fresh space from the bump pointer, then the smallest
// larger cached block.
func (m *memory) alloc(bytes int64) *allocation {
	if bytes > int64(m.limit-m.base) {
		return nil
	}
	size := roundUp(bytes)
	addr, capacity, ok := m.takeCached(size)
	if !ok && m.bump+uint64(size) <= m.limit {
		addr, capacity, ok = m.bump, size, true
		m.bump += uint64(size)
	}
	if !ok {
		best := int64(-1)
		for c, list := range m.cache {
			if c > size && len(list) > 0 && (best < 0 || c < best) {
				best = c
			}
		}
		if best < 0 {
			return nil
		}
		addr, capacity, _ = m.takeCached(best)
	}
	m.nextGen++
	a := &allocation{ptr: runtime.Ptr{Addr: addr, Bytes: bytes}, capacity: capacity, gen: m.nextGen}
	m.live[addr] = a
	i, _ := slices.BinarySearchFunc(m.sorted, addr, compareAddr)
	m.sorted = slices.Insert(m.sorted, i, a)
	return a
}

func (m *memory) takeCached(capacity int64) (uint64, int64, bool) {
	list := m.cache[capacity]
	if len(list) == 0 {
		return 0, 0, false
	}
	addr := list[len(list)-1]
	m.cache[capacity] = list[:len(list)-1]
	return addr, capacity, true
}

// release returns a live block to the cache. The caller has checked that it is live.
func (m *memory) release(a *allocation) {
	delete(m.live, a.ptr.Addr)
	i, found := slices.BinarySearchFunc(m.sorted, a.ptr.Addr, compareAddr)
	if found {
		m.sorted = slices.Delete(m.sorted, i, i+1)
	}
	m.cache[a.capacity] = append(m.cache[a.capacity], a.ptr.Addr)
}

// containing returns the live allocation whose requested range holds all of p, or nil.
func (m *memory) containing(p runtime.Ptr) *allocation {
	i, found := slices.BinarySearchFunc(m.sorted, p.Addr, compareAddr)
	if !found {
		i--
	}
	if i < 0 || i >= len(m.sorted) {
		return nil
	}
	a := m.sorted[i]
	if p.Bytes > 0 && p.End() >= p.Addr && a.ptr.Contains(p) {
		return a
	}
	return nil
}

func (m *memory) liveBytes() int64 {
	var n int64
	for _, a := range m.live {
		n += a.ptr.Bytes
	}
	return n
}

func (m *memory) residentBytes() int64 { return int64(len(m.pages)) * PageSize }

// span calls f for each page-sized piece of [addr, addr+n): the page index, the offset in the page
// and the piece's offset and length within the range.
func span(addr uint64, n int64, f func(page uint64, pageOff, off, length int64)) {
	for off := int64(0); off < n; {
		a := addr + uint64(off)
		page, pageOff := a/PageSize, int64(a%PageSize)
		length := min(PageSize-pageOff, n-off)
		f(page, pageOff, off, length)
		off += length
	}
}

func (m *memory) read(dst []byte, addr uint64) {
	span(addr, int64(len(dst)), func(page uint64, pageOff, off, length int64) {
		if p, ok := m.pages[page]; ok {
			copy(dst[off:off+length], p[pageOff:pageOff+length])
		} else {
			clear(dst[off : off+length])
		}
	})
}

func (m *memory) write(addr uint64, src []byte) {
	span(addr, int64(len(src)), func(page uint64, pageOff, off, length int64) {
		chunk := src[off : off+length]
		p, ok := m.pages[page]
		if !ok {
			if allZero(chunk) {
				return // an absent page already reads as zeros
			}
			p = make([]byte, PageSize)
			m.pages[page] = p
		}
		copy(p[pageOff:], chunk)
	})
}

func (m *memory) fill(addr uint64, n int64, value byte) {
	span(addr, n, func(page uint64, pageOff, _, length int64) {
		p, ok := m.pages[page]
		if !ok {
			if value == 0 {
				return
			}
			p = make([]byte, PageSize)
			m.pages[page] = p
		}
		seg := p[pageOff : pageOff+length]
		for i := range seg {
			seg[i] = value
		}
	})
}

// move copies n bytes with memmove semantics, a page-sized chunk at a time: forward when the
// destination is below the source, backward otherwise, so overlapping ranges copy as if buffered.
func (m *memory) move(dst, src uint64, n int64) {
	buf := make([]byte, min(n, PageSize))
	step := func(off int64) {
		length := min(int64(len(buf)), n-off)
		m.read(buf[:length], src+uint64(off))
		m.write(dst+uint64(off), buf[:length])
	}
	if dst <= src {
		for off := int64(0); off < n; off += int64(len(buf)) {
			step(off)
		}
		return
	}
	last := (n - 1) / int64(len(buf)) * int64(len(buf))
	for off := last; off >= 0; off -= int64(len(buf)) {
		step(off)
	}
}

// axpy computes y[i] = a*x[i] + y[i] over little-endian uint32 lanes, wrapping; n is a multiple
// of 4. Lanes are processed in increasing order, a page-sized chunk at a time.
func (m *memory) axpy(y, x uint64, n int64, a uint32) {
	xs := make([]byte, min(n, PageSize))
	ys := make([]byte, len(xs))
	for off := int64(0); off < n; off += int64(len(xs)) {
		length := min(int64(len(xs)), n-off)
		m.read(xs[:length], x+uint64(off))
		m.read(ys[:length], y+uint64(off))
		for i := int64(0); i < length; i += 4 {
			v := a*binary.LittleEndian.Uint32(xs[i:]) + binary.LittleEndian.Uint32(ys[i:])
			binary.LittleEndian.PutUint32(ys[i:], v)
		}
		m.write(y+uint64(off), ys[:length])
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func compareAddr(x *allocation, addr uint64) int { return cmp.Compare(x.ptr.Addr, addr) }
