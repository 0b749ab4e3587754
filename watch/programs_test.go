package watch_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/internal/cbuild"
	"github.com/replaycheck/replaycheck/watch"
	"github.com/replaycheck/replaycheck/watch/interpose"
)

// The end-to-end tests: the C programs in testdata/programs, each scenario compiled once per way
// of reaching the driver, run over the fake drivers under watch.Run with the interposer, and
// without it. Every hazard has a clean twin that must report nothing.

// attach is one way a program reaches the driver: drv.h's RC_ATTACH.
type attach struct {
	name, define string
	acl          bool // ACL programs are built this way too (CUDA ones always are)
	// launch is the entry point the interposer names for a graph launch reached this way.
	launch string
}

var attaches = []attach{
	{name: "linked", define: "RC_ATTACH_LINKED", acl: true, launch: "cuGraphLaunch"},
	{name: "dlopen", define: "RC_ATTACH_DLOPEN", acl: true, launch: "cuGraphLaunch"},
	{name: "getproc", define: "RC_ATTACH_GETPROC", launch: "cuGraphLaunch"},
	{name: "getproc_ptsz", define: "RC_ATTACH_GETPROC_PTSZ", launch: "cuGraphLaunch_ptsz"},
}

// scenario is one program run with one argument, and what it must show.
type scenario struct {
	program string // testdata/programs/<program>.c
	arg     string
	refuse  bool
	// kinds counts the distinct sites expected, by kind; every other kind must be absent.
	kinds map[watch.Kind]int
	// stdout is the watched program's whole output (a regexp); plain the unwatched one's, when
	// it differs (a refused launch changes what the program sees).
	stdout, plain string
	// signal is the signal the program dies of ("": it exits 0).
	signal string
	// possible: the stale ranges come from kernel arguments.
	possible bool
	// ptds: with the per-thread default stream entry points, the program launches on stream 0.
	ptds bool
	// check makes the scenario's own assertions.
	check func(r *run)
}

func (s scenario) acl() bool { return strings.HasPrefix(s.program, "acl_") }

// run is one watched run of a scenario.
type run struct {
	scenario
	way            attach
	res            *watch.Result
	stdout, events string
	// pid is the program's own process id.
	pid int
}

const (
	stale     = watch.StaleReplay
	freed     = watch.FreeCaptured
	inCapture = watch.AllocInCapture
	freeInCap = watch.FreeInCapture
	shared    = watch.SharedConcurrent
	offWork   = watch.OffCaptureWork
)

// none is the clean twin's expectation.
var none = map[watch.Kind]int{}

