package interpose_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// hex is how the interposer writes an address the program printed with %p or 0x%llx.
func hex(s string) string {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	Expect(err).NotTo(HaveOccurred(), s)
	return fmt.Sprintf("0x%x", v)
}

// stacksSound checks that every event naming a stack comes after that stack's one stack event,
// per process, and that no process sends a stack id twice.
func stacksSound(r result) {
	sent := map[string]bool{}
	for _, e := range r.events {
		key := e.get("pid") + "/"
		if e.name == "stack" {
			Expect(sent[key+e.get("id")]).To(BeFalse(), "stack sent twice: %s", e.line)
			sent[key+e.get("id")] = true
			Expect(e.fields).NotTo(HaveKey("tid"))
			continue
		}
		if id := e.get("stack"); id != "" && id != "0" {
			Expect(sent[key+id]).To(BeTrue(), "stack %s used before it was sent: %s", id, e.line)
		}
	}
}

// ways are how a program reaches the CUDA driver, and the suffix of the entry points it binds.
var ways = []struct{ way, suffix string }{
	{"linked", ""}, {"dlsym", ""}, {"proc", ""}, {"ptsz", "_ptsz"},
}

func cudaProg(way string) string {
	if way == "linked" {
		return built.cudaLinked
	}
	return built.cuDl
}

