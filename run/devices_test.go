package run_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/run"
	"github.com/replaycheck/replaycheck/verdict"
)

// faultSet writes a probe file whose first probe carries fault and whose two others are clean,
// each one instance (global, guards off), and returns its path.
func faultSet(fault string) string {
	GinkgoHelper()
	probe := func(name, faults string) string {
		return fmt.Sprintf(`  - name: %s
    hazard: none
    buffers: {a: {bytes: 1KiB, init: iota8}, b: {bytes: 1KiB}}
    streams: [main]
    capture: {ops: [copy: {dst: b, src: a}]}
    expect: {guarded: exact, unguarded: exact}
    replays: 2
    modes: [global]
    guards: [off]
%s`, name, faults)
	}
	text := "version: replaycheck/v1\nset: f\nprobes:\n" + probe("faulty", "    faults: ["+fault+"]\n") + probe("after", "") + probe("after-too", "")
	path := filepath.Join(GinkgoT().TempDir(), "f.yaml")
	Expect(os.WriteFile(path, []byte(text), 0o644)).To(Succeed())
	return path
}

// executeFaults runs the instances of the probe file at path with c.
func executeFaults(c run.Config, path string) *reports.Report {
	GinkgoHelper()
	c.Paths, c.Baseline = []string{path}, "none"
	ps, err := run.Load(path)
	Expect(err).NotTo(HaveOccurred())
	ins, err := run.Select(ps, c)
	Expect(err).NotTo(HaveOccurred())
	Expect(ins).To(HaveLen(3))
	rep, err := run.Execute(context.Background(), c, ins)
	Expect(err).NotTo(HaveOccurred())
	Expect(rep.NotRun).To(BeEmpty())
	Expect(rep.Results).To(HaveLen(3), "the run finishes")
	return rep
}

