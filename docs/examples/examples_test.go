package examples_test

// The worked example of docs/runtime-abi.md, kept honest: tiny_runtime.c is compiled with cc
// against the ABI header, loaded with runtime/plugin, and run over the whole catalog on the
// simulator. What the doc says the example finds (outcome counts, the probes it refuses cleanly,
// the probes it lets through corrupted) is asserted here, so the doc and the code cannot drift.
// Change the C file or the catalog and this test says which line of the doc's table to update.

import (
	"context"
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/guard"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/internal/cbuild"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime/plugin"
	"github.com/replaycheck/replaycheck/verdict"
)

// findings is what the doc states for the guarded catalog (every mode, guards on) through the
// tiny runtime on one simulator profile.
type findings struct {
	outcomes  map[probes.Outcome]int // instances per outcome
	pass      int                    // instances whose verdict passes
	refused   []string               // probes with a refused instance
	corrupted []string               // probes with a corrupted instance
}

// refusedByTiny are the probes the tiny runtime refuses cleanly: its retained slot and arena bank
// at work. The same on both profiles.
var refusedByTiny = []string{
	"guards/arena-grow-over-capacity",
	"guards/arena-release-refused",
	"hazards/rebase-after-capture",
	"phases/kv-grow-between-captures-arena",
	"phases/kv-grow-between-captures-retained",
}

// corruptedOnBoth are the probes the tiny runtime lets through corrupted on both profiles: the
// capture watch, the residency check and replay isolation it lacks.
var corruptedOnBoth = []string{
	"guards/plain-rebase-caught-by-residency",
	"guards/same-address-reallocation",
	"hazards/alloc-in-capture-reused",
	"hazards/concurrent-replay-shared-scratch",
	"hazards/host-staging-reused",
	"hazards/off-capture-stream",
	"hazards/pool-alloc-in-capture",
	"hazards/pool-block-freed-unchecked",
	"hazards/pool-block-reused",
	"incidents/aiter-5393-workspace-aliases-freed-intermediate",
	"incidents/flashinfer-4398-workspace-growth-reused",
	"incidents/libuipc-472-legacy-stream-beside-non-blocking-capture",
	"incidents/onnxruntime-32121-pinned-staging-reused",
	"incidents/pytorch-166975-concurrent-shared-pool",
	"incidents/trtllm-16290-per-forward-buffer-in-capture",
	"phases/kv-grow-between-captures",
	"platform/work-on-default-stream-beside-non-blocking-capture",
}

// stated is docs/runtime-abi.md's table "What replaycheck finds in it".
var stated = map[string]findings{
	"cann": {
		outcomes: map[probes.Outcome]int{probes.Exact: 58, probes.Refused: 15, probes.Rejected: 59, probes.Corrupted: 57, probes.Skipped: 18},
		pass:     103,
		refused:  refusedByTiny,
		// On cann the default stream and the legacy-stream readback are not rejected by the
		// platform either: the off-capture work runs eagerly and the replays miss it.
		corrupted: sorted(append(slices.Clone(corruptedOnBoth), "incidents/warp-653-readback-on-legacy-stream", "platform/work-on-default-stream-in-capture")),
	},
	"cuda": {
		outcomes: map[probes.Outcome]int{probes.Exact: 43, probes.Refused: 15, probes.Rejected: 67, probes.Corrupted: 64, probes.Skipped: 18},
		pass:     103,
		refused:  refusedByTiny,
		// On cuda the replays over freed memory are silent (allocations below 2 MiB stay mapped, as
		// on an H200), and the stale-range tracking finds them.
		corrupted: sorted(append(slices.Clone(corruptedOnBoth), "hazards/replay-after-free", "incidents/flashinfer-4398-workspace-growth-unmapped",
			"incidents/released-tensor-replayed", "incidents/vllm-ascend-16794-encoder-buffers-freed", "phases/kv-grow-old-block-left-free")),
	},
}

func sorted(s []string) []string { slices.Sort(s); return s }

// build compiles tiny_runtime.c into dir as the doc says to, warnings as errors.
func build(dir string) string {
	GinkgoHelper()
	cc := cbuild.Compiler()
	if _, err := exec.LookPath(cc[0]); err != nil {
		Skip("no C compiler: " + err.Error())
	}
	out := filepath.Join(dir, "tiny_runtime.so")
	args := append(cc[1:], "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-I", filepath.Join("..", "..", "include"),
		"-o", out, "tiny_runtime.c")
	b, err := exec.Command(cc[0], args...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s %s:\n%s", cc[0], strings.Join(args, " "), b)
	return out
}

func openSim(profile string) device.Device {
	GinkgoHelper()
	b, err := backends.Open("sim", backends.Config{Profile: profile})
	Expect(err).NotTo(HaveOccurred())
	dev, err := b.Open(context.Background(), 0)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(dev.Close()).To(Succeed()); Expect(b.Close()).To(Succeed()) })
	return dev
}

