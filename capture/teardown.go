package capture

import (
	"errors"
	"fmt"

	"github.com/replaycheck/replaycheck/device"
)

// teardown gives back everything the run made, whatever state the body left: captures still
// active, graphs, host buffers, the runtime's slots and pools, thread capture modes, events and
// streams. Every failure is kept; any makes the instance an error.
func (r *run) teardown() error {
	r.tl.enter(PhaseTeardown)
	r.tl.round = 0
	r.cur = deviceCall{desc: "teardown"}
	var errs []error
	keep := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	for _, c := range r.p.Captures {
		s := r.streams[c.Stream]
		info, err := r.dev.CaptureInfo(device.Main, s)
		keep("CaptureInfo "+c.Stream, err)
		if err == nil && info.Status != device.CaptureNone {
			g, err := r.dev.EndCapture(device.Main, s)
			keep("EndCapture "+c.Stream, err)
			if err == nil {
				keep("DestroyGraph", r.dev.DestroyGraph(device.Main, g))
			}
		}
	}
	for _, c := range r.p.Captures {
		if g, ok := r.graphs[c.Name]; ok {
			keep("DestroyGraph "+c.Name, r.dev.DestroyGraph(device.Main, g))
		}
	}
	if len(r.streams) > 0 || r.setup != 0 {
		keep("SyncDevice", r.dev.SyncDevice(device.Main))
	}
	// Host buffers have no slot: the engine frees what the probe left.
	for _, name := range r.liveNames() {
		if a := r.bufs[name]; a.place.Host != 0 {
			keep("FreeHost "+name, r.dev.FreeHost(device.Main, a.ptr))
		}
	}
	// Retire frees every slot's buffer, retained and arena included, and every pool's segment, as a
	// context's exit does.
	keep("Retire", r.dev.Retire(device.Main))
	for t, mode := range r.threadModes {
		_, err := r.dev.ExchangeCaptureMode(t, mode)
		keep(fmt.Sprintf("ExchangeCaptureMode(%s) on thread %s", mode, t), err)
	}
	for _, name := range r.p.Events {
		if e, ok := r.events[name]; ok {
			keep("DestroyEvent "+name, r.dev.DestroyEvent(device.Main, e))
		}
	}
	for _, name := range r.p.Streams {
		if s, ok := r.streams[name]; ok {
			keep("DestroyStream "+name, r.dev.DestroyStream(device.Main, s))
		}
	}
	if r.setup != 0 {
		keep("DestroyStream (engine setup stream)", r.dev.DestroyStream(device.Main, r.setup))
	}
	if len(errs) > 0 {
		return fail(ErrSetup, nil, fmt.Errorf("teardown: %w", errors.Join(errs...)))
	}
	return nil
}
