package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The descriptors a worker is started with, besides standard input (its request) and standard
// error (kept: End.Why, End.Signal).
const (
	// ResultsFD is the write end of the result pipe, where a worker writes its lines.
	ResultsFD = 3
	// LastCallFD is the last-call page (MapLastCall).
	LastCallFD = 4
)

// Results is the result pipe a worker's parent passed it (descriptor ResultsFD), for the worker to
// write its lines to; an error when that descriptor is no pipe (the process was not started as a
// worker by RunWorker). It is asked before the descriptor is wrapped in an *os.File, whose
// finalizer would close one that is not ours.
func Results() (*os.File, error) {
	var st syscall.Stat_t
	if syscall.Fstat(ResultsFD, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return nil, fmt.Errorf("no result pipe on file descriptor %d", ResultsFD)
	}
	return os.NewFile(ResultsFD, "replaycheck-results"), nil
}

// WorkerWaitDelay is how long a killed worker's pipes are waited for once it has been killed
// (exec.Cmd.WaitDelay): a parent that stops waiting for a worker waits that long more for it.
const WorkerWaitDelay = time.Second

// End is how a worker ended.
type End struct {
	// Err is exec.Cmd.Wait's error: nil when the worker exited 0, an *exec.ExitError when it
	// exited otherwise or a signal killed it.
	Err error
	// Signal is the name of the signal that ended the worker: one that killed it, or one the Go
	// runtime said it could not handle (in C code: a driver library, a plugin) before it exited
	// with status 2. "" when none did.
	Signal string
	// Why is the line of its standard error that says why it ended: a panic, a fatal error, its own
	// error ("replaycheck worker: ...") or an exit() called inside a plugin; "" when none does.
	Why string
	// LastCall is the name the worker stored last on its last-call page, "" when it stored none.
	LastCall string
}

// RunWorker starts cmd as a worker and waits for it: request on its standard input, the write end
// of a pipe as descriptor ResultsFD and a fresh last-call page as LastCallFD, in a process group
// of its own and, on Linux, killed when this process dies. It sets cmd's Stdin, Stderr,
// ExtraFiles, WaitDelay and SysProcAttr; a cmd made with exec.CommandContext is killed when its
// context ends. read is given the pipe's read end and reads it to its end (the worker exits or
// closes it); RunWorker then waits for the worker and returns how it ended. An error means the
// worker did not start, and says which step failed.
//
// The goroutine that calls RunWorker keeps its OS thread until it returns: on Linux the
// parent-death signal follows the thread that started the worker, not the process.
func RunWorker(cmd *exec.Cmd, request []byte, read func(results io.Reader)) (End, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return End{}, fmt.Errorf("making the worker's pipe: %w", err)
	}
	defer pr.Close()
	page, err := newLastCallPage()
	if err != nil {
		pw.Close()
		return End{}, fmt.Errorf("making the worker's last-call page: %w", err)
	}
	defer page.Close()
	var stderr stderrHead
	cmd.Stdin, cmd.Stderr, cmd.ExtraFiles = bytes.NewReader(request), &stderr, []*os.File{pw, page}
	cmd.WaitDelay = WorkerWaitDelay
	cmd.SysProcAttr = workerAttr()
	// The thread that starts the child must outlive it: its end is the parent's death to Linux.
	unlock := lockStarter()
	defer unlock()
	err = cmd.Start()
	pw.Close() // the child holds the write end now
	if err != nil {
		return End{}, fmt.Errorf("starting the worker: %w", err)
	}
	read(pr)
	end := End{Err: cmd.Wait(), LastCall: readLastCall(page)}
	var ee *exec.ExitError
	if errors.As(end.Err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			end.Signal = signalName(ws.Signal())
		} else if ee.ExitCode() == 2 {
			end.Signal = stderr.signal()
		}
		end.Why = stderr.why()
	}
	return end, nil
}

// stderrHead keeps the first 64 KiB a worker wrote to stderr: where the Go runtime says why it
// died (a panic, a fatal error, a signal in C code), before the goroutine dump.
type stderrHead struct {
	mu  sync.Mutex
	buf []byte
}

func (h *stderrHead) Write(b []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := 64<<10 - len(h.buf); room > 0 {
		h.buf = append(h.buf, b[:min(room, len(b))]...)
	}
	return len(b), nil
}

var (
	// goSignal is how the Go runtime reports a signal it could not handle (one in C code: a driver
	// library or a plugin) before it exits with status 2.
	goSignal = regexp.MustCompile(`(?m)^(SIG[A-Z]+): `)
	// panicLine is a Go runtime's panic or fatal error, a replaycheck worker's own error, or
	// replaycheck's exit handler naming the plugin that called exit().
	panicLine = regexp.MustCompile(`(?m)^(panic: .*|fatal error: .*|replaycheck worker: .*|replaycheck: exit\(\) was called while .*)$`)
)

// signal is the signal the Go runtime said killed the worker, or "".
func (h *stderrHead) signal() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if m := goSignal.FindSubmatch(h.buf); m != nil {
		return string(m[1])
	}
	return ""
}

// why is the worker's panic or fatal error line, or its own error (a request it could not serve),
// or "".
func (h *stderrHead) why() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.TrimSpace(panicLine.FindString(string(h.buf)))
}
