package capture_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/progen"
	"github.com/replaycheck/replaycheck/probes"
)

var _ = Describe("oracle and simulator", func() {
	It("agree on every byte of random hazard-free programs", func() {
		dev := openSim("cann")
		defer dev.Close()
		const programs = 300
		for seed := uint64(1); seed <= programs; seed++ {
			text := progen.YAML(progen.Seed(seed))
			set, err := probes.Parse(fmt.Sprintf("program-%d.yaml", seed), []byte(text), probes.DefaultLimits())
			Expect(err).NotTo(HaveOccurred(), "seed %d:\n%s", seed, text)
			mode := device.CaptureModes()[seed%3]
			res := runOn(dev, set.Probes[0], mode, 1+int(seed%4))
			Expect(res.Outcome).To(Equal(probes.Exact), "seed %d (%s): %s\n%s", seed, mode, res.Reason, text)
		}
	})

	It("disagree when the simulator is made to drop a copy (the comparison can fail)", func() {
		dev := droppingCopies{openSim("cann")}
		defer dev.Close()
		res := runOn(dev, parseProbe(simple), device.Global, 1)
		Expect(res.Outcome).To(Equal(probes.Corrupted))
	})
})

// droppingCopies acknowledges copies without doing them: a defect the comparison must catch.
type droppingCopies struct{ device.Device }

func (droppingCopies) Copy(device.Thread, device.Stream, device.Ptr, device.Ptr) error {
	return nil
}
