package runtime_test

import (
	"errors"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/runtime"
)

var _ = Describe("Ptr", func() {
	p := runtime.Ptr{Addr: 0x1000, Bytes: 512}
	It("knows its end, its sub-ranges and what it overlaps or contains", func() {
		Expect(p.End()).To(Equal(uint64(0x1200)))
		Expect(p.Slice(16, 32)).To(Equal(runtime.Ptr{Addr: 0x1010, Bytes: 32}))
		Expect(p.Contains(p.Slice(16, 32))).To(BeTrue())
		Expect(p.Contains(runtime.Ptr{Addr: 0x11f0, Bytes: 32})).To(BeFalse())
		Expect(p.Overlaps(runtime.Ptr{Addr: 0x11ff, Bytes: 1})).To(BeTrue())
		Expect(p.Overlaps(runtime.Ptr{Addr: 0x1200, Bytes: 1})).To(BeFalse())
		Expect(p.String()).To(Equal("0x1000+512"))
		Expect(runtime.Ptr{}.IsZero()).To(BeTrue())
	})
	It("prints as %#x+%d, appended or as a string", func() {
		for _, q := range []runtime.Ptr{{}, p, {Addr: 0x100000000, Bytes: 65536}, {Addr: ^uint64(0), Bytes: -1}, {Addr: 0xabcdef, Bytes: 1 << 40}} {
			want := fmt.Sprintf("%#x+%d", q.Addr, q.Bytes)
			Expect(q.String()).To(Equal(want))
			Expect(string(q.Append([]byte("at ")))).To(Equal("at " + want))
		}
	})
})

var _ = Describe("capture modes", func() {
	It("parse the names they print, and nothing else", func() {
		for _, m := range runtime.CaptureModes() {
			back, err := runtime.ParseCaptureMode(m.String())
			Expect(err).NotTo(HaveOccurred())
			Expect(back).To(Equal(m))
		}
		_, err := runtime.ParseCaptureMode("GLOBAL")
		Expect(err).To(MatchError(ContainSubstring(`unknown capture mode "GLOBAL"`)))
	})
})

var _ = Describe("enumerations", func() {
	It("print their names, and a number for a value without one", func() {
		Expect([]string{runtime.Main.String(), runtime.Other.String(), runtime.Thread(7).String()}).To(Equal([]string{"main", "other", "thread(7)"}))
		Expect([]string{runtime.Pinned.String(), runtime.HostMemory(0).String()}).To(Equal([]string{"pinned", "host-memory(0)"}))
		Expect([]string{runtime.ThreadLocal.String(), runtime.CaptureMode(9).String()}).To(Equal([]string{"thread-local", "mode(9)"}))
		Expect([]string{runtime.CaptureInvalidated.String(), runtime.CaptureStatus(3).String()}).To(Equal([]string{"invalidated", "status(3)"}))
	})

	It("say what they want when a name is unknown", func() {
		_, err := runtime.ParseCaptureMode("sideways")
		Expect(err).To(MatchError(`unknown capture mode "sideways" (want global, thread-local or relaxed)`))
		_, err = runtime.ParseHostMemory("locked")
		Expect(err).To(MatchError(`unknown host memory "locked" (want pageable or pinned)`))
		Expect(runtime.ParseHostMemory("pageable")).To(Equal(runtime.Pageable))
	})

	It("hand out lists the caller may change", func() {
		runtime.CaptureModes()[0] = runtime.Relaxed
		runtime.HostMemories()[0] = runtime.Pinned
		runtime.Classes()[0] = "made-up"
		runtime.CapabilityNames()[0] = "warp-drive"
		Expect(runtime.CaptureModes()).To(Equal([]runtime.CaptureMode{runtime.Global, runtime.ThreadLocal, runtime.Relaxed}))
		Expect(runtime.HostMemories()).To(Equal([]runtime.HostMemory{runtime.Pageable, runtime.Pinned}))
		Expect(runtime.Classes()[0]).To(Equal(runtime.ClassCaptureUnsupported))
		Expect(runtime.ValidClass("made-up")).To(BeFalse())
		Expect(runtime.CapabilityNames()[0]).To(Equal("kernels"))
	})
})

var _ = Describe("Error", func() {
	e := &runtime.Error{Backend: "sim", Op: "SyncStream", Code: 107027, Name: "ACL_ERROR_RT_STREAM_CAPTURED",
		Class: runtime.ClassCapturedStream, Detail: "stream#1 is capturing"}

	It("says backend, call, class, code and detail", func() {
		Expect(e.Error()).To(Equal("sim: SyncStream: captured-stream (code 107027 ACL_ERROR_RT_STREAM_CAPTURED): stream#1 is capturing"))
		inv := *e
		inv.Invalidated = true
		Expect(inv.Error()).To(ContainSubstring(", capture invalidated"))
	})

	It("is found through wrapping, and classes anything else as internal", func() {
		wrapped := fmt.Errorf("probe step: %w", e)
		got, ok := runtime.AsError(wrapped)
		Expect(ok).To(BeTrue())
		Expect(got).To(BeIdenticalTo(e))
		Expect(runtime.ClassOf(wrapped)).To(Equal(runtime.ClassCapturedStream))
		Expect(runtime.ClassOf(errors.New("boom"))).To(Equal(runtime.ClassInternal))
		Expect(runtime.ClassOf(nil)).To(BeEmpty())
		Expect(runtime.IsRefusal(&runtime.Error{Class: runtime.ClassRefused})).To(BeTrue())
		Expect(runtime.IsRefusal(wrapped)).To(BeFalse())
	})

	It("validates classes against the closed list", func() {
		for _, c := range runtime.Classes() {
			Expect(runtime.ValidClass(c)).To(BeTrue())
		}
		Expect(runtime.ValidClass("made-up")).To(BeFalse())
	})
})

var _ = Describe("Counters", func() {
	It("name every kind of live object left behind", func() {
		base := runtime.Counters{LiveAllocs: 1, LiveStreams: 1}
		now := runtime.Counters{LiveAllocs: 2, LiveStreams: 1, LiveGraphs: 1, Mallocs: 9}
		Expect(now.Leaks(base)).To(Equal([]string{"allocations: 2 live, 1 before", "graphs: 1 live, 0 before"}))
		Expect(base.Leaks(base)).To(BeEmpty())
	})
})

var _ = Describe("Capabilities", func() {
	It("answers the probe-language names", func() {
		c := runtime.Capabilities{Kernels: true}
		Expect(c.Has("kernels")).To(BeTrue())
		Expect(c.Has("thread-rules")).To(BeFalse())
		Expect(c.Has("warp-drive")).To(BeFalse())
		for _, n := range runtime.CapabilityNames() {
			Expect(runtime.Capabilities{Kernels: true, GraphIntrospection: true, ThreadRules: true, FaultInjection: true, NonBlockingStreams: true}.Has(n)).To(BeTrue(), n)
		}
	})
})
