package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// EnvSupervised is set in the environment of the child a supervisor starts: its value is the file
// descriptor of the pipe the child reports on.
const EnvSupervised = "REPLAYCHECK_SUPERVISED"

// Finished is what a supervised child reports: its exit status, or, where the child's exit status
// is decided after it can report (a test binary), only that it finished (AnyStatus).
type Finished func(code int)

// AnyStatus is the code a child reports to Finished when whatever status it exits with is its own.
const AnyStatus = -1

// Started is what a supervised child reports as it begins its run, before it loads or opens
// anything: from then on only a Finished ends the run whole. A child that exits having said
// nothing began no run (a test binary whose -run selected no suite), and its status is passed on.
const Started = -2

// SupervisedChild reports whether this process is a supervised child and returns what it says
// that it finished with. It forgets EnvSupervised, so that the processes the run starts (workers
// of --isolate) are not taken for supervised children; call it once, early.
func SupervisedChild() (Finished, bool) {
	v, ok := os.LookupEnv(EnvSupervised)
	if !ok {
		return nil, false
	}
	os.Unsetenv(EnvSupervised)
	// Only what a supervisor passes: descriptor 3, a pipe. A value from elsewhere (the user's
	// environment) is ignored, and this process is not a supervised child. Asked before the
	// descriptor is wrapped in an *os.File, whose finalizer would close one that is not ours.
	var st syscall.Stat_t
	if v != "3" || syscall.Fstat(3, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return nil, false
	}
	syscall.CloseOnExec(3) // processes the run starts must not hold the pipe open
	pipe := os.NewFile(3, "replaycheck-finished")
	return func(code int) {
		switch code {
		case Started:
			fmt.Fprintln(pipe, "started")
			return
		case AnyStatus:
			fmt.Fprintln(pipe, "finished")
		default:
			fmt.Fprintf(pipe, "finished %d\n", code)
		}
		pipe.Close()
	}, true
}

// SuperviseSelf is Supervise of this executable started again with args.
func SuperviseSelf(args []string, stderr io.Writer, who, isolate string) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "%s: finding this executable to start the run's process: %v\n", who, err)
		return 2
	}
	return Supervise(append([]string{exe}, args...), stderr, who, isolate)
}

// Supervise starts argv (this executable, and the arguments that make it do the run) as a
// supervised child, forwards signals to it and returns its exit status when it said it finished;
// otherwise it tells stderr, each line prefixed with who ("replaycheck run"), that the run did not
// finish (naming the front's isolate flag, isolate, as the cure), and returns 2, or 128 plus the
// signal that killed the child.
func Supervise(argv []string, stderr io.Writer, who, isolate string) int {
	pr, pw, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(stderr, "%s: a pipe for the run's process: %v\n", who, err)
		return 2
	}
	defer pr.Close()
	sigs := make(chan os.Signal, 4)
	for _, s := range []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT} {
		// One this process was started ignoring (nohup's SIGHUP) stays ignored, and the child
		// inherits that: a handler here would leave the child its default, and the hangup would
		// end it.
		if !signal.Ignored(s) {
			signal.Notify(sigs, s)
		}
	}
	defer signal.Stop(sigs)
	unlock := lockStarter()
	defer unlock()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{pw}
	cmd.Env = append(os.Environ(), EnvSupervised+"=3")
	cmd.SysProcAttr = supervisedAttr()
	err = cmd.Start()
	pw.Close()
	if err != nil {
		fmt.Fprintf(stderr, "%s: starting the run's process: %v\n", who, err)
		return 2
	}
	done := make(chan struct{})
	var stopped atomic.Bool // a stop signal came: the child's end is the user's doing, not a crash
	go func() {
		for {
			select {
			case sig := <-sigs:
				stopped.Store(true)
				// The terminal signals its whole foreground group, the child with it.
				if sig == syscall.SIGTERM || !foreground() {
					cmd.Process.Signal(sig)
				}
			case <-done:
				return
			}
		}
	}()
	werr := cmd.Wait()
	close(done)
	// The child said it finished before it exited, if it did: what the pipe holds now is all.
	pr.SetReadDeadline(time.Now().Add(time.Second))
	said, _ := io.ReadAll(pr)
	if stopped.Load() && !lastFinished(string(said)) && cmd.ProcessState != nil {
		// Stopped from outside (a Ctrl-\ dumps the child's goroutines and exits 2): its status,
		// and no line calling it a crash.
		stderr = io.Discard
	}
	code := supervisedStatus(cmd.ProcessState, werr, string(said), stderr, who, isolate)
	// Die the way the child did, as the process the user started: a shell, or a parent that looks
	// for a death by signal, sees what it saw before there was a supervisor. Not of SIGPIPE, which
	// Go ignores when it is sent; should a signal not arrive, the status says it.
	if s, ok := stoppedBy(cmd.ProcessState, string(said)); ok && s != syscall.SIGPIPE {
		signal.Stop(sigs)
		signal.Reset(s)
		syscall.Kill(os.Getpid(), s)
		time.Sleep(100 * time.Millisecond)
	}
	return code
}

