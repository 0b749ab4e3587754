package runtime

import "github.com/replaycheck/replaycheck/device"

// Runtime is the runtime under test as the engine drives it: every device call goes through it
// (it may refuse any with device.ClassRefused), and it owns the allocator a framework puts in
// front of the driver: slots that provision and grow named buffers, pools, and retirement of
// everything it holds. *guard.Device and *plugin.Runtime are two.
type Runtime interface {
	device.Device
	// Provision serves a buffer of bytes for the slot named key, growing cur when it is not zero.
	Provision(t device.Thread, slot Slot, key string, cur device.Ptr, bytes int64) (device.Ptr, Served, error)
	// Release gives the buffer the slot named key holds back.
	Release(t device.Thread, slot Slot, key string, p device.Ptr) error
	// Holds reports what the slot named key holds now.
	Holds(key string) (slot Slot, p device.Ptr, ok bool)
	ReservePool(t device.Thread, name string, bytes int64, host device.HostMemory) error
	PoolAlloc(t device.Thread, name string, bytes int64) (device.Ptr, error)
	PoolFree(t device.Thread, name string, p device.Ptr) error
	// Retire frees everything the runtime holds: every slot's buffer and every pool.
	Retire(t device.Thread) error
	// Finish lets go of the runtime once the instance is over and retired; the device it was
	// opened over stays open (its caller owns it).
	Finish() error
	// RuntimeExtensions states what the runtime can do beyond Runtime, for itself (Of is the
	// runtime); ask ExtensionsOf. Its device abilities are device.Device's Extensions.
	RuntimeExtensions() Extensions
}

// Extensions are what a runtime under test can do beyond Runtime, each nil when it cannot. As
// with device.Extensions, a runtime states them for itself, and ExtensionsOf answers none for
// those a wrapper inherited by embedding a runtime: a runtime of the user's own that embeds the
// reference guards does not pass the guards' slot log off as its own.
type Extensions struct {
	// Of is the runtime these extensions were stated for.
	Of Runtime
	// Lacks says why the runtime lacks a capability its device has.
	Lacks Lacker
	// SlotLog names the slots whose holdings changed, so that the engine's snapshot before a
	// guarded call asks about those only.
	SlotLog SlotLog
	// PrivatePools keeps graph-private pools (privatepool.go).
	PrivatePools PrivatePools
}

// ExtensionsOf is what r states it can do beyond Runtime: r.RuntimeExtensions() when they were
// stated for r itself, none otherwise. Of is r either way.
func ExtensionsOf(r Runtime) Extensions {
	if r == nil {
		return Extensions{}
	}
	if e := r.RuntimeExtensions(); device.Same(e.Of, r) {
		return e
	}
	return Extensions{Of: r}
}

// SlotLog is a runtime under test that logs which slots' holdings change (the reference guards, a
// plugin's slots_changed).
type SlotLog interface {
	// SlotsVersion is the log's version now.
	SlotsVersion() uint64
	// SlotsChangedSince names the slots whose holdings changed since version v, and the version
	// now; ok is false when the log cannot say (v too old, or no log).
	SlotsChangedSince(v uint64) (keys []string, now uint64, ok bool)
}

// UnderTest opens the runtime under test for one instance.
type UnderTest struct {
	// Name is recorded in every result (capture.Result.Runtime): Builtin for the reference guards.
	Name string
	// Open puts the runtime in front of dev; guarded is the instance's guard setting.
	Open func(dev device.Device, guarded bool) (Runtime, error)
	// Direct says the runtime is Go code that makes every device call on the goroutine that
	// called it, and whose Read and GraphNodes are its device's own (the reference guards). The
	// engine may then run the instance as one session on the device's thread and compare and walk
	// on the device itself. A runtime of the user's own leaves it false: its calls may come from
	// threads of its own, and it answers reads through its own code.
	Direct bool
}

// Builtin is the Name of replaycheck's reference runtime (runtime/guard), in program or kernel
// mode.
const Builtin = "builtin"

// Lacker says why a runtime under test lacks a capability its device has (a plugin's ABI
// version, or an entry it left NULL); the engine ends the skip reason with it.
type Lacker interface {
	// Lacks says why the runtime lacks capability, "" when it cannot say.
	Lacks(capability string) string
}

// GuardBackend is the Backend of every error the reference guards raise themselves (refusals,
// an exhausted pool, misuse of their API); errors they pass on keep the device's Backend.
const GuardBackend = "guard"

// PluginBackend starts the Backend of every error a loaded runtime plugin reports itself (a refusal
// or its own failure), followed by the plugin's name: "runtime:reference".
const PluginBackend = "runtime:"
