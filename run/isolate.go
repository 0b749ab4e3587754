package run

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/run/proc"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/guard"
	"github.com/replaycheck/replaycheck/verdict"
)

// Crash isolation (Config.Isolate, run --isolate): each instance runs in a worker process
// (proc.RunWorker), the front end's own binary started again with EnvWorker set (a front end calls
// ServeWorker when it sees it). The parent writes the request (the configuration and the instance
// id) to the worker's stdin; the worker loads the probe file of that instance again (requestFor),
// selects it, opens its own device 0 and runtime plugin, runs and judges it through Instance,
// stores the name of every device call before making it on the last-call page (proc.MapLastCall;
// the calls are traced by isolate_trace.go), and writes its judged entry as a JSON line
// {"entry":ENTRY} to the result pipe (proc.ResultsFD; a worker given no page announces each call
// there as {"call":NAME}). The parent journals the entry; a worker that dies first (a signal, an
// exit, a panic) or outlives the instance timeout plus WorkerGrace is an entry in error naming the
// last call it stored. What proc guarantees of the worker's process (its own process group, death
// with its parent on Linux) is in its package doc.
const (
	// EnvIsolate is the default of run --isolate (1, true: isolate).
	EnvIsolate = "REPLAYCHECK_ISOLATE"
	// EnvWorker, set in a process's environment, makes a front end a worker: ServeWorker.
	EnvWorker = "REPLAYCHECK_ISOLATE_WORKER"
)

// WorkerGrace is how long past the instance timeout a child may take (loading the catalog,
// opening the device, closing it) before it is killed and its instance ends in timeout.
const WorkerGrace = 30 * time.Second

// grace is the run's WorkerGrace.
func (c Config) grace() time.Duration {
	if c.workerGrace != nil {
		return *c.workerGrace
	}
	return WorkerGrace
}

// workerRequest is what the parent writes to a child's stdin.
type workerRequest struct {
	Config Config `json:"config"`
	// Guard is Config.Guard, which the config's JSON form leaves out: the suite's negative
	// controls (-replaycheck.disable-guards) must hold in the child too.
	Guard   guard.Options `json:"guard"`
	Version string        `json:"version"`
	ID      string        `json:"id"`
	// LastCallPage: the worker has a last-call page (proc.MapLastCall), where it stores each
	// call's name instead of announcing it on the result pipe.
	LastCallPage bool `json:"last_call_page,omitempty"`
}

// workerLine is one line a child writes to the result pipe: a device call it is about to make, or
// its judged entry (the last line).
type workerLine struct {
	Call  string         `json:"call,omitempty"`
	Entry *reports.Entry `json:"entry,omitempty"`
}

// workerCommand is the child process's command: this executable, or Config.Worker when set.
func (c Config) workerCommand(ctx context.Context) (*exec.Cmd, error) {
	argv := c.Worker
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding this executable to start a worker: %w", err)
		}
		argv = []string{exe}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), EnvWorker+"=1")
	return cmd, nil
}

// InstanceOn runs and judges one instance of a run of c on p: in this process (Instance on
// p.Device, then Platform.Recover, so a device the instance lost or abandoned runs nothing more),
// or in a child process when c.Isolate is set, whose device is its own and goes with it. Execute
// and the Ginkgo suite run every instance through it.
func InstanceOn(ctx context.Context, p *Platform, in probes.Instance, c Config, baseline *verdict.Baseline) reports.Entry {
	if c.Isolate {
		return workerDevice(c.isolated(ctx, in, p, baseline))
	}
	return p.Recover(ctx, Instance(ctx, p.Device, in, c, baseline))
}

// workerDevice says, in the entry of an isolated instance that lost or abandoned its device, that
// the device was the worker's: the parent's device is untouched and the next instance's worker
// opens a fresh one.
func workerDevice(e reports.Entry) reports.Entry {
	if e.DeviceState != "" {
		e.DeviceChange = &reports.DeviceChange{
			State: e.DeviceState, Device: e.Device,
			Replacement: "the next instance's worker process opens its own",
			Detail:      "the device was the worker process's, and went with it",
		}
	}
	return e
}

// requestFor is the request that has a worker run in. The worker loads only the file in's probe
// came from: loading every path of the run again, a run of n instances over m probe files loaded
// n × m files (2,000 files of one probe each: 245 ms per instance, against 44 ms for 200). The
// run loaded and checked them all before it started any worker.
func requestFor(c Config, in probes.Instance) workerRequest {
	if f := in.Probe.Pos.File; f != "" {
		c.Paths = []string{f}
	}
	return workerRequest{Config: c, Guard: c.Guard, Version: c.Version, ID: in.ID(), LastCallPage: true}
}

