package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config is one watched run of a program.
type Config struct {
	// Program is the command line; Program[0] is looked up in PATH as a shell would.
	Program []string
	// Env is added to the process's environment (later entries win).
	Env []string
	// Dir is the program's working directory ("": the caller's).
	Dir string
	// Stdin, Stdout and Stderr are the program's own (nil: /dev/null).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Backend is "cuda", "acl" or "auto" (both).
	Backend string
	// Refuse keeps stale launches from the driver.
	Refuse bool
	// Interposer is the path of libreplaycheck-watch.so (watch/interpose builds it).
	Interposer string
	// Live gets each new finding once, as DescribeLive writes it (nil: nowhere).
	Live io.Writer
	// Suppress holds the suppressions (nil: none).
	Suppress *Suppressions
	// Events gets every event line as it arrives (nil: none), so a run can be checked again.
	Events io.Writer
	// Linger is how long to wait, after the program ended, for processes it left behind to close
	// their connections (0: two seconds). Their later events are lost.
	Linger time.Duration
}

// Result is what a watched run found.
type Result struct {
	// ExitCode is the program's exit status; -1 when a signal killed it.
	ExitCode int
	// Signal names the signal that killed the program ("SIGSEGV"), "" when it exited;
	// SignalNumber is its number (0 when it exited).
	Signal       string
	SignalNumber int
	// Started and Ended bound the program's run.
	Started, Ended time.Time
	Summary
}

// Backends are the values Config.Backend takes.
var Backends = []string{"cuda", "acl", "auto"}

// backendEnv is RC_WATCH_BACKEND for a Config.Backend.
func backendEnv(b string) (string, error) {
	switch b {
	case "cuda", "acl":
		return b, nil
	case "auto", "":
		return "cuda,acl", nil
	}
	return "", fmt.Errorf("watch: unknown backend %q (want %s)", b, strings.Join(Backends, ", "))
}

// Run starts the program with the interposer preloaded, checks the events of every process it
// makes until the program ends, and returns what was found. An error means the program could not
// be watched at all (no interposer, no socket, a program that does not start); a program that
// fails or dies is a Result. When ctx ends, the program gets SIGTERM and Run goes on until it ends.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if len(cfg.Program) == 0 {
		return nil, errors.New("watch: no program to run")
	}
	backend, err := backendEnv(cfg.Backend)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(cfg.Interposer); err != nil {
		return nil, fmt.Errorf("watch: interposer: %w", err)
	}
	dir, err := os.MkdirTemp("", "replaycheck-watch-")
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "events")
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("watch: listen: %w", err)
	}
	defer ln.Close()

	cmd := exec.Command(cfg.Program[0], cfg.Program[1:]...)
	cmd.Dir = cfg.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = cfg.Stdin, cfg.Stdout, cfg.Stderr
	cmd.Env = programEnv(os.Environ(), cfg.Env, cfg.Interposer, sock, backend, cfg.Refuse)

	s := &session{checker: NewChecker(Options{Suppress: cfg.Suppress, Symbolizer: NewSymbolizer()}),
		live: cfg.Live, events: cfg.Events, queue: make(chan message, queueMessages)}
	checked := make(chan struct{})
	go s.check(checked)
	accepted := make(chan struct{})
	go s.accept(ln, accepted)

	res := &Result{Started: time.Now()}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-waited:
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		werr = <-waited
	}
	res.Ended = time.Now()
	if werr != nil {
		var ee *exec.ExitError
		if !errors.As(werr, &ee) {
			return nil, fmt.Errorf("watch: %w", werr)
		}
	}
	res.ExitCode = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal, res.SignalNumber = signalName(ws.Signal()), int(ws.Signal())
	}

	// The program's own connection ends with it; children it left behind get Linger to end theirs.
	linger := cfg.Linger
	if linger == 0 {
		linger = 2 * time.Second
	}
	s.drain(linger)
	ln.Close()
	<-accepted
	s.wg.Wait()
	close(s.queue)
	<-checked
	res.Summary = s.checker.Result()
	if s.err != nil {
		res.Summary.Notes = append(res.Summary.Notes, s.err.Error())
	}
	return res, nil
}

