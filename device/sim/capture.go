package sim

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/device"
)

type stream struct {
	id      device.Stream
	capture *capture // the capture the stream belongs to, nil when it runs eagerly
	// nonBlocking: created NonBlocking, so the legacy default stream does not synchronise with it.
	nonBlocking bool
	tail        []int // while capturing: the nodes the next op on the stream depends on
}

type event struct {
	id device.Event
	// capture is set while the event's last record belongs to a capture in progress; nodes are the
	// recording stream's last nodes then. A record inside a capture is a graph node, not a record of
	// the event: when the capture ends the event is back to what its last eager record made it.
	capture *capture
	nodes   []int
	// eager: the last record outside any capture ran (the event names completed work).
	eager bool
}

// work is one stream operation, run eagerly or stored in a graph node. It holds no pointer, so a
// graph's list of 100,000 of them is memory the garbage collector never scans.
type work struct {
	kind  workKind
	value byte
	a     uint32
	dst   device.Ptr // memset/memcpy destination, kernel y
	// src is the memcpy source, kernel x: dst.Bytes long, as the checks at enqueue make it, so only
	// its address is kept (a node of 32 bytes rather than 40).
	src uint64
}

// workKind is a node's kind; its String is the kind device.GraphNode names.
type workKind uint8

const (
	kindMemset workKind = iota + 1
	kindMemcpy
	kindKernel
)

func (k workKind) String() string {
	switch k {
	case kindMemset:
		return "memset"
	case kindMemcpy:
		return "memcpy"
	case kindKernel:
		return "kernel"
	}
	return fmt.Sprintf("work kind %d", uint8(k))
}

// ranges is how many ranges a work of kind k touches: the count work.touched returns, without
// building the ranges (add, once per captured node).
func (k workKind) ranges() int {
	switch k {
	case kindMemcpy:
		return 2
	case kindKernel:
		return 3
	}
	return 1
}

// touched lists the ranges w reads, then the one it writes (its last): p[:n]. A memcpy reads src,
// a kernel (axpy) reads x and y.
func (w work) touched() (p [3]device.Ptr, n int) {
	switch w.kind {
	case kindMemcpy:
		return [3]device.Ptr{w.source(), w.dst}, 2
	case kindKernel:
		return [3]device.Ptr{w.source(), w.dst, w.dst}, 3
	}
	return [3]device.Ptr{w.dst}, 1
}

// source is the range a memcpy reads, a kernel's x.
func (w work) source() device.Ptr { return device.Ptr{Addr: w.src, Bytes: w.dst.Bytes} }

// dag is a capture's nodes in capture order. Recording a node of a stream's work in order on one
// buffer, the common case, writes its work and nothing else: dependencies and owners are stored
// only where they differ from the node before.
type dag struct {
	works workList
	// A node depends on the node recorded just before it and on nothing else, unless it is listed
	// in explicit: entry j's dependencies are deps[explicit[j].start:explicit[j+1].start] (the last
	// entry's end is len(deps)). The first node is always listed.
	explicit []explicitDeps
	deps     []int32
	// owners are the allocations the nodes' touched ranges lay in when they were recorded, each
	// once: a replay whose ranges have another generation now runs on memory someone else owns,
	// and one whose ranges lie in no allocation runs on memory freed since, whose size a profile
	// may look at. Over the touched ranges in node order, then touched order, the ranges from
	// ownerRuns[j].from up to the next run's from lay in owners[ownerRuns[j].owner].
	owners     []owner
	ownerIndex map[uint64]int32 // by generation
	ownerRuns  []ownerRun
	runGen     uint64 // the generation of the last run's owner (0, no allocation's, before the first)
	ranges     int32  // the touched ranges recorded
}

// explicitDeps lists a node that does not depend on the node before it alone. Node and range
// positions are int32: a capture of 2^31 nodes would hold 64 GiB of works.
type explicitDeps struct {
	node, start int32
}

// ownerRun is a run of touched ranges that lay in one allocation.
type ownerRun struct {
	from, owner int32
}

// owner is the allocation a captured range lay in: its generation and the size its caller asked
// for.
type owner struct {
	gen   uint64
	bytes int64
}

func (g *dag) len() int { return g.works.len() }

