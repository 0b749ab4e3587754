//go:build cgo

package plugin_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/guard"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/internal/cbuild"
	"github.com/replaycheck/replaycheck/internal/dl"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime/plugin"
)

// build compiles testdata/passthrough.c with defs into a fresh directory and returns the library.
func build(name string, defs ...string) string {
	GinkgoHelper()
	include, err := filepath.Abs("../../include")
	Expect(err).NotTo(HaveOccurred())
	out := filepath.Join(GinkgoT().TempDir(), name+".so")
	args := append([]string{"-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-pthread", "-I" + include}, defs...)
	args = append(args, "-o", out, filepath.Join("testdata", "passthrough.c"))
	cc := cbuild.Compiler()
	msg, err := exec.Command(cc[0], append(cc[1:], args...)...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(msg))
	return out
}

// load builds and loads the passthrough plugin; it is closed after the spec.
func load() *plugin.Plugin {
	GinkgoHelper()
	p, err := plugin.Load(build("passthrough"))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(p.Close)
	return p
}

// setenv sets a knob the plugin reads in rc_runtime_open, for the spec.
func setenv(key, value string) {
	Expect(os.Setenv(key, value)).To(Succeed())
	DeferCleanup(os.Unsetenv, key)
}

// loadEach sets *p and *dev, before each spec of the container it is called in, to the loaded
// passthrough plugin (load) and a fresh cann simulator (openSim).
func loadEach(p **plugin.Plugin, dev *device.Device) {
	BeforeEach(func() {
		*p = load()
		*dev = openSim("cann")
	})
}

func openSim(profile string) device.Device {
	GinkgoHelper()
	b, err := sim.New(sim.Options{Profile: profile})
	Expect(err).NotTo(HaveOccurred())
	dev, err := b.Open(context.Background(), 0)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(dev.Close)
	return dev
}

// rut is the plugin as the engine's runtime under test.
func rut(p *plugin.Plugin) *runtime.UnderTest {
	return &runtime.UnderTest{Name: p.Name(), Open: func(dev device.Device, guarded bool) (runtime.Runtime, error) {
		rt, err := p.Open(dev, guarded)
		if err != nil {
			return nil, err
		}
		return rt, nil
	}}
}

// run runs one instance through the plugin and closes the runtime it opened.
func run(p *plugin.Plugin, dev device.Device, in probes.Instance) *capture.Result {
	GinkgoHelper()
	res := capture.Run(context.Background(), dev, in, capture.Options{Runtime: rut(p)})
	Expect(p.CloseRuntimes()).To(Succeed())
	return res
}

type catalog []*probes.Set

func loadCatalog() catalog {
	GinkgoHelper()
	sets, err := probes.Load(probes.DefaultLimits(), "../../specs")
	Expect(err).NotTo(HaveOccurred())
	return sets
}

func (c catalog) find(id string) *probes.Probe {
	GinkgoHelper()
	for _, s := range c {
		for _, p := range s.Probes {
			if p.ID() == id {
				return p
			}
		}
	}
	Fail("no probe " + id)
	return nil
}

func (c catalog) unguarded() []probes.Instance {
	var all []*probes.Probe
	for _, s := range c {
		all = append(all, s.Probes...)
	}
	return probes.Instances(all, probes.Matrix{Guards: []bool{false}})
}

