package run_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/run"
	"github.com/replaycheck/replaycheck/run/proc"
)

// workerMode makes this test binary a worker of run.Config.Isolate (Config.Worker names it): serve
// is the real child (run.ServeWorker); the others die in the ways a child can, after announcing a
// device call as a worker does.
const workerMode = "REPLAYCHECK_TEST_WORKER_MODE"

func init() {
	if os.Getenv(run.EnvWorker) == "" {
		return
	}
	out := os.NewFile(3, "results")
	mode := os.Getenv(workerMode)
	if mode == "serve" {
		if err := run.ServeWorker(context.Background(), os.Stdin, out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	fmt.Fprintln(out, `{"call":"Malloc"}`)
	switch mode {
	case "panic":
		panic("the worker broke")
	case "page-panic": // a later call on the last-call page, as a real worker stores them
		page, err := proc.MapLastCall()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(5)
		}
		for _, call := range []string{"Malloc", "Launch", "SyncStream"} {
			page.Store(call)
		}
		panic("the worker broke")
	case "exit":
		os.Exit(3)
	case "hang":
		for { // asleep with a timer: a select{} here is a deadlock Go ends, without cgo's threads
			time.Sleep(time.Hour)
		}
	case "garbage":
		fmt.Fprintln(out, `{"entry":`)
	}
	os.Exit(0) // no entry
}

var _ = Describe("Execute with Isolate", func() {
	var instances []probes.Instance
	config := func(mode string) run.Config {
		GinkgoHelper()
		GinkgoT().Setenv(workerMode, mode)
		c := run.Defaults(env(nil))
		c.Paths, c.Isolate, c.Worker = []string{catalog}, true, []string{os.Args[0]}
		return c
	}
	BeforeEach(func() {
		ps, err := run.Load(catalog)
		Expect(err).NotTo(HaveOccurred())
		c := run.Defaults(env(nil))
		c.Run = `^basic/simple-replay@(global|relaxed)/`
		instances, err = run.Select(ps, c)
		Expect(err).NotTo(HaveOccurred())
		Expect(instances).To(HaveLen(4))
	})
	// errors runs every instance in workers of mode and returns each entry's error.
	errors := func(c run.Config) []capture.RunError {
		GinkgoHelper()
		rep, err := run.Execute(context.Background(), c, instances)
		Expect(err).NotTo(HaveOccurred())
		Expect(rep.NotRun).To(BeEmpty())
		Expect(rep.Results).To(HaveLen(len(instances)), "the run goes on after each death")
		var out []capture.RunError
		for _, e := range rep.Results {
			Expect(e.Outcome).To(Equal(probes.Errored))
			Expect(e.Verdict.Status).To(BeEquivalentTo("fail"))
			out = append(out, *e.Error)
		}
		return out
	}
	crashed := func(msg string) capture.RunError { return capture.RunError{Kind: capture.ErrCrash, Message: msg} }

	It("gives the outcomes and verdicts of an in-process run to healthy instances", func() {
		in, err := run.Execute(context.Background(), run.Defaults(env(nil)), instances)
		Expect(err).NotTo(HaveOccurred())
		iso, err := run.Execute(context.Background(), config("serve"), instances)
		Expect(err).NotTo(HaveOccurred())
		Expect(outcomes(iso.Results)).To(Equal(outcomes(in.Results)))
		Expect(iso.Summary).To(Equal(in.Summary))
	})

	It("has a worker load only the file its instance came from, not every path of the run", func() {
		// A path the run was given, unreadable by the time the workers start: a worker that loaded
		// every path again would fail each instance (and take time in proportion to the catalog).
		c := config("serve")
		c.Paths = append(c.Paths, "/nonexistent/more-probes.yaml")
		rep, err := run.Execute(context.Background(), c, instances)
		Expect(err).NotTo(HaveOccurred())
		for _, e := range rep.Results {
			Expect(e.Outcome).To(Equal(probes.Exact), "%s: %s", e.ID, e.Reason)
		}
	})

	It("says a worker panicked, and in which call", func() {
		Expect(errors(config("panic"))).To(HaveEach(crashed("crashed (exit status 2 during Malloc): panic: the worker broke")))
	})

	It("reads the call a worker died in from its last-call page, newer than the result pipe", func() {
		Expect(errors(config("page-panic"))).To(HaveEach(crashed("crashed (exit status 2 during SyncStream): panic: the worker broke")))
	})

	It("runs in a worker an instance from a file that is not among the run's paths", func() {
		// As the Ginkgo suite's REPLAYCHECK_PROBES adds files to a catalog given as one directory:
		// the worker loads the file the instance came from.
		extra := filepath.Join(GinkgoT().TempDir(), "extra.yaml")
		Expect(os.WriteFile(extra, []byte(`version: replaycheck/v1
set: extra
probes:
  - name: copy
    hazard: none
    buffers: {src: {bytes: 4KiB, init: iota8}, dst: {bytes: 4KiB}}
    streams: [main]
    capture: {ops: [copy: {dst: dst, src: src}]}
    expect: {guarded: exact, unguarded: exact}
`), 0o644)).To(Succeed())
		ps, err := run.Load(extra)
		Expect(err).NotTo(HaveOccurred())
		sel := run.Defaults(env(nil))
		sel.Run = `^extra/copy@global/guards-on$`
		ins, err := run.Select(ps, sel)
		Expect(err).NotTo(HaveOccurred())
		rep, err := run.Execute(context.Background(), config("serve"), ins) // Paths: the catalog only
		Expect(err).NotTo(HaveOccurred())
		Expect(rep.Results).To(HaveLen(1))
		Expect(rep.Results[0].Outcome).To(Equal(probes.Exact), rep.Results[0].Reason)
	})

	It("has a worker send a passing instance's timeline only when the run keeps every timeline", func() {
		// The parent drops it anyway; for a probe of 100,000 ops it is 20 MB of JSON to send.
		entry := func(timelines string) reports.Entry {
			GinkgoHelper()
			c := run.Defaults(env(nil))
			c.Paths, c.Timelines = []string{catalog}, timelines
			req, err := json.Marshal(map[string]any{"config": c, "version": "test", "id": instances[0].ID()})
			Expect(err).NotTo(HaveOccurred())
			var out bytes.Buffer
			Expect(run.ServeWorker(context.Background(), bytes.NewReader(req), &out)).To(Succeed())
			lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
			var last struct{ Entry *reports.Entry }
			Expect(json.Unmarshal(lines[len(lines)-1], &last)).To(Succeed())
			Expect(last.Entry).NotTo(BeNil())
			Expect(last.Entry.Verdict.Status).To(BeEquivalentTo("pass"))
			return *last.Entry
		}
		Expect(entry("failed").Timeline.Events()).To(BeEmpty())
		Expect(entry("all").Timeline.Events()).NotTo(BeEmpty())
	})

	It("says a worker exited, with its status", func() {
		Expect(errors(config("exit"))).To(HaveEach(crashed("crashed (exit status 3 during Malloc)")))
	})

	It("says a worker that exited without a result, or wrote a broken one, crashed", func() {
		Expect(errors(config("silent"))).To(HaveEach(crashed("crashed (exit status 0 during Malloc): it reported no result")))
		for _, e := range errors(config("garbage")) {
			Expect(e.Kind).To(Equal(capture.ErrCrash))
			Expect(e.Message).To(HavePrefix(`crashed (exit status 0 during Malloc): the worker wrote "{\"entry\":"`))
		}
	})

	It("kills a worker that hangs past the instance timeout plus the grace, as a timeout", func() {
		c := run.WithWorkerGrace(config("hang"), 0)
		// Long enough for a race-built child on a loaded machine to start and announce its call
		// (50ms was not: the message then lacked "during Malloc"); the child hangs regardless.
		c.Timeout = time.Second
		for _, e := range errors(c) {
			Expect(e.Kind).To(Equal(capture.ErrTimeout), e.Message)
			Expect(e.Message).To(Equal("timeout: the worker was killed after 1s during Malloc"))
		}
	})

	It("leaves a device lost in a worker to that worker: the next instance runs on a fresh one", func() {
		c := config("serve")
		c.Faults = []string{"device-lost@1"}
		rep, err := run.Execute(context.Background(), c, instances)
		Expect(err).NotTo(HaveOccurred())
		Expect(rep.Results).To(HaveLen(len(instances)))
		for _, e := range rep.Results {
			Expect(e.Verdict.Status).NotTo(BeEquivalentTo("skip"), e.Verdict.Reason)
			Expect(e.Error).NotTo(BeNil())
			Expect(e.Error.Kind).To(Equal(capture.ErrDeviceLost))
			Expect(e.DeviceChange).NotTo(BeNil())
			Expect(e.DeviceChange.Detail).To(Equal("the device was the worker process's, and went with it"))
		}
	})

	It("is the default when REPLAYCHECK_ISOLATE says so, and a bad value is an error", func() {
		Expect(run.Defaults(env(map[string]string{run.EnvIsolate: "1"})).Isolate).To(BeTrue())
		Expect(run.Defaults(env(map[string]string{run.EnvIsolate: "0"})).Isolate).To(BeFalse())
		c := run.Defaults(env(map[string]string{run.EnvIsolate: "maybe"}))
		Expect(c.Check()).To(MatchError(ContainSubstring(`REPLAYCHECK_ISOLATE="maybe"`)))
	})
})

// outcomes is each entry's id, outcome, verdict and error kind.
func outcomes(es []reports.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		kind := ""
		if e.Error != nil {
			kind = string(e.Error.Kind)
		}
		out[i] = fmt.Sprintf("%s %s %s %s %s", e.ID, e.Outcome, e.Verdict.Status, e.Verdict.Rule, kind)
	}
	return out
}