// programEnv is the program's environment: the caller's, then extra, then the interposer's own
// variables, LD_PRELOAD keeping what the caller preloads after the interposer.
func programEnv(base, extra []string, lib, sock, backend string, refuse bool) []string {
	env := append(append([]string(nil), base...), extra...)
	preload := lib
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "LD_PRELOAD="); ok {
			if v != "" {
				preload += ":" + v
			}
			break
		}
	}
	r := "0"
	if refuse {
		r = "1"
	}
	return append(env, "LD_PRELOAD="+preload, "RC_WATCH_SOCKET="+sock, "RC_WATCH_BACKEND="+backend,
		"RC_WATCH_REFUSE="+r)
}

// queueMessages is how many messages may wait between the connections' readers and the checker.
// Readers only copy: a process never waits for the checker until this many are queued (a message
// is one line, or up to 64 KiB of lines that waited in the interposer).
const queueMessages = 4096

// session reads the processes' connections and feeds one checker.
type session struct {
	mu      sync.Mutex // conns
	checker *Checker   // the check goroutine's alone
	live    io.Writer
	events  io.Writer
	err     error // the first malformed event, kept as a note
	queue   chan message
	nconn   int // connections accepted

	wg    sync.WaitGroup
	conns map[*net.UnixConn]bool
}

func (s *session) accept(ln *net.UnixListener, done chan<- struct{}) {
	defer close(done)
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.conns == nil {
			s.conns = map[*net.UnixConn]bool{}
		}
		s.conns[c] = true
		s.nconn++
		conn := s.nconn
		s.mu.Unlock()
		s.wg.Add(1)
		go s.read(c, conn)
	}
}

// message is what one read of a connection got: whole lines.
type message struct {
	conn int
	data []byte
}

// read queues one process's messages, conn numbering its connection.
func (s *session) read(c *net.UnixConn, conn int) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			s.queue <- message{conn, bytes.Clone(buf[:n])}
		}
		if err != nil {
			return
		}
	}
}

// check feeds the checker the queued messages, line by line, until the queue is closed.
func (s *session) check(done chan<- struct{}) {
	defer close(done)
	for m := range s.queue {
		for data := m.data; len(data) > 0; {
			var line []byte
			line, data, _ = bytes.Cut(data, []byte("\n"))
			s.line(line, m.conn)
		}
	}
}

// line checks one event; a recorded stream gets it with the connection's number (conn=N).
func (s *session) line(msg []byte, conn int) {
	if len(msg) == 0 {
		return
	}
	if s.events != nil {
		fmt.Fprintf(s.events, "%s conn=%d\n", msg, conn)
	}
	ev, err := ParseEvent(msg)
	if err != nil {
		if s.err == nil {
			s.err = fmt.Errorf("watch: an event the checker could not read (%v): %q", err, msg)
		}
		return
	}
	ev.Conn = conn
	for _, f := range s.checker.Add(ev) {
		if s.live != nil {
			fmt.Fprintln(s.live, DescribeLive(f))
		}
	}
}

// drain waits up to d for every connection to close, then closes those left.
func (s *session) drain(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n == 0 {
			// A process that just connected may not have been accepted yet; one short look more.
			time.Sleep(20 * time.Millisecond)
			s.mu.Lock()
			n = len(s.conns)
			s.mu.Unlock()
			if n == 0 {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
}

// signalName is "SIGSEGV" for syscall.SIGSEGV.
func signalName(sig syscall.Signal) string {
	if n, ok := signalNames[sig]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGHUP: "SIGHUP",
	syscall.SIGILL: "SIGILL", syscall.SIGINT: "SIGINT", syscall.SIGKILL: "SIGKILL", syscall.SIGPIPE: "SIGPIPE",
	syscall.SIGQUIT: "SIGQUIT", syscall.SIGSEGV: "SIGSEGV", syscall.SIGTERM: "SIGTERM", syscall.SIGTRAP: "SIGTRAP",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2", syscall.SIGALRM: "SIGALRM", syscall.SIGXCPU: "SIGXCPU",
}

// CheckEvents checks a recorded event stream (Config.Events' output) again, without a program.
func CheckEvents(r io.Reader, name string, opt Options) (Summary, error) {
	c := NewChecker(opt)
	err := ReadEvents(r, name, func(e Event) error {
		c.Add(e)
		return nil
	})
	return c.Result(), err
}
