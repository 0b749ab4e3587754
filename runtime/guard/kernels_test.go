package guard_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// countingBatches is a device that counts the batches and the single fills that reach it.
type countingBatches struct {
	device.Device
	batches, fills int
}

// Extensions states the counted batch.
func (c *countingBatches) Extensions() device.Extensions { return device.Extensions{Of: c, Kernels: c} }

func (c *countingBatches) EnqueueKernels(t device.Thread, s device.Stream, ks []device.Kernel) (int, error) {
	c.batches++
	return device.EnqueueKernels(c.Device, t, s, ks)
}

func (c *countingBatches) Fill(t device.Thread, s device.Stream, dst device.Ptr, v byte) error {
	c.fills++
	return c.Device.Fill(t, s, dst, v)
}

var _ = Describe("a batch of kernels through the guards (EnqueueKernels)", func() {
	fills := func(p device.Ptr, n int) []device.Kernel {
		ks := make([]device.Kernel, n)
		for i := range ks {
			ks[i] = device.Kernel{Kind: device.KernelFill, Dst: p.Slice(int64(i)*16, 16), Value: byte(i + 1)}
		}
		return ks
	}

	It("program mode passes the batch on whole", func() {
		inner := &countingBatches{Device: openSim("cann")}
		d := guarded(inner, guard.Program)
		s := stream(d)
		x := malloc(d, 1024)
		n, err := d.EnqueueKernels(device.Main, s, fills(x, 8))
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(8))
		Expect(inner.batches).To(Equal(1))
		Expect(inner.fills).To(Equal(0), "the inner device's own batch made the fills")
	})

	It("kernel mode watches each kernel as its own call: a batch off the capture is refused at its first, with no effect", func() {
		inner := &countingBatches{Device: openSim("cann")}
		d := guarded(inner, guard.Kernel)
		origin, side := stream(d), stream(d)
		x := malloc(d, 1024)
		Expect(d.BeginCapture(device.Main, origin, device.Global)).To(Succeed())
		n, err := d.EnqueueKernels(device.Main, side, fills(x, 4))
		Expect(n).To(Equal(0))
		expectRefused(err, "Fill")
		Expect(inner.fills).To(Equal(0))

		n, err = d.EnqueueKernels(device.Main, origin, fills(x, 4))
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(4))
		Expect(inner.batches).To(Equal(0), "never passed on as a batch: each kernel went through the guard")
		Expect(inner.fills).To(Equal(4))
		_, err = d.EndCapture(device.Main, origin)
		Expect(err).NotTo(HaveOccurred())
	})
})
