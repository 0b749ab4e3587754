package guard

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/replaycheck/replaycheck/device"
)

// pool is a caching allocator over one segment the runtime reserved from the device: allocations
// and frees are served from the segment with no device call, as PyTorch's caching allocator and the
// memory pools of inference runtimes serve tensors.
//
// Policy: a request is rounded up to device.PoolGranularity and served from the smallest free block
// that holds it, the lowest address among equals (best fit); what is left of that block stays free
// after it. A freed block goes back to the pool and merges with the free blocks on either side, so
// the next request it fits is served at its address.
type pool struct {
	name    string
	host    device.HostMemory // 0: device memory
	private bool              // graph-private (privatepool.go)
	segment device.Ptr
	blocks  []poolBlock // cover the segment in address order
}

type poolBlock struct {
	addr uint64
	size int64      // a multiple of device.PoolGranularity
	used device.Ptr // what the caller asked for; zero for a free block
}

func (b poolBlock) free() bool { return b.used.IsZero() }

func newPool(name string, host device.HostMemory, segment device.Ptr) *pool {
	size := segment.Bytes / device.PoolGranularity * device.PoolGranularity
	return &pool{name: name, host: host, segment: segment, blocks: []poolBlock{{addr: segment.Addr, size: size}}}
}

func (p *pool) String() string {
	where := "device"
	if p.host != 0 {
		where = p.host.String() + " host"
	}
	return fmt.Sprintf("pool %q (%s segment %v)", p.name, where, p.segment)
}

// alloc serves bytes (> 0) by best fit, or returns false when no free block holds it.
func (p *pool) alloc(bytes int64) (device.Ptr, bool) {
	need := (bytes + device.PoolGranularity - 1) / device.PoolGranularity * device.PoolGranularity
	best := -1
	for i, b := range p.blocks {
		if b.free() && b.size >= need && (best < 0 || b.size < p.blocks[best].size) {
			best = i
		}
	}
	if best < 0 {
		return device.Ptr{}, false
	}
	b := p.blocks[best]
	ptr := device.Ptr{Addr: b.addr, Bytes: bytes}
	p.blocks[best] = poolBlock{addr: b.addr, size: need, used: ptr}
	if rest := b.size - need; rest > 0 {
		p.blocks = slices.Insert(p.blocks, best+1, poolBlock{addr: b.addr + uint64(need), size: rest})
	}
	return ptr, true
}

// free returns the block ptr is exactly to the pool and merges it with its free neighbours.
func (p *pool) free(ptr device.Ptr) bool {
	i, found := slices.BinarySearchFunc(p.blocks, ptr.Addr, func(b poolBlock, addr uint64) int { return cmp.Compare(b.addr, addr) })
	if !found || p.blocks[i].used != ptr {
		return false
	}
	p.blocks[i].used = device.Ptr{}
	if i+1 < len(p.blocks) && p.blocks[i+1].free() {
		p.blocks[i].size += p.blocks[i+1].size
		p.blocks = slices.Delete(p.blocks, i+1, i+2)
	}
	if i > 0 && p.blocks[i-1].free() {
		p.blocks[i-1].size += p.blocks[i].size
		p.blocks = slices.Delete(p.blocks, i, i+1)
	}
	return true
}

// largestFree is the size of the largest free block, for exhaustion messages.
func (p *pool) largestFree() int64 {
	var n int64
	for _, b := range p.blocks {
		if b.free() {
			n = max(n, b.size)
		}
	}
	return n
}

