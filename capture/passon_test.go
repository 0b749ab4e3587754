package capture_test

import "github.com/replaycheck/replaycheck/device"

// passOn is what a test's wrapper w of inner states: the abilities inner states, restated for w
// on purpose (device.Extensions): the engine then finds the inner device's comparison, fault
// injection or session through the wrapper, the session handing it w (device.ThreadsVia). Not the
// session's view (Session): a wrapper's calls are not a view's.
func passOn(w, inner device.Device) device.Extensions {
	e := device.ExtensionsOf(inner)
	e.Of, e.Threads, e.Session = w, device.ThreadsVia(w, e.Threads), nil
	return e
}
