package capture_test

import (
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// sessionSpy wraps a device and counts the sessions the engine runs on it (device.ThreadRunner),
// passing them on.
type sessionSpy struct {
	device.Device
	sessions atomic.Int32
}

// Extensions passes the device's abilities on, its session through the spy.
func (s *sessionSpy) Extensions() device.Extensions {
	e := passOn(s, s.Device)
	e.Threads = s
	return e
}
func (s *sessionSpy) OnThread(t device.Thread, f func(device.Device)) error {
	s.sessions.Add(1)
	// The view f gets must be the spy's: the device's own view would bypass it.
	return device.ExtensionsOf(s.Device).Threads.OnThread(t, func(device.Device) { f(s) })
}

// userRuntime is the reference guards opened as a runtime of the user's own: the engine cannot
// know where such a runtime makes its calls from.
var userRuntime = &runtime.UnderTest{Name: "user", Open: func(dev device.Device, guarded bool) (runtime.Runtime, error) {
	return guard.New(dev, guard.Program)
}}

// fromOwnThreads is a device as a runtime of the user's own may use it: every allocation, copy,
// launch and sync made from a thread of the runtime's own while the caller waits.
type fromOwnThreads struct{ device.Device }

func (d fromOwnThreads) Malloc(t device.Thread, n int64) (p device.Ptr, err error) {
	elsewhere(func() { p, err = d.Device.Malloc(t, n) })
	return
}
func (d fromOwnThreads) Free(t device.Thread, p device.Ptr) (err error) {
	elsewhere(func() { err = d.Device.Free(t, p) })
	return
}
func (d fromOwnThreads) Copy(t device.Thread, s device.Stream, dst, src device.Ptr) (err error) {
	elsewhere(func() { err = d.Device.Copy(t, s, dst, src) })
	return
}
func (d fromOwnThreads) Launch(t device.Thread, g device.Graph, s device.Stream) (err error) {
	elsewhere(func() { err = d.Device.Launch(t, g, s) })
	return
}
func (d fromOwnThreads) SyncStream(t device.Thread, s device.Stream) (err error) {
	elsewhere(func() { err = d.Device.SyncStream(t, s) })
	return
}

// threadedRuntime is the reference guards as a runtime of the user's own that makes its device
// calls from threads of its own; inSession records whether it was opened inside the engine's
// session (the device it was handed runs Main calls inline: device.SessionView).
func threadedRuntime(inSession *atomic.Bool) *runtime.UnderTest {
	return &runtime.UnderTest{Name: "threaded", Open: func(dev device.Device, guarded bool) (runtime.Runtime, error) {
		sv := device.ExtensionsOf(dev).Session
		inSession.Store(sv != nil && sv.InSession(device.Main))
		return guard.New(fromOwnThreads{dev}, guard.Program)
	}}
}

var _ = Describe("the instance as one session on the device's Main thread", func() {
	It("runs a simulator instance as one session, with the same outcome", func() {
		spy := &sessionSpy{Device: openSim("cann")}
		DeferCleanup(spy.Close)
		res := runFaulted(spy, capture.Options{Runtime: builtin})
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(spy.sessions.Load()).To(Equal(int32(1)))
	})

	It("still ends a hang inside the session 'timeout in Launch', naming the call, the device abandoned", func() {
		spy := &sessionSpy{Device: openSim("cann")}
		res := runFaulted(spy, capture.Options{Runtime: builtin, Timeout: 300 * time.Millisecond}, "hang@2")
		Expect(spy.sessions.Load()).To(Equal(int32(1)))
		Expect(res.Error.Kind).To(Equal(capture.ErrTimeout))
		Expect(res.Error.Call).To(Equal("Launch"))
		Expect(res.Reason).To(HavePrefix("timeout in Launch: Launch(graph main) on main did not return"))
		Expect(res.DeviceState).To(Equal(capture.DeviceAbandoned))
		Expect(res.Rounds).To(Equal(1))
		Expect(spy.Close()).To(Succeed(), "abandoned: Close waits for nothing")
	})

	It("runs a runtime of the user's own that calls from threads of its own in the session, when it is handed the session's view", func() {
		dev := openSim("cann")
		DeferCleanup(dev.Close)
		var inSession atomic.Bool
		res := runFaulted(dev, capture.Options{Runtime: threadedRuntime(&inSession), Timeout: 5 * time.Second})
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(inSession.Load()).To(BeTrue(), "opened inside the session")
	})

	It("does not run a runtime of the user's own in a session through a wrapper, whose calls would wait for the session (negative control)", func() {
		spy := &sessionSpy{Device: openSim("cann")}
		DeferCleanup(spy.Close)
		var inSession atomic.Bool
		res := runFaulted(spy, capture.Options{Runtime: threadedRuntime(&inSession), Timeout: 5 * time.Second})
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(spy.sessions.Load()).To(BeZero())
		Expect(inSession.Load()).To(BeFalse())
		res = runFaulted(spy, capture.Options{Runtime: userRuntime})
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(spy.sessions.Load()).To(BeZero())
	})

	// The ACL and CUDA bindings run a session on their driver thread for main, where the device is
	// current: the built-in runtime's calls cost no hand-off. Their calls may not run on another OS
	// thread (the driver binds contexts and capture modes to threads), so they are no session view,
	// and a runtime of the user's own gets no session there.
	for _, lib := range []fake.Library{fake.ACL, fake.CUDA} {
		It("runs an instance on the "+lib.String()+" binding over its fake library as one session, and not under a runtime of the user's own", func(ctx SpecContext) {
			if why := backends.Unavailable(lib.String()); why != "" {
				Skip(why)
			}
			path, err := fake.Build(GinkgoT().TempDir(), lib, fake.Variant{})
			Expect(err).NotTo(HaveOccurred())
			b, err := backends.Open(lib.String(), backends.Config{Library: path})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(b.Close)
			dev, err := b.Open(ctx, 0)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(dev.Close)
			spy := &sessionSpy{Device: dev}
			res := runFaulted(spy, capture.Options{Runtime: builtin})
			Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
			Expect(spy.sessions.Load()).To(Equal(int32(1)))

			var inSession atomic.Bool
			res = runFaulted(dev, capture.Options{Runtime: threadedRuntime(&inSession), Timeout: 5 * time.Second})
			Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
			Expect(inSession.Load()).To(BeFalse())
		})
	}

	It("runs the instance on its own goroutine when the device refuses the session (closed)", func() {
		spy := &sessionSpy{Device: openSim("cann")}
		Expect(spy.Close()).To(Succeed())
		res := runFaulted(spy, capture.Options{Runtime: builtin})
		Expect(spy.sessions.Load()).To(Equal(int32(1)))
		Expect(res.Outcome).To(Equal(probes.Errored))
		Expect(res.Reason).To(ContainSubstring("the device is closed"))
	})
})

// A runtime may keep the device it was opened on and call it after its instance is over (a
// plugin's rc_runtime_close freeing a workspace when the run unloads it): the watch has nothing
// to time then, and no lock to lend, and the call goes straight through.
var _ = Describe("the watched device after its instance is over", func() {
	It("passes a runtime's late calls straight to the device", func() {
		dev := openSim("cann")
		DeferCleanup(dev.Close)
		var kept device.Device
		keeper := &runtime.UnderTest{Name: "keeper", Open: func(d device.Device, guarded bool) (runtime.Runtime, error) {
			kept = d
			return guard.New(d, guard.Program)
		}}
		res := runFaulted(dev, capture.Options{Runtime: keeper})
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		p, err := kept.Malloc(device.Main, 4096)
		Expect(err).NotTo(HaveOccurred())
		Expect(kept.Free(device.Main, p)).To(Succeed())
	})
})
