package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/replaycheck/replaycheck/run"
)

// The run's process under a supervisor. A runtime plugin or driver library that ends the process
// from inside without running an exit handler (_exit(), or a kill of its own) leaves nothing to
// say so: its status, 0 for _exit(0), would read as a pass. So `replaycheck run` starts itself
// again as a child (EnvSupervised set) and waits: the child does the run and, as it returns,
// writes its exit status on file descriptor 3; a child that ends without writing it ended
// unfinished, and the supervisor says so and exits 2 (or 128 plus the signal that killed it).
// The supervisor forwards SIGINT, SIGTERM, SIGHUP and SIGCONT to the child, which is in a process
// group of its own so that a Ctrl-C reaches it once (run.ChildAttr), and dies with the supervisor;
// a Ctrl-Z (SIGTSTP) stops the child, then the supervisor.

// EnvSupervised is set in the environment of the child a supervisor starts: its value is the file
// descriptor of the status pipe.
const EnvSupervised = "REPLAYCHECK_SUPERVISED"

// Command is what the binary runs: Main in this process, or, for `run`, Main in a supervised
// child of this process (see above). The tests that call Main directly run no child.
func Command(args []string) int {
	switch {
	case isWorker():
		return Main(args, os.Stdout, os.Stderr)
	case os.Getenv(EnvSupervised) != "":
		return supervised(args)
	case len(args) > 0 && args[0] == "run":
		return supervise(args, os.Stderr)
	}
	return Main(args, os.Stdout, os.Stderr)
}

// supervised is the child's side: the run, then its status on the pipe.
func supervised(args []string) int {
	fd, err := strconv.Atoi(os.Getenv(EnvSupervised))
	var status *os.File
	if err == nil {
		syscall.CloseOnExec(fd) // processes the run starts must not hold the pipe open
		status = os.NewFile(uintptr(fd), "replaycheck-status")
	}
	// Workers of --isolate and anything else the run starts are not supervised children.
	os.Unsetenv(EnvSupervised)
	code := Main(args, os.Stdout, os.Stderr)
	if status != nil {
		fmt.Fprintf(status, "%d\n", code)
		status.Close()
	}
	return code
}

// supervise starts this executable again as the supervised child with args, forwards signals to
// it and returns its status, or reports on stderr that it ended before the run finished.
func supervise(args []string, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "replaycheck run: finding this executable to start the run's process: %v\n", err)
		return ExitUsage
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(stderr, "replaycheck run: a pipe for the run's process: %v\n", err)
		return ExitUsage
	}
	defer pr.Close()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGTSTP, syscall.SIGCONT)
	defer signal.Stop(sigs)
	unlock := run.LockStarter()
	defer unlock()
	cmd := exec.Command(exe, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{pw}
	cmd.Env = append(os.Environ(), EnvSupervised+"=3")
	cmd.SysProcAttr = run.ChildAttr()
	err = cmd.Start()
	pw.Close()
	if err != nil {
		fmt.Fprintf(stderr, "replaycheck run: starting the run's process: %v\n", err)
		return ExitUsage
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				switch sig {
				case syscall.SIGTSTP:
					// Ctrl-Z stops the terminal's process group, which the child is not in: stop
					// it, then this process, as the terminal would have.
					cmd.Process.Signal(syscall.SIGSTOP)
					syscall.Kill(os.Getpid(), syscall.SIGSTOP)
				default: // SIGCONT (fg, bg) continues the child as well
					cmd.Process.Signal(sig)
				}
			case <-done:
				return
			}
		}
	}()
	werr := cmd.Wait()
	close(done)
	// The child wrote its status before it exited, if it did: what the pipe holds now is all.
	pr.SetReadDeadline(time.Now().Add(time.Second))
	said, _ := io.ReadAll(pr)
	return supervisedStatus(cmd.ProcessState, werr, string(said), stderr)
}

// supervisedStatus is the supervisor's exit status for a child that ended in state (werr: Wait's
// error) having written said on its status pipe.
func supervisedStatus(state *os.ProcessState, werr error, said string, stderr io.Writer) int {
	if state == nil {
		fmt.Fprintf(stderr, "replaycheck run: waiting for the run's process: %v\n", werr)
		return ExitUsage
	}
	if code, err := strconv.Atoi(strings.TrimSpace(said)); err == nil && state.Exited() && code == state.ExitCode() {
		return code
	}
	const unfinished = "nothing after the last line above was done and no report was written; --isolate runs each instance in a process of its own, so that one ending it ends only that instance"
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		fmt.Fprintf(stderr, "replaycheck run: the run's process was killed by signal %s before the run finished: %s\n", run.SignalName(ws.Signal()), unfinished)
		return 128 + int(ws.Signal())
	}
	var exit *exec.ExitError
	if werr != nil && !errors.As(werr, &exit) {
		fmt.Fprintf(stderr, "replaycheck run: waiting for the run's process: %v\n", werr)
		return ExitUsage
	}
	if state.ExitCode() == 0 {
		// No exit of replaycheck's own says 0 before it wrote its status: code in it ended the
		// process without an exit handler (which would have said which plugin).
		fmt.Fprintf(stderr, "replaycheck run: the run's process exited with status 0 before the run finished, which only code that runs no exit handler does (a runtime plugin or driver library calling _exit(0)): %s\n", unfinished)
	} else {
		fmt.Fprintf(stderr, "replaycheck run: the run's process exited with status %d before the run finished: %s\n", state.ExitCode(), unfinished)
	}
	return ExitUsage
}