func scenarios() []scenario {
	return []scenario{
		// re-base: the two captured copies name b (one writes it, one reads it): a finding each.
		{program: "cuda_rebase", arg: "hazard", kinds: map[watch.Kind]int{stale: 2, freed: 1}, stdout: "launch=0\n", ptds: true,
			check: nothingHoldsNow},
		{program: "cuda_rebase", arg: "clean", kinds: none, stdout: "launch=0\n", ptds: true},
		{program: "cuda_free", arg: "hazard", kinds: map[watch.Kind]int{stale: 2, freed: 1}, stdout: "launch=0\n", ptds: true,
			check: nothingHoldsNow},
		{program: "cuda_free", arg: "hazard", refuse: true, kinds: map[watch.Kind]int{stale: 2, freed: 1}, stdout: "launch=1\n", plain: "launch=0\n", ptds: true},
		{program: "cuda_free", arg: "clean", kinds: none, stdout: "launch=0\n", ptds: true},
		{program: "cuda_realloc", arg: "hazard", kinds: map[watch.Kind]int{stale: 1, freed: 1}, stdout: "launch=0 bystander=overwritten\n", ptds: true,
			check: sameAddressAgain("device")},
		{program: "cuda_realloc", arg: "hazard", refuse: true, kinds: map[watch.Kind]int{stale: 1, freed: 1},
			stdout: "launch=1 bystander=intact\n", plain: "launch=0 bystander=overwritten\n", ptds: true, check: sameAddressAgain("device")},
		{program: "cuda_realloc", arg: "clean", kinds: none, stdout: "launch=0 bystander=intact\n", ptds: true},
		{program: "cuda_realloc", arg: "clean", refuse: true, kinds: none, stdout: "launch=0 bystander=intact\n", ptds: true},
		{program: "cuda_pool", arg: "hazard", kinds: map[watch.Kind]int{stale: 1, freed: 1}, stdout: "launch=0 tensor=overwritten\n", ptds: true,
			check: sameAddressAgain("pool")},
		{program: "cuda_pool", arg: "hazard", refuse: true, kinds: map[watch.Kind]int{stale: 1, freed: 1},
			stdout: "launch=1 tensor=intact\n", plain: "launch=0 tensor=overwritten\n", ptds: true, check: sameAddressAgain("pool")},
		{program: "cuda_pool", arg: "clean", kinds: none, stdout: "launch=0 tensor=intact\n", ptds: true},
		{program: "cuda_private", arg: "clean", kinds: none, stdout: ""},
		{program: "cuda_private", arg: "ordered", kinds: none, stdout: ""},
		{program: "cuda_private", arg: "concurrent", kinds: map[watch.Kind]int{shared: 1}, stdout: "", check: twoStreams},
		// the intermediate block is named by both of capture 1's copies
		{program: "cuda_private", arg: "eager", kinds: map[watch.Kind]int{stale: 2}, stdout: "tensor=overwritten\n", check: poolBlockTakenEagerly},
		// a private pool grows during its capture: its segment is not an allocation in capture
		{program: "cuda_grow", arg: "clean", kinds: none, stdout: ""},
		{program: "cuda_grow", arg: "hazard", kinds: map[watch.Kind]int{inCapture: 1}, stdout: ""},
		{program: "cuda_capalloc", arg: "hazard", kinds: map[watch.Kind]int{inCapture: 3, freeInCap: 2}, stdout: "", ptds: true,
			check: allocatingThreads(2)},
		{program: "cuda_capalloc", arg: "clean", kinds: none, stdout: "", ptds: true},
		{program: "cuda_kernel", arg: "hazard", kinds: map[watch.Kind]int{stale: 1, freed: 1}, stdout: "launch=0\n", ptds: true,
			possible: true, check: kernelArgument},
		{program: "cuda_kernel", arg: "clean", kinds: none, stdout: "launch=0\n", ptds: true},
		{program: "cuda_kernel", arg: "hazard-extra", kinds: map[watch.Kind]int{stale: 1, freed: 1}, stdout: "launch=0\n", ptds: true,
			possible: true, check: kernelArgument},
		{program: "cuda_kernel", arg: "clean-extra", kinds: none, stdout: "launch=0\n", ptds: true},
		{program: "cuda_kernel", arg: "hazard-ex", kinds: map[watch.Kind]int{stale: 1, freed: 1}, stdout: "launch=0\n", ptds: true,
			possible: true, check: kernelArgument},
		{program: "cuda_kernel", arg: "clean-ex", kinds: none, stdout: "launch=0\n", ptds: true},
		// the scratch is named by both captured copies
		{program: "cuda_async", arg: "hazard", kinds: map[watch.Kind]int{stale: 2, freed: 1}, stdout: "launch=0\n", ptds: true,
			check: sameAddressAgain("async")},
		{program: "cuda_async", arg: "clean", kinds: none, stdout: "launch=0\n", ptds: true},
		{program: "cuda_offcapture", arg: "hazard", kinds: map[watch.Kind]int{offWork: 1}, stdout: "", ptds: true},
		{program: "cuda_offcapture", arg: "clean", kinds: none, stdout: "", ptds: true},
		{program: "cuda_fork", arg: "fork", kinds: map[watch.Kind]int{stale: 1, freed: 1}, stdout: `child=\d+\n`, check: childFound(false)},
		{program: "cuda_fork", arg: "exec", kinds: map[watch.Kind]int{stale: 1, freed: 1}, stdout: `child=\d+\n`, check: childFound(true)},
		{program: "cuda_crash", arg: "hazard", kinds: map[watch.Kind]int{stale: 1, freed: 1}, stdout: "", signal: "SIGSEGV", ptds: true},
		{program: "cuda_crash", arg: "clean", kinds: none, stdout: "", signal: "SIGSEGV", ptds: true},
		{program: "cuda_threads", arg: "hazard", kinds: map[watch.Kind]int{stale: 1, freed: 1}, stdout: `stream=0x[0-9a-f]+ buffer=0x[0-9a-f]+\n`,
			check: firstThreadsCapture},
		{program: "cuda_threads", arg: "clean", kinds: none, stdout: `stream=0x[0-9a-f]+ buffer=0x[0-9a-f]+\n`},

		// Ascend: the fake fails a replay over freed memory 507011; a refused one is 100000.
		{program: "acl_rebase", arg: "hazard", kinds: map[watch.Kind]int{stale: 2, freed: 1}, stdout: "launch=507011\n", check: nothingHoldsNow},
		{program: "acl_rebase", arg: "clean", kinds: none, stdout: "launch=0\n"},
		{program: "acl_free", arg: "hazard", kinds: map[watch.Kind]int{stale: 2, freed: 1}, stdout: "launch=507011\n", check: nothingHoldsNow},
		{program: "acl_free", arg: "hazard", refuse: true, kinds: map[watch.Kind]int{stale: 2, freed: 1}, stdout: "launch=100000\n", plain: "launch=507011\n"},
		{program: "acl_free", arg: "clean", kinds: none, stdout: "launch=0\n"},
		{program: "acl_realloc", arg: "hazard", kinds: map[watch.Kind]int{stale: 1, freed: 1}, stdout: "launch=0 bystander=overwritten\n",
			check: sameAddressAgain("device")},
		{program: "acl_realloc", arg: "hazard", refuse: true, kinds: map[watch.Kind]int{stale: 1, freed: 1},
			stdout: "launch=100000 bystander=intact\n", plain: "launch=0 bystander=overwritten\n", check: sameAddressAgain("device")},
		{program: "acl_realloc", arg: "clean", kinds: none, stdout: "launch=0 bystander=intact\n"},
		{program: "acl_realloc", arg: "clean", refuse: true, kinds: none, stdout: "launch=0 bystander=intact\n"},
		{program: "acl_pool", arg: "hazard", kinds: map[watch.Kind]int{stale: 1, freed: 1}, stdout: "launch=0 tensor=overwritten\n",
			check: sameAddressAgain("pool")},
		{program: "acl_pool", arg: "hazard", refuse: true, kinds: map[watch.Kind]int{stale: 1, freed: 1},
			stdout: "launch=100000 tensor=intact\n", plain: "launch=0 tensor=overwritten\n", check: sameAddressAgain("pool")},
		{program: "acl_pool", arg: "clean", kinds: none, stdout: "launch=0 tensor=intact\n"},
		{program: "acl_capalloc", arg: "hazard", kinds: map[watch.Kind]int{inCapture: 3, freeInCap: 2}, stdout: "", check: allocatingThreads(2)},
		{program: "acl_capalloc", arg: "clean", kinds: none, stdout: ""},
		{program: "acl_kernel", arg: "hazard", kinds: map[watch.Kind]int{stale: 1, freed: 1}, stdout: "launch=0\n", possible: true,
			check: kernelArgument},
		{program: "acl_kernel", arg: "clean", kinds: none, stdout: "launch=0\n"},
		// a known blind spot: an argument block in device memory is not read, and says so
		{program: "acl_kernel", arg: "hazard-devargs", kinds: none, stdout: "launch=0\n", check: noted("aclrtLaunchKernel")},
		{program: "acl_kernel", arg: "hazard-hostargs", kinds: map[watch.Kind]int{stale: 1, freed: 1}, stdout: "launch=0\n", possible: true,
			check: kernelArgument},
		{program: "acl_kernel", arg: "clean-hostargs", kinds: none, stdout: "launch=0\n"},
		{program: "acl_kernel", arg: "hazard-config", kinds: map[watch.Kind]int{stale: 1, freed: 1}, stdout: "launch=0\n", possible: true,
			check: kernelArgument},
		{program: "acl_kernel", arg: "clean-config", kinds: none, stdout: "launch=0\n"},
		// the argument block in device memory is not read, but the graph reads it when it runs
		{program: "acl_kernel", arg: "hazard-v2-devargs", kinds: map[watch.Kind]int{stale: 1, freed: 1}, stdout: "launch=0\n",
			check: argumentBlock("aclrtLaunchKernelV2", 24)},
		{program: "acl_kernel", arg: "clean-v2-devargs", kinds: none, stdout: "launch=0\n", check: noted("aclrtLaunchKernelV2")},
	}
}

