//go:build cgo

package plugin_test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime/plugin"
)

// A plugin is a team's code, and may break the ABI's contract in any way: each rule it breaks is
// the runtime's error, naming the plugin, the entry point and the rule, never replaycheck's nor the
// platform's, and never a hang or a silent pass.

// brokeContract checks that err is the passthrough's error for an answer of op that broke the
// ABI's contract (a device.ClassInternal *device.Error of the plugin's, op its Op) and returns
// its Detail; answer says what the call answered, for the failure message.
func brokeContract(err error, op, answer string) string {
	GinkgoHelper()
	e, ok := device.AsError(err)
	Expect(ok).To(BeTrue(), "%v (%s)", err, answer)
	Expect(e.Backend).To(Equal("runtime:passthrough"))
	Expect(e.Op).To(Equal(op))
	Expect(e.Class).To(Equal(device.ClassInternal))
	return e.Detail
}

// simpleReplay is the catalog's basic/simple-replay in global mode.
func simpleReplay(guarded bool) probes.Instance {
	GinkgoHelper()
	return probes.Instance{Probe: loadCatalog().find("basic/simple-replay"), Mode: device.Global, Guarded: guarded, Replays: 2}
}

// Queries that never return are timed like every other call into the plugin.
var _ = Describe("a plugin whose holds or slots_changed never returns", func() {
	for _, c := range []struct{ call, named, log string }{{"holds", "Holds", ""}, {"slots_changed", "SlotsChangedSince", "1"}} {
		It("ends the guarded instance in a timeout naming its "+c.call, func() {
			p, err := plugin.Load(build("passthrough"))
			Expect(err).NotTo(HaveOccurred())
			setenv("RC_TEST_HANG", c.call)
			setenv("RC_TEST_SLOT_LOG", c.log)
			// Not openSim: the device is abandoned with the call (see "a plugin whose own code
			// never returns").
			b, err := sim.New(sim.Options{Profile: "cann"})
			Expect(err).NotTo(HaveOccurred())
			dev, err := b.Open(context.Background(), 0)
			Expect(err).NotTo(HaveOccurred())
			done := make(chan *capture.Result, 1)
			in := simpleReplay(true) // only a guarded instance asks: its snapshots
			go func() {
				done <- capture.Run(context.Background(), dev, in, capture.Options{Runtime: rut(p), Timeout: 300 * time.Millisecond})
			}()
			var res *capture.Result
			Eventually(done, 10*time.Second).Should(Receive(&res), "the run waited for the plugin's "+c.call+" for good")
			Expect(dev.Close()).To(Succeed())
			Expect(res.Outcome).To(Equal(probes.Errored))
			Expect(res.Error).To(HaveField("Kind", capture.ErrTimeout))
			Expect(res.Reason).To(MatchRegexp(`^timeout in %s: .* inside the runtime under test's own code; device .* abandoned$`, c.named))
			Expect(p.Close()).To(MatchError(ContainSubstring(c.named + " x1")))
		})
	}
})

var _ = Describe("a provision that answers RC_OK against the contract", func() {
	var (
		p   *plugin.Plugin
		dev device.Device
	)
	loadEach(&p, &dev)

	DescribeTable("is the runtime's error, naming the plugin, provision and the rule",
		func(lie string, grow bool, rule string) {
			setenv("RC_TEST_PROVISION_LIE", lie)
			rt, err := p.Open(dev, false)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(rt.Close)
			cur := device.Ptr{}
			if grow {
				cur, _, err = rt.Provision(device.Main, runtime.Plain, "buf", device.Ptr{}, 4096)
				Expect(err).NotTo(HaveOccurred())
			}
			_, served, err := rt.Provision(device.Main, runtime.Plain, "buf", cur, 8192)
			detail := brokeContract(err, "Provision", fmt.Sprintf("served %v", served))
			Expect(detail).To(SatisfyAll(ContainSubstring(p.Path()+": provision of 8192 bytes"), ContainSubstring(rule),
				ContainSubstring("runtime.h: rc_runtime.provision, rc_served")))
			Expect(served).To(Equal(runtime.NotServed))
			Expect(rt.Retire(device.Main)).To(Succeed())
		},
		Entry("fewer bytes than asked", "short", false, "holds 4096 bytes, fewer than the 8192 asked for"),
		Entry("an empty *out", "empty", false, "*out is {0,0}"),
		Entry("a *served that is none", "served", false, "*served is 99"),
		Entry("growth answered in place", "in-place", true, "RC_IN_PLACE, but the slot holds 4096 bytes"),
		Entry("a buffer past the end of the address space", "wrap", false, "*out 0xfffffffffffffff0+8192 runs past the end of the address space"),
	)

	It("ends the instance in error of kind runtime, not harness", func() {
		setenv("RC_TEST_PROVISION_LIE", "served")
		res := run(p, dev, simpleReplay(false))
		Expect(res.Outcome).To(Equal(probes.Errored), res.Reason)
		Expect(res.Error).To(HaveField("Kind", capture.ErrRuntime), res.Reason)
		Expect(res.Reason).To(SatisfyAll(ContainSubstring("runtime:passthrough: Provision: internal"), ContainSubstring("*served is 99")))
	})
})

