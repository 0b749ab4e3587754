package runtime_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// users is a runtime of the user's own that embeds the reference guards and states nothing: it
// has their EnqueueKernels and slot log as methods, and neither as an ability.
type users struct{ *guard.Device }

// restates is one that takes the guards' slot log as its own, on purpose.
type restates struct{ *guard.Device }

func (r restates) RuntimeExtensions() runtime.Extensions {
	return runtime.Extensions{Of: r, SlotLog: r.Device}
}

var _ = Describe("a runtime's Extensions", func() {
	var g *guard.Device
	BeforeEach(func() {
		b, err := sim.New(sim.Options{Profile: "cann"})
		Expect(err).NotTo(HaveOccurred())
		dev, err := b.Open(context.Background(), 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(dev.Close)
		g, err = guard.New(dev, guard.Program)
		Expect(err).NotTo(HaveOccurred())
	})

	It("are the reference guards' batch of kernels and slot log, stated for the guards", func() {
		Expect(device.ExtensionsOf(g).Kernels).NotTo(BeNil())
		Expect(runtime.ExtensionsOf(g).SlotLog).NotTo(BeNil())
		Expect(device.ExtensionsOf(g).Compare).To(BeNil(), "nothing of the inner device passes the guards")
	})

	It("do not pass to a runtime that embeds the guards: its own Fill sees every kernel", func() {
		u := users{g}
		var _ device.KernelEnqueuer = u
		var _ runtime.SlotLog = u
		Expect(device.ExtensionsOf(u)).To(Equal(device.Extensions{Of: u}))
		Expect(runtime.ExtensionsOf(u)).To(Equal(runtime.Extensions{Of: u}))
	})

	It("pass to such a runtime only as it states them", func() {
		r := restates{g}
		Expect(runtime.ExtensionsOf(r).SlotLog).NotTo(BeNil())
		Expect(runtime.ExtensionsOf(r).Lacks).To(BeNil())
		Expect(device.ExtensionsOf(r).Kernels).To(BeNil())
	})
})