// nothingHoldsNow: the stale ranges were freed and nothing was allocated over them.
func nothingHoldsNow(r *run) {
	for _, f := range r.of(stale) {
		Expect(f.Now).To(BeNil(), "%s", f.Detail)
		Expect(f.AtCapture).NotTo(BeNil())
		Expect(f.AtCapture.Freed).To(BeTrue(), "%s", f.Detail)
	}
}

// sameAddressAgain: the stale range is held now by a new generation of an allocation of kind at
// the address the one at capture had.
func sameAddressAgain(kind string) func(r *run) {
	return func(r *run) {
		for _, f := range r.of(stale) {
			Expect(f.Detail).To(ContainSubstring("allocated again at the same address"))
			Expect(f.AtCapture).NotTo(BeNil())
			Expect(f.Now).NotTo(BeNil(), "%s", f.Detail)
			Expect(f.AtCapture.Kind).To(Equal(kind))
			Expect(f.Now.Kind).To(Equal(kind))
			Expect(f.Now.Addr).To(Equal(f.AtCapture.Addr))
			Expect(f.Now.Generation).To(Equal(f.AtCapture.Generation+1), "%s", f.Detail)
			if kind == "pool" {
				Expect(f.AtCapture.Pool).NotTo(BeEmpty())
			}
		}
		for _, f := range r.of(freed) {
			Expect(f.AtCapture).NotTo(BeNil())
			Expect(f.AtCapture.Kind).To(Equal(kind))
		}
	}
}

