package reports_test

import (
	"bytes"
	"context"
	"github.com/replaycheck/replaycheck/runtime/guard"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
)

func unguarded(id, probe string, mode device.CaptureMode, o probes.Outcome) *capture.Result {
	return &capture.Result{ID: id, Probe: probe, Mode: mode, Outcome: o, Replays: 1, Rounds: 1}
}

func rejection(code int, class device.Class, invalidated bool) *capture.Rejection {
	return &capture.Rejection{Step: mustStep("capture main op 2"), Op: "SyncStream", Code: code, Class: class, Invalidated: invalidated}
}

var _ = Describe("the enforcement table", func() {
	It("shows what sim/cann and sim/cuda do with every unguarded hazard probe of the catalog", func() {
		sets, err := probes.Load(probes.DefaultLimits(), filepath.Join("..", "specs"))
		Expect(err).NotTo(HaveOccurred())
		var all []*probes.Probe
		for _, s := range sets {
			all = append(all, s.Probes...)
		}
		var runs []*reports.Report
		for _, profile := range []string{"cann", "cuda"} {
			b, err := sim.New(sim.Options{Profile: profile})
			Expect(err).NotTo(HaveOccurred())
			dev, err := b.Open(context.Background(), 0)
			Expect(err).NotTo(HaveOccurred())
			rep := reports.New("replaycheck", "test", reports.Options{})
			rep.Backend, rep.Profile = "sim", profile
			for _, in := range probes.Instances(all, probes.Matrix{Guards: []bool{false}, Replays: 2}) {
				rep.Add(capture.Run(context.Background(), dev, in, capture.Options{Runtime: guard.Reference(guard.Options{})}))
			}
			Expect(dev.Close()).To(Succeed())
			runs = append(runs, rep)
		}
		var buf bytes.Buffer
		Expect(reports.WriteTable(&buf, reports.EnforcementTable(runs...))).To(Succeed())
		expectGolden("enforcement.txt", buf.Bytes())
	})

	It("marks instances a run did not produce and ignores guarded and positive ones", func() {
		rep := reports.New("replaycheck", "test", reports.Options{})
		rep.Backend, rep.Profile = "sim", "cann"
		rej := unguarded("p/sync@global/guards-off", "p/sync", device.Global, probes.Rejected)
		rej.Hazard = "sync-in-capture"
		rej.Rejection = rejection(107027, device.ClassCapturedStream, false)
		g := unguarded("p/sync@relaxed/guards-on", "p/sync", device.Relaxed, probes.Refused)
		g.Guarded, g.Hazard = true, "sync-in-capture"
		pos := unguarded("p/ok@global/guards-off", "p/ok", device.Global, probes.Exact)
		pos.Hazard = "none"
		for _, r := range []*capture.Result{rej, g, pos} {
			rep.Add(r)
		}
		t := reports.EnforcementTable(rep)
		Expect(t.Rows).To(Equal([]reports.TableRow{{Hazard: "sync-in-capture", Probe: "p/sync", Cells: []string{"107027", "-", "-"}}}))
		Expect(t.Positives).To(Equal(1))
	})

	It("shows both the platform's error and the wrong bytes when a rejected instance still corrupted", func() {
		rep := reports.New("replaycheck", "test", reports.Options{})
		rep.Backend, rep.Profile = "sim", "cann"
		both := unguarded("p/mode@global/guards-off", "p/mode", device.Global, probes.Corrupted)
		both.Hazard = "unsafe-call"
		both.Rejection = rejection(107030, device.ClassCaptureMode, false)
		inv := unguarded("p/mode@relaxed/guards-off", "p/mode", device.Relaxed, probes.Corrupted)
		inv.Hazard = "unsafe-call"
		inv.Rejection = rejection(900, device.ClassCaptureUnsupported, true)
		rep.Add(both)
		rep.Add(inv)
		Expect(reports.EnforcementTable(rep).Rows).To(Equal([]reports.TableRow{
			{Hazard: "unsafe-call", Probe: "p/mode", Cells: []string{"107030+silent", "-", "900+inv+silent"}},
		}))
	})

	It("says why it is empty: no unguarded instances, or only positive ones", func() {
		var buf bytes.Buffer
		Expect(reports.WriteTable(&buf, &reports.Table{})).To(Succeed())
		Expect(buf.String()).To(ContainSubstring("(no unguarded instances)"))
		buf.Reset()
		Expect(reports.WriteTable(&buf, &reports.Table{Positives: 3})).To(Succeed())
		Expect(buf.String()).To(ContainSubstring("no unguarded hazard instances: 3 unguarded instances of positive probes not shown"))
	})
})

var _ = BeforeSuite(func() {
	// The catalog the table golden is built from lives beside this package.
	_, err := os.Stat(filepath.Join("..", "specs"))
	Expect(err).NotTo(HaveOccurred())
})
