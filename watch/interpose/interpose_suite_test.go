package interpose_test

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/include"
	"github.com/replaycheck/replaycheck/internal/cbuild"
	"github.com/replaycheck/replaycheck/internal/leakcheck"
	"github.com/replaycheck/replaycheck/watch/interpose"
)

func TestInterpose(t *testing.T) {
	RegisterFailHandler(Fail)
	leakcheck.Suite(t)
	RunSpecs(t, "watch/interpose")
}

// built holds what BeforeSuite compiles once: the interposer, the fake drivers (full, and CUDA
// without cuFuncGetParamInfo) and the test programs.
var built struct {
	lib              string
	cuda, nolayout   string // directories holding libcuda.so.1
	acl              string // directory holding libascendcl.so
	cudaLinked, cuDl string
	aclLinked, aclDl string
}

var _ = BeforeSuite(func() {
	if _, err := exec.LookPath(cbuild.Compiler()[0]); err != nil {
		Skip("no C compiler: " + err.Error())
	}
	dir := GinkgoT().TempDir()
	built.cuda = filepath.Join(dir, "cuda")
	built.nolayout = filepath.Join(dir, "nolayout")
	built.acl = filepath.Join(dir, "acl")
	inc := filepath.Join(dir, "include")
	Expect(os.MkdirAll(filepath.Join(inc, "replaycheck"), 0o755)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(inc, include.WatchABIPath), include.WatchABI, 0o644)).To(Succeed())

	program := func(out, src string, args ...string) func() error {
		return func() error {
			src, _ := filepath.Abs(filepath.Join("testdata", src))
			cc := cbuild.Compiler()
			a := append(cc[1:], "-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread", "-rdynamic", "-I", inc, "-o", out, src)
			a = append(a, args...)
			a = append(a, "-ldl")
			if b, err := exec.Command(cc[0], a...).CombinedOutput(); err != nil {
				return errors.New(err.Error() + "\n" + string(b))
			}
			return nil
		}
	}
	built.cudaLinked = filepath.Join(dir, "cuda_linked")
	built.cuDl = filepath.Join(dir, "cuda_dl")
	built.aclLinked = filepath.Join(dir, "acl_linked")
	built.aclDl = filepath.Join(dir, "acl_dl")
	steps := []func() error{
		func() (err error) { built.lib, err = interpose.Build(filepath.Join(dir, "lib")); return err },
		func() error { _, err := fake.Build(built.cuda, fake.CUDA, fake.Variant{}); return err },
		func() error {
			_, err := fake.Build(built.nolayout, fake.CUDA, fake.Variant{Omit: "cuFuncGetParamInfo"})
			return err
		},
		func() error { _, err := fake.Build(built.acl, fake.ACL, fake.Variant{}); return err },
		program(built.cuDl, "cuda_prog.c"),
		program(built.aclDl, "acl_prog.c"),
	}
	Expect(cbuild.Each(len(steps), func(i int) error { return steps[i]() })).To(Succeed())
	// The linked programs need the fakes built first.
	linked := []func() error{
		program(built.cudaLinked, "cuda_prog.c", "-DLINKED", "-L", built.cuda, "-l:libcuda.so.1"),
		program(built.aclLinked, "acl_prog.c", "-DLINKED", "-L", built.acl, "-lascendcl"),
	}
	Expect(cbuild.Each(len(linked), func(i int) error { return linked[i]() })).To(Succeed())
})

// event is one line the interposer sent: its name and its fields (a key may repeat: arg).
type event struct {
	line   string
	name   string
	fields map[string][]string
}