var _ = Describe("a commit_bank that answers RC_OK against the contract", func() {
	var (
		p   *plugin.Plugin
		dev device.Device
	)
	loadEach(&p, &dev)

	DescribeTable("is the runtime's error, naming the plugin, commit_bank and the rule",
		func(lie, rule string) {
			setenv("RC_TEST_BANK_LIE", lie)
			rt, err := p.Open(dev, false)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(rt.Close)
			bank, err := rt.CommitBank(device.Main, []runtime.Region{{Key: "kv", Bytes: 4096}, {Key: "scratch", Bytes: 4096}})
			detail := brokeContract(err, "CommitBank", fmt.Sprintf("bank %v", bank))
			Expect(detail).To(SatisfyAll(ContainSubstring(p.Path()+`: commit_bank of 2 regions returned RC_OK, but for region "scratch" (4096 bytes), out[1]`),
				ContainSubstring(rule), HaveSuffix("(runtime.h: rc_runtime.commit_bank)")))
			Expect(bank).To(BeNil())
			Expect(rt.Retire(device.Main)).To(Succeed())
			Expect(dev.Counters().Leaks(device.Counters{})).To(BeEmpty())
		},
		Entry("a buffer left unwritten", "unwritten", "out[1] is {UINT64_MAX,-1} as replaycheck set it: a commit_bank that returns RC_OK writes every region's buffer"),
		Entry("an empty buffer", "empty", "out[1] is {0,0}: a commit_bank that returns RC_OK names the buffer it served"),
		Entry("fewer bytes than asked", "short", "holds 2048 bytes, fewer than the 4096 asked for"),
		Entry("a buffer at address 0", "null", "out[1] 0x0+4096 is at address 0"),
		Entry("a buffer past the end of the address space", "wrap", "out[1] 0xfffffffffffffff0+4096 runs past the end of the address space"),
		Entry("another region's buffer", "duplicate", `shares bytes with out[0]`),
		Entry("a buffer overlapping another region's", "overlap", `shares bytes with out[0]`),
	)

	It("passes a bank that keeps the contract, an empty region included", func() {
		rt, err := p.Open(dev, false)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(rt.Close)
		bank, err := rt.CommitBank(device.Main, []runtime.Region{{Key: "kv", Bytes: 4096}, {Key: "none", Bytes: 0}, {Key: "scratch", Bytes: 4096}})
		Expect(err).NotTo(HaveOccurred())
		Expect(bank[1]).To(Equal(device.Ptr{}))
		again, err := rt.CommitBank(device.Main, []runtime.Region{{Key: "kv", Bytes: 0}, {Key: "scratch", Bytes: 1}})
		Expect(err).NotTo(HaveOccurred(), "regions committed before answer in place")
		Expect(again).To(Equal([]device.Ptr{bank[0], bank[2]}))
		Expect(rt.Retire(device.Main)).To(Succeed())
	})
})

