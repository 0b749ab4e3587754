//go:build !cgo

package plugin

import (
	"errors"
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/dl"
)

// ABIVersion is the RC_ABI_VERSION of include/replaycheck/runtime.h.
const ABIVersion = uint32(4)

// MinABIVersion is the oldest ABI version a cgo build loads.
const MinABIVersion = uint32(1)

// Plugin is a loaded runtime plugin library; without cgo none can be loaded.
type Plugin struct{ path string }

// Load fails: a binary built without cgo cannot load runtime plugins.
func Load(path string) (*Plugin, error) {
	return nil, fmt.Errorf("runtime plugin %s: runtime plugins need a cgo build: %w", path, dl.ErrNoCgo)
}

func (p *Plugin) Name() string         { return nameOf(p.path) }
func (p *Plugin) Version() uint32      { return 0 }
func (p *Plugin) Path() string         { return p.path }
func (p *Plugin) CloseRuntimes() error { return nil }
func (p *Plugin) Close() error         { return nil }

// Open fails: there is no plugin.
func (p *Plugin) Open(dev device.Device, guarded bool) (*Runtime, error) {
	return nil, fmt.Errorf("runtime plugins need a cgo build: %w", dl.ErrNoCgo)
}

var errNoCgo = errors.New("runtime plugins need a cgo build")

// Runtime is an opened runtime; without cgo none is ever made. It has the methods of the cgo
// build's Runtime so that callers compile the same.
type Runtime struct{ device.Device }

func (r *Runtime) Guarded() bool { return false }
func (r *Runtime) Provision(t device.Thread, slot runtime.Slot, key string, cur device.Ptr, bytes int64) (device.Ptr, runtime.Served, error) {
	return cur, runtime.NotServed, errNoCgo
}
func (r *Runtime) Release(t device.Thread, slot runtime.Slot, key string, p device.Ptr) error {
	return errNoCgo
}
func (r *Runtime) Holds(key string) (runtime.Slot, device.Ptr, bool) { return 0, device.Ptr{}, false }
func (r *Runtime) SlotsVersion() uint64                              { return 0 }
func (r *Runtime) SlotsChangedSince(v uint64) ([]string, uint64, bool) {
	return nil, 0, false
}
func (r *Runtime) CommitBank(t device.Thread, regions []runtime.Region) ([]device.Ptr, error) {
	return nil, errNoCgo
}
func (r *Runtime) ReservePool(t device.Thread, name string, bytes int64, host device.HostMemory) error {
	return errNoCgo
}
func (r *Runtime) PoolAlloc(t device.Thread, name string, bytes int64) (device.Ptr, error) {
	return device.Ptr{}, errNoCgo
}
func (r *Runtime) PoolFree(t device.Thread, name string, p device.Ptr) error { return errNoCgo }
func (r *Runtime) Retire(t device.Thread) error                              { return errNoCgo }
func (r *Runtime) Finish() error                                             { return errNoCgo }
func (r *Runtime) Lacks(capability string) string                            { return "" }
func (r *Runtime) Extensions() device.Extensions                             { return device.Extensions{Of: r} }
func (r *Runtime) RuntimeExtensions() runtime.Extensions {
	return runtime.Extensions{Of: r, Lacks: r, SlotLog: r}
}
