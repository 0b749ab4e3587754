package sim_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

const header = `
name: lab
description: a test platform
errors:
  invalid-value: {code: 11, name: LAB_INVALID}
  out-of-memory: {code: 12, name: LAB_OOM}
  not-supported: {code: 13, name: LAB_UNSUPPORTED}
  capture-invalidated: {code: 14, name: LAB_INVALIDATED}
`

var _ = Describe("the backend", func() {
	It("is named sim, describes its devices and has every capability", func() {
		b, err := sim.New(sim.Options{})
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Name()).To(Equal("sim"))
		n, err := b.Devices(context.Background())
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(1))

		d := onProfile("")
		Expect(d.Describe()).To(Equal("sim device 0 (profile cann: Ascend ACL, CANN 9.0 a2a3 rules; 16GiB)"))
		Expect(d.Backend()).To(Equal("sim"))
		Expect(d.Capabilities()).To(Equal(device.Capabilities{Kernels: true, GraphIntrospection: true, ThreadRules: true, FaultInjection: true, NonBlockingStreams: true}))
		Expect(openDevice(sim.Options{Profile: "cuda", Memory: 3 * MiB}).Describe()).
			To(Equal("sim device 0 (profile cuda: NVIDIA CUDA driver API stream-capture rules; 3MiB)"))
	})

	It("opens each index as its own address space and refuses indexes it does not have", func() {
		b, err := sim.New(sim.Options{Devices: 2})
		Expect(err).NotTo(HaveOccurred())
		d0, err := b.Open(context.Background(), 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(d0.Close)
		d1, err := b.Open(context.Background(), 1)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(d1.Close)
		p0, err := d0.Malloc(main, 512)
		Expect(err).NotTo(HaveOccurred())
		p1, err := d1.Malloc(main, 512)
		Expect(err).NotTo(HaveOccurred())
		Expect(p1.Addr).NotTo(Equal(p0.Addr))
		Expect(d1.Describe()).To(HavePrefix("sim device 1 "))

		_, err = b.Open(context.Background(), 2)
		e := expectError(err, 107000, device.ClassInvalidValue)
		Expect(e.Op).To(Equal("Open"))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = b.Open(ctx, 0)
		Expect(err).To(MatchError(context.Canceled))
	})

	It("refuses unknown profiles and out-of-range options at New", func() {
		_, err := sim.New(sim.Options{Profile: "rocm"})
		Expect(err).To(MatchError(ContainSubstring(`unknown profile "rocm" (embedded: cann, cuda)`)))
		_, err = sim.New(sim.Options{Memory: 2 << 40})
		Expect(err).To(MatchError(ContainSubstring("memory")))
		_, err = sim.New(sim.Options{Memory: -1})
		Expect(err).To(HaveOccurred())
		_, err = sim.New(sim.Options{Devices: -1})
		Expect(err).To(MatchError(ContainSubstring("devices")))
		_, err = sim.New(sim.Options{ProfileYAML: []byte("name: [")})
		Expect(err).To(MatchError(ContainSubstring("profile document")))
	})
})

