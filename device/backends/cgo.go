//go:build cgo

package backends

import (
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/acl"
	"github.com/replaycheck/replaycheck/device/cuda"
)

// With cgo the device backends are in the binary; each finds its driver library when opened.
func init() {
	register("acl", func(cfg Config) (device.Backend, error) { return acl.New(acl.Options{Library: cfg.Library}) })
	register("cuda", func(cfg Config) (device.Backend, error) { return cuda.New(cuda.Options{Library: cfg.Library}) })
}
