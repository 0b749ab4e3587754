package reports_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
)

var _ = Describe("a fault in the text report", func() {
	const deviceErr = "sim: Launch: internal (code 507000 ACL_ERROR_RT_INTERNAL_ERROR): launch failed by injection"
	faulted := func(reason string, faults ...capture.FaultRecord) string {
		r := erroredResult()
		r.Outcome, r.Reason, r.Leaks = probes.Errored, reason, nil
		r.Error = &capture.RunError{Kind: capture.ErrFault, Message: reason}
		r.Faults = faults
		rep := reports.New("replaycheck", "v0.0.0-test", reports.Options{})
		rep.Add(r)
		return string(writeText(rep, reports.TextOptions{}))
	}

	It("does not repeat the device's error when the reason quotes it", func() {
		out := faulted("injected fault launch-fail@2 fired in Launch(graph main) on main: "+deviceErr,
			capture.FaultRecord{Fault: "launch-fail@2", Fired: true, Call: "Launch", Detail: "fired in the device call Launch: " + deviceErr})
		Expect(out).To(ContainSubstring("fault     launch-fail@2: fired in the device call Launch (error in the reason)\n"))
	})

	It("keeps the whole detail when the reason says something else, and for a fault that did not fire", func() {
		out := faulted("the runtime refused: out of memory",
			capture.FaultRecord{Fault: "alloc-fail@1", Fired: true, Call: "Malloc", Detail: "fired in the device call Malloc: " + deviceErr},
			capture.FaultRecord{Fault: "device-lost@5", Detail: "not armed: the instance replays 3 rounds"})
		Expect(out).To(ContainSubstring("alloc-fail@1: fired in the device call Malloc: " + deviceErr + "\n"))
		Expect(out).To(ContainSubstring("device-lost@5: not armed: the instance replays 3 rounds\n"))
	})
})
