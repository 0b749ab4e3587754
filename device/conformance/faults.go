package conformance

import (
	g "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
)

// faultSpecs: a device with the "fault-injection" capability (device.FaultInjector) answers each
// fault kind with its class, lists the faults that fired, and is released clean by Close after it
// was lost; with Options.ErrorCode, each answer is the platform's code and name for its class.
func faultSpecs(h *harness) {
	g.Context("fault injection", func() {
		var inj device.FaultInjector
		g.BeforeEach(func() {
			h.need("fault-injection")
			inj = device.ExtensionsOf(h.dev).Faults
			Expect(inj).NotTo(BeNil(), "a device with the fault-injection capability states a device.FaultInjector in its Extensions")
		})

		// answered checks a fault's failure: its class, and the platform's code and name for it when
		// Options.ErrorCode knows them.
		answered := func(err error, class device.Class) *device.Error {
			g.GinkgoHelper()
			e := h.failed(err, class)
			if h.opts.ErrorCode != nil {
				code, name, ok := h.opts.ErrorCode(class)
				Expect(ok).To(BeTrue(), "the profile names a code for %s", class)
				Expect([]any{e.Code, e.Name}).To(Equal([]any{code, name}), "the platform's code for %s: %v", class, e)
			}
			return e
		}

		g.It("fails the N-th allocation, then a launch, then loses the device, each with its class", func() {
			Expect(inj.InjectFault(device.Fault{Kind: device.FaultAllocFail, N: 2})).To(Succeed())
			p := h.malloc(4 * kib)
			_, err := h.dev.Malloc(main, 4*kib)
			answered(err, device.ClassOutOfMemory)
			Expect(h.dev.Counters().LiveAllocs).To(Equal(int64(1)), "the failed allocation holds nothing")

			s := h.stream()
			h.begin(main, s, device.Global)
			h.fill(s, p, 7)
			graph := h.end(main, s)
			Expect(inj.InjectFault(device.Fault{Kind: device.FaultLaunchFail, N: 2})).To(Succeed())
			h.launch(graph, s)
			answered(h.dev.Launch(main, graph, s), device.ClassInternal)
			h.launch(graph, s) // a launch failure leaves the device usable
			h.sync(s)

			Expect(inj.InjectFault(device.Fault{Kind: device.FaultDeviceLost, N: 1})).To(Succeed())
			lost := answered(h.dev.Launch(main, graph, s), device.ClassDeviceLost)
			_, err = h.dev.Malloc(other, 512)
			again := answered(err, device.ClassDeviceLost)
			Expect([]any{again.Code, again.Name}).To(Equal([]any{lost.Code, lost.Name}), "a lost device answers every later call so")
			h.failed(h.dev.SyncDevice(main), device.ClassDeviceLost)

			Expect(inj.FiredFaults()).To(Equal([]device.Fault{
				{Kind: device.FaultAllocFail, N: 2}, {Kind: device.FaultLaunchFail, N: 2}, {Kind: device.FaultDeviceLost, N: 1},
			}))
			// Close, when the spec ends, must release the lost device without an error.
		})

		g.It("disarms what has not fired, and refuses a fault that cannot fire", func() {
			Expect(inj.InjectFault(device.Fault{Kind: device.FaultAllocFail, N: 1})).To(Succeed())
			Expect(inj.ClearFaults()).To(Succeed())
			h.free(h.malloc(512))
			Expect(inj.FiredFaults()).To(BeEmpty())
			h.failed(inj.InjectFault(device.Fault{Kind: device.FaultHang, N: 0}), device.ClassInvalidValue)
			h.failed(inj.InjectFault(device.Fault{Kind: 9, N: 1}), device.ClassInvalidValue)
		})
	})
}