// stopSignals are the signals that stop a run from outside (a user, a job control, a closed
// pipe): a child they killed did not crash.
var stopSignals = map[syscall.Signal]bool{syscall.SIGINT: true, syscall.SIGTERM: true, syscall.SIGHUP: true, syscall.SIGPIPE: true}

// stoppedBy is the stop signal that killed a child that did not say it finished, if one did.
func stoppedBy(state *os.ProcessState, said string) (syscall.Signal, bool) {
	ws, ok := state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || !stopSignals[ws.Signal()] || lastFinished(said) {
		return 0, false
	}
	return ws.Signal(), true
}

// supervisedStatus is the supervisor's exit status for a child that ended in state (werr: Wait's
// error) having said said on its pipe.
func supervisedStatus(state *os.ProcessState, werr error, said string, stderr io.Writer, who, isolate string) int {
	if state == nil {
		fmt.Fprintf(stderr, "%s: waiting for the run's process: %v\n", who, werr)
		return 2
	}
	if code, ok := finished(said); ok {
		switch {
		case code != AnyStatus && (!state.Exited() || code == state.ExitCode()):
			// As it said; a signal that came after it said so (a SIGINT once the run had stopped
			// listening) changes nothing.
			return code
		case code == AnyStatus && state.Exited():
			return state.ExitCode()
		}
	}
	if state.Exited() && strings.TrimSpace(said) == "" {
		return state.ExitCode() // it began no run
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() && stopSignals[ws.Signal()] {
		return 128 + int(ws.Signal()) // stopped from outside, not a crash: nothing to add
	}
	unfinished := "what it had not printed or written by then, reports included, was not done; " + isolate + " runs each instance in a process of its own, so that one ending it ends only that instance"
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		fmt.Fprintf(stderr, "%s: the run's process was killed by signal %s before the run finished: %s\n", who, signalName(ws.Signal()), unfinished)
		return 128 + int(ws.Signal())
	}
	var exit *exec.ExitError
	if werr != nil && !errors.As(werr, &exit) {
		fmt.Fprintf(stderr, "%s: waiting for the run's process: %v\n", who, werr)
		return 2
	}
	if state.ExitCode() == 0 {
		// No exit of replaycheck's own comes before it said it finished: code in it ended the
		// process without an exit handler (which would have said which plugin).
		fmt.Fprintf(stderr, "%s: the run's process exited with status 0 before the run finished, which only code that ends it without replaycheck's exit handlers does (a runtime plugin or driver library calling _exit(0), say): %s\n", who, unfinished)
	} else {
		fmt.Fprintf(stderr, "%s: the run's process exited with status %d before the run finished: %s\n", who, state.ExitCode(), unfinished)
	}
	return 2
}

// finished is the status a child that said said (its lines) said it finished with, AnyStatus for
// one that said only that it finished; false when its last line is no finish.
func finished(said string) (int, bool) {
	lines := strings.Split(strings.TrimSpace(said), "\n")
	f := strings.Fields(lines[len(lines)-1])
	switch {
	case len(f) == 1 && f[0] == "finished":
		return AnyStatus, true
	case len(f) == 2 && f[0] == "finished":
		code, err := strconv.Atoi(f[1])
		return code, err == nil && code >= 0
	}
	return 0, false
}

// lastFinished reports whether said ends in a finish.
func lastFinished(said string) bool {
	_, ok := finished(said)
	return ok
}
