package guard

import (
	"fmt"
	"slices"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/runtime"
)

// Graph-private pools (runtime.PrivatePools), as PyTorch's caching allocator keeps them: the
// engine makes a reserved pool private and names the private pool each capture allocates from. In
// program mode nothing changes: a private pool serves blocks as any pool does. In kernel mode:
//
//   - The capture watch lets a capture allocate from the private pool it captures into, and lets
//     a private pool's block be freed at any time (it goes back to its pool, which only captures
//     into it take blocks from); it refuses an allocation from a private pool outside a capture
//     into it.
//   - The residency check does not refuse a captured range of a private block that was freed
//     while the pool still holds it: free in the pool, or taken by another allocation of the pool
//     (a later capture into it). Once every graph captured into the pool is destroyed, the pool
//     releases its blocks, and such a range is stale as any freed range is.
//   - Sharing: for each private pool the guard keeps which allocation last wrote each range (a
//     graph launch writing it, or an allocation taking it). A launch that reads a captured range
//     of a private block before writing it is refused when another allocation wrote those bytes
//     since its own did: a graph replayed out of capture order, over a block a graph captured
//     after it took and overwrote. Graphs that share blocks on two streams at once are refused by
//     the replay-isolation check, as any graphs sharing memory are.
//
// A write over a live buffer's block by a graph whose own buffer there was freed (replaying the
// first graph of a shared pool again after the last) is not refused: PyTorch's outputs of a shared
// pool are valid only after the whole sequence, which the guard cannot see. The verdict judges it
// by the bytes and by the engine's sharing rule.

// privateState is what a Device keeps of its private pools.
type privateState struct {
	// next is the pool the next capture begun allocates from (CaptureInto).
	next string
	// captures and graphs name the pool of each active capture (by sequence) and each graph.
	captures map[uint64]string
	graphs   map[device.Graph]string
	// held counts the graphs of each pool not destroyed; had: a graph was captured into it.
	held map[string]int
	had  map[string]bool
	// gens names the private pool of each block handed out, by allocation generation.
	gens map[uint64]string
	// wrote is, for each private pool, which allocation last wrote each range of its segment.
	wrote map[string]*writers
	// fresh are the blocks private pools handed out during the active captures and not yet
	// initialised: the one eager write the capture watch lets through is a block's initialisation
	// (its memset on a stream outside the capture, as the engine makes it), once.
	fresh map[device.Ptr]bool
}

func (s *privateState) init() {
	if s.captures == nil {
		s.captures, s.graphs = map[uint64]string{}, map[device.Graph]string{}
		s.held, s.had = map[string]int{}, map[string]bool{}
		s.gens, s.wrote = map[uint64]string{}, map[string]*writers{}
		s.fresh = map[device.Ptr]bool{}
	}
}

// MakePrivate makes the reserved pool called name graph-private (runtime.PrivatePools).
func (d *Device) MakePrivate(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, err := d.pool("MakePrivate", name)
	if err != nil {
		return err
	}
	if p.host != 0 {
		return guardError(device.ClassInvalidValue, "MakePrivate", "%v: a graph-private pool is device memory", p)
	}
	d.priv.init()
	p.private = true
	d.priv.wrote[name] = &writers{}
	return nil
}

// CaptureInto names the private pool the next capture begun allocates from (runtime.PrivatePools).
func (d *Device) CaptureInto(pool string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.priv.next = pool
}

// privateOn reports whether the private pools' rules apply: kernel mode, not removed.
func (d *Device) privateOn() bool { return d.guarding(d.off.PrivatePools) }

// begun keeps the pool a capture just begun allocates from.
func (d *Device) begun(seq uint64) {
	if d.priv.next != "" {
		d.priv.init()
		d.priv.captures[seq] = d.priv.next
	}
	d.priv.next = ""
}

// ended gives graph g the pool of the capture that made it: g holds the pool until destroyed.
func (d *Device) ended(seq uint64, g device.Graph) {
	pool, ok := d.priv.captures[seq]
	if !ok {
		return
	}
	delete(d.priv.captures, seq)
	clear(d.priv.fresh)
	d.priv.graphs[g] = pool
	d.priv.held[pool]++
	d.priv.had[pool] = true
}

// dropped lets a destroyed graph go of its pool.
func (d *Device) dropped(g device.Graph) {
	if pool, ok := d.priv.graphs[g]; ok {
		delete(d.priv.graphs, g)
		d.priv.held[pool]--
	}
}

// released reports whether pool released its blocks: every graph captured into it is destroyed.
func (d *Device) released(pool string) bool { return d.priv.had[pool] && d.priv.held[pool] == 0 }