var _ = Describe("an allocation that answers RC_OK against the contract", func() {
	var (
		p   *plugin.Plugin
		dev device.Device
	)
	loadEach(&p, &dev)

	// allocate makes the call named call (a table entry of the ABI) for 4096 bytes.
	allocate := func(rt *plugin.Runtime, call string) (device.Ptr, error) {
		switch call {
		case "malloc":
			return rt.Malloc(device.Main, 4096)
		case "alloc_host":
			return rt.AllocHost(device.Main, 4096, device.Pinned)
		}
		Expect(rt.ReservePool(device.Main, "cache", 64<<10, 0)).To(Succeed())
		return rt.PoolAlloc(device.Main, "cache", 4096)
	}
	entries := []TableEntry{}
	for _, c := range []struct{ call, op, entry, what string }{
		{"malloc", "Malloc", "device.malloc_", ""},
		{"alloc_host", "AllocHost", "device.alloc_host", " of pinned memory"},
		{"pool_alloc", "PoolAlloc", "pool_alloc", ` from pool "cache"`},
	} {
		for _, l := range []struct{ lie, rule string }{
			{"unwritten", "*out is {UINT64_MAX,-1} as replaycheck set it: a " + c.entry + " that returns RC_OK writes the buffer it served"},
			{"empty", "*out is {0,0}: a " + c.entry + " that returns RC_OK names the buffer it served"},
			{"short", "holds 2048 bytes, fewer than the 4096 asked for"},
			{"null", "*out 0x0+4096 is at address 0"},
			{"wrap", "*out 0xfffffffffffffff0+4096 runs past the end of the address space"},
		} {
			entries = append(entries, Entry(nil, c.call, c.op, c.entry, c.what, l.lie, l.rule))
		}
	}

	DescribeTable("is the runtime's error, naming the plugin, the entry and the rule",
		func(call, op, entry, what, lie, rule string) {
			setenv("RC_TEST_ALLOC_LIE", call+":"+lie)
			rt, err := p.Open(dev, false)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(rt.Close)
			ptr, err := allocate(rt, call)
			detail := brokeContract(err, op, fmt.Sprintf("buffer %v", ptr))
			Expect(detail).To(SatisfyAll(HavePrefix(p.Path()+": "+entry+" of 4096 bytes"+what+" returned RC_OK, but "),
				ContainSubstring(rule), HaveSuffix("(runtime.h: rc_runtime."+entry+")")))
			Expect(ptr).To(Equal(device.Ptr{}), "no buffer for the engine to go on with")
		},
		func(call, op, entry, what, lie, rule string) string { return entry + ", " + lie },
		entries,
	)

	It("passes the same calls untouched when they keep the contract", func() {
		setenv("RC_TEST_ALLOC_LIE", "")
		rt, err := p.Open(dev, false)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(rt.Close)
		for _, call := range []string{"malloc", "alloc_host", "pool_alloc"} {
			ptr, err := allocate(rt, call)
			Expect(err).NotTo(HaveOccurred(), call)
			Expect(ptr.Bytes).To(Equal(int64(4096)), call)
			Expect(ptr.Addr).NotTo(BeZero(), call)
		}
	})

	It("ends an instance whose pool block is a lie in error of kind runtime", func() {
		setenv("RC_TEST_ALLOC_LIE", "pool_alloc:null")
		in := probes.Instance{Probe: loadCatalog().find("basic/concurrent-replay-ordered"), Mode: device.Global, Replays: 2}
		res := run(p, dev, in)
		Expect(res.Outcome).To(Equal(probes.Errored), res.Reason)
		Expect(res.Error).To(HaveField("Kind", capture.ErrRuntime), res.Reason)
		Expect(res.Reason).To(SatisfyAll(ContainSubstring("runtime:passthrough: PoolAlloc: internal"),
			ContainSubstring(`pool_alloc of 8192 bytes from pool "cache" returned RC_OK, but *out 0x0+8192 is at address 0`)))
	})
})