// appendDeps appends node i's dependencies to out.
func (g *dag) appendDeps(out []int, i int) []int {
	j, listed := slices.BinarySearchFunc(g.explicit, int32(i), func(e explicitDeps, node int32) int { return cmp.Compare(e.node, node) })
	if !listed {
		return append(out, i-1)
	}
	end := len(g.deps)
	if j+1 < len(g.explicit) {
		end = int(g.explicit[j+1].start)
	}
	for _, p := range g.deps[g.explicit[j].start:end] {
		out = append(out, int(p))
	}
	return out
}

// own records the allocation the next touched range lies in.
func (g *dag) own(a *allocation) {
	if a.gen == g.runGen {
		g.ranges++ // the run goes on
		return
	}
	g.startRun(a)
}

// startRun records a run of touched ranges in a, from the next one on.
func (g *dag) startRun(a *allocation) {
	o := owner{gen: a.gen, bytes: a.ptr.Bytes}
	at := g.ranges
	g.ranges++
	g.runGen = o.gen
	i, ok := g.ownerIndex[o.gen]
	if !ok {
		if g.ownerIndex == nil {
			g.ownerIndex = map[uint64]int32{}
		}
		i = int32(len(g.owners))
		g.owners = append(g.owners, o)
		g.ownerIndex[o.gen] = i
	}
	g.ownerRuns = append(g.ownerRuns, ownerRun{from: at, owner: i})
}

// ownerCursor walks a dag's owners in touched-range order.
type ownerCursor struct {
	g        *dag
	run, pos int
}

// next is the owner of the next touched range.
func (c *ownerCursor) next() owner {
	runs := c.g.ownerRuns
	for c.run+1 < len(runs) && int(runs[c.run+1].from) <= c.pos {
		c.run++
	}
	c.pos++
	return c.g.owners[runs[c.run].owner]
}

// maxSpares is how many work blocks of destroyed graphs a device keeps for the next captures:
// the works of 131,072 nodes (4 MiB). A capture of 100,000 ops, the size issue 13 measures, fits,
// and a device holds no more than that for later.
const maxSpares = 32

// capture is one capture sequence: the origin stream, the streams forked into it, and the DAG.
type capture struct {
	id     uint64
	origin device.Stream
	mode   device.CaptureMode
	thread device.Thread // the thread that began it
	status device.CaptureStatus
	dag
	members []*stream // origin first, then forked streams in fork order
	// frees is the device's Frees count when the capture began: with none since, no node can name
	// memory freed during the capture (capture-fill-freed).
	frees int64
}

func (c *capture) String() string {
	return fmt.Sprintf("capture %d (origin %v, %v, begun on %v, %v)", c.id, c.origin, c.mode, c.thread, c.status)
}

// add records w as a node that depends on the stream's last nodes, and makes it the stream's tail.
// held are the allocations of w's touched ranges, in touched order, as the checks at enqueue found
// them (live, and nothing is allocated or freed in between).
func (c *capture) add(s *stream, w work, held [3]*allocation, spare *spareBlocks) {
	n := c.len()
	if len(s.tail) != 1 || s.tail[0] != n-1 {
		c.explicit = append(c.explicit, explicitDeps{node: int32(n), start: int32(len(c.deps))})
		for _, p := range s.tail {
			c.deps = append(c.deps, int32(p))
		}
	}
	for _, a := range held[:w.kind.ranges()] {
		c.own(a)
	}
	c.works.push(w, spare)
	// The stream owns its tail (events and forks take copies of it), so it is reused.
	s.tail = append(s.tail[:0], n)
}

func (c *capture) fork(s *stream, from []int) {
	s.capture = c
	s.tail = slices.Clone(from)
	c.members = append(c.members, s)
}

