package capture_test

import (
	"context"
	"errors"
	"github.com/replaycheck/replaycheck/runtime"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// blockingOnly is a device, or a runtime, that cannot create non-blocking streams.
type blockingOnly struct{ device.Device }

func (d blockingOnly) Capabilities() device.Capabilities {
	c := d.Device.Capabilities()
	c.NonBlockingStreams = false
	return c
}

// blockingRuntime is the reference guards behind a front that cannot create non-blocking streams,
// as a runtime plugin's without create_stream_with_flags (ABI version 2, or the entry NULL).
type blockingRuntime struct {
	*guard.Device
	finished *int
	fails    error // what Finish returns after finishing
}

func (r blockingRuntime) Capabilities() device.Capabilities {
	return blockingOnly{r.Device}.Capabilities()
}

// sayingWhy is a blockingRuntime that says which capability it was asked about (runtime.Lacker).
type sayingWhy struct{ blockingRuntime }

func (r sayingWhy) Lacks(capability string) string { return "asked about " + capability }

// RuntimeExtensions states the Lacks (the embedded guards' own are stated for them, not for r).
func (r sayingWhy) RuntimeExtensions() runtime.Extensions { return runtime.Extensions{Of: r, Lacks: r} }

func (r blockingRuntime) Finish() error {
	*r.finished++
	if err := r.Device.Finish(); err != nil {
		return err
	}
	return r.fails
}

var _ = Describe("non-blocking streams", func() {
	const text = `
version: replaycheck/v1
set: t
probes:
  - name: legacy-beside-non-blocking
    hazard: default-stream
    buffers:
      a: {bytes: 4KiB}
      b: {bytes: 4KiB}
    streams: [main, side]
    non-blocking: [main]
    capture:
      ops:
        - fill: {dst: a, value: 0x3E}
        - fill: {dst: b, value: 0x3F, stream: default}
    replay:
      each:
        - fill: {dst: b, value: 0}
    expect: {guarded: refused}
`

	It("are created as the probe declares: CUDA lets legacy-stream work through beside them, and it escapes the graph", func() {
		dev := openSim("cuda")
		DeferCleanup(dev.Close)
		res := runOn(dev, parseProbe(text), device.Global, 3)
		Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
		var calls []string
		for _, e := range res.Timeline.Events() {
			calls = append(calls, e.Call)
		}
		Expect(calls).To(ContainElement("CreateStream main (non-blocking)"))
		Expect(calls).To(ContainElement("CreateStream side"))
	})

	It("skip the instance on a backend that cannot create them, saying which streams need them", func() {
		dev := openSim("cuda")
		DeferCleanup(dev.Close)
		res := runOn(blockingOnly{dev}, parseProbe(text), device.Global, 3)
		Expect(res.Outcome).To(Equal(probes.Skipped))
		Expect(res.Reason).To(Equal(`backend sim lacks capability "non-blocking-streams", which the probe's non-blocking streams need (main)`))
	})

	It("skip the instance when the runtime under test cannot create them, and finish the runtime", func() {
		dev := openSim("cuda")
		DeferCleanup(dev.Close)
		base := dev.Counters()
		finished := 0
		rut := &runtime.UnderTest{Name: "plugin-like", Open: func(d device.Device, guarded bool) (runtime.Runtime, error) {
			g, err := guard.New(d, guard.Program)
			return blockingRuntime{g, &finished, nil}, err
		}}
		res := capture.Run(context.Background(), dev, probes.Instance{Probe: parseProbe(text), Mode: device.Global, Replays: 3}, capture.Options{Runtime: rut})
		Expect(res.Outcome).To(Equal(probes.Skipped))
		Expect(res.Reason).To(Equal(`runtime plugin-like lacks capability "non-blocking-streams", which the probe's non-blocking streams need (main)`))
		Expect(finished).To(Equal(1))
		Expect(dev.Counters().Leaks(base)).To(BeEmpty())
	})

	It("end the skip reason with the runtime's own why, where it can say (runtime.Lacker)", func() {
		dev := openSim("cuda")
		DeferCleanup(dev.Close)
		finished := 0
		rut := &runtime.UnderTest{Name: "plugin-like", Open: func(d device.Device, guarded bool) (runtime.Runtime, error) {
			g, err := guard.New(d, guard.Program)
			return sayingWhy{blockingRuntime{g, &finished, nil}}, err
		}}
		res := capture.Run(context.Background(), dev, probes.Instance{Probe: parseProbe(text), Mode: device.Global, Replays: 3}, capture.Options{Runtime: rut})
		Expect(res.Outcome).To(Equal(probes.Skipped))
		Expect(res.Reason).To(Equal(`runtime plugin-like lacks capability "non-blocking-streams", which the probe's non-blocking streams need (main): asked about non-blocking-streams`))
	})

	It("end the skipped instance in error of kind runtime when the runtime fails to finish, as any instance", func() {
		dev := openSim("cuda")
		DeferCleanup(dev.Close)
		finished := 0
		rut := &runtime.UnderTest{Name: "plugin-like", Open: func(d device.Device, guarded bool) (runtime.Runtime, error) {
			g, err := guard.New(d, guard.Program)
			return blockingRuntime{g, &finished, errors.New("close: 2 slots still held")}, err
		}}
		res := capture.Run(context.Background(), dev, probes.Instance{Probe: parseProbe(text), Mode: device.Global, Replays: 3}, capture.Options{Runtime: rut})
		Expect(res.Outcome).To(Equal(probes.Errored))
		Expect(res.Reason).To(Equal("finishing runtime plugin-like: close: 2 slots still held"))
		Expect(res.Error).To(HaveField("Kind", capture.ErrRuntime))
		Expect(finished).To(Equal(1))
	})
})
