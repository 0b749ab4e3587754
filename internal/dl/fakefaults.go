package dl

import "unsafe"

// FakeFaults are the fault-injection entry points of replaycheck's fake driver libraries
// (device/fake): replaycheck_fake_inject(kind, n) arms a fault, replaycheck_fake_fired(i, &kind,
// &n) reads the i-th that fired. No real driver exports them; a binding puts Symbols in its table
// and can inject faults where Present.
type FakeFaults struct{ inject, fired unsafe.Pointer }

// Symbols are the table entries that fill f, both optional.
func (f *FakeFaults) Symbols() []Symbol {
	return []Symbol{
		{Names: []string{"replaycheck_fake_inject"}, Slot: &f.inject, Optional: true},
		{Names: []string{"replaycheck_fake_fired"}, Slot: &f.fired, Optional: true},
	}
}

// Present reports whether the library exports both entry points.
func (f *FakeFaults) Present() bool { return f.inject != nil && f.fired != nil }
