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

// streamHolder is the reference guards behind a front that makes a stream of its own when it
// opens and destroys it when it finishes (unless keeps), as a runtime that pools streams may; with
// blocking it creates no non-blocking streams; with failsFinish its finish fails.
type streamHolder struct {
	*guard.Device
	s                            device.Stream
	keeps, blocking, failsFinish bool
}

func (h streamHolder) Capabilities() device.Capabilities {
	if h.blocking {
		return blockingOnly{h.Device}.Capabilities()
	}
	return h.Device.Capabilities()
}

func (h streamHolder) Finish() error {
	if h.failsFinish {
		return errors.New("the pool would not drain")
	}
	if !h.keeps {
		if err := h.Device.DestroyStream(device.Main, h.s); err != nil {
			return err
		}
	}
	return h.Device.Finish()
}

// holding is a runtime under test that opens a streamHolder.
func holding(keeps, blocking bool) *runtime.UnderTest {
	return holdingAs(streamHolder{keeps: keeps, blocking: blocking}, false)
}

// holdingAs is holding with h's settings, and an open that fails after making the stream when
// failsOpen.
func holdingAs(h streamHolder, failsOpen bool) *runtime.UnderTest {
	return &runtime.UnderTest{Name: "holder", Open: func(d device.Device, guarded bool) (runtime.Runtime, error) {
		g, err := guard.New(d, guard.Program)
		if err != nil {
			return nil, err
		}
		if h.s, err = g.CreateStream(device.Main, device.Blocking); err != nil {
			return nil, err
		}
		if failsOpen {
			return nil, errors.New("no device memory for the pool")
		}
		h.Device = g
		return h, nil
	}}
}

var _ = Describe("what a runtime under test makes when it opens", func() {
	const text = `
version: replaycheck/v1
set: t
probes:
  - name: fill
    hazard: none
    buffers:
      a: {bytes: 64}
    streams: [main]
    non-blocking: [main]
    capture:
      ops:
        - fill: {dst: a, value: 7}
    expect: {guarded: exact, unguarded: exact}
`
	run := func(rut *runtime.UnderTest) (*capture.Result, device.Device) {
		dev := openSim("cuda")
		DeferCleanup(dev.Close)
		in := probes.Instance{Probe: parseProbe(text), Mode: device.Global, Replays: 2}
		return capture.Run(context.Background(), dev, in, capture.Options{Runtime: rut}), dev
	}

	It("is no leak when it releases it when it finishes", func() {
		res, _ := run(holding(false, false))
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(res.Leaks).To(BeEmpty())
	})

	It("is a leak when it keeps it past its finish", func() {
		res, _ := run(holding(true, false))
		Expect(res.Outcome).To(Equal(probes.Errored))
		Expect(res.Reason).To(Equal("leaked after teardown: streams: 1 live, 0 before"))
	})

	It("is a leak when it keeps it past its finish in an instance skipped for what it lacks", func() {
		res, _ := run(holding(true, true))
		Expect(res.Outcome).To(Equal(probes.Errored))
		Expect(res.Error).To(HaveField("Kind", capture.ErrLeak))
		Expect(res.Reason).To(Equal("leaked after the runtime finished: streams: 1 live, 0 before"))
		Expect(res.Leaks).To(Equal([]string{"streams: 1 live, 0 before"}))
	})

	It("is a leak after an open that fails, told after the open's error, whose kind it keeps", func() {
		res, _ := run(holdingAs(streamHolder{}, true))
		Expect(res.Outcome).To(Equal(probes.Errored))
		Expect(res.Error).To(HaveField("Kind", capture.ErrSetup))
		Expect(res.Reason).To(Equal("opening runtime holder: no device memory for the pool; and leaked after the runtime failed to open: streams: 1 live, 0 before"))
		Expect(res.Error.Message).To(Equal(res.Reason))
		Expect(res.Leaks).To(Equal([]string{"streams: 1 live, 0 before"}))
	})

	It("is a leak after a skipped instance's finish fails", func() {
		res, _ := run(holdingAs(streamHolder{blocking: true, failsFinish: true}, false))
		Expect(res.Outcome).To(Equal(probes.Errored))
		Expect(res.Error).To(HaveField("Kind", capture.ErrRuntime))
		Expect(res.Reason).To(Equal("finishing runtime holder: the pool would not drain; and leaked after the runtime finished: streams: 1 live, 0 before"))
		Expect(res.Leaks).To(Equal([]string{"streams: 1 live, 0 before"}))
	})

	It("leaves a skipped instance skipped when it releases it", func() {
		res, _ := run(holding(false, true))
		Expect(res.Outcome).To(Equal(probes.Skipped), res.Reason)
	})
})
