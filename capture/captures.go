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

func (in *instance) runCapture(c *probes.Capture) error {
	in.tl.enter(PhaseCapture)
	defer func(start time.Time) { in.times.capture += time.Since(start) }(time.Now())
	origin := in.streams[c.Stream]
	in.captureInto(c)
	took, err := in.call(deviceCall{step: probes.CaptureStep(c.Name, probes.StepBegin), desc: fmt.Sprintf("BeginCapture(%s, %s)", c.Stream, in.spec.Mode),
		thread: device.Main}, exec(func() error { return in.dev.BeginCapture(device.Main, origin, in.spec.Mode) }))
	if err != nil {
		return err
	}
	if !took {
		// Nothing is being captured: the ops would run eagerly and mean something else, so they are
		// not issued, and there is no graph to replay.
		for i, op := range c.Ops {
			step := probes.OpStep(probes.PhaseCapture, c.Name, i)
			in.tl.skipped(step, op, "the capture did not begin")
			in.res.Skipped = append(in.res.Skipped, step)
			// None took effect: an allocation among them leaves its name unallocated for the
			// oracle too, so the ops after the capture that name it are skipped on both sides.
			in.oracle.Capture(c.Name, op, false)
		}
		in.oracle.EndCapture(c.Name, false)
		return nil
	}
	info, err := in.dev.CaptureInfo(device.Main, origin)
	if err != nil {
		return in.abandonAfter(c, fail(ErrSetup, nil, fmt.Errorf("CaptureInfo after BeginCapture(%s): %w", c.Stream, err)))
	}
	// The capture stays "in progress" for the engine until its end returns: until then the engine
	// makes no synchronous call of its own (an unsafe call during a capture); a buffer allocated
	// meanwhile is initialised on the engine's own stream.
	in.capture, in.captureID, in.captured = c.Name, info.ID, 0
	from := len(in.res.Ledger) // the capture's entries follow: captures run one at a time
	defer func() { in.capture, in.batches = "", nil }()
	in.tl.capture(c)
	in.startBatches(c)
	if err := in.ops(probes.OpStep(probes.PhaseCapture, c.Name, 0), c.Ops); err != nil {
		return in.abandonAfter(c, err)
	}

	var g device.Graph
	took, err = in.call(deviceCall{step: probes.CaptureStep(c.Name, probes.StepEnd), desc: fmt.Sprintf("EndCapture(%s) from %s", c.EndStream, c.EndThread),
		thread: c.EndThread}, exec(func() (err error) { g, err = in.dev.EndCapture(c.EndThread, in.streams[c.EndStream]); return }))
	if err != nil {
		return in.abandonAfter(c, err)
	}
	if took {
		in.graphs[c.Name] = g
		in.entries[c.Name] = span{from, len(in.res.Ledger)}
		in.capturedInto(c)
		if err := in.checkGraph(c.Name, g); err != nil {
			return in.abandonAfter(c, err)
		}
	} else {
		// No graph: nothing will replay these ranges, so they explain no difference.
		in.res.Ledger = slices.DeleteFunc(in.res.Ledger, func(l Residency) bool { return l.Capture == c.Name })
	}
	in.oracle.EndCapture(c.Name, took)
	in.capture = ""
	return in.abandonCapture(c)
}

// abandonAfter cleans up a capture after err ended the instance and returns err, with the cleanup's
// own failure joined to it.
func (in *instance) abandonAfter(c *probes.Capture, err error) error {
	in.capture = ""
	if cerr := in.abandonCapture(c); cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}

// abandonCapture ends a capture the probe left active (its end failed or was never reached) so the
// streams are usable again; the graph, if any, is destroyed and never replayed.
func (in *instance) abandonCapture(c *probes.Capture) error {
	origin := in.streams[c.Stream]
	info, err := in.dev.CaptureInfo(device.Main, origin)
	if err != nil {
		return fail(ErrSetup, nil, fmt.Errorf("CaptureInfo(%s) after capture %s: %w", c.Stream, c.Name, err))
	}
	if info.Status == device.CaptureNone {
		return nil
	}
	defer in.tl.enter(in.tl.enter(PhaseCleanup))
	var g device.Graph
	g, err = in.dev.EndCapture(c.Thread, origin) // the thread that began it: main but for a begin entry's
	if err == nil {
		in.tl.record(Event{Call: fmt.Sprintf("EndCapture(%s) (cleanup: the probe left the capture active)", c.Stream), Thread: c.Thread}, nil)
		return in.must("DestroyGraph (cleanup)", func() error { return in.dev.DestroyGraph(device.Main, g) })
	}
	in.tl.record(Event{Call: fmt.Sprintf("EndCapture(%s) (cleanup)", c.Stream), Thread: c.Thread}, err)
	info, ierr := in.dev.CaptureInfo(device.Main, origin)
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
func (in *instance) inCapture(stream string, kernel bool) (bool, error) {
	if m := in.member; kernel && m.known && m.stream == stream && m.capture == in.captureID {
		return m.in, nil
	}
	info, err := in.dev.CaptureInfo(device.Main, in.streams[stream])
	if err != nil {
		return false, fmt.Errorf("CaptureInfo(%s) during capture %s: %w", stream, in.capture, err)
	}
	inside := info.Status == device.CaptureActive && info.ID == in.captureID
	if kernel {
		in.member = membership{known: true, stream: stream, capture: in.captureID, in: inside}
	}
	return inside, nil
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
func (in *instance) entriesOf(capture string) []Residency {
	s := in.entries[capture]
	return in.res.Ledger[s.off:s.end]
}

// noteCaptured enters the buffers an op captured into the capture in progress touches into the
// residency ledger.
func (in *instance) noteCaptured(acc probes.Access) {
	for _, sp := range acc.Writes {
		in.noteAccess(in.live(sp.Buffer), AccessWrite)
	}
	for _, sp := range acc.Reads {
		in.noteAccess(in.live(sp.Buffer), AccessRead)
	}
}

// noteAccess enters a's access into the ledger of the capture in progress: a new entry the first
// time the capture touches a, a wider access after.
func (in *instance) noteAccess(a *allocation, how Access) {
	if in.noteOpen(a, how) {
		return
	}
	if a.ledgerOf == in.capture {
		in.res.Ledger[a.inLedger].Access = in.res.Ledger[a.inLedger].Access.With(how)
		return
	}
	a.ledgerOf, a.inLedger = in.capture, len(in.res.Ledger)
	in.res.Ledger = append(in.res.Ledger, Residency{Capture: in.capture, Buffer: a.name, Range: a.ptr, Generation: a.gen, Access: how})
}