var _ = Describe("the CUDA interposer", func() {
	for _, w := range ways {
		It("sees a program that reaches the driver through "+w.way, func() {
			r := watched(cudaProg(w.way), w.way, "basic")
			Expect(r.code).To(Equal(0), r.out)
			a, b := hex(r.value("a")), hex(r.value("b"))
			stream, exec, graph := hex(r.value("stream")), hex(r.value("exec")), hex(r.value("graph"))
			Expect(r.names()).To(Equal([]string{"hello", "alloc", "alloc", "begin", "op", "op", "op", "end", "instantiate",
				"launch", "free", "launch", "destroy-exec", "destroy-graph", "free"}))
			stacksSound(r)
			ev := r.events
			get := func(name string, i int) event { return r.named(name)[i] }
			Expect(ev[0].get("exe")).To(Equal(cudaProg(w.way)))
			Expect(get("alloc", 0).get("call")).To(Equal("cuMemAlloc_v2"))
			Expect(get("alloc", 0).get("addr")).To(Equal(a))
			Expect(get("alloc", 0).get("kind")).To(Equal("device"))
			Expect(get("alloc", 1).get("addr")).To(Equal(b))
			Expect(get("begin", 0).get("call")).To(Equal("cuStreamBeginCapture_v2" + w.suffix))
			Expect(get("begin", 0).get("stream")).To(Equal(stream))
			Expect(get("begin", 0).get("capture")).To(Equal("1"))
			Expect(get("begin", 0).get("mode")).To(Equal("global"))
			memset, copy, kernel := get("op", 0), get("op", 1), get("op", 2)
			Expect(memset.get("call")).To(Equal("cuMemsetD8Async" + w.suffix))
			Expect(memset.fields).To(HaveKeyWithValue("w", []string{a + "+4096"}))
			Expect(memset.get("capture")).To(Equal("1"))
			Expect(memset.get("tcap")).To(Equal("1"))
			Expect(copy.get("call")).To(Equal("cuMemcpyDtoDAsync_v2" + w.suffix))
			Expect(copy.get("what")).To(Equal("copy"))
			Expect(copy.get("w")).To(Equal(b + "+4096"))
			Expect(copy.get("r")).To(Equal(a + "+4096"))
			Expect(kernel.get("call")).To(Equal("cuLaunchKernel" + w.suffix))
			Expect(kernel.get("what")).To(Equal("kernel"))
			Expect(kernel.fields["arg"]).To(Equal([]string{"0:0:" + b, "1:0:" + a}))
			Expect(kernel.fields).NotTo(HaveKey("nolayout"))
			Expect(get("end", 0).get("graph")).To(Equal(graph))
			Expect(get("end", 0).get("ok")).To(Equal("1"))
			Expect(get("instantiate", 0).get("exec")).To(Equal(exec))
			Expect(get("instantiate", 0).get("graph")).To(Equal(graph))
			launches := r.named("launch")
			Expect(launches[0].get("call")).To(Equal("cuGraphLaunch" + w.suffix))
			Expect(launches[0].get("exec")).To(Equal(exec))
			Expect(launches[0].get("stale")).To(Equal("0"))
			Expect(launches[1].get("stale")).To(Equal("1"), "launched after b was freed")
			Expect(launches[1].get("refused")).To(Equal("0"))
			Expect(get("free", 0).get("addr")).To(Equal(b))
			Expect(get("destroy-exec", 0).get("exec")).To(Equal(exec))
			Expect(get("destroy-graph", 0).get("graph")).To(Equal(graph))
			for _, e := range r.events {
				if e.name != "stack" {
					Expect(e.get("pid")).To(Equal(ev[0].get("pid")))
					Expect(e.get("tid")).To(Equal(ev[0].get("pid")), "the main thread")
				}
			}
		})
	}

	It("says once that a kernel has no parameter layout, and scans nothing", func() {
		r := run(opts{driverDir: built.nolayout, preload: true}, built.cuDl, "proc", "basic")
		Expect(r.code).To(Equal(0), r.out)
		kernel := r.named("op")[2]
		Expect(kernel.get("nolayout")).To(Equal("1"))
		Expect(kernel.fields).NotTo(HaveKey("arg"))
		Expect(r.named("note")).To(HaveLen(1))
		Expect(r.named("note")[0].get("text")).To(ContainSubstring("cuFuncGetParamInfo"))
	})

	It("scans the packed argument buffer extra passes as argument 0", func() {
		r := watched(built.cuDl, "dlsym", "extra")
		Expect(r.code).To(Equal(0), r.out)
		a := hex(r.value("a"))
		Expect(r.named("op")[0].fields["arg"]).To(Equal([]string{"0:0:" + a, "0:8:" + a}))
	})

	It("sends each distinct call stack once, naming the program's frames", func() {
		r := watched(built.cuDl, "proc", "stacks")
		Expect(r.code).To(Equal(0), r.out)
		stacksSound(r)
		var ids []string
		for _, e := range r.named("alloc") {
			ids = append(ids, e.get("stack"))
		}
		Expect(ids).To(HaveLen(4))
		Expect(ids[0]).To(Equal(ids[1]))
		Expect(ids[1]).To(Equal(ids[2]))
		Expect(ids[3]).NotTo(Equal(ids[0]), "a second call site")
		frames := map[string]string{}
		for _, e := range r.named("stack") {
			frames[e.get("id")] = e.get("frames")
		}
		Expect(frames[ids[0]]).To(ContainSubstring(",site_one|"))
		Expect(frames[ids[3]]).To(ContainSubstring(",site_two|"))
		Expect(frames[ids[0]]).To(ContainSubstring(built.cuDl + ","))
		Expect(frames[ids[0]]).NotTo(ContainSubstring("libreplaycheck-watch"), "the interposer's own frames are left out")
		first := strings.Split(frames[ids[0]], "|")[0]
		Expect(strings.Split(first, ",")).To(HaveLen(4))
	})

	It("follows a stream into the capture through an event, and out at the end", func() {
		r := watched(built.cuDl, "proc", "join")
		Expect(r.code).To(Equal(0), r.out)
		Expect(r.names()).To(Equal([]string{"hello", "alloc", "begin", "join", "op", "end"}),
			"record and wait are not sent without a private pool; no op after the end")
		j := r.named("join")[0]
		Expect(j.get("stream")).To(Equal(hex(r.value("s2"))))
		Expect(j.get("event")).To(Equal(hex(r.value("e1"))))
		Expect(j.get("capture")).To(Equal("1"))
		op := r.named("op")[0]
		Expect(op.get("stream")).To(Equal(hex(r.value("s2"))))
		Expect(op.get("capture")).To(Equal("1"))
	})

	It("sends work the capturing thread puts on another stream, with its tcap", func() {
		r := watched(built.cuDl, "proc", "tcap")
		Expect(r.code).To(Equal(0), r.out)
		Expect(r.names()).To(Equal([]string{"hello", "mode", "alloc", "begin", "alloc", "op", "op", "free", "end"}))
		Expect(r.named("mode")[0].get("mode")).To(Equal("relaxed"))
		Expect(r.named("begin")[0].get("mode")).To(Equal("relaxed"))
		off, in := r.named("op")[0], r.named("op")[1]
		Expect(off.get("stream")).To(Equal(hex(r.value("s2"))))
		Expect(off.get("capture")).To(Equal("0"))
		Expect(off.get("tcap")).To(Equal("1"))
		Expect(in.get("stream")).To(Equal(hex(r.value("s1"))))
		Expect(in.get("capture")).To(Equal("1"))
		Expect(r.named("alloc")[1].get("addr")).To(Equal(hex(r.value("b"))))
	})

	It("names the per-thread default stream ptds:<tid>", func() {
		r := watched(built.cuDl, "proc", "streams")
		Expect(r.code).To(Equal(0), r.out)
		ptds := "ptds:" + r.events[0].get("tid")
		Expect(r.named("begin")[0].get("stream")).To(Equal(ptds))
		Expect(r.named("op")[0].get("stream")).To(Equal(ptds))
		Expect(r.named("end")[0].get("stream")).To(Equal(ptds))
	})

	It("sends stream-ordered and pinned host allocations with their kinds", func() {
		r := watched(built.cuDl, "proc", "async")
		Expect(r.code).To(Equal(0), r.out)
		Expect(r.names()).To(Equal([]string{"hello", "alloc", "free", "alloc", "free"}))
		s, a, h := hex(r.value("stream")), hex(r.value("a")), hex(r.value("host"))
		var got []event
		for _, e := range r.events {
			if e.name == "alloc" || e.name == "free" {
				got = append(got, e)
			}
		}
		for i, want := range []struct{ call, addr, kind, stream string }{
			{"cuMemAllocAsync", a, "async", s}, {"cuMemFreeAsync", a, "async", s},
			{"cuMemAllocHost_v2", h, "host", "0x0"}, {"cuMemFreeHost", h, "host", "0x0"},
		} {
			Expect(got[i].get("call")).To(Equal(want.call))
			Expect(got[i].get("addr")).To(Equal(want.addr))
			Expect(got[i].get("kind")).To(Equal(want.kind))
			Expect(got[i].get("stream")).To(Equal(want.stream))
		}
	})

	It("shares a private pool's block between captures, and finds it stale once an eager allocation takes it", func() {
		r := watched(built.cuDl, "proc", "pool")
		Expect(r.code).To(Equal(0), r.out)
		pool := hex(r.value("pool"))
		pp := r.named("pool-private")
		Expect(pp).To(HaveLen(1))
		Expect(pp[0].get("pool")).To(Equal(pool))
		Expect(pp[0].get("stack")).To(Equal("0"))
		var blocks []event
		for _, e := range r.named("alloc") {
			if e.get("kind") == "pool" {
				blocks = append(blocks, e)
			}
		}
		Expect(blocks).To(HaveLen(3))
		Expect(blocks[0].get("pool")).To(Equal(pool))
		Expect(blocks[0].get("call")).To(Equal("rc_watch_pool_alloc"))
		var stale []string
		for _, e := range r.named("launch") {
			stale = append(stale, e.get("stale"))
		}
		Expect(stale).To(Equal([]string{"0", "0", "1"}), "shared by two captures, then taken outside any")
		Expect(r.named("record")).To(HaveLen(1))
		Expect(r.named("wait")).To(HaveLen(1))
		var syncs []string
		for _, e := range r.named("sync") {
			syncs = append(syncs, e.get("what"))
		}
		Expect(syncs).To(Equal([]string{"event", "stream", "device"}))
	})

	It("follows cuGraphExecUpdate to the new graph's memory", func() {
		r := watched(built.cuDl, "proc", "update")
		Expect(r.code).To(Equal(0), r.out)
		Expect(r.value("update")).To(Equal("0"))
		u := r.named("update")[0]
		Expect(u.get("ok")).To(Equal("1"))
		Expect(u.get("call")).To(Equal("cuGraphExecUpdate_v2"))
		l := r.named("launch")
		Expect(l[0].get("stale")).To(Equal("0"), "the old graph's buffer freed")
		Expect(l[1].get("stale")).To(Equal("1"), "the new graph's buffer freed")
	})

	It("follows two threads capturing at once in thread-local mode, each with its own capture", func() {
		r := watched(built.cuDl, "proc", "threads")
		Expect(r.code).To(Equal(0), r.out)
		begins := r.named("begin")
		Expect(begins).To(HaveLen(2))
		byTid := map[string]string{}
		for _, b := range begins {
			Expect(b.get("mode")).To(Equal("thread-local"))
			Expect(b.get("tid")).NotTo(Equal(r.events[0].get("pid")))
			byTid[b.get("tid")] = b.get("capture")
		}
		Expect(byTid).To(HaveLen(2))
		Expect(slices.Sorted(func(yield func(string) bool) {
			for _, c := range byTid {
				yield(c)
			}
		})).To(Equal([]string{"1", "2"}))
		for _, op := range r.named("op") {
			Expect(op.get("capture")).To(Equal(byTid[op.get("tid")]))
			Expect(op.get("tcap")).To(Equal(byTid[op.get("tid")]))
		}
		Expect(r.named("op")).To(HaveLen(2))
	})

	It("watches a forked child on a connection of its own", func() {
		r := watched(built.cuDl, "proc", "fork")
		Expect(r.code).To(Equal(0), r.out)
		child, parent := r.value("child"), r.value("parent")
		// The two connections' events interleave in any order: each process's come in its own.
		hellos := map[string]event{}
		for _, h := range r.named("hello") {
			hellos[h.get("pid")] = h
		}
		Expect(hellos).To(HaveLen(2))
		Expect(hellos[parent].fields).NotTo(HaveKey("fork"))
		Expect(hellos[child].get("ppid")).To(Equal(parent))
		Expect(hellos[child].get("fork")).To(Equal("1"))
		for pid := range hellos {
			first := slices.IndexFunc(r.events, func(e event) bool { return e.get("pid") == pid })
			Expect(r.events[first].name).To(Equal("hello"), "a process's first event is its hello")
		}
		var childAllocs []event
		for _, e := range r.named("alloc") {
			if e.get("pid") == child {
				childAllocs = append(childAllocs, e)
			}
		}
		Expect(childAllocs).To(HaveLen(1))
		stacksSound(r)
	})

	It("delivers the events a program sent before it crashed", func() {
		// Nothing waits once a capture begins: the allocation inside it is a finding of its own.
		r := watched(built.cuDl, "proc", "crash")
		Expect(r.signal).To(Equal(syscall.SIGSEGV), r.out)
		// The first allocation waited (docs/watch-events.md), and went with the capture's begin.
		Expect(r.names()).To(Equal([]string{"hello", "alloc", "begin", "alloc"}))
		Expect(r.named("alloc")[0].get("addr")).To(Equal(hex(r.value("a"))))
		Expect(r.named("alloc")[1].get("addr")).To(Equal(hex(r.value("b"))))
	})

	It("refuses a stale launch with RC_WATCH_REFUSE=1, leaving the bystander's bytes alone", func() {
		r := watched(built.cuDl, "proc", "refuse")
		Expect(r.code).To(Equal(0), r.out)
		Expect(r.value("a")).To(Equal(r.value("bystander")), "the fake hands the freed bytes out again")
		Expect(r.value("launch")).To(Equal("0"))
		Expect(r.value("bystander_byte")).To(Equal("aa"), "observed, the stale graph overwrites the bystander")
		l := r.named("launch")[0]
		Expect(l.get("stale")).To(Equal("1"))
		Expect(l.get("refused")).To(Equal("0"))

		r = run(opts{driverDir: built.cuda, preload: true, env: []string{"RC_WATCH_REFUSE=1"}}, built.cuDl, "proc", "refuse")
		Expect(r.code).To(Equal(0), r.out)
		Expect(r.events[0].get("refuse")).To(Equal("1"))
		Expect(r.value("launch")).To(Equal("1"), "CUDA_ERROR_INVALID_VALUE")
		Expect(r.value("bystander_byte")).To(Equal("11"))
		l = r.named("launch")[0]
		Expect(l.get("stale")).To(Equal("1"))
		Expect(l.get("refused")).To(Equal("1"))
	})

	It("refuses nothing that is not stale", func() {
		r := run(opts{driverDir: built.cuda, preload: true, env: []string{"RC_WATCH_REFUSE=1"}}, built.cuDl, "proc", "plain")
		Expect(r.code).To(Equal(0), r.out)
		for _, l := range r.named("launch") {
			Expect(l.get("refused")).To(Equal("0"))
		}
		Expect(r.named("launch")).To(HaveLen(2))
	})

	It("passes everything through without a socket: the program's output is its own", func() {
		plain := run(opts{driverDir: built.cuda}, built.cuDl, "proc", "plain")
		Expect(plain.code).To(Equal(0), plain.out)
		Expect(plain.out).To(ContainSubstring("free_again=1\n"))
		for _, o := range []opts{
			{driverDir: built.cuda, preload: true, socket: "none"},
			{driverDir: built.cuda, preload: true, socket: GinkgoT().TempDir() + "/nobody-listens"},
			{driverDir: built.cuda, preload: true},
		} {
			r := run(o, built.cuDl, "proc", "plain")
			Expect(r.code).To(Equal(0), r.out)
			Expect(r.out).To(Equal(plain.out))
			if o.socket != "" {
				Expect(r.events).To(BeEmpty())
			}
		}
		linked := run(opts{driverDir: built.cuda, preload: true, socket: "none"}, built.cudaLinked, "linked", "plain")
		Expect(linked.out).To(Equal(plain.out))
	})

	It("sends nothing for a family RC_WATCH_BACKEND leaves out", func() {
		r := run(opts{driverDir: built.cuda, preload: true, env: []string{"RC_WATCH_BACKEND=acl"}}, built.cuDl, "proc", "basic")
		Expect(r.code).To(Equal(0), r.out)
		Expect(r.names()).To(Equal([]string{"hello"}))
		Expect(r.events[0].get("backend")).To(Equal("acl"))
		r = run(opts{driverDir: built.cuda, preload: true, env: []string{"RC_WATCH_BACKEND=cuda"}}, built.cuDl, "proc", "basic")
		Expect(r.events[0].get("backend")).To(Equal("cuda"))
		Expect(r.named("launch")).To(HaveLen(2))
	})

	It("does not let a program probing for the driver find the interposer's exports", func() {
		r := watched(built.cuDl, "dlsym", "probe")
		Expect(r.code).To(Equal(0), r.out)
		Expect(r.value("cuInit")).To(Equal("null"))
		Expect(r.value("cuMemAlloc_v2")).To(Equal("null"), "a wrapped name, before libcuda is loaded")
		Expect(r.value("next_cuMemAlloc_v2")).To(Equal("null"))
		Expect(r.value("loaded_cuMemAlloc_v2")).To(Equal("found"), "once it is loaded")
	})
})

