package run_test

import (
	"os"
	"os/exec"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/run"
)

// The supervisor's reading of how the run's process ended. The script plugin_exit.txtar runs the
// whole of it through the CLI with a plugin that calls _exit(0); the suite's through go test is
// "the Ginkgo suite under a supervisor" below.
var _ = Describe("the supervisor of a run's process", func() {
	ended := func(script, said string) (int, string) {
		cmd := exec.Command("sh", "-c", script)
		err := cmd.Run()
		var stderr strings.Builder
		return run.SupervisedStatus(cmd.ProcessState, err, said, &stderr, "replaycheck run", "--isolate"), stderr.String()
	}

	It("passes on the status of a process that finished its run or began none, and says nothing", func() {
		for _, c := range []struct {
			script, said string
			code         int
		}{{"exit 0", "started\nfinished 0\n", 0}, {"exit 1", "started\nfinished 1\n", 1}, {"exit 130", "started\nfinished 130\n", 130},
			{"exit 1", "started\nfinished\n", 1}, {"exit 0", "", 0}, {"exit 3", "", 3}} {
			code, msg := ended(c.script, c.said)
			Expect(code).To(Equal(c.code), c.script)
			Expect(msg).To(BeEmpty())
		}
	})

	It("fails a process that began its run and exited 0 without saying it finished, as unfinished", func() {
		code, msg := ended("exit 0", "started\n")
		Expect(code).To(Equal(2))
		Expect(msg).To(HavePrefix("replaycheck run: the run's process exited with status 0 before the run finished, which only code that runs no exit handler does"))
	})

	It("fails a process whose status differs from the one it said", func() {
		code, msg := ended("exit 1", "started\nfinished 0\n")
		Expect(code).To(Equal(2))
		Expect(msg).To(HavePrefix("replaycheck run: the run's process exited with status 1 before the run finished: what it had not printed or written by then, reports included, was not done"))
	})

	It("names the signal that killed the process, and exits as a shell would say", func() {
		code, msg := ended("kill -KILL $$", "")
		Expect(code).To(Equal(128+9), "even before it began a run")
		Expect(msg).To(HavePrefix("replaycheck run: the run's process was killed by signal SIGKILL before the run finished: "))
		code, msg = ended("kill -KILL $$", "started\n")
		Expect(code).To(Equal(128 + 9))
		Expect(msg).To(HavePrefix("replaycheck run: the run's process was killed by signal SIGKILL before the run finished: "))
	})

	It("runs the child with a pipe it reports on, and passes its status on", func() {
		// The child is sh: it writes on the descriptor EnvSupervised names, as SupervisedChild's
		// Finished does.
		say := func(what string) string { return `echo ` + what + ` >&$` + run.EnvSupervised + `; ` }
		code := run.Supervise([]string{"sh", "-c", say("started") + say(`"finished 3"`) + "exit 3"}, GinkgoWriter, "t", "--isolate")
		Expect(code).To(Equal(3))
		var stderr strings.Builder
		code = run.Supervise([]string{"sh", "-c", say("started") + "exit 0"}, &stderr, "t", "--isolate")
		Expect(code).To(Equal(2))
		Expect(stderr.String()).To(HavePrefix("t: the run's process exited with status 0 before the run finished"))
		Expect(os.Getenv(run.EnvSupervised)).To(BeEmpty(), "the supervisor's own environment is untouched")
	})
})
