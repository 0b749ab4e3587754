package cli

import (
	"os/exec"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The supervisor's reading of how the run's process ended; the script plugin_exit.txtar runs the
// whole of it with a plugin that calls _exit(0).
var _ = Describe("the supervisor of a run's process", func() {
	ended := func(script, said string) (int, string) {
		cmd := exec.Command("sh", "-c", script)
		err := cmd.Run()
		var stderr strings.Builder
		return supervisedStatus(cmd.ProcessState, err, said, &stderr), stderr.String()
	}

	It("passes on the status the process said it ends with, and says nothing", func() {
		for _, c := range []struct {
			script, said string
			code         int
		}{{"exit 0", "0\n", 0}, {"exit 1", "1\n", 1}, {"exit 130", "130\n", 130}} {
			code, msg := ended(c.script, c.said)
			Expect(code).To(Equal(c.code))
			Expect(msg).To(BeEmpty())
		}
	})

	It("fails a process that exited 0 without saying so, as unfinished", func() {
		code, msg := ended("exit 0", "")
		Expect(code).To(Equal(ExitUsage))
		Expect(msg).To(HavePrefix("replaycheck run: the run's process exited with status 0 before the run finished, which only code that runs no exit handler does"))
	})

	It("fails a process whose status differs from the one it said", func() {
		code, msg := ended("exit 1", "0\n")
		Expect(code).To(Equal(ExitUsage))
		Expect(msg).To(HavePrefix("replaycheck run: the run's process exited with status 1 before the run finished: nothing after the last line above was done"))
	})

	It("names the signal that killed the process, and exits as a shell would say", func() {
		code, msg := ended("kill -KILL $$", "")
		Expect(code).To(Equal(128 + 9))
		Expect(msg).To(HavePrefix("replaycheck run: the run's process was killed by signal SIGKILL before the run finished: "))
	})
})
