package sim_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/internal/leakcheck"
)

// launchForever makes a launch that a hang fault blocks for good.
//
//go:noinline
func launchForever(d *sim.Device) { _ = d.Launch(main, device.Graph(1), device.DefaultStream) }

const launchForeverFunc = leakcheck.Module + "device/sim_test.launchForever"

var _ = Describe("an abandoned device", func() {
	It("lets its idle worker go, keeps only the hung call's thread, and fails later calls", func() {
		snap := leakcheck.Take()
		d := openDevice(sim.Options{})
		Expect(d.InjectFault(device.Fault{Kind: device.FaultHang, N: 1})).To(Succeed())
		go launchForever(d)
		Eventually(func() []leakcheck.Goroutine {
			return snap.Leaks(0)
		}).Should(ContainElement(HaveField("Funcs", ContainElement(leakcheck.HungSimCall))))

		// Before Abandon the idle Other worker is still there: the check sees it (the negative
		// control of Abandon letting it go).
		held := snap.Leaks(0, launchForeverFunc, leakcheck.HungSimCall)
		Expect(held).To(HaveLen(1))
		Expect(held[0].Funcs).To(ContainElement(leakcheck.Module + "device.StartWorker.func1"))

		d.Abandon()
		Expect(snap.Leaks(5*time.Second, launchForeverFunc, leakcheck.HungSimCall)).To(BeEmpty())
		_, err := d.Malloc(main, 64)
		Expect(err).To(MatchError(ContainSubstring("the device was abandoned (a call hung)")))
		Expect(d.Close()).To(Succeed())
	})
})
