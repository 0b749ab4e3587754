package capture_test

import (
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// batchSpy wraps a device and counts the batches the engine runs on it (runtime.ThreadRunner),
// passing them on.
type batchSpy struct {
	runtime.Device
	batches atomic.Int32
}

func (s *batchSpy) Unwrap() runtime.Device { return s.Device }
func (s *batchSpy) OnThread(t runtime.Thread, f func(runtime.Device)) error {
	s.batches.Add(1)
	// The view f gets must be the spy's: the device's own view would bypass it.
	return s.Device.(runtime.ThreadRunner).OnThread(t, func(runtime.Device) { f(s) })
}

// userRuntime is the reference guards opened as a runtime of the user's own: the engine cannot
// know where such a runtime makes its calls from.
var userRuntime = &capture.RuntimeUnderTest{Name: "user", Open: func(dev runtime.Device, guarded bool) (capture.Runtime, error) {
	return guard.New(dev, guard.Program)
}}

var _ = Describe("the instance as one batch on the device's Main thread", func() {
	It("runs a simulator instance as one batch, with the same outcome", func() {
		spy := &batchSpy{Device: openSim("cann")}
		DeferCleanup(spy.Close)
		res := runFaulted(spy, capture.Options{})
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(spy.batches.Load()).To(Equal(int32(1)))
	})

	It("still ends a hang inside the batch 'timeout in Launch', naming the call, the device abandoned", func() {
		spy := &batchSpy{Device: openSim("cann")}
		res := runFaulted(spy, capture.Options{Timeout: 300 * time.Millisecond}, "hang@2")
		Expect(spy.batches.Load()).To(Equal(int32(1)))
		Expect(res.Error.Kind).To(Equal(capture.ErrTimeout))
		Expect(res.Error.Call).To(Equal("Launch"))
		Expect(res.Reason).To(HavePrefix("timeout in Launch: Launch(graph main) on main did not return"))
		Expect(res.DeviceState).To(Equal(capture.DeviceAbandoned))
		Expect(res.Rounds).To(Equal(1))
		Expect(spy.Close()).To(Succeed(), "abandoned: Close waits for nothing")
	})

	It("does not batch under a runtime of the user's own, which may call from threads of its own (negative control)", func() {
		spy := &batchSpy{Device: openSim("cann")}
		DeferCleanup(spy.Close)
		res := runFaulted(spy, capture.Options{Runtime: userRuntime})
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(spy.batches.Load()).To(BeZero())
	})

	It("runs the instance on its own goroutine when the device refuses the batch (closed)", func() {
		spy := &batchSpy{Device: openSim("cann")}
		Expect(spy.Close()).To(Succeed())
		res := runFaulted(spy, capture.Options{})
		Expect(spy.batches.Load()).To(Equal(int32(1)))
		Expect(res.Outcome).To(Equal(probes.Errored))
		Expect(res.Reason).To(ContainSubstring("the device is closed"))
	})
})