var _ = Describe("faults in a run", func() {
	Describe("--fault", func() {
		It("takes REPLAYCHECK_FAULT as its default, comma-separated, and a flag replaces it", func() {
			c := run.Defaults(env(map[string]string{run.EnvFault: "hang@2, alloc-fail@1"}))
			Expect(c.Check()).To(Succeed())
			Expect(c.Faults).To(Equal([]string{"hang@2", "alloc-fail@1"}))
			f := run.FaultFlag(&c)
			Expect(f.Set("launch-fail@1")).To(Succeed())
			Expect(f.Set("device-lost@3,hang@1")).To(Succeed())
			Expect(c.Faults).To(Equal([]string{"launch-fail@1", "device-lost@3", "hang@1"}))
			Expect(f.String()).To(Equal("launch-fail@1,device-lost@3,hang@1"))
			Expect(f.Set("oom@1")).To(MatchError(ContainSubstring(`unknown fault kind "oom"`)))
		})

		It("reports a malformed REPLAYCHECK_FAULT, a bad fault, and a round --replays never reaches", func() {
			c := run.Defaults(env(map[string]string{run.EnvFault: "hang"}))
			Expect(c.Check()).To(MatchError(ContainSubstring(`REPLAYCHECK_FAULT="hang": fault "hang": want hang@K`)))
			c = run.Defaults(env(nil))
			c.Faults = []string{"alloc-fail@0"}
			Expect(c.Check()).To(MatchError(HavePrefix("--fault: ")))
			c.Faults, c.Replays = []string{"alloc-fail@50", "device-lost@4"}, 3
			Expect(c.Check()).To(MatchError("--fault: device-lost@4: --replays 3 runs 3 rounds per instance, so round 4 never comes"))
		})

		It("refuses two faults that fire at the same call, naming both, from a flag or the variable", func() {
			c := run.Defaults(env(nil))
			c.Faults = []string{"launch-fail@2", "launch-fail@2"}
			Expect(c.Check()).To(MatchError("--fault: launch-fail@2 fires at the same call as launch-fail@2: one fault per replay round"))
			c.Faults = []string{"launch-fail@2", "alloc-fail@2", "hang@2"}
			Expect(c.Check()).To(MatchError("--fault: hang@2 fires at the same call as launch-fail@2: one fault per replay round"))
			c.Faults = []string{"launch-fail@2", "alloc-fail@2", "device-lost@3"}
			Expect(c.Check()).To(Succeed(), "an allocation and a launch are different calls")
			c = run.Defaults(env(map[string]string{run.EnvFault: "alloc-fail@1,alloc-fail@1"}))
			Expect(c.Check()).To(MatchError("REPLAYCHECK_FAULT: alloc-fail@1 fires at the same call as alloc-fail@1: one fault per allocation"))
		})

		Describe("that fires at the same call as a probe's own", func() {
			var c run.Config
			var ins []probes.Instance
			var path string
			BeforeEach(func() {
				path = faultSet("launch-fail@2")
				c = run.Defaults(env(nil))
				c.Paths, c.Baseline, c.Faults = []string{path}, "none", []string{"alloc-fail@3", "device-lost@2"}
				ps, err := run.Load(path)
				Expect(err).NotTo(HaveOccurred())
				ins, err = run.Select(ps, c)
				Expect(err).NotTo(HaveOccurred())
			})
			want := func() string {
				return fmt.Sprintf("--fault: device-lost@2 fires at the same call as launch-fail@2, probe f/faulty's own fault (%s:13): one fault per replay round", path)
			}

			It("is refused before anything runs: by CheckFaults and by Execute", func() {
				Expect(c.CheckFaults(ins)).To(MatchError(HavePrefix(want())))
				Expect(c.CheckFaults(ins[1:])).To(Succeed(), "the probes without faults of their own")
				var rec recorder
				rep, err := run.Execute(context.Background(), c, ins, &rec)
				Expect(rep).To(BeNil())
				Expect(err).To(MatchError(HavePrefix(want())))
				Expect(rec.header).To(BeNil(), "no device was opened")
			})

			It("ends the instance in error when it is run alone (the suite's way), naming the probe", func() {
				p, err := run.Open(context.Background(), c)
				Expect(err).NotTo(HaveOccurred())
				defer p.Close()
				e := run.Instance(context.Background(), p.Device, ins[0], c, nil)
				Expect(e.Outcome).To(Equal(probes.Errored))
				Expect(e.Error.Kind).To(Equal(capture.ErrSetup))
				Expect(e.Reason).To(HavePrefix(want()))
				Expect(e.Verdict.Status).NotTo(Equal(verdict.Pass))
				Expect(run.Instance(context.Background(), p.Device, ins[1], c, nil).Error.Kind).To(Equal(capture.ErrDeviceLost), "a probe without faults of its own takes the run's")
			})
		})

		It("injects into every selected instance", func() {
			c := run.Defaults(env(nil))
			c.Faults = []string{"launch-fail@2"}
			rep := executeFaults(c, faultSet("alloc-fail@9"))
			for _, e := range rep.Results {
				Expect(e.Outcome).To(Equal(probes.Errored), e.ID)
				Expect(e.Error.Kind).To(Equal(capture.ErrFault))
				Expect(e.Faults).To(ContainElement(HaveField("Fault", "launch-fail@2")))
				Expect(e.DeviceChange).To(BeNil())
			}
			Expect(rep.Results[0].Faults).To(HaveLen(2), "the probe's own, then the run's")
		})
	})

	Describe("on the simulator, which always opens a fresh device", func() {
		It("runs what follows a lost device on a fresh one, and says so", func() {
			rep := executeFaults(run.Defaults(env(nil)), faultSet("device-lost@1"))
			lost := rep.Results[0]
			Expect(lost.Error.Kind).To(Equal(capture.ErrDeviceLost))
			Expect(lost.DeviceChange).NotTo(BeNil())
			Expect(lost.DeviceChange.State).To(Equal(capture.DeviceLost))
			Expect(lost.DeviceChange.Replacement).To(HavePrefix("sim device 0"))
			for _, e := range rep.Results[1:] {
				Expect(e.Outcome).To(Equal(probes.Exact), e.Reason)
				Expect(e.DeviceChange).To(BeNil())
			}
		})

		It("finishes a run whose instance hangs in a device call: timeout in Launch, the device abandoned and replaced", func() {
			c := run.Defaults(env(nil))
			c.Timeout = 300 * time.Millisecond
			rep := executeFaults(c, faultSet("hang@1"))
			hung := rep.Results[0]
			Expect(hung.Error.Kind).To(Equal(capture.ErrTimeout))
			Expect(hung.Reason).To(HavePrefix("timeout in Launch: "))
			Expect(hung.DeviceChange.State).To(Equal(capture.DeviceAbandoned))
			Expect(hung.DeviceChange.Replacement).NotTo(BeEmpty())
			Expect(rep.Results[1].Outcome).To(Equal(probes.Exact))
			Expect(rep.Results[2].Outcome).To(Equal(probes.Exact))
			var text bytes.Buffer
			Expect(reports.WriteText(&text, rep, reports.TextOptions{})).To(Succeed())
			Expect(text.String()).To(ContainSubstring("device    abandoned: a call never returned; its worker is left blocked and the device is never called again; the instances that follow run on a fresh device"))
		})
	})

	Describe("on the cuda binding over its fake library", func() {
		var lib string
		BeforeEach(func() {
			if why := backends.Unavailable("cuda"); why != "" {
				Skip(why)
			}
			var err error
			lib, err = fake.Build(GinkgoT().TempDir(), fake.CUDA, fake.Variant{})
			Expect(err).NotTo(HaveOccurred())
		})
		cfg := func() run.Config {
			c := run.Defaults(env(nil))
			c.Backend, c.Library, c.Timeout = "cuda", lib, 300*time.Millisecond
			return c
		}

		It("closes a lost device (a reset) and runs the rest on a fresh one", func() {
			rep := executeFaults(cfg(), faultSet("device-lost@2"))
			Expect(rep.Results[0].Error.Kind).To(Equal(capture.ErrDeviceLost))
			change := rep.Results[0].DeviceChange
			Expect(change.Replacement).To(HavePrefix("cuda device 0"))
			Expect(rep.Results[1].Outcome).To(Equal(probes.Exact), rep.Results[1].Reason)
			Expect(rep.Results[2].Outcome).To(Equal(probes.Exact))
		})

		It("skips the rest after a hang, saying which device went and why, and still finishes", func() {
			rep := executeFaults(cfg(), faultSet("hang@2"))
			hung := rep.Results[0]
			Expect(hung.Error.Kind).To(Equal(capture.ErrTimeout))
			Expect(hung.Error.Call).To(Equal("Launch"))
			Expect(hung.DeviceChange).To(PointTo(MatchAllFields(Fields{
				"State": Equal(capture.DeviceAbandoned), "Device": HavePrefix("cuda device 0"), "Replacement": BeEmpty(),
				"Detail": ContainSubstring("a call into " + lib + " never returned"),
			})))
			for _, e := range rep.Results[1:] {
				Expect(e.Outcome).To(Equal(probes.Skipped), e.ID)
				Expect(e.Reason).To(HavePrefix("not run: device cuda device 0"))
				Expect(e.Reason).To(ContainSubstring("was abandoned by f/faulty@global/guards-off, and no device replaced it: a call into"))
			}
			Expect(rep.Summary.Skip).To(Equal(2))
		})
	})
})
