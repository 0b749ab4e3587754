//go:build !cgo

package acl

import (
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/dl"
)

// New fails without cgo: the binding loads the ACL runtime through cgo. The error wraps
// dl.ErrNoCgo and ErrNoLibrary.
func New(opts Options) (device.Backend, error) {
	return nil, library.NoLibrary(nil, dl.ErrNoCgo)
}
