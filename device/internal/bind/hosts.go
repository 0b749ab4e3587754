package bind

import (
	"slices"

	"github.com/replaycheck/replaycheck/device"
)

// Host memory that a graph names outlives its FreeHost.
//
// A graph's copy names the host address it captured, and every replay reads or writes it again.
// Returned to the platform, that memory is gone under the graph: on an H200 (driver 13.0) a replay
// whose copy named pinned memory freed with cuMemFreeHost crashed the process in cuGraphLaunch
// (SIGSEGV) up to 1 MiB, even with a new pinned allocation at the same address, and at 16 MiB the
// launch returned and the synchronisation after it answered 719 with the context lost; a pageable
// block large enough for the C library to unmap it (16 MiB) crashed the launch too. The program
// stays alive only by luck of the driver's and the C library's state. A runtime keeps such memory
// in its caching host allocator (PyTorch's CachingHostAllocator, the fix PaddlePaddle made for its
// host arrays), and that cache is where the hazard lives: it hands the block to the next
// allocation of its size while graphs still name it.
//
// So the binding does the same, for host memory that a live graph or a capture in progress names,
// and nothing else. FreeHost of such a block keeps it: no free (and no driver call at all, unless a
// capture is in progress: see below). The next AllocHost of the same kind and size takes the block
// kept last (LIFO, as the simulator's allocator reuses), unless a capture is in progress: then the
// allocation is the driver's to judge, as cuMemAllocHost is a potentially unsafe call. A kept block
// that nothing names any more goes back to the platform when a graph is destroyed with no capture
// in progress (a cuMemFreeHost during a GLOBAL capture would invalidate it), and at Close. Host
// memory nothing names is allocated and freed through the platform as before.
//
// A pinned FreeHost is a potentially unsafe call in a capture (900 and the capture invalidated, on
// CUDA), which a FreeHost that keeps its block must still answer as the driver would: while a
// capture is in progress, it asks the driver first (judgePinned).

// hostKey is what a kept block can be handed out again for.
type hostKey struct {
	kind  device.HostMemory
	bytes int64
}

// nameHosts records that a copy in capture c names the host allocations among as.
func (c *capture) nameHosts(as ...*allocation) {
	for _, a := range as {
		if a.host != 0 && !slices.Contains(c.hosts, a) {
			c.hosts = append(c.hosts, a)
			a.captures++
		}
	}
}

// unnameHosts drops c's names of host memory as the capture ends, with or without a graph.
func (c *capture) unnameHosts() {
	for _, a := range c.hosts {
		a.captures--
	}
	c.hosts = nil
}

// named reports whether a live graph or a capture in progress names a.
func (a *allocation) named() bool { return a.graphs > 0 || a.captures > 0 }

// graphNames records that graph g names the host allocations its capture's copies named.
func (d *Device) graphNames(g device.Graph, c *capture) {
	if c == nil || len(c.hosts) == 0 {
		return
	}
	for _, a := range c.hosts {
		a.graphs++
	}
	d.graphHosts[g] = slices.Clone(c.hosts)
}

// keep takes a, whose FreeHost was asked while it is named, out of the live host memory and
// keeps it for the next AllocHost of its kind and size.
func (d *Device) keep(a *allocation) {
	d.hosts.Delete(a.ptr.Addr)
	k := hostKey{a.host, a.ptr.Bytes}
	d.kept[k] = append(d.kept[k], a)
}

// reuse hands out the block kept last for an AllocHost of kind and bytes, if there is one and no
// capture is in progress.
func (d *Device) reuse(kind device.HostMemory, bytes int64) (*allocation, bool) {
	k := hostKey{kind, bytes}
	list := d.kept[k]
	if len(list) == 0 || len(d.captures) > 0 {
		return nil, false
	}
	a := list[len(list)-1]
	d.kept[k] = list[:len(list)-1]
	d.hosts.Put(a.ptr.Addr, a)
	return a, true
}

// graphGone drops g's names of host memory, and returns the kept blocks nothing names any more to
// the platform while no capture is in progress. A block the platform refuses to free stays kept,
// for the next AllocHost of its size or Close, which reports the refusal.
func (d *Device) graphGone(g device.Graph) {
	for _, a := range d.graphHosts[g] {
		a.graphs--
	}
	delete(d.graphHosts, g)
	if len(d.captures) > 0 {
		return
	}
	for k, list := range d.kept {
		d.kept[k] = slices.DeleteFunc(list, func(a *allocation) bool {
			return !a.named() && d.giveBack(a) == 0
		})
	}
}

// giveBack returns host allocation a to the platform: cuMemFreeHost or aclrtFreeHost for pinned
// memory, the C library's free for pageable memory (which cannot fail).
func (d *Device) giveBack(a *allocation) int {
	if a.host == device.Pinned {
		return d.drv.FreeHost(a.base)
	}
	d.drv.HostFree(a.base)
	return 0
}

// releaseHosts returns every host block to the platform at Close, live and kept; note reports a
// pinned one the driver refuses. On a lost device only the pageable ones are freed: the reset
// frees the rest.
func (d *Device) releaseHosts(note func(op string, code int)) {
	release := func(what string, a *allocation) {
		if !d.lost || a.host != device.Pinned {
			note(what+a.ptr.String(), d.giveBack(a))
		}
	}
	for _, a := range d.hosts.All() {
		release("freeing host ", a)
	}
	for _, list := range d.kept {
		for _, a := range list {
			release("freeing kept host ", a)
		}
	}
	clear(d.kept)
}

// judgePinned asks the driver what it answers a pinned host-memory call now, for a FreeHost that
// keeps a block instead of freeing it: it allocates one pinned byte and frees it at once. The
// platforms judge cuMemAllocHost and cuMemFreeHost (aclrtMallocHost and aclrtFreeHost) by the same
// capture rules: on an H200 (driver 13.0) both answer 900 and invalidate the capture in the same
// situations and are allowed in the same others, and ACL checks neither. So the allocation's
// refusal is the one the free would have met, with the same effect on the capture. An allocation
// that fails out of memory says nothing about the free and is not reported.
func (d *Device) judgePinned(op string) error {
	base, code := d.drv.MallocHost(1)
	if code != 0 {
		if _, class := d.codes.Lookup(code); class == device.ClassOutOfMemory {
			return nil
		}
		return d.failed(op, code)
	}
	if code := d.drv.FreeHost(base); code != 0 {
		// Kept as any pinned block the driver would not free: given back later, or at Close.
		d.keep(&allocation{ptr: device.Ptr{Addr: uint64(uintptr(base)), Bytes: 1}, host: device.Pinned, base: base})
		return d.failed(op, code)
	}
	return nil
}
