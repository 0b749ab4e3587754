package run

import (
	"context"
	"fmt"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/verdict"
)

// A device an instance lost (a device-lost answer: a poisoned card) or abandoned (a call that
// never returned) runs nothing more. Recover, called after every instance, gives it up and opens a
// fresh device in its place where the backend can (device.Recoverer: the simulator always; a
// binding over a driver library after a lost device, which closing resets, but not after an
// abandoned one, whose thread may hold the library). Where it cannot, the platform's device becomes
// a stand-in on which Instance runs nothing: every following instance is skipped, saying which
// device went and why. The entry of the instance that lost the device says which way it went
// (reports.Entry.DeviceChange).

// Recover looks at e, the entry of an instance that just ran on p.Device, and when the instance
// left the device lost or abandoned (capture.Result.DeviceState) replaces the device, or puts the
// stand-in in its place; e comes back saying which (DeviceChange). ctx done (the instance was
// abandoned): no fresh device is opened. InstanceOn calls it after every instance it runs in this
// process.
func (p *Platform) Recover(ctx context.Context, e reports.Entry) reports.Entry {
	if e.DeviceState == "" {
		return e
	}
	if _, gone := p.Device.(*noDevice); gone {
		return e
	}
	old := p.Device
	abandoned := e.DeviceState == capture.DeviceAbandoned
	change := &reports.DeviceChange{State: e.DeviceState, Device: old.Describe()}
	e.DeviceChange = change
	if abandoned {
		if a := device.ExtensionsOf(old).Abandon; a != nil {
			a.Abandon() // the engine did already; a device abandoned twice is abandoned once
		}
	} else if err := old.Close(); err != nil {
		change.Detail = fmt.Sprintf("closing the lost device reported: %v", err)
	}
	ok, why := false, fmt.Sprintf("backend %s cannot open a fresh device in place of one it lost", p.Name)
	if r, is := p.Backend.(device.Recoverer); is {
		ok, why = r.Recovers(abandoned)
	}
	if ok && ctx.Err() != nil {
		ok, why = false, "the run is stopping"
	}
	if ok {
		dev, err := p.Backend.Open(context.WithoutCancel(ctx), 0)
		if err == nil {
			p.Device = dev
			change.Replacement = dev.Describe()
			return e
		}
		why = fmt.Sprintf("opening a fresh device failed: %v", err)
	}
	change.Detail = joinDetail(change.Detail, why)
	p.Device = &noDevice{
		backend: old.Backend(), platform: old.Platform(), describe: old.Describe(),
		why: fmt.Sprintf("device %s was %s by %s, and no device replaced it: %s", old.Describe(), e.DeviceState, e.ID, why),
	}
	return e
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// noDevice stands in for a device that was lost or abandoned and could not be replaced: Instance
// runs nothing on it. It answers only what a report asks of a device (Backend, Platform,
// Describe, Capabilities, Counters, Close); the device calls are never made (the embedded Device
// is nil).
type noDevice struct {
	device.Device
	backend, platform, describe string
	why                         string
}

func (d *noDevice) Backend() string                   { return d.backend }
func (d *noDevice) Platform() string                  { return d.platform }
func (d *noDevice) Describe() string                  { return d.describe }
func (d *noDevice) Capabilities() device.Capabilities { return device.Capabilities{} }
func (d *noDevice) Counters() device.Counters         { return device.Counters{} }
func (d *noDevice) Close() error                      { return nil }

// skipped is the entry of an instance not run because no device was left, judged (a skip).
func (d *noDevice) skipped(in probes.Instance, c Config, baseline *verdict.Baseline) reports.Entry {
	return unrunEntry(in, c, d.backend, d.platform, d.describe, baseline, probes.Skipped, "not run: "+d.why, nil)
}