// poolBlockTakenEagerly: the private block capture 1 dropped was taken outside any capture.
func poolBlockTakenEagerly(r *run) {
	for _, f := range r.of(stale) {
		Expect(f.AtCapture).NotTo(BeNil())
		Expect(f.AtCapture.Kind).To(Equal("pool"))
		Expect(f.Now).NotTo(BeNil(), "%s", f.Detail)
		Expect(f.Now.Kind).To(Equal("pool"))
		Expect(f.Now.Addr).To(Equal(f.AtCapture.Addr))
	}
}

// twoStreams: the two graphs sharing the private block were launched on different streams.
func twoStreams(r *run) {
	f := r.of(shared)[0]
	Expect(f.Graph).NotTo(BeNil())
	Expect(f.Other).NotTo(BeNil())
	Expect(f.Graph.Handle).NotTo(Equal(f.Other.Handle))
	Expect(f.Graph.LaunchStream).NotTo(Equal(f.Other.LaunchStream))
	Expect(f.Graph.Capture).NotTo(Equal(f.Other.Capture))
}

// allocatingThreads: the allocations in capture came from n threads.
func allocatingThreads(n int) func(r *run) {
	return func(r *run) {
		tids := map[int]bool{}
		for _, f := range r.of(inCapture) {
			tids[f.TID] = true
		}
		Expect(tids).To(HaveLen(n))
	}
}

// kernelArgument: the stale range is y, the kernel's first argument.
func kernelArgument(r *run) {
	for _, f := range append(r.of(stale), r.of(freed)...) {
		Expect(f.Captured).NotTo(BeNil())
		Expect(f.Captured.What).To(Equal("kernel"))
		Expect(f.Captured.Arg).To(Equal("arg 0 at offset 0"))
	}
}

// argumentBlock: the stale range is the kernel's argument block (bytes in device memory, a
// definite range, no argument named), launched through entry, allocated again at its address.
func argumentBlock(entry string, bytes uint64) func(r *run) {
	return func(r *run) {
		sameAddressAgain("device")(r)
		for _, f := range append(r.of(stale), r.of(freed)...) {
			Expect(f.Captured).NotTo(BeNil())
			Expect(f.Captured.What).To(Equal("kernel"))
			Expect(f.Captured.Call).To(Equal(entry))
			Expect(f.Captured.Arg).To(BeEmpty())
			Expect(f.Range.Bytes).To(Equal(bytes))
		}
		noted(entry)(r)
	}
}

// noted: the run has a note about entry.
func noted(entry string) func(r *run) {
	return func(r *run) {
		Expect(r.res.Notes).To(ContainElement(ContainSubstring(entry)))
		Expect(r.events).To(MatchRegexp(`(?m)^op .*\bnolayout=1\b`))
	}
}

