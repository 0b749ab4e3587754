package bind

import (
	"errors"
	"unsafe"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/dl"
)

// FakeFaults are the fault-injection entry points of replaycheck's fake driver libraries
// (device/fake): replaycheck_fake_inject(kind, n) arms a fault of kind (device.FaultKind's
// number) due at the n-th call it counts, kind 0 disarming every fault not yet fired, and answers
// 0 or the platform's code; replaycheck_fake_fired(i, &kind, &n) reads the i-th fault that fired,
// 0 past the last. No real driver exports them: they are the fakes' test ABI, not any driver's.
//
// A binding puts Symbols in its function table and embeds a *FakeFaults in its Driver, which is
// then a FaultDriver; the Device injects faults where Injects says it can.
type FakeFaults struct{ inject, fired unsafe.Pointer }

// Symbols are the table entries that fill f, both optional.
func (f *FakeFaults) Symbols() []dl.Symbol {
	return []dl.Symbol{
		{Names: []string{"replaycheck_fake_inject"}, Slot: &f.inject, Optional: true},
		{Names: []string{"replaycheck_fake_fired"}, Slot: &f.fired, Optional: true},
	}
}

// Present reports whether the library exports both entry points.
func (f *FakeFaults) Present() bool { return f.inject != nil && f.fired != nil }

// Injects says whether the library exports the entry points.
func (f *FakeFaults) Injects() (bool, string) {
	if f.Present() {
		return true, ""
	}
	return false, errNoInjection.Error()
}

// InjectFault arms ft; an error when the library refused (non-zero) or exports no entry point.
func (f *FakeFaults) InjectFault(ft device.Fault) error { return f.injectAt(int(ft.Kind), ft.N) }

// ClearFaults disarms every fault not yet fired.
func (f *FakeFaults) ClearFaults() error { return f.injectAt(0, 0) }

// FiredFault is the i-th fault that fired, in order; false past the last.
func (f *FakeFaults) FiredFault(i int) (device.Fault, bool, error) { return f.firedAt(i) }

// errNoInjection is every fault-injection call on a library without the entry points.
var errNoInjection = errors.New("the library exports no replaycheck_fake_inject: a real driver cannot be made to fail on purpose (the fake libraries of device/fake can)")

var _ FaultDriver = (*FakeFaults)(nil)