var _ = Describe("Load", func() {
	It("loads a plugin and names it after its file", func() {
		path := build("passthrough")
		p, err := plugin.Load(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Name()).To(Equal("passthrough"))
		Expect(p.Path()).To(Equal(path))
		Expect(p.Close()).To(Succeed())
		Expect(p.Close()).To(MatchError(ContainSubstring("already closed")))
	})

	It("refuses a plugin built for an ABI version it does not load, naming the file and the versions", func() {
		Expect(plugin.ABIVersion).To(BeEquivalentTo(4))
		for _, v := range []string{"0", "5"} {
			path := build("v"+v, "-DRC_TEST_ABI="+v)
			_, err := plugin.Load(path)
			Expect(err).To(MatchError(SatisfyAll(
				ContainSubstring(path), ContainSubstring("it implements ABI version "+v),
				ContainSubstring("implements ABI version 4"), ContainSubstring("loads versions 1 to 4"))), v)
		}
	})

	It("loads a plugin built against the version 1 header and opens it with version 1: it runs without a slot log", func() {
		// The passthrough built with RC_TEST_ABI=1 fails rc_runtime_open for any other version.
		p, err := plugin.Load(build("v1", "-DRC_TEST_ABI=1"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(p.Close)
		Expect(p.Version()).To(BeEquivalentTo(1))
		dev := openSim("cann")
		rt, err := p.Open(dev, true)
		Expect(err).NotTo(HaveOccurred())
		_, _, ok := rt.SlotsChangedSince(rt.SlotsVersion())
		Expect(ok).To(BeFalse(), "a version 1 plugin has no slot log")
		Expect(rt.Close()).To(Succeed())

		in := probes.Instance{Probe: loadCatalog().find("basic/simple-replay"), Mode: device.Global, Guarded: true, Replays: 2}
		res := run(p, dev, in)
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
	})

	DescribeTable("runs a plugin without create_stream_with_flags with blocking streams only, and skips the instances that need non-blocking ones, saying why",
		func(defs []string, env string, version int, why string) {
			setenv("RC_TEST_BLOCKING_ONLY", env)
			p, err := plugin.Load(build("blocking", defs...))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(p.Close)
			Expect(p.Version()).To(BeEquivalentTo(version))
			dev := openSim("cuda")
			rt, err := p.Open(dev, false)
			Expect(err).NotTo(HaveOccurred())
			Expect(rt.Capabilities().NonBlockingStreams).To(BeFalse())
			base := dev.Counters()
			_, err = rt.CreateStream(device.Main, device.NonBlocking)
			e, ok := device.AsError(err)
			Expect(ok).To(BeTrue(), "%v", err)
			Expect(e.Class).To(Equal(device.ClassNotSupported))
			Expect(e.Detail).To(Equal(p.Path() + ": the runtime creates blocking streams only: " + why + " (capability non-blocking-streams)"))
			Expect(dev.Counters()).To(Equal(base), "nothing reached the inner device")
			Expect(rt.Close()).To(Succeed())

			in := probes.Instance{Probe: loadCatalog().find("incidents/libuipc-472-legacy-stream-beside-non-blocking-capture"), Mode: device.Global, Replays: 2}
			res := run(p, dev, in)
			Expect(res.Outcome).To(Equal(probes.Skipped))
			Expect(res.Reason).To(Equal(`runtime blocking lacks capability "non-blocking-streams", which the probe's non-blocking streams need (solver): ` + why))
		},
		Entry("version 2", []string{"-DRC_TEST_ABI=2"}, "", 2, "it implements ABI version 2, which has no create_stream_with_flags"),
		Entry("version 4, the entry NULL", nil, "1", 4, "its create_stream_with_flags is NULL"),
	)

	It("answers without a slot log for a version 4 plugin whose slots_changed is NULL", func() {
		p := load()
		Expect(p.Version()).To(BeEquivalentTo(4))
		rt, err := p.Open(openSim("cann"), true)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(rt.Close)
		_, _, ok := rt.SlotsChangedSince(0)
		Expect(ok).To(BeFalse())
	})

	It("fails on a missing entry point and names it", func() {
		path := build("noclose", "-DRC_TEST_NO_CLOSE")
		_, err := plugin.Load(path)
		var missing *dl.MissingError
		Expect(errors.As(err, &missing)).To(BeTrue(), "%v", err)
		Expect(missing.Symbols).To(Equal([]string{"rc_runtime_close"}))
		Expect(err.Error()).To(ContainSubstring(path))
	})

	It("loads a bare file name from the working directory", func() {
		path := build("passthrough")
		wd, err := os.Getwd()
		Expect(err).NotTo(HaveOccurred())
		Expect(os.Chdir(filepath.Dir(path))).To(Succeed())
		DeferCleanup(os.Chdir, wd)
		p, err := plugin.Load("passthrough.so")
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Name()).To(Equal("passthrough"))
		Expect(p.Path()).To(Equal("passthrough.so"))
		Expect(p.Close()).To(Succeed())
	})

	It("fails on a file that is not there", func() {
		_, err := plugin.Load("/nonexistent/runtime.so")
		Expect(err).To(MatchError(ContainSubstring("/nonexistent/runtime.so")))
	})
})

var _ = Describe("a Runtime", func() {
	var (
		p   *plugin.Plugin
		dev device.Device
	)
	loadEach(&p, &dev)
	open := func(guarded bool) *plugin.Runtime {
		GinkgoHelper()
		rt, err := p.Open(dev, guarded)
		Expect(err).NotTo(HaveOccurred())
		return rt
	}

	It("creates non-blocking streams through create_stream_with_flags, blocking ones through create_stream", func() {
		log := filepath.Join(GinkgoT().TempDir(), "calls.log")
		setenv("RC_TEST_LOG", log)
		rt := open(false)
		DeferCleanup(rt.Close)
		Expect(rt.Capabilities().NonBlockingStreams).To(BeTrue())
		for _, f := range []device.StreamFlags{device.NonBlocking, device.Blocking} {
			s, err := rt.CreateStream(device.Other, f)
			Expect(err).NotTo(HaveOccurred())
			Expect(rt.DestroyStream(device.Other, s)).To(Succeed())
		}
		calls, err := os.ReadFile(log)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(calls)).To(MatchRegexp(`^inner=create_stream_with_flags t=1 tid=\d+\ninner=destroy_stream t=1 tid=\d+\ninner=create_stream t=1 tid=\d+\ninner=destroy_stream t=1 tid=\d+\n$`))
	})

	It("has the capability only where the inner device has it", func() {
		ref, err := sim.New(sim.Options{Profile: "cann"})
		Expect(err).NotTo(HaveOccurred())
		inner, err := ref.Open(context.Background(), 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(inner.Close)
		rt, err := p.Open(blockingOnly{inner}, false)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(rt.Close)
		Expect(rt.Capabilities().NonBlockingStreams).To(BeFalse())
	})

	It("fails a call that passes the inner device stream flags the ABI does not name, as the runtime's error, before they reach it", func() {
		setenv("RC_TEST_STREAM_FLAGS", "6")
		rt := open(false)
		DeferCleanup(rt.Close)
		base := dev.Counters()
		_, err := rt.CreateStream(device.Main, device.NonBlocking)
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue(), "%v", err)
		Expect(e.Backend).To(Equal("runtime:passthrough"))
		Expect(e.Op).To(Equal("CreateStreamWithFlags"))
		Expect(e.Class).To(Equal(device.ClassInternal))
		Expect(e.Detail).To(Equal(p.Path() + ": create_stream_with_flags passed stream flags 0x6 to the inner device's create_stream_with_flags, which are neither RC_STREAM_BLOCKING (0) nor RC_STREAM_NON_BLOCKING (1) (runtime.h: rc_stream_flags); the call was not made"))
		Expect(dev.Counters()).To(Equal(base), "nothing reached the inner device")
	})

	DescribeTable("fails a stream the runtime made through the inner device of another kind than it was asked for, as the runtime's error",
		func(knob, value string, asked device.StreamFlags, want string) {
			setenv(knob, value)
			rt := open(false)
			DeferCleanup(rt.Close)
			_, err := rt.CreateStream(device.Main, asked)
			e, ok := device.AsError(err)
			Expect(ok).To(BeTrue(), "%v", err)
			Expect(e.Backend).To(Equal("runtime:passthrough"))
			Expect(e.Class).To(Equal(device.ClassInternal))
			Expect(e.Detail).To(MatchRegexp("^" + regexp.QuoteMeta(p.Path()+": "+want) + "$"))
			// The check does not stand in the way of the streams a runtime makes right.
			Expect(os.Unsetenv(knob)).To(Succeed())
			right := open(false)
			DeferCleanup(right.Close)
			s, err := right.CreateStream(device.Main, asked)
			Expect(err).NotTo(HaveOccurred())
			Expect(right.DestroyStream(device.Main, s)).To(Succeed())
		},
		Entry("non-blocking asked, blocking made", "RC_TEST_STREAM_FLAGS", "0", device.NonBlocking,
			"create_stream_with_flags returned RC_OK with stream 1, which the runtime made blocking through the inner device, asked for a non-blocking one (runtime.h: rc_stream_flags)"),
		Entry("blocking asked, non-blocking made", "RC_TEST_CREATE_STREAM_FLAGS", "1", device.Blocking,
			"device.create_stream returned RC_OK with stream 1, which the runtime made non-blocking through the inner device, asked for a blocking one (runtime.h: rc_stream_flags)"),
	)

	It("takes a blocking stream made with the inner create_stream_with_flags", func() {
		setenv("RC_TEST_CREATE_STREAM_FLAGS", "0")
		rt := open(false)
		DeferCleanup(rt.Close)
		s, err := rt.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		Expect(rt.DestroyStream(device.Main, s)).To(Succeed())
	})

	It("takes inner calls from several of the plugin's threads at once during one call", func() {
		setenv("RC_TEST_INNER_THREADS", "8")
		base := dev.Counters()
		rt := open(true) // rc_runtime_open makes and destroys 4,000 streams and 4,000 events on 8 threads
		Expect(dev.Counters().Leaks(base)).To(BeEmpty())
		s, err := rt.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred(), "the record of what the inner device made is whole")
		Expect(rt.DestroyStream(device.Main, s)).To(Succeed())
		Expect(rt.Close()).To(Succeed())
	})

	It("forwards device calls and moves bytes both ways", func() {
		rt := open(false)
		Expect(rt.Backend()).To(Equal("sim"))
		Expect(rt.Platform()).To(Equal(dev.Platform()))
		buf, err := rt.Malloc(device.Main, 64)
		Expect(err).NotTo(HaveOccurred())
		Expect(dev.Counters().LiveAllocs).To(BeEquivalentTo(1), "the allocation reached the inner device")
		data := make([]byte, 64)
		for i := range data {
			data[i] = byte(i)
		}
		Expect(rt.Write(device.Main, buf, data)).To(Succeed())
		s, err := rt.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		Expect(rt.Fill(device.Main, s, buf.Slice(0, 8), 0xAB)).To(Succeed())
		Expect(rt.SyncStream(device.Main, s)).To(Succeed())
		got := make([]byte, 64)
		Expect(rt.Read(device.Main, got, buf)).To(Succeed())
		Expect(got[:8]).To(Equal([]byte{0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB}))
		Expect(got[8:]).To(Equal(data[8:]))

		host, err := rt.AllocHost(device.Main, 16, device.Pinned)
		Expect(err).NotTo(HaveOccurred())
		Expect(rt.HostWrite(host, []byte("0123456789abcdef"))).To(Succeed())
		back := make([]byte, 16)
		Expect(rt.HostRead(back, host)).To(Succeed())
		Expect(string(back)).To(Equal("0123456789abcdef"))
		Expect(rt.FreeHost(device.Main, host)).To(Succeed())

		Expect(rt.DestroyStream(device.Main, s)).To(Succeed())
		Expect(rt.Free(device.Main, buf)).To(Succeed())
		Expect(dev.Counters().Leaks(device.Counters{})).To(BeEmpty())
	})

	It("serves slots, pools and the arena bank through the plugin's allocator", func() {
		rt := open(false)
		p1, served, err := rt.Provision(device.Main, runtime.Plain, "a", device.Ptr{}, 256)
		Expect(err).NotTo(HaveOccurred())
		Expect(served).To(Equal(runtime.Allocated))
		same, served, err := rt.Provision(device.Main, runtime.Plain, "a", p1, 128)
		Expect(err).NotTo(HaveOccurred())
		Expect(served).To(Equal(runtime.InPlace))
		Expect(same).To(Equal(p1))
		_, served, err = rt.Provision(device.Main, runtime.Plain, "a", p1, 4096)
		Expect(err).NotTo(HaveOccurred())
		Expect(served).To(Equal(runtime.Rebased))
		slot, held, ok := rt.Holds("a")
		Expect(ok).To(BeTrue())
		Expect(slot).To(Equal(runtime.Plain))
		Expect(held.Bytes).To(BeEquivalentTo(4096))
		_, _, ok = rt.Holds("nothing")
		Expect(ok).To(BeFalse())

		bank, err := rt.CommitBank(device.Main, []runtime.Region{{Key: "x", Bytes: 64}, {Key: "y", Bytes: 0}, {Key: "z", Bytes: 128}})
		Expect(err).NotTo(HaveOccurred())
		Expect(bank).To(HaveLen(3))
		Expect(bank[1]).To(Equal(device.Ptr{}))
		Expect(bank[2].Bytes).To(BeEquivalentTo(128))

		Expect(rt.ReservePool(device.Main, "pool", 4096, 0)).To(Succeed())
		b1, err := rt.PoolAlloc(device.Main, "pool", 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(rt.PoolFree(device.Main, "pool", b1)).To(Succeed())
		_, err = rt.PoolAlloc(device.Main, "pool", 1<<20)
		Expect(device.ClassOf(err)).To(Equal(device.ClassOutOfMemory), "%v", err)

		Expect(rt.Retire(device.Main)).To(Succeed())
		Expect(dev.Counters().Leaks(device.Counters{})).To(BeEmpty())
		_, _, err = rt.Provision(device.Main, runtime.Plain, "a", device.Ptr{}, 1)
		Expect(device.ClassOf(err)).To(Equal(device.ClassInvalidState))
	})

	It("passes the platform's allocation failure through Provision and reports what the slot holds", func() {
		rt := open(false)
		const huge = 1 << 40 // more than the simulated device has
		got, served, err := rt.Provision(device.Main, runtime.Plain, "big", device.Ptr{}, huge)
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue(), "%v", err)
		Expect(e.Backend).To(Equal("sim"))
		Expect(e.Class).To(Equal(device.ClassOutOfMemory))
		Expect(served).To(Equal(runtime.NotServed))
		Expect(got).To(Equal(device.Ptr{}))

		// An arena region that cannot grow is rolled back: it holds its buffer still.
		bank, err := rt.CommitBank(device.Main, []runtime.Region{{Key: "arena", Bytes: 64}})
		Expect(err).NotTo(HaveOccurred())
		got, served, err = rt.Provision(device.Main, runtime.Arena, "arena", bank[0], huge)
		Expect(device.ClassOf(err)).To(Equal(device.ClassOutOfMemory))
		Expect(served).To(Equal(runtime.NotServed))
		Expect(got).To(Equal(bank[0]))
		_, held, ok := rt.Holds("arena")
		Expect(ok).To(BeTrue())
		Expect(held).To(Equal(bank[0]))
		Expect(rt.Retire(device.Main)).To(Succeed())
		Expect(dev.Counters().Leaks(device.Counters{})).To(BeEmpty())
	})

	It("closes the plugin's runtime, not the inner device, once", func() {
		rt := open(true)
		Expect(rt.Guarded()).To(BeTrue())
		Expect(rt.Close()).To(Succeed())
		Expect(rt.Close()).To(MatchError(ContainSubstring("closed already")))
		_, err := rt.Malloc(device.Main, 8)
		Expect(device.ClassOf(err)).To(Equal(device.ClassInvalidState))
		_, err = dev.Malloc(device.Main, 8)
		Expect(err).NotTo(HaveOccurred(), "the inner device is the caller's and still open")
	})

	It("refuses a Go buffer whose length is not its Ptr's before calling the plugin", func() {
		rt := open(false)
		err := rt.Write(device.Main, device.Ptr{Addr: 1, Bytes: 8}, make([]byte, 4))
		Expect(device.ClassOf(err)).To(Equal(device.ClassInvalidValue))
	})

	It("maps RC_REFUSED to a refusal of the runtime's own", func() {
		setenv("RC_TEST_REFUSE", "malloc:the pool is pinned")
		rt := open(true)
		_, err := rt.Malloc(device.Main, 64)
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue())
		Expect(*e).To(Equal(device.Error{Backend: "runtime:passthrough", Op: "Malloc", Class: device.ClassRefused, Detail: "the pool is pinned"}))
		Expect(dev.Counters().Mallocs).To(BeZero())
	})

	It("maps a runtime's own RC_ERROR to its class and message", func() {
		setenv("RC_TEST_FAIL", "create_stream:out-of-memory:no stream left")
		rt := open(false)
		_, err := rt.CreateStream(device.Main, device.Blocking)
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue())
		Expect(*e).To(Equal(device.Error{Backend: "runtime:passthrough", Op: "CreateStream", Class: device.ClassOutOfMemory, Detail: "no stream left"}))
	})

	It("makes an unknown class internal, saying what the plugin wrote", func() {
		setenv("RC_TEST_FAIL", "sync_device:bogus:it broke")
		rt := open(false)
		err := rt.SyncDevice(device.Main)
		Expect(device.ClassOf(err)).To(Equal(device.ClassInternal))
		Expect(err).To(MatchError(SatisfyAll(ContainSubstring(`unknown class "bogus"`), ContainSubstring("it broke"))))
	})

	It("fails Open when rc_runtime_open fails", func() {
		setenv("RC_TEST_FAIL", "open:invalid-state:not today")
		_, err := p.Open(dev, false)
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue())
		Expect(e.Op).To(Equal("rc_runtime_open"))
		Expect(e.Class).To(Equal(device.ClassInvalidState))
		Expect(e.Detail).To(Equal("not today"))
	})

	It("fails Open, naming them, when rc_runtime_open leaves entries NULL", func() {
		partial, err := plugin.Load(build("partial", "-DRC_TEST_NULL_ENTRIES"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(partial.Close)
		_, err = partial.Open(dev, false)
		Expect(device.ClassOf(err)).To(Equal(device.ClassInternal))
		Expect(err).To(MatchError(ContainSubstring("the runtime left these entries NULL: device.launch, retire")))
	})

	It("passes an inner device's error through unchanged", func() {
		rt := open(false)
		s, err := rt.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		Expect(rt.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		err = rt.SyncStream(device.Main, s)
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue(), "%v", err)
		Expect(e.Backend).To(Equal("sim"), "the platform's error, not the runtime's")
		Expect(e.Code).NotTo(BeZero())
		Expect(e.Name).NotTo(BeEmpty())

		// The same call on the device itself fails the same way.
		d, err := dev.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		Expect(dev.BeginCapture(device.Main, d, device.Global)).To(Succeed())
		direct, _ := device.AsError(dev.SyncStream(device.Main, d))
		Expect(e.Code).To(Equal(direct.Code))
		Expect(e.Class).To(Equal(direct.Class))
		Expect(e.Name).To(Equal(direct.Name))
		Expect(e.Op).To(Equal(direct.Op))
		Expect(e.Invalidated).To(Equal(direct.Invalidated))
	})

	It("passes the thread through: each thread's capture mode is its own", func() {
		rt := open(false)
		old, err := rt.ExchangeCaptureMode(device.Other, device.Relaxed)
		Expect(err).NotTo(HaveOccurred())
		Expect(old).To(Equal(device.Global))
		old, err = rt.ExchangeCaptureMode(device.Main, device.ThreadLocal)
		Expect(err).NotTo(HaveOccurred())
		Expect(old).To(Equal(device.Global), "Main's mode was not Other's")
		old, err = dev.ExchangeCaptureMode(device.Other, device.Global)
		Expect(err).NotTo(HaveOccurred())
		Expect(old).To(Equal(device.Relaxed), "the device saw the call on Other")
		old, err = dev.ExchangeCaptureMode(device.Main, device.Global)
		Expect(err).NotTo(HaveOccurred())
		Expect(old).To(Equal(device.ThreadLocal))
	})

	It("calls the plugin for each thread on an OS thread of that thread's own", func() {
		log := filepath.Join(GinkgoT().TempDir(), "calls.log")
		setenv("RC_TEST_LOG", log)
		rt := open(false)
		for range 5 {
			for _, t := range []device.Thread{device.Main, device.Other} {
				s, err := rt.CreateStream(t, device.Blocking)
				Expect(err).NotTo(HaveOccurred())
				Expect(rt.SyncStream(t, s)).To(Succeed())
				Expect(rt.DestroyStream(t, s)).To(Succeed())
			}
		}
		tids, n := loggedThreads(log)
		Expect(n).To(Equal(30))
		Expect(tids["0"]).To(HaveLen(1), "every call for main from one OS thread")
		Expect(tids["1"]).To(HaveLen(1), "every call for other from one OS thread")
		Expect(slices.Collect(maps.Keys(tids["0"]))).NotTo(Equal(slices.Collect(maps.Keys(tids["1"]))), "main and other on different OS threads")
	})
})