// childFound: the findings are the child's, not the parent's.
func childFound(exec bool) func(r *run) {
	return func(r *run) {
		m := regexp.MustCompile(`child=(\d+)`).FindStringSubmatch(r.stdout)
		Expect(m).To(HaveLen(2))
		child, err := strconv.Atoi(m[1])
		Expect(err).NotTo(HaveOccurred())
		Expect(child).NotTo(Equal(r.pid))
		for _, f := range r.res.Findings {
			Expect(f.PID).To(Equal(child), "%s", f.Detail)
			Expect(f.Graph).NotTo(BeNil())
			Expect(f.Graph.PID).To(Equal(child))
		}
		var forked, execd bool
		for _, p := range r.res.Processes {
			if p.PID == child {
				Expect(p.PPID).To(Equal(r.pid))
				forked = forked || p.Forked
				execd = execd || p.Exec
			}
		}
		Expect(forked).To(BeTrue(), "the child's hello says fork: %+v", r.res.Processes)
		Expect(execd).To(Equal(exec), "the child's exec: %+v", r.res.Processes)
	}
}

// firstThreadsCapture: the stale graph is thread 1's (its stream, its buffer, THREAD_LOCAL), not
// thread 2's.
func firstThreadsCapture(r *run) {
	m := regexp.MustCompile(`stream=(0x[0-9a-f]+) buffer=(0x[0-9a-f]+)`).FindStringSubmatch(r.stdout)
	Expect(m).To(HaveLen(3))
	for _, f := range append(r.of(stale), r.of(freed)...) {
		Expect(f.Graph).NotTo(BeNil())
		Expect(sameHex(f.Graph.Stream, m[1])).To(BeTrue(), "capture stream %s, thread 1's %s", f.Graph.Stream, m[1])
		Expect(f.Graph.Mode).To(Equal("thread-local"))
		Expect(f.Range).NotTo(BeNil())
		Expect(sameHex(f.Range.Addr, m[2])).To(BeTrue(), "range %s, thread 1's buffer %s", f.Range.Addr, m[2])
	}
}

func sameHex(a, b string) bool {
	x, err1 := strconv.ParseUint(strings.TrimPrefix(a, "0x"), 16, 64)
	y, err2 := strconv.ParseUint(strings.TrimPrefix(b, "0x"), 16, 64)
	return err1 == nil && err2 == nil && x == y
}

// of is the run's findings of kind k.
func (r *run) of(k watch.Kind) []watch.Finding {
	var out []watch.Finding
	for _, f := range r.res.Findings {
		if f.Kind == k {
			out = append(out, f)
		}
	}
	return out
}

// built is what BeforeAll compiles: the fakes' directory, the interposer and every program
// variant, by "<program>.<attach>".
var built struct {
	fakes, interposer string
	programs          map[string]string
}

// buildAll compiles the fakes and the interposer, then every program each way, in parallel.
func buildAll(dir string) error {
	built.fakes = filepath.Join(dir, "fake")
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, lib := range []fake.Library{fake.CUDA, fake.ACL} {
		wg.Go(func() { _, errs[i] = fake.Build(built.fakes, lib, fake.Variant{}) })
	}
	wg.Go(func() { built.interposer, errs[2] = interpose.Build(filepath.Join(dir, "interpose")) })
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}

	src, err := filepath.Abs(filepath.Join("testdata", "programs"))
	if err != nil {
		return err
	}
	include, err := filepath.Abs(filepath.Join("..", "include")) // replaycheck/watch.h
	if err != nil {
		return err
	}
	type job struct{ program, way, define, out string }
	var jobs []job
	seen := map[string]bool{}
	for _, s := range scenarios() {
		for _, w := range attaches {
			key := s.program + "." + w.name
			if seen[key] || s.acl() && !w.acl {
				continue
			}
			seen[key] = true
			jobs = append(jobs, job{s.program, w.name, w.define, filepath.Join(dir, "bin", key)})
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return err
	}
	built.programs = map[string]string{}
	for _, j := range jobs {
		built.programs[j.program+"."+j.way] = j.out
	}
	cc := cbuild.Compiler()
	return cbuild.Each(len(jobs), func(i int) error {
		j := jobs[i]
		args := append(slices.Clone(cc[1:]), "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-pthread",
			"-I"+include, "-DRC_ATTACH="+j.define, "-o", j.out, filepath.Join(src, j.program+".c"), "-ldl")
		if j.way == "linked" {
			lib := "-l:" + fake.CUDA.FileName()
			if strings.HasPrefix(j.program, "acl_") {
				lib = "-l:" + fake.ACL.FileName()
			}
			args = append(args, "-L"+built.fakes, lib)
		}
		out, err := exec.Command(cc[0], args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s: %w\n%s", cc[0], strings.Join(args, " "), err, out)
		}
		return nil
	})
}

