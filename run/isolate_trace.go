package run

import (
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/runtime"
)

// tracedDevice announces each device call (announcer.call) before it forwards it, so a worker
// that dies inside a driver library or a runtime plugin has said where.
type tracedDevice struct {
	device.Device
	w *announcer
}

// traced is dev with its calls announced.
func traced(dev device.Device, w *announcer) device.Device {
	return &tracedDevice{Device: dev, w: w}
}

// Extensions passes on what the traced device states, announced where using it is a call into
// the driver: an in-place comparison (a device-to-host copy on CUDA), fingerprints (a kernel and
// its read-back) and a graph walk go through the tracer. Arming a fault, abandoning the device and running a session on its thread are not
// calls that could crash (a session's calls come back through the tracer). A batch of kernels is
// not passed on: the tracer announces each kernel's call. A new ability is passed on only here.
func (d *tracedDevice) Extensions() device.Extensions {
	e := device.ExtensionsOf(d.Device)
	out := device.Extensions{Of: d, Faults: e.Faults, Abandon: e.Abandon, Threads: device.ThreadsVia(d, e.Threads), Walk: d}
	if e.Compare != nil {
		out.Compare = tracedComparer{c: e.Compare, w: d.w}
	}
	if e.Fingerprint != nil {
		out.Fingerprint = tracedFingerprinter{f: e.Fingerprint, w: d.w}
	}
	return out
}

// tracedFingerprinter is the traced device's fingerprints, announced.
type tracedFingerprinter struct {
	f device.Fingerprinter
	w *announcer
}

func (f tracedFingerprinter) Fingerprints(t device.Thread, src device.Ptr, out []uint64) error {
	f.w.call("Fingerprints")
	return f.f.Fingerprints(t, src, out)
}

// tracedComparer is the traced device's in-place comparison, announced.
type tracedComparer struct {
	c device.Comparer
	w *announcer
}

func (c tracedComparer) Equal(t device.Thread, src device.Ptr, want []byte) (bool, error) {
	c.w.call("Equal")
	return c.c.Equal(t, src, want)
}

func (d *tracedDevice) Malloc(t device.Thread, bytes int64) (device.Ptr, error) {
	d.w.call("Malloc")
	return d.Device.Malloc(t, bytes)
}

func (d *tracedDevice) Free(t device.Thread, p device.Ptr) error {
	d.w.call("Free")
	return d.Device.Free(t, p)
}

func (d *tracedDevice) Write(t device.Thread, dst device.Ptr, src []byte) error {
	d.w.call("Write")
	return d.Device.Write(t, dst, src)
}

func (d *tracedDevice) Read(t device.Thread, dst []byte, src device.Ptr) error {
	d.w.call("Read")
	return d.Device.Read(t, dst, src)
}

func (d *tracedDevice) AllocHost(t device.Thread, bytes int64, kind device.HostMemory) (device.Ptr, error) {
	d.w.call("AllocHost")
	return d.Device.AllocHost(t, bytes, kind)
}

func (d *tracedDevice) FreeHost(t device.Thread, p device.Ptr) error {
	d.w.call("FreeHost")
	return d.Device.FreeHost(t, p)
}

func (d *tracedDevice) HostWrite(dst device.Ptr, src []byte) error {
	d.w.call("HostWrite")
	return d.Device.HostWrite(dst, src)
}

func (d *tracedDevice) HostRead(dst []byte, src device.Ptr) error {
	d.w.call("HostRead")
	return d.Device.HostRead(dst, src)
}

func (d *tracedDevice) CreateStream(t device.Thread, f device.StreamFlags) (device.Stream, error) {
	d.w.call("CreateStream")
	return d.Device.CreateStream(t, f)
}

func (d *tracedDevice) DestroyStream(t device.Thread, s device.Stream) error {
	d.w.call("DestroyStream")
	return d.Device.DestroyStream(t, s)
}

func (d *tracedDevice) CreateEvent(t device.Thread) (device.Event, error) {
	d.w.call("CreateEvent")
	return d.Device.CreateEvent(t)
}

func (d *tracedDevice) DestroyEvent(t device.Thread, e device.Event) error {
	d.w.call("DestroyEvent")
	return d.Device.DestroyEvent(t, e)
}

func (d *tracedDevice) Fill(t device.Thread, s device.Stream, dst device.Ptr, value byte) error {
	d.w.call("Fill")
	return d.Device.Fill(t, s, dst, value)
}

func (d *tracedDevice) Copy(t device.Thread, s device.Stream, dst, src device.Ptr) error {
	d.w.call("Copy")
	return d.Device.Copy(t, s, dst, src)
}

func (d *tracedDevice) Axpy(t device.Thread, s device.Stream, y, x device.Ptr, a uint32) error {
	d.w.call("Axpy")
	return d.Device.Axpy(t, s, y, x, a)
}

func (d *tracedDevice) Record(t device.Thread, e device.Event, s device.Stream) error {
	d.w.call("Record")
	return d.Device.Record(t, e, s)
}

func (d *tracedDevice) Wait(t device.Thread, s device.Stream, e device.Event) error {
	d.w.call("Wait")
	return d.Device.Wait(t, s, e)
}

func (d *tracedDevice) SyncStream(t device.Thread, s device.Stream) error {
	d.w.call("SyncStream")
	return d.Device.SyncStream(t, s)
}

func (d *tracedDevice) SyncDevice(t device.Thread) error {
	d.w.call("SyncDevice")
	return d.Device.SyncDevice(t)
}

