package probes

import (
	"strconv"

	"gopkg.in/yaml.v3"
)

// Graph-private pools, as PyTorch's caching allocator keeps them (torch.cuda.graph, and
// torch_npu's NPUGraph): every allocation a capture makes is served from a pool private to the
// graph, a block freed, during the capture or after it, goes back to that pool, and only a later
// capture into the same pool takes it again; no eager allocation ever does. Captures may share one
// pool, which is safe when their graphs replay in the order they were captured and never
// concurrently (PyTorch's notes, "Graph memory management"). A probe declares such a pool with
// `private: true` and names, in a capture's `pool` key, the private pool it allocates from: by
// default the private pool named like the capture, when one is declared (PyTorch's default: a pool
// of the capture's own), else none. `destroy` destroys a capture's graph; a private pool whose
// graphs are all destroyed releases its blocks as no buffer holds them any more.

// OpDestroy destroys a capture's graph (cudaGraphExecDestroy, aclmdlRIDestroy: PyTorch's
// CUDAGraph.reset, or the graph going out of scope). The graph is never launched again, and the
// private pool it was captured into drops it: once every graph of the pool is destroyed, a block
// of the pool no buffer holds is released.
const OpDestroy OpKind = "destroy"

// private reads a pool's private key, a boolean.
func (l *loader) private(pl *Pool, n *yaml.Node, what string) bool {
	l.mark(pl, "private", n)
	v, ok := l.oneOf(n, what, []string{"true", "false"})
	return ok && v == "true"
}

// PrivatePools lists the probe's graph-private pools, in declaration order.
func (p *Probe) PrivatePools() []*Pool {
	var out []*Pool
	for _, pl := range p.Pools {
		if pl.Private {
			out = append(out, pl)
		}
	}
	return out
}

// IsPrivate reports whether the pool called name is a declared graph-private pool.
func (p *Probe) IsPrivate(name string) bool {
	pl := p.Pool(name)
	return pl != nil && pl.Private
}