// unjoined lists the forked streams whose last nodes are not ancestors of (or equal to) the
// origin stream's last nodes: work the end of the capture would not wait for.
func (c *capture) unjoined() []*stream {
	if len(c.members) < 2 {
		return nil // nothing was forked
	}
	// Depth first from the origin's last nodes, with a stack of its own: a chain of 100,000 nodes
	// would otherwise recurse 100,000 calls deep.
	reach := make([]bool, c.len())
	todo := slices.Clone(c.members[0].tail)
	for len(todo) > 0 {
		i := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if reach[i] {
			continue
		}
		reach[i] = true
		todo = c.appendDeps(todo, i)
	}
	var out []*stream
	for _, s := range c.members[1:] {
		if s.capture != c {
			continue
		}
		for _, i := range s.tail {
			if !reach[i] {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

func union(a, b []int) []int {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// terminate ends a capture: its streams run eagerly again, and events recorded in it are back to
// their state before the capture (eagerly recorded or never recorded).
func (d *Device) terminate(c *capture) {
	for _, s := range c.members {
		if s.capture == c {
			s.capture, s.tail = nil, nil
		}
	}
	for _, e := range d.events {
		if e.capture == c {
			e.capture, e.nodes = nil, nil
		}
	}
	d.captures = slices.DeleteFunc(d.captures, func(x *capture) bool { return x == c })
}

func (d *Device) BeginCapture(t device.Thread, s device.Stream, mode device.CaptureMode) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "BeginCapture", func() error { return d.BeginCapture(t, s, mode) })
	}
	return d.call(t, "BeginCapture", func() error {
		if !slices.Contains(device.CaptureModes(), mode) {
			return d.fail("BeginCapture", device.ClassInvalidValue, "unknown capture mode %v", mode)
		}
		if s == 0 {
			// Handle 0 stands for the platform's default stream, which only the rules speak about.
			if err := d.enforce(&call{op: "BeginCapture", thread: t, defaultStream: true, mode: mode}); err != nil {
				return err
			}
		}
		st, err := d.lookupStream("BeginCapture", s)
		if err != nil {
			return err
		}
		if err := d.enforce(&call{op: "BeginCapture", thread: t, stream: st, mode: mode}); err != nil {
			return err
		}
		if st.capture != nil {
			return d.fail("BeginCapture", device.ClassInvalidValue, "%v is already in %v", s, st.capture)
		}
		d.lastCapture++
		c := &capture{id: d.lastCapture, origin: s, mode: mode, thread: t, status: device.CaptureActive, frees: d.counters.Frees}
		c.fork(st, nil)
		d.captures = append(d.captures, c)
		return nil
	})
}

// EndCapture ends the capture that s began and returns its graph. The profile decides which ends
// fail and whether a failed end still terminates the capture; a capture that is not on s, or was
// invalidated, never yields a graph whatever the profile says.
func (d *Device) EndCapture(t device.Thread, s device.Stream) (device.Graph, error) {
	if w := d.away(t); w != nil {
		return handOff(d, w, "EndCapture", func() (device.Graph, error) { return d.EndCapture(t, s) })
	}
	var g device.Graph
	err := d.call(t, "EndCapture", func() error {
		st, err := d.lookupStream("EndCapture", s)
		if err != nil {
			return err
		}
		if err := d.enforce(&call{op: "EndCapture", thread: t, stream: st}); err != nil {
			return err
		}
		c := st.capture
		switch {
		case c == nil:
			return d.fail("EndCapture", device.ClassInvalidValue, "%v is not capturing", s)
		case c.origin != s:
			return d.fail("EndCapture", device.ClassInvalidValue, "%v did not begin %v", s, c)
		case c.status == device.CaptureInvalidated:
			d.terminate(c)
			return d.fail("EndCapture", device.ClassCaptureInvalidated, "%v was invalidated by an earlier error; no graph", c)
		}
		g = device.Graph(d.newHandle())
		d.graphs[g] = &graph{id: g, capture: c.id, dag: c.dag}
		c.dag = dag{} // the graph owns the nodes now
		d.terminate(c)
		d.counters.CapturesDone++
		return nil
	})
	return g, err
}

func (d *Device) CaptureInfo(t device.Thread, s device.Stream) (device.CaptureInfo, error) {
	if w := d.away(t); w != nil {
		return handOff(d, w, "CaptureInfo", func() (device.CaptureInfo, error) { return d.CaptureInfo(t, s) })
	}
	var info device.CaptureInfo
	err := d.call(t, "CaptureInfo", func() error {
		st, err := d.lookupStream("CaptureInfo", s)
		if err != nil {
			return err
		}
		if c := st.capture; c != nil {
			info = device.CaptureInfo{Status: c.status, ID: c.id, Origin: c.origin, Mode: c.mode}
		}
		return nil
	})
	return info, err
}

// graph is an ended capture: its nodes hold the addresses recorded at capture time, and never
// change (works is shared read-only by every launch in capture order).
type graph struct {
	id      device.Graph
	capture uint64
	dag
	// checked caches stale's answer for one memory layout: every launch asks, and a graph of
	// 10,000 nodes would otherwise look up 10,000 ranges per launch with nothing changed.
	checked struct {
		mem    *memory
		layout uint64
		stale  []string
		freed  []freedRange
	}
}

// freedRange is a captured range that lies in no live allocation: desc says which, bytes is the
// size of the allocation it lay in at capture.
type freedRange struct {
	desc  string
	bytes int64
}

// stale lists the captured ranges that now lie in another allocation than at capture (freed and
// handed out again), and freed those that lie in no live allocation (returned to the driver).
func (g *graph) stale(mem *memory) (stale []string, freed []freedRange) {
	c := &g.checked
	if c.mem == mem && c.layout == mem.layout() {
		return c.stale, c.freed
	}
	defer func() { c.mem, c.layout, c.stale, c.freed = mem, mem.layout(), stale, freed }()
	owners := ownerCursor{g: &g.dag}
	for n := range g.len() {
		ptrs, k := g.works.at(n).touched()
		for _, p := range ptrs[:k] {
			o := owners.next()
			a := mem.containing(p)
			switch {
			case a == nil:
				freed = append(freed, freedRange{fmt.Sprintf("%v is in no live allocation (of %d bytes at capture)", p, o.bytes), o.bytes})
			case a.gen != o.gen:
				stale = append(stale, fmt.Sprintf("%v now belongs to allocation %v", p, a.ptr))
			}
		}
	}
	return slices.Compact(stale), slices.Compact(freed)
}

// Launch replays g on s against the addresses recorded at capture time, whatever they hold now:
// no liveness check, as on the platforms. Launching into a capturing stream is not modelled and
// fails with not-supported. The graph's work is queued on s and runs when the device next settles
// (at any call but another Launch): launches on different streams run concurrently.
func (d *Device) Launch(t device.Thread, g device.Graph, s device.Stream) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "Launch", func() error { return d.Launch(t, g, s) })
	}
	return d.call(t, "Launch", func() error {
		gr, err := d.lookupGraph("Launch", g)
		if err != nil {
			return err
		}
		st, err := d.lookupStream("Launch", s)
		if err != nil {
			return err
		}
		if err := d.enforce(&call{op: "Launch", thread: t, stream: st, graph: gr}); err != nil {
			return err
		}
		if st.capture != nil {
			return d.fail("Launch", device.ClassNotSupported, "%v is in %v: capturing a graph launch is not modelled", s, st.capture)
		}
		q := d.queueOf(s)
		if d.rng == nil {
			// Capture order: the graph's own blocks of work, shared read-only, no per-launch copy.
			for blk := range gr.works.filled {
				q.works = append(q.works, blk)
			}
		} else {
			order := d.replayOrder(gr)
			works := make([]work, len(order))
			for k, i := range order {
				works[k] = gr.works.at(i)
			}
			q.works = append(q.works, works)
		}
		d.counters.Launches++
		return nil
	})
}