var _ = Describe("the engine through the plugin", func() {
	var (
		p   *plugin.Plugin
		dev device.Device
		cat catalog
	)
	BeforeEach(func() {
		p = load()
		dev = openSim("cann")
		cat = loadCatalog()
	})

	It("records the plugin as the runtime under test", func() {
		res := run(p, dev, probes.Instance{Probe: cat.find("basic/simple-replay"), Mode: device.Global, Replays: 2})
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		Expect(res.Runtime).To(Equal("passthrough"))
	})

	It("sees a refusal: the instance is refused, with the plugin's message", func() {
		setenv("RC_TEST_REFUSE", "launch:graph launches are not allowed here")
		res := run(p, dev, probes.Instance{Probe: cat.find("basic/simple-replay"), Mode: device.Global, Guarded: true, Replays: 2})
		Expect(res.Outcome).To(Equal(probes.Refused), res.Reason)
		Expect(res.Reason).To(ContainSubstring("graph launches are not allowed here"))
		Expect(res.Refusal.Op).To(Equal("Launch"))
		Expect(res.Refusal.Checked).NotTo(BeEmpty(), "the engine checked the refusal changed nothing")
	})

	It("reports a platform rejection through the plugin with the platform's code, name and class", func() {
		in := probes.Instance{Probe: cat.find("platform/sync-capturing-stream"), Mode: device.Global, Replays: 1}
		res := run(p, dev, in)
		builtin := capture.Run(context.Background(), dev, in, capture.Options{Runtime: guard.Reference(guard.Options{})})
		Expect(builtin.Rejection).NotTo(BeNil())
		Expect(res.Outcome).To(Equal(builtin.Outcome), res.Reason)
		Expect(res.Rejection).NotTo(BeNil(), res.Reason)
		Expect(res.Rejection.Code).To(Equal(builtin.Rejection.Code))
		Expect(res.Rejection.Name).To(Equal(builtin.Rejection.Name))
		Expect(res.Rejection.Class).To(Equal(builtin.Rejection.Class))
		Expect(res.Rejection.Op).To(Equal(builtin.Rejection.Op))
		Expect(res.Rejection.Invalidated).To(Equal(builtin.Rejection.Invalidated))
	})

	It("calls the plugin for main on the simulator's own thread for main, inside the engine's session: no hand-off", func() {
		log := filepath.Join(GinkgoT().TempDir(), "calls.log")
		setenv("RC_TEST_LOG", log)
		res := run(p, dev, probes.Instance{Probe: cat.find("basic/simple-replay"), Mode: device.Global, Guarded: true, Replays: 2})
		Expect(res.Outcome).To(Equal(probes.Exact), res.Reason)
		tids, _ := loggedThreads(log)
		Expect(tids["0"]).To(HaveLen(1), "every call for main from one OS thread")
		Expect(tids["0"]).To(HaveKey(mainTID(dev)), "the simulator's thread for main")
	})

	It("ends the instance in error when the runtime fails on its own: not a platform answer", func() {
		setenv("RC_TEST_FAIL", "launch:device-lost:the runtime lost its device")
		res := run(p, dev, probes.Instance{Probe: cat.find("basic/simple-replay"), Mode: device.Global, Replays: 1})
		Expect(res.Outcome).To(Equal(probes.Errored), res.Reason)
		Expect(res.Rejection).To(BeNil())
		Expect(res.Error).To(HaveField("Kind", capture.ErrRuntime))
		Expect(res.Reason).To(SatisfyAll(ContainSubstring("device-lost"), ContainSubstring("the runtime lost its device")))
	})
})

