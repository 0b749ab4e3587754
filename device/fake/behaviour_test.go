package fake_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/device/sim"
)

// scenarios are the test drivers' scenarios (testdata/test_*.c), with the environment each needs.
var scenarios = map[fake.Library][]struct {
	name, what string
	env        []string
}{
	fake.ACL: {
		{"alloc", "reuses freed blocks LIFO and keeps host memory apart", nil},
		{"oom", "hands out the smallest larger cached block when exhausted, then fails out-of-memory", []string{"REPLAYCHECK_FAKE_MEMORY=4096"}},
		{"inject", "fails the n-th allocation REPLAYCHECK_FAKE_FAIL_MALLOC names, once", []string{"REPLAYCHECK_FAKE_FAIL_MALLOC=2"}},
		{"rebase", "replays a re-based capture into the bystander, and fails 507011 on freed memory", nil},
		{"capture", "begins, queries and ends captures in every mode", nil},
		{"replay", "runs captured work only when launched, interleaving concurrent launches", nil},
		{"fork", "forks and joins through events, and applies the event rules", nil},
		{"sync", "rejects syncs during a capture with 107027 without invalidating it", nil},
		{"threads", "applies wrong-thread ends and the unsafe-call rules per thread mode", nil},
		{"host", "rejects pageable copies into a capture and replays pinned ones", nil},
		{"errmsg", "reports the last failure's detail in aclGetRecentErrMsg", nil},
		{"fail", "fails the entry point REPLAYCHECK_FAKE_FAIL names at every call, naming the injection, touching nothing", nil},
		{"kernel", "loads a binary naming the axpy kernel and launches it with packed arguments read at the call, eagerly and captured", nil},
		{"launches", "launches the kernel through aclrtLaunchKernelV2, WithHostArgs (no placeholders) and WithConfig over an argument list appended in order and finalized", nil},
	},
	fake.CUDA: {
		{"alloc", "reuses freed blocks, replays a re-base into the bystander and, silently, a small freed block", nil},
		{"freed", "replays over an allocation freed since capture silently below 2 MiB and fails 700 from 2 MiB", nil},
		{"host", "refuses pinned alloc in a GLOBAL capture with 900, and loses the context on a launch whose copy names pinned memory freed since capture", nil},
		{"freefill", "refuses the instantiation of a graph holding a fill of memory freed during its capture with 1, and makes it once the memory is allocated again", nil},
		{"instantiate", "ends a capture while another is in progress and refuses the instantiation with 900, invalidating the other, where the caller's mode minds it", nil},
		{"capture", "begins, queries and ends captures, running captured work only when launched", nil},
		{"sync", "invalidates a capture on 900 and 907, then fails its work and its end with 901", nil},
		{"threads", "rejects a wrong-thread end with 908 and every synchronous copy during a capture of a blocking stream with 906, and applies the cuMemAlloc rules per thread mode", nil},
		{"nonblocking", "runs legacy-stream work and synchronous copies at once, outside the graph, while only non-blocking streams capture, and rejects them with 906, invalidating only the captures holding a blocking stream, otherwise", nil},
		{"kernel", "loads PTX and runs the axpy kernel eagerly and captured", nil},
		{"errors", "names error codes and counts devices", nil},
		{"fail", "fails the entry point REPLAYCHECK_FAKE_FAIL names at every call, touching nothing", nil},
		{"ptsz", "gives each thread a per-thread default stream, for NULL in a _ptsz call and CU_STREAM_PER_THREAD in any, apart from the legacy stream", nil},
		{"v1", "answers the v1 names with cuda.h's v1 types: 32-bit cuMemAlloc after the rules, cuMemAllocHost, GLOBAL cuStreamBeginCapture, cuGraphInstantiate with a log", nil},
		{"update", "updates an executable graph from a graph of the same shape, and refuses another shape with 910, changing nothing", nil},
		{"async", "serves stream-ordered allocation from the device allocator, without rules, and refuses it on a capturing stream with 801", nil},
		{"copies", "copies by unified addressing and sets 16- and 32-bit elements, eagerly and captured", nil},
		{"launch", "describes the kernel's parameters and launches it through cuLaunchKernelEx and a packed extra buffer", nil},
	},
}

