package sim

import (
	"sync/atomic"

	"github.com/replaycheck/replaycheck/device"
)

// Fault injection (device.FaultInjector). An allocation fault counts the Mallocs that pass their
// argument and capture checks, as FailMalloc does; a launch fault counts every Launch call and
// answers it before the device looks at anything. A lost device fails every call but Close with the
// profile's device-lost code. A hang blocks the Main or Other worker that makes the call, before
// the device lock is taken, so the device's counters stay readable; only Abandon lets go of it.

// armedFault is a fault waiting for its call: left counts the calls still to come, 1 = the next.
type armedFault struct {
	device.Fault
	left int
}

// faults is the injection state of one device, guarded by Device.faultMu (taken after Device.mu
// where both are held).
type faults struct {
	armed []armedFault
	fired []device.Fault
	// lost is set once a device-lost fault fired: the device answers device-lost from then on.
	// abandoned: Close returns at once; nothing waits for a hung call. Both are set under
	// Device.faultMu and read without it: every call asks both, and two lock round trips per
	// call were a seventh of a captured fill.
	lost, abandoned atomic.Bool
}

var _ device.FaultInjector = (*Device)(nil)
var _ device.Abandoner = (*Device)(nil)

// InjectFault arms f (see device.FaultInjector).
func (d *Device) InjectFault(f device.Fault) error {
	if !faultKindValid(f.Kind) || f.N < 1 {
		return d.fail("InjectFault", device.ClassInvalidValue, "cannot arm fault %q with N %d: want a known kind and N >= 1", f.Kind, f.N)
	}
	d.faultMu.Lock()
	defer d.faultMu.Unlock()
	d.faults.armed = append(d.faults.armed, armedFault{Fault: f, left: f.N})
	return nil
}

func faultKindValid(k device.FaultKind) bool {
	for _, v := range device.FaultKinds() {
		if v == k {
			return true
		}
	}
	return false
}

// ClearFaults disarms every fault that has not fired.
func (d *Device) ClearFaults() error {
	d.faultMu.Lock()
	defer d.faultMu.Unlock()
	d.faults.armed = nil
	return nil
}

// FiredFaults lists the faults fired since the device opened, in order.
func (d *Device) FiredFaults() []device.Fault {
	d.faultMu.Lock()
	defer d.faultMu.Unlock()
	return append([]device.Fault(nil), d.faults.fired...)
}

// Abandon gives the device up: Close returns at once and waits for no call, and later calls fail.
// Both workers are let go: the idle one ends now, and a call blocked by a hang stays blocked, with
// its worker, for the life of the process (in hang, a frame the suites' leak checks allow).
func (d *Device) Abandon() {
	if first := d.faults.abandoned.CompareAndSwap(false, true); first {
		d.main.Abandon()
		d.other.Abandon()
	}
}

// hang is a driver call that never returns: the worker making it blocks for good.
//
//go:noinline
func (d *Device) hang() { <-d.never }

func (d *Device) isAbandoned() bool { return d.faults.abandoned.Load() }

// take counts one call for the armed faults that call (kind's Call) fires, and returns the kind
// of the fault that fires now (0: none). Faults of several kinds on one call: the first armed
// that is due fires; the others still count the call.
func (d *Device) take(call string) device.FaultKind {
	d.faultMu.Lock()
	defer d.faultMu.Unlock()
	var fired device.FaultKind
	kept := d.faults.armed[:0]
	for _, a := range d.faults.armed {
		if a.Kind.Call() != call {
			kept = append(kept, a)
			continue
		}
		a.left--
		if a.left <= 0 && fired == 0 {
			fired = a.Kind
			d.faults.fired = append(d.faults.fired, a.Fault)
			if a.Kind == device.FaultDeviceLost {
				d.faults.lost.Store(true)
			}
			continue
		}
		// A fault due on a call another fault took fires at the next one.
		a.left = max(a.left, 1)
		kept = append(kept, a)
	}
	d.faults.armed = kept
	return fired
}

// lost reports whether a device-lost fault has fired.
func (d *Device) lost() bool { return d.faults.lost.Load() }

// preempt decides, before a call reaches its worker, whether the device answers it without doing
// it: device-lost after a lost fault, the fault a Launch fires. hang is true when the call must
// block forever on its worker.
func (d *Device) preempt(op string) (err error, hang bool) {
	if op == "Launch" {
		switch d.take("Launch") {
		case device.FaultLaunchFail:
			return d.fail(op, device.ClassInternal, "launch failed by injection (fault launch-fail)"), false
		case device.FaultDeviceLost:
			return d.fail(op, device.ClassDeviceLost, "the device was lost during the launch, by injection (fault device-lost); every later call fails"), false
		case device.FaultHang:
			return nil, true
		}
	}
	if d.lost() {
		return d.fail(op, device.ClassDeviceLost, "the device is lost (fault device-lost fired earlier); only Close releases it"), false
	}
	return nil, false
}

// allocFault reports, for a Malloc that passed its checks, whether an armed allocation fault fires.
func (d *Device) allocFault(bytes int64) error {
	if d.take("Malloc") == device.FaultAllocFail {
		return d.fail("Malloc", device.ClassOutOfMemory, "allocation of %d bytes failed by injection (fault alloc-fail)", bytes)
	}
	return nil
}

// Recovers: every Open makes an independent simulated device, so a lost or abandoned one leaves
// nothing behind that a fresh one could meet.
func (b *backend) Recovers(bool) (bool, string) { return true, "" }

var _ device.Recoverer = (*backend)(nil)
