package run

import (
	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// tracedDevice announces each device call (announcer.call) before it forwards it, so a worker
// that dies inside a driver library or a runtime plugin has said where.
type tracedDevice struct {
	runtime.Device
	w *announcer
}

// traced is dev with its calls announced: Equal too when dev compares device memory in place
// (runtime.Comparer, a call into the driver: a device-to-host copy on CUDA), which Unwrap would
// otherwise let the engine make unannounced.
func traced(dev runtime.Device, w *announcer) runtime.Device {
	t := &tracedDevice{Device: dev, w: w}
	if c, ok := runtime.As[runtime.Comparer](dev); ok {
		return &tracedComparer{tracedDevice: t, c: c}
	}
	return t
}

// tracedComparer is a tracedDevice whose device compares in place.
type tracedComparer struct {
	*tracedDevice
	c runtime.Comparer
}

func (d *tracedComparer) Equal(t runtime.Thread, src runtime.Ptr, want []byte) (bool, error) {
	d.w.call("Equal")
	return d.c.Equal(t, src, want)
}

// Unwrap gives the optional interfaces of the device it traces (runtime.As): arming a fault or
// abandoning the device is not a call into the driver that could crash. Those that are (an
// in-place comparison, a graph walk) are announced by traced and WalkGraph; a new one must be too.
func (d *tracedDevice) Unwrap() runtime.Device { return d.Device }

func (d *tracedDevice) Malloc(t runtime.Thread, bytes int64) (runtime.Ptr, error) {
	d.w.call("Malloc")
	return d.Device.Malloc(t, bytes)
}

func (d *tracedDevice) Free(t runtime.Thread, p runtime.Ptr) error {
	d.w.call("Free")
	return d.Device.Free(t, p)
}

func (d *tracedDevice) Write(t runtime.Thread, dst runtime.Ptr, src []byte) error {
	d.w.call("Write")
	return d.Device.Write(t, dst, src)
}

func (d *tracedDevice) Read(t runtime.Thread, dst []byte, src runtime.Ptr) error {
	d.w.call("Read")
	return d.Device.Read(t, dst, src)
}

func (d *tracedDevice) AllocHost(t runtime.Thread, bytes int64, kind runtime.HostMemory) (runtime.Ptr, error) {
	d.w.call("AllocHost")
	return d.Device.AllocHost(t, bytes, kind)
}

func (d *tracedDevice) FreeHost(t runtime.Thread, p runtime.Ptr) error {
	d.w.call("FreeHost")
	return d.Device.FreeHost(t, p)
}

func (d *tracedDevice) HostWrite(dst runtime.Ptr, src []byte) error {
	d.w.call("HostWrite")
	return d.Device.HostWrite(dst, src)
}

func (d *tracedDevice) HostRead(dst []byte, src runtime.Ptr) error {
	d.w.call("HostRead")
	return d.Device.HostRead(dst, src)
}

func (d *tracedDevice) CreateStream(t runtime.Thread, f runtime.StreamFlags) (runtime.Stream, error) {
	d.w.call("CreateStream")
	return d.Device.CreateStream(t, f)
}

func (d *tracedDevice) DestroyStream(t runtime.Thread, s runtime.Stream) error {
	d.w.call("DestroyStream")
	return d.Device.DestroyStream(t, s)
}

func (d *tracedDevice) CreateEvent(t runtime.Thread) (runtime.Event, error) {
	d.w.call("CreateEvent")
	return d.Device.CreateEvent(t)
}

func (d *tracedDevice) DestroyEvent(t runtime.Thread, e runtime.Event) error {
	d.w.call("DestroyEvent")
	return d.Device.DestroyEvent(t, e)
}

func (d *tracedDevice) Fill(t runtime.Thread, s runtime.Stream, dst runtime.Ptr, value byte) error {
	d.w.call("Fill")
	return d.Device.Fill(t, s, dst, value)
}

func (d *tracedDevice) Copy(t runtime.Thread, s runtime.Stream, dst, src runtime.Ptr) error {
	d.w.call("Copy")
	return d.Device.Copy(t, s, dst, src)
}

func (d *tracedDevice) Axpy(t runtime.Thread, s runtime.Stream, y, x runtime.Ptr, a uint32) error {
	d.w.call("Axpy")
	return d.Device.Axpy(t, s, y, x, a)
}

func (d *tracedDevice) Record(t runtime.Thread, e runtime.Event, s runtime.Stream) error {
	d.w.call("Record")
	return d.Device.Record(t, e, s)
}

func (d *tracedDevice) Wait(t runtime.Thread, s runtime.Stream, e runtime.Event) error {
	d.w.call("Wait")
	return d.Device.Wait(t, s, e)
}

func (d *tracedDevice) SyncStream(t runtime.Thread, s runtime.Stream) error {
	d.w.call("SyncStream")
	return d.Device.SyncStream(t, s)
}

func (d *tracedDevice) SyncDevice(t runtime.Thread) error {
	d.w.call("SyncDevice")
	return d.Device.SyncDevice(t)
}

func (d *tracedDevice) QueryEvent(t runtime.Thread, e runtime.Event) (bool, error) {
	d.w.call("QueryEvent")
	return d.Device.QueryEvent(t, e)
}

func (d *tracedDevice) SyncEvent(t runtime.Thread, e runtime.Event) error {
	d.w.call("SyncEvent")
	return d.Device.SyncEvent(t, e)
}

func (d *tracedDevice) ExchangeCaptureMode(t runtime.Thread, mode runtime.CaptureMode) (runtime.CaptureMode, error) {
	d.w.call("ExchangeCaptureMode")
	return d.Device.ExchangeCaptureMode(t, mode)
}

func (d *tracedDevice) BeginCapture(t runtime.Thread, s runtime.Stream, mode runtime.CaptureMode) error {
	d.w.call("BeginCapture")
	return d.Device.BeginCapture(t, s, mode)
}

func (d *tracedDevice) EndCapture(t runtime.Thread, s runtime.Stream) (runtime.Graph, error) {
	d.w.call("EndCapture")
	return d.Device.EndCapture(t, s)
}

func (d *tracedDevice) CaptureInfo(t runtime.Thread, s runtime.Stream) (runtime.CaptureInfo, error) {
	d.w.call("CaptureInfo")
	return d.Device.CaptureInfo(t, s)
}

func (d *tracedDevice) Launch(t runtime.Thread, g runtime.Graph, s runtime.Stream) error {
	d.w.call("Launch")
	return d.Device.Launch(t, g, s)
}

func (d *tracedDevice) DestroyGraph(t runtime.Thread, g runtime.Graph) error {
	d.w.call("DestroyGraph")
	return d.Device.DestroyGraph(t, g)
}

func (d *tracedDevice) GraphNodes(t runtime.Thread, g runtime.Graph) ([]runtime.GraphNode, error) {
	d.w.call("GraphNodes")
	return d.Device.GraphNodes(t, g)
}

// WalkGraph is announced as the GraphNodes it stands for: it walks the traced device's graph.
func (d *tracedDevice) WalkGraph(t runtime.Thread, g runtime.Graph, visit func(runtime.GraphNode)) (int, error) {
	d.w.call("GraphNodes")
	return runtime.WalkGraph(d.Device, t, g, visit)
}

func (d *tracedDevice) Close() error {
	d.w.call("Close")
	return d.Device.Close()
}

// tracedRuntime is a runtime plugin's capture.Runtime, traced: the engine's device calls and its
// allocator calls are announced before they enter the plugin.
type tracedRuntime struct {
	*tracedDevice
	rt capture.Runtime
}

func (d *tracedRuntime) Provision(t runtime.Thread, slot guard.Slot, key string, cur runtime.Ptr, bytes int64) (runtime.Ptr, guard.Served, error) {
	d.w.call("Provision")
	return d.rt.Provision(t, slot, key, cur, bytes)
}

func (d *tracedRuntime) Release(t runtime.Thread, slot guard.Slot, key string, p runtime.Ptr) error {
	d.w.call("Release")
	return d.rt.Release(t, slot, key, p)
}

func (d *tracedRuntime) Holds(key string) (slot guard.Slot, p runtime.Ptr, ok bool) {
	d.w.call("Holds")
	return d.rt.Holds(key)
}

// SlotsVersion and SlotsChangedSince pass the runtime's slot log on (capture's snapshot uses it
// when the runtime has one): without them an isolated guarded instance would ask about every
// buffer before every call.
func (d *tracedRuntime) SlotsVersion() uint64 {
	_, now, _ := d.SlotsChangedSince(^uint64(0))
	return now
}

func (d *tracedRuntime) SlotsChangedSince(v uint64) ([]string, uint64, bool) {
	log, ok := d.rt.(capture.SlotLog)
	if !ok {
		return nil, 0, false
	}
	d.w.call("SlotsChangedSince")
	return log.SlotsChangedSince(v)
}

// Lacks passes on why the runtime lacks a capability (capture.Lacker): an isolated skip says what
// one in process says. It makes no call into the runtime's code.
func (d *tracedRuntime) Lacks(capability string) string {
	if l, ok := d.rt.(capture.Lacker); ok {
		return l.Lacks(capability)
	}
	return ""
}

func (d *tracedRuntime) ReservePool(t runtime.Thread, name string, bytes int64, host runtime.HostMemory) error {
	d.w.call("ReservePool")
	return d.rt.ReservePool(t, name, bytes, host)
}

func (d *tracedRuntime) PoolAlloc(t runtime.Thread, name string, bytes int64) (runtime.Ptr, error) {
	d.w.call("PoolAlloc")
	return d.rt.PoolAlloc(t, name, bytes)
}

func (d *tracedRuntime) PoolFree(t runtime.Thread, name string, p runtime.Ptr) error {
	d.w.call("PoolFree")
	return d.rt.PoolFree(t, name, p)
}

func (d *tracedRuntime) Retire(t runtime.Thread) error {
	d.w.call("Retire")
	return d.rt.Retire(t)
}

func (d *tracedRuntime) Finish() error {
	d.w.call("Finish")
	return d.rt.Finish()
}
