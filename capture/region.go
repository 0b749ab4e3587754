package capture

import (
	"errors"
	"fmt"
	"time"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// Captures left open (a phases list's begin, ops and end entries): two or more captures in
// progress at once, each op of an ops entry issued into the capture its stream belongs to
// (probes.Stage.Into), each end on its own. The captures of a region run as a capture entry's
// does, interleaved: the engine's capture in progress (ledger.capture) is the one the op being
// issued goes into, and each keeps its own count of captured work and its own ledger entries,
// which join the result's ledger, contiguous, when its end makes a graph. A capture whose end
// failed and left it active is cleaned up when no capture of the region is open any more: ending
// it earlier, with another still in progress, would be a call the probe never made.

// openCapture is a capture a begin entry began and its end entry has not ended.
type openCapture struct {
	c *probes.Capture
	// took: the begin took; the capture's ops are not issued when it did not.
	took     bool
	id       uint64
	captured int
	// ledger are the capture's residency entries so far; at the allocations they concern, by
	// entry.
	ledger []Residency
	at     map[*allocation]int
}

// region is the captures a phases list left open, and those of the region already ended.
type region struct {
	open  map[string]*openCapture
	ended []*probes.Capture
	// current is the capture the op being issued goes into; nil outside an ops entry.
	current *openCapture
}

// regionStage runs one begin, ops or end entry of a phases list.
func (in *instance) regionStage(st probes.Stage) error {
	in.tl.enter(PhaseCapture)
	defer func(start time.Time) { in.times.capture += time.Since(start) }(time.Now())
	if in.region.open == nil {
		in.region.open = map[string]*openCapture{}
	}
	var err error
	switch st.Part {
	case probes.PartBegin:
		err = in.beginOpen(st.Capture)
	case probes.PartOps:
		err = in.openOps(st)
	case probes.PartEnd:
		err = in.endOpen(st.Capture)
	}
	if err != nil {
		return in.abandonRegion(err)
	}
	if len(in.region.open) == 0 && len(in.region.ended) > 0 {
		return in.cleanRegion()
	}
	return nil
}

// beginOpen begins capture c, on its thread, and leaves it open.
func (in *instance) beginOpen(c *probes.Capture) error {
	oc := &openCapture{c: c, at: map[*allocation]int{}}
	in.region.open[c.Name] = oc
	in.captureInto(c)
	took, err := in.call(deviceCall{step: probes.CaptureStep(c.Name, probes.StepBegin), desc: fmt.Sprintf("BeginCapture(%s, %s)", c.Stream, in.spec.Mode),
		thread: c.Thread}, exec(func() error { return in.dev.BeginCapture(c.Thread, in.streams[c.Stream], in.spec.Mode) }))
	if err != nil || !took {
		return err
	}
	info, err := in.dev.CaptureInfo(device.Main, in.streams[c.Stream])
	if err != nil {
		return fail(ErrSetup, nil, fmt.Errorf("CaptureInfo after BeginCapture(%s): %w", c.Stream, err))
	}
	oc.took, oc.id = true, info.ID
	return nil
}

// openOps issues the ops of an ops entry, each into its capture.
func (in *instance) openOps(st probes.Stage) error {
	for i, op := range st.Ops {
		to := st.Into[i]
		oc := in.region.open[to.Capture.Name]
		step := st.Step(i)
		if oc == nil || !oc.took {
			// Nothing is being captured: as for a capture whose begin failed, the op is not issued.
			in.tl.skipped(step, op, "the capture did not begin")
			in.res.Skipped = append(in.res.Skipped, step)
			in.oracle.Capture(to.Capture.Name, op, false)
			continue
		}
		in.capture, in.captureID, in.captured = to.Capture.Name, oc.id, oc.captured
		in.region.current = oc
		in.tl.capture(to.Capture)
		err := in.issueOp(step, op)
		oc.captured = in.captured
		in.capture, in.region.current = "", nil
		if err != nil {
			return err
		}
	}
	return nil
}

// endOpen ends capture c on its end thread and stream: its graph, if the end made one, joins the
// others with its ledger entries.
func (in *instance) endOpen(c *probes.Capture) error {
	oc := in.region.open[c.Name]
	delete(in.region.open, c.Name)
	in.region.ended = append(in.region.ended, c)
	if oc == nil || !oc.took {
		in.oracle.EndCapture(c.Name, false)
		return nil
	}
	var g device.Graph
	// The capture is in progress until its end returns, as a capture entry's is.
	in.capture, in.captureID, in.captured = c.Name, oc.id, oc.captured
	defer func() { in.capture = "" }()
	took, err := in.call(deviceCall{step: probes.CaptureStep(c.Name, probes.StepEnd), desc: fmt.Sprintf("EndCapture(%s) from %s", c.EndStream, c.EndThread),
		thread: c.EndThread}, exec(func() (err error) { g, err = in.dev.EndCapture(c.EndThread, in.streams[c.EndStream]); return }))
	if err != nil {
		return err
	}
	if took {
		from := len(in.res.Ledger)
		in.res.Ledger = append(in.res.Ledger, oc.ledger...)
		in.graphs[c.Name] = g
		in.entries[c.Name] = span{from, len(in.res.Ledger)}
		in.capturedInto(c)
		if err := in.checkGraph(c.Name, g); err != nil {
			return err
		}
	}
	in.oracle.EndCapture(c.Name, took)
	return nil
}

// cleanRegion ends the captures of the region that their ends left active, now that none is open.
func (in *instance) cleanRegion() error {
	var errs []error
	for _, c := range in.region.ended {
		if err := in.abandonCapture(c); err != nil {
			errs = append(errs, err)
		}
	}
	in.region = region{}
	return errors.Join(errs...)
}

// abandonRegion cleans up every capture of the region after err ended the instance, and returns
// err with the cleanup's own failures joined to it.
func (in *instance) abandonRegion(err error) error {
	in.capture, in.region.current = "", nil
	for _, oc := range in.region.open {
		in.region.ended = append(in.region.ended, oc.c)
	}
	in.region.open = nil
	if cerr := in.cleanRegion(); cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}

// noteOpen enters a's access into the ledger of the region capture the op being issued goes
// into: a new entry the first time that capture touches a, a wider access after. True when there
// is such a capture.
func (in *instance) noteOpen(a *allocation, how Access) bool {
	oc := in.region.current
	if oc == nil {
		return false
	}
	if i, ok := oc.at[a]; ok {
		oc.ledger[i].Access = oc.ledger[i].Access.With(how)
		return true
	}
	oc.at[a] = len(oc.ledger)
	oc.ledger = append(oc.ledger, Residency{Capture: oc.c.Name, Buffer: a.name, Range: a.ptr, Generation: a.gen, Access: how})
	return true
}
