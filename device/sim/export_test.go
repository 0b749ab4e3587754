package sim

import "github.com/replaycheck/replaycheck/device"

// Test-only access to internals the public API deliberately hides.

// SetCallHook installs f to run at the start of every call body, on the worker thread, under the
// device lock. f must not call the Device.
func (d *Device) SetCallHook(f func(op string, t device.Thread)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hook = f
}

// InvalidateCapture marks the capture s belongs to as invalidated, whatever the profile, so the
// rules that concern invalidated captures can be exercised on every profile.
func (d *Device) InvalidateCapture(s device.Stream) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.streams[s]
	if st == nil || st.capture == nil {
		return false
	}
	st.capture.status = device.CaptureInvalidated
	return true
}

// GraphDeps returns each node's dependencies, in capture order.
func (d *Device) GraphDeps(g device.Graph) [][]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	gr := d.graphs[g]
	if gr == nil {
		return nil
	}
	out := make([][]int, gr.len())
	for i := range out {
		out[i] = gr.appendDeps([]int{}, i)
	}
	return out
}

// Knobs are a device's internal switches as tests set them; a zero field keeps the default.
type Knobs struct {
	// EqualSegment is the least range (a multiple of PageSize) one goroutine of Equal compares, so
	// tests can cut ranges of a few pages.
	EqualSegment int64
}

// Tune sets d's internal switches (the one way tests reach them) and returns what restores the
// previous ones. They are d's own: no other device sees them.
func (d *Device) Tune(k Knobs) (restore func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	prev := d.knobs
	d.knobs = knobs{equalSegment: k.EqualSegment}
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.knobs = prev
	}
}