// pendingWork is the graph work launched on one stream and not run yet, in stream order: one list
// per launch, front first (a list may be a graph's own plan, which is never written).
type pendingWork struct {
	stream device.Stream
	works  [][]work
}

func (d *Device) queueOf(s device.Stream) *pendingWork {
	for _, q := range d.pending {
		if q.stream == s {
			return q
		}
	}
	q := &pendingWork{stream: s}
	d.pending = append(d.pending, q)
	return q
}

// settle runs the launched work. Each stream's work runs in its order; the streams run
// concurrently: one node of each in turn, in the order the streams were first launched on, or with
// a seed a random stream's next node at each step. Nothing ordered launches on different streams
// (an event or a synchronisation settles the work before it), so any interleaving is one the
// hardware may choose.
func (d *Device) settle() {
	for next := 0; len(d.pending) > 0; {
		i := next % len(d.pending)
		if d.rng != nil {
			i = d.rng.IntN(len(d.pending))
		}
		q := d.pending[i]
		for len(q.works) > 0 && len(q.works[0]) == 0 {
			q.works = q.works[1:]
		}
		if len(q.works) > 0 {
			d.execute(q.works[0][0])
			q.works[0] = q.works[0][1:]
			for len(q.works) > 0 && len(q.works[0]) == 0 {
				q.works = q.works[1:]
			}
		}
		if len(q.works) == 0 {
			d.pending = slices.Delete(d.pending, i, i+1)
			next = i
			continue
		}
		next = i + 1
	}
}

