package capture

import (
	"fmt"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// Runs: the bulk of a capture is fills, copies and axpys one after another on one stream. Where
// the runtime under test states a run of kernels (device.Extensions.Kernels), the engine issues them from
// the capture's plan (probes.Plan: resolved once for the probe) in one call per run, records one
// timeline entry per run, and has the oracle record the plan's ops instead of its own. A run has
// exactly the effect, the records and the outcome of the same ops issued one by one (ops.go); the
// equivalence spec runs the catalog both ways and compares every result.
//
// An instance issues runs only where nothing needs to see each op on its own: the runtime under
// test states a run for itself (the reference guards do; the plugin ABI has no run), no fault is
// injected (a fault is charged to the call it fired in), and
// refusals are not checked for side effects (a guarded instance snapshots the state before every
// call). Every other op, and every op a plan did not resolve or whose buffers no longer have the
// plan's sizes, goes one by one.

// maxRun is the most ops one run holds: enough to spread a run's own costs thin, few enough that
// an instance's deadline is looked at every few hundred microseconds.
const maxRun = 4096

// The fewest ops worth a run, and the equivalence spec's switches (runs off, a hook told of every
// run, runs recorded one op short), are the instance's knobs (knobs.go).

// runner is the state of the runs of the capture in progress.
type runner struct {
	plan *probes.Plan
	enq  device.KernelEnqueuer
	// ks is the run being formed. ids, ptrs and how are the buffers its ops name, in the order
	// they first touch them, their ranges, and how the ops touch them all together (""
	// for a buffer named only by the op that ended the run); the buffer with id has its place in
	// them at at[id] when mark[id] == stamp. All reused from run to run.
	ks    []device.Kernel
	ids   []uint32
	ptrs  []device.Ptr
	how   []Access
	at    []int32
	mark  []uint32
	stamp uint32
}

// startRuns decides whether capture c's ops may go in runs, and plans them.
func (in *instance) startRuns(c *probes.Capture) {
	in.runs = nil
	if in.knobs.NoRuns || len(in.faults) > 0 || in.checksRefusals() {
		return
	}
	// Only a runtime that states a run for itself gets runs: one that embeds the reference guards
	// inherits their EnqueueKernels, which would bypass its own Fill (device.ExtensionsOf drops it).
	enq := device.ExtensionsOf(in.dev).Kernels
	if enq == nil {
		return
	}
	n := in.p.BufferIDs()
	in.runs = &runner{plan: in.oracle.Plan(c), enq: enq, at: make([]int32, n), mark: make([]uint32, n),
		ks: make([]device.Kernel, 0, min(len(c.Ops), maxRun))}
}

// base is the range of the buffer a planned range lies in, and its place among the run's buffers,
// false when the engine or the oracle does not hold the buffer at the size the plan resolved it
// at. Both are asked the first time the run names the buffer only: nothing in a run changes a
// buffer.
func (in *instance) base(id uint32) (device.Ptr, int32, bool) {
	rn := in.runs
	if rn.mark[id] == rn.stamp {
		i := rn.at[id]
		return rn.ptrs[i], i, true
	}
	a := in.byID[id] // sized for the probe's name table, as the plan's ids are (Run)
	if a == nil || a.ptr.Bytes != rn.plan.Size(id) || !in.oracle.Holds(rn.plan, id) {
		return device.Ptr{}, 0, false
	}
	i := int32(len(rn.ids))
	rn.mark[id], rn.at[id] = rn.stamp, i
	rn.ids, rn.ptrs, rn.how = append(rn.ids, id), append(rn.ptrs, a.ptr), append(rn.how, "")
	return a.ptr, i, true
}

// issueRun issues the run of ops that begins at ops[from] of the capture in progress, when one
// does, and returns how many ops it dealt with (0: none, the op goes on its own). A run stops
// before an op on another stream or thread, one the plan did not resolve, one whose buffers no
// longer have the plan's sizes, and after maxRun ops. When the runtime fails an op of the run,
// the ops before it took, and the failed op is recorded and judged as on its own.
func (in *instance) issueRun(capture string, ops []*probes.Op, from int) (int, error) {
	rn, first := in.runs, ops[from]
	step := probes.OpStep(probes.PhaseCapture, capture, from)
	if in.ctx.Err() != nil || in.watch.hasFired() || !in.tl.compact(step, first) {
		return 0, nil // on its own: a timeout is reported there
	}
	rn.ks, rn.ids, rn.ptrs, rn.how = rn.ks[:0], rn.ids[:0], rn.ptrs[:0], rn.how[:0]
	if rn.stamp++; rn.stamp == 0 { // wrapped: forget every mark
		clear(rn.mark)
		rn.stamp = 1
	}
	for j := from; j < len(ops) && j-from < maxRun; j++ {
		if j > from && !rn.plan.Follows(j) { // the plan knows: the op itself is not read
			break
		}
		pk := rn.plan.Kernel(j)
		kind := pk.Kind()
		if kind == 0 {
			break
		}
		// How noteCaptured enters an op's buffers: the write, then the reads (an axpy reads x,
		// then y); the buffers in the order the ops first touch them.
		wr := pk.W()
		wb, wi, ok := in.base(wr.ID)
		var x device.Ptr
		if ok && kind != device.KernelFill {
			xr := pk.X()
			var xb device.Ptr
			var xi int32
			if xb, xi, ok = in.base(xr.ID); ok {
				x = xb.Slice(xr.Off, xr.Len)
				rn.how[xi] = rn.how[xi].With(AccessRead)
			}
		}
		if !ok {
			break
		}
		how := AccessWrite
		if kind == device.KernelAxpy {
			how = AccessReadWrite
		}
		rn.how[wi] = rn.how[wi].With(how)
		rn.ks = append(rn.ks, device.Kernel{Kind: kind, Dst: wb.Slice(wr.Off, wr.Len), Src: x, Value: pk.Value(), A: pk.A()})
	}
	if len(rn.ks) < max(in.knobs.MinRun, 1) {
		return 0, nil
	}
	in.cur = deviceCall{step: step, desc: fmt.Sprintf("EnqueueKernels(ops %d to %d of capture %s) on %s", from, from+len(rn.ks)-1, capture, first.Stream),
		thread: first.Thread}
	n, runErr := rn.enq.EnqueueKernels(first.Thread, in.streams[first.Stream], rn.ks)
	if hook := in.knobs.RunHook; hook != nil {
		hook(from, len(rn.ks), n)
	}
	if n < 0 || n > len(rn.ks) || (n == len(rn.ks)) != (runErr == nil) {
		return 0, failf(ErrHarness, stepRef(step), "%s: the runtime under test answered %d of %d kernels taken, error %v: EnqueueKernels must stop at the first kernel that fails",
			step, n, len(rn.ks), runErr)
	}
	if n > 0 {
		captured, err := in.inCapture(first.Stream, true)
		if err != nil {
			return 0, fail(ErrSetup, stepRef(step), err)
		}
		in.tl.run(from, captured, kernelRun{n: n, plan: rn.plan, ids: append([]uint32(nil), rn.ids...), ptrs: append([]device.Ptr(nil), rn.ptrs...)})
		if captured {
			in.captured += n
			in.noteRun(from, n)
		}
		to := from + n
		if in.knobs.SkewRuns {
			to--
		}
		in.oracle.CaptureRun(rn.plan, from, to)
	}
	if runErr == nil {
		return n, nil
	}
	// The rest of the capture goes op by op: after a failure the ops that follow mostly fail too
	// (an invalidated capture fails all of them), and a run formed at each of them, to stop at
	// its first, would cost as many ops as the run could hold for every op.
	in.runs = nil
	// The op the runtime failed, recorded and judged as on its own (call), with the error it got.
	j, k := from+n, &rn.ks[n]
	op := ops[j]
	took, err := in.call(deviceCall{step: probes.OpStep(probes.PhaseCapture, capture, j), thread: op.Thread, enqueues: op.Stream, op: op, w: k.Dst, x: k.Src},
		func() (string, error) { return "", runErr })
	if err != nil {
		return 0, err
	}
	in.oracle.Capture(capture, op, took)
	return n + 1, nil
}

// noteRun is noteCaptured for the first n ops of the run, from op from: the buffers and accesses
// the run gathered as it was formed when all of them took, else each op's entries in turn.
func (in *instance) noteRun(from, n int) {
	rn := in.runs
	if n == len(rn.ks) {
		for i, id := range rn.ids {
			if rn.how[i] != "" { // "": named only by the op that ended the run, not in it
				in.noteAccess(in.byID[id], rn.how[i])
			}
		}
		return
	}
	for j := from; j < from+n; j++ {
		pk := rn.plan.Kernel(j)
		in.noteAccess(in.byID[pk.W().ID], AccessWrite)
		switch pk.Kind() {
		case device.KernelCopy:
			in.noteAccess(in.byID[pk.X().ID], AccessRead)
		case device.KernelAxpy:
			in.noteAccess(in.byID[pk.X().ID], AccessRead)
			in.noteAccess(in.byID[pk.W().ID], AccessRead)
		}
	}
}
