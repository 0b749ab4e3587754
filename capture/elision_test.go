package capture_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// rounds lists the replay rounds whose calls a timeline holds, and its elision events.
func rounds(tl []capture.Event) (kept []int, elided []capture.Elided) {
	for _, ev := range tl {
		switch {
		case ev.Elided != nil:
			elided = append(elided, *ev.Elided)
		case ev.Round > 0 && (len(kept) == 0 || kept[len(kept)-1] != ev.Round):
			kept = append(kept, ev.Round)
		}
	}
	return kept, elided
}

// expectCounted checks that the timeline's calls, those elided included, are numbered 1..n
// without a gap or a repeat: every call is counted once.
func expectCounted(tl []capture.Event) {
	GinkgoHelper()
	next := 1
	for _, ev := range tl {
		Expect(ev.Seq).To(Equal(next), "event %+v", ev)
		if ev.Elided != nil {
			next += ev.Elided.Calls
		} else {
			next++
		}
	}
}

// A timeline keeps every call but those of uneventful replay rounds past the first three and
// before the last; one event stands for each run of them. A million replays of a 64-byte probe
// otherwise kept a gigabyte of identical launches.
var _ = Describe("the calls of uneventful replay rounds", func() {
	var dev device.Device
	BeforeEach(func() {
		dev = openSim("cann")
		DeferCleanup(dev.Close)
	})
	run := func(replays int, opt capture.Options) *capture.Result {
		return capture.Run(ctx(), dev, probes.Instance{Probe: parseProbe(faultProbe), Mode: device.Global, Replays: replays}, opt)
	}

	It("are left out past round 3 and before the last, one event counting them", func() {
		res := run(50, capture.Options{Runtime: builtin})
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		kept, elided := rounds(res.Timeline.Events())
		Expect(kept).To(Equal([]int{1, 2, 3, 50}))
		// A round of this probe is its launch and the verify sync.
		Expect(elided).To(Equal([]capture.Elided{{FromRound: 4, ToRound: 49, Calls: 46 * 2}}))
		expectCounted(res.Timeline.Events())
		Expect(res.Rounds).To(Equal(50))
	})

	It("hold the memory of one round whatever their number", func() {
		short, long := run(100, capture.Options{Runtime: builtin}), run(2000, capture.Options{Runtime: builtin})
		Expect(long.Timeline.Events()).To(HaveLen(len(short.Timeline.Events())))
		Expect(lastEvent(long).Seq).To(Equal(lastEvent(short).Seq + 1900*2))
	})

	It("stop at a round with an error, which is kept", func() {
		fault, err := probes.ParseFault("launch-fail@10")
		Expect(err).NotTo(HaveOccurred())
		res := run(20, capture.Options{Runtime: builtin, Faults: []probes.Fault{fault}})
		Expect(res.Outcome).To(Equal(probes.Errored), res.Reason)
		kept, elided := rounds(res.Timeline.Events())
		Expect(kept).To(Equal([]int{1, 2, 3, 10}))
		Expect(elided).To(Equal([]capture.Elided{{FromRound: 4, ToRound: 9, Calls: 6 * 2}}))
		expectCounted(res.Timeline.Events())
	})

	It("never include a round with a refused call", func() {
		// Kernel mode refuses b's launch every round (a is in flight on the other stream): no byte
		// differs, no stale range; only the refusal makes a round worth reading.
		cat, err := loadCatalog()
		Expect(err).NotTo(HaveOccurred())
		res := runInstance(dev, cat.find("hazards/concurrent-replay-shared-scratch"), device.Global, true, 12)
		Expect(res.Outcome).To(Equal(probes.Refused), res.Reason)
		Expect(res.CorruptedRounds).To(BeZero())
		kept, elided := rounds(res.Timeline.Events())
		Expect(kept).To(Equal([]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}))
		Expect(elided).To(BeEmpty())
	})

	It("never include a round that differed from the oracle", func() {
		cat, err := loadCatalog()
		Expect(err).NotTo(HaveOccurred())
		p := cat.find("guards/arena-release-refused")
		res := runOn(dev, p, device.Global, 12)
		Expect(res.Outcome).To(Equal(probes.Corrupted))
		Expect(res.CorruptedRounds).To(Equal(12))
		kept, elided := rounds(res.Timeline.Events())
		Expect(kept).To(Equal([]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}))
		Expect(elided).To(BeEmpty())
	})
})
