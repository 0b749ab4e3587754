package capture_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// Negative controls: each kernel-mode guard is removed (a test-only switch) and the catalog probe
// it exists for is run guarded. Where the guard is the only defence, the probe turns corrupted;
// where another guard stands behind it (the residency check catches every re-base), the refusal
// moves to that guard, and removing both turns it corrupted. Re-introduce the defect, watch the
// result change.
var _ = Describe("negative controls", func() {
	cat, err := loadCatalog()
	if err != nil {
		It("loads the catalog", func() { Expect(err).NotTo(HaveOccurred()) })
		return
	}
	guarded := func(id string, off guard.Disabled) *capture.Result {
		dev := openSim("cann")
		DeferCleanup(dev.Close)
		in := probes.Instance{Probe: cat.find(id), Mode: device.Global, Guarded: true, Replays: 3}
		return capture.Run(ctx(), dev, in, capture.Options{Runtime: guard.Reference(guard.Options{Disabled: off})})
	}

	DescribeTable("a guard removed",
		func(id string, off guard.Disabled, want probes.Outcome, refusedAt string) {
			intact := guarded(id, guard.Disabled{})
			Expect(intact.Outcome).To(Equal(probes.Refused), "with every guard: %s", intact.Reason)

			res := guarded(id, off)
			Expect(res.Outcome).To(Equal(want), res.Reason)
			if refusedAt != "" {
				Expect(res.Refusal.Step.String()).To(Equal(refusedAt))
				Expect(res.Refusal.Step).NotTo(Equal(intact.Refusal.Step))
			}
		},
		Entry("capture watch: off-capture work runs once and never replays",
			"hazards/off-capture-stream", guard.Disabled{CaptureWatch: true}, probes.Corrupted, ""),
		Entry("capture watch: the scratch allocation goes through; the residency check still refuses the replay",
			"hazards/alloc-in-capture-reused", guard.Disabled{CaptureWatch: true}, probes.Refused, "replay 1 main"),
		Entry("capture watch and residency: the replay writes into the scratch buffer's next owner",
			"hazards/alloc-in-capture-reused", guard.Disabled{CaptureWatch: true, Residency: true}, probes.Corrupted, ""),
		Entry("residency: a re-based plain buffer's stale address is replayed",
			"guards/plain-rebase-caught-by-residency", guard.Disabled{Residency: true}, probes.Corrupted, ""),
		Entry("residency: a same-address re-allocation passes for the captured buffer",
			"guards/same-address-reallocation", guard.Disabled{Residency: true}, probes.Corrupted, ""),
		Entry("retained slot: the growth re-bases; the residency check refuses the replay instead",
			"hazards/rebase-after-capture", guard.Disabled{RetainedSlot: true}, probes.Refused, "replay 1 main"),
		Entry("retained slot and residency: the re-base corrupts the bystander",
			"hazards/rebase-after-capture", guard.Disabled{RetainedSlot: true, Residency: true}, probes.Corrupted, ""),
		Entry("arena bank: the release goes through; the residency check refuses the replay instead",
			"guards/arena-release-refused", guard.Disabled{ArenaBank: true}, probes.Refused, "replay 1 main"),
		Entry("arena bank and residency: the released region's new owner is overwritten",
			"guards/arena-release-refused", guard.Disabled{ArenaBank: true, Residency: true}, probes.Corrupted, ""),
		Entry("arena bank and residency: growth over capacity re-bases and corrupts",
			"guards/arena-grow-over-capacity", guard.Disabled{ArenaBank: true, Residency: true}, probes.Corrupted, ""),
		Entry("residency: a pool block handed to another tensor is replayed into",
			"hazards/pool-block-reused", guard.Disabled{Residency: true}, probes.Corrupted, ""),
		Entry("residency: a pool block freed and not handed out yet is a stale access",
			"hazards/pool-block-freed-unchecked", guard.Disabled{Residency: true}, probes.Corrupted, ""),
		Entry("residency: a pinned staging buffer's next owner is uploaded",
			"hazards/host-staging-reused", guard.Disabled{Residency: true}, probes.Corrupted, ""),
		Entry("capture watch: the pooled scratch allocation goes through; the residency check refuses the replay",
			"hazards/pool-alloc-in-capture", guard.Disabled{CaptureWatch: true}, probes.Refused, "replay 1 main"),
		Entry("capture watch and residency: the pooled scratch's next owner is written",
			"hazards/pool-alloc-in-capture", guard.Disabled{CaptureWatch: true, Residency: true}, probes.Corrupted, ""),
		Entry("replay isolation: graphs sharing a scratch block race on two streams",
			"hazards/concurrent-replay-shared-scratch", guard.Disabled{ReplayIsolation: true}, probes.Corrupted, ""),
	)
})
