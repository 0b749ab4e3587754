package bind

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/replaycheck/replaycheck/device"
)

// Opened is a backend's record of the devices it opened: a device leaves it when it closes, and
// the backend's Close closes those still open before the library they run on. The zero value is
// ready to use.
type Opened struct {
	mu      sync.Mutex
	devices map[*Device]bool
	closed  bool
	// pinned: a device was abandoned with a thread possibly blocked inside the library, which
	// must then stay loaded for the life of the process.
	pinned bool
	// poisoned is the first sticky error a device answered (device.Error.Sticky), nil while none
	// has or where the library Resets.
	poisoned *device.Error
	// Resets: closing a device resets the library's context, sticky errors included (the fake
	// libraries); a real CUDA driver does not, and the process must be relaunched.
	Resets bool
}

// Open runs open, which makes a device, under the record's lock, unless the backend is closed
// already; the device is recorded until it closes, and then onClose (nil: nothing) runs.
func (o *Opened) Open(codes Codes, open func() (*Device, func(), error)) (*Device, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, codes.Invalid("Open", "the backend is closed")
	}
	if o.poisoned != nil {
		return nil, codes.Invalid("Open", "%s", o.poisonedWhy())
	}
	d, onClose, err := open()
	if err != nil {
		return nil, err
	}
	if o.devices == nil {
		o.devices = map[*Device]bool{}
	}
	o.devices[d] = true
	d.onAbandon = func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.devices, d)
		o.pinned = true
	}
	if !o.Resets {
		d.onSticky = func(e *device.Error) {
			o.mu.Lock()
			defer o.mu.Unlock()
			if o.poisoned == nil {
				o.poisoned = e
			}
		}
	}
	d.OnClose(func() {
		if onClose != nil {
			onClose()
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.devices, d)
	})
	return d, nil
}

// Close closes every device still open, then lib, unless a device was abandoned: a thread may be
// blocked inside lib, which then stays loaded. A second Close does nothing.
func (o *Opened) Close(lib io.Closer) error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	devs := make([]*Device, 0, len(o.devices))
	for d := range o.devices {
		devs = append(devs, d)
	}
	o.mu.Unlock()
	var errs []error
	for _, d := range devs {
		errs = append(errs, d.Close())
	}
	o.mu.Lock()
	pinned := o.pinned
	o.mu.Unlock()
	if !pinned {
		errs = append(errs, lib.Close())
	}
	return errors.Join(errs...)
}

// OrUnknown is s, or "unknown" when a driver told nothing.
func OrUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// Recovers is the answer of a backend over a driver library (device.Recoverer): a lost device is
// closed, which releases the driver's device (aclrtResetDevice, cuDevicePrimaryCtxRelease), and a
// device opened after that is a fresh one; after an abandoned device a thread may be blocked inside
// the library, holding whatever it holds, so no further device is opened in this process; after a
// sticky error the driver allows no further work in this process, unless the library resets.
func (o *Opened) Recovers(lib string, abandoned bool) (bool, string) {
	if abandoned {
		return false, "a call into " + lib + " never returned and its thread is still blocked inside the library; a device opened in this process could block behind it (run with --isolate for a process per instance)"
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.poisoned != nil {
		return false, o.poisonedWhy()
	}
	return true, ""
}

// poisonedWhy says why no device opens after a sticky error; under o.mu.
func (o *Opened) poisonedWhy() string {
	e := o.poisoned
	return fmt.Sprintf("%s in %s (%d %s) poisoned this process's %s context, and the driver allows no further work in it: the process must be relaunched (run with --isolate for a process per instance)",
		e.Class, e.Op, e.Code, e.Name, e.Backend)
}
