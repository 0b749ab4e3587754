package capture

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// Captures and the residency ledger: begin, the capture's ops, end, and cleaning up a capture the
// probe left active; every buffer a captured op names enters the ledger with its range and
// generation.

func (r *run) runCapture(c *probes.Capture) error {
	r.tl.enter(PhaseCapture)
	defer func(start time.Time) { r.times.capture += time.Since(start) }(time.Now())
	origin := r.streams[c.Stream]
	took, err := r.call(deviceCall{step: probes.CaptureStep(c.Name, probes.StepBegin), desc: fmt.Sprintf("BeginCapture(%s, %s)", c.Stream, r.in.Mode),
		thread: device.Main}, exec(func() error { return r.dev.BeginCapture(device.Main, origin, r.in.Mode) }))
	if err != nil {
		return err
	}
	if !took {
		// Nothing is being captured: the ops would run eagerly and mean something else, so they are
		// not issued, and there is no graph to replay.
		for i, op := range c.Ops {
			step := probes.OpStep(probes.PhaseCapture, c.Name, i)
			r.tl.skipped(step, op, "the capture did not begin")
			r.res.Skipped = append(r.res.Skipped, step)
			// None took effect: an allocation among them leaves its name unallocated for the
			// oracle too, so the ops after the capture that name it are skipped on both sides.
			r.oracle.Capture(c.Name, op, false)
		}
		r.oracle.EndCapture(c.Name, false)
		return nil
	}
	info, err := r.dev.CaptureInfo(device.Main, origin)
	if err != nil {
		return r.abandonAfter(c, fail(ErrSetup, nil, fmt.Errorf("CaptureInfo after BeginCapture(%s): %w", c.Stream, err)))
	}
	// The capture stays "in progress" for the engine until its end returns: until then the engine
	// makes no synchronous call of its own (an unsafe call during a capture); a buffer allocated
	// meanwhile is initialised on the engine's own stream.
	r.capture, r.captureID, r.captured = c.Name, info.ID, 0
	from := len(r.res.Ledger) // the capture's entries follow: captures run one at a time
	defer func() { r.capture, r.runs = "", nil }()
	r.tl.capture(c)
	r.startRuns(c)
	if err := r.ops(probes.PhaseCapture, c.Name, c.Ops); err != nil {
		return r.abandonAfter(c, err)
	}

	var g device.Graph
	took, err = r.call(deviceCall{step: probes.CaptureStep(c.Name, probes.StepEnd), desc: fmt.Sprintf("EndCapture(%s) from %s", c.EndStream, c.EndThread),
		thread: c.EndThread}, exec(func() (err error) { g, err = r.dev.EndCapture(c.EndThread, r.streams[c.EndStream]); return }))
	if err != nil {
		return r.abandonAfter(c, err)
	}
	if took {
		r.graphs[c.Name] = g
		r.entries[c.Name] = span{from, len(r.res.Ledger)}
		if err := r.checkGraph(c.Name, g); err != nil {
			return r.abandonAfter(c, err)
		}
	} else {
		// No graph: nothing will replay these ranges, so they explain no difference.
		r.res.Ledger = slices.DeleteFunc(r.res.Ledger, func(l Residency) bool { return l.Capture == c.Name })
	}
	r.oracle.EndCapture(c.Name, took)
	r.capture = ""
	return r.abandonCapture(c)
}

// abandonAfter cleans up a capture after err ended the run and returns err, with the cleanup's
// own failure joined to it.
func (r *run) abandonAfter(c *probes.Capture, err error) error {
	r.capture = ""
	if cerr := r.abandonCapture(c); cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}