func (e event) get(key string) string {
	if v := e.fields[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func parse(line string) event {
	words := strings.Split(strings.TrimSuffix(line, "\n"), " ")
	e := event{line: line, name: words[0], fields: map[string][]string{}}
	for _, w := range words[1:] {
		k, v, ok := strings.Cut(w, "=")
		Expect(ok).To(BeTrue(), "field %q in %q", w, line)
		e.fields[k] = append(e.fields[k], v)
	}
	return e
}

// result is a program's run: its stdout and stderr, how it ended and the events received.
type result struct {
	out    string
	code   int
	signal syscall.Signal
	events []event
}

// named returns the events called name (of any process).
func (r result) named(name string) []event {
	var out []event
	for _, e := range r.events {
		if e.name == name {
			out = append(out, e)
		}
	}
	return out
}

// names returns the events' names, stacks left out.
func (r result) names() []string {
	var out []string
	for _, e := range r.events {
		if e.name != "stack" {
			out = append(out, e.name)
		}
	}
	return out
}

// value returns what the program printed as "key=value".
func (r result) value(key string) string {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `=(.*)$`).FindStringSubmatch(r.out)
	Expect(m).NotTo(BeNil(), "%s= not printed in:\n%s", key, r.out)
	return m[1]
}

// opts are how a program is run: the driver directory, and whether the interposer is preloaded
// and connected.
type opts struct {
	driverDir string
	preload   bool
	socket    string // "": a socket the test listens on; "none": unset; else the path given
	env       []string
}

// run runs a program under the interposer, listening on the socket, and returns what it printed
// and the events every process of it sent.
func run(o opts, prog string, args ...string) result {
	dir := GinkgoT().TempDir()
	cmd := exec.Command(prog, args...)
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+o.driverDir)
	if o.preload {
		cmd.Env = append(cmd.Env, "LD_PRELOAD="+built.lib)
	}
	var (
		ln      *net.UnixListener
		mu      sync.Mutex
		lines   []string
		conns   sync.WaitGroup
		accept  sync.WaitGroup
		readErr error
	)
	switch o.socket {
	case "":
		path := filepath.Join(dir, "s")
		var err error
		ln, err = net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
		Expect(err).NotTo(HaveOccurred())
		cmd.Env = append(cmd.Env, interpose.EnvSocket+"="+path)
		accept.Go(func() {
			for {
				c, err := ln.AcceptUnix()
				if err != nil {
					return
				}
				conns.Go(func() {
					defer c.Close()
					buf := make([]byte, 8192)
					for {
						n, err := c.Read(buf)
						if n > 0 {
							mu.Lock()
							lines = append(lines, string(buf[:n]))
							mu.Unlock()
						}
						if err != nil {
							if err != io.EOF {
								mu.Lock()
								readErr = err
								mu.Unlock()
							}
							return
						}
					}
				})
			}
		})
	case "none":
	default:
		cmd.Env = append(cmd.Env, interpose.EnvSocket+"="+o.socket)
	}
	cmd.Env = append(cmd.Env, o.env...)
	out, err := cmd.CombinedOutput()
	var r result
	r.out = string(out)
	if err != nil {
		var ee *exec.ExitError
		Expect(errors.As(err, &ee)).To(BeTrue(), "%v", err)
		ws := ee.Sys().(syscall.WaitStatus)
		r.code = ws.ExitStatus()
		if ws.Signaled() {
			r.signal = ws.Signal()
		}
	}
	if ln != nil {
		// Every process of the program has exited: what is left to accept is in the backlog.
		Expect(ln.SetDeadline(time.Now().Add(20 * time.Millisecond))).To(Succeed())
		accept.Wait()
		ln.Close()
		conns.Wait()
		Expect(readErr).NotTo(HaveOccurred())
	}
	for _, msg := range lines {
		Expect(msg).To(HaveSuffix("\n"), "a message holds whole lines")
		Expect(len(msg)).To(BeNumerically("<=", 64<<10))
		for _, l := range strings.SplitAfter(strings.TrimSuffix(msg, "\n"), "\n") {
			Expect(len(l)).To(BeNumerically("<=", 4096))
			r.events = append(r.events, parse(strings.TrimSuffix(l, "\n")+"\n"))
		}
	}
	return r
}

// watched runs prog connected to a socket, with the CUDA fake.
func watched(prog string, args ...string) result {
	return run(opts{driverDir: built.cuda, preload: true}, prog, args...)
}
