//go:build cgo

package bind

/*
#cgo CFLAGS: -std=c11 -Wall -Wextra -Werror
#include "fakefaults.h"
*/
import "C"

import (
	"fmt"

	"github.com/replaycheck/replaycheck/device"
)

// injectAt calls replaycheck_fake_inject; errNoInjection where the library does not export it.
func (f *FakeFaults) injectAt(kind, n int) error {
	if !f.Present() {
		return errNoInjection
	}
	if code := int(C.rc_bind_fake_inject(f.inject, C.int(kind), C.long(n))); code != 0 {
		return fmt.Errorf("replaycheck_fake_inject(%d, %d) refused: %d", kind, n, code)
	}
	return nil
}

// firedAt calls replaycheck_fake_fired; errNoInjection where the library does not export it.
func (f *FakeFaults) firedAt(i int) (device.Fault, bool, error) {
	if !f.Present() {
		return device.Fault{}, false, errNoInjection
	}
	var k C.int
	var n C.long
	if C.rc_bind_fake_fired(f.fired, C.long(i), &k, &n) == 0 {
		return device.Fault{}, false, nil
	}
	return device.Fault{Kind: device.FaultKind(k), N: int(n)}, true, nil
}
