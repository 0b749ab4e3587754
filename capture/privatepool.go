package capture

import (
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
)

// Graph-private pools (probes/privatepool.go): what the engine keeps of them and how it judges
// their blocks.
//
// A captured range whose allocation was a private pool's block, since freed, is not stale while
// the pool still holds it: the block is free in the pool, or a capture into the pool took it for
// an allocation of its own. It is stale, as every freed range is, once the pool released it (every
// graph captured into the pool destroyed) or when anything else holds it now.
//
// Two graphs share blocks when one captured an allocation and the other a different allocation
// over the same bytes of a private pool: the later capture took a block the earlier one's buffer
// gave back. PyTorch's rule for them: "safe ... if you know they'll always be replayed in the same
// order they were captured, and never be replayed concurrently". A launch of a graph is a finding
// when a graph it shares blocks with was launched earlier in the same round and was captured after
// it (out of capture order), or runs on another stream (concurrently: nothing orders launches on
// two streams). The finding is a stale range of the later launch, whose now says why: it ran over
// bytes another graph's buffer overwrote or may overwrite at the same time.

// privatePools is an instance's record of its private pools.
type privatePools struct {
	// pool is the private pool each allocation (by engine generation) came from; absent for any
	// other allocation.
	pool map[uint64]string
	// graphs counts the graphs captured into each private pool and not destroyed; had says a
	// graph was ever captured into it. A pool that had graphs and has none left is released.
	graphs map[string]int
	had    map[string]bool
	// shares caches, by the pair of captures (earlier launched, later launched), the entries of the
	// later that share blocks with the earlier's.
	shares map[[2]string][]sharedEntry
	// launched are the round's launches so far (round: which round).
	round    int
	launched []probes.Launch
}

// sharedEntry is an entry of a graph's ledger over bytes another graph captured through a
// different allocation of a private pool.
type sharedEntry struct {
	mine, theirs Residency
	pool         string
}

// lacksPrivatePools says why a guarded instance of a probe with private pools cannot run on rt: a
// runtime that keeps no private pools would judge their blocks as an ordinary pool's.
func (in *instance) lacksPrivatePools(rt runtime.Runtime) (capability, why string) {
	pools := in.p.PrivatePools()
	if !in.spec.Guarded || len(pools) == 0 || runtime.ExtensionsOf(rt).PrivatePools != nil {
		return "", ""
	}
	names := make([]string, len(pools))
	for i, pl := range pools {
		names[i] = pl.Name
	}
	const c = "graph-private-pools"
	return c, fmt.Sprintf("%q, which the probe's private pools need in a guarded instance (%s)", c, strings.Join(names, ", "))
}

// makePrivate tells the runtime under test that the pool it reserved for pl is graph-private.
func (in *instance) makePrivate(pl *probes.Pool) error {
	ext := runtime.ExtensionsOf(in.dev).PrivatePools
	if !pl.Private || ext == nil {
		return nil
	}
	return in.must(fmt.Sprintf("MakePrivate(%s)", pl.Name), func() error { return ext.MakePrivate(pl.Name) })
}

// captureInto tells the runtime under test which private pool capture c, about to begin,
// allocates from.
func (in *instance) captureInto(c *probes.Capture) {
	if ext := runtime.ExtensionsOf(in.dev).PrivatePools; ext != nil {
		ext.CaptureInto(c.Pool)
	}
}

// capturedInto notes that capture c made a graph, which holds its private pool.
func (in *instance) capturedInto(c *probes.Capture) {
	in.priv.shares = nil
	if c.Pool == "" {
		return
	}
	if in.priv.graphs == nil {
		in.priv.graphs, in.priv.had = map[string]int{}, map[string]bool{}
	}
	in.priv.graphs[c.Pool]++
	in.priv.had[c.Pool] = true
}

// notePrivate notes the private pool an allocation of generation gen came from.
func (in *instance) notePrivate(gen uint64, place probes.Place) {
	if !in.p.IsPrivate(place.Pool) {
		return
	}
	if in.priv.pool == nil {
		in.priv.pool = map[uint64]string{}
	}
	in.priv.pool[gen] = place.Pool
}

// released reports whether a private pool released its blocks: every graph captured into it is
// destroyed.
func (in *instance) released(pool string) bool {
	return in.priv.had[pool] && in.priv.graphs[pool] == 0
}

