package verdict_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/verdict"
)

func unguarded(id, probe string, mode device.CaptureMode, o probes.Outcome) *capture.Result {
	return &capture.Result{ID: id, Probe: probe, Mode: mode, Outcome: o, Replays: 1, Rounds: 1}
}

// mustStep reads a step's text form.
func mustStep(text string) probes.Step {
	s, err := probes.ParseStep(text)
	if err != nil {
		panic(err)
	}
	return s
}

func rejection(code int, class device.Class, invalidated bool) *capture.Rejection {
	return &capture.Rejection{Step: mustStep("capture main op 2"), Op: "SyncStream", Code: code, Class: class, Invalidated: invalidated}
}

var _ = Describe("Baseline", func() {
	results := func() []*capture.Result {
		rej := unguarded("p/sync@global/guards-off", "p/sync", device.Global, probes.Rejected)
		rej.Rejection = rejection(900, device.ClassCaptureUnsupported, true)
		guarded := unguarded("p/sync@global/guards-on", "p/sync", device.Global, probes.Rejected)
		guarded.Guarded = true
		return []*capture.Result{
			unguarded("p/rebase@global/guards-off", "p/rebase", device.Global, probes.Corrupted),
			rej, guarded,
			unguarded("p/broken@global/guards-off", "p/broken", device.Global, probes.Errored),
		}
	}

	It("records unguarded results that ran, and reads back what it wrote", func() {
		b := verdict.NewBaseline("sim/cuda", "test", results())
		Expect(b.Instances).To(Equal(map[string]verdict.Behaviour{
			"p/rebase@global/guards-off": {Outcome: "corrupted"},
			"p/sync@global/guards-off":   {Outcome: "rejected", Class: "capture-unsupported", Code: 900, Invalidated: true},
		}))
		var buf bytes.Buffer
		Expect(b.WriteYAML(&buf)).To(Succeed())
		Expect(buf.String()).To(ContainSubstring("  p/sync@global/guards-off: {outcome: rejected, class: capture-unsupported, code: 900, invalidated: true}\n"))
		back, err := verdict.ParseBaseline("b.yaml", buf.Bytes())
		Expect(err).NotTo(HaveOccurred())
		Expect(back.Instances).To(Equal(b.Instances))
		Expect(back.Platform).To(Equal("sim/cuda"))
	})

	DescribeTable("rejects a malformed file, naming file and line",
		func(text, want string) {
			_, err := verdict.ParseBaseline("b.yaml", []byte(text))
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("unknown key", "version: replaycheck-baseline/v1\nplatform: sim/cann\ncolour: red\ninstances: {}\n", "b.yaml: yaml: unmarshal errors:\n  line 3: field colour not found"),
		Entry("wrong version", "version: v0\nplatform: sim/cann\ninstances: {}\n", "b.yaml:1: version must be replaycheck-baseline/v1"),
		Entry("no platform", "version: replaycheck-baseline/v1\ninstances: {}\n", "b.yaml: platform is missing"),
		Entry("unknown outcome", "version: replaycheck-baseline/v1\nplatform: p\ninstances:\n  a/b@global/guards-off: {outcome: fine}\n", `b.yaml:4: a/b@global/guards-off: outcome "fine"`),
		Entry("rejection without class", "version: replaycheck-baseline/v1\nplatform: p\ninstances:\n  a/b@global/guards-off: {outcome: rejected, code: 1}\n", "b.yaml:4: a/b@global/guards-off: a rejection needs its class"),
		Entry("code on a silent outcome", "version: replaycheck-baseline/v1\nplatform: p\ninstances:\n  a/b@global/guards-off: {outcome: corrupted, code: 1}\n", "belong to a rejection only"),
		Entry("guarded instance", "version: replaycheck-baseline/v1\nplatform: p\ninstances:\n  a/b@global/guards-on: {outcome: exact}\n", "b.yaml:4: a/b@global/guards-on: a baseline records unguarded instances"),
	)

	It("reports changed, uncharacterised and missing instances", func() {
		b := verdict.NewBaseline("sim/cuda", "", results())
		b.Instances["p/gone@relaxed/guards-off"] = verdict.Behaviour{Outcome: "exact"}
		now := results()
		now[0].Outcome = probes.Exact // the re-base no longer corrupts
		now[1].Rejection.Code = 901   // another code
		now = append(now, unguarded("p/new@global/guards-off", "p/new", device.Global, probes.Exact))
		var lines []string
		for _, d := range b.Diff(now) {
			lines = append(lines, d.String())
		}
		Expect(lines).To(Equal([]string{
			"p/gone in relaxed mode: in the baseline (exact) but not in this run",
			"p/new in global mode: uncharacterised (not in the baseline), now exact",
			"p/rebase in global mode: behaviour changed: baseline says corrupted, now exact",
			"p/sync in global mode: behaviour changed: baseline says rejected with 900 [capture-unsupported], capture invalidated, now rejected with 901 [capture-unsupported], capture invalidated",
		}))
	})

	It("counts a baseline instance that was skipped or broke as not run, not as unchanged", func() {
		b := verdict.NewBaseline("sim/cuda", "", results())
		now := results()
		now[0].Outcome = probes.Skipped // p/rebase: the backend lacked a capability this time
		drifts := b.Diff(now)
		Expect(drifts).To(HaveLen(1))
		Expect(drifts[0].Now).To(BeNil())
		Expect(drifts[0].String()).To(Equal("p/rebase in global mode: in the baseline (corrupted) but not in this run"))
		Expect(b.Unchanged(now)).To(Equal(1)) // p/sync only
	})

	It("narrows to the instances a selection covers, keeping those it cannot judge, and leaves itself whole", func() {
		b := verdict.NewBaseline("sim/cuda", "", results())
		b.Instances["p/gone@relaxed/guards-off"] = verdict.Behaviour{Outcome: "exact"}
		covers := func(id string) (bool, error) {
			if id == "p/gone@relaxed/guards-off" {
				return false, errors.New("cannot tell")
			}
			return strings.HasPrefix(id, "p/sync"), nil
		}
		in, outside := b.Within(covers)
		Expect(outside).To(Equal(1))
		Expect(in.Instances).To(HaveLen(2))
		Expect(in.Instances).To(HaveKey("p/sync@global/guards-off"))
		Expect(in.Instances).To(HaveKey("p/gone@relaxed/guards-off"))
		Expect(in.Platform).To(Equal(b.Platform))
		Expect(b.Instances).To(HaveLen(3))
	})

	It("names the file and both platforms when it is used for another platform", func() {
		b := verdict.NewBaseline("sim/cuda", "", nil)
		b.File = "baselines/sim-cann.yaml"
		Expect(b.CheckPlatform("sim/cuda")).To(Succeed())
		Expect(b.CheckPlatform("sim/cann")).To(MatchError("baseline baselines/sim-cann.yaml records platform sim/cuda, but this run is sim/cann"))
	})

	It("judges unguarded results against it and leaves guarded ones to their expectation", func() {
		b := verdict.NewBaseline("sim/cuda", "", results())
		b.File = "baselines/sim-cuda.yaml"
		same := results()
		v, why := judge(same[0], b)
		Expect(v).To(Equal(verdict.Pass), why)
		Expect(why).To(Equal("matches baseline sim/cuda"))

		drifted := unguarded("p/rebase@global/guards-off", "p/rebase", device.Global, probes.Exact)
		v, why = judge(drifted, b)
		Expect(v).To(Equal(verdict.Fail))
		Expect(why).To(Equal("drift from baseline sim/cuda (baselines/sim-cuda.yaml): p/rebase in global mode: behaviour changed: baseline says corrupted, now exact"))

		unknown := unguarded("p/new@global/guards-off", "p/new", device.Global, probes.Exact)
		v, _ = judge(unknown, b)
		Expect(v).To(Equal(verdict.Uncharacterised))

		// An explicit expectation still rules: a matching baseline cannot save a wrong outcome.
		wrong := unguarded("p/rebase@global/guards-off", "p/rebase", device.Global, probes.Corrupted)
		wrong.Expected = probes.Exact
		v, _ = judge(wrong, b)
		Expect(v).To(Equal(verdict.Fail))

		v, _ = judge(same[0], nil)
		Expect(v).To(Equal(verdict.Uncharacterised))
	})
})

// judge is verdict.Judge as a status and its reason.
func judge(res *capture.Result, b *verdict.Baseline) (verdict.Status, string) {
	v := verdict.Judge(res, b)
	return v.Status, v.Reason
}

var _ = Describe("LocateBaseline", func() {
	write := func(dir, platform string) {
		GinkgoHelper()
		Expect(os.MkdirAll(filepath.Join(dir, "baselines"), 0o755)).To(Succeed())
		f, err := os.Create(filepath.Join(dir, "baselines", verdict.BaselineFile("sim/cann")))
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		Expect(verdict.NewBaseline(platform, "", nil).WriteYAML(f)).To(Succeed())
	}

	It("finds auto in the first directory that has one, and nothing where none has", func() {
		empty, first, second := GinkgoT().TempDir(), GinkgoT().TempDir(), GinkgoT().TempDir()
		write(first, "sim/cann")
		write(second, "sim/cann")
		b, err := verdict.LocateBaseline("auto", []string{empty, first, second}, "sim/cann")
		Expect(err).NotTo(HaveOccurred())
		Expect(b.File).To(HavePrefix(first))

		b, err = verdict.LocateBaseline("", []string{empty}, "sim/cann")
		Expect(err).NotTo(HaveOccurred())
		Expect(b).To(BeNil())
	})

	It("reads none as none and a file as given, and refuses another platform's", func() {
		dir := GinkgoT().TempDir()
		write(dir, "sim/cuda")
		b, err := verdict.LocateBaseline("none", []string{dir}, "sim/cann")
		Expect(err).NotTo(HaveOccurred())
		Expect(b).To(BeNil())
		file := filepath.Join(dir, "baselines", "sim-cann.yaml")
		_, err = verdict.LocateBaseline(file, nil, "sim/cann")
		Expect(err).To(MatchError(ContainSubstring("records platform sim/cuda, but this run is sim/cann")))
		_, err = verdict.LocateBaseline("auto", []string{dir}, "sim/cann")
		Expect(err).To(MatchError(ContainSubstring("records platform sim/cuda")))
	})
})

// The platform key comes from a device: a driver library or a runtime plugin may report anything.
// BaselineFile must stay one plain file name inside the directory it is joined to.
var _ = DescribeTable("BaselineFile keeps a device's platform key inside the baselines directory",
	func(key, want string) {
		name := verdict.BaselineFile(key)
		Expect(name).To(Equal(want))
		Expect(filepath.Base(name)).To(Equal(name), "no separator")
		Expect(filepath.Join("baselines", name)).To(HavePrefix("baselines" + string(filepath.Separator)))
		Expect(filepath.Dir(filepath.Join("baselines", name))).To(Equal("baselines"))
	},
	Entry("a plain key", "sim/cann", "sim-cann.yaml"),
	Entry("a device's key", "acl/cann-9.0-a2a3", "acl-cann-9.0-a2a3.yaml"),
	Entry("parent directories", "../../etc/passwd", "-..-etc-passwd.yaml"),
	Entry("dot-dot alone", "..", "unknown.yaml"),
	Entry("a hidden name", ".x", "x.yaml"),
	Entry("an absolute path", "/etc/cron.d/x", "-etc-cron.d-x.yaml"),
	Entry("a Windows separator", `a\..\b`, "a-..-b.yaml"),
	Entry("control characters and NUL", "a\x1b[2J\x00b", "a--2J-b.yaml"),
	Entry("non-ASCII", "cann/é", "cann--.yaml"),
	Entry("empty", "", "unknown.yaml"),
)