var _ = Describe("profile documents", func() {
	It("report every problem at once", func() {
		_, err := sim.ParseProfile([]byte(header + `
rules:
  - situation: unknown condition
    source: doc
    calls: [SyncStream]
    when: moon-phase
    code: 1
    name: X
    class: captured-stream
  - situation: condition not evaluated for the call
    source: doc
    calls: [Launch]
    when: event-captured
    code: 1
    name: X
    class: captured-event
  - situation: modes on a condition that names no capture
    source: doc
    calls: [BeginCapture]
    when: default-stream
    modes: [global]
    code: 1
    name: X
    class: invalid-value
  - situation: verify without a note
    source: verify
    calls: [Frobnicate]
    when: any-capture
    allow: true
  - situation: allow with a code
    source: folklore
    calls: [Malloc]
    when: any-capture
    modes: [sideways]
    allow: true
    code: 5
  - situation: reject without a class
    source: doc
    calls: [SyncDevice]
    when: any-capture
    code: 900
    name: X
    class: bad-luck
    ends-capture: true
`))
		Expect(err).To(HaveOccurred())
		for _, want := range []string{
			`unknown condition "moon-phase"`,
			"condition event-captured is not evaluated for Launch",
			"modes given, but condition default-stream names no capture",
			"a verify row needs a note",
			`unknown call "Frobnicate"`,
			`source "folklore"`,
			`unknown capture mode "sideways"`,
			"an allow rule carries no code",
			`unknown class "bad-luck"`,
			"ends-capture is only meaningful for EndCapture",
		} {
			Expect(err.Error()).To(ContainSubstring(want))
		}
	})

	It("take a crash as a signal name, with no answer beside it", func() {
		_, err := sim.ParseProfile([]byte(header + `
rules:
  - situation: a crash that is no signal
    source: measured
    calls: [EndCapture]
    when: capture-copy-freed
    crash: segfault
  - situation: a crash with an answer
    source: measured
    calls: [EndCapture]
    when: capture-copy-freed
    crash: SIGSEGV
    code: 1
    name: X
    class: invalid-value
  - situation: an allowed crash
    source: measured
    calls: [EndCapture]
    when: capture-copy-freed
    allow: true
    crash: SIGSEGV
`))
		Expect(err).To(HaveOccurred())
		for _, want := range []string{
			`crash "segfault" is not a signal name`,
			"a crash rule carries no code, name, class, invalidates or ends-capture",
			"an allow rule carries no code, name, class, invalidates, ends-capture or crash",
		} {
			Expect(err.Error()).To(ContainSubstring(want))
		}
		p, err := sim.ParseProfile([]byte(header + `
rules:
  - situation: a crash
    source: measured
    calls: [EndCapture]
    when: capture-copy-freed
    crash: SIGSEGV
`))
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Rules[0].Crash).To(Equal("SIGSEGV"))
	})

	It("take freed-bytes only on a condition about freed allocations, as a range, in bytes or binary units", func() {
		_, err := sim.ParseProfile([]byte(header + `
rules:
  - situation: a size on a condition without one
    source: doc
    calls: [SyncStream]
    when: stream-capturing
    freed-bytes: {at-least: 4KiB}
    code: 1
    name: X
    class: captured-stream
  - situation: an empty range
    source: doc
    calls: [Launch]
    when: graph-range-freed
    freed-bytes: {at-least: 2MiB, below: 2097152}
    allow: true
  - situation: ends the capture and invalidates it
    source: doc
    calls: [EndCapture]
    when: fork-unjoined
    code: 1
    name: X
    class: capture-unjoined
    invalidates: true
    ends-capture: true
`))
		Expect(err).To(HaveOccurred())
		for _, want := range []string{
			"freed-bytes given, but condition stream-capturing concerns no freed allocation",
			"freed-bytes: below (2 MiB) must be more than at-least (2 MiB)",
			"invalidates and ends-capture: the capture ended is not also invalidated; condition fork-unjoined names no other capture",
		} {
			Expect(err.Error()).To(ContainSubstring(want))
		}
		for _, bad := range []string{"-1", "+1", "2TB", "1.5MiB", "[1]", "9223372036854775807GiB", "2 0 MiB", "MiB"} {
			_, err = sim.ParseProfile([]byte(header + `
rules:
  - situation: a bad size
    source: doc
    calls: [Launch]
    when: graph-range-freed
    freed-bytes: {below: ` + bad + `}
    allow: true
`))
			Expect(err).To(MatchError(ContainSubstring("size")), "%s", bad)
		}
		p, err := sim.ParseProfile([]byte(header + `
rules:
  - situation: a large freed allocation
    source: doc
    calls: [Launch]
    when: graph-range-freed
    freed-bytes: {at-least: 2 MiB, below: 1TiB}
    code: 1
    name: X
    class: illegal-address
`))
		Expect(err).NotTo(HaveOccurred())
		r := p.Rules[0].FreedBytes
		Expect(r).To(Equal(sim.ByteRange{AtLeast: 2 * MiB, Below: 1024 * GiB}))
		Expect(r.String()).To(Equal("at least 2 MiB and below 1 TiB"))
		Expect(r.Contains(2*MiB - 1)).To(BeFalse())
		Expect(r.Contains(2 * MiB)).To(BeTrue())
		Expect(r.Contains(1024 * GiB)).To(BeFalse())
		Expect(sim.ByteRange{Below: 1536}.String()).To(Equal("below 1536 bytes"))
	})

	It("refuse unknown keys and missing error codes", func() {
		_, err := sim.ParseProfile([]byte(header + "rules: []\nextra: 1\n"))
		Expect(err).To(MatchError(ContainSubstring("field extra not found")))
		_, err = sim.ParseProfile([]byte("name: x\ndescription: y\nrules: []\n"))
		Expect(err).To(MatchError(ContainSubstring("errors: out-of-memory is required")))
		Expect(err).To(MatchError(ContainSubstring("no rules")))
		_, err = sim.ParseProfile(nil)
		Expect(err).To(HaveOccurred())
	})

	It("drive the device: the same situation answers as the document says", func() {
		lab := header + `
rules:
  - situation: sync of a capturing stream, lab style
    source: doc
    calls: [SyncStream]
    when: stream-capturing
    modes: [relaxed]
    code: 4242
    name: LAB_BUSY
    class: captured-stream
    invalidates: true
`
		open := func(doc string) *sim.Device {
			GinkgoHelper()
			b, err := sim.New(sim.Options{ProfileYAML: []byte(doc)})
			Expect(err).NotTo(HaveOccurred())
			dev, err := b.Open(context.Background(), 0)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(dev.Close)
			return dev.(*sim.Device)
		}

		d := open(lab)
		Expect(d.Describe()).To(ContainSubstring("profile lab: a test platform"))
		s := newStream(d)
		Expect(d.BeginCapture(main, s, device.Relaxed)).To(Succeed())
		e := expectError(d.SyncStream(main, s), 4242, device.ClassCapturedStream)
		Expect(e.Name).To(Equal("LAB_BUSY"))
		Expect(e.Invalidated).To(BeTrue())
		Expect(e.Detail).To(ContainSubstring("profile lab, rule 1"))
		Expect(status(d, s)).To(Equal(device.CaptureInvalidated))
		_, err := d.EndCapture(main, s)
		expectError(err, 14, device.ClassCaptureInvalidated) // no rule: the invalidated capture still yields no graph

		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		Expect(d.SyncStream(main, s)).To(Succeed(), "the rule is for relaxed captures only")

		bare := open(strings.Replace(lab, "calls: [SyncStream]", "calls: [BeginCapture]", 1))
		t := newStream(bare)
		_, err = bare.Malloc(main, 0)
		expectError(err, 11, device.ClassInvalidValue)
		Expect(bare.BeginCapture(main, t, device.Relaxed)).To(Succeed())
		Expect(bare.SyncStream(main, t)).To(Succeed(), "no rule, no rejection")
	})

	It("list conditions with the calls they apply to", func() {
		Expect(sim.Conditions()).To(ContainElements("stream-capturing", "fork-unjoined", "caller-began-capture"))
		Expect(sim.ConditionCalls("fork-unjoined")).To(Equal([]string{"EndCapture"}))
	})
})
