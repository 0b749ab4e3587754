package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/runtime"
)

type stream struct {
	id      runtime.Stream
	capture *capture // the capture the stream belongs to, nil when it runs eagerly
	tail    []int    // while capturing: the nodes the next op on the stream depends on
}

type event struct {
	id runtime.Event
	// capture is set while the event's last record belongs to a capture in progress; nodes are the
	// recording stream's last nodes then. A record inside a capture is a graph node, not a record of
	// the event: when the capture ends the event is back to what its last eager record made it.
	capture *capture
	nodes   []int
	// eager: the last record outside any capture ran (the event names completed work).
	eager bool
}

// work is one stream operation, run eagerly or stored in a graph node.
type work struct {
	kind  string
	dst   runtime.Ptr // memset/memcpy destination, kernel y
	src   runtime.Ptr // memcpy source, kernel x
	value byte
	a     uint32
}

// Node kinds, as runtime.GraphNode names them.
const (
	kindMemset = "memset"
	kindMemcpy = "memcpy"
	kindKernel = "kernel"
)

func (w work) reads() []runtime.Ptr {
	switch w.kind {
	case kindMemcpy:
		return []runtime.Ptr{w.src}
	case kindKernel:
		return []runtime.Ptr{w.src, w.dst}
	}
	return nil
}

func (w work) writes() []runtime.Ptr { return []runtime.Ptr{w.dst} }

type node struct {
	work work
	deps []int
	// gens are the allocation generations of work.reads() then work.writes() when the node was
	// recorded: a replay whose ranges have another generation now runs on memory someone else owns.
	gens []uint64
}

// capture is one capture sequence: the origin stream, the streams forked into it, and the DAG.
type capture struct {
	id      uint64
	origin  runtime.Stream
	mode    runtime.CaptureMode
	thread  runtime.Thread // the thread that began it
	status  runtime.CaptureStatus
	nodes   []node
	members []*stream // origin first, then forked streams in fork order
}

func (c *capture) String() string {
	return fmt.Sprintf("capture %d (origin %v, %v, begun on %v, %v)", c.id, c.origin, c.mode, c.thread, c.status)
}

// add records w as a node that depends on the stream's last nodes, and makes it the stream's tail.
func (c *capture) add(s *stream, w work, mem *memory) {
	n := node{work: w, deps: slices.Clone(s.tail)}
	for _, p := range append(w.reads(), w.writes()...) {
		var gen uint64
		if a := mem.containing(p); a != nil {
			gen = a.gen
		}
		n.gens = append(n.gens, gen)
	}
	c.nodes = append(c.nodes, n)
	s.tail = []int{len(c.nodes) - 1}
}

func (c *capture) fork(s *stream, from []int) {
	s.capture = c
	s.tail = slices.Clone(from)
	c.members = append(c.members, s)
}

// unjoined lists the forked streams whose last nodes are not ancestors of (or equal to) the
// origin stream's last nodes: work the end of the capture would not wait for.
func (c *capture) unjoined() []*stream {
	reach := make([]bool, len(c.nodes))
	var visit func(int)
	visit = func(i int) {
		if reach[i] {
			return
		}
		reach[i] = true
		for _, p := range c.nodes[i].deps {
			visit(p)
		}
	}
	for _, i := range c.members[0].tail {
		visit(i)
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

func (d *Device) BeginCapture(t runtime.Thread, s runtime.Stream, mode runtime.CaptureMode) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "BeginCapture", func() error { return d.BeginCapture(t, s, mode) })
	}
	return d.call(t, "BeginCapture", func() error {
		if !slices.Contains(runtime.CaptureModes(), mode) {
			return d.fail("BeginCapture", runtime.ClassInvalidValue, "unknown capture mode %v", mode)
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
			return d.fail("BeginCapture", runtime.ClassInvalidValue, "%v is already in %v", s, st.capture)
		}
		d.lastCapture++
		c := &capture{id: d.lastCapture, origin: s, mode: mode, thread: t, status: runtime.CaptureActive}
		c.fork(st, nil)
		d.captures = append(d.captures, c)
		return nil
	})
}

// EndCapture ends the capture that s began and returns its graph. The profile decides which ends
// fail and whether a failed end still terminates the capture; a capture that is not on s, or was
// invalidated, never yields a graph whatever the profile says.
func (d *Device) EndCapture(t runtime.Thread, s runtime.Stream) (runtime.Graph, error) {
	if w := d.away(t); w != nil {
		return handOff(d, w, "EndCapture", func() (runtime.Graph, error) { return d.EndCapture(t, s) })
	}
	var g runtime.Graph
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
			return d.fail("EndCapture", runtime.ClassInvalidValue, "%v is not capturing", s)
		case c.origin != s:
			return d.fail("EndCapture", runtime.ClassInvalidValue, "%v did not begin %v", s, c)
		case c.status == runtime.CaptureInvalidated:
			d.terminate(c)
			return d.fail("EndCapture", runtime.ClassCaptureInvalidated, "%v was invalidated by an earlier error; no graph", c)
		}
		g = runtime.Graph(d.newHandle())
		d.graphs[g] = &graph{id: g, capture: c.id, nodes: c.nodes}
		d.terminate(c)
		d.counters.CapturesDone++
		return nil
	})
	return g, err
}