var _ = Describe("a stream, event or graph answered against the contract", func() {
	var (
		p   *plugin.Plugin
		dev device.Device
	)
	loadEach(&p, &dev)

	// issue makes the call that answers a handle of the kind entry names, and returns what it
	// answered.
	issue := func(rt *plugin.Runtime, entry string) (uint64, error) {
		switch entry {
		case "device.create_stream":
			s, err := rt.CreateStream(device.Main, device.Blocking)
			return uint64(s), err
		case "create_stream_with_flags":
			s, err := rt.CreateStream(device.Main, device.NonBlocking)
			return uint64(s), err
		case "device.create_event":
			ev, err := rt.CreateEvent(device.Main)
			return uint64(ev), err
		}
		s, err := rt.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		Expect(rt.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		g, err := rt.EndCapture(device.Main, s)
		return uint64(g), err
	}
	entries := []TableEntry{}
	for _, c := range []struct{ call, entry, op, kind string }{
		{"create_stream", "device.create_stream", "CreateStream", "stream"},
		{"create_stream_with_flags", "create_stream_with_flags", "CreateStreamWithFlags", "stream"},
		{"create_event", "device.create_event", "CreateEvent", "event"},
		{"end_capture", "device.end_capture", "EndCapture", "graph"},
	} {
		entries = append(entries, Entry(nil, c.call, c.entry, c.op, "unwritten",
			"*out is UINT64_MAX as replaycheck set it: a "+c.entry+" that returns RC_OK writes the "+c.kind+" it made"))
		entries = append(entries, Entry(nil, c.call, c.entry, c.op, "again",
			"which it answered before and has not destroyed: every "+c.kind+" it makes is a new one"))
		entries = append(entries, Entry(nil, c.call, c.entry, c.op, "invented",
			"*out is "+c.kind+" 4242, which the inner device has not made through this runtime's inner table, or has destroyed since: every "+c.kind+" it answers is one the inner device made for it"))
	}
	entries = append(entries, Entry(nil, "create_stream", "device.create_stream", "CreateStream", "default",
		"*out is 0, the default stream: a stream it makes is a new one, never the default stream"))

	DescribeTable("is the runtime's error, naming the plugin, the entry and the rule",
		func(call, entry, op, lie, rule string) {
			setenv("RC_TEST_HANDLE_LIE", call+":"+lie)
			rt, err := p.Open(dev, false)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(rt.Close)
			if lie == "again" {
				_, err := issue(rt, entry)
				Expect(err).NotTo(HaveOccurred(), "the first answer keeps the contract")
			}
			h, err := issue(rt, entry)
			detail := brokeContract(err, op, fmt.Sprintf("handle %d", h))
			Expect(detail).To(SatisfyAll(HavePrefix(p.Path()+": "+entry+" returned RC_OK, but "),
				ContainSubstring(rule), HaveSuffix("(runtime.h: rc_runtime."+entry+")")))
			Expect(h).To(BeZero(), "no handle for the engine to go on with")
		},
		func(call, entry, op, lie, rule string) string { return entry + ", " + lie },
		entries,
	)

	It("is the runtime's error when it answers a handle it destroyed: the inner device's new one is left to it", func() {
		setenv("RC_TEST_HANDLE_LIE", "create_event:again")
		rt, err := p.Open(dev, false)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(rt.Close)
		ev, err := rt.CreateEvent(device.Main)
		Expect(err).NotTo(HaveOccurred())
		Expect(rt.DestroyEvent(device.Main, ev)).To(Succeed())
		_, err = rt.CreateEvent(device.Main)
		Expect(brokeContract(err, "CreateEvent", "the event destroyed")).To(ContainSubstring(
			fmt.Sprintf("*out is event %d, which the inner device has not made through this runtime's inner table, or has destroyed since", ev)))
	})

	It("takes a handle again that the inner device made again after the runtime destroyed it", func() {
		setenv("RC_TEST_HANDLE_LIE", "create_event:again")
		reuse := &reusingEvents{Device: dev}
		rt, err := p.Open(reuse, false)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(rt.Close)
		ev, err := rt.CreateEvent(device.Main)
		Expect(err).NotTo(HaveOccurred())
		Expect(rt.DestroyEvent(device.Main, ev)).To(Succeed())
		again, err := rt.CreateEvent(device.Main)
		Expect(err).NotTo(HaveOccurred(), "the inner device made that event again")
		Expect(again).To(Equal(ev))
		Expect(rt.DestroyEvent(device.Main, again)).To(Succeed())
	})

	It("ends an instance whose stream is the default one in error of kind runtime, before any work reaches it", func() {
		setenv("RC_TEST_HANDLE_LIE", "create_stream:default")
		res := run(p, dev, simpleReplay(false))
		Expect(res.Outcome).To(Equal(probes.Errored), res.Reason)
		Expect(res.Error).To(HaveField("Kind", capture.ErrRuntime), res.Reason)
		Expect(res.Reason).To(ContainSubstring("runtime:passthrough: CreateStream: internal: " + p.Path() + ": device.create_stream returned RC_OK, but *out is 0, the default stream"))
		Expect(dev.Counters().Launches).To(BeZero())
	})
})

var _ = Describe("an inner call for a thread that is none", func() {
	It("is not made, and is the runtime's error naming the plugin, the entry and the rule", func() {
		setenv("RC_TEST_BAD_THREAD", "malloc")
		p, dev := load(), openSim("cann")
		rt, err := p.Open(dev, false)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(rt.Close)
		_, err = rt.Malloc(device.Main, 64)
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue(), "%v", err)
		Expect(e.Backend).To(Equal("runtime:passthrough"), "the runtime's error, not the platform's")
		Expect(e.Op).To(Equal("Malloc"))
		Expect(e.Class).To(Equal(device.ClassInternal))
		Expect(e.Detail).To(SatisfyAll(ContainSubstring(p.Path()+": device.malloc_ passed thread 7 to the inner device's malloc_"),
			ContainSubstring("a runtime passes the inner device the t of the call it forwards")))
		Expect(dev.Counters().Mallocs).To(BeZero(), "the inner call was not made")
	})

	It("ends the instance in error of kind runtime, not as the platform's rejection", func() {
		setenv("RC_TEST_BAD_THREAD", "launch")
		res := run(load(), openSim("cann"), simpleReplay(false))
		Expect(res.Rejection).To(BeNil(), res.Reason)
		Expect(res.Outcome).To(Equal(probes.Errored), res.Reason)
		Expect(res.Error).To(HaveField("Kind", capture.ErrRuntime))
		Expect(res.Reason).To(ContainSubstring("device.launch passed thread 7 to the inner device's launch"))
	})
})

