package reports_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// freedCopy is a relaxed capture holding a copy whose source the capturing thread frees before the
// end: on the H200 the driver crashed the process inside cuGraphInstantiateWithFlags.
const freedCopy = `version: replaycheck/v1
set: crash
probes:
  - name: free-copied-buffer-in-capture
    hazard: free-in-capture
    modes: [relaxed]
    guards: [off]
    buffers:
      src: {bytes: 4KiB, init: iota8}
      dst: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - copy: {dst: dst, src: src}
        - free: {buffer: src}
    expect:
      unguarded: rejected
`

// runFreedCopy runs the probe on the simulator's profile, unguarded.
func runFreedCopy(profile string) *reports.Report {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	Expect(os.WriteFile(filepath.Join(dir, "crash.yaml"), []byte(freedCopy), 0o644)).To(Succeed())
	sets, err := probes.Load(probes.DefaultLimits(), dir)
	Expect(err).NotTo(HaveOccurred())
	b, err := sim.New(sim.Options{Profile: profile})
	Expect(err).NotTo(HaveOccurred())
	dev, err := b.Open(context.Background(), 0)
	Expect(err).NotTo(HaveOccurred())
	defer func() { Expect(dev.Close()).To(Succeed()) }()
	rep := reports.New("replaycheck", "test", reports.Options{})
	rep.Backend, rep.Profile = "sim", profile
	for _, in := range probes.Instances(sets[0].Probes, probes.Matrix{Guards: []bool{false}, Replays: 2}) {
		rep.Add(capture.Run(context.Background(), dev, in, capture.Options{Runtime: guard.Reference(guard.Options{})}))
	}
	return rep
}

var _ = Describe("an instance whose platform process crashes", func() {
	It("ends in error of kind crash on sim/cuda, at the end of the capture, and the table and the text say so", func() {
		rep := runFreedCopy("cuda")
		Expect(rep.Results).To(HaveLen(1))
		e := rep.Results[0]
		Expect(e.Outcome).To(Equal(probes.Errored), e.Reason)
		Expect(e.Error.Kind).To(Equal(capture.ErrCrash), e.Reason)
		Expect(e.Reason).To(ContainSubstring("crashes the process (signal SIGSEGV)"))
		Expect(e.Error.Step.String()).To(Equal("capture main end"))
		Expect(reports.EnforcementTable(rep).Rows[0].Cells).To(Equal([]string{"-", "-", reports.CellCrash}))

		var buf bytes.Buffer
		Expect(reports.WriteText(&buf, rep, reports.TextOptions{})).To(Succeed())
		Expect(buf.String()).To(ContainSubstring("crash: in 1 instance (of crash/free-copied-buffer-in-capture) the platform's process dies inside a call"))
		Expect(buf.String()).To(ContainSubstring("run it with --isolate"))
	})

	It("is not a crash on sim/cann, which makes the graph, nor in a run on a device", func() {
		rep := runFreedCopy("cann")
		Expect(rep.Results[0].Outcome).NotTo(Equal(probes.Errored), rep.Results[0].Reason)
		var buf bytes.Buffer
		Expect(reports.WriteText(&buf, rep, reports.TextOptions{})).To(Succeed())
		Expect(buf.String()).NotTo(ContainSubstring("--isolate"))

		// The same crashed entry from an isolated device run: nothing to advise.
		crashedRep := runFreedCopy("cuda")
		crashedRep.Backend = "cuda"
		buf.Reset()
		Expect(reports.WriteText(&buf, crashedRep, reports.TextOptions{})).To(Succeed())
		Expect(buf.String()).NotTo(ContainSubstring("run it with --isolate"))
	})

	It("shows other errors as error, not crash", func() {
		rep := reports.New("replaycheck", "test", reports.Options{})
		rep.Backend, rep.Profile = "sim", "cuda"
		for _, k := range []capture.ErrorKind{capture.ErrSetup, capture.ErrDeviceLost} {
			r := unguarded("p/x@relaxed/guards-off", "p/x", 2, probes.Errored)
			r.Hazard, r.Error = "free-in-capture", &capture.RunError{Kind: k, Message: "m"}
			rep.Results = nil
			rep.Add(r)
			Expect(reports.EnforcementTable(rep).Rows[0].Cells[2]).To(Equal(reports.CellError), "%s", k)
		}
	})
})
