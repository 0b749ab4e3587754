package sim

import (
	"bytes"
	"encoding/binary"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/addrmap"
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
	// hostBase is where device 0's host memory starts: below every device's address space, so a
	// host address is never a device address.
	hostBase = 0x1000_0000_0000
	// addressStride separates the address spaces of devices of one backend; it also caps Memory.
	addressStride = 1 << 40
)

// allocation is one live block handed out by a heap.
type allocation struct {
	ptr      device.Ptr // what the caller asked for
	capacity int64      // the block's size: ptr.Bytes rounded up, or a larger cached block
	// gen numbers allocations in the order they were made, over the device's life and across its
	// heaps: a range that is live again after free + malloc at the same address has a different
	// generation.
	gen uint64
	// host is the kind of a host allocation; 0 for device memory.
	host device.HostMemory
}

func (a *allocation) end() uint64 { return a.ptr.End() }

// heap is one caching allocator over an address range: device memory, or the host memory that
// AllocHost hands out (glibc's and the pinned allocators' small-block caches reuse LIFO too).
type heap struct {
	base, limit uint64
	bump        uint64
	// cache holds freed blocks by kind and capacity; each list is a stack, so reuse is LIFO. The
	// kind keeps host memory's two allocators apart: a block glibc's free cached is never handed
	// out by cuMemAllocHost, nor the other way round (device memory is all kind 0).
	cache map[cached][]uint64
	// live are the blocks handed out, by address: the one freed, or the one that contains a range.
	live addrmap.Map[*allocation]
	// lastHit is the allocation containing answered last, forgotten whenever live changes: a
	// program's ranges come in runs on one buffer, and blocks never overlap, so a live block that
	// holds a range is the one live.Floor would find for it.
	lastHit *allocation
	// changes counts the blocks handed out and released (see memory.layout).
	changes uint64
	// bytes is what the live blocks' callers asked for, kept as blocks come and go: a guarded
	// capture reads the device's counters before every call.
	bytes int64
}

// cached is a cache list's key: the kind of memory its blocks are and their capacity.
type cached struct {
	kind     device.HostMemory
	capacity int64
}

func newHeap(base uint64, size int64) *heap {
	return &heap{base: base, limit: base + uint64(size), bump: base, cache: map[cached][]uint64{}}
}

// memory is one device's memory: the device heap, the host heap and the sparse pages that back
// both (host and device addresses never overlap, so one page map serves both).
type memory struct {
	device, host *heap
	nextGen      uint64
	// pages materialise on first non-zero write; an absent page reads as zeros. Pages are never
	// dropped on free: freed memory keeps its bytes, as a caching allocator's memory does.
	pages map[uint64][]byte
}

func newMemory(index int, size int64) *memory {
	return &memory{
		device: newHeap(addressBase+uint64(index)*addressStride, size),
		host:   newHeap(hostBase+uint64(index)*addressStride, size),
		pages:  map[uint64][]byte{},
	}
}

func roundUp(n int64) int64 { return (n + Granularity - 1) / Granularity * Granularity }

// alloc returns a block of h for bytes (> 0) of kind (0 for device memory), or nil when h is
// exhausted. Order: a cached block of the kind of exactly the rounded size (LIFO), fresh space
// from the bump pointer, then the smallest larger cached block of the kind.
func (m *memory) alloc(h *heap, kind device.HostMemory, bytes int64) *allocation {
	if bytes > int64(h.limit-h.base) {
		return nil
	}
	size := roundUp(bytes)
	addr, capacity, ok := h.takeCached(cached{kind, size})
	if !ok && h.bump+uint64(size) <= h.limit {
		addr, capacity, ok = h.bump, size, true
		h.bump += uint64(size)
	}
	if !ok {
		best := int64(-1)
		for c, list := range h.cache {
			if c.kind == kind && c.capacity > size && len(list) > 0 && (best < 0 || c.capacity < best) {
				best = c.capacity
			}
		}
		if best < 0 {
			return nil
		}
		addr, capacity, _ = h.takeCached(cached{kind, best})
	}
	m.nextGen++
	a := &allocation{ptr: device.Ptr{Addr: addr, Bytes: bytes}, capacity: capacity, gen: m.nextGen, host: kind}
	h.live.Put(addr, a)
	h.lastHit = nil
	h.bytes += bytes
	h.changes++
	return a
}

func (h *heap) takeCached(key cached) (uint64, int64, bool) {
	list := h.cache[key]
	if len(list) == 0 {
		return 0, 0, false
	}
	addr := list[len(list)-1]
	h.cache[key] = list[:len(list)-1]
	return addr, key.capacity, true
}

// release returns a live block to the cache. The caller has checked that it is live.
func (h *heap) release(a *allocation) {
	h.live.Delete(a.ptr.Addr)
	h.lastHit = nil
	h.bytes -= a.ptr.Bytes
	h.changes++
	key := cached{a.host, a.capacity}
	h.cache[key] = append(h.cache[key], a.ptr.Addr)
}

// containing returns the live allocation of h whose requested range holds all of p, or nil.
func (h *heap) containing(p device.Ptr) *allocation {
	if p.Bytes <= 0 || p.End() < p.Addr {
		return nil // empty, or wrapping past the top of the address space
	}
	if a := h.lastHit; a != nil && a.ptr.Contains(p) {
		return a
	}
	if _, a, ok := h.live.Floor(p.Addr); ok && a.ptr.Contains(p) {
		h.lastHit = a
		return a
	}
	return nil
}

// layout changes whenever a block of either heap is handed out or released: what containing
// answers, and so a graph's staleness, stays the same until it does.
func (m *memory) layout() uint64 { return m.device.changes + m.host.changes }

