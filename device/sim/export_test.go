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

// SetEqualSegment sets the least range one goroutine of Equal compares and returns the previous
// value, so tests can cut ranges of a few pages.
func SetEqualSegment(n int64) int64 {
	prev := equalSegment
	equalSegment = n
	return prev
}
