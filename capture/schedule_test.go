package capture_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// syncCounter sits under the runtime under test and records every call that waits for the
// device: synchronisation, and a synchronous transfer issued while stream work may be pending (one
// issued after a device-wide sync, such as verification's reads, waits for nothing).
type syncCounter struct {
	device.Device
	calls []string
	busy  bool // stream work was enqueued since the last SyncDevice
}

func (d *syncCounter) wait(call string) {
	d.calls = append(d.calls, call)
}

func (d *syncCounter) transfer(call string) {
	if d.busy {
		d.calls = append(d.calls, call+" (device busy)")
	}
}

func (d *syncCounter) SyncDevice(t device.Thread) error {
	d.wait("SyncDevice")
	d.busy = false
	return d.Device.SyncDevice(t)
}

func (d *syncCounter) SyncStream(t device.Thread, s device.Stream) error {
	d.wait("SyncStream")
	return d.Device.SyncStream(t, s)
}

func (d *syncCounter) SyncEvent(t device.Thread, e device.Event) error {
	d.wait("SyncEvent")
	return d.Device.SyncEvent(t, e)
}

func (d *syncCounter) Read(t device.Thread, dst []byte, src device.Ptr) error {
	d.transfer("Read")
	return d.Device.Read(t, dst, src)
}

func (d *syncCounter) Write(t device.Thread, dst device.Ptr, src []byte) error {
	d.transfer("Write")
	return d.Device.Write(t, dst, src)
}

func (d *syncCounter) Fill(t device.Thread, s device.Stream, dst device.Ptr, v byte) error {
	d.busy = true
	return d.Device.Fill(t, s, dst, v)
}

func (d *syncCounter) Copy(t device.Thread, s device.Stream, dst, src device.Ptr) error {
	d.busy = true
	return d.Device.Copy(t, s, dst, src)
}

func (d *syncCounter) Axpy(t device.Thread, s device.Stream, y, x device.Ptr, a uint32) error {
	d.busy = true
	return d.Device.Axpy(t, s, y, x, a)
}

func (d *syncCounter) Launch(t device.Thread, g device.Graph, s device.Stream) error {
	d.busy = true
	return d.Device.Launch(t, g, s)
}

// No observer effect: proving a refusal clean must not change the schedule. A guarded instance
// waits for the device only where the unguarded one does: exactly the same waits when nothing
// was refused, and never one more of any kind when something was (a refused op is not issued, so
// it may wait less).
var _ = Describe("a guarded instance's schedule", func() {
	cat, err := loadCatalog()
	if err != nil {
		It("loads the catalog", func() { Expect(err).NotTo(HaveOccurred()) })
		return
	}
	count := func(p *probes.Probe, guarded bool) (*capture.Result, []string) {
		dev := &syncCounter{Device: openSim("cann")}
		defer dev.Close()
		res := capture.Run(ctx(), dev, probes.Instance{Probe: p, Mode: device.Global, Guarded: guarded, Replays: 2}, capture.Options{Runtime: builtin})
		return res, dev.calls
	}
	tally := func(calls []string) map[string]int {
		m := map[string]int{}
		for _, c := range calls {
			m[c]++
		}
		return m
	}
	It("issues no device synchronisation the unguarded instance does not", func() {
		compared, identical := 0, 0
		for _, s := range cat.sets {
			for _, p := range s.Probes {
				if !contains(p.Guards, true) || !contains(p.Guards, false) || !contains(p.Modes, device.Global) {
					continue
				}
				gres, guarded := count(p, true)
				_, unguarded := count(p, false)
				compared++
				if gres.Refusal == nil && gres.Outcome != probes.Errored {
					Expect(guarded).To(Equal(unguarded), "%s: nothing was refused, yet the schedules differ", p.ID())
					identical++
					continue
				}
				g, u := tally(guarded), tally(unguarded)
				for kind, n := range g {
					Expect(n).To(BeNumerically("<=", u[kind]), "%s: the guarded instance made %d %s calls, the unguarded %d", p.ID(), n, kind, u[kind])
				}
			}
		}
		Expect(compared).To(BeNumerically(">", 50))
		Expect(identical).To(BeNumerically(">", 10))
	})
})

func contains[T comparable](xs []T, x T) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
