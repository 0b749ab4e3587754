//go:build cgo

package backends

import (
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/acl"
	"github.com/replaycheck/replaycheck/runtime/cuda"
)

// With cgo the device backends are in the binary; each finds its driver library when opened.
func init() {
	register("acl", func(cfg Config) (runtime.Backend, error) { return acl.New(acl.Options{Library: cfg.Library}) })
	register("cuda", func(cfg Config) (runtime.Backend, error) { return cuda.New(cuda.Options{Library: cfg.Library}) })
}
