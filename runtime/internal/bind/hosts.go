package bind

import (
	"slices"

	"github.com/replaycheck/replaycheck/runtime"
)

// Host memory that a graph names outlives its FreeHost.
//
// A graph's copy names the host address it captured, and every replay reads or writes it again.
// Returned to the platform, that memory is gone under the graph: on an H200 (driver 13.0) a replay
// whose copy named pinned memory freed with cuMemFreeHost crashed the process in cuGraphLaunch
// (SIGSEGV) up to 1 MiB, even with a new pinned allocation at the same address, and failed 719
// with the context lost at 16 MiB; a pageable block large enough for the C library to unmap it
// (16 MiB) crashed the launch too. The program stays alive only by luck of the driver's and the C
// library's state. A runtime keeps such memory in its caching host allocator (PyTorch's
// CachingHostAllocator, the fix PaddlePaddle made for its host arrays), and that cache is where
// the hazard lives: it hands the block to the next allocation of its size while graphs still
// name it.
//
// So the binding does the same, for host memory a live graph names and nothing else: FreeHost of
// such a block keeps it (no driver call, no free), the next AllocHost of the same kind and size
// takes the block kept last (LIFO, as the simulator's allocator reuses), and a kept block goes
// back to the platform when the last graph naming it is destroyed, or at Close. Host memory no
// graph names is allocated and freed through the platform as before.

// hostKey is what a kept block can be handed out again for.
type hostKey struct {
	kind  runtime.HostMemory
	bytes int64
}

// nameHosts records that a copy in capture c names the host allocations among as: the graph the
// capture ends in will name them.
func (c *capture) nameHosts(as ...*allocation) {
	for _, a := range as {
		if a.host != 0 && !slices.Contains(c.hosts, a) {
			c.hosts = append(c.hosts, a)
		}
	}
}

// graphNames records that graph g names the host allocations its capture's copies named.
func (d *Device) graphNames(g runtime.Graph, c *capture) {
	if c == nil || len(c.hosts) == 0 {
		return
	}
	for _, a := range c.hosts {
		a.graphs++
	}
	d.graphHosts[g] = c.hosts
}

// keep takes a, whose FreeHost was asked while a live graph names it, out of the live host
// memory and keeps it for the next AllocHost of its kind and size.
func (d *Device) keep(a *allocation) {
	d.hosts.Delete(a.ptr.Addr)
	k := hostKey{a.host, a.ptr.Bytes}
	d.kept[k] = append(d.kept[k], a)
}

// reuse hands out the block kept last for an AllocHost of kind and bytes, if there is one.
func (d *Device) reuse(kind runtime.HostMemory, bytes int64) (*allocation, bool) {
	k := hostKey{kind, bytes}
	list := d.kept[k]
	if len(list) == 0 {
		return nil, false
	}
	a := list[len(list)-1]
	d.kept[k] = list[:len(list)-1]
	d.hosts.Put(a.ptr.Addr, a)
	return a, true
}

// graphGone releases the kept blocks that no live graph names once g is destroyed. A block the
// platform refuses to free now (a capture in progress that forbids it) stays kept, for the next
// AllocHost of its size or Close.
func (d *Device) graphGone(g runtime.Graph) {
	hosts := d.graphHosts[g]
	delete(d.graphHosts, g)
	for _, a := range hosts {
		if a.graphs--; a.graphs > 0 {
			continue
		}
		k := hostKey{a.host, a.ptr.Bytes}
		i := slices.Index(d.kept[k], a)
		if i < 0 {
			continue // live again, or never freed
		}
		if a.host == runtime.Pinned && d.drv.FreeHost(a.base) != 0 {
			continue
		}
		if a.host != runtime.Pinned {
			d.drv.HostFree(a.base)
		}
		d.kept[k] = slices.Delete(d.kept[k], i, i+1)
	}
}

// releaseKept returns every kept block to the platform (Close); note reports a pinned one the
// driver refuses. On a lost device only the pageable ones are freed: the reset frees the rest.
func (d *Device) releaseKept(note func(op string, code int)) {
	for _, list := range d.kept {
		for _, a := range list {
			switch {
			case a.host != runtime.Pinned:
				d.drv.HostFree(a.base)
			case !d.lost:
				note("freeing kept host "+a.ptr.String(), d.drv.FreeHost(a.base))
			}
		}
	}
	clear(d.kept)
}
