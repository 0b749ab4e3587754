package run

import (
	"bufio"
	"bytes"
	"context"
	"github.com/replaycheck/replaycheck/runtime"

	. "github.com/onsi/ginkgo/v2"
	gm "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// noLog is a runtime under test without a slot log.
type noLog struct{ runtime.Runtime }

var _ = Describe("an isolated worker's traced runtime", func() {
	It("passes the runtime's slot log on, announcing the question, and has none to pass from a runtime without one", func() {
		b, err := sim.New(sim.Options{Profile: "cann"})
		gm.Expect(err).NotTo(gm.HaveOccurred())
		dev, err := b.Open(context.Background(), 0)
		gm.Expect(err).NotTo(gm.HaveOccurred())
		DeferCleanup(dev.Close)
		g, err := guard.New(dev, guard.Kernel)
		gm.Expect(err).NotTo(gm.HaveOccurred())
		var out bytes.Buffer
		w := &announcer{out: bufio.NewWriter(&out)}
		traced := &tracedRuntime{tracedDevice: &tracedDevice{Device: g, w: w}, rt: g}

		log := runtime.ExtensionsOf(traced).SlotLog
		gm.Expect(log).NotTo(gm.BeNil())
		from := log.SlotsVersion()
		_, _, err = traced.Provision(device.Main, runtime.Plain, "a", device.Ptr{}, 512)
		gm.Expect(err).NotTo(gm.HaveOccurred())
		keys, now, ok := log.SlotsChangedSince(from)
		gm.Expect(ok).To(gm.BeTrue())
		gm.Expect(keys).To(gm.Equal([]string{"a"}))
		gm.Expect(now).To(gm.Equal(g.SlotsVersion()))
		gm.Expect(out.String()).To(gm.ContainSubstring(`"call":"SlotsChangedSince"`))

		bare := &tracedRuntime{tracedDevice: &tracedDevice{Device: g, w: w}, rt: noLog{g}}
		gm.Expect(runtime.ExtensionsOf(bare).SlotLog).To(gm.BeNil())
	})

	It("announces an in-place comparison as the call into the driver it is, where the device has one", func() {
		dev, p, w, out := tracedSim(sim.Options{Profile: "cann"})

		c := device.ExtensionsOf(traced(dev, w)).Compare
		gm.Expect(c).NotTo(gm.BeNil())
		eq, err := c.Equal(device.Main, p, make([]byte, 64))
		gm.Expect(err).NotTo(gm.HaveOccurred())
		gm.Expect(eq).To(gm.BeTrue())
		gm.Expect(w.out.Flush()).To(gm.Succeed())
		gm.Expect(out.String()).To(gm.ContainSubstring(`"call":"Equal"`))

		// A device that cannot compare in place is not made to look as if it could.
		gm.Expect(device.ExtensionsOf(traced(struct{ device.Device }{dev}, w)).Compare).To(gm.BeNil())
	})

	It("announces fingerprints as the call into the driver they are, where the device has them", func() {
		dev, p, w, out := tracedSim(sim.Options{Profile: "cuda", Fingerprints: true})

		f := device.ExtensionsOf(traced(dev, w)).Fingerprint
		gm.Expect(f).NotTo(gm.BeNil(), "an isolated worker verifies as the engine does in process")
		want := make([]uint64, 1)
		gm.Expect(device.ExtensionsOf(dev).Fingerprint.Fingerprints(device.Main, p, want)).To(gm.Succeed())
		got := make([]uint64, 1)
		gm.Expect(f.Fingerprints(device.Main, p, got)).To(gm.Succeed())
		gm.Expect(got).To(gm.Equal(want))
		gm.Expect(w.out.Flush()).To(gm.Succeed())
		gm.Expect(out.String()).To(gm.ContainSubstring(`"call":"Fingerprints"`))

		gm.Expect(device.ExtensionsOf(traced(struct{ device.Device }{dev}, w)).Fingerprint).To(gm.BeNil())
	})
})

// tracedSim opens device 0 of a simulator made with opt, with a 64-byte buffer on it, and an
// announcer whose announcements out holds once flushed.
func tracedSim(opt sim.Options) (dev device.Device, p device.Ptr, w *announcer, out *bytes.Buffer) {
	b, err := sim.New(opt)
	gm.Expect(err).NotTo(gm.HaveOccurred())
	dev, err = b.Open(context.Background(), 0)
	gm.Expect(err).NotTo(gm.HaveOccurred())
	DeferCleanup(dev.Close)
	p, err = dev.Malloc(device.Main, 64)
	gm.Expect(err).NotTo(gm.HaveOccurred())
	out = &bytes.Buffer{}
	return dev, p, &announcer{out: bufio.NewWriter(out)}, out
}