// An instance given up on a hang leaves its runtime inside a call that never returns: closing the
// plugin afterwards (what the command line does on its way out) must not wait for it.
var _ = Describe("closing the plugin after an instance was given up on a hang", func() {
	It("leaves the stuck runtime open and the library loaded, naming the call, and returns", func() {
		p, err := plugin.Load(build("passthrough"))
		Expect(err).NotTo(HaveOccurred())
		fault, err := probes.ParseFault("hang@2")
		Expect(err).NotTo(HaveOccurred())
		in := probes.Instance{Probe: loadCatalog().find("basic/simple-replay"), Mode: device.Global, Replays: 2}
		res := capture.Run(context.Background(), openSim("cann"), in, capture.Options{Runtime: rut(p), Timeout: 300 * time.Millisecond, Faults: []probes.Fault{fault}})
		Expect(res.Error).To(HaveField("Kind", capture.ErrTimeout), res.Reason)

		closed := make(chan error, 1)
		go func() { closed <- p.Close() }()
		var cerr error
		Eventually(closed, 5*time.Second).Should(Receive(&cerr), "Close waited for the call that never returns")
		Expect(cerr).To(MatchError(SatisfyAll(
			ContainSubstring("1 runtime left open, each still inside a call that never returned (an instance given up on a timeout): Launch x1"),
			ContainSubstring("the library stays loaded"))))
	})
})