// addHex adds n to the hexadecimal address a and returns the sum in hexadecimal, without 0x.
func addHex(a string, n uint64) string {
	v, err := strconv.ParseUint(strings.TrimPrefix(a, "0x"), 16, 64)
	Expect(err).NotTo(HaveOccurred())
	return strconv.FormatUint(v+n, 16)
}

var _ = Describe("the interposer's unwinder", func() {
	It("finds the same frames as glibc's backtrace()", func() {
		// Each stack as "OFFSET@OBJECT|...": the return addresses relative to their objects,
		// which ASLR does not move between runs.
		frames := func(env ...string) []string {
			r := run(opts{driverDir: built.cuda, preload: true, env: env}, built.cuDl, "proc", "stacks")
			Expect(r.code).To(Equal(0), r.out)
			var out []string
			for _, e := range r.named("stack") {
				var fs []string
				for _, f := range strings.Split(e.get("frames"), "|") {
					parts := strings.Split(f, ",")
					Expect(parts).To(HaveLen(4), f)
					pc, err := strconv.ParseUint(strings.TrimPrefix(parts[0], "0x"), 16, 64)
					Expect(err).NotTo(HaveOccurred())
					base, err := strconv.ParseUint(strings.TrimPrefix(parts[1], "0x"), 16, 64)
					Expect(err).NotTo(HaveOccurred())
					fs = append(fs, fmt.Sprintf("%x@%s", pc-base, parts[2]))
				}
				out = append(out, strings.Join(fs, "|"))
			}
			return out
		}
		fast, glibc := frames(), frames("RC_WATCH_UNWIND=backtrace")
		Expect(fast).To(HaveLen(3))
		Expect(len(strings.Split(fast[0], "|"))).To(BeNumerically(">=", 5), "site_one, stacks, main, libc, _start")
		Expect(fast).To(Equal(glibc))
	})
})