var _ = Describe("an inner call between replaycheck's calls", func() {
	// stray opens the passthrough with a thread that makes an inner create_stream once go exists,
	// and returns the runtime, its device and a function that lets the thread call and waits for
	// the status it got, and the plugin's path.
	stray := func() (*plugin.Runtime, device.Device, func() string, string) {
		dir := GinkgoT().TempDir()
		setenv("RC_TEST_STRAY", filepath.Join(dir, "go"))
		p, dev := load(), openSim("cann")
		rt, err := p.Open(dev, false)
		Expect(err).NotTo(HaveOccurred())
		let := func() string {
			Expect(os.WriteFile(filepath.Join(dir, "go"), nil, 0o600)).To(Succeed())
			var status []byte
			Eventually(func() (err error) { status, err = os.ReadFile(filepath.Join(dir, "go.done")); return }).
				WithTimeout(10 * time.Second).WithPolling(time.Millisecond).Should(Succeed())
			return strings.TrimSpace(string(status))
		}
		return rt, dev, let, p.Path()
	}
	rule := func(err error, p string) {
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue(), "%v", err)
		Expect(e.Backend).To(Equal("runtime:passthrough"))
		Expect(e.Op).To(Equal("between calls"))
		Expect(e.Class).To(Equal(device.ClassInternal))
		Expect(e.Detail).To(SatisfyAll(HavePrefix(p+": a thread of the runtime made a device call (the inner device's create_stream) while no call of replaycheck's into the runtime was in progress"),
			HaveSuffix("the call was not made")))
	}

	It("is not made, and fails the next call as the runtime's error naming the rule", func() {
		rt, dev, let, path := stray()
		DeferCleanup(rt.Close)
		buf, err := rt.Malloc(device.Main, 64)
		Expect(err).NotTo(HaveOccurred())
		Expect(let()).To(Equal("2"), "RC_ERROR")
		Expect(dev.Counters().LiveStreams).To(BeZero(), "the inner call was not made")
		rule(rt.Free(device.Main, buf), path)
		Expect(dev.Counters().LiveAllocs).To(BeZero(), "the free itself was made")
		_, err = rt.Malloc(device.Main, 64)
		Expect(err).NotTo(HaveOccurred(), "the rule is told once")
	})

	It("never upsets the engine when the thread calls as soon as it starts, whenever that is", func() {
		// Each instance's runtime starts a thread at open that calls at once, 20 times: inside
		// the open (where a call is made, and the stream it makes is a leak) or after it (where
		// it is not, and a later call fails). Before the loader put a call in progress only
		// inside the engine's watch, a device call that slipped into the moment between made the
		// engine unlock a lock it did not hold: a fatal error of the whole process.
		p, dev := load(), openSim("cann")
		// simple-replay's calls are Main's; the incident's are Other's too, which are handed to a
		// worker of the Runtime's: a longer moment between.
		other := probes.Instance{Probe: loadCatalog().find("incidents/aws-ofi-nccl-1342-alloc-beside-capture"), Mode: device.Global, Replays: 2}
		var done []string
		for i := range 40 {
			dir := GinkgoT().TempDir()
			Expect(os.WriteFile(filepath.Join(dir, "go"), nil, 0o600)).To(Succeed())
			setenv("RC_TEST_STRAY", filepath.Join(dir, "go")+":20")
			done = append(done, filepath.Join(dir, "go.done"))
			in := simpleReplay(i%4 == 0)
			if i%2 == 1 {
				in = other
				in.Guarded = i%4 == 1
			}
			res := run(p, dev, in)
			Expect(res.Outcome).To(BeElementOf(probes.Exact, probes.Refused, probes.Rejected, probes.Corrupted, probes.Errored), res.Reason)
			if res.Outcome == probes.Errored {
				Expect(res.Reason).To(Or(ContainSubstring("between calls"), ContainSubstring("leaked after teardown: streams:")), res.Reason)
			}
		}
		for _, f := range done { // no thread of the plugin's may outlive its library
			Eventually(func() error { _, err := os.Stat(f); return err }).WithTimeout(10 * time.Second).Should(Succeed())
		}
	})

	It("fails Close when no call follows it", func() {
		rt, _, let, path := stray()
		Expect(let()).To(Equal("2"), "RC_ERROR")
		rule(rt.Close(), path)
	})
})

