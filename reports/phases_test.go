package reports_test

import (
	"bytes"
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// The KV cache grown between two captures (specs/phases.yaml's kv-grow-between-captures, without
// the bystander), run unguarded on sim/cuda: its eager entry is in the report.
var _ = Describe("a phases probe's report", func() {
	var res *capture.Result
	BeforeEach(func() {
		set, err := probes.Parse("kv.yaml", []byte(`
version: replaycheck/v1
set: t
probes:
  - name: kv
    hazard: rebase
    buffers:
      entries: {bytes: 512, init: "fill:0x5a"}
      kv: {bytes: 16KiB, init: iota32}
      attn: {bytes: 64KiB}
    streams: [main]
    phases:
      - capture: {name: small, ops: [copy: {dst: kv, src: entries}]}
      - eager: [grow: {buffer: kv, bytes: 64KiB}]
      - capture: {name: big, ops: [copy: {dst: attn, src: kv}]}
    replay: {order: [small, big]}
    expect: {guarded: refused, unguarded: corrupted}
`), probes.DefaultLimits())
		Expect(err).NotTo(HaveOccurred())
		b, err := sim.New(sim.Options{Profile: "cuda"})
		Expect(err).NotTo(HaveOccurred())
		dev, err := b.Open(context.Background(), 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(dev.Close()).To(Succeed()) })
		res = capture.Run(context.Background(), dev, probes.Instance{Probe: set.Probes[0], Mode: device.Global, Replays: 1},
			capture.Options{Runtime: guard.Reference(guard.Options{})})
		Expect(res.Outcome).To(Equal(probes.Corrupted), res.Reason)
	})

	It("shows the eager entry in the text timeline, and says so in its head", func() {
		var buf bytes.Buffer
		Expect(reports.WriteDetail(&buf, reports.Entry{Result: *res})).To(Succeed())
		Expect(buf.String()).To(ContainSubstring("calls (capture, eager phases, between, errors)"))
		var line string
		for l := range strings.Lines(buf.String()) {
			if strings.Contains(l, "phase 2 op 1") {
				line = l
			}
		}
		Expect(line).To(ContainSubstring("Provision(plain kv"), buf.String())
		Expect(line).To(ContainSubstring("[rebased]"))
	})

	It("writes the eager steps to JSON, which reads back strictly", func() {
		rep := reports.New("replaycheck", "test", reports.Options{AllTimelines: true})
		rep.Backend, rep.Profile = "sim", "cuda"
		rep.Add(res)
		var buf bytes.Buffer
		Expect(reports.WriteJSON(&buf, rep)).To(Succeed())
		Expect(buf.String()).To(ContainSubstring(`"step": "phase 2 op 1"`))
		Expect(buf.String()).To(ContainSubstring(`"phase": "eager"`))
		d, err := reports.ReadDocument(buf.Bytes())
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Results).To(HaveLen(1))
		Expect(d.Results[0].Timeline.Equal(res.Timeline)).To(BeTrue())
	})
})