// ReservePool reserves a segment of bytes for the pool called name: device memory through the
// inner Malloc when host is 0, host memory through AllocHost otherwise. The segment is the pool's
// only allocator call: PoolAlloc and PoolFree serve blocks from it. In kernel mode it is refused
// while a capture is active, like every allocator call.
func (d *Device) ReservePool(t device.Thread, name string, bytes int64, host device.HostMemory) error {
	const op = "ReservePool"
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case name == "":
		return guardError(device.ClassInvalidValue, op, "a pool needs a name")
	case d.pools[name] != nil:
		return guardError(device.ClassInvalidValue, op, "%s is already reserved", d.pools[name])
	case bytes < device.PoolGranularity:
		return guardError(device.ClassInvalidValue, op, "pool %q: a segment of %d bytes holds no block of %d", name, bytes, device.PoolGranularity)
	case d.retired:
		return guardError(device.ClassInvalidState, op, "the context is retired: pool %q cannot be reserved", name)
	}
	if err := d.watchAllocator(op); err != nil {
		return err
	}
	var seg device.Ptr
	var err error
	if host == 0 {
		seg, err = d.inner.Malloc(t, bytes)
	} else {
		seg, err = d.inner.AllocHost(t, bytes, host)
	}
	if err != nil {
		return fmt.Errorf("%s: segment of pool %q (%d bytes): %w", op, name, bytes, err)
	}
	d.pools[name] = newPool(name, host, seg)
	return nil
}

// PoolAlloc serves bytes from the named pool with no device call, and enters the block into the
// residency ledger as an allocation of its own: a block freed and handed out again is a new
// generation. In kernel mode it is refused while a capture is active. A pool with no free block
// large enough fails with class device.ClassOutOfMemory, changing nothing.
func (d *Device) PoolAlloc(t device.Thread, name string, bytes int64) (device.Ptr, error) {
	const op = "PoolAlloc"
	d.mu.Lock()
	defer d.mu.Unlock()
	p, err := d.pool(op, name)
	if err != nil {
		return device.Ptr{}, err
	}
	if bytes <= 0 {
		return device.Ptr{}, guardError(device.ClassInvalidValue, op, "%v: cannot allocate %d bytes", p, bytes)
	}
	if err := d.watchPool(op, p, true); err != nil {
		return device.Ptr{}, err
	}
	ptr, ok := p.alloc(bytes)
	if !ok {
		return device.Ptr{}, guardError(device.ClassOutOfMemory, op, "%v has no free block of %d bytes (the largest free block has %d): size the pool for the blocks live at once",
			p, bytes, p.largestFree())
	}
	d.tookPrivate(p, d.ledger.add(ptr))
	return ptr, nil
}

// PoolFree returns the block ptr to the named pool, with no device call. In kernel mode it is
// refused while a capture is active.
func (d *Device) PoolFree(t device.Thread, name string, ptr device.Ptr) error {
	const op = "PoolFree"
	d.mu.Lock()
	defer d.mu.Unlock()
	p, err := d.pool(op, name)
	if err != nil {
		return err
	}
	if err := d.watchPool(op, p, false); err != nil {
		return err
	}
	if !p.free(ptr) {
		return guardError(device.ClassInvalidValue, op, "%v is not a block %v has handed out", ptr, p)
	}
	d.ledger.remove(ptr.Addr)
	return nil
}

func (d *Device) pool(op, name string) (*pool, error) {
	p := d.pools[name]
	if p == nil {
		return nil, guardError(device.ClassInvalidValue, op, "no pool %q is reserved", name)
	}
	return p, nil
}

// poolAt names the pool whose segment holds r, for refusal details.
func (d *Device) poolAt(r device.Ptr) *pool {
	for _, p := range d.pools {
		if p.segment.Contains(r) {
			return p
		}
	}
	return nil
}

// releasePools frees every pool's segment (the blocks die with it).
func (d *Device) releasePools(t device.Thread) []error {
	var errs []error
	names := make([]string, 0, len(d.pools))
	for name := range d.pools {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := d.pools[name]
		var err error
		if p.host == 0 {
			err = d.inner.Free(t, p.segment)
		} else {
			err = d.inner.FreeHost(t, p.segment)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%v: free of its segment: %w", p, err))
			continue
		}
		for _, b := range p.blocks {
			if !b.free() {
				d.ledger.remove(b.addr)
			}
		}
		delete(d.pools, name)
	}
	return errs
}