// programEnv is what every program run gets: the fakes on the library path, a small device.
func programEnv() []string {
	return []string{"LD_LIBRARY_PATH=" + built.fakes, "REPLAYCHECK_FAKE_MEMORY=67108864"}
}

var _ = Describe("watched programs", Ordered, ContinueOnFailure, func() {
	BeforeAll(func() {
		if _, err := exec.LookPath(cbuild.Compiler()[0]); err != nil {
			Skip("no C compiler: " + err.Error())
		}
		Expect(buildAll(GinkgoT().TempDir())).To(Succeed())
	})

	var entries []TableEntry
	for _, s := range scenarios() {
		for _, w := range attaches {
			if s.acl() && !w.acl {
				continue
			}
			name := fmt.Sprintf("%s %s, %s", s.program, s.arg, w.name)
			if s.refuse {
				name += ", --refuse"
			}
			entries = append(entries, Entry(name, s, w))
		}
	}

	DescribeTable("each scenario, each way of reaching the driver", func(s scenario, w attach) {
		bin := built.programs[s.program+"."+w.name]
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()

		// Unwatched: the program does what it says with no interposer (the annotations are null).
		var plainOut, plainErr bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, s.arg)
		cmd.Env = append(os.Environ(), programEnv()...)
		cmd.Stdout, cmd.Stderr = &plainOut, &plainErr
		err := cmd.Run()
		if s.signal == "" {
			Expect(err).NotTo(HaveOccurred(), "unwatched: %s", plainErr.String())
		} else {
			Expect(err).To(HaveOccurred())
			Expect(cmd.ProcessState.String()).To(ContainSubstring("segmentation fault"))
		}
		plain := s.plain
		if plain == "" {
			plain = s.stdout
		}
		Expect(plainOut.String()).To(MatchRegexp("^"+plain+"$"), "unwatched stdout")

		// Watched.
		var stdout, stderr, events, live bytes.Buffer
		backend := "cuda"
		if s.acl() {
			backend = "acl"
		}
		res, err := watch.Run(ctx, watch.Config{
			Program: []string{bin, s.arg}, Env: programEnv(), Backend: backend, Refuse: s.refuse,
			Interposer: built.interposer, Stdout: &stdout, Stderr: &stderr, Events: &events, Live: &live,
		})
		Expect(err).NotTo(HaveOccurred())
		r := &run{scenario: s, way: w, res: res, stdout: stdout.String(), events: events.String()}
		report := func() string { return describe(r) + "events:\n" + r.events }
		GinkgoWriter.Print(describe(r))

		// The program's own exit, output and silence on stderr.
		if s.signal == "" {
			Expect(res.ExitCode).To(Equal(0), "stderr: %s\n%s", stderr.String(), report())
			Expect(res.Signal).To(BeEmpty())
		} else {
			Expect(res.ExitCode).To(Equal(-1))
			Expect(res.Signal).To(Equal(s.signal))
		}
		Expect(r.stdout).To(MatchRegexp("^"+s.stdout+"$"), report())
		Expect(stderr.String()).To(BeEmpty())

		// The interposer saw the program, its captures and its launches through this way.
		// The program is the process this one started (connections are read concurrently, so
		// its hello need not be the first).
		for _, p := range res.Processes {
			if p.PPID == os.Getpid() {
				Expect(r.pid).To(BeZero(), "two processes started by the test: %+v", res.Processes)
				r.pid = p.PID
				Expect(filepath.Base(p.Exe)).To(Equal(filepath.Base(bin)))
			}
		}
		Expect(r.pid).NotTo(BeZero(), "no hello from the program: %+v\n%s", res.Processes, report())
		launch := w.launch
		if s.acl() {
			launch = "aclmdlRIExecuteAsync"
		}
		Expect(r.events).To(MatchRegexp(`(?m)^end .*\bok=1\b`), "no capture ended well:\n%s", r.events)
		// A clean launch may wait in the interposer and die with a process a signal kills
		// (docs/watch-events.md): nothing else shows that the launch went through it then.
		launched := s.signal == "" || len(s.kinds) > 0
		if launched {
			Expect(r.events).To(MatchRegexp(`(?m)^launch .*\bcall=`+launch+`\b`), "no launch through %s:\n%s", launch, r.events)
		}
		if launched && s.ptds && w.name == "getproc_ptsz" {
			Expect(r.events).To(MatchRegexp(`(?m)^launch .*\bstream=ptds:\d+\b`), "no launch on the per-thread default stream:\n%s", r.events)
		}
		Expect(res.Disagreements).To(BeEmpty(), report())

		// The findings: the kinds and distinct sites expected, each as the scenario says.
		got := map[watch.Kind]int{}
		for _, f := range res.Findings {
			got[f.Kind]++
		}
		Expect(got).To(Equal(s.kinds), report())
		for _, f := range res.Findings {
			Expect(f.Count).To(BeNumerically(">=", 1))
			Expect(f.Range).NotTo(BeNil(), report())
			Expect(f.Graph).NotTo(BeNil(), report())
			Expect(f.Refused).To(Equal(s.refuse && f.Kind == stale), report())
			Expect(f.Possible).To(Equal(s.possible && (f.Kind == stale || f.Kind == freed)), report())
			if s.program != "cuda_fork" {
				Expect(f.PID).To(Equal(r.pid), report())
			}
			// The finding's own stack is symbolised down to the program's sources (its helpers
			// are drv.h's, inlined).
			Expect(sourceFrames(f, "finding")).To(ContainElement(BeElementOf(s.program+".c", "drv.h")), report())
			if f.Kind == stale {
				Expect(f.Call).To(Equal(launch))
				if s.ptds && w.name == "getproc_ptsz" {
					Expect(f.Graph.LaunchStream).To(HavePrefix("ptds:"))
				}
			}
		}
		// Each distinct site was printed once while the program ran.
		Expect(regexp.MustCompile(`(?m)^watch: `).FindAllString(live.String(), -1)).To(HaveLen(len(res.Findings)), live.String())
		// The recorded stream, checked again without the program, finds the same.
		again, err := watch.CheckEvents(strings.NewReader(r.events), "events", watch.Options{})
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Disagreements).To(BeEmpty())
		Expect(again.Findings).To(HaveLen(len(res.Findings)))
		for i, f := range again.Findings {
			Expect(f.Kind).To(Equal(res.Findings[i].Kind))
			Expect(f.Count).To(Equal(res.Findings[i].Count))
			Expect(f.Range).To(Equal(res.Findings[i].Range))
		}
		if s.refuse && s.kinds[stale] > 0 {
			Expect(r.events).To(MatchRegexp(`(?m)^launch .*\brefused=1\b`))
		} else {
			Expect(r.events).NotTo(MatchRegexp(`(?m)^launch .*\brefused=1\b`))
		}
		if s.check != nil {
			s.check(r)
		}
	}, entries)
})

// sourceFrames lists the source files (base names) of the frames of f's stack of role.
func sourceFrames(f watch.Finding, role string) []string {
	var out []string
	for _, s := range f.Stacks {
		if s.Role != role {
			continue
		}
		for _, fr := range s.Frames {
			if fr.File != "" {
				out = append(out, filepath.Base(fr.File))
			}
		}
	}
	return out
}

// describe says what a run found, for a failing assertion.
func describe(r *run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (%s), exit %d %s, stdout %q\n", r.program, r.arg, r.way.name, r.res.ExitCode, r.res.Signal, r.stdout)
	describeResult(&b, r.res)
	return b.String()
}

// describeResult writes a result's findings, disagreements and notes, one indented line each.
func describeResult(b *strings.Builder, res *watch.Result) {
	for _, f := range res.Findings {
		fmt.Fprintf(b, "  %s\n", watch.Describe(f))
	}
	for _, d := range res.Disagreements {
		fmt.Fprintf(b, "  disagreement: %s\n", d.Description)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(b, "  note: %s\n", n)
	}
}
