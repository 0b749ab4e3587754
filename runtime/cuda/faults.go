//go:build cgo

package cuda

/*
#include <stdint.h>

// The fake libraries' fault injection (runtime/fake): not part of any driver's ABI.
static int rc_fake_inject(void *fn, int kind, long n) { return ((int (*)(int, long))fn)(kind, n); }
static int rc_fake_fired(void *fn, long i, int *kind, long *n) { return ((int (*)(long, int *, long *))fn)(i, kind, n); }
*/
import "C"

import (
	"github.com/replaycheck/replaycheck/runtime"
)

// injects reports whether the library exports the fake libraries' fault-injection entry points:
// the fakes do, a real driver does not.
func (f *functions) injects() bool { return f.fakeInject != nil && f.fakeFired != nil }

// Injects says whether the library can inject faults (bind.FaultDriver).
func (d *driverImpl) Injects() (bool, string) {
	if d.fn.injects() {
		return true, ""
	}
	return false, "the library exports no replaycheck_fake_inject: a real driver cannot be made to fail on purpose (the fake libraries of runtime/fake can)"
}

func (d *driverImpl) InjectFault(f runtime.Fault) int {
	return int(C.rc_fake_inject(d.fn.fakeInject, C.int(f.Kind), C.long(f.N)))
}

func (d *driverImpl) ClearFaults() int { return int(C.rc_fake_inject(d.fn.fakeInject, 0, 0)) }

func (d *driverImpl) FiredFault(i int) (runtime.Fault, bool) {
	var kind C.int
	var n C.long
	if C.rc_fake_fired(d.fn.fakeFired, C.long(i), &kind, &n) == 0 {
		return runtime.Fault{}, false
	}
	return runtime.Fault{Kind: runtime.FaultKind(kind), N: int(n)}, true
}
