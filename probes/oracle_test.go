package probes_test

import (
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/probes"
)

// The oracle is the reference a device is judged against, so these specs prove it on its own:
// every expected byte is a literal worked out by hand from docs/probe-language.md (or, for long
// buffers, an obviously-correct loop in the spec), never something the oracle or Pattern computes.
// Probes are parsed from YAML so they read like probes; the specs then drive the oracle step by
// step the way the engine does (Eager for eager phases, Capture + EndCapture for a capture, Launch
// per replay) and look at the bytes between the steps.

// oracleProbe parses one probe from body, the probe's keys other than name, hazard and expect
// (streams defaults to [main]). Leading tabs of each line are dropped so bodies can be indented
// like the Go code around them; YAML's own indentation is spaces after the tabs.
func oracleProbe(body string) *probes.Probe {
	GinkgoHelper()
	var b strings.Builder
	b.WriteString("version: replaycheck/v1\nset: oracle\nprobes:\n  - name: p\n    hazard: none\n    expect: {guarded: exact}\n")
	hasStreams := false
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimLeft(line, "\t")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if strings.HasPrefix(line, "streams:") {
			hasStreams = true
		}
		b.WriteString("    " + line + "\n")
	}
	if !hasStreams {
		b.WriteString("    streams: [main]\n")
	}
	set, err := probes.Parse("oracle_test.yaml", []byte(b.String()), probes.DefaultLimits())
	Expect(err).NotTo(HaveOccurred(), "probe:\n%s", b.String())
	Expect(set.Probes).To(HaveLen(1))
	return set.Probes[0]
}

// contents returns a copy of a live buffer's intended bytes, failing the spec when it is not live.
func contents(o *probes.Oracle, name string) []byte {
	GinkgoHelper()
	b, live := o.Bytes(name)
	Expect(live).To(BeTrue(), "buffer %q is not live", name)
	return append([]byte(nil), b...)
}

// snapshot copies every live buffer's bytes.
func snapshot(o *probes.Oracle) map[string][]byte {
	out := map[string][]byte{}
	for _, name := range o.Live() {
		b, _ := o.Bytes(name)
		out[name] = append([]byte(nil), b...)
	}
	return out
}

// eagerAll issues ops eagerly, every one taking effect.
func eagerAll(o *probes.Oracle, ops []*probes.Op) {
	for _, op := range ops {
		o.Eager(op, true)
	}
}

// captureAll issues a capture's ops and ends it, everything taking effect.
func captureAll(o *probes.Oracle, c *probes.Capture) {
	for _, op := range c.Ops {
		o.Capture(c.Name, op, true)
	}
	o.EndCapture(c.Name, true)
}

// setup runs what precedes the first replay: prepare, every capture, between.
func setup(p *probes.Probe) *probes.Oracle {
	o := probes.NewOracle(p)
	eagerAll(o, p.Prepare)
	for _, c := range p.Captures {
		captureAll(o, c)
	}
	eagerAll(o, p.Between)
	return o
}

