package sim_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

// staleLab rejects a launch whose captured ranges changed owner (code 21) or were freed (code 22),
// so each launch shows what the staleness check found at that moment.
const staleLab = header + `
rules:
  - situation: replay of a re-based range
    source: doc
    calls: [Launch]
    when: graph-range-stale
    code: 21
    name: LAB_STALE
    class: illegal-address
  - situation: replay of a freed range
    source: doc
    calls: [Launch]
    when: graph-range-freed
    code: 22
    name: LAB_FREED
    class: illegal-address
`

var _ = Describe("the staleness check at launch, kept between launches", func() {
	var (
		d *sim.Device
		s device.Stream
		x device.Ptr
		g device.Graph
	)
	BeforeEach(func() {
		d = openDevice(sim.Options{ProfileYAML: []byte(staleLab)})
		x = malloc(d, 4*KiB)
		s = newStream(d)
		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		Expect(d.Fill(main, s, x, 7)).To(Succeed())
		var err error
		g, err = d.EndCapture(main, s)
		Expect(err).NotTo(HaveOccurred())
		// Launched (and checked) before anything changes, so a kept answer exists.
		Expect(d.Launch(main, g, s)).To(Succeed())
		Expect(d.Launch(main, g, s)).To(Succeed())
	})

	It("still sees a re-base after the graph was launched", func() {
		Expect(d.Free(main, x)).To(Succeed())
		malloc(d, 8*KiB)              // the re-based buffer, in fresh space
		bystander := malloc(d, 4*KiB) // handed the captured address (LIFO reuse)
		Expect(bystander.Addr).To(Equal(x.Addr))
		err := d.Launch(main, g, s)
		Expect(err).To(MatchError(ContainSubstring("LAB_STALE")))
		Expect(err).To(MatchError(ContainSubstring("now belongs to allocation")))
	})

	It("still sees a free after the graph was launched", func() {
		Expect(d.Free(main, x)).To(Succeed())
		Expect(d.Launch(main, g, s)).To(MatchError(ContainSubstring("LAB_FREED")))
	})

	It("lets the graph launch again once an unrelated allocation and free leave its ranges as they were", func() {
		y := malloc(d, 4*KiB)
		Expect(d.Launch(main, g, s)).To(Succeed())
		Expect(d.Free(main, y)).To(Succeed())
		Expect(d.Launch(main, g, s)).To(Succeed())
		Expect(read(d, x)).To(Equal(filled(x.Bytes, 7)))
	})
})
