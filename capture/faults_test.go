package capture_test

import (
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// faultProbe allocates three buffers, the third in an op of the probe, and replays a copy.
const faultProbe = header + `
  - name: p
    hazard: none
    buffers:
      a: {bytes: 4KiB, init: iota8}
      b: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - copy: {dst: b, src: a}
    between:
      - alloc: {buffer: c, bytes: 1KiB, init: fill:0x05}
    expect: {guarded: exact, unguarded: exact}
`

// faultTarget is a backend the faults are injected on: the simulator on a profile, or a binding
// over its fake library.
type faultTarget struct {
	name    string
	backend string
	lib     fake.Library // 0: the simulator
	profile string
}

var faultTargets = []faultTarget{
	{name: "the simulator (cann)", backend: "sim", profile: "cann"},
	{name: "the simulator (cuda)", backend: "sim", profile: "cuda"},
	{name: "the acl binding on its fake library", backend: "acl", lib: fake.ACL},
	{name: "the cuda binding on its fake library", backend: "cuda", lib: fake.CUDA},
}

// leftBehind is what the device still holds that it did not hold at base: the assertion, after
// every instance, that the instance released everything it made.
func expectReleased(dev device.Device, base device.Counters) {
	GinkgoHelper()
	Expect(dev.Counters().Leaks(base)).To(BeEmpty(), "device objects the instance left behind")
}

// runFaulted runs faultProbe on dev with faults injected by the run (Options.Faults).
func runFaulted(dev device.Device, opt capture.Options, faults ...string) *capture.Result {
	GinkgoHelper()
	for _, f := range faults {
		pf, err := probes.ParseFault(f)
		Expect(err).NotTo(HaveOccurred())
		opt.Faults = append(opt.Faults, pf)
	}
	return capture.Run(ctx(), dev, probes.Instance{Probe: parseProbe(faultProbe), Mode: device.Global, Replays: 3}, opt)
}

// expectClean runs faultProbe without faults on dev: the run goes on after a fault.
func expectClean(dev device.Device) {
	GinkgoHelper()
	base := dev.Counters()
	res := runFaulted(dev, capture.Options{Runtime: builtin})
	Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
	Expect(res.Faults).To(BeEmpty())
	expectReleased(dev, base)
}

// Every fault kind on the simulator (both profiles) and on the ACL and CUDA bindings over their
// fake libraries: the outcome, the cause, the device released to its baseline (or, lost, closed
// and replaced), and the next instance running.
var _ = Describe("injected faults", func() {
	for _, t := range faultTargets {
		Describe(t.name, Ordered, func() {
			var (
				b   device.Backend
				lib string
				dev device.Device
			)
			open := func() device.Device {
				GinkgoHelper()
				d, err := b.Open(ctx(), 0)
				Expect(err).NotTo(HaveOccurred())
				Expect(d.Capabilities().FaultInjection).To(BeTrue())
				return d
			}
			BeforeAll(func() {
				if why := backends.Unavailable(t.backend); why != "" {
					Skip(why)
				}
				cfg := backends.Config{Profile: t.profile}
				if t.lib != 0 {
					var err error
					lib, err = fake.Build(GinkgoT().TempDir(), t.lib, fake.Variant{})
					Expect(err).NotTo(HaveOccurred())
					cfg.Library = lib
				}
				var err error
				b, err = backends.Open(t.backend, cfg)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(func() { Expect(b.Close()).To(Succeed()) })
				dev = open()
				// The specs replace dev (after a lost or abandoned one): close whichever is last.
				DeferCleanup(func() { Expect(dev.Close()).To(Succeed()) })
			})

			It("alloc-fail: the N-th allocation fails, the instance ends in error, the run goes on", func() {
				base := dev.Counters()
				res := runFaulted(dev, capture.Options{Runtime: builtin}, "alloc-fail@2")
				Expect(res.Outcome).To(Equal(probes.Errored), res.Reason)
				Expect(res.Error.Kind).To(Equal(capture.ErrFault))
				Expect(res.Reason).To(HavePrefix("injected fault alloc-fail@2 fired in Provision(plain b, 4096): "))
				Expect(res.Reason).To(ContainSubstring("out-of-memory"))
				Expect(res.Reason).To(ContainSubstring("fault alloc-fail"), "the library's own detail says it was injected")
				Expect(res.Faults).To(ConsistOf(SatisfyAll(HaveField("Fault", "alloc-fail@2"), HaveField("Fired", true),
					HaveField("Detail", HavePrefix("fired in the device call Malloc")))))
				Expect(res.DeviceState).To(BeEmpty())
				Expect(res.Leaks).To(BeEmpty())
				expectReleased(dev, base)
				expectClean(dev)
			})

			It("alloc-fail in a probe's own op, from the probe's faults key: an error, not a rejection", func() {
				p := parseProbe(faultProbe)
				p.Faults = []probes.Fault{{Kind: device.FaultAllocFail, At: 3}}
				base := dev.Counters()
				res := capture.Run(ctx(), dev, probes.Instance{Probe: p, Mode: device.Global, Replays: 3}, capture.Options{Runtime: builtin})
				Expect(res.Outcome).To(Equal(probes.Errored), res.Reason)
				Expect(res.Error.Kind).To(Equal(capture.ErrFault))
				Expect(res.Error.Step).NotTo(BeNil(), res.Reason)
				Expect(res.Error.Step.String()).To(Equal("between op 1"))
				Expect(res.Rejection).To(BeNil())
				expectReleased(dev, base)
				expectClean(dev)
			})

			It("launch-fail: the launch of round K fails, the instance ends in error, the run goes on", func() {
				base := dev.Counters()
				res := runFaulted(dev, capture.Options{Runtime: builtin}, "launch-fail@2")
				Expect(res.Outcome).To(Equal(probes.Errored), res.Reason)
				Expect(res.Error.Kind).To(Equal(capture.ErrFault))
				Expect(res.Reason).To(HavePrefix("injected fault launch-fail@2 fired in Launch(graph main) on main: "))
				Expect(res.Reason).To(ContainSubstring(": internal (code "))
				Expect(res.Rounds).To(Equal(1))
				Expect(res.Error.Step.String()).To(Equal("replay 2 main"))
				Expect(res.DeviceState).To(BeEmpty())
				expectReleased(dev, base)
				expectClean(dev)
			})

			It("a fault that does not fire says why, and the instance is judged as if there were none", func() {
				res := runFaulted(dev, capture.Options{Runtime: builtin}, "device-lost@5", "alloc-fail@9")
				Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
				Expect(res.Faults).To(Equal([]capture.FaultRecord{
					{Fault: "device-lost@5", Detail: "not armed: the instance replays 3 rounds"},
					{Fault: "alloc-fail@9", Detail: "did not fire: the instance made fewer than 9 device allocations"},
				}))
				expectClean(dev)
			})

			It("device-lost: the instance ends in error, the device stays lost until closed, a fresh one runs the next", func() {
				res := runFaulted(dev, capture.Options{Runtime: builtin}, "device-lost@2")
				Expect(res.Outcome).To(Equal(probes.Errored), res.Reason)
				Expect(res.Error.Kind).To(Equal(capture.ErrDeviceLost))
				Expect(res.Reason).To(HavePrefix("injected fault device-lost@2 fired in Launch(graph main) on main: "))
				Expect(res.Reason).To(ContainSubstring("device-lost"))
				Expect(res.DeviceState).To(Equal(capture.DeviceLost))
				Expect(res.Timeline.Events()).To(ContainElement(HaveField("Skipped", ContainSubstring("the device is lost"))))

				// A poisoned card: every later call fails device-lost.
				_, err := dev.Malloc(device.Main, 512)
				Expect(device.ClassOf(err)).To(Equal(device.ClassDeviceLost), "%v", err)
				// Closing it (a reset) releases everything the instance made.
				Expect(dev.Close()).To(Succeed())
				Expect(dev.Counters().Leaks(device.Counters{})).To(BeEmpty())

				ok, why := b.(device.Recoverer).Recovers(false)
				Expect(ok).To(BeTrue(), why)
				dev = open()
				Expect(dev.Counters().Leaks(device.Counters{})).To(BeEmpty(), "the fresh device holds nothing")
				expectClean(dev)
			})

			It("hang: the launch never returns, the instance ends 'timeout in Launch', the device is abandoned", func() {
				res := runFaulted(dev, capture.Options{Runtime: builtin, Timeout: 300 * time.Millisecond}, "hang@2")
				Expect(res.Outcome).To(Equal(probes.Errored), res.Reason)
				Expect(res.Error.Kind).To(Equal(capture.ErrTimeout))
				Expect(res.Error.Call).To(Equal("Launch"))
				Expect(res.Reason).To(HavePrefix("timeout in Launch: Launch(graph main) on main did not return within the instance's 300ms timeout (and 100ms of grace); device "))
				Expect(res.Reason).To(ContainSubstring("device " + dev.Describe() + " abandoned"))
				Expect(res.DeviceState).To(Equal(capture.DeviceAbandoned))
				Expect(res.Faults).To(ConsistOf(SatisfyAll(HaveField("Fault", "hang@2"), HaveField("Fired", true))))
				Expect(res.Rounds).To(Equal(1))
				last := lastEvent(res)
				Expect(last.Call).To(Equal("Launch(graph main) on main"))
				// The launch began before the deadline, when calls' starts are not read: how long
				// it was in flight is known from below, by the deadline and its grace.
				Expect(last.Err).To(HavePrefix("no return: abandoned after more than "))
				Expect(time.ParseDuration(strings.TrimPrefix(last.Err, "no return: abandoned after more than "))).To(BeNumerically(">=", 100*time.Millisecond))
				// Abandoned: closing it waits for nothing.
				Expect(dev.Close()).To(Succeed())

				ok, why := b.(device.Recoverer).Recovers(true)
				if t.lib != 0 {
					Expect(ok).To(BeFalse())
					Expect(why).To(ContainSubstring(lib))
					return // the library keeps its blocked thread: b.Close leaves it loaded
				}
				Expect(ok).To(BeTrue(), why)
				dev = open()
				expectClean(dev)
			})
		})
	}

	for _, l := range []fake.Library{fake.ACL, fake.CUDA} {
		It(fmt.Sprintf("skips the instance on a %s library without the injection entry point, as on a real driver", l), func() {
			if why := backends.Unavailable(l.String()); why != "" {
				Skip(why)
			}
			path, err := fake.Build(GinkgoT().TempDir(), l, fake.Variant{Omit: fake.FaultEntryPoints[0]})
			Expect(err).NotTo(HaveOccurred())
			b, err := backends.Open(l.String(), backends.Config{Library: path})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(b.Close)
			dev, err := b.Open(ctx(), 0)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(dev.Close)
			Expect(dev.Capabilities().FaultInjection).To(BeFalse())
			res := runFaulted(dev, capture.Options{Runtime: builtin}, "launch-fail@1")
			Expect(res.Outcome).To(Equal(probes.Skipped))
			Expect(res.Reason).To(Equal(fmt.Sprintf(`backend %s lacks capability "fault-injection", which the injected faults need (launch-fail@1): a real driver library cannot be made to fail on purpose`, l)))
			Expect(dev.(device.FaultInjector).InjectFault(device.Fault{Kind: device.FaultHang, N: 1})).To(MatchError(ContainSubstring("exports no replaycheck_fake_inject")))
		})
	}

	// The negative control of expectReleased: a runtime under test whose retirement frees nothing
	// (the teardown of its slots broken) leaves the declared buffers behind after a fault, and the
	// assertion the specs above make fails.
	It("the release assertion fails when teardown is broken", func() {
		dev := openSim("cann")
		DeferCleanup(dev.Close)
		base := dev.Counters()
		broken := &runtime.UnderTest{Name: "no-retire", Open: func(d device.Device, guarded bool) (runtime.Runtime, error) {
			g, err := guard.New(d, guard.Program)
			return noRetire{g}, err
		}}
		res := runFaulted(dev, capture.Options{Runtime: broken}, "launch-fail@2")
		Expect(res.Outcome).To(Equal(probes.Errored))
		Expect(res.Error.Kind).To(Equal(capture.ErrFault), "the fault is still the cause")
		Expect(res.Reason).To(ContainSubstring("and leaked after teardown: allocations: 3 live, 0 before"))
		failures := InterceptGomegaFailures(func() { expectReleased(dev, base) })
		Expect(failures).To(ConsistOf(ContainSubstring("device objects the instance left behind")))
	})
})

// noRetire is a runtime under test whose Retire gives nothing back.
type noRetire struct{ *guard.Device }

func (noRetire) Retire(device.Thread) error { return nil }