var _ = Describe("the CUDA interposer's runs of launches", func() {
	It("sends clean launches in a row from one call site as one line with n, and a stale one alone", func() {
		r := watched(built.cuDl, "proc", "repeat")
		Expect(r.code).To(Equal(0), r.out)
		var got []string
		for _, l := range r.named("launch") {
			got = append(got, l.get("stale")+"/"+l.get("n"))
		}
		// Round 0: five from the loop, one from the other site; round 1: five from the loop (the
		// sync sends nothing and leaves the run open); the stale launch after the free ends the
		// run and goes alone, at once.
		Expect(got).To(Equal([]string{"0/5", "0/", "0/5", "1/"}))
	})
})

// variants are the entry points cuda_prog.c's CU_VARIANTS binds, each one a wrapper.
var variants = []string{
	"cuMemAlloc", "cuMemFree", "cuMemAllocHost", "cuMemHostAlloc", "cuMemAllocFromPoolAsync",
	"cuMemAllocFromPoolAsync_ptsz", "cuMemFreeAsync_ptsz", "cuMemsetD16Async", "cuMemsetD16Async_ptsz",
	"cuMemsetD32Async_ptsz", "cuEventRecordWithFlags", "cuEventRecordWithFlags_ptsz", "cuStreamBeginCapture",
	"cuStreamBeginCapture_ptsz", "cuStreamEndCapture_ptsz", "cuGraphInstantiate", "cuGraphInstantiate_v2",
	"cuGraphExecUpdate",
}