// containing returns the live allocation, device or host, that holds all of p, or nil.
func (m *memory) containing(p device.Ptr) *allocation {
	if a := m.device.containing(p); a != nil {
		return a
	}
	return m.host.containing(p)
}

func (h *heap) liveBytes() int64 { return h.bytes }

// within reports whether addr lies in h's address range, live or not.
func (h *heap) within(addr uint64) bool { return addr >= h.base && addr < h.limit }

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
		setBytes(p[pageOff:pageOff+length], value)
	})
}

// move copies n bytes with memmove semantics, piece by piece where neither side crosses a page:
// forward when the destination is below the source, backward otherwise, so overlapping ranges copy
// as if buffered. Pages are copied into directly: no staging buffer.
func (m *memory) move(dst, src uint64, n int64) {
	if dst <= src {
		for off := int64(0); off < n; {
			length := min(n-off, PageSize-int64((src+uint64(off))%PageSize), PageSize-int64((dst+uint64(off))%PageSize))
			m.movePiece(dst+uint64(off), src+uint64(off), length)
			off += length
		}
		return
	}
	for end := n; end > 0; {
		// the piece ends at end: back to the nearer page start of either side
		length := min(end, int64((src+uint64(end)-1)%PageSize)+1, int64((dst+uint64(end)-1)%PageSize)+1)
		end -= length
		m.movePiece(dst+uint64(end), src+uint64(end), length)
	}
}

// movePiece copies length bytes that lie within one page on each side.
func (m *memory) movePiece(dst, src uint64, length int64) {
	sp, sok := m.pages[src/PageSize]
	dp, dok := m.pages[dst/PageSize]
	so, do := int64(src%PageSize), int64(dst%PageSize)
	switch {
	case !sok && !dok:
		return // zeros onto zeros
	case !sok:
		clear(dp[do : do+length])
		return
	case !dok:
		if allZero(sp[so : so+length]) {
			return // an absent page already reads as zeros
		}
		dp = make([]byte, PageSize)
		m.pages[dst/PageSize] = dp
	}
	copy(dp[do:do+length], sp[so:so+length])
}

// axpy computes y[i] = a*x[i] + y[i] over little-endian uint32 lanes, wrapping; n is a multiple of
// 4. Lanes are processed in increasing order, a piece at a time where neither side crosses a page
// (y and x are 4-byte aligned relative to each other only through their lanes, so a piece may split
// a lane: such a lane goes through a small buffer on the stack).
func (m *memory) axpy(y, x uint64, n int64, a uint32) {
	if x != y && x < y+uint64(n) && y < x+uint64(n) {
		m.axpyStaged(y, x, n, a)
		return
	}
	var xs, ys [4]byte
	for off := int64(0); off < n; {
		ya, xa := y+uint64(off), x+uint64(off)
		length := min(n-off, PageSize-int64(ya%PageSize), PageSize-int64(xa%PageSize)) &^ 3
		if length == 0 {
			// a lane split across a page boundary on one side
			m.read(xs[:], xa)
			m.read(ys[:], ya)
			v := a*binary.LittleEndian.Uint32(xs[:]) + binary.LittleEndian.Uint32(ys[:])
			binary.LittleEndian.PutUint32(ys[:], v)
			m.write(ya, ys[:])
			off += 4
			continue
		}
		xp := m.pages[xa/PageSize]
		yp, ok := m.pages[ya/PageSize]
		xo, yo := int64(xa%PageSize), int64(ya%PageSize)
		if !ok {
			if xp == nil || a == 0 || allZero(xp[xo:xo+length]) {
				off += length // y stays zero: a*0 + 0, or a*x + 0 with x zero
				continue
			}
			yp = make([]byte, PageSize)
			m.pages[ya/PageSize] = yp
			defer m.dropIfZero(ya / PageSize)
		}
		yseg := yp[yo : yo+length]
		if xp == nil {
			off += length // a*0 + y = y
			continue
		}
		xseg := xp[xo : xo+length]
		if y == x {
			xseg = yseg // the same lanes: each lane reads itself before it writes
		}
		for i := 0; i+4 <= len(yseg); i += 4 {
			v := a*binary.LittleEndian.Uint32(xseg[i:]) + binary.LittleEndian.Uint32(yseg[i:])
			binary.LittleEndian.PutUint32(yseg[i:], v)
		}
		off += length
	}
}

// dropIfZero forgets a page that a kernel materialised and left all zero: an absent page reads as
// zeros, and a page is materialised only by a non-zero write.
func (m *memory) dropIfZero(page uint64) {
	if p, ok := m.pages[page]; ok && allZero(p) {
		delete(m.pages, page)
	}
}

// axpyStaged is axpy for distinct overlapping x and y: a page-sized chunk of both is read before
// any lane of the chunk is written, as the kernel's blocks load their operands.
func (m *memory) axpyStaged(y, x uint64, n int64, a uint32) {
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

// setBytes sets every byte of b to v: memclr for zero; else 8-byte stores up to 64 bytes (a
// 64-byte fill is 8 stores, where doubling from one byte was a store and six copy calls), then
// doubling copies from those 64 bytes (memmove speed).
func setBytes(b []byte, v byte) {
	if v == 0 {
		clear(b)
		return
	}
	w := uint64(v) * 0x0101010101010101
	short := b[:min(len(b), 64)]
	for len(short) >= 8 {
		binary.LittleEndian.PutUint64(short, w)
		short = short[8:]
	}
	for i := range short {
		short[i] = v
	}
	for j := 64; j < len(b); j *= 2 {
		copy(b[j:], b[:j])
	}
}

func allZero(b []byte) bool {
	for len(b) > PageSize {
		if !bytes.Equal(b[:PageSize], zeroPage[:]) {
			return false
		}
		b = b[PageSize:]
	}
	return bytes.Equal(b, zeroPage[:len(b)])
}
