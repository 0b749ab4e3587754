//go:build !cgo

package bind

import (
	"fmt"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/dl"
)

// injectAt fails, naming the build: without cgo no library is loaded, so none can inject faults.
func (f *FakeFaults) injectAt(kind, n int) error {
	return fmt.Errorf("replaycheck_fake_inject: %w", dl.ErrNoCgo)
}

// firedAt fails, as injectAt.
func (f *FakeFaults) firedAt(i int) (device.Fault, bool, error) {
	return device.Fault{}, false, fmt.Errorf("replaycheck_fake_fired: %w", dl.ErrNoCgo)
}