// A runtime's own code that never returns (a deadlock in a team's allocator) is timed like a device
// call: the instance ends in a timeout naming the call, instead of the run waiting for good.
var _ = Describe("a plugin whose own code never returns", func() {
	for call, named := range map[string]string{"launch": "Launch", "provision": "Provision"} {
		It("ends the instance in a timeout naming its "+call+", and the next instance runs", func() {
			p, err := plugin.Load(build("passthrough"))
			Expect(err).NotTo(HaveOccurred())
			in := probes.Instance{Probe: loadCatalog().find("basic/simple-replay"), Mode: device.Global, Replays: 2}
			setenv("RC_TEST_HANG", call)
			// Not openSim: a device the engine did not give up would make its Close, at cleanup,
			// wait for the session stuck in the plugin, and the spec would never end to say so.
			b, err := sim.New(sim.Options{Profile: "cann"})
			Expect(err).NotTo(HaveOccurred())
			dev, err := b.Open(context.Background(), 0)
			Expect(err).NotTo(HaveOccurred())
			done := make(chan *capture.Result, 1)
			go func() {
				done <- capture.Run(context.Background(), dev, in, capture.Options{Runtime: rut(p), Timeout: 300 * time.Millisecond})
			}()
			var res *capture.Result
			Eventually(done, 10*time.Second).Should(Receive(&res), "the run waited for the plugin's own code")
			Expect(dev.Close()).To(Succeed(), "abandoned: Close waits for nothing")
			Expect(res.Outcome).To(Equal(probes.Errored))
			Expect(res.Error).To(HaveField("Kind", capture.ErrTimeout))
			Expect(res.Reason).To(MatchRegexp(`^timeout in %s: .* did not return within the instance's 300ms timeout \(and 100ms of grace\), inside the runtime under test's own code; device .* abandoned$`, named))
			Expect(res.DeviceState).To(Equal(capture.DeviceAbandoned))

			Expect(os.Unsetenv("RC_TEST_HANG")).To(Succeed())
			next := capture.Run(context.Background(), openSim("cann"), in, capture.Options{Runtime: rut(p)})
			Expect(next.Outcome).To(Equal(probes.Exact), next.Reason)
			Expect(p.Close()).To(MatchError(ContainSubstring(fmt.Sprintf("1 runtime left open, each still inside a call that never returned (an instance given up on a timeout): %s x1", named))))
		})
	}
})

