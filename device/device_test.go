package device_test

import (
	"errors"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
)

var _ = Describe("Ptr", func() {
	p := device.Ptr{Addr: 0x1000, Bytes: 512}
	It("knows its end, its sub-ranges and what it overlaps or contains", func() {
		Expect(p.End()).To(Equal(uint64(0x1200)))
		Expect(p.Slice(16, 32)).To(Equal(device.Ptr{Addr: 0x1010, Bytes: 32}))
		Expect(p.Contains(p.Slice(16, 32))).To(BeTrue())
		Expect(p.Contains(device.Ptr{Addr: 0x11f0, Bytes: 32})).To(BeFalse())
		Expect(p.Overlaps(device.Ptr{Addr: 0x11ff, Bytes: 1})).To(BeTrue())
		Expect(p.Overlaps(device.Ptr{Addr: 0x1200, Bytes: 1})).To(BeFalse())
		Expect(p.String()).To(Equal("0x1000+512"))
		Expect(device.Ptr{}.IsZero()).To(BeTrue())
	})
	It("prints as %#x+%d, appended or as a string", func() {
		for _, q := range []device.Ptr{{}, p, {Addr: 0x100000000, Bytes: 65536}, {Addr: ^uint64(0), Bytes: -1}, {Addr: 0xabcdef, Bytes: 1 << 40}} {
			want := fmt.Sprintf("%#x+%d", q.Addr, q.Bytes)
			Expect(q.String()).To(Equal(want))
			Expect(string(q.Append([]byte("at ")))).To(Equal("at " + want))
		}
	})
})

var _ = Describe("capture modes", func() {
	It("parse the names they print, and nothing else", func() {
		for _, m := range device.CaptureModes() {
			back, err := device.ParseCaptureMode(m.String())
			Expect(err).NotTo(HaveOccurred())
			Expect(back).To(Equal(m))
		}
		_, err := device.ParseCaptureMode("GLOBAL")
		Expect(err).To(MatchError(ContainSubstring(`unknown capture mode "GLOBAL"`)))
	})
})

var _ = Describe("enumerations", func() {
	It("print their names, and a number for a value without one", func() {
		Expect([]string{device.Main.String(), device.Other.String(), device.Thread(7).String()}).To(Equal([]string{"main", "other", "thread(7)"}))
		Expect([]string{device.Pinned.String(), device.HostMemory(0).String()}).To(Equal([]string{"pinned", "host-memory(0)"}))
		Expect([]string{device.ThreadLocal.String(), device.CaptureMode(9).String()}).To(Equal([]string{"thread-local", "mode(9)"}))
		Expect([]string{device.CaptureInvalidated.String(), device.CaptureStatus(3).String()}).To(Equal([]string{"invalidated", "status(3)"}))
	})

	It("say what they want when a name is unknown", func() {
		_, err := device.ParseCaptureMode("sideways")
		Expect(err).To(MatchError(`unknown capture mode "sideways" (want global, thread-local or relaxed)`))
		_, err = device.ParseHostMemory("locked")
		Expect(err).To(MatchError(`unknown host memory "locked" (want pageable or pinned)`))
		Expect(device.ParseHostMemory("pageable")).To(Equal(device.Pageable))
	})

	It("hand out lists the caller may change", func() {
		device.CaptureModes()[0] = device.Relaxed
		device.HostMemories()[0] = device.Pinned
		device.Classes()[0] = "made-up"
		device.CapabilityNames()[0] = "warp-drive"
		Expect(device.CaptureModes()).To(Equal([]device.CaptureMode{device.Global, device.ThreadLocal, device.Relaxed}))
		Expect(device.HostMemories()).To(Equal([]device.HostMemory{device.Pageable, device.Pinned}))
		Expect(device.Classes()[0]).To(Equal(device.ClassCaptureUnsupported))
		Expect(device.ValidClass("made-up")).To(BeFalse())
		Expect(device.CapabilityNames()[0]).To(Equal("kernels"))
	})
})

var _ = Describe("Error", func() {
	e := &device.Error{Backend: "sim", Op: "SyncStream", Code: 107027, Name: "ACL_ERROR_RT_STREAM_CAPTURED",
		Class: device.ClassCapturedStream, Detail: "stream#1 is capturing"}

	It("says backend, call, class, code and detail", func() {
		Expect(e.Error()).To(Equal("sim: SyncStream: captured-stream (code 107027 ACL_ERROR_RT_STREAM_CAPTURED): stream#1 is capturing"))
		inv := *e
		inv.Invalidated = true
		Expect(inv.Error()).To(ContainSubstring(", capture invalidated"))
	})

	It("is found through wrapping, and classes anything else as internal", func() {
		wrapped := fmt.Errorf("probe step: %w", e)
		got, ok := device.AsError(wrapped)
		Expect(ok).To(BeTrue())
		Expect(got).To(BeIdenticalTo(e))
		Expect(device.ClassOf(wrapped)).To(Equal(device.ClassCapturedStream))
		Expect(device.ClassOf(errors.New("boom"))).To(Equal(device.ClassInternal))
		Expect(device.ClassOf(nil)).To(BeEmpty())
		Expect(device.IsRefusal(&device.Error{Class: device.ClassRefused})).To(BeTrue())
		Expect(device.IsRefusal(wrapped)).To(BeFalse())
	})

	It("validates classes against the closed list", func() {
		for _, c := range device.Classes() {
			Expect(device.ValidClass(c)).To(BeTrue())
		}
		Expect(device.ValidClass("made-up")).To(BeFalse())
	})
})

var _ = Describe("Counters", func() {
	It("name every kind of live object left behind", func() {
		base := device.Counters{LiveAllocs: 1, LiveStreams: 1}
		now := device.Counters{LiveAllocs: 2, LiveStreams: 1, LiveGraphs: 1, Mallocs: 9}
		Expect(now.Leaks(base)).To(Equal([]string{"allocations: 2 live, 1 before", "graphs: 1 live, 0 before"}))
		Expect(base.Leaks(base)).To(BeEmpty())
	})
})

var _ = Describe("Capabilities", func() {
	It("answers the probe-language names", func() {
		c := device.Capabilities{Kernels: true}
		Expect(c.Has("kernels")).To(BeTrue())
		Expect(c.Has("thread-rules")).To(BeFalse())
		Expect(c.Has("warp-drive")).To(BeFalse())
		for _, n := range device.CapabilityNames() {
			Expect(device.Capabilities{Kernels: true, GraphIntrospection: true, ThreadRules: true, FaultInjection: true, NonBlockingStreams: true}.Has(n)).To(BeTrue(), n)
		}
	})
})
