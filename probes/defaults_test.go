package probes_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

const minimal = `version: replaycheck/v1
set: minimal
probes:
  - name: p
    hazard: none
    streams: [main]
    capture: {}
    expect: {guarded: exact}
`

func parse(src string) *probes.Set {
	GinkgoHelper()
	set, err := probes.Parse("inline.yaml", []byte(src), probes.DefaultLimits())
	Expect(err).NotTo(HaveOccurred())
	return set
}

var _ = Describe("defaults", func() {
	It("takes the built-in defaults when neither set nor probe gives a key", func() {
		p := parse(minimal).Probes[0]
		Expect(p.ID()).To(Equal("minimal/p"))
		Expect(p.Replays).To(Equal(probes.DefaultReplays))
		Expect(p.Modes).To(Equal(probes.DefaultModes()))
		Expect(p.Guards).To(Equal(probes.DefaultGuards()))
		Expect(p.Check).To(BeNil(), "nil: every live buffer")
		Expect(p.Expect.Unguarded).To(BeEmpty(), "the platform baseline decides")
	})

	It("does not share the built-in slices with the probe", func() {
		p := parse(minimal).Probes[0]
		p.Modes[0] = device.Relaxed
		Expect(probes.DefaultModes()[0]).To(Equal(device.Global))
	})

	It("takes the set's defaults, and the probe's own keys over them", func() {
		set := parse(`version: replaycheck/v1
set: d
defaults:
  replays: 7
  modes: [relaxed]
  guards: [off]
probes:
  - name: inherits
    hazard: none
    streams: [main]
    capture: {}
    expect: {guarded: exact}
  - name: overrides
    hazard: none
    streams: [main]
    capture: {}
    expect: {guarded: exact}
    replays: 2
    modes: [global, thread-local]
    guards: [on, off]
`)
		Expect(set.Defaults).To(Equal(probes.Defaults{Replays: 7, Modes: []device.CaptureMode{device.Relaxed}, Guards: []bool{false}}))
		in, over := set.Probes[0], set.Probes[1]
		Expect(in.Replays).To(Equal(7))
		Expect(in.Modes).To(Equal([]device.CaptureMode{device.Relaxed}))
		Expect(in.Guards).To(Equal([]bool{false}))
		Expect(over.Replays).To(Equal(2))
		Expect(over.Modes).To(Equal([]device.CaptureMode{device.Global, device.ThreadLocal}))
		Expect(over.Guards).To(Equal([]bool{true, false}))
	})

	Describe("streams", func() {
		set := `version: replaycheck/v1
set: s
probes:
  - name: p
    hazard: none
    buffers:
      a: {bytes: 64}
    streams: [first, second, third]
    events: [e]
    prepare:
      - fill: {dst: a, value: 1}
      - write: {dst: a, value: zero}
    captures:
      - name: on-second
        stream: second
        ops:
          - fill: {dst: a, value: 2}
          - record: {event: e}
          - wait: {event: e, stream: third}
          - sync: {}
      - name: default
        end-stream: third
    between:
      - copy: {dst: a, src: a}
      - sync: {}
    replay:
      each:
        - axpy: {y: a, x: a, a: 1}
    expect: {guarded: exact}
`
		var p *probes.Probe
		BeforeEach(func() { p = parse(set).Probes[0] })

		It("defaults ops inside a capture to its origin stream", func() {
			ops := p.Captures[0].Ops
			Expect([]string{ops[0].Stream, ops[1].Stream, ops[2].Stream, ops[3].Stream}).
				To(Equal([]string{"second", "second", "third", "second"}))
		})

		It("defaults stream ops elsewhere to the first stream, and leaves non-stream ops without one", func() {
			Expect(p.Prepare[0].Stream).To(Equal("first"))
			Expect(p.Prepare[1].Stream).To(BeEmpty(), "write is not stream work")
			Expect(p.Between[0].Stream).To(Equal("first"))
			Expect(p.Between[1].Stream).To(Equal("first"))
			Expect(p.Replay.Each[0].Stream).To(Equal("first"))
		})

		It("defaults a capture's stream to the first stream and its end-stream to its stream", func() {
			c0, c1 := p.Captures[0], p.Captures[1]
			Expect([]string{c0.Stream, c0.EndStream}).To(Equal([]string{"second", "second"}))
			Expect([]string{c1.Stream, c1.EndStream}).To(Equal([]string{"first", "third"}))
			Expect(c1.EndThread).To(Equal(device.Main))
		})

		It("defaults the replay to the first capture's stream and each capture once", func() {
			Expect(p.Replay.Stream).To(Equal("second"))
			Expect(p.Replay.Captures()).To(Equal([]string{"on-second", "default"}))
			Expect(p.Replay.Order[0].Stream).To(Equal("second"))
		})
	})

	It("turns capture: into one capture named main, and fills positions", func() {
		set := parse(`version: replaycheck/v1
set: one
probes:
  - name: p
    hazard: rebase
    buffers:
      a: {bytes: 1KiB, init: iota32, slot: retained}
    streams: [s]
    capture:
      end-thread: other
      ops:
        - fill: {dst: a, value: 0xAB, offset: 4, bytes: 8}
    between:
      - alloc: {buffer: b, bytes: 64}
    expect:
      guarded: refused
      unguarded: corrupted
      rejected-by: [refused]
`)
		p := set.Probes[0]
		file := "inline.yaml"
		Expect(set.Pos).To(Equal(probes.Pos{File: file, Line: 1, Col: 1}))
		Expect(p.Pos).To(Equal(probes.Pos{File: file, Line: 4, Col: 5}))
		Expect(p.Buffers).To(HaveLen(1))
		Expect(*p.Buffers[0]).To(Equal(probes.Buffer{
			Pos: probes.Pos{File: file, Line: 7, Col: 7}, Name: "a", Bytes: 1024,
			Init: probes.Pattern{Kind: probes.PatIota32}, Slot: probes.SlotRetained,
		}))
		Expect(p.Captures).To(HaveLen(1))
		c := p.Captures[0]
		Expect(c.Name).To(Equal("main"))
		Expect(c.Pos).To(Equal(probes.Pos{File: file, Line: 9, Col: 5}))
		Expect(c.Stream).To(Equal("s"))
		Expect(c.EndThread).To(Equal(device.Other))
		op := c.Ops[0]
		Expect(op.Pos).To(Equal(probes.Pos{File: file, Line: 12, Col: 11}))
		Expect(op.Kind).To(Equal(probes.OpFill))
		Expect(op.Value).To(Equal(byte(0xAB)))
		Expect(*op.Offset).To(Equal(int64(4)))
		Expect(*op.Bytes).To(Equal(int64(8)))
		Expect(op.Thread).To(Equal(device.Main))
		alloc := p.Between[0]
		Expect(alloc.Slot).To(Equal(probes.SlotPlain))
		Expect(alloc.Pattern).To(Equal(probes.Pattern{Kind: probes.PatZero}))
		Expect(p.Replay.Pos).To(Equal(p.Pos), "no replay key: the probe's position")
		Expect(p.Expect).To(Equal(probes.Expect{
			Pos: probes.Pos{File: file, Line: 15, Col: 5}, Guarded: probes.Refused, Unguarded: probes.Corrupted,
			RejectedBy: []device.Class{device.ClassRefused},
		}))
	})

	It("reads replay counts as every number but a size: decimal or 0x hex", func() {
		set := parse(`version: replaycheck/v1
set: hex
defaults: {replays: 0x10}
probes:
  - name: p
    hazard: none
    streams: [main]
    capture: {}
    expect: {guarded: exact}
  - name: q
    hazard: none
    streams: [main]
    capture: {}
    expect: {guarded: exact}
    replays: 0XfF
`)
		Expect(set.Probes[0].Replays).To(Equal(16))
		Expect(set.Probes[1].Replays).To(Equal(255))
	})

	It("follows YAML anchors and aliases", func() {
		set := parse(`version: replaycheck/v1
set: anchors
probes:
  - name: p
    hazard: none
    buffers:
      a: &buf {bytes: 64}
      b: *buf
    streams: [main]
    prepare: &fill
      - fill: {dst: a, value: 1}
    capture: {}
    between: *fill
    expect: {guarded: exact}
`)
		p := set.Probes[0]
		Expect(p.Buffer("b").Bytes).To(Equal(int64(64)))
		Expect(p.Between).To(HaveLen(1))
		Expect(p.Between[0].Dst).To(Equal("a"))
	})
})