// abandonCapture ends a capture the probe left active (its end failed or was never reached) so the
// streams are usable again; the graph, if any, is destroyed and never replayed.
func (r *run) abandonCapture(c *probes.Capture) error {
	origin := r.streams[c.Stream]
	info, err := r.dev.CaptureInfo(device.Main, origin)
	if err != nil {
		return fail(ErrSetup, nil, fmt.Errorf("CaptureInfo(%s) after capture %s: %w", c.Stream, c.Name, err))
	}
	if info.Status == device.CaptureNone {
		return nil
	}
	defer r.tl.enter(r.tl.enter(PhaseCleanup))
	var g device.Graph
	g, err = r.dev.EndCapture(device.Main, origin)
	if err == nil {
		r.tl.record(Event{Call: fmt.Sprintf("EndCapture(%s) (cleanup: the probe left the capture active)", c.Stream), Thread: device.Main}, nil)
		return r.must("DestroyGraph (cleanup)", func() error { return r.dev.DestroyGraph(device.Main, g) })
	}
	r.tl.record(Event{Call: fmt.Sprintf("EndCapture(%s) (cleanup)", c.Stream), Thread: device.Main}, err)
	info, ierr := r.dev.CaptureInfo(device.Main, origin)
	switch {
	case ierr != nil:
		return fail(ErrSetup, nil, fmt.Errorf("CaptureInfo(%s) after cleanup of capture %s: %w", c.Stream, c.Name, ierr))
	case info.Status != device.CaptureNone:
		return failf(ErrSetup, nil, "capture %s is still %s after cleanup: %w", c.Name, info.Status, err)
	}
	return nil
}

// inCapture reports whether work just enqueued on a probe stream went into the capture in
// progress: the stream is capturing, and into this capture (a stream that joined it by waiting on
// one of its events is). After kernel work the answer of the last question about the same stream
// is reused when it still holds (membership).
func (r *run) inCapture(stream string, kernel bool) (bool, error) {
	if m := r.member; kernel && m.known && m.stream == stream && m.capture == r.captureID {
		return m.in, nil
	}
	info, err := r.dev.CaptureInfo(device.Main, r.streams[stream])
	if err != nil {
		return false, fmt.Errorf("CaptureInfo(%s) during capture %s: %w", stream, r.capture, err)
	}
	in := info.Status == device.CaptureActive && info.ID == r.captureID
	if kernel {
		r.member = membership{known: true, stream: stream, capture: r.captureID, in: in}
	}
	return in, nil
}

// membership is the engine's last answer to whether a stream's work goes into the capture in
// progress. A capture of 100,000 ops would otherwise ask the device 100,000 times. It holds only
// while nothing could have changed it: every call but a fill, copy or axpy that took effect forgets
// it (a wait can fork a stream into a capture, an end or a rejection can end or invalidate one),
// and so does a new capture. On every platform stream work that succeeds leaves capture state as
// it was: what invalidates or ends a capture fails.
type membership struct {
	known   bool
	stream  string
	capture uint64
	in      bool
}

// entriesOf returns the ledger's entries of capture, a graph's: none before its end took.
func (r *run) entriesOf(capture string) []Residency {
	s := r.entries[capture]
	return r.res.Ledger[s.off:s.end]
}

// noteCaptured enters the buffers an op captured into the capture in progress touches into the
// residency ledger.
func (r *run) noteCaptured(acc probes.Access) {
	for _, sp := range acc.Writes {
		r.noteAccess(r.live(sp.Buffer), AccessWrite)
	}
	for _, sp := range acc.Reads {
		r.noteAccess(r.live(sp.Buffer), AccessRead)
	}
}

// noteAccess enters a's access into the ledger of the capture in progress: a new entry the first
// time the capture touches a, a wider access after.
func (r *run) noteAccess(a *allocation, how Access) {
	if a.ledgerOf == r.capture {
		r.res.Ledger[a.inLedger].Access = r.res.Ledger[a.inLedger].Access.With(how)
		return
	}
	a.ledgerOf, a.inLedger = r.capture, len(r.res.Ledger)
	r.res.Ledger = append(r.res.Ledger, Residency{Capture: r.capture, Buffer: a.name, Range: a.ptr, Generation: a.gen, Access: how})
}
