package main_test

import (
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/run"
)

// run --fault through the real binary: a hang in every instance's device call ends each in a
// timeout, the device is replaced each time, and the run finishes with every instance journalled.
var _ = Describe("replaycheck run --fault", Ordered, func() {
	var bin string
	catalog := filepath.Join("..", "..", "specs")
	BeforeAll(func() {
		bin = filepath.Join(GinkgoT().TempDir(), "replaycheck")
		out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	})
	start := func(args ...string) *gexec.Session {
		GinkgoHelper()
		s, err := gexec.Start(exec.Command(bin, args...), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		return s
	}

	It("finishes a run whose every instance hangs in a device call, each a timeout naming the call", func() {
		dir := filepath.Join(GinkgoT().TempDir(), "out")
		s := start("run", "--fault", "hang@1", "--timeout", "200ms", "--out", dir,
			"--run", `^basic/(simple-replay|fork-join)@global/guards-off$`, catalog)
		Eventually(s, "1m").Should(gexec.Exit(1))
		Expect(s.Out).To(gbytes.Say(`timeout in Launch: Launch\(graph main\) on main did not return`))
		d := readDocument(filepath.Join(dir, run.ReportJSON))
		Expect(d.Results).To(HaveLen(2))
		Expect(journalLines(dir)).To(Equal(3), "the header and every instance")
		for _, e := range d.Results {
			Expect(e.Outcome).To(Equal(probes.Errored))
			Expect(e.Error.Kind).To(Equal(capture.ErrTimeout))
			Expect(e.Error.Call).To(Equal("Launch"))
			Expect(e.DeviceState).To(Equal(capture.DeviceAbandoned))
			Expect(e.DeviceChange.Replacement).To(HavePrefix("sim device 0"))
		}
	})

	It("refuses a fault it cannot read, before anything runs", func() {
		s := start("run", "--fault", "oom@1", catalog)
		Eventually(s, "30s").Should(gexec.Exit(2))
		Expect(s.Err).To(gbytes.Say(`invalid value "oom@1" for flag -fault: fault "oom@1": unknown fault kind "oom"`))
	})
})
