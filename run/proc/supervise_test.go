package proc_test

import (
	"os"
	"os/exec"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/run/proc"
)

// The supervisor's reading of how the run's process ended. The script plugin_exit.txtar runs the
// whole of it through the CLI with a plugin that calls _exit(0); harness/runtime_cgo_test.go, the
// suite's through go test.
var _ = Describe("the supervisor of a run's process", func() {
	ended := func(script, said string) (int, string) {
		cmd := exec.Command("sh", "-c", script)
		err := cmd.Run()
		var stderr strings.Builder
		return proc.SupervisedStatus(cmd.ProcessState, err, said, &stderr, "replaycheck run", "--isolate"), stderr.String()
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
		Expect(msg).To(HavePrefix("replaycheck run: the run's process exited with status 0 before the run finished, which only code that ends it without replaycheck's exit handlers does"))
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

	It("says nothing of a process a stop signal ended (a Ctrl-C, a closed pipe), and exits as a shell would say", func() {
		for _, c := range []struct {
			sig  string
			code int
		}{{"INT", 130}, {"TERM", 143}, {"HUP", 129}, {"PIPE", 141}} {
			// A signal this process was started ignoring (nohup: SIGHUP; a background job:
			// SIGINT) is ignored by its children too, and cannot kill sh: 99 says so.
			code, msg := ended("kill -"+c.sig+" $$; exit 99", "started\n")
			if code == 2 && strings.Contains(msg, "exited with status 99") {
				By("SIG" + c.sig + " is ignored where this test runs: not checked")
				continue
			}
			Expect(code).To(Equal(c.code), c.sig)
			Expect(msg).To(BeEmpty(), c.sig)
		}
	})

	It("passes on the status a process said it finished with when a signal killed it after", func() {
		code, msg := ended("kill -INT $$", "started\nfinished 130\n")
		Expect(code).To(Equal(130))
		Expect(msg).To(BeEmpty())
		code, msg = ended("kill -KILL $$", "started\nfinished 1\n")
		Expect(code).To(Equal(1))
		Expect(msg).To(BeEmpty())
	})

	It("takes no REPLAYCHECK_SUPERVISED but a supervisor's for a supervised child", func() {
		for _, v := range []string{"1", "2", "abc", ""} {
			GinkgoT().Setenv(proc.EnvSupervised, v)
			_, ok := proc.SupervisedChild()
			Expect(ok).To(BeFalse(), v)
			_, set := os.LookupEnv(proc.EnvSupervised)
			Expect(set).To(BeFalse(), "forgotten: the processes it starts do not see it")
		}
	})

	It("runs the child with a pipe it reports on, and passes its status on", func() {
		// The child is sh: it writes on the descriptor EnvSupervised names, as SupervisedChild's
		// Finished does.
		say := func(what string) string { return `echo ` + what + ` >&$` + proc.EnvSupervised + `; ` }
		code := proc.Supervise([]string{"sh", "-c", say("started") + say(`"finished 3"`) + "exit 3"}, GinkgoWriter, "t", "--isolate")
		Expect(code).To(Equal(3))
		var stderr strings.Builder
		code = proc.Supervise([]string{"sh", "-c", say("started") + "exit 0"}, &stderr, "t", "--isolate")
		Expect(code).To(Equal(2))
		Expect(stderr.String()).To(HavePrefix("t: the run's process exited with status 0 before the run finished"))
		Expect(os.Getenv(proc.EnvSupervised)).To(BeEmpty(), "the supervisor's own environment is untouched")
	})
})