var _ = Describe("tiny_runtime.c, the worked example of docs/runtime-abi.md", Ordered, func() {
	var (
		p   *plugin.Plugin
		all []*probes.Probe
	)
	BeforeAll(func() {
		path := build(GinkgoT().TempDir())
		if !pluginsLoad {
			Skip("runtime plugins need a cgo build")
		}
		var err error
		p, err = plugin.Load(path)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(p.Close)
		Expect(p.Name()).To(Equal("tiny_runtime"))

		sets, err := probes.Load(probes.DefaultLimits(), "../../specs")
		Expect(err).NotTo(HaveOccurred())
		for _, s := range sets {
			all = append(all, s.Probes...)
		}
	})
	tiny := func() capture.Options {
		return capture.Options{Runtime: &runtime.UnderTest{Name: p.Name(), Open: func(dev device.Device, guarded bool) (runtime.Runtime, error) {
			return p.Open(dev, guarded)
		}}}
	}

	for _, profile := range []string{"cann", "cuda"} {
		It("finds, guarded on sim/"+profile+", what the doc's table says", func() {
			dev := openSim(profile)
			want := stated[profile]
			outcomes := map[probes.Outcome]int{}
			refused, corrupted := map[string]bool{}, map[string]bool{}
			pass := 0
			for _, in := range probes.Instances(all, probes.Matrix{Guards: []bool{true}}) {
				res := capture.Run(context.Background(), dev, in, tiny())
				Expect(res.Runtime).To(Equal("tiny_runtime"))
				outcomes[res.Outcome]++
				switch res.Outcome {
				case probes.Refused:
					refused[res.Probe] = true
					// Every refusal is the runtime's own (a slot it keeps), and clean.
					Expect(res.Refusal.Op).To(BeElementOf("Provision", "Release"), in.ID())
					for _, c := range res.Refusal.Checked {
						Expect(c.Held).To(BeTrue(), "%s: %s", in.ID(), c.What)
					}
				case probes.Corrupted:
					corrupted[res.Probe] = true
				case probes.Skipped:
					// Only for the private pools the ABI has no entry for (capture/privatepool.go).
					Expect(in.Probe.PrivatePools()).NotTo(BeEmpty(), "%s skipped: %s", in.ID(), res.Reason)
					Expect(res.Reason).To(HavePrefix(`runtime tiny_runtime lacks capability "graph-private-pools", which the probe's private pools need in a guarded instance`), in.ID())
				case probes.Errored:
					Fail(fmt.Sprintf("%s ended in error: %s", in.ID(), res.Reason))
				}
				if verdict.Judge(res, nil).Status == verdict.Pass {
					pass++
				}
			}
			Expect(outcomes).To(Equal(want.outcomes))
			Expect(pass).To(Equal(want.pass))
			Expect(slices.Sorted(maps.Keys(refused))).To(Equal(want.refused))
			Expect(slices.Sorted(maps.Keys(corrupted))).To(Equal(want.corrupted))
		})
	}

	It("gives, unguarded (program mode), the built-in runtime's outcome for every instance", func() {
		dev := openSim("cann")
		n := 0
		for _, in := range probes.Instances(all, probes.Matrix{Guards: []bool{false}}) {
			builtin := capture.Run(context.Background(), dev, in, capture.Options{Runtime: guard.Reference(guard.Options{})})
			got := capture.Run(context.Background(), dev, in, tiny())
			Expect(behaviour(got)).To(Equal(behaviour(builtin)), "%s: %s\nbuilt-in: %s", in.ID(), got.Reason, builtin.Reason)
			n++
		}
		Expect(n).To(BeNumerically(">", 100))
	})
})

// behaviour is what must agree between two runtimes on one instance.
func behaviour(r *capture.Result) string {
	s := fmt.Sprintf("%s, %d rounds, %d corrupted", r.Outcome, r.Rounds, r.CorruptedRounds)
	if rej := r.Rejection; rej != nil {
		s += fmt.Sprintf(", rejected at %s with %d [%s]", rej.Step, rej.Code, rej.Class)
	}
	if r.Error != nil {
		s += ", error " + string(r.Error.Kind)
	}
	return s
}
