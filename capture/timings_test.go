package capture_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

var _ = Describe("an instance's timings", func() {
	It("time the captures and every replay round, and count the bytes verified", func() {
		dev := openSim("cann")
		defer dev.Close()
		res := runOn(dev, parseProbe(header+`
  - name: p
    hazard: none
    buffers:
      src: {bytes: 4KiB, init: iota32}
      dst: {bytes: 12KiB}
    streams: [main]
    capture:
      ops:
        - copy: {dst: dst, src: src}
    expect: {guarded: exact, unguarded: exact}
`), device.Global, 5)
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		t := res.Timings
		Expect(t.Capture).To(BeNumerically(">", 0))
		Expect(t.ReplayMedian).To(BeNumerically(">", 0))
		Expect(t.ReplayP99).To(BeNumerically(">=", t.ReplayMedian))
		Expect(t.VerifiedBytes).To(Equal(int64(5*16<<10)), "both buffers, every round")
		Expect(t.VerifyRate).To(BeNumerically("~", float64(t.VerifiedBytes)/t.Verify.Seconds(), 1))
		Expect(res.Duration).To(BeNumerically(">=", t.Capture+t.Verify))
	})
})
