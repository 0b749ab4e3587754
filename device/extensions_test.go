package device_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

// embeds is a wrapper that embeds the simulator: it has every method of *sim.Device,
// EnqueueKernels, OnThread, Equal and InjectFault among them, and states nothing of its own.
type embeds struct{ *sim.Device }

// forwardsCompare states one ability of the device it wraps, on purpose.
type forwardsCompare struct{ device.Device }

func (f forwardsCompare) Extensions() device.Extensions {
	return device.Extensions{Of: f, Compare: device.ExtensionsOf(f.Device).Compare}
}

// incomparable is a device value that == cannot compare (a slice field), stating for itself.
type incomparable struct {
	device.Device
	calls []string
}

func (d incomparable) Extensions() device.Extensions { return device.Extensions{Of: d} }

var _ = Describe("Extensions", func() {
	var dev *sim.Device
	BeforeEach(func() {
		b, err := sim.New(sim.Options{Profile: "cann"})
		Expect(err).NotTo(HaveOccurred())
		d, err := b.Open(context.Background(), 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(d.Close)
		dev = d.(*sim.Device)
	})

	It("are what a device states for itself", func() {
		e := device.ExtensionsOf(dev)
		Expect(e.Of).To(BeIdenticalTo(device.Device(dev)))
		Expect(e.Faults).NotTo(BeNil())
		Expect(e.Abandon).NotTo(BeNil())
		Expect(e.Threads).NotTo(BeNil())
		Expect(e.Session).NotTo(BeNil())
		Expect(e.Compare).NotTo(BeNil())
		Expect(e.Walk).NotTo(BeNil())
		Expect(e.Kernels).NotTo(BeNil())
	})

	It("do not pass through a wrapper that embeds the device, though it has every method", func() {
		w := embeds{dev}
		var _ device.KernelEnqueuer = w // the methods are there
		var _ device.ThreadRunner = w
		Expect(device.ExtensionsOf(w)).To(Equal(device.Extensions{Of: w}))
	})

	It("pass through a wrapper only as it states them", func() {
		w := forwardsCompare{dev}
		e := device.ExtensionsOf(w)
		Expect(e.Compare).NotTo(BeNil())
		Expect(e.Kernels).To(BeNil())
		Expect(e.Threads).To(BeNil())
		Expect(e.Faults).To(BeNil())
		// Running kernels through the wrapper then makes each kernel's own call on it.
		s, err := w.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		p, err := w.Malloc(device.Main, 512)
		Expect(err).NotTo(HaveOccurred())
		n, err := device.EnqueueKernels(w, device.Main, s, []device.Kernel{{Kind: device.KernelFill, Dst: p, Value: 7}})
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(1))
	})

	It("restate a session for a wrapper so that the session is handed the wrapper (ThreadsVia)", func() {
		w := embeds{dev}
		tr := device.ThreadsVia(w, device.ExtensionsOf(dev).Threads)
		var got device.Device
		Expect(tr.OnThread(device.Main, func(on device.Device) { got = on })).To(Succeed())
		Expect(got).To(Equal(device.Device(w)))
		Expect(device.ThreadsVia(w, nil)).To(BeNil())
	})

	It("answer none, without a panic, for a device == cannot compare", func() {
		d := incomparable{Device: dev, calls: []string{"x"}}
		Expect(func() { device.ExtensionsOf(d) }).NotTo(Panic())
		Expect(device.ExtensionsOf(d).Of).To(Equal(device.Device(d)))
		Expect(device.ExtensionsOf(nil)).To(Equal(device.Extensions{}))
	})
})
