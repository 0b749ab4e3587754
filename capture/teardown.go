package capture

import (
	"errors"
	"fmt"

	"github.com/replaycheck/replaycheck/device"
)

// teardown gives back everything the instance made, whatever state the body left: captures still
// active, graphs, host buffers, the runtime's slots and pools, thread capture modes, events and
// streams. Every failure is kept; any makes the instance an error.
func (in *instance) teardown() error {
	in.tl.enter(PhaseTeardown)
	in.tl.round = 0
	in.cur = deviceCall{desc: "teardown"}
	var errs []error
	keep := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	for _, c := range in.p.Captures {
		s := in.streams[c.Stream]
		info, err := in.dev.CaptureInfo(device.Main, s)
		keep("CaptureInfo "+c.Stream, err)
		if err == nil && info.Status != device.CaptureNone {
			g, err := in.dev.EndCapture(device.Main, s)
			keep("EndCapture "+c.Stream, err)
			if err == nil {
				keep("DestroyGraph", in.dev.DestroyGraph(device.Main, g))
			}
		}
	}
	for _, c := range in.p.Captures {
		if g, ok := in.graphs[c.Name]; ok {
			keep("DestroyGraph "+c.Name, in.dev.DestroyGraph(device.Main, g))
		}
	}
	if len(in.streams) > 0 || in.setup != 0 {
		keep("SyncDevice", in.dev.SyncDevice(device.Main))
	}
	// Host buffers have no slot: the engine frees what the probe left.
	for _, name := range in.liveNames() {
		if a := in.bufs[name]; a.place.Host != 0 {
			keep("FreeHost "+name, in.dev.FreeHost(device.Main, a.ptr))
		}
	}
	// Retire frees every slot's buffer, retained and arena included, and every pool's segment, as a
	// context's exit does.
	keep("Retire", in.dev.Retire(device.Main))
	for t, mode := range in.threadModes {
		_, err := in.dev.ExchangeCaptureMode(t, mode)
		keep(fmt.Sprintf("ExchangeCaptureMode(%s) on thread %s", mode, t), err)
	}
	for _, name := range in.p.Events {
		if e, ok := in.events[name]; ok {
			keep("DestroyEvent "+name, in.dev.DestroyEvent(device.Main, e))
		}
	}
	for _, name := range in.p.Streams {
		if s, ok := in.streams[name]; ok {
			keep("DestroyStream "+name, in.dev.DestroyStream(device.Main, s))
		}
	}
	if in.setup != 0 {
		keep("DestroyStream (engine setup stream)", in.dev.DestroyStream(device.Main, in.setup))
	}
	if len(errs) > 0 {
		return fail(ErrSetup, nil, fmt.Errorf("teardown: %w", errors.Join(errs...)))
	}
	return nil
}