var _ = Describe("a device call made from holds or slots_changed", func() {
	for _, c := range []struct{ call, named, log string }{{"holds", "Holds", ""}, {"slots_changed", "SlotsChangedSince", "1"}} {
		It("is not made, and ends the instance in error naming "+c.call+" and the rule, with nothing leaked", func() {
			setenv("RC_TEST_QUERY_CALLS", c.call)
			setenv("RC_TEST_SLOT_LOG", c.log)
			res := run(load(), openSim("cann"), simpleReplay(true))
			Expect(res.Outcome).To(Equal(probes.Errored), res.Reason)
			Expect(res.Error).To(HaveField("Kind", capture.ErrRuntime), res.Reason)
			Expect(res.Reason).To(SatisfyAll(ContainSubstring("runtime:passthrough: "+c.named+": internal"),
				ContainSubstring(c.call+" made a device call (the inner device's malloc_)"), ContainSubstring("never change anything")))
			Expect(res.Leaks).To(BeEmpty())
		})
	}

	It("fails the next call when its answer cannot carry the error, or Close", func() {
		setenv("RC_TEST_QUERY_CALLS", "holds")
		p, dev := load(), openSim("cann")
		rt, err := p.Open(dev, true)
		Expect(err).NotTo(HaveOccurred())
		_, _, ok := rt.Holds("x")
		Expect(ok).To(BeFalse())
		Expect(dev.Counters().Mallocs).To(BeZero(), "the inner call was not made")
		_, err = rt.CreateStream(device.Main, device.Blocking)
		Expect(err).To(MatchError(ContainSubstring("holds made a device call")))
		s, err := rt.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred(), "reported once")
		Expect(rt.DestroyStream(device.Main, s)).To(Succeed())
		rt.Holds("x")
		Expect(rt.Close()).To(MatchError(ContainSubstring("holds made a device call")))
	})
})

// hostile is a message no report may print as it is: an escape sequence that clears the screen,
// a newline that starts a forged line, a byte that is not UTF-8 and a C1 control (CSI).
const hostile = "evil\x1b[2J\nFAIL forged\xff\xc2\x9b31m"

// hostileShown is hostile as every report shows it.
const hostileShown = `evil\x1b[2J\nFAIL forged` + "\uFFFD" + `\u009b31m`