// CaptureIndex is the place of the capture called name in the probe's capture order (0-based),
// -1 when there is none.
func (p *Probe) CaptureIndex(name string) int {
	for i, c := range p.Captures {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// Destroy drops capture's graph: a destroyed graph is never launched again.
func (o *Oracle) Destroy(capture string) {
	delete(o.graphs, capture)
	if o.recordingOf == capture {
		o.recording, o.recordingOf = nil, ""
	}
}

// checkPrivatePools resolves each capture's private pool and checks where private pools and
// destroy are used: a private pool is device memory; only a capture into it allocates from it (a
// declared buffer, an eager alloc or grow, or one in a capture into another pool is an error); a
// destroy is eager work after its capture, once, and a destroyed capture is not replayed.
func (l *loader) checkPrivatePools(p *Probe) {
	for _, pl := range p.Pools {
		if pl.Private && pl.Host != 0 {
			l.errorf(l.where(pl, "private", pl.Pos), RulePrivatePool, "pool %q: a graph-private pool is device memory, as a capture's allocations are: leave host out", pl.Name)
		}
	}
	for _, c := range p.Captures {
		at := l.where(c, "pool", c.Pos)
		switch pl := p.Pool(c.Pool); {
		case c.Pool == "":
			if d := p.Pool(c.Name); d != nil && d.Private {
				c.Pool = d.Name // the default: the private pool named like the capture
			}
		case pl == nil:
			l.unknown(at, RuleUndeclared, "capture "+c.Name+" names undeclared pool", c.Pool, "private pools", func() (names []string) {
				for _, pl := range p.PrivatePools() {
					names = append(names, pl.Name)
				}
				return names
			})
		case !pl.Private:
			l.errorf(at, RulePrivatePool, "capture %s names pool %q, which is not graph-private: a capture allocates from a pool with private: true", c.Name, c.Pool)
		}
	}
	if len(p.PrivatePools()) == 0 && !hasDestroy(p) {
		return
	}
	pools := map[string]string{} // buffer name -> the private pool serving it now
	for _, b := range p.Buffers {
		if p.IsPrivate(b.Place.Pool) {
			l.errorf(l.where(b, "pool", b.Pos), RulePrivatePool, "buffer %s: a declared buffer is allocated before prepare, eagerly, and only a capture into graph-private pool %q allocates from it", b.Name, b.Place.Pool)
		}
	}
	ended, destroyed := map[string]bool{}, map[string]Pos{}
	var names []string
	for _, c := range p.Captures {
		names = append(names, c.Name)
	}
	eager := func(ops []*Op, each bool) {
		for _, op := range ops {
			switch op.Kind {
			case OpAlloc:
				if p.IsPrivate(op.Place.Pool) {
					l.errorf(l.where(op, "pool", op.Pos), RulePrivatePool, "alloc %s from graph-private pool %q outside a capture: only a capture into the pool allocates from it", op.Buffer, op.Place.Pool)
				}
				pools[op.Buffer] = op.Place.Pool
			case OpGrow:
				if pl := pools[op.Buffer]; p.IsPrivate(pl) {
					l.errorf(l.where(op, "buffer", op.Pos), RulePrivatePool, "grow of %s outside a capture: it would re-base the buffer eagerly in graph-private pool %q, which only a capture into it allocates from", op.Buffer, pl)
				}
			case OpDestroy:
				at := l.where(op, "capture", op.Pos)
				switch {
				case each:
					l.errorf(op.Pos, RuleBadValue, "destroy in replay each would destroy the graph before every round: put it in eager work after the capture")
				case p.Capture(op.Capture) == nil:
					l.unknown(at, RuleUndeclared, "destroy names undeclared capture", op.Capture, "captures", func() []string { return names })
				case destroyed[op.Capture] != (Pos{}):
					l.errorf(at, RuleDestroyed, "capture %s is destroyed already, at line %d", op.Capture, destroyed[op.Capture].Line)
				case !ended[op.Capture]:
					l.errorf(at, RuleUndeclared, "destroy names capture %s before it is captured: destroy a graph after its capture", op.Capture)
				default:
					destroyed[op.Capture] = op.Pos
				}
			}
		}
	}
	inCapture := func(c *Capture, op *Op) {
		switch op.Kind {
		case OpAlloc:
			if pl := op.Place.Pool; p.IsPrivate(pl) && pl != c.Pool {
				l.errorf(l.where(op, "pool", op.Pos), RulePrivatePool, "alloc %s from graph-private pool %q in capture %s, which allocates from %s: name the pool in the capture's pool key", op.Buffer, pl, c.Name, poolText(c.Pool))
			}
			pools[op.Buffer] = op.Place.Pool
		case OpGrow:
			if pl := pools[op.Buffer]; p.IsPrivate(pl) && pl != c.Pool {
				l.errorf(l.where(op, "buffer", op.Pos), RulePrivatePool, "grow of %s in capture %s re-bases it in graph-private pool %q, but the capture allocates from %s", op.Buffer, c.Name, pl, poolText(c.Pool))
			}
		case OpDestroy:
			l.errorf(op.Pos, RuleBadValue, "destroy inside capture %s: destroy a graph in eager work, outside a capture", c.Name)
		}
	}
	for _, st := range p.Stages() {
		switch {
		case st.Eager():
			eager(st.Ops, false)
		case st.Whole():
			for _, op := range st.Capture.Ops {
				inCapture(st.Capture, op)
			}
			ended[st.Capture.Name] = true
		case st.Part == PartOps:
			for i, op := range st.Ops {
				inCapture(st.Into[i].Capture, op)
			}
		case st.Part == PartEnd:
			ended[st.Capture.Name] = true
		}
	}
	eager(p.Replay.Each, true)
	if _, given := l.pos[fieldKey{&p.Replay, "order"}]; !given && len(destroyed) > 0 && len(p.Replay.Order) == 0 {
		// The default order (resolveDefaults) left out every destroyed graph, and so every graph.
		l.errorf(p.Pos, RuleDestroyed, "every capture's graph is destroyed: nothing is left to replay")
	}
	for i, lc := range p.Replay.Order {
		if at, ok := destroyed[lc.Capture]; ok {
			l.errorf(lc.Pos, RuleDestroyed, "replay order entry %s launches capture %s, whose graph is destroyed at line %d", strconv.Itoa(i+1), lc.Capture, at.Line)
		}
	}
}

func poolText(pool string) string {
	if pool == "" {
		return "no private pool"
	}
	return "private pool " + strconv.Quote(pool)
}

func hasDestroy(p *Probe) bool {
	for _, st := range p.Stages() {
		for _, op := range st.Issued() {
			if op.Kind == OpDestroy {
				return true
			}
		}
	}
	for _, op := range p.Replay.Each {
		if op.Kind == OpDestroy {
			return true
		}
	}
	return false
}
