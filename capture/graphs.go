package capture

import (
	"fmt"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/runtime"
)

// Graph introspection: on a backend that can list a graph's nodes, the engine walks each captured
// graph (device.GraphWalker where the device has it, GraphNodes otherwise) and compares it with
// what it issued into the capture. A node that reads or writes memory no buffer of the capture
// holds, or a graph whose work nodes do not match the work the engine captured, is a finding: the
// graph will replay something the probe never asked for.

// GraphCheck is what one captured graph's nodes showed.
type GraphCheck struct {
	Capture string `json:"capture"`
	Nodes   int    `json:"nodes"` // every node of the graph
	// Work counts the graph's memset, memcpy and kernel nodes; Issued the fill, copy and axpy
	// ops the engine saw captured.
	Work   int `json:"work"`
	Issued int `json:"issued"`
	// Opaque counts the "task" nodes: tasks the platform names no kind or parameters for (ACL's
	// fills and copies among them), each of which may hold captured work or be the runtime's own.
	Opaque int `json:"opaque,omitempty"`
	// Unrecorded are the ranges nodes touch that lie in no buffer the capture's ops named with
	// that access.
	Unrecorded []NodeRange `json:"unrecorded,omitempty"`
}

// Faithful reports whether the graph holds exactly the work the engine captured, over the
// memory it recorded. With opaque nodes, which may hold any of it, the work nodes must not
// outnumber the captured ops, and the two together must hold at least one node per op.
func (g GraphCheck) Faithful() bool {
	if len(g.Unrecorded) > 0 {
		return false
	}
	if g.Opaque > 0 {
		return g.Work <= g.Issued && g.Work+g.Opaque >= g.Issued
	}
	return g.Work == g.Issued
}

// NodeRange is one range a graph node reads or writes.
type NodeRange struct {
	Kind   string     `json:"kind"` // the node's kind: memset, memcpy, kernel
	Range  device.Ptr `json:"range"`
	Access Access     `json:"access"` // read or write
}

// isWork reports whether a node kind is work replayed on data (not ordering).
func isWork(kind string) bool { return kind == "memset" || kind == "memcpy" || kind == "kernel" }

// checkGraph walks the nodes of capture's graph and compares them with the ledger: every range a
// node writes must lie in a buffer the capture's ops wrote, every range it reads in one they
// read, and the work nodes must number the captured work ops. Backends without introspection are
// not asked: the result says its graphs were not read, and why (Result.GraphsUnread).
func (in *instance) checkGraph(capture string, g device.Graph) error {
	if !in.dev.Capabilities().GraphIntrospection {
		if in.res.GraphsUnread == "" {
			in.res.GraphsUnread = in.graphsUnread()
		}
		return nil
	}
	check := GraphCheck{Capture: capture, Issued: in.captured}
	recorded := newLedgerIndex(in.entriesOf(capture))
	visit := func(n device.GraphNode) {
		if isWork(n.Kind) {
			check.Work++
		} else if n.Kind == "task" {
			check.Opaque++
		}
		for _, w := range n.Writes {
			if !recorded.holds(w, AccessWrite) {
				check.Unrecorded = append(check.Unrecorded, NodeRange{Kind: n.Kind, Range: w, Access: AccessWrite})
			}
		}
		for _, rd := range n.Reads {
			if !recorded.holds(rd, AccessRead) {
				check.Unrecorded = append(check.Unrecorded, NodeRange{Kind: n.Kind, Range: rd, Access: AccessRead})
			}
		}
	}
	if err := in.mustReturn(fmt.Sprintf("GraphNodes(graph %s)", capture), func() (string, error) {
		var err error
		check.Nodes, err = in.walkGraph(g, visit)
		return fmt.Sprintf("%d nodes", check.Nodes), err
	}); err != nil {
		return err
	}
	in.res.Graphs = append(in.res.Graphs, check)
	return nil
}

// graphsUnread says why the runtime under test cannot list a graph's nodes: the runtime's own
// reason where its device can (runtime.Lacker), the backend otherwise. A device states no reason
// of its own; `replaycheck devices` names what a backend's library lacks (device.DeviceInfo.Lacks).
func (in *instance) graphsUnread() string {
	if in.watch.dev.Capabilities().GraphIntrospection {
		why := fmt.Sprintf("runtime %s cannot list a graph's nodes", in.res.Runtime)
		if l := runtime.ExtensionsOf(in.dev).Lacks; l != nil {
			if because := l.Lacks("graph-introspection"); because != "" {
				why += ": " + because
			}
		}
		return why
	}
	return fmt.Sprintf("the %s backend cannot list a graph's nodes on this device (replaycheck devices names what it lacks)", in.watch.dev.Backend())
}