// isolated runs one instance in a child process (see EnvWorker) and returns its entry, or an
// entry in error saying how the child died.
func (c Config) isolated(ctx context.Context, in probes.Instance, p *Platform, baseline *verdict.Baseline) reports.Entry {
	limit := c.Timeout + c.grace()
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	fail := func(kind capture.ErrorKind, msg string) reports.Entry {
		return failedEntry(in, c, p, baseline, kind, msg)
	}
	cmd, err := c.workerCommand(wctx)
	if err != nil {
		return fail(capture.ErrHarness, err.Error())
	}
	req, err := json.Marshal(requestFor(c, in))
	if err != nil {
		return fail(capture.ErrHarness, err.Error())
	}
	var last string
	var entry *reports.Entry
	var bad error
	end, err := proc.RunWorker(cmd, req, func(results io.Reader) {
		sc := bufio.NewScanner(results)
		sc.Buffer(make([]byte, 64<<10), 1<<30)
		for sc.Scan() {
			var l workerLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				bad = fmt.Errorf("the worker wrote %.80q: %v", sc.Text(), err)
				continue
			}
			if l.Call != "" {
				last = l.Call
			}
			if l.Entry != nil {
				entry = l.Entry
			}
		}
	})
	if err != nil {
		return fail(capture.ErrHarness, err.Error())
	}
	if end.LastCall != "" {
		last = end.LastCall // the page has every call; the pipe, those of a worker that has no page
	}
	during := ""
	if last != "" {
		during = " during " + last
	}
	switch {
	case wctx.Err() != nil && ctx.Err() == nil:
		return fail(capture.ErrTimeout, fmt.Sprintf("timeout: the worker was killed after %v%s", limit, during))
	case wctx.Err() != nil:
		return fail(capture.ErrInterrupted, "interrupted: the worker was killed"+during)
	case entry != nil && end.Err == nil:
		return *entry
	}
	var ee *exec.ExitError
	if errors.As(end.Err, &ee) {
		if end.Signal != "" {
			return fail(capture.ErrCrash, fmt.Sprintf("crashed (signal %s%s)", end.Signal, during))
		}
		msg := fmt.Sprintf("crashed (exit status %d%s)", ee.ExitCode(), during)
		if end.Why != "" {
			msg += ": " + end.Why
		}
		return fail(capture.ErrCrash, msg)
	}
	if end.Err != nil {
		return fail(capture.ErrHarness, fmt.Sprintf("waiting for the worker: %v", end.Err))
	}
	if bad == nil {
		bad = errors.New("it reported no result")
	}
	return fail(capture.ErrCrash, fmt.Sprintf("crashed (exit status 0%s): %v", during, bad))
}

// failedEntry is the judged entry of an instance whose worker gave none.
func failedEntry(in probes.Instance, c Config, p *Platform, baseline *verdict.Baseline, kind capture.ErrorKind, msg string) reports.Entry {
	return unrunEntry(in, c, p.Device.Backend(), p.Key, p.Description, baseline, probes.Errored, msg,
		&capture.RunError{Kind: kind, Message: msg})
}

// ServeWorker is the child side of crash isolation: it reads one request from r, runs that
// instance through Instance on its own device (and runtime plugin), stores every device call's name
// before making it (on the last-call page when the request says the parent gave one, otherwise as
// a line on out) and writes the judged entry on out last. It never journals. An error means no
// entry was written (the parent reports the instance as crashed with it).
func ServeWorker(ctx context.Context, r io.Reader, out io.Writer) error {
	var req workerRequest
	if err := json.NewDecoder(r).Decode(&req); err != nil {
		return fmt.Errorf("reading the worker request: %w", err)
	}
	c := req.Config
	c.Version, c.Guard, c.Isolate, c.Worker = req.Version, req.Guard, false, nil
	ps, err := Load(c.Paths...)
	if err != nil {
		return err
	}
	sel := c
	sel.Run, sel.Shard, sel.Probes = "^"+regexp.QuoteMeta(req.ID)+"$", Shard{}, nil
	ins, err := Select(ps, sel)
	if err != nil {
		return fmt.Errorf("instance %s: %w", req.ID, err)
	}
	w := &announcer{out: bufio.NewWriter(out)}
	if req.LastCallPage {
		page, err := proc.MapLastCall()
		if err != nil {
			return err
		}
		w.page = page
	}
	rut, release, err := LoadRuntime(c.Runtime)
	if err != nil {
		return err
	}
	defer release()
	if rut != nil {
		open := rut.Open
		rut.Open = func(dev device.Device, guarded bool) (runtime.Runtime, error) {
			rt, err := open(dev, guarded)
			if err != nil {
				return nil, err
			}
			return &tracedRuntime{tracedDevice: &tracedDevice{Device: rt, w: w}, rt: rt}, nil
		}
	}
	c.RuntimeUnderTest = rut
	p, err := Open(ctx, c)
	if err != nil {
		return err
	}
	defer p.Close()
	baseline, err := c.LocateBaseline(p.Key)
	if err != nil {
		return err
	}
	var dev device.Device = p.Device
	if rut == nil {
		dev = traced(dev, w) // the built-in guards call the driver through it
	}
	e := c.reportOptions().Trim(Instance(ctx, dev, ins[0], c, baseline))
	return w.line(workerLine{Entry: &e})
}

// announcer writes a worker's lines, each flushed at once, and stores its calls on the last-call
// page: the parent must have the last call before the process dies in it.
type announcer struct {
	mu   sync.Mutex
	out  *bufio.Writer
	err  error
	page proc.LastCallPage // where calls go when the parent gave one (nil: on out)
}

func (a *announcer) line(l workerLine) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil {
		a.out.Write(append(b, '\n'))
		a.err = a.out.Flush()
	}
	return a.err
}

func (a *announcer) call(name string) {
	if a.page != nil {
		a.mu.Lock()
		a.page.Store(name)
		a.mu.Unlock()
		return
	}
	_ = a.line(workerLine{Call: name})
}