var _ = Describe("the fakes' behaviour", func() {
	for _, lib := range fake.Libraries {
		Context(lib.FileName(), func() {
			for _, sc := range scenarios[lib] {
				It(sc.what, func() {
					out, st := scenario(lib, built.full[lib], sc.name, sc.env...)
					Expect(st.ExitCode()).To(Equal(0), out)
					Expect(out).To(HaveSuffix("ok " + sc.name + "\n"))
				})
			}

			It("crashes with SIGSEGV in the entry point REPLAYCHECK_FAKE_CRASH names, only then", func() {
				entry := map[fake.Library]string{fake.ACL: "aclrtMalloc", fake.CUDA: "cuMemAlloc_v2"}[lib]
				out, st := scenario(lib, built.full[lib], "crash")
				Expect(st.ExitCode()).To(Equal(0), out)
				out, st = scenario(lib, built.full[lib], "crash", "REPLAYCHECK_FAKE_CRASH=other")
				Expect(st.ExitCode()).To(Equal(0), out)
				_, st = scenario(lib, built.full[lib], "crash", "REPLAYCHECK_FAKE_CRASH="+entry)
				ws, ok := st.Sys().(syscall.WaitStatus)
				Expect(ok).To(BeTrue())
				Expect(ws.Signaled() && ws.Signal() == syscall.SIGSEGV).To(BeTrue(), "status %v", st)
			})

			It("behaves as a library without a driver in the stub variant", func() {
				out, st := scenario(lib, built.stub[lib], "stub")
				Expect(st.ExitCode()).To(Equal(0), out)
			})

			It("replays in the simulator's order for seeds 0 to 4", func() {
				for seed := range uint64(5) {
					out, st := scenario(lib, built.full[lib], "race", fmt.Sprintf("REPLAYCHECK_FAKE_SEED=%d", seed))
					Expect(st.ExitCode()).To(Equal(0), out)
					Expect(strings.SplitN(out, "\n", 2)[0]).To(Equal(simRace(lib.Profile(), seed)), "seed %d", seed)
				}
			})
		})
	}

	// Negative controls: the cuda fake built without the profile's rows for a replay over a freed
	// allocation of 2 MiB or more, for the instantiation at an end, or for legacy-stream work while a
	// blocking stream captures, fails their scenarios.
	DescribeTable("libcuda.so.1 fails the scenario of each row it is built without",
		func(situation, name string, fails []string) {
			p, err := sim.LoadProfile("cuda")
			Expect(err).NotTo(HaveOccurred())
			n := len(p.Rules)
			p.Rules = slices.DeleteFunc(p.Rules, func(r sim.Rule) bool { return strings.HasPrefix(r.Situation, situation) })
			Expect(p.Rules).To(HaveLen(n-1), "one row starts %q", situation)
			lib, err := fake.BuildProfile(GinkgoT().TempDir(), fake.CUDA, p)
			Expect(err).NotTo(HaveOccurred())
			out, st := scenario(fake.CUDA, lib, name)
			Expect(st.ExitCode()).To(Equal(1), out)
			for _, f := range fails {
				Expect(out).To(ContainSubstring(f))
			}
		},
		Entry("a replay over 2 MiB or more freed", "replay of a graph over an allocation of 2 MiB or more freed", "freed",
			[]string{"tmp of 2097152 bytes, src and out of 4096: launch = 0", "cu.cuGraphLaunch(x, s) = 0, want 700"}),
		Entry("a fill of memory freed during the capture", "end a capture holding a fill of memory freed during the capture", "freefill",
			[]string{"cu.cuGraphInstantiateWithFlags(&x, g, 0) = 0, want 1"}),
		Entry("pinned alloc by the capturing thread", "cuMemAllocHost or cuMemFreeHost by the capturing thread in GLOBAL", "host",
			[]string{"cu.cuMemAllocHost_v2(&again, 4096) = 0, want 900"}),
		Entry("the thread's own other capture at an end", "end a capture while the calling thread's own other GLOBAL or THREAD_LOCAL capture", "instantiate",
			[]string{"end_and_instantiate(s1) = 0, want 900", "= 0, want 901"}),
		Entry("another thread's GLOBAL capture at an end", "end a capture while another thread's GLOBAL capture is in progress, in GLOBAL", "instantiate",
			[]string{"end_and_instantiate(s1) = 0, want 900", "other_result = 0, want 901"}),
		Entry("legacy-stream work while a blocking stream captures", "work on the legacy default stream while a blocking stream captures", "nonblocking",
			[]string{"legacy-stream call 0 during a blocking capture = 0, want 906", "cu.cuMemsetD8Async(y, 4, 64, NULL) = 0, want 906"}),
		Entry("a legacy-stream synchronisation while a blocking stream captures", "synchronisation of the legacy default stream while a blocking stream captures", "nonblocking",
			[]string{"legacy-stream call 1 during a blocking capture = 0, want 906"}),
		Entry("a synchronous copy while a blocking stream captures", "synchronous copy while a blocking stream captures", "nonblocking",
			[]string{"legacy-stream call 2 during a blocking capture = 0, want 906", "cu.cuMemcpyDtoH_v2(&b1, y, 1) = 0, want 906"}),
	)

	// The H200's driver crashed the process inside cuGraphInstantiateWithFlags for a graph holding a
	// copy from memory freed during its capture: the fake faults there too, and only there.
	It("libcuda.so.1 crashes with SIGSEGV instantiating a graph whose copy reads memory freed during its capture, and not without the row", func() {
		out, st := scenario(fake.CUDA, built.full[fake.CUDA], "freecopy")
		ws, ok := st.Sys().(syscall.WaitStatus)
		Expect(ok).To(BeTrue())
		Expect(ws.Signaled() && ws.Signal() == syscall.SIGSEGV).To(BeTrue(), "status %v: %s", st, out)
		Expect(out).To(ContainSubstring("allocated again: instantiated\ninstantiating over the freed source\n"))

		p, err := sim.LoadProfile("cuda")
		Expect(err).NotTo(HaveOccurred())
		p.Rules = slices.DeleteFunc(p.Rules, func(r sim.Rule) bool { return r.Crash != "" })
		lib, err := fake.BuildProfile(GinkgoT().TempDir(), fake.CUDA, p)
		Expect(err).NotTo(HaveOccurred())
		out, st = scenario(fake.CUDA, lib, "freecopy")
		Expect(st.ExitCode()).To(Equal(0), out)
		Expect(out).To(HaveSuffix("ok freecopy\n"))
	})

	It("libascendcl.so answers capture-fill-freed at the end that makes the model, where a profile has it", func() {
		p, err := sim.LoadProfile("cann")
		Expect(err).NotTo(HaveOccurred())
		p.Rules = append(p.Rules, sim.Rule{Situation: "a fill of freed memory", Source: "verify", Calls: []string{"EndCapture"},
			When: "capture-fill-freed", Code: 107000, Name: "ACL_ERROR_RT_PARAM_INVALID", Class: device.ClassInvalidValue, EndsCapture: true})
		lib, err := fake.BuildProfile(GinkgoT().TempDir(), fake.ACL, p)
		Expect(err).NotTo(HaveOccurred())
		out, st := scenario(fake.ACL, lib, "freefill")
		Expect(st.ExitCode()).To(Equal(0), out)
		out, st = scenario(fake.ACL, built.full[fake.ACL], "freefill")
		Expect(st.ExitCode()).To(Equal(1), "without the rule the end makes the model: %s", out)
	})

	// Every ACL stream is non-blocking: a rule on the captures holding a blocking stream never
	// applies, where the same rule on any capture does (the threads scenario's RELAXED copy from a
	// second thread during a GLOBAL capture, which the cann profile allows).
	It("libascendcl.so makes every stream non-blocking, so that a profile's blocking-capture rule never applies", func() {
		for when, exit := range map[string]int{"blocking-capture": 0, "any-capture": 1} {
			p, err := sim.LoadProfile("cann")
			Expect(err).NotTo(HaveOccurred())
			p.Rules = slices.Insert(p.Rules, 0, sim.Rule{Situation: "a synchronous copy during a capture", Source: "verify", Calls: []string{"Write", "Read"},
				When: when, Code: 107031, Name: "ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT", Class: device.ClassCaptureImplicit})
			lib, err := fake.BuildProfile(GinkgoT().TempDir(), fake.ACL, p)
			Expect(err).NotTo(HaveOccurred())
			out, st := scenario(fake.ACL, lib, "threads")
			Expect(st.ExitCode()).To(Equal(exit), "a rule on %s: %s", when, out)
		}
	})

	It("logs cuStreamCreate's flags, and refuses flags other than CU_STREAM_NON_BLOCKING", func() {
		log := filepath.Join(GinkgoT().TempDir(), "calls.log")
		out, st := scenario(fake.CUDA, built.full[fake.CUDA], "nonblocking", "REPLAYCHECK_FAKE_LOG="+log)
		Expect(st.ExitCode()).To(Equal(0), out)
		entries, err := fake.ReadLog(log)
		Expect(err).NotTo(HaveOccurred())
		var creates []string
		for _, e := range entries {
			switch {
			case e.Entry != "cuStreamCreate":
			case e.Kind == "call":
				creates = append(creates, e.Args)
			default:
				creates = append(creates, fmt.Sprintf("%s %d", e.Kind, e.Code))
			}
		}
		Expect(creates).To(Equal([]string{"flags=2", "fail 1", "flags=4294967295", "fail 1", "flags=1", "flags=0"}))
	})

	It("logs the calls to REPLAYCHECK_FAKE_LOG", func() {
		log := filepath.Join(GinkgoT().TempDir(), "calls.log")
		out, st := scenario(fake.ACL, built.full[fake.ACL], "sync", "REPLAYCHECK_FAKE_LOG="+log)
		Expect(st.ExitCode()).To(Equal(0), out)
		entries, err := fake.ReadLog(log)
		Expect(err).NotTo(HaveOccurred())
		Expect(entries).To(ContainElement(And(HaveField("Kind", "call"), HaveField("Entry", "aclmdlRICaptureBegin"))))
		Expect(entries).To(ContainElement(And(HaveField("Kind", "fail"), HaveField("Entry", "aclrtSynchronizeStream"),
			HaveField("Code", 107027), HaveField("Detail", Not(BeEmpty())))))
	})

	// The threads scenarios end a capture from a second thread, which fails wrong-thread there.
	for lib, wrongThread := range map[fake.Library]string{fake.ACL: "aclmdlRICaptureEnd 107038", fake.CUDA: "cuStreamEndCapture 908"} {
		It("records the calling thread's kernel thread id in every line of the "+lib.FileName()+" log", func() {
			log := filepath.Join(GinkgoT().TempDir(), "calls.log")
			out, st := scenario(lib, built.full[lib], "threads", "REPLAYCHECK_FAKE_LOG="+log)
			Expect(st.ExitCode()).To(Equal(0), out)
			entries, err := fake.ReadLog(log)
			Expect(err).NotTo(HaveOccurred())
			tids := map[int]bool{}
			var failedEnd []int
			for _, e := range entries {
				tids[e.TID] = true
				if e.Kind == "fail" && fmt.Sprintf("%s %d", e.Entry, e.Code) == wrongThread {
					failedEnd = append(failedEnd, e.TID)
				}
			}
			main := st.Pid() // the main thread's tid is the process id
			Expect(tids).To(HaveKey(main))
			Expect(failedEnd).To(HaveLen(1))
			Expect(failedEnd[0]).NotTo(Equal(main), "the wrong-thread end ran on the second thread")
			Expect(len(tids)).To(BeNumerically(">=", 3), "the main thread and the scenario's second threads")
		})
	}
})

