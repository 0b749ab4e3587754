//go:build cgo

package acl

import (
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/internal/dl"
)

// Injects says whether the library can inject faults (bind.FaultDriver): the fake libraries'
// entry points (dl.FakeFaults), which a real driver does not export.
func (d *driverImpl) Injects() (bool, string) {
	if d.fn.faults.Present() {
		return true, ""
	}
	return false, dl.NoFakeFaults
}

func (d *driverImpl) InjectFault(f runtime.Fault) int { return d.fn.faults.Inject(int(f.Kind), f.N) }

func (d *driverImpl) ClearFaults() int { return d.fn.faults.Inject(0, 0) }

func (d *driverImpl) FiredFault(i int) (runtime.Fault, bool) {
	kind, n, ok := d.fn.faults.Fired(i)
	return runtime.Fault{Kind: runtime.FaultKind(kind), N: n}, ok
}