// The whole catalog, guards off, through the passthrough plugin comes out exactly as through the
// built-in guards in program mode.
var _ = Describe("the catalog through the passthrough plugin", func() {
	for _, profile := range []string{"cann", "cuda"} {
		It("matches the built-in program mode on sim/"+profile, func() {
			p := load()
			cat := loadCatalog()
			instances := cat.unguarded()
			Expect(len(instances)).To(BeNumerically(">", 50))
			viaPlugin, builtin := openSim(profile), openSim(profile)
			var diffs []string
			outcomes := map[probes.Outcome]int{}
			for _, in := range instances {
				got := run(p, viaPlugin, in)
				want := capture.Run(context.Background(), builtin, in, capture.Options{Runtime: guard.Reference(guard.Options{})})
				Expect(got.Runtime).To(Equal("passthrough"))
				if d := differ(got, want); d != "" {
					diffs = append(diffs, in.ID()+": "+d)
				}
				outcomes[got.Outcome]++
			}
			Expect(diffs).To(BeEmpty(), strings.Join(diffs, "\n"))
			// The comparison covers every kind of outcome guards off can have.
			Expect(outcomes).To(HaveKey(probes.Exact))
			Expect(outcomes).To(HaveKey(probes.Corrupted))
			Expect(outcomes).To(HaveKey(probes.Rejected))
			GinkgoWriter.Printf("sim/%s: %d instances, outcomes %v\n", profile, len(instances), outcomes)
		})
	}

	// A runtime may forward from a thread of its own while the call waits (a driver thread): under
	// the engine's session its inner calls for main then run on that thread, not on the session's,
	// which waits for them. Handed to the session's thread they would wait for it: every instance
	// would end in a timeout.
	It("matches it when the plugin forwards fill, copy and launch from threads of its own, on sim/cann", func() {
		setenv("RC_TEST_FORWARD_FROM_THREAD", "1")
		log := filepath.Join(GinkgoT().TempDir(), "calls.log")
		setenv("RC_TEST_LOG", log)
		p := load()
		viaPlugin, builtin := openSim("cann"), openSim("cann")
		for _, in := range loadCatalog().unguarded() {
			got := capture.Run(context.Background(), viaPlugin, in, capture.Options{Runtime: rut(p), Timeout: 5 * time.Second})
			Expect(p.CloseRuntimes()).To(Succeed())
			Expect(differ(got, capture.Run(context.Background(), builtin, in, capture.Options{Runtime: guard.Reference(guard.Options{})}))).To(BeEmpty(), in.ID())
		}
		tids, _ := loggedThreads(log)
		simMain, others := mainTID(viaPlugin), 0
		for tid, n := range tids["0"] {
			if tid != simMain {
				others += n
			}
		}
		Expect(others).To(BeNumerically(">", 100), "inner calls for main from threads other than the simulator's")
	})
})

