package device

import "reflect"

// Extensions are what a device can do beyond Device, each ability an object to call, nil when the
// device lacks it. A device states its own (Device.Extensions); callers ask ExtensionsOf.
//
// An ability reaches a caller only when the device it asks states it for itself. A wrapper that
// embeds a device inherits the inner device's Extensions method, and the abilities it returns
// would bypass the wrapper (a batch of kernels the wrapper never sees, a comparison that skips its
// bookkeeping): ExtensionsOf answers none for extensions stated for another device. A wrapper
// that may pass an ability on states it on purpose, for itself:
//
//	func (w *tracer) Extensions() device.Extensions {
//		e := device.ExtensionsOf(w.Device)
//		return device.Extensions{Of: w, Faults: e.Faults, Abandon: e.Abandon}
//	}
type Extensions struct {
	// Of is the device these extensions were stated for.
	Of Device
	// Faults makes the device fail on purpose (the simulator; the bindings over the fakes).
	Faults FaultInjector
	// Abandon gives the device up while a call into it may never return.
	Abandon Abandoner
	// Threads runs a session on one of the device's threads: its calls as one hand-off.
	Threads ThreadRunner
	// Session says whether the device is a session's view that runs its calls inline right now.
	Session SessionView
	// Watch runs a call into a runtime's own code under the engine's watch (the watched device).
	Watch CallWatcher
	// Compare compares device memory with host bytes where it lies.
	Compare Comparer
	// Fingerprint reduces device memory to fingerprints where it lies (device/cuda's kernel).
	Fingerprint Fingerprinter
	// Walk visits a graph's nodes without building their list.
	Walk GraphWalker
	// Kernels enqueues a batch of kernels (fills, copies and axpys) in one call.
	Kernels KernelEnqueuer
}

// ExtensionsOf is what d states it can do beyond Device: d.Extensions() when they were stated for
// d itself, none otherwise (a wrapper's inherited Extensions; see Extensions). Of is d either way.
func ExtensionsOf(d Device) Extensions {
	if d == nil {
		return Extensions{}
	}
	if e := d.Extensions(); Same(e.Of, d) {
		return e
	}
	return Extensions{Of: d}
}

// Same reports whether a and b are the same device, without the panic of == on two values of one
// type that cannot be compared.
func Same(a, b Device) (ok bool) {
	ta := reflect.TypeOf(a)
	if a == nil || ta != reflect.TypeOf(b) || !ta.Comparable() {
		return false
	}
	defer func() { _ = recover() }() // a comparable struct holding an incomparable interface value
	return a == b
}

// ThreadsVia is tr, the session of a device that w wraps, restated for w (ThreadRunner's rule for
// wrappers): its OnThread hands f w itself, not the inner device's view, so that the session's
// calls go through w, and run inline once the device finds them on its thread. Nil when tr is.
func ThreadsVia(w Device, tr ThreadRunner) ThreadRunner {
	if tr == nil {
		return nil
	}
	return threadsVia{w: w, tr: tr}
}

type threadsVia struct {
	w  Device
	tr ThreadRunner
}

func (v threadsVia) OnThread(t Thread, f func(on Device)) error {
	return v.tr.OnThread(t, func(Device) { f(v.w) })
}