// le32 writes out uint32 lanes little-endian, byte by byte.
func le32(lanes ...uint32) []byte {
	var out []byte
	for _, v := range lanes {
		out = append(out, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
	return out
}

// noCapture is the capture a probe needs when a spec is about eager ops only.
const noCapture = `
	capture:
	  ops:
	    - record: {event: e}
	events: [e]
`

var _ = Describe("Oracle", func() {
	Describe("patterns", func() {
		// Each pattern as a buffer's init, as an alloc's init and as a write's value.
		DescribeTable("give the documented bytes",
			func(pattern string, n int, want []byte) {
				size := strconv.Itoa(n)
				p := oracleProbe(`
					buffers:
					  declared: {bytes: ` + size + `, init: "` + pattern + `"}
					  written: {bytes: ` + size + `, init: "fill:0x5a"}
					prepare:
					  - alloc: {buffer: allocated, bytes: ` + size + `, init: "` + pattern + `"}
					  - write: {dst: written, value: "` + pattern + `"}
				` + noCapture)
				o := setup(p)
				Expect(contents(o, "declared")).To(Equal(want), "buffer init")
				Expect(contents(o, "allocated")).To(Equal(want), "alloc init")
				Expect(contents(o, "written")).To(Equal(want), "write value")
			},
			Entry("zero", "zero", 8, []byte{0, 0, 0, 0, 0, 0, 0, 0}),
			Entry("fill:B, hex byte", "fill:0xAB", 8, []byte{0xab, 0xab, 0xab, 0xab, 0xab, 0xab, 0xab, 0xab}),
			Entry("fill:B, decimal byte", "fill:7", 5, []byte{7, 7, 7, 7, 7}),
			Entry("fill:255", "fill:255", 3, []byte{0xff, 0xff, 0xff}),
			Entry("iota8", "iota8", 8, []byte{0, 1, 2, 3, 4, 5, 6, 7}),
			Entry("iota32, whole lanes", "iota32", 12, []byte{0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0}),
			Entry("iota32, a trailing partial lane holds its value's low bytes", "iota32", 10,
				[]byte{0, 0, 0, 0, 1, 0, 0, 0, 2, 0}),
			Entry("iota32, shorter than a lane", "iota32", 3, []byte{0, 0, 0}),
			Entry("hex, whole repeats", "hex:deadbeef", 8, []byte{0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef}),
			Entry("hex, a partial repeat at the end", "hex:a1b2c3", 8, []byte{0xa1, 0xb2, 0xc3, 0xa1, 0xb2, 0xc3, 0xa1, 0xb2}),
			Entry("hex, one byte", "hex:5e", 4, []byte{0x5e, 0x5e, 0x5e, 0x5e}),
			// splitmix64 from seed 0: 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4 (the published reference
			// values of Vigna's splitmix64.c), each word little-endian; a partial word keeps its low bytes.
			Entry("random:0, a word and a half", "random:0", 12,
				[]byte{0xaf, 0xcd, 0x1d, 0x7b, 0x39, 0xa8, 0x20, 0xe2, 0xf4, 0x65, 0xb9, 0xa1}),
			// seed 42: 0xbdd732262feb6e95, 0x28efe333b266f103 (computed outside Go, by a Python splitmix64).
			Entry("random:42, two words", "random:42", 16,
				[]byte{0x95, 0x6e, 0xeb, 0x2f, 0x26, 0x32, 0xd7, 0xbd, 0x03, 0xf1, 0x66, 0xb2, 0x33, 0xe3, 0xef, 0x28}),
		)

		It("gives a buffer without init zero bytes", func() {
			o := setup(oracleProbe(`
				buffers:
				  a: {bytes: 6}
				prepare:
				  - alloc: {buffer: b, bytes: 3}
			` + noCapture))
			Expect(contents(o, "a")).To(Equal([]byte{0, 0, 0, 0, 0, 0}))
			Expect(contents(o, "b")).To(Equal([]byte{0, 0, 0}))
		})

		It("has iota8 wrap at 256", func() {
			o := setup(oracleProbe(`
				buffers:
				  a: {bytes: 600, init: iota8}
			` + noCapture))
			want := make([]byte, 600)
			for i := range want {
				want[i] = byte(i % 256)
			}
			got := contents(o, "a")
			Expect(got).To(Equal(want))
			Expect(got[255:258]).To(Equal([]byte{255, 0, 1}))
		})

		It("has iota32 count lanes past one byte, little-endian", func() {
			o := setup(oracleProbe(`
				buffers:
				  a: {bytes: 1032, init: iota32}
			` + noCapture))
			got := contents(o, "a")
			Expect(got[255*4 : 258*4]).To(Equal([]byte{0xff, 0, 0, 0, 0x00, 1, 0, 0, 0x01, 1, 0, 0}))
			Expect(got).To(HaveLen(1032))
		})
	})

	Describe("buffers", func() {
		It("starts with the declared buffers live, in declaration order, at their sizes", func() {
			o := probes.NewOracle(oracleProbe(`
				buffers:
				  zeta: {bytes: 8}
				  alpha: {bytes: 4, init: "fill:1"}
				  mid: {bytes: 12}
			` + noCapture))
			Expect(o.Live()).To(Equal([]string{"zeta", "alpha", "mid"}))
			Expect(o.Size("zeta")).To(Equal(int64(8)))
			Expect(o.Size("alpha")).To(Equal(int64(4)))
			Expect(o.Size("mid")).To(Equal(int64(12)))
		})

		It("knows nothing of a buffer that never existed", func() {
			o := probes.NewOracle(oracleProbe(`
				buffers:
				  a: {bytes: 8}
			` + noCapture))
			Expect(o.Size("nope")).To(Equal(int64(-1)))
			_, live := o.Bytes("nope")
			Expect(live).To(BeFalse())
		})

		It("tracks alloc, free, re-alloc and grow in Live and Size", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 8}
				  b: {bytes: 8}
				prepare:
				  - alloc: {buffer: c, bytes: 4}
				  - free: {buffer: a}
				  - alloc: {buffer: a, bytes: 16, init: "fill:2"}
				  - grow: {buffer: b, bytes: 32}
			` + noCapture)
			o := probes.NewOracle(p)
			o.Eager(p.Prepare[0], true)
			Expect(o.Live()).To(Equal([]string{"a", "b", "c"}), "alloc appends")
			Expect(o.Size("c")).To(Equal(int64(4)))

			o.Eager(p.Prepare[1], true)
			Expect(o.Live()).To(Equal([]string{"b", "c"}), "free removes")
			Expect(o.Size("a")).To(Equal(int64(8)), "a ghost keeps its size")
			_, live := o.Bytes("a")
			Expect(live).To(BeFalse(), "a ghost has no checked bytes")

			o.Eager(p.Prepare[2], true)
			Expect(o.Live()).To(Equal([]string{"b", "c", "a"}), "a re-alloc goes to the end")
			Expect(o.Size("a")).To(Equal(int64(16)))
			Expect(contents(o, "a")).To(Equal([]byte{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}))

			o.Eager(p.Prepare[3], true)
			Expect(o.Live()).To(Equal([]string{"b", "c", "a"}), "grow keeps the buffer's place")
			Expect(o.Size("b")).To(Equal(int64(32)))
		})

		It("returns from Live a copy the caller may change", func() {
			o := probes.NewOracle(oracleProbe(`
				buffers:
				  a: {bytes: 8}
				  b: {bytes: 8}
			` + noCapture))
			l := o.Live()
			l[0] = "x"
			Expect(o.Live()).To(Equal([]string{"a", "b"}))
		})
	})

	Describe("eager data ops", func() {
		DescribeTable("apply once, when issued",
			func(buffers, op string, name string, want []byte) {
				p := oracleProbe(`
					buffers:
					` + buffers + `
					prepare:
					  - ` + op + `
				` + noCapture)
				o := probes.NewOracle(p)
				o.Eager(p.Prepare[0], true)
				Expect(contents(o, name)).To(Equal(want))
			},
			Entry("fill, whole buffer", `  a: {bytes: 8, init: iota8}`,
				`fill: {dst: a, value: 0x42}`, "a", []byte{0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42}),
			Entry("fill, offset and bytes", `  a: {bytes: 8, init: iota8}`,
				`fill: {dst: a, value: 9, offset: 2, bytes: 3}`, "a", []byte{0, 1, 9, 9, 9, 5, 6, 7}),
			Entry("fill, offset only: the rest of the buffer", `  a: {bytes: 8, init: iota8}`,
				`fill: {dst: a, value: 0xee, offset: 5}`, "a", []byte{0, 1, 2, 3, 4, 0xee, 0xee, 0xee}),
			Entry("fill, bytes only: from offset 0", `  a: {bytes: 8, init: iota8}`,
				`fill: {dst: a, value: 0, bytes: 2}`, "a", []byte{0, 0, 2, 3, 4, 5, 6, 7}),
			Entry("copy, whole buffers", "  d: {bytes: 8}\n  s: {bytes: 8, init: iota8}",
				`copy: {dst: d, src: s}`, "d", []byte{0, 1, 2, 3, 4, 5, 6, 7}),
			Entry("copy, default count is the smaller rest: a short source", "  d: {bytes: 8, init: \"fill:0xff\"}\n  s: {bytes: 4, init: iota8}",
				`copy: {dst: d, src: s}`, "d", []byte{0, 1, 2, 3, 0xff, 0xff, 0xff, 0xff}),
			Entry("copy, default count is the smaller rest: a short destination", "  d: {bytes: 3}\n  s: {bytes: 8, init: iota8}",
				`copy: {dst: d, src: s, src-offset: 4}`, "d", []byte{4, 5, 6}),
			Entry("copy, bytes and both offsets", "  d: {bytes: 8, init: \"fill:0xff\"}\n  s: {bytes: 8, init: iota8}",
				`copy: {dst: d, src: s, bytes: 3, dst-offset: 1, src-offset: 4}`, "d", []byte{0xff, 4, 5, 6, 0xff, 0xff, 0xff, 0xff}),
			Entry("copy leaves its source alone", "  d: {bytes: 8}\n  s: {bytes: 8, init: iota8}",
				`copy: {dst: d, src: s, bytes: 2}`, "s", []byte{0, 1, 2, 3, 4, 5, 6, 7}),
			Entry("write, the pattern from offset 0 over the whole buffer", `  a: {bytes: 8, init: "fill:0x11"}`,
				`write: {dst: a, value: hex:c0ffee}`, "a", []byte{0xc0, 0xff, 0xee, 0xc0, 0xff, 0xee, 0xc0, 0xff}),
		)

		Describe("axpy: y[i] = a·x[i] + y[i] over little-endian uint32 lanes, wrapping", func() {
			DescribeTable("computes",
				func(x, y string, a string, want []byte) {
					p := oracleProbe(`
						buffers:
						  x: {bytes: 16, init: "` + x + `"}
						  y: {bytes: 16, init: "` + y + `"}
						prepare:
						  - axpy: {y: y, x: x, a: ` + a + `}
					` + noCapture)
					o := probes.NewOracle(p)
					xBefore := contents(o, "x")
					o.Eager(p.Prepare[0], true)
					Expect(contents(o, "y")).To(Equal(want))
					Expect(contents(o, "x")).To(Equal(xBefore), "x is only read")
				},
				// lanes 0x10101010 + 3·{0,1,2,3}
				Entry("a times x plus y", "iota32", "fill:0x10", "3",
					[]byte{0x10, 0x10, 0x10, 0x10, 0x13, 0x10, 0x10, 0x10, 0x16, 0x10, 0x10, 0x10, 0x19, 0x10, 0x10, 0x10}),
				Entry("a = 1 adds x", "iota32", "fill:0x10", "1",
					[]byte{0x10, 0x10, 0x10, 0x10, 0x11, 0x10, 0x10, 0x10, 0x12, 0x10, 0x10, 0x10, 0x13, 0x10, 0x10, 0x10}),
				Entry("a = 0 leaves y", "iota32", "iota8", "0",
					[]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}),
				// 2·0xff = 0x1fe: the carry crosses into the lane's second byte, it is not byte arithmetic.
				Entry("a carry crosses bytes within a lane", "hex:ff000000", "zero", "2",
					le32(0x1fe, 0x1fe, 0x1fe, 0x1fe)),
				// 2·0x80000001 = 0x1_0000_0002 wraps to 2; + 5 = 7. Nothing carries into the next lane.
				Entry("a·x wraps at 2^32", "hex:01000080", "hex:05000000", "2",
					[]byte{7, 0, 0, 0, 7, 0, 0, 0, 7, 0, 0, 0, 7, 0, 0, 0}),
				// 0xffffffff + 2 wraps to 1.
				Entry("the sum wraps at 2^32", "fill:0xff", "hex:02000000", "1",
					[]byte{1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0}),
				// a = 2^32-1 is -1: y = y - x.
				Entry("a = 0xffffffff subtracts x", "iota32", "zero", "0xffffffff",
					[]byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xff, 0xfd, 0xff, 0xff, 0xff}),
				// x lanes 0x03020100, 0x07060504, ... times 0x100 shift a byte up, losing the top one.
				Entry("a = 0x100 shifts each lane left by a byte, dropping its top byte", "iota8", "zero", "0x100",
					[]byte{0, 0, 1, 2, 0, 4, 5, 6, 0, 8, 9, 10, 0, 12, 13, 14}),
			)

			It("reads x before writing y when they are the same buffer", func() {
				p := oracleProbe(`
					buffers:
					  v: {bytes: 8, init: iota32}
					prepare:
					  - axpy: {y: v, x: v, a: 2}
				` + noCapture)
				o := probes.NewOracle(p)
				o.Eager(p.Prepare[0], true)
				Expect(contents(o, "v")).To(Equal(le32(0, 3)))
			})
		})

		// A device's memcpy does not promise this for overlapping ranges; the language accepts such
		// a copy and the oracle (like the simulator) defines it as memmove: as if through a buffer.
		It("copies overlapping ranges of one buffer as memmove does", func() {
			o := setup(oracleProbe(`
				buffers:
				  up: {bytes: 8, init: iota8}
				  down: {bytes: 8, init: iota8}
				prepare:
				  - copy: {dst: up, src: up, bytes: 4, dst-offset: 2}
				  - copy: {dst: down, src: down, bytes: 4, src-offset: 2}
			` + noCapture))
			Expect(contents(o, "up")).To(Equal([]byte{0, 1, 0, 1, 2, 3, 6, 7}))
			Expect(contents(o, "down")).To(Equal([]byte{2, 3, 4, 5, 4, 5, 6, 7}))
		})

		It("applies eager ops in order", func() {
			o := setup(oracleProbe(`
				buffers:
				  a: {bytes: 8}
				  b: {bytes: 8}
				prepare:
				  - fill: {dst: a, value: 1}
				  - copy: {dst: b, src: a, bytes: 4}
				  - fill: {dst: a, value: 2, offset: 2, bytes: 2}
				  - copy: {dst: b, src: a, bytes: 2, dst-offset: 6, src-offset: 2}
			` + noCapture))
			Expect(contents(o, "a")).To(Equal([]byte{1, 1, 2, 2, 1, 1, 1, 1}))
			Expect(contents(o, "b")).To(Equal([]byte{1, 1, 1, 1, 0, 0, 2, 2}))
		})

		It("does not apply prepare or between ops again on launch", func() {
			p := oracleProbe(`
				buffers:
				  x: {bytes: 4, init: "hex:01000000"}
				  y: {bytes: 4}
				  g: {bytes: 4}
				prepare:
				  - axpy: {y: y, x: x, a: 1}
				capture:
				  ops:
				    - fill: {dst: g, value: 1}
				between:
				  - axpy: {y: y, x: x, a: 10}
			`)
			o := setup(p)
			Expect(contents(o, "y")).To(Equal([]byte{11, 0, 0, 0}))
			o.Launch("main", true)
			o.Launch("main", true)
			Expect(contents(o, "y")).To(Equal([]byte{11, 0, 0, 0}))
			Expect(contents(o, "g")).To(Equal([]byte{1, 1, 1, 1}))
		})

		It("changes no byte, size or buffer list for read, stream, event, sync and mode ops", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 8, init: iota8}
				  b: {bytes: 4, init: "fill:3"}
				streams: [main, side]
				events: [e]
				prepare:
				  - read: {src: a}
				  - record: {event: e}
				  - wait: {event: e, stream: side}
				  - sync: {stream: side}
				  - sync-device:
				  - query: {event: e}
				  - sync-event: {event: e}
				  - exchange-mode: {mode: relaxed}
				capture:
				  ops:
				    - fill: {dst: b, value: 0}
			`)
			o := probes.NewOracle(p)
			before := snapshot(o)
			for _, op := range p.Prepare {
				o.Eager(op, true)
				Expect(snapshot(o)).To(Equal(before), "%s", op.Kind)
				Expect(o.Live()).To(Equal([]string{"a", "b"}), "%s", op.Kind)
				Expect(o.Size("a")).To(Equal(int64(8)), "%s", op.Kind)
			}
			Expect(before).To(Equal(map[string][]byte{"a": {0, 1, 2, 3, 4, 5, 6, 7}, "b": {3, 3, 3, 3}}))
		})
	})

	Describe("grow", func() {
		It("at or below the size changes nothing, not even written bytes", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 8, init: iota8}
				prepare:
				  - fill: {dst: a, value: 7, bytes: 2}
				  - grow: {buffer: a, bytes: 8}
				  - grow: {buffer: a, bytes: 4}
				  - grow: {buffer: a, bytes: 0}
			` + noCapture)
			o := probes.NewOracle(p)
			o.Eager(p.Prepare[0], true)
			for _, op := range p.Prepare[1:] {
				o.Eager(op, true)
				Expect(o.Size("a")).To(Equal(int64(8)))
				Expect(contents(o, "a")).To(Equal([]byte{7, 7, 2, 3, 4, 5, 6, 7}))
			}
		})

		It("above the size re-creates the buffer at the new size with its init, losing what was written", func() {
			o := setup(oracleProbe(`
				buffers:
				  a: {bytes: 4, init: iota8}
				prepare:
				  - fill: {dst: a, value: 7}
				  - grow: {buffer: a, bytes: 10}
			` + noCapture))
			Expect(o.Size("a")).To(Equal(int64(10)))
			Expect(contents(o, "a")).To(Equal([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}))
		})

		It("re-creates an allocated buffer with the init of its alloc", func() {
			o := setup(oracleProbe(`
				buffers:
				  a: {bytes: 4}
				prepare:
				  - alloc: {buffer: t, bytes: 4, init: "hex:abcd"}
				  - fill: {dst: t, value: 0}
				  - grow: {buffer: t, bytes: 6}
			` + noCapture))
			Expect(contents(o, "t")).To(Equal([]byte{0xab, 0xcd, 0xab, 0xcd, 0xab, 0xcd}))
		})

		It("uses the init of the latest alloc of a name", func() {
			o := setup(oracleProbe(`
				buffers:
				  a: {bytes: 4, init: "fill:1"}
				prepare:
				  - free: {buffer: a}
				  - alloc: {buffer: a, bytes: 2, init: "fill:2"}
				  - grow: {buffer: a, bytes: 3}
			` + noCapture))
			Expect(contents(o, "a")).To(Equal([]byte{2, 2, 2}))
		})
	})

	Describe("ops that did not take effect", func() {
		DescribeTable("have no effect on bytes, sizes or the buffer list",
			func(op string) {
				p := oracleProbe(`
					buffers:
					  a: {bytes: 8, init: iota8}
					  b: {bytes: 8, init: "fill:0xbb"}
					prepare:
					  - ` + op + `
				` + noCapture)
				o := probes.NewOracle(p)
				o.Eager(p.Prepare[0], false)
				Expect(snapshot(o)).To(Equal(map[string][]byte{
					"a": {0, 1, 2, 3, 4, 5, 6, 7},
					"b": {0xbb, 0xbb, 0xbb, 0xbb, 0xbb, 0xbb, 0xbb, 0xbb},
				}))
				Expect(o.Live()).To(Equal([]string{"a", "b"}))
				Expect(o.Size("a")).To(Equal(int64(8)))
			},
			Entry("fill", "fill: {dst: a, value: 9}"),
			Entry("copy", "copy: {dst: a, src: b}"),
			Entry("axpy", "axpy: {y: a, x: b, a: 3}"),
			Entry("write", "write: {dst: a, value: zero}"),
			Entry("free", "free: {buffer: a}"),
			Entry("grow", "grow: {buffer: a, bytes: 16}"),
		)

		Describe("a refused or rejected alloc", func() {
			var (
				p *probes.Probe
				o *probes.Oracle
			)
			BeforeEach(func() {
				p = oracleProbe(`
					buffers:
					  a: {bytes: 8}
					prepare:
					  - alloc: {buffer: t, bytes: 8, init: "fill:1"}
					  - fill: {dst: t, value: 1}
					  - copy: {dst: a, src: t}
					  - copy: {dst: t, src: a}
					  - axpy: {y: a, x: t, a: 1}
					  - axpy: {y: t, x: a, a: 1}
					  - write: {dst: t, value: iota8}
					  - read: {src: t}
					  - grow: {buffer: t, bytes: 16}
					  - free: {buffer: t}
					  - fill: {dst: a, value: 2}
					  - alloc: {buffer: t, bytes: 4, init: "fill:5"}
				` + noCapture)
				o = probes.NewOracle(p)
				o.Eager(p.Prepare[0], false)
			})

			It("creates no buffer", func() {
				Expect(o.Live()).To(Equal([]string{"a"}))
				Expect(o.Size("t")).To(Equal(int64(-1)))
				_, live := o.Bytes("t")
				Expect(live).To(BeFalse())
			})

			It("makes every later op naming the buffer skipped, and no other", func() {
				for i, op := range p.Prepare[1:10] {
					Expect(o.Skips(op)).To(BeTrue(), "prepare op %d (%s)", i+2, op.Kind)
				}
				Expect(o.Skips(p.Prepare[10])).To(BeFalse(), "an op on another buffer")
				Expect(o.Skips(p.Prepare[11])).To(BeFalse(), "an alloc of the name is a new try, not skipped")
			})

			It("is forgotten once an alloc of the name takes effect", func() {
				o.Eager(p.Prepare[11], true)
				Expect(o.Skips(p.Prepare[1])).To(BeFalse())
				Expect(o.Live()).To(Equal([]string{"a", "t"}))
				Expect(contents(o, "t")).To(Equal([]byte{5, 5, 5, 5}))
			})

			It("skips nothing before it", func() {
				o := probes.NewOracle(p)
				for _, op := range p.Prepare {
					Expect(o.Skips(op)).To(BeFalse())
				}
			})
		})

		It("refuses an alloc inside a capture the same way", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 8}
				capture:
				  ops:
				    - alloc: {buffer: t, bytes: 8}
				    - fill: {dst: t, value: 1}
			`)
			o := probes.NewOracle(p)
			o.Capture("main", p.Captures[0].Ops[0], false)
			Expect(o.Size("t")).To(Equal(int64(-1)))
			Expect(o.Skips(p.Captures[0].Ops[1])).To(BeTrue())
		})

		It("never skips an op naming a live or freed buffer", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 8}
				prepare:
				  - free: {buffer: a}
				  - alloc: {buffer: a, bytes: 8}
				  - fill: {dst: a, value: 1}
			` + noCapture)
			o := probes.NewOracle(p)
			Expect(o.Skips(p.Prepare[0])).To(BeFalse())
			o.Eager(p.Prepare[0], true)
			Expect(o.Skips(p.Prepare[1])).To(BeFalse())
			Expect(o.Skips(p.Prepare[2])).To(BeFalse())
		})
	})

	Describe("captures", func() {
		It("applies fill, copy and axpy on every launch and not when captured", func() {
			p := oracleProbe(`
				buffers:
				  x: {bytes: 8, init: iota32}
				  y: {bytes: 8, init: "hex:10000000"}
				  f: {bytes: 4, init: "fill:0xff"}
				  c: {bytes: 4}
				capture:
				  ops:
				    - axpy: {y: y, x: x, a: 5}
				    - fill: {dst: f, value: 0x21, offset: 1, bytes: 2}
				    - copy: {dst: c, src: x, bytes: 3, src-offset: 4}
			`)
			o := probes.NewOracle(p)
			before := snapshot(o)
			for _, op := range p.Captures[0].Ops {
				o.Capture("main", op, true)
				Expect(snapshot(o)).To(Equal(before), "a captured %s applies on launch only", op.Kind)
			}
			o.EndCapture("main", true)
			Expect(snapshot(o)).To(Equal(before), "ending the capture applies nothing")

			o.Launch("main", true)
			Expect(contents(o, "y")).To(Equal(le32(0x10, 0x15)))
			Expect(contents(o, "f")).To(Equal([]byte{0xff, 0x21, 0x21, 0xff}))
			Expect(contents(o, "c")).To(Equal([]byte{1, 0, 0, 0}))

			o.Launch("main", true)
			Expect(contents(o, "y")).To(Equal(le32(0x10, 0x1a)), "axpy accumulates once per launch")
			o.Launch("main", true)
			Expect(contents(o, "y")).To(Equal(le32(0x10, 0x1f)))
			Expect(contents(o, "x")).To(Equal(le32(0, 1)))
		})

		It("records a capture of the same name as one whose end failed into a graph of its own", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 4}
				capture:
				  ops:
				    - fill: {dst: a, value: 3}
				    - fill: {dst: a, value: 5, bytes: 2}
			`)
			o := probes.NewOracle(p)
			ops := p.Captures[0].Ops
			o.Capture("main", ops[0], true)
			o.EndCapture("main", false)
			o.Launch("main", true)
			Expect(contents(o, "a")).To(Equal([]byte{0, 0, 0, 0}), "a failed end leaves nothing to replay")
			o.Capture("main", ops[1], true)
			o.EndCapture("main", true)
			o.Launch("main", true)
			Expect(contents(o, "a")).To(Equal([]byte{5, 5, 0, 0}), "the second capture's graph holds its own op, and only it")
		})

		It("applies a graph's ops in capture order on each launch", func() {
			o := setup(oracleProbe(`
				buffers:
				  a: {bytes: 4}
				  b: {bytes: 4}
				capture:
				  ops:
				    - fill: {dst: a, value: 3}
				    - copy: {dst: b, src: a, bytes: 2}
				    - fill: {dst: a, value: 4, bytes: 1}
			`))
			o.Launch("main", true)
			Expect(contents(o, "a")).To(Equal([]byte{4, 3, 3, 3}))
			Expect(contents(o, "b")).To(Equal([]byte{3, 3, 0, 0}))
		})

		It("overwrites eager changes made between launches", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 4}
				capture:
				  ops:
				    - fill: {dst: a, value: 1, bytes: 2}
				replay:
				  each:
				    - fill: {dst: a, value: 9}
			`)
			o := setup(p)
			for round := 0; round < 3; round++ {
				eagerAll(o, p.Replay.Each)
				Expect(contents(o, "a")).To(Equal([]byte{9, 9, 9, 9}))
				o.Launch("main", true)
				Expect(contents(o, "a")).To(Equal([]byte{1, 1, 9, 9}))
			}
		})

		It("puts a fill on a stream that never joined the capture in the graph: the intent is replay", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 4}
				streams: [main, side]
				capture:
				  ops:
				    - fill: {dst: a, value: 6, stream: side}
			`)
			o := setup(p)
			Expect(contents(o, "a")).To(Equal([]byte{0, 0, 0, 0}))
			o.Launch("main", true)
			Expect(contents(o, "a")).To(Equal([]byte{6, 6, 6, 6}))
		})

		Describe("intent", func() {
			It("applies a fill marked once when captured, and never on launch", func() {
				p := oracleProbe(`
					buffers:
					  a: {bytes: 4}
					capture:
					  ops:
					    - fill: {dst: a, value: 8, intent: once}
					replay:
					  each:
					    - fill: {dst: a, value: 0}
				`)
				o := probes.NewOracle(p)
				o.Capture("main", p.Captures[0].Ops[0], true)
				Expect(contents(o, "a")).To(Equal([]byte{8, 8, 8, 8}))
				o.EndCapture("main", true)
				eagerAll(o, p.Replay.Each)
				o.Launch("main", true)
				Expect(contents(o, "a")).To(Equal([]byte{0, 0, 0, 0}))
			})

			It("has a copy marked once read its source as it was when captured", func() {
				p := oracleProbe(`
					buffers:
					  stage: {bytes: 4, init: "fill:1"}
					  dev: {bytes: 4}
					capture:
					  ops:
					    - copy: {dst: dev, src: stage, intent: once}
					between:
					  - write: {dst: stage, value: "fill:2"}
				`)
				o := setup(p)
				Expect(contents(o, "dev")).To(Equal([]byte{1, 1, 1, 1}))
				o.Launch("main", true)
				Expect(contents(o, "dev")).To(Equal([]byte{1, 1, 1, 1}))
			})

			It("has an axpy marked once apply exactly once", func() {
				o := setup(oracleProbe(`
					buffers:
					  x: {bytes: 4, init: "hex:02000000"}
					  y: {bytes: 4}
					capture:
					  ops:
					    - axpy: {y: y, x: x, a: 3, intent: once}
				`))
				o.Launch("main", true)
				o.Launch("main", true)
				Expect(contents(o, "y")).To(Equal([]byte{6, 0, 0, 0}))
			})

			It("applies a write inside a capture once by default", func() {
				p := oracleProbe(`
					buffers:
					  a: {bytes: 4}
					capture:
					  ops:
					    - write: {dst: a, value: iota8}
					replay:
					  each:
					    - fill: {dst: a, value: 0}
				`)
				o := probes.NewOracle(p)
				o.Capture("main", p.Captures[0].Ops[0], true)
				Expect(contents(o, "a")).To(Equal([]byte{0, 1, 2, 3}))
				o.EndCapture("main", true)
				eagerAll(o, p.Replay.Each)
				o.Launch("main", true)
				Expect(contents(o, "a")).To(Equal([]byte{0, 0, 0, 0}))
			})

			It("applies a write marked replay on every launch and not when captured", func() {
				p := oracleProbe(`
					buffers:
					  step: {bytes: 4, host: pinned}
					capture:
					  ops:
					    - write: {dst: step, value: "fill:1", intent: replay}
					replay:
					  each:
					    - write: {dst: step, value: zero}
				`)
				o := probes.NewOracle(p)
				o.Capture("main", p.Captures[0].Ops[0], true)
				o.EndCapture("main", true)
				Expect(contents(o, "step")).To(Equal([]byte{0, 0, 0, 0}))
				for round := 0; round < 2; round++ {
					eagerAll(o, p.Replay.Each)
					o.Launch("main", true)
					Expect(contents(o, "step")).To(Equal([]byte{1, 1, 1, 1}))
				}
			})

			It("applies a fill, copy or axpy marked replay as by default", func() {
				o := setup(oracleProbe(`
					buffers:
					  a: {bytes: 4}
					capture:
					  ops:
					    - fill: {dst: a, value: 2, intent: replay}
				`))
				Expect(contents(o, "a")).To(Equal([]byte{0, 0, 0, 0}))
				o.Launch("main", true)
				Expect(contents(o, "a")).To(Equal([]byte{2, 2, 2, 2}))
			})
		})

		It("applies the other ops of a capture once, when issued: alloc, free, grow, read, sync, events", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 4, init: "fill:1"}
				  b: {bytes: 4, init: "fill:2"}
				  g: {bytes: 4, init: "fill:4"}
				streams: [main, side]
				events: [e]
				prepare:
				  - fill: {dst: g, value: 0, bytes: 2}
				capture:
				  ops:
				    - record: {event: e}
				    - wait: {event: e, stream: side}
				    - query: {event: e}
				    - read: {src: a}
				    - sync: {stream: main}
				    - sync-device:
				    - sync-event: {event: e}
				    - exchange-mode: {mode: relaxed}
				    - alloc: {buffer: t, bytes: 4, init: "fill:7"}
				    - free: {buffer: b}
				    - grow: {buffer: g, bytes: 6}
			`)
			o := probes.NewOracle(p)
			eagerAll(o, p.Prepare)
			before := snapshot(o)
			Expect(before["g"]).To(Equal([]byte{0, 0, 4, 4}))
			for _, op := range p.Captures[0].Ops[:8] {
				o.Capture("main", op, true)
				Expect(snapshot(o)).To(Equal(before), "%s", op.Kind)
			}
			for _, op := range p.Captures[0].Ops[8:] {
				o.Capture("main", op, true)
			}
			o.EndCapture("main", true)
			want := map[string][]byte{
				"a": {1, 1, 1, 1},
				"g": {4, 4, 4, 4, 4, 4},
				"t": {7, 7, 7, 7},
			}
			Expect(o.Live()).To(Equal([]string{"a", "g", "t"}))
			Expect(snapshot(o)).To(Equal(want))
			o.Launch("main", true)
			o.Launch("main", true)
			Expect(o.Live()).To(Equal([]string{"a", "g", "t"}))
			Expect(snapshot(o)).To(Equal(want), "the graph holds none of them")
		})

		It("leaves a replayed op that did not take effect out of the graph, keeping the others", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 4}
				  b: {bytes: 4}
				capture:
				  ops:
				    - fill: {dst: a, value: 1}
				    - fill: {dst: b, value: 2}
			`)
			o := probes.NewOracle(p)
			o.Capture("main", p.Captures[0].Ops[0], false)
			o.Capture("main", p.Captures[0].Ops[1], true)
			o.EndCapture("main", true)
			o.Launch("main", true)
			Expect(contents(o, "a")).To(Equal([]byte{0, 0, 0, 0}))
			Expect(contents(o, "b")).To(Equal([]byte{2, 2, 2, 2}))
		})

		It("gives a once op of a capture that did not take effect no effect", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 4}
				capture:
				  ops:
				    - write: {dst: a, value: "fill:3"}
				    - fill: {dst: a, value: 4, intent: once}
				    - free: {buffer: a}
			`)
			o := probes.NewOracle(p)
			for _, op := range p.Captures[0].Ops {
				o.Capture("main", op, false)
			}
			o.EndCapture("main", true)
			o.Launch("main", true)
			Expect(o.Live()).To(Equal([]string{"a"}))
			Expect(contents(o, "a")).To(Equal([]byte{0, 0, 0, 0}))
		})

		It("never applies a capture whose end did not take effect, though its once ops did", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 4}
				  b: {bytes: 4}
				capture:
				  ops:
				    - fill: {dst: a, value: 1}
				    - write: {dst: b, value: "fill:2"}
			`)
			o := probes.NewOracle(p)
			for _, op := range p.Captures[0].Ops {
				o.Capture("main", op, true)
			}
			o.EndCapture("main", false)
			o.Launch("main", true)
			o.Launch("main", true)
			Expect(contents(o, "a")).To(Equal([]byte{0, 0, 0, 0}))
			Expect(contents(o, "b")).To(Equal([]byte{2, 2, 2, 2}))
		})

		It("does nothing for a capture that never began (EndCapture false with no ops)", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 4}
				capture:
				  ops:
				    - fill: {dst: a, value: 1}
			`)
			o := probes.NewOracle(p)
			o.EndCapture("main", false)
			o.Launch("main", true)
			Expect(contents(o, "a")).To(Equal([]byte{0, 0, 0, 0}))
		})

		It("applies nothing for a launch that did not take effect", func() {
			p := oracleProbe(`
				buffers:
				  x: {bytes: 4, init: "hex:01000000"}
				  y: {bytes: 4}
				capture:
				  ops:
				    - axpy: {y: y, x: x, a: 1}
			`)
			o := setup(p)
			o.Launch("main", false)
			Expect(contents(o, "y")).To(Equal([]byte{0, 0, 0, 0}))
			o.Launch("main", true)
			o.Launch("main", false)
			Expect(contents(o, "y")).To(Equal([]byte{1, 0, 0, 0}), "only the launch that took")
		})

		It("applies nothing for a launch of a name that was never captured", func() {
			o := setup(oracleProbe(`
				buffers:
				  a: {bytes: 4}
				capture:
				  ops:
				    - fill: {dst: a, value: 1}
			`))
			o.Launch("other", true)
			Expect(contents(o, "a")).To(Equal([]byte{0, 0, 0, 0}))
		})

		It("keeps each capture's graph apart and applies launches in the order given", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 4}
				  b: {bytes: 4}
				captures:
				  - name: set
				    ops:
				      - fill: {dst: a, value: 1}
				  - name: move
				    ops:
				      - copy: {dst: b, src: a}
				      - fill: {dst: a, value: 2}
			`)
			o := setup(p)
			o.Launch("move", true)
			Expect(contents(o, "a")).To(Equal([]byte{2, 2, 2, 2}))
			Expect(contents(o, "b")).To(Equal([]byte{0, 0, 0, 0}))
			o.Launch("set", true)
			Expect(contents(o, "a")).To(Equal([]byte{1, 1, 1, 1}))
			Expect(contents(o, "b")).To(Equal([]byte{0, 0, 0, 0}))
			o.Launch("move", true)
			Expect(contents(o, "a")).To(Equal([]byte{2, 2, 2, 2}))
			Expect(contents(o, "b")).To(Equal([]byte{1, 1, 1, 1}))
		})

		It("drops only the graph whose end failed", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 4}
				  b: {bytes: 4}
				captures:
				  - name: one
				    ops:
				      - fill: {dst: a, value: 1}
				  - name: two
				    ops:
				      - fill: {dst: b, value: 2}
			`)
			o := probes.NewOracle(p)
			o.Capture("one", p.Captures[0].Ops[0], true)
			o.EndCapture("one", true)
			o.Capture("two", p.Captures[1].Ops[0], true)
			o.EndCapture("two", false)
			o.Launch("one", true)
			o.Launch("two", true)
			Expect(contents(o, "a")).To(Equal([]byte{1, 1, 1, 1}))
			Expect(contents(o, "b")).To(Equal([]byte{0, 0, 0, 0}))
		})
	})

	Describe("graph ops bound to names", func() {
		It("resolve default ranges at capture, with the sizes buffers have then", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 4, init: iota8}
				  d: {bytes: 4}
				  s: {bytes: 4, init: "fill:5"}
				capture:
				  ops:
				    - fill: {dst: a, value: 9}
				    - copy: {dst: d, src: s}
				between:
				  - grow: {buffer: a, bytes: 8}
				  - grow: {buffer: d, bytes: 8}
				  - grow: {buffer: s, bytes: 8}
			`)
			o := setup(p)
			Expect(contents(o, "s")).To(Equal([]byte{5, 5, 5, 5, 5, 5, 5, 5}))
			o.Launch("main", true)
			Expect(contents(o, "a")).To(Equal([]byte{9, 9, 9, 9, 4, 5, 6, 7}))
			Expect(contents(o, "d")).To(Equal([]byte{5, 5, 5, 5, 0, 0, 0, 0}))
		})

		It("apply to the buffer that has the name at launch, not the one captured", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 4}
				capture:
				  ops:
				    - fill: {dst: a, value: 3, bytes: 2}
				between:
				  - free: {buffer: a}
				  - alloc: {buffer: a, bytes: 4, init: "fill:8"}
			`)
			o := setup(p)
			Expect(contents(o, "a")).To(Equal([]byte{8, 8, 8, 8}))
			o.Launch("main", true)
			Expect(contents(o, "a")).To(Equal([]byte{3, 3, 8, 8}))
		})

		It("keep the ranges captured when the name is re-allocated larger", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 4}
				  d: {bytes: 4}
				  s: {bytes: 4, init: iota8}
				capture:
				  ops:
				    - fill: {dst: a, value: 9}
				    - copy: {dst: d, src: s}
				between:
				  - free: {buffer: a}
				  - alloc: {buffer: a, bytes: 8, init: "fill:1"}
				  - free: {buffer: s}
				  - alloc: {buffer: s, bytes: 8, init: "fill:7"}
				  - free: {buffer: d}
				  - alloc: {buffer: d, bytes: 8, init: "fill:2"}
			`)
			o := setup(p)
			o.Launch("main", true)
			Expect(contents(o, "a")).To(Equal([]byte{9, 9, 9, 9, 1, 1, 1, 1}))
			Expect(contents(o, "d")).To(Equal([]byte{7, 7, 7, 7, 2, 2, 2, 2}))
		})

		It("follow a per-round re-allocation in replay.each", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 4, init: "fill:1"}
				capture:
				  ops:
				    - fill: {dst: a, value: 3, offset: 1, bytes: 2}
				replay:
				  each:
				    - free: {buffer: a}
				    - alloc: {buffer: a, bytes: 4, init: "fill:1"}
			`)
			o := setup(p)
			for round := 0; round < 3; round++ {
				eagerAll(o, p.Replay.Each)
				o.Launch("main", true)
				Expect(contents(o, "a")).To(Equal([]byte{1, 3, 3, 1}))
			}
		})

		DescribeTable("are clipped to a smaller buffer of the same name",
			func(op string, alloc string, name string, want []byte) {
				p := oracleProbe(`
					buffers:
					  a: {bytes: 8, init: iota8}
					  b: {bytes: 8, init: "fill:0xbb"}
					capture:
					  ops:
					    - ` + op + `
					between:
					  - free: {buffer: ` + name + `}
					  - ` + alloc + `
				`)
				o := setup(p)
				o.Launch("main", true)
				Expect(contents(o, name)).To(Equal(want))
			},
			Entry("a fill's range cut at the end", "fill: {dst: a, value: 9, offset: 4, bytes: 4}",
				`alloc: {buffer: a, bytes: 6, init: "fill:1"}`, "a", []byte{1, 1, 1, 1, 9, 9}),
			Entry("a fill's range wholly past the end writes nothing", "fill: {dst: a, value: 9, offset: 4, bytes: 4}",
				`alloc: {buffer: a, bytes: 3, init: "fill:1"}`, "a", []byte{1, 1, 1}),
			Entry("a copy into a smaller destination", "copy: {dst: b, src: a}",
				`alloc: {buffer: b, bytes: 5, init: "fill:1"}`, "b", []byte{0, 1, 2, 3, 4}),
			Entry("a write's pattern over a smaller buffer", "write: {dst: a, value: iota8, intent: replay}",
				`alloc: {buffer: a, bytes: 3, init: "fill:1"}`, "a", []byte{0, 1, 2}),
			Entry("an axpy over whole lanes of a smaller y only", "axpy: {y: b, x: a, a: 1}",
				`alloc: {buffer: b, bytes: 6, init: "fill:1"}`, "b", []byte{1, 2, 3, 4, 1, 1}),
		)

		It("clip a copy from a smaller source to what the source holds", func() {
			p := oracleProbe(`
				buffers:
				  d: {bytes: 8, init: "fill:0xdd"}
				  s: {bytes: 8, init: iota8}
				capture:
				  ops:
				    - copy: {dst: d, src: s, bytes: 6, src-offset: 2}
				between:
				  - free: {buffer: s}
				  - alloc: {buffer: s, bytes: 4, init: "fill:1"}
			`)
			o := setup(p)
			o.Launch("main", true)
			// captured d[0:6] <- s[2:8]; s now has 4 bytes, so the source is s[2:4] and two bytes move.
			Expect(contents(o, "d")).To(Equal([]byte{1, 1, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd}))
		})

		It("clip an axpy to the lanes both x and y still hold", func() {
			p := oracleProbe(`
				buffers:
				  x: {bytes: 8, init: "hex:01000000"}
				  y: {bytes: 8}
				capture:
				  ops:
				    - axpy: {y: y, x: x, a: 2}
				between:
				  - free: {buffer: x}
				  - alloc: {buffer: x, bytes: 4, init: "hex:03000000"}
			`)
			o := setup(p)
			o.Launch("main", true)
			Expect(contents(o, "y")).To(Equal([]byte{6, 0, 0, 0, 0, 0, 0, 0}))
		})
	})

	Describe("ghosts", func() {
		It("let graph ops read and write a freed buffer, which is never listed or returned", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 8, init: "fill:1"}
				  b: {bytes: 8}
				capture:
				  ops:
				    - fill: {dst: a, value: 9, bytes: 4}
				    - copy: {dst: b, src: a}
				between:
				  - free: {buffer: a}
			`)
			o := setup(p)
			Expect(o.Live()).To(Equal([]string{"b"}))
			o.Launch("main", true)
			Expect(contents(o, "b")).To(Equal([]byte{9, 9, 9, 9, 1, 1, 1, 1}), "the ghost was written, then read")
			Expect(o.Live()).To(Equal([]string{"b"}))
			_, live := o.Bytes("a")
			Expect(live).To(BeFalse())
			Expect(o.Size("a")).To(Equal(int64(8)))
		})

		It("keep the bytes the buffer had when it was freed", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 4, init: iota8}
				  b: {bytes: 4}
				capture:
				  ops:
				    - copy: {dst: b, src: a}
				between:
				  - fill: {dst: a, value: 5, bytes: 1}
				  - free: {buffer: a}
			`)
			o := setup(p)
			o.Launch("main", true)
			Expect(contents(o, "b")).To(Equal([]byte{5, 1, 2, 3}))
		})

		It("accumulate graph writes across launches", func() {
			p := oracleProbe(`
				buffers:
				  x: {bytes: 4, init: "hex:01000000"}
				  acc: {bytes: 4}
				  out: {bytes: 4}
				capture:
				  ops:
				    - axpy: {y: acc, x: x, a: 1}
				    - copy: {dst: out, src: acc}
				between:
				  - free: {buffer: acc}
			`)
			o := setup(p)
			o.Launch("main", true)
			o.Launch("main", true)
			o.Launch("main", true)
			Expect(contents(o, "out")).To(Equal([]byte{3, 0, 0, 0}))
			Expect(o.Live()).To(Equal([]string{"x", "out"}))
		})

		It("come from a free inside a capture too", func() {
			p := oracleProbe(`
				buffers:
				  a: {bytes: 4, init: "fill:1"}
				  b: {bytes: 4}
				capture:
				  ops:
				    - copy: {dst: b, src: a}
				    - free: {buffer: a}
			`)
			o := setup(p)
			Expect(o.Live()).To(Equal([]string{"b"}))
			o.Launch("main", true)
			Expect(contents(o, "b")).To(Equal([]byte{1, 1, 1, 1}))
		})
	})
})

// A capture of 100,000 ops keeps 100,000 graph ops: they stay small (and hold no pointers, which
// the type's fields show).
var _ = Describe("A graph op", func() {
	It("takes at most 48 bytes", func() {
		Expect(probes.GraphOpSize).To(BeNumerically("<=", 48))
	})
})