// heldPrivately reports whether a captured range whose allocation is gone is still held by the
// private pool it came from, and so not stale: the pool is not released, and every live buffer
// over the range now is a block of the same pool.
func (in *instance) heldPrivately(l Residency) bool {
	pool := in.priv.pool[l.Generation]
	if pool == "" || in.knobs.NoPrivatePools || in.released(pool) {
		return false
	}
	for _, a := range in.bufs {
		if a.ptr.Overlaps(l.Range) && in.priv.pool[a.gen] != pool {
			return false
		}
	}
	return true
}

// destroy destroys a capture's graph: it is never launched again, and its private pool drops it.
func (in *instance) destroy(step probes.Step, op *probes.Op) (bool, error) {
	g, ok := in.graphs[op.Capture]
	if !ok {
		in.tl.skipped(step, op, "capture "+op.Capture+" made no graph")
		return false, nil
	}
	took, err := in.call(deviceCall{step: step, desc: fmt.Sprintf("DestroyGraph(%s)", op.Capture), thread: op.Thread},
		exec(func() error { return in.dev.DestroyGraph(op.Thread, g) }))
	if !took || err != nil {
		return took, err
	}
	delete(in.graphs, op.Capture)
	in.oracle.Destroy(op.Capture)
	if c := in.p.Capture(op.Capture); c != nil && c.Pool != "" {
		in.priv.graphs[c.Pool]--
	}
	return true, nil
}

// noteSharing judges a launch of capture's graph by the sharing rule (see above), and records
// the round's launches. ran is false when the platform rejected the launch.
func (in *instance) noteSharing(round int, lc probes.Launch, ran bool) {
	if len(in.priv.pool) == 0 || in.knobs.NoSharingRule {
		return
	}
	if in.priv.round != round {
		in.priv.round, in.priv.launched = round, in.priv.launched[:0]
	}
	mine := in.p.CaptureIndex(lc.Capture)
	for _, earlier := range in.priv.launched {
		concurrent := earlier.Stream != lc.Stream
		reordered := in.p.CaptureIndex(earlier.Capture) > mine
		if !concurrent && !reordered {
			continue
		}
		for _, s := range in.sharedWith(earlier.Capture, lc.Capture) {
			how := fmt.Sprintf("launched before it in round %d though captured after it", round)
			if concurrent {
				how = fmt.Sprintf("launched on stream %s while this launch runs on %s, in round %d: nothing orders them", earlier.Stream, lc.Stream, round)
			}
			in.noteShared(s, round, ran, earlier.Capture, how)
		}
	}
	in.priv.launched = append(in.priv.launched, lc)
}

// noteShared records a shared entry as a stale range of the launch, once.
func (in *instance) noteShared(s sharedEntry, round int, ran bool, other, how string) {
	st, first := in.firstStale(s.mine, round, ran)
	if !first {
		return
	}
	st.Now = fmt.Sprintf("shared with graph %s, which captured buffer %s (generation %d) over these bytes of private pool %q and was %s: graphs that share a private pool replay in capture order and never concurrently",
		other, s.theirs.Buffer, s.theirs.Generation, s.pool, how)
	if a := in.bufs[s.theirs.Buffer]; a != nil && a.gen == s.theirs.Generation {
		st.Owners = []string{s.theirs.Buffer}
	}
	in.res.Stale = append(in.res.Stale, st)
}

// sharedWith returns the entries of later's graph over bytes of a private pool that earlier's
// graph captured through a different allocation.
func (in *instance) sharedWith(earlier, later string) []sharedEntry {
	key := [2]string{earlier, later}
	if s, ok := in.priv.shares[key]; ok {
		return s
	}
	var out []sharedEntry
	theirs := in.entriesOf(earlier)
	for _, m := range in.entriesOf(later) {
		for _, t := range theirs {
			if m.Generation == t.Generation || !m.Range.Overlaps(t.Range) {
				continue
			}
			pool := in.priv.pool[m.Generation]
			if pool == "" {
				pool = in.priv.pool[t.Generation]
			}
			if pool == "" {
				continue
			}
			out = append(out, sharedEntry{mine: m, theirs: t, pool: pool})
			break
		}
	}
	if in.priv.shares == nil {
		in.priv.shares = map[[2]string][]sharedEntry{}
	}
	in.priv.shares[key] = out
	return out
}