// replayOrder is capture order (always a topological order: a node only depends on earlier ones),
// or with a seed, a random pick among the nodes whose dependencies are done.
func (d *Device) replayOrder(g *graph) []int {
	order := make([]int, 0, g.len())
	if d.rng == nil {
		for i := range g.len() {
			order = append(order, i)
		}
		return order
	}
	pending := make([]int, g.len())
	children := make([][]int, g.len())
	var ready, deps []int
	for i := range g.len() {
		deps = g.appendDeps(deps[:0], i)
		pending[i] = len(deps)
		for _, p := range deps {
			children[p] = append(children[p], i)
		}
		if len(deps) == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		k := d.rng.IntN(len(ready))
		i := ready[k]
		ready = slices.Delete(ready, k, k+1)
		order = append(order, i)
		for _, c := range children[i] {
			if pending[c]--; pending[c] == 0 {
				ready = append(ready, c)
			}
		}
	}
	return order
}

func (d *Device) DestroyGraph(t device.Thread, g device.Graph) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "DestroyGraph", func() error { return d.DestroyGraph(t, g) })
	}
	return d.call(t, "DestroyGraph", func() error {
		gr, err := d.lookupGraph("DestroyGraph", g)
		if err != nil {
			return err
		}
		delete(d.graphs, g)
		// Nothing reads the graph's nodes any more: call settled the launches of it before this
		// body, and a seeded launch ran on a copy.
		// Its blocks go to the spares, and the graph it was can never read them again.
		d.spares.keep(&gr.works)
		gr.dag = dag{}
		return nil
	})
}

// GraphNodes lists g's nodes in capture order with the ranges each reads and writes.
func (d *Device) GraphNodes(t device.Thread, g device.Graph) ([]device.GraphNode, error) {
	var out []device.GraphNode
	var ranges []device.Ptr
	_, err := d.walkGraph(t, g, func(gr *graph) {
		// One array for the nodes and one for their ranges, sized exactly: a graph may have
		// 100,000 nodes.
		out = make([]device.GraphNode, 0, gr.len())
		ranges = make([]device.Ptr, 0, gr.ranges)
	}, func(n device.GraphNode) {
		at := len(ranges)
		ranges = append(append(ranges, n.Reads...), n.Writes...)
		touched := ranges[at:len(ranges):len(ranges)]
		gn := device.GraphNode{Kind: n.Kind, Writes: touched[len(n.Reads):]}
		if len(n.Reads) > 0 {
			gn.Reads = touched[:len(n.Reads):len(n.Reads)]
		}
		out = append(out, gn)
	})
	return out, err
}

// WalkGraph visits g's nodes in capture order (device.GraphWalker), as GraphNodes lists them:
// the same device call, by the same name.
func (d *Device) WalkGraph(t device.Thread, g device.Graph, visit func(device.GraphNode)) (int, error) {
	return d.walkGraph(t, g, func(*graph) {}, visit)
}

// walkGraph is GraphNodes and WalkGraph: sized is told the graph before its first node is
// visited. A node's ranges are the work's own (touched), valid until the next node.
func (d *Device) walkGraph(t device.Thread, g device.Graph, sized func(*graph), visit func(device.GraphNode)) (int, error) {
	if w := d.away(t); w != nil {
		return handOff(d, w, "GraphNodes", func() (int, error) { return d.walkGraph(t, g, sized, visit) })
	}
	n := 0
	err := d.call(t, "GraphNodes", func() error {
		gr, err := d.lookupGraph("GraphNodes", g)
		if err != nil {
			return err
		}
		sized(gr)
		ptrs := new([3]device.Ptr) // one for the walk: the node's ranges escape into visit
		for i := range gr.len() {
			w := gr.works.at(i)
			var k int
			*ptrs, k = w.touched()
			gn := device.GraphNode{Kind: w.kind.String(), Writes: ptrs[k-1 : k]}
			if k > 1 {
				gn.Reads = ptrs[: k-1 : k-1]
			}
			visit(gn)
			n++
		}
		return nil
	})
	return n, err
}

var _ device.GraphWalker = (*Device)(nil)

func streamList(ss []*stream) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.id.String()
	}
	return strings.Join(names, ", ")
}
