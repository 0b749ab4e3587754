package capture_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// lateThenStuck is a device whose fill returns only after the instance's deadline (within its
// grace) and whose frees then never return until released: the free that teardown makes is a
// call that began after the deadline.
type lateThenStuck struct {
	device.Device
	late    time.Duration
	release chan struct{}
}

func (d *lateThenStuck) Fill(t device.Thread, s device.Stream, p device.Ptr, v byte) error {
	time.Sleep(d.late)
	return d.Device.Fill(t, s, p, v)
}

func (d *lateThenStuck) Free(t device.Thread, p device.Ptr) error {
	<-d.release
	return d.Device.Free(t, p)
}

var _ = Describe("the watch", func() {
	It("gives a call that began after the deadline its own grace, and says exactly how long it was in flight", func() {
		dev := &lateThenStuck{Device: openSim("cann"), late: 350 * time.Millisecond, release: make(chan struct{})}
		p := parseProbe(header + `
  - name: p
    hazard: none
    buffers:
      b: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - fill: {dst: b, value: 7}
    expect: {guarded: exact, unguarded: exact}
`)
		started := time.Now()
		res := capture.Run(ctx(), dev, probes.Instance{Probe: p, Mode: device.Global, Replays: 1}, capture.Options{Runtime: builtin, Timeout: 300 * time.Millisecond})
		took := time.Since(started)
		close(dev.release) // the abandoned free returns; the instance's goroutine parks for good
		Expect(dev.Device.Close()).To(Succeed())

		Expect(res.Error).NotTo(BeNil())
		Expect(res.Error.Kind).To(Equal(capture.ErrTimeout))
		Expect(res.Error.Call).To(Equal("Free"), res.Reason)
		Expect(res.DeviceState).To(Equal(capture.DeviceAbandoned))
		last := lastEvent(res)
		Expect(last.Err).To(HavePrefix("no return: abandoned after "))
		Expect(last.Err).NotTo(ContainSubstring("more than"), "the free's start was read: it began after the deadline")
		inFlight, err := time.ParseDuration(strings.TrimPrefix(last.Err, "no return: abandoned after "))
		Expect(err).NotTo(HaveOccurred())
		// Its grace (100ms) counted from its own start, which was past the deadline: not from
		// the deadline, which would have given up on it at once.
		Expect(inFlight).To(BeNumerically(">=", 100*time.Millisecond))
		Expect(took).To(BeNumerically(">=", 350*time.Millisecond+100*time.Millisecond))
	})
})