func (d *tracedDevice) QueryEvent(t device.Thread, e device.Event) (bool, error) {
	d.w.call("QueryEvent")
	return d.Device.QueryEvent(t, e)
}

func (d *tracedDevice) SyncEvent(t device.Thread, e device.Event) error {
	d.w.call("SyncEvent")
	return d.Device.SyncEvent(t, e)
}

func (d *tracedDevice) ExchangeCaptureMode(t device.Thread, mode device.CaptureMode) (device.CaptureMode, error) {
	d.w.call("ExchangeCaptureMode")
	return d.Device.ExchangeCaptureMode(t, mode)
}

func (d *tracedDevice) BeginCapture(t device.Thread, s device.Stream, mode device.CaptureMode) error {
	d.w.call("BeginCapture")
	return d.Device.BeginCapture(t, s, mode)
}

func (d *tracedDevice) EndCapture(t device.Thread, s device.Stream) (device.Graph, error) {
	d.w.call("EndCapture")
	return d.Device.EndCapture(t, s)
}

func (d *tracedDevice) CaptureInfo(t device.Thread, s device.Stream) (device.CaptureInfo, error) {
	d.w.call("CaptureInfo")
	return d.Device.CaptureInfo(t, s)
}

func (d *tracedDevice) Launch(t device.Thread, g device.Graph, s device.Stream) error {
	d.w.call("Launch")
	return d.Device.Launch(t, g, s)
}

func (d *tracedDevice) DestroyGraph(t device.Thread, g device.Graph) error {
	d.w.call("DestroyGraph")
	return d.Device.DestroyGraph(t, g)
}

func (d *tracedDevice) GraphNodes(t device.Thread, g device.Graph) ([]device.GraphNode, error) {
	d.w.call("GraphNodes")
	return d.Device.GraphNodes(t, g)
}

// WalkGraph is announced as the GraphNodes it stands for: it walks the traced device's graph.
func (d *tracedDevice) WalkGraph(t device.Thread, g device.Graph, visit func(device.GraphNode)) (int, error) {
	d.w.call("GraphNodes")
	return device.WalkGraph(d.Device, t, g, visit)
}

func (d *tracedDevice) Close() error {
	d.w.call("Close")
	return d.Device.Close()
}

// tracedRuntime is a runtime plugin's runtime.Runtime, traced: the engine's device calls and its
// allocator calls are announced before they enter the plugin.
type tracedRuntime struct {
	*tracedDevice
	rt runtime.Runtime
}

func (d *tracedRuntime) Provision(t device.Thread, slot runtime.Slot, key string, cur device.Ptr, bytes int64) (device.Ptr, runtime.Served, error) {
	d.w.call("Provision")
	return d.rt.Provision(t, slot, key, cur, bytes)
}

func (d *tracedRuntime) Release(t device.Thread, slot runtime.Slot, key string, p device.Ptr) error {
	d.w.call("Release")
	return d.rt.Release(t, slot, key, p)
}

func (d *tracedRuntime) Holds(key string) (slot runtime.Slot, p device.Ptr, ok bool) {
	d.w.call("Holds")
	return d.rt.Holds(key)
}

// Extensions: a traced runtime states no device ability; every call goes through the tracer.
func (d *tracedRuntime) Extensions() device.Extensions { return device.Extensions{Of: d} }

// RuntimeExtensions passes on why the runtime lacks a capability (an isolated skip says what one
// in process says; no call into the runtime's code) and its slot log, announced (without it an
// isolated guarded instance would ask about every buffer before every call).
func (d *tracedRuntime) RuntimeExtensions() runtime.Extensions {
	e := runtime.ExtensionsOf(d.rt)
	out := runtime.Extensions{Of: d, Lacks: e.Lacks}
	if e.SlotLog != nil {
		out.SlotLog = tracedSlotLog{log: e.SlotLog, w: d.w}
	}
	return out
}

// tracedSlotLog is a traced runtime's slot log, announced: it is a call into the runtime's code.
type tracedSlotLog struct {
	log runtime.SlotLog
	w   *announcer
}

// SlotsVersion is announced as the slots_changed a plugin answers it with.
func (l tracedSlotLog) SlotsVersion() uint64 {
	l.w.call("SlotsChangedSince")
	return l.log.SlotsVersion()
}

func (l tracedSlotLog) SlotsChangedSince(v uint64) ([]string, uint64, bool) {
	l.w.call("SlotsChangedSince")
	return l.log.SlotsChangedSince(v)
}

func (d *tracedRuntime) ReservePool(t device.Thread, name string, bytes int64, host device.HostMemory) error {
	d.w.call("ReservePool")
	return d.rt.ReservePool(t, name, bytes, host)
}

func (d *tracedRuntime) PoolAlloc(t device.Thread, name string, bytes int64) (device.Ptr, error) {
	d.w.call("PoolAlloc")
	return d.rt.PoolAlloc(t, name, bytes)
}

func (d *tracedRuntime) PoolFree(t device.Thread, name string, p device.Ptr) error {
	d.w.call("PoolFree")
	return d.rt.PoolFree(t, name, p)
}

func (d *tracedRuntime) Retire(t device.Thread) error {
	d.w.call("Retire")
	return d.rt.Retire(t)
}

func (d *tracedRuntime) Finish() error {
	d.w.call("Finish")
	return d.rt.Finish()
}