// blockingOnly is a device without the capability non-blocking-streams.
type blockingOnly struct{ device.Device }

func (d blockingOnly) Capabilities() device.Capabilities {
	c := d.Device.Capabilities()
	c.NonBlockingStreams = false
	return c
}

// loggedThreads reads the passthrough's RC_TEST_LOG: for each thread named ("0", "1", "-"), how
// many inner calls each OS thread made; and how many lines there were.
func loggedThreads(path string) (tids map[string]map[int]int, n int) {
	GinkgoHelper()
	f, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	line := regexp.MustCompile(`^inner=\S+ t=(\S) tid=(\d+)$`)
	tids = map[string]map[int]int{}
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		m := line.FindStringSubmatch(sc.Text())
		Expect(m).NotTo(BeNil(), sc.Text())
		tid, err := strconv.Atoi(m[2])
		Expect(err).NotTo(HaveOccurred())
		if tids[m[1]] == nil {
			tids[m[1]] = map[int]int{}
		}
		tids[m[1]][tid]++
	}
	return tids, n
}

// mainTID is the OS thread the simulator dev runs its calls for main on.
func mainTID(dev device.Device) (tid int) {
	GinkgoHelper()
	Expect(dev.(device.ThreadRunner).OnThread(device.Main, func(device.Device) { tid = syscall.Gettid() })).To(Succeed())
	return tid
}

// differ says how two results of one instance differ in what the comparison covers.
func differ(got, want *capture.Result) string {
	type summary struct {
		Outcome                probes.Outcome
		Code                   int
		Class                  device.Class
		Rounds, Corrupted      int
		RefusalOp, ErrorReason string
	}
	sum := func(r *capture.Result) summary {
		s := summary{Outcome: r.Outcome, Rounds: r.Rounds, Corrupted: r.CorruptedRounds}
		if r.Rejection != nil {
			s.Code, s.Class = r.Rejection.Code, r.Rejection.Class
		}
		if r.Refusal != nil {
			s.RefusalOp = r.Refusal.Op
		}
		if r.Outcome == probes.Errored {
			s.ErrorReason = r.Reason
		}
		return s
	}
	g, w := sum(got), sum(want)
	if g == w {
		return ""
	}
	return fmt.Sprintf("plugin %+v, built-in %+v", g, w)
}