// watchPool is the capture watch for a pool call: a private pool's rules, or every other
// allocator call's.
func (d *Device) watchPool(op string, p *pool, alloc bool) error {
	if !p.private || !d.privateOn() {
		return d.watchAllocator(op)
	}
	if !alloc || !d.guarding(d.off.CaptureWatch) {
		return nil // a freed block goes back to its pool, which only captures into it take from
	}
	for _, seq := range sortedSeqs(d.captures) {
		if d.priv.captures[seq] == p.name {
			return nil
		}
	}
	if len(d.captures) == 0 {
		return refusal(runtime.GuardCaptureWatch, op, "allocation from graph-private %v outside a capture: only a capture into the pool allocates from it", p)
	}
	return refusal(runtime.GuardCaptureWatch, op, "allocation from graph-private %v while %s is active, which does not capture into it", p, d.activeCaptures())
}

// tookPrivate notes a block a private pool handed out: its generation's pool, and that its bytes
// are the new allocation's now.
func (d *Device) tookPrivate(p *pool, a allocation) {
	if !p.private {
		return
	}
	d.priv.gens[a.gen] = p.name
	d.priv.wrote[p.name].set(a.ptr, a.gen)
	if len(d.captures) > 0 {
		d.priv.fresh[a.ptr] = true
	}
}

// initialising reports whether a memset of dst is the initialisation of a block a private pool
// handed out during the active capture, and lets it through once.
func (d *Device) initialising(dst device.Ptr) bool {
	if !d.priv.fresh[dst] || !d.privateOn() {
		return false
	}
	delete(d.priv.fresh, dst)
	return true
}

// heldPrivately reports whether a captured range whose allocation is gone is still held by the
// private pool it came from: the pool is not released and every live allocation over it now is a
// block of the same pool.
func (d *Device) heldPrivately(r capturedRange) bool {
	pool := d.priv.gens[r.gen]
	if pool == "" || !d.privateOn() || d.released(pool) {
		return false
	}
	for _, a := range d.ledger.overlapping(r.ptr) {
		if d.priv.gens[a.gen] != pool {
			return false
		}
	}
	return true
}

// checkShared refuses a launch of g that reads a range of a private block, before writing it
// itself, whose bytes another allocation wrote since its own allocation did.
func (d *Device) checkShared(g device.Graph, ranges []capturedRange) error {
	if !d.privateOn() || len(d.priv.wrote) == 0 {
		return nil
	}
	var mine []capturedRange // what the launch writes before the range at hand
	for _, r := range ranges {
		pool := d.priv.gens[r.gen]
		if pool == "" {
			continue
		}
		if r.write {
			mine = append(mine, r)
			continue
		}
		if slices.ContainsFunc(mine, func(w capturedRange) bool { return w.gen == r.gen && w.ptr.Contains(r.ptr) }) {
			continue
		}
		if other, at, ok := d.priv.wrote[pool].other(r.ptr, r.gen); ok {
			return refusal(runtime.GuardResidency, "Launch", "replay of %v refused: captured range %v of graph-private pool %q was written by allocation generation %d at %v since: a graph that shares the pool's blocks replayed out of capture order",
				g, r, pool, other, at)
		}
	}
	return nil
}

// launchedPrivate notes what a launch that went through wrote in private pools.
func (d *Device) launchedPrivate(ranges []capturedRange) {
	if len(d.priv.wrote) == 0 {
		return
	}
	for _, r := range ranges {
		if pool := d.priv.gens[r.gen]; pool != "" && r.write {
			d.priv.wrote[pool].set(r.ptr, r.gen)
		}
	}
}

// writers is which allocation generation last wrote each range: spans in address order, none
// overlapping.
type writers struct{ spans []written }

type written struct {
	lo, hi uint64 // [lo, hi)
	gen    uint64
}

// set records that generation gen wrote all of p.
func (w *writers) set(p device.Ptr, gen uint64) {
	if p.Bytes <= 0 {
		return
	}
	lo, hi := p.Addr, p.Addr+uint64(p.Bytes)
	out := w.spans[:0:0]
	for _, s := range w.spans {
		if s.hi <= lo || s.lo >= hi {
			out = append(out, s)
			continue
		}
		if s.lo < lo {
			out = append(out, written{s.lo, lo, s.gen})
		}
		if s.hi > hi {
			out = append(out, written{hi, s.hi, s.gen})
		}
	}
	out = append(out, written{lo, hi, gen})
	slices.SortFunc(out, func(a, b written) int {
		switch {
		case a.lo < b.lo:
			return -1
		case a.lo > b.lo:
			return 1
		}
		return 0
	})
	w.spans = out
}

// other returns a generation other than gen that last wrote part of p, and where.
func (w *writers) other(p device.Ptr, gen uint64) (uint64, device.Ptr, bool) {
	lo, hi := p.Addr, p.Addr+uint64(p.Bytes)
	for _, s := range w.spans {
		if s.hi > lo && s.lo < hi && s.gen != gen {
			a, b := max(s.lo, lo), min(s.hi, hi)
			return s.gen, device.Ptr{Addr: a, Bytes: int64(b - a)}, true
		}
	}
	return 0, device.Ptr{}, false
}

func (w *writers) String() string { return fmt.Sprint(w.spans) }