var _ = Describe("strings a plugin writes", func() {
	shown := func(s string) {
		GinkgoHelper()
		Expect(utf8.ValidString(s)).To(BeTrue(), "%q", s)
		Expect(strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) })).To(Equal(-1), "%q", s)
	}

	It("reach the result cleaned: not UTF-8 as U+FFFD, control characters as escapes", func() {
		setenv("RC_TEST_FAIL", "launch:internal:"+hostile)
		res := run(load(), openSim("cann"), simpleReplay(false))
		Expect(res.Error).To(HaveField("Kind", capture.ErrRuntime), res.Reason)
		shown(res.Reason)
		shown(res.Error.Message)
		Expect(res.Reason).To(ContainSubstring(hostileShown))
	})

	It("are cleaned in a refusal, a class and a name too", func() {
		setenv("RC_TEST_REFUSE", "launch:"+hostile)
		res := run(load(), openSim("cann"), simpleReplay(true))
		Expect(res.Outcome).To(Equal(probes.Refused), res.Reason)
		shown(res.Refusal.Detail)
		shown(res.Reason)
		Expect(res.Refusal.Detail).To(Equal(hostileShown))

		setenv("RC_TEST_REFUSE", "")
		setenv("RC_TEST_FAIL", "sync_device:\x1b[31mred:x")
		rt, err := load().Open(openSim("cann"), false)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(rt.Close)
		err = rt.SyncDevice(device.Main)
		shown(err.Error())
		Expect(err).To(MatchError(ContainSubstring(`unknown class "\x1b[31mred"`)))
	})
})

// exitChildEnv names the plugin TestExitChild runs an instance through; unset, it is skipped.
// exitProbeEnv names the probe and the profile it runs on (profile:probe).
const exitChildEnv, exitProbeEnv = "RC_TEST_EXIT_CHILD_PLUGIN", "RC_TEST_EXIT_CHILD_PROBE"

// TestExitChild is the process the specs below start: it runs a probe through the plugin, whose
// RC_TEST_EXIT calls exit(0) inside a call.
func TestExitChild(t *testing.T) {
	path := os.Getenv(exitChildEnv)
	if path == "" {
		t.Skip("run by the specs of a plugin that calls exit")
	}
	profile, probe, _ := strings.Cut(os.Getenv(exitProbeEnv), ":")
	p, err := plugin.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	dev := childDevice(t, profile)
	sets, err := probes.Load(probes.DefaultLimits(), "../../specs")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets {
		for _, pr := range s.Probes {
			if pr.ID() == probe {
				res := capture.Run(context.Background(), dev, probes.Instance{Probe: pr, Mode: device.Global, Guarded: true, Replays: 2},
					capture.Options{Runtime: rut(p)})
				fmt.Println("the instance ended:", res.Outcome, res.Reason)
				if os.Getenv("RC_TEST_EXIT_BETWEEN") == "1" {
					time.Sleep(10 * time.Second) // the plugin's thread ends the process first
				}
			}
		}
	}
}