func (d *Device) CaptureInfo(t runtime.Thread, s runtime.Stream) (runtime.CaptureInfo, error) {
	if w := d.away(t); w != nil {
		return handOff(d, w, "CaptureInfo", func() (runtime.CaptureInfo, error) { return d.CaptureInfo(t, s) })
	}
	var info runtime.CaptureInfo
	err := d.call(t, "CaptureInfo", func() error {
		st, err := d.lookupStream("CaptureInfo", s)
		if err != nil {
			return err
		}
		if c := st.capture; c != nil {
			info = runtime.CaptureInfo{Status: c.status, ID: c.id, Origin: c.origin, Mode: c.mode}
		}
		return nil
	})
	return info, err
}

// graph is an ended capture: its nodes hold the addresses recorded at capture time.
type graph struct {
	id      runtime.Graph
	capture uint64
	nodes   []node
	works   []work // the nodes' work in capture order, built on first launch (see plan)
	// checked caches stale's answer for one memory layout: every launch asks, and a graph of
	// 10,000 nodes would otherwise look up 10,000 ranges per launch with nothing changed.
	checked struct {
		mem          *memory
		layout       uint64
		stale, freed []string
	}
}

// plan is the graph's replay plan for capture order: its nodes' work, resolved once and shared by
// every launch (nodes never change after the capture ends).
func (g *graph) plan() []work {
	if g.works == nil && len(g.nodes) > 0 {
		g.works = make([]work, len(g.nodes))
		for i, n := range g.nodes {
			g.works[i] = n.work
		}
	}
	return g.works
}

// stale lists the captured ranges that now lie in another allocation than at capture (freed and
// handed out again), and freed those that lie in no live allocation (returned to the driver).
func (g *graph) stale(mem *memory) (stale, freed []string) {
	c := &g.checked
	if c.mem == mem && c.layout == mem.layout() {
		return c.stale, c.freed
	}
	defer func() { c.mem, c.layout, c.stale, c.freed = mem, mem.layout(), stale, freed }()
	for _, n := range g.nodes {
		for i, p := range append(n.work.reads(), n.work.writes()...) {
			a := mem.containing(p)
			switch {
			case a == nil:
				freed = append(freed, fmt.Sprintf("%v is in no live allocation", p))
			case a.gen != n.gens[i]:
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
func (d *Device) Launch(t runtime.Thread, g runtime.Graph, s runtime.Stream) error {
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
			return d.fail("Launch", runtime.ClassNotSupported, "%v is in %v: capturing a graph launch is not modelled", s, st.capture)
		}
		q := d.queueOf(s)
		if d.rng == nil {
			// Capture order: the graph's own work list, shared read-only, no per-launch copy.
			q.works = append(q.works, gr.plan())
		} else {
			order := d.replayOrder(gr)
			works := make([]work, len(order))
			for k, i := range order {
				works[k] = gr.nodes[i].work
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
	stream runtime.Stream
	works  [][]work
}

func (d *Device) queueOf(s runtime.Stream) *pendingWork {
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
	order := make([]int, 0, len(g.nodes))
	if d.rng == nil {
		for i := range g.nodes {
			order = append(order, i)
		}
		return order
	}
	pending := make([]int, len(g.nodes))
	children := make([][]int, len(g.nodes))
	var ready []int
	for i, n := range g.nodes {
		pending[i] = len(n.deps)
		for _, p := range n.deps {
			children[p] = append(children[p], i)
		}
		if len(n.deps) == 0 {
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

func (d *Device) DestroyGraph(t runtime.Thread, g runtime.Graph) error {
	if w := d.away(t); w != nil {
		return d.handOff(w, "DestroyGraph", func() error { return d.DestroyGraph(t, g) })
	}
	return d.call(t, "DestroyGraph", func() error {
		if _, err := d.lookupGraph("DestroyGraph", g); err != nil {
			return err
		}
		delete(d.graphs, g)
		return nil
	})
}

// GraphNodes lists g's nodes in capture order with the ranges each reads and writes.
func (d *Device) GraphNodes(t runtime.Thread, g runtime.Graph) ([]runtime.GraphNode, error) {
	if w := d.away(t); w != nil {
		return handOff(d, w, "GraphNodes", func() ([]runtime.GraphNode, error) { return d.GraphNodes(t, g) })
	}
	var out []runtime.GraphNode
	err := d.call(t, "GraphNodes", func() error {
		gr, err := d.lookupGraph("GraphNodes", g)
		if err != nil {
			return err
		}
		for _, n := range gr.nodes {
			out = append(out, runtime.GraphNode{Kind: n.work.kind, Reads: n.work.reads(), Writes: n.work.writes()})
		}
		return nil
	})
	return out, err
}

func streamList(ss []*stream) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.id.String()
	}
	return strings.Join(names, ", ")
}