// results returns what the program printed as rc_*=: return codes and what the driver wrote
// back, the same with the interposer as without.
func results(r result) []string {
	var out []string
	for _, l := range strings.Split(r.out, "\n") {
		if strings.HasPrefix(l, "rc_") {
			out = append(out, l)
		}
	}
	Expect(out).NotTo(BeEmpty(), "no rc_ lines in:\n%s", r.out)
	return out
}

// calls returns the call of every event named name.
func calls(r result, name string) []string {
	var out []string
	for _, e := range r.named(name) {
		out = append(out, e.get("call"))
	}
	return out
}

// passedThrough runs the scenario without the interposer and checks that the watched run r
// printed the same results: every failure (and success) the driver answered reached the program.
func passedThrough(r result, way, scenario string) {
	plain := run(opts{driverDir: built.cuda}, cudaProg(way), way, scenario)
	Expect(plain.code).To(Equal(0), plain.out)
	Expect(results(r)).To(Equal(results(plain)))
}

var _ = Describe("the CUDA interposer's legacy and per-thread variants", func() {
	for _, way := range []string{"linked", "dlsym", "proc"} {
		It("binds each variant to its wrapper through "+way, func() {
			for _, o := range []struct {
				opts
				object string
			}{
				{opts{driverDir: built.cuda, preload: true}, "libreplaycheck-watch.so"},
				{opts{driverDir: built.cuda}, "libcuda.so.1"},
			} {
				r := run(o.opts, cudaProg(way), way, "via")
				Expect(r.code).To(Equal(0), r.out)
				for _, v := range variants {
					Expect(r.value("via_"+v)).To(Equal(o.object), v)
				}
			}
		})

		It("sends the legacy entry points' events, and none for a call the driver failed, through "+way, func() {
			r := watched(cudaProg(way), way, "legacy")
			Expect(r.code).To(Equal(0), r.out)
			stacksSound(r)
			// cuMemAlloc (v1) fails out-of-memory and cuMemFree (v1) of a's low 32 bits fails: no
			// alloc or free; neither do the failed cuMemHostAlloc, cuMemAllocHost, cuStreamBeginCapture
			// (the legacy stream) and cuGraphInstantiate(_v2) (a bad graph, an injected failure).
			Expect(r.value("rc_alloc_v1")).To(Equal("2"), "CUDA_ERROR_OUT_OF_MEMORY")
			Expect(r.value("alloc_v1")).To(Equal("0x1234"), "the pointer left as it was")
			for _, k := range []string{"rc_free_v1", "rc_host_alloc_flags", "rc_alloc_host_v1_injected",
				"rc_begin_legacy_stream", "rc_instantiate_bad", "rc_instantiate_v2_injected"} {
				Expect(r.value(k)).NotTo(Equal("0"), k)
			}
			Expect(r.names()).To(Equal([]string{"hello", "alloc", "alloc", "alloc", "free", "free", "begin", "op", "end",
				"instantiate", "instantiate", "launch", "free", "launch", "launch"}))
			Expect(calls(r, "alloc")).To(Equal([]string{"cuMemAlloc_v2", "cuMemAllocHost", "cuMemHostAlloc"}))
			Expect(calls(r, "free")).To(Equal([]string{"cuMemFreeHost", "cuMemFreeHost", "cuMemFree_v2"}))
			a, h1, h2 := hex(r.value("a")), hex(r.value("host_v1")), hex(r.value("host_alloc"))
			for i, want := range []struct{ addr, size string }{{h1, "128"}, {h2, "64"}} {
				e := r.named("alloc")[i+1]
				Expect(e.get("addr")).To(Equal(want.addr))
				Expect(e.get("size")).To(Equal(want.size))
				Expect(e.get("kind")).To(Equal("host"))
				Expect(e.get("stream")).To(Equal("0x0"))
			}
			Expect(r.named("free")[0].get("addr")).To(Equal(h1))
			Expect(r.named("free")[2].get("addr")).To(Equal(a))
			begin := r.named("begin")[0]
			Expect(begin.get("call")).To(Equal("cuStreamBeginCapture"))
			Expect(begin.get("stream")).To(Equal(hex(r.value("stream"))))
			Expect(begin.get("mode")).To(Equal("global"), "the v1 entry point has no mode")
			graph, x1, x2 := hex(r.value("graph")), hex(r.value("exec_v1")), hex(r.value("exec_v2"))
			inst := r.named("instantiate")
			Expect(calls(r, "instantiate")).To(Equal([]string{"cuGraphInstantiate", "cuGraphInstantiate_v2"}))
			Expect(inst[0].get("graph")).To(Equal(graph))
			Expect(inst[0].get("exec")).To(Equal(x1))
			Expect(inst[1].get("graph")).To(Equal(graph))
			Expect(inst[1].get("exec")).To(Equal(x2))
			var launches []string
			for _, l := range r.named("launch") {
				launches = append(launches, l.get("exec")+"/"+l.get("stale"))
			}
			// Not stale after the failed v1 free; both executable graphs name a once it is freed.
			Expect(launches).To(Equal([]string{x1 + "/0", x1 + "/1", x2 + "/1"}))
			passedThrough(r, way, "legacy")
		})

		It("sends allocations from a pool with the pool and the stream, _ptsz on ptds, through "+way, func() {
			r := watched(cudaProg(way), way, "frompool")
			Expect(r.code).To(Equal(0), r.out)
			Expect(r.value("rc_injected")).NotTo(Equal("0"))
			Expect(r.value("rc_in_capture")).NotTo(Equal("0"), "no memory node on the fake")
			Expect(r.names()).To(Equal([]string{"hello", "alloc", "alloc", "free", "free", "begin", "end"}),
				"nothing for the two failed allocations")
			pool, s, ptds := hex(r.value("pool")), hex(r.value("stream")), "ptds:"+r.events[0].get("tid")
			x, y := hex(r.value("x")), hex(r.value("y"))
			var got []event
			for _, e := range r.events {
				if e.name == "alloc" || e.name == "free" {
					got = append(got, e)
				}
			}
			for i, want := range []struct{ call, addr, size, stream string }{
				{"cuMemAllocFromPoolAsync", x, "512", s}, {"cuMemAllocFromPoolAsync_ptsz", y, "256", ptds},
				{"cuMemFreeAsync", x, "", s}, {"cuMemFreeAsync_ptsz", y, "", ptds},
			} {
				Expect(got[i].get("call")).To(Equal(want.call))
				Expect(got[i].get("addr")).To(Equal(want.addr))
				Expect(got[i].get("size")).To(Equal(want.size))
				Expect(got[i].get("kind")).To(Equal("async"))
				Expect(got[i].get("pool")).To(Equal(pool))
				Expect(got[i].get("stream")).To(Equal(want.stream))
			}
			passedThrough(r, way, "frompool")
		})

		It("sends 16- and 32-bit memsets with their widths, _ptsz on ptds, through "+way, func() {
			r := watched(cudaProg(way), way, "memsets")
			Expect(r.code).To(Equal(0), r.out)
			a, b, s, ptds := hex(r.value("a")), r.value("b"), hex(r.value("stream")), "ptds:"+r.events[0].get("tid")
			Expect(r.names()).To(Equal([]string{"hello", "alloc", "alloc", "begin", "op", "op", "end", "begin", "op", "op", "end"}),
				"nothing for the injected failures, nothing outside the captures")
			var got []string
			for _, e := range r.named("op") {
				Expect(e.get("what")).To(Equal("memset"))
				got = append(got, strings.Join([]string{e.get("call"), e.get("stream"), e.get("capture"), e.get("w")}, " "))
			}
			Expect(got).To(Equal([]string{
				"cuMemsetD16Async " + s + " 1 " + a + "+128",
				"cuMemsetD32Async " + s + " 1 0x" + addHex(a, 256) + "+64",
				"cuMemsetD16Async_ptsz " + ptds + " 2 " + hex(b) + "+64",
				"cuMemsetD32Async_ptsz " + ptds + " 2 0x" + addHex(b, 64) + "+32",
			}))
			Expect(calls(r, "begin")).To(Equal([]string{"cuStreamBeginCapture_v2", "cuStreamBeginCapture_ptsz"}))
			Expect(calls(r, "end")).To(Equal([]string{"cuStreamEndCapture", "cuStreamEndCapture_ptsz"}))
			second := r.named("begin")[1]
			Expect(second.get("stream")).To(Equal(ptds))
			Expect(second.get("mode")).To(Equal("global"))
			Expect(r.named("end")[1].get("stream")).To(Equal(ptds))
			Expect(r.named("end")[1].get("ok")).To(Equal("1"))
			passedThrough(r, way, "memsets")
		})

		It("follows cuEventRecordWithFlags into a capture and sends its records, _ptsz on ptds, through "+way, func() {
			r := watched(cudaProg(way), way, "record")
			Expect(r.code).To(Equal(0), r.out)
			Expect(r.value("rc_flags")).NotTo(Equal("0"))
			Expect(r.value("rc_wait_unrecorded")).To(Equal("0"))
			// s2 joins through e1; s3 waits on e3, whose record failed: no join.
			Expect(r.names()).To(Equal([]string{"hello", "alloc", "begin", "join", "op", "end", "pool-private", "record", "record"}))
			j := r.named("join")[0]
			Expect(j.get("stream")).To(Equal(hex(r.value("s2"))))
			Expect(j.get("event")).To(Equal(hex(r.value("e1"))))
			Expect(r.named("op")[0].get("capture")).To(Equal("1"))
			var got []string
			for _, e := range r.named("record") {
				got = append(got, e.get("call")+" "+e.get("event")+" "+e.get("stream"))
			}
			Expect(got).To(Equal([]string{
				"cuEventRecordWithFlags " + hex(r.value("e1")) + " " + hex(r.value("s1")),
				"cuEventRecordWithFlags_ptsz " + hex(r.value("e2")) + " ptds:" + r.events[0].get("tid"),
			}), "nothing for the two failed records")
			passedThrough(r, way, "record")
		})

		It("follows the v1 cuGraphExecUpdate, and a failed one changes nothing, through "+way, func() {
			r := watched(cudaProg(way), way, "update-v1")
			Expect(r.code).To(Equal(0), r.out)
			Expect(r.value("rc_update_bad")).NotTo(Equal("0"))
			Expect(r.value("rc_update")).To(Equal("0"))
			ex := hex(r.value("exec"))
			var got []string
			for _, u := range r.named("update") {
				got = append(got, strings.Join([]string{u.get("call"), u.get("exec"), u.get("graph"), u.get("ok")}, " "))
			}
			Expect(got).To(Equal([]string{
				"cuGraphExecUpdate " + ex + " " + hex(r.value("g3")) + " 0",
				"cuGraphExecUpdate " + ex + " " + hex(r.value("g2")) + " 1",
			}))
			var stale []string
			for _, l := range r.named("launch") {
				stale = append(stale, l.get("stale"))
			}
			// c freed after the failed update to g3, a after the update to g2, then b.
			Expect(stale).To(Equal([]string{"0", "0", "1"}))
			passedThrough(r, way, "update-v1")
		})

		It("answers cuGraphInstantiateWithParams(_ptsz), which the fake lacks, with CUDA_ERROR_NOT_FOUND, through "+way, func() {
			// The fake exports no cuGraphInstantiateWithParams: linked weakly the program finds the
			// interposer's wrappers, which answer 500; dlsym and cuGetProcAddress find nothing.
			r := watched(cudaProg(way), way, "withparams")
			Expect(r.code).To(Equal(0), r.out)
			Expect(r.named("instantiate")).To(BeEmpty())
			Expect(r.value("default_withparams")).To(Equal("null"), "no export of ours stands in for a missing one")
			Expect(r.value("rc_exec_untouched")).To(Equal("1"))
			plain := run(opts{driverDir: built.cuda}, cudaProg(way), way, "withparams")
			Expect(plain.code).To(Equal(0), plain.out)
			switch way {
			case "linked":
				Expect(r.value("withparams")).To(Equal("libreplaycheck-watch.so"))
				Expect(r.value("withparams_ptsz")).To(Equal("libreplaycheck-watch.so"))
				Expect(r.value("rc_withparams")).To(Equal("500"))
				Expect(r.value("rc_withparams_ptsz")).To(Equal("500"))
				Expect(plain.value("withparams")).To(Equal("null"))
			case "dlsym":
				Expect(r.value("withparams")).To(Equal("null"))
				Expect(r.value("withparams_ptsz")).To(Equal("null"))
				Expect(results(r)).To(Equal(results(plain)))
			case "proc":
				Expect(r.value("rc_withparams_proc")).To(Equal("500"))
				Expect(r.value("rc_withparams_ptsz_proc")).To(Equal("500"))
				Expect(r.value("withparams")).To(Equal("null"))
				Expect(results(r)).To(Equal(results(plain)))
			}
		})
	}

	It("answers dlvsym as glibc does without the interposer", func() {
		// The fake's names are unversioned, so glibc's dlvsym finds none of them; libc's versioned
		// memcpy and dlsym it finds, at the same offsets.
		lookups := func(r result) []string {
			Expect(r.code).To(Equal(0), r.out)
			var out []string
			for _, l := range strings.Split(r.out, "\n") {
				if strings.Contains(l, "=") && !strings.HasPrefix(l, "dlvsym_is=") {
					out = append(out, l)
				}
			}
			return out
		}
		plain := run(opts{driverDir: built.cuda}, built.cuDl, "dlsym", "dlvsym")
		Expect(plain.value("dlvsym_is")).To(Equal("libc.so.6"))
		Expect(plain.value("cu_handle")).To(Equal("null"))
		Expect(plain.value("memcpy_libc")).To(HavePrefix("libc.so.6+0x"))
		Expect(plain.value("memcpy_next")).To(Equal(plain.value("memcpy_libc")))
		Expect(plain.value("memcpy_libc_old")).NotTo(Equal(plain.value("memcpy_libc")), "two versions of memcpy")
		Expect(plain.value("memcpy_libc_none")).To(Equal("null"))
		for _, o := range []opts{
			{driverDir: built.cuda, preload: true},
			{driverDir: built.cuda, preload: true, socket: "none"},
		} {
			r := run(o, built.cuDl, "dlsym", "dlvsym")
			Expect(r.value("dlvsym_is")).To(Equal("libreplaycheck-watch.so"), "the interposer's dlvsym answered")
			Expect(lookups(r)).To(Equal(lookups(plain)))
		}
	})
})