// walkGraph visits g's nodes: by the device's walk where the instance has one (walkerOf), through
// the runtime under test otherwise.
func (in *instance) walkGraph(g device.Graph, visit func(device.GraphNode)) (int, error) {
	if in.walker != nil {
		return in.walker.WalkGraph(device.Main, g, visit)
	}
	return device.WalkGraph(in.dev, device.Main, g, visit)
}

// walkerOf returns the walk dev's device states (device.Extensions.Walk) under the watch, when the
// runtime under test is direct (runtime.UnderTest.Direct), whose GraphNodes is the device's; a
// runtime of the user's own answers for itself.
func walkerOf(dev watched, direct bool) device.GraphWalker {
	if g := device.ExtensionsOf(dev.Device).Walk; g != nil && direct {
		return watchedWalker{g: g, w: dev.w}
	}
	return nil
}

// watchedWalker is a device.GraphWalker whose walks the watch times, as the GraphNodes they are.
type watchedWalker struct {
	g device.GraphWalker
	w *watch
}

func (g watchedWalker) WalkGraph(t device.Thread, gr device.Graph, visit func(device.GraphNode)) (n int, err error) {
	g.w.do("GraphNodes", func() { n, err = g.g.WalkGraph(t, gr, visit) })
	return
}

// ledgerIndex tells whether a range lies inside a buffer one capture's ops read, or wrote: its
// ledger entries that allow each access, indexed by address (device.Ranges). A graph
// of n nodes over as many buffers is checked in O(n log n), where asking each entry about each
// node's range would take O(n²).
type ledgerIndex struct {
	reads, writes device.Ranges
	// readList and writeList are the ranges indexed; hitRead and hitWrite the last of them that
	// held a range asked about: a graph's consecutive nodes mostly lie in the same buffer, and a
	// graph of 100,000 nodes then costs no search per node.
	readList, writeList []device.Ptr
	hitRead, hitWrite   device.Ptr
}

func newLedgerIndex(entries []Residency) *ledgerIndex {
	var reads, writes []device.Ptr
	for _, l := range entries {
		if l.Access == AccessRead || l.Access == AccessReadWrite {
			reads = append(reads, l.Range)
		}
		if l.Access == AccessWrite || l.Access == AccessReadWrite {
			writes = append(writes, l.Range)
		}
	}
	return &ledgerIndex{reads: device.NewRanges(reads), writes: device.NewRanges(writes), readList: reads, writeList: writes}
}

// holds reports whether p lies inside an entry that allows how (AccessRead or AccessWrite).
func (x *ledgerIndex) holds(p device.Ptr, how Access) bool {
	set, list, hit := &x.reads, x.readList, &x.hitRead
	if how == AccessWrite {
		set, list, hit = &x.writes, x.writeList, &x.hitWrite
	}
	if hit.Bytes > 0 && hit.Contains(p) {
		return true
	}
	if !set.Contains(p) {
		return false
	}
	set.Overlapping(p, func(i int) {
		if list[i].Contains(p) {
			*hit = list[i]
		}
	})
	return true
}

// unfaithful returns the first graph check that found something, nil when none did.
func unfaithful(res *Result) *GraphCheck {
	for i := range res.Graphs {
		if !res.Graphs[i].Faithful() {
			return &res.Graphs[i]
		}
	}
	return nil
}

// graphReason says what a graph check found.
func graphReason(g *GraphCheck) string {
	if len(g.Unrecorded) > 0 {
		n := g.Unrecorded[0]
		s := fmt.Sprintf("graph %s holds a %s node that %s %v, which no buffer of the capture's ops %s",
			g.Capture, n.Kind, map[Access]string{AccessRead: "reads", AccessWrite: "writes"}[n.Access], n.Range, map[Access]string{AccessRead: "reads", AccessWrite: "writes"}[n.Access])
		if more := len(g.Unrecorded) - 1; more > 0 {
			s += " (and " + plural.Count(more, "more such range") + ")"
		}
		return s
	}
	if g.Opaque > 0 {
		return fmt.Sprintf("graph %s holds %s and %s of no named kind, which cannot hold the %s captured", g.Capture, plural.Count(g.Work, "work node"), plural.Count(g.Opaque, "task"), plural.Count(g.Issued, "fill, copy or axpy op"))
	}
	return fmt.Sprintf("graph %s holds %d work nodes, but %d fill, copy or axpy ops were captured", g.Capture, g.Work, g.Issued)
}
