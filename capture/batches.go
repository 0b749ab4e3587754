package capture

import (
	"fmt"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// Batches: the bulk of a capture is fills, copies and axpys one after another on one stream. Where
// the runtime under test states a batch of kernels (device.Extensions.Kernels), the engine issues
// them from the capture's plan (probes.Plan: resolved once for the probe) in one call per batch,
// records one timeline entry per batch, and has the oracle record the plan's ops instead of its
// own. A batch has exactly the effect, the records and the outcome of the same ops issued one by
// one (ops.go); the equivalence spec runs the catalog both ways and compares every result.
//
// An instance issues batches only where nothing needs to see each op on its own: the runtime under
// test states a batch for itself (the reference guards do; the plugin ABI has no batch), no fault
// is injected (a fault is charged to the call it fired in), and refusals are not checked for side
// effects (a guarded instance snapshots the state before every call). Every other op, and every op
// a plan did not resolve or whose buffers no longer have the plan's sizes, goes one by one.

// maxBatch is the most ops one batch holds: enough to spread a batch's own costs thin, few enough
// that an instance's deadline is looked at every few hundred microseconds.
const maxBatch = 4096

// The fewest ops worth a batch, and the equivalence spec's switches (batches off, a hook told of
// every batch, batches recorded one op short), are the instance's knobs (knobs.go).

// batcher is the state of the batches of the capture in progress.
type batcher struct {
	plan *probes.Plan
	enq  device.KernelEnqueuer
	// ks is the batch being formed. ids, ptrs and how are the buffers its ops name, in the order
	// they first touch them, their ranges, and how the ops touch them all together (""
	// for a buffer named only by the op that ended the batch); the buffer with id has its place in
	// them at at[id] when mark[id] == stamp. All reused from batch to batch.
	ks    []device.Kernel
	ids   []uint32
	ptrs  []device.Ptr
	how   []Access
	at    []int32
	mark  []uint32
	stamp uint32
}

// startBatches decides whether capture c's ops may go in batches, and plans them.
func (in *instance) startBatches(c *probes.Capture) {
	in.batches = nil
	if in.knobs.NoBatches || len(in.faults) > 0 || in.checksRefusals() {
		return
	}
	// Only a runtime that states a batch for itself gets batches: one that embeds the reference guards
	// inherits their EnqueueKernels, which would bypass its own Fill (device.ExtensionsOf drops it).
	enq := device.ExtensionsOf(in.dev).Kernels
	if enq == nil {
		return
	}
	n := in.p.BufferIDs()
	in.batches = &batcher{plan: in.oracle.Plan(c), enq: enq, at: make([]int32, n), mark: make([]uint32, n),
		ks: make([]device.Kernel, 0, min(len(c.Ops), maxBatch))}
}

// base is the range of the buffer a planned range lies in, and its place among the batch's buffers,
// false when the engine or the oracle does not hold the buffer at the size the plan resolved it
// at. Both are asked the first time the batch names the buffer only: nothing in a batch changes a
// buffer.
func (in *instance) base(id uint32) (device.Ptr, int32, bool) {
	bt := in.batches
	if bt.mark[id] == bt.stamp {
		i := bt.at[id]
		return bt.ptrs[i], i, true
	}
	a := in.byID[id] // sized for the probe's name table, as the plan's ids are (Run)
	if a == nil || a.ptr.Bytes != bt.plan.Size(id) || !in.oracle.Holds(bt.plan, id) {
		return device.Ptr{}, 0, false
	}
	i := int32(len(bt.ids))
	bt.mark[id], bt.at[id] = bt.stamp, i
	bt.ids, bt.ptrs, bt.how = append(bt.ids, id), append(bt.ptrs, a.ptr), append(bt.how, "")
	return a.ptr, i, true
}

// issueBatch issues the batch of ops that begins at ops[from] of the capture in progress, when one
// does, and returns how many ops it dealt with (0: none, the op goes on its own). A batch stops
// before an op on another stream or thread, one the plan did not resolve, one whose buffers no
// longer have the plan's sizes, and after maxBatch ops. When the runtime fails an op of the batch,
// the ops before it took, and the failed op is recorded and judged as on its own.
func (in *instance) issueBatch(capture string, ops []*probes.Op, from int) (int, error) {
	bt, first := in.batches, ops[from]
	step := probes.OpStep(probes.PhaseCapture, capture, from)
	if in.ctx.Err() != nil || in.watch.hasFired() || !in.tl.compact(step, first) {
		return 0, nil // on its own: a timeout is reported there
	}
	bt.ks, bt.ids, bt.ptrs, bt.how = bt.ks[:0], bt.ids[:0], bt.ptrs[:0], bt.how[:0]
	if bt.stamp++; bt.stamp == 0 { // wrapped: forget every mark
		clear(bt.mark)
		bt.stamp = 1
	}
	for j := from; j < len(ops) && j-from < maxBatch; j++ {
		if j > from && !bt.plan.Follows(j) { // the plan knows: the op itself is not read
			break
		}
		pk := bt.plan.Kernel(j)
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
				bt.how[xi] = bt.how[xi].With(AccessRead)
			}
		}
		if !ok {
			break
		}
		how := AccessWrite
		if kind == device.KernelAxpy {
			how = AccessReadWrite
		}
		bt.how[wi] = bt.how[wi].With(how)
		bt.ks = append(bt.ks, device.Kernel{Kind: kind, Dst: wb.Slice(wr.Off, wr.Len), Src: x, Value: pk.Value(), A: pk.A()})
	}
	if len(bt.ks) < max(in.knobs.MinBatch, 1) {
		return 0, nil
	}
	in.cur = deviceCall{step: step, desc: fmt.Sprintf("EnqueueKernels(ops %d to %d of capture %s) on %s", from, from+len(bt.ks)-1, capture, first.Stream),
		thread: first.Thread}
	n, batchErr := bt.enq.EnqueueKernels(first.Thread, in.streams[first.Stream], bt.ks)
	if hook := in.knobs.BatchHook; hook != nil {
		hook(from, len(bt.ks), n)
	}
	if n < 0 || n > len(bt.ks) || (n == len(bt.ks)) != (batchErr == nil) {
		return 0, failf(ErrHarness, stepRef(step), "%s: the runtime under test answered %d of %d kernels taken, error %v: EnqueueKernels must stop at the first kernel that fails",
			step, n, len(bt.ks), batchErr)
	}
	if n > 0 {
		captured, err := in.inCapture(first.Stream, true)
		if err != nil {
			return 0, fail(ErrSetup, stepRef(step), err)
		}
		in.tl.batch(from, captured, kernelBatch{n: n, plan: bt.plan, ids: append([]uint32(nil), bt.ids...), ptrs: append([]device.Ptr(nil), bt.ptrs...)})
		if captured {
			in.captured += n
			in.noteBatch(from, n)
		}
		to := from + n
		if in.knobs.SkewBatches {
			to--
		}
		in.oracle.CaptureBatch(bt.plan, from, to)
	}
	if batchErr == nil {
		return n, nil
	}
	// The rest of the capture goes op by op: after a failure the ops that follow mostly fail too
	// (an invalidated capture fails all of them), and a batch formed at each of them, to stop at
	// its first, would cost as many ops as the batch could hold for every op.
	in.batches = nil
	// The op the runtime failed, recorded and judged as on its own (call), with the error it got.
	j, k := from+n, &bt.ks[n]
	op := ops[j]
	took, err := in.call(deviceCall{step: probes.OpStep(probes.PhaseCapture, capture, j), thread: op.Thread, enqueues: op.Stream, op: op, w: k.Dst, x: k.Src},
		func() (string, error) { return "", batchErr })
	if err != nil {
		return 0, err
	}
	in.oracle.Capture(capture, op, took)
	return n + 1, nil
}

// noteBatch is noteCaptured for the first n ops of the batch, from op from: the buffers and
// accesses the batch gathered as it was formed when all of them took, else each op's entries in
// turn.
func (in *instance) noteBatch(from, n int) {
	bt := in.batches
	if n == len(bt.ks) {
		for i, id := range bt.ids {
			if bt.how[i] != "" { // "": named only by the op that ended the batch, not in it
				in.noteAccess(in.byID[id], bt.how[i])
			}
		}
		return
	}
	for j := from; j < from+n; j++ {
		pk := bt.plan.Kernel(j)
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
