package proc_test

import (
	"io"
	"os"
	"os/exec"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/run/proc"
)

// How a worker's parent reads its end. run's isolate_test.go reads the same through a run with
// Config.Isolate, as the messages of the entries it gives.
var _ = Describe("RunWorker", func() {
	// ended runs cmd as a worker given request and returns what it wrote on its result pipe and
	// how it ended.
	ended := func(cmd *exec.Cmd, request string) (string, proc.End) {
		GinkgoHelper()
		var said strings.Builder
		end, err := proc.RunWorker(cmd, []byte(request), func(r io.Reader) { io.Copy(&said, r) })
		Expect(err).NotTo(HaveOccurred())
		return said.String(), end
	}
	sh := func(script string) *exec.Cmd { return exec.Command("sh", "-c", script) }
	status := func(end proc.End) int {
		GinkgoHelper()
		var ee *exec.ExitError
		Expect(end.Err).To(BeAssignableToTypeOf(ee))
		return end.Err.(*exec.ExitError).ExitCode()
	}

	It("gives a process it did not start no result pipe (Results), and a worker one", func() {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), workerMode+"=results")
		out, err := cmd.Output()
		Expect(err).To(HaveOccurred(), "started without the pipe: %s", out)
		Expect(string(out)).To(Equal("no result pipe on file descriptor 3\n"))

		cmd = exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), workerMode+"=results")
		var stdout strings.Builder
		cmd.Stdout = &stdout
		_, end := ended(cmd, "")
		Expect(end.Err).NotTo(HaveOccurred())
		Expect(stdout.String()).To(Equal("a result pipe\n"))
	})

	It("gives the worker its request, a result pipe and a last-call page, and reads the call it stored last", func() {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), workerMode+"=page")
		said, end := ended(cmd, "the request")
		Expect(said).To(Equal("the request"))
		Expect(end.LastCall).To(Equal("Launch"))
		Expect(status(end)).To(Equal(3))
		Expect(end.Signal).To(BeEmpty())
		Expect(end.Why).To(BeEmpty())
	})

	It("says nothing of a worker that exited 0 having stored no call", func() {
		said, end := ended(sh("echo done >&3"), "")
		Expect(said).To(Equal("done\n"))
		Expect(end).To(Equal(proc.End{}))
	})

	It("names the signal that killed the worker", func() {
		_, end := ended(sh("kill -SEGV $$"), "")
		Expect(end.Signal).To(Equal("SIGSEGV"))
		Expect(status(end)).To(Equal(-1))
	})

	It("names the signal the Go runtime said it could not handle, only with the status 2 it exits with", func() {
		_, end := ended(sh("echo 'SIGSEGV: segmentation violation' >&2; exit 2"), "")
		Expect(end.Signal).To(Equal("SIGSEGV"))
		_, end = ended(sh("echo 'SIGSEGV: segmentation violation' >&2; exit 3"), "")
		Expect(end.Signal).To(BeEmpty())
	})

	It("keeps the line of its standard error that says why it ended", func() {
		_, end := ended(sh("echo 'goroutine 1 [running]:' >&2; echo 'panic: the worker broke' >&2; exit 2"), "")
		Expect(end.Why).To(Equal("panic: the worker broke"))
		Expect(end.Signal).To(BeEmpty())
		_, end = ended(sh("echo 'replaycheck worker: no such instance' >&2; exit 2"), "")
		Expect(end.Why).To(Equal("replaycheck worker: no such instance"))
	})

	It("says which step failed when the worker does not start", func() {
		_, err := proc.RunWorker(exec.Command("/nonexistent/worker"), nil, func(io.Reader) { Fail("read a worker that did not start") })
		Expect(err).To(MatchError(HavePrefix("starting the worker: ")))
	})
})