// childDevice opens a simulator of profile for a child process's test (no Ginkgo there).
func childDevice(t *testing.T, profile string) device.Device {
	b, err := sim.New(sim.Options{Profile: profile})
	if err != nil {
		t.Fatal(err)
	}
	dev, err := b.Open(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return dev
}

// manyChildEnv names the plugin TestManyLoadedChild loads; unset, it is skipped.
const manyChildEnv = "RC_TEST_MANY_CHILD_PLUGIN"

// TestManyLoadedChild is the process a spec below starts: it loads the plugin more times than the
// exit handler has room to name, closes all but the last, and opens and closes a runtime of the
// last, whose RC_TEST_EXIT_BETWEEN then calls exit(0) from a thread of its own.
func TestManyLoadedChild(t *testing.T) {
	path := os.Getenv(manyChildEnv)
	if path == "" {
		t.Skip("run by the spec of many plugins loaded")
	}
	var ps []*plugin.Plugin
	for range 17 {
		p, err := plugin.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	for _, p := range ps[:16] {
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := ps[16].Open(childDevice(t, "cann"), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	fmt.Println("closed")
	time.Sleep(10 * time.Second) // the plugin's thread ends the process first
}

// exitChild runs TestExitChild with env added and returns its exit status, stdout and stderr.
func exitChild(env ...string) (code int, stdout, stderr string) {
	GinkgoHelper()
	return child("TestExitChild", env...)
}

// child runs the test named test of this binary, alone, with env added, and returns its exit
// status, stdout and stderr; it must not exit 0.
func child(test string, env ...string) (code int, stdout, stderr string) {
	GinkgoHelper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	var exit *exec.ExitError
	Expect(err).To(BeAssignableToTypeOf(exit), "exit status 0: stdout %s\nstderr %s", out.String(), errs.String())
	return err.(*exec.ExitError).ExitCode(), out.String(), errs.String()
}

// endedLine is what the exit handler writes when fn ended the process while what.
func endedLine(fn, what string) string {
	return fmt.Sprintf("replaycheck: %s() was called while %s: a runtime plugin must return from every call and never end the process (docs/runtime-abi.md, Results); replaycheck exits with status 2, its reports unwritten\n", fn, what)
}

var _ = Describe("a plugin that ends the process", func() {
	simple, nonBlocking := "cann:basic/simple-replay", "cuda:incidents/libuipc-472-legacy-stream-beside-non-blocking-capture"
	for _, c := range []struct{ knob, fn, entry, probe, where string }{
		{"launch", "exit", "device.launch", simple, ""}, {"provision", "exit", "provision", simple, ""}, {"holds", "exit", "holds", simple, ""},
		{"create_stream", "exit", "device.create_stream", nonBlocking, ""},
		{"create_stream_with_flags", "exit", "create_stream_with_flags", nonBlocking, ""},
		{"launch:quick", "quick_exit", "device.launch", simple, ""}, {"holds:quick", "quick_exit", "holds", simple, ""},
		{"launch:thread", "exit", "device.launch", simple, " (on a thread other than the call's)"},
	} {
		It("inside a call makes the process exit 2, naming the plugin and the entry in flight: "+c.fn+"() in "+c.entry+c.where, func() {
			if c.where != "" && plugin.RaceBuild {
				Skip("a race-enabled build ends through exit() itself: its handler judges only the thread of a call")
			}
			path := build("passthrough")
			code, stdout, stderr := exitChild(exitChildEnv+"="+path, exitProbeEnv+"="+c.probe, "RC_TEST_EXIT="+c.knob)
			Expect(code).To(Equal(2), stderr)
			Expect(stderr).To(Equal(endedLine(c.fn, fmt.Sprintf("runtime plugin %s was inside its entry %s, a call replaycheck made%s", path, c.entry, c.where))))
			Expect(stdout).NotTo(ContainSubstring("the instance ended"))
		})
	}

	It("between calls, from a thread of its own, makes the process exit 2, naming the plugin loaded", func() {
		if plugin.RaceBuild {
			Skip("a race-enabled build ends through exit() itself: its handler judges only the thread of a call")
		}
		path := build("passthrough")
		code, stdout, stderr := exitChild(exitChildEnv+"="+path, exitProbeEnv+"="+simple, "RC_TEST_EXIT_BETWEEN=1")
		Expect(code).To(Equal(2), stderr)
		Expect(stderr).To(Equal(endedLine("exit", fmt.Sprintf("runtime plugin %s was loaded, between replaycheck's calls into it (from a thread of the plugin's own, or other C code)", path))))
		Expect(stdout).To(ContainSubstring("the instance ended: exact"), "the instance ran whole first")
	})

	It("between calls, with more plugins loaded than the handler has room to name, still makes the process exit 2", func() {
		if plugin.RaceBuild {
			Skip("a race-enabled build ends through exit() itself: its handler judges only the thread of a call")
		}
		code, stdout, stderr := child("TestManyLoadedChild", manyChildEnv+"="+build("passthrough"), "RC_TEST_EXIT_BETWEEN=1")
		Expect(code).To(Equal(2), stderr)
		Expect(stderr).To(Equal(endedLine("exit", "a runtime plugin was loaded, between replaycheck's calls into it (from a thread of the plugin's own, or other C code)")))
		Expect(stdout).To(ContainSubstring("closed"))
	})
})

// reusingEvents is an inner device that numbers its events from 1, giving the lowest number free
// again after a destroy, as a driver may reuse a handle: only CreateEvent and DestroyEvent know.
type reusingEvents struct {
	device.Device
	ids map[device.Event]device.Event // ours to the device's
}

func (d *reusingEvents) CreateEvent(t device.Thread) (device.Event, error) {
	ev, err := d.Device.CreateEvent(t)
	if err != nil {
		return 0, err
	}
	if d.ids == nil {
		d.ids = map[device.Event]device.Event{}
	}
	id := device.Event(1)
	for d.ids[id] != 0 {
		id++
	}
	d.ids[id] = ev
	return id, nil
}

func (d *reusingEvents) DestroyEvent(t device.Thread, ev device.Event) error {
	if err := d.Device.DestroyEvent(t, d.ids[ev]); err != nil {
		return err
	}
	delete(d.ids, ev)
	return nil
}
