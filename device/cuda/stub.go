//go:build !cgo

package cuda

import (
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/dl"
)

// New fails without cgo: the binding loads the CUDA driver through cgo. The error wraps
// dl.ErrNoCgo and ErrNoLibrary.
func New(opts Options) (device.Backend, error) {
	return nil, library.NoLibrary(nil, dl.ErrNoCgo)
}
