package bind

import (
	"sync"

	"github.com/replaycheck/replaycheck/device"
)

// FaultDriver is an optional extension of a Driver whose library can be made to fail on purpose:
// the fake driver libraries export an injection entry point (device/fake), a real driver does
// not. Each call is made on the calling worker's thread, where the device is current.
type FaultDriver interface {
	// Injects says whether the library can inject faults, and why not when it cannot.
	Injects() (bool, string)
	// InjectFault arms f; ClearFaults disarms what has not fired. Each fails when the library
	// refused (non-zero) or cannot inject faults.
	InjectFault(f device.Fault) error
	ClearFaults() error
	// FiredFault is the i-th fault (0-based) fired on the device, false when fewer fired; an
	// error when the library cannot inject faults.
	FiredFault(i int) (device.Fault, bool, error)
}

// injection is a device's fault-injection state. Its own lock, not the device's: a hang blocks
// inside a Driver call with the device's lock held, and nothing that asks about faults or abandons
// the device may wait for it.
type injection struct {
	mu        sync.Mutex
	armed     int
	fired     []device.Fault
	abandoned bool
}

// faultDriver is the Driver's FaultDriver when the library injects faults, nil otherwise.
func (d *Device) faultDriver() FaultDriver {
	if fd, ok := d.drv.(FaultDriver); ok {
		if can, _ := fd.Injects(); can {
			return fd
		}
	}
	return nil
}

// InjectFault arms f on the device (device.FaultInjector); not-supported on a library that
// cannot inject faults.
func (d *Device) InjectFault(f device.Fault) error {
	return d.call(device.Main, "InjectFault", func() error {
		fd := d.faultDriver()
		if fd == nil {
			return d.codes.Unsupported("InjectFault", "%s", d.noInjection())
		}
		if f.N < 1 || fd.InjectFault(f) != nil {
			return d.codes.Invalid("InjectFault", "the library refused to arm fault %v (kind %d, N %d)", f.Kind, f.Kind, f.N)
		}
		d.inj.mu.Lock()
		d.inj.armed++
		d.inj.mu.Unlock()
		return nil
	})
}

// noInjection says why the device cannot inject faults.
func (d *Device) noInjection() string {
	if fd, ok := d.drv.(FaultDriver); ok {
		if _, why := fd.Injects(); why != "" {
			return why
		}
	}
	return "the " + d.codes.Backend + " binding cannot inject faults"
}

// ClearFaults disarms every fault not fired.
func (d *Device) ClearFaults() error {
	return d.call(device.Main, "ClearFaults", func() error {
		fd := d.faultDriver()
		if fd == nil {
			return d.codes.Unsupported("ClearFaults", "%s", d.noInjection())
		}
		if fd.ClearFaults() != nil {
			return d.codes.Invalid("ClearFaults", "the library refused to disarm its faults")
		}
		d.inj.mu.Lock()
		d.inj.armed = 0
		d.inj.mu.Unlock()
		return nil
	})
}

// FiredFaults lists the faults fired since the device opened.
func (d *Device) FiredFaults() []device.Fault {
	d.inj.mu.Lock()
	defer d.inj.mu.Unlock()
	return append([]device.Fault(nil), d.inj.fired...)
}

// noteFired asks the library, right after a call that faults count (an allocation, a launch) and
// on its thread, which faults have fired. Only while some are armed: it costs a call.
func (d *Device) noteFired() {
	d.inj.mu.Lock()
	defer d.inj.mu.Unlock()
	if d.inj.armed == 0 {
		return
	}
	fd := d.faultDriver()
	if fd == nil {
		return
	}
	for {
		f, ok, err := fd.FiredFault(len(d.inj.fired))
		if err != nil || !ok {
			return
		}
		d.inj.fired = append(d.inj.fired, f)
		d.inj.armed = max(d.inj.armed-1, 0)
	}
}

// Abandon gives the device up (device.Abandoner): a call may be blocked in the library forever.
// Close then returns at once, later calls fail, and the backend's record lets go of the device and
// keeps the library loaded (a thread is inside it). Both workers are let go: the idle one ends now,
// the one inside the library if its call ever returns.
func (d *Device) Abandon() {
	d.inj.mu.Lock()
	first := !d.inj.abandoned
	d.inj.abandoned = true
	d.inj.mu.Unlock()
	if !first {
		return
	}
	for _, w := range d.workers {
		w.Abandon()
	}
	if d.onAbandon != nil {
		d.onAbandon()
	}
}

func (d *Device) isAbandoned() bool {
	d.inj.mu.Lock()
	defer d.inj.mu.Unlock()
	return d.inj.abandoned
}

var (
	_ device.FaultInjector = (*Device)(nil)
	_ device.Abandoner     = (*Device)(nil)
)