// simRace runs the test drivers' race scenario on the simulator and prints it as they do.
func simRace(profile string, seed uint64) string {
	GinkgoHelper()
	b, err := sim.New(sim.Options{Profile: profile, Seed: seed, Memory: 1 << 20})
	Expect(err).NotTo(HaveOccurred())
	dev, err := b.Open(context.Background(), 0)
	Expect(err).NotTo(HaveOccurred())
	defer dev.Close()
	must := func(err error) { GinkgoHelper(); Expect(err).NotTo(HaveOccurred()) }
	m := device.Main
	origin, err := dev.CreateStream(m, device.Blocking)
	must(err)
	side, err := dev.CreateStream(m, device.Blocking)
	must(err)
	x, err := dev.Malloc(m, 1024)
	must(err)
	fork, err := dev.CreateEvent(m)
	must(err)
	join, err := dev.CreateEvent(m)
	must(err)
	must(dev.BeginCapture(m, origin, device.Global))
	must(dev.Record(m, fork, origin))
	must(dev.Wait(m, side, fork))
	must(dev.Fill(m, side, x, 2))
	must(dev.Fill(m, origin, x, 1))
	must(dev.Record(m, join, side))
	must(dev.Wait(m, origin, join))
	g, err := dev.EndCapture(m, origin)
	must(err)
	out := "seq"
	buf := make([]byte, x.Bytes)
	for range 16 {
		must(dev.Launch(m, g, origin))
		must(dev.Read(m, buf, x))
		out += fmt.Sprintf(" %d", buf[0])
	}
	return out
}
