package probes_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// diagnostics returns err's Diagnostics, failing the spec when err is anything else.
func diagnostics(err error) probes.Diagnostics {
	GinkgoHelper()
	var ds probes.Diagnostics
	Expect(errors.As(err, &ds)).To(BeTrue(), "error %v is not Diagnostics", err)
	return ds
}

// lineColRule renders diagnostics as "line:col rule", the form the fixture table asserts.
func lineColRule(ds probes.Diagnostics) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%d:%d %s", d.Pos.Line, d.Pos.Col, d.Rule)
	}
	return out
}

var _ = Describe("Load", func() {
	lim := probes.DefaultLimits()

	Describe("good fixtures", func() {
		files, _ := filepath.Glob("testdata/good/*.y*ml")

		It("finds the fixtures", func() {
			Expect(files).To(HaveLen(3))
		})
		for _, file := range files {
			It("loads "+filepath.Base(file)+" clean", func() {
				set, err := probes.LoadFile(file, lim)
				Expect(err).NotTo(HaveOccurred())
				Expect(set.Probes).NotTo(BeEmpty())
			})
		}

		It("has a fixture that uses every op kind", func() {
			set, err := probes.LoadFile("testdata/good/every-op.yaml", lim)
			Expect(err).NotTo(HaveOccurred())
			kinds := map[probes.OpKind]bool{}
			for _, p := range set.Probes {
				ops := append(append([]*probes.Op{}, p.Prepare...), p.Between...)
				ops = append(ops, p.Replay.Each...)
				for _, c := range p.Captures {
					ops = append(ops, c.Ops...)
				}
				for _, op := range ops {
					kinds[op.Kind] = true
				}
			}
			Expect(kinds).To(HaveLen(14))
		})

		It("loads the good directory as one set per file, in name order", func() {
			sets, err := probes.Load(lim, "testdata/good")
			Expect(err).NotTo(HaveOccurred())
			var names []string
			for _, s := range sets {
				names = append(names, s.Name)
			}
			Expect(names).To(Equal([]string{"every-op", "race-ordered", "realloc"}))
		})
	})

	// Each bad fixture with every diagnostic it must produce, exactly, as "line:col rule".
	DescribeTable("bad fixtures",
		func(file string, lim probes.Limits, want []string, mentions ...string) {
			path := filepath.Join("testdata", "bad", file)
			set, err := probes.LoadFile(path, lim)
			Expect(set).To(BeNil())
			ds := diagnostics(err)
			Expect(lineColRule(ds)).To(Equal(want), "diagnostics:\n%v", err)
			for _, d := range ds {
				Expect(d.Pos.File).To(Equal(path))
				Expect(d.Error()).To(HavePrefix(fmt.Sprintf("%s:%d:%d: %s: ", path, d.Pos.Line, d.Pos.Col, d.Rule)))
			}
			for _, m := range mentions {
				Expect(err.Error()).To(ContainSubstring(m))
			}
		},
		EntryDescription("%[1]s"),
		Entry(nil, "version.yaml", lim, []string{"1:10 version"}, `"replaycheck/v2"`),
		Entry(nil, "faults.yaml", lim, []string{
			"12:9 fault",     // divice-lost: unknown kind
			"13:9 fault",     // hang@0
			"14:9 fault",     // launch-fail@4: the probe replays 3 rounds
			"15:9 fault",     // alloc-fail@x
			"17:9 fault",     // hang@2: round 2 has device-lost@2
			"19:9 fault",     // alloc-fail@1 twice
			"20:9 fault",     // hang without @K
			"21:9 bad-value", // not a KIND@N string
		}, `did you mean "device-lost"`, "want a round from 1 to 3", "fires at the same call as device-lost@2 (line 16)", "one fault per replay round", "one fault per allocation", "want hang@K, K the replay round"),
		Entry(nil, "yaml-syntax.yaml", lim, []string{"6:1 yaml"}),
		Entry(nil, "yaml-two-documents.yaml", lim, []string{"4:1 yaml"}),
		Entry(nil, "unknown-key-top.yaml", lim, []string{"3:1 unknown-key"}, `did you mean "description"`, "allowed: version, set"),
		Entry(nil, "unknown-key-probe.yaml", lim, []string{"7:5 unknown-key"}, `"labls"`),
		Entry(nil, "unknown-key-op.yaml", lim, []string{"11:36 unknown-key", "12:11 unknown-key"}, `"offest" in fill`, `unknown op "memset"`),
		Entry(nil, "unknown-key-nested.yaml", lim,
			[]string{"4:3 unknown-key", "9:22 unknown-key", "13:7 unknown-key", "15:7 unknown-key", "18:7 unknown-key"}),
		Entry(nil, "missing-key.yaml", lim, []string{
			"1:1 missing-key",   // set
			"3:5 missing-key",   // hazard
			"5:10 missing-key",  // buffer bytes
			"10:17 missing-key", // copy src
			"11:11 missing-key", // sync-event event
			"13:7 missing-key",  // expect guarded
			"14:5 missing-key",  // name
			"14:5 missing-key",  // capture or captures
		}),
		Entry(nil, "bad-name.yaml", lim, []string{
			"2:6 bad-name", "4:11 bad-name", "6:18 bad-name", "8:7 bad-name", "9:15 bad-name", "10:14 bad-name",
			"12:25 bad-name", "14:15 bad-name",
		}),
		Entry(nil, "bad-value.yaml", lim, []string{
			"4:19 bad-value", "5:12 bad-value", "8:13 bad-value", "9:16 bad-value", "11:28 bad-value", "14:31 bad-value",
			"15:31 bad-value", "16:42 bad-value", "17:9 bad-value", "18:9 bad-value", "20:19 bad-value", "22:16 bad-value",
			"23:18 bad-value", "24:39 bad-value", "25:14 bad-value", "26:12 bad-value",
		}),
		Entry(nil, "bad-size.yaml", lim, []string{
			"7:19 bad-size",  // 4KB
			"8:19 bad-size",  // 1MB
			"9:18 bad-size",  // 4k
			"10:25 bad-size", // -1
			"11:27 bad-size", // 1.5KiB
			"12:25 bad-size", // 99999999999999999999
			"13:30 bad-size", // 8388608TiB
			"14:22 bad-size", // 0
			"18:35 bad-size", // alloc 0.5
			"19:43 bad-size", // offset -4
		}, `"4KB"`, "overflows", "at least 1 byte"),
		Entry("every integer by one rule: no leading 0 anywhere, 0x hex except in sizes", "numbers.yaml", lim, []string{
			"3:21 bad-value",    // defaults replays 010
			"7:28 bad-size",     // pool bytes 01024
			"9:18 bad-size",     // bytes 04KiB
			"9:31 bad-pattern",  // fill:010
			"10:18 bad-size",    // bytes 0x40: sizes are decimal
			"10:30 bad-pattern", // random:010
			"14:31 bad-value",   // fill value 010
			"14:44 bad-size",    // offset 010
			"14:56 bad-size",    // bytes 08
			"15:44 bad-size",    // dst-offset 00
			"15:60 bad-size",    // src-offset 01
			"16:31 bad-value",   // axpy a 07
			"17:35 bad-size",    // alloc bytes 064
			"18:34 bad-size",    // grow bytes 0128
			"19:32 bad-pattern", // write fill:00
			"22:14 fault",       // hang@02
			"22:23 fault",       // hang@+1
			"28:14 bad-value",   // replays 0x
		}, `bad size "04KiB": a leading 0 is not allowed`, `got "010" (a leading 0 is not allowed`, `pattern "random:010"`,
			`(sizes and offsets are decimal; 0x hex is for the other numbers)`, `not "02": K is written decimal without a leading 0, or 0x hex`),
		Entry(nil, "bad-pattern.yaml", lim, []string{
			"7:28 bad-pattern", "8:28 bad-pattern", "9:28 bad-pattern", "10:28 bad-pattern", "11:28 bad-pattern",
			"14:32 bad-pattern", "15:45 bad-pattern",
		}),
		Entry(nil, "duplicate-buffer.yaml", lim, []string{"8:7 duplicate"}, `buffer "a" (first at line 7)`),
		Entry(nil, "duplicate-alloc.yaml", lim, []string{"10:25 duplicate", "14:27 duplicate"}, "declared at line 7", "allocated at line 11"),
		Entry(nil, "duplicate-stream.yaml", lim, []string{"6:27 duplicate"}, `stream "main"`),
		Entry(nil, "duplicate-event.yaml", lim, []string{"9:9 duplicate"}, `event "fork"`),
		Entry(nil, "duplicate-probe.yaml", lim, []string{"9:11 duplicate"}, `probe "p" (first at line 4)`),
		Entry(nil, "duplicate-capture.yaml", lim, []string{"9:15 duplicate"}, `capture "one"`),
		Entry(nil, "duplicate-key.yaml", lim, []string{"9:5 duplicate"}, `key "hazard" given twice`),
		Entry(nil, "undeclared-buffer.yaml", lim, []string{"10:21 undeclared", "11:21 undeclared", "15:18 undeclared"},
			`"dts"`, "not allocated yet (alloc at line 14)", `"nowhere"`),
		Entry(nil, "undeclared-stream.yaml", lim,
			[]string{"10:42 undeclared", "12:15 undeclared", "13:19 undeclared", "15:15 undeclared"}),
		Entry(nil, "undeclared-event.yaml", lim, []string{"10:27 undeclared", "11:25 undeclared", "13:24 undeclared"},
			`did you mean "fork"`),
		Entry(nil, "range.yaml", lim, []string{"11:9 range", "12:9 range", "13:9 range", "14:9 range", "17:11 range"},
			"fill offset 1025 is outside", "[1020, 1028)", "copy source offset 513"),
		Entry(nil, "axpy-size.yaml", lim, []string{"15:11 axpy-size", "16:11 axpy-size"}),
		Entry(nil, "use-after-free.yaml", lim,
			[]string{"13:31 use-after-free", "15:24 use-after-free", "16:24 use-after-free", "20:16 use-after-free"},
			"free at line 12"),
		Entry(nil, "each-repeats.yaml", lim, []string{"16:11 duplicate", "19:11 use-after-free"},
			"allocates \"tmp\" again in round 2", "round 2 frees \"gone\" again"),
		Entry(nil, "init-in-capture.yaml", lim, []string{"13:55 bad-pattern", "15:11 bad-pattern"},
			"alloc inside a capture: init iota8", `re-provisions "counted" with its init iota32`),
		Entry(nil, "each-round-two.yaml", lim, []string{"17:11 axpy-size"}, "in round 2 (replay.each runs before every round)"),
		Entry("an unknown alias, placed where it is used", "yaml-unknown-alias.yaml", lim, []string{"4:11 yaml"}, "unknown anchor 'nope'"),
		Entry("a control character, placed", "yaml-control-char.yaml", lim, []string{"2:7 yaml"}, "control characters"),
		Entry("invalid UTF-8, placed", "yaml-bad-utf8.yaml", lim, []string{"2:7 encoding"}, "UTF-8"),
		Entry("a binary file, at its first NUL byte", "binary-nul.yaml", lim, []string{"2:7 encoding"}, "binary file: NUL byte at offset 30"),
		Entry("aliases expanding past the budget (billion laughs)", "alias-bomb.yaml", lim, []string{"9:45 alias"}, "expand to more than 100000 nodes"),
		Entry("nesting deeper than MaxDepth", "deep-nesting.yaml", lim, []string{"4:40 limit"}, "nesting deeper than 32 levels"),
		Entry("control characters in a name and a description", "control-name.yaml", lim,
			[]string{"5:11 control-character", "6:18 control-character"}, `U+001B at character 2 of "p\x1b[31m"`, "U+009B"),
		Entry(nil, "capture-and-captures.yaml", lim, []string{"8:5 capture-and-captures"}),
		Entry(nil, "unknown-capture.yaml", lim, []string{"11:22 unknown-capture", "11:37 unknown-capture"},
			`did you mean "second"`),
		Entry(nil, "race-write-write.yaml", lim, []string{"16:11 race"},
			"fill (line 16) on stream side and fill (line 15) on stream main race on a[512:768] (write-write)"),
		Entry(nil, "race-read-write.yaml", lim, []string{"18:11 race", "19:11 race", "20:11 race"},
			"fill (line 18) on stream main and copy (line 17) on stream side race on a[100:110] (read-write)",
			"copy (line 19) on stream main and copy (line 17) on stream side race on c[0:8] (read-write)",
			"a[1000:1016]"),
		Entry(nil, "race-unjoined.yaml", lim, []string{"19:11 race", "21:11 race"},
			"stream side has not joined the capture"),
		Entry(nil, "limit-buffer.yaml", lim, []string{"7:20 limit", "11:35 limit", "12:37 limit"}),
		Entry(nil, "limit-total.yaml", lim, []string{"4:5 limit"}, "4294967297 bytes"),
		Entry(nil, "limit-ops.yaml", probes.Limits{MaxOps: 3}, []string{"5:5 limit"}, "has 4 ops, above the limit of 3"),
		Entry(nil, "limit-replays.yaml", lim, []string{"4:12 limit", "11:14 limit", "17:14 limit", "23:14 limit"}),
		Entry("pools: declared, large enough, the only place of their buffers", "pool.yaml", lim, []string{
			"9:21 bad-size", "13:30 undeclared", "14:43 bad-value", "15:43 bad-value", "21:9 pool", "24:9 pool",
		}, `did you mean "cache"`, "would hold 4608 bytes of live blocks here", "give host to the pool"),
		Entry("host memory, intent and the default stream", "memory.yaml", lim, []string{
			"11:46 bad-value", "13:21 bad-name", "16:47 bad-value", "19:23 memory", "20:11 memory", "21:11 memory",
			"23:30 unknown-key", "24:11 race",
		}, "fill is a device memset", "both are host memory", "reserved for the platform's default stream", "stream default has not joined"),
		Entry("expect.platforms: known families, outcomes, keys and classes", "expect-platforms.yaml", lim, []string{
			"8:42 unknown-key",  // rocm
			"8:69 unknown-key",  // cdua
			"13:58 bad-value",   // guarded: corrupted
			"13:80 bad-value",   // unguarded: fine
			"18:49 unknown-key", // guraded
			"18:82 bad-value",   // capture-wrong
			"23:48 bad-value",   // cann: {}
			"23:79 duplicate",   // cuda twice
			"28:41 bad-value",   // a list
		}, `unknown platform family "rocm" in expect platforms (families: cann for sim/cann and acl/..., cuda for sim/cuda and cuda/...)`,
			`"cdua" in expect platforms (did you mean "cuda"?)`, `expect platforms cuda guarded "corrupted": want one of exact, refused, rejected`,
			`expect platforms cuda unguarded "fine"`, `unknown key "guraded" in expect platforms cuda`, `error class "capture-wrong"`,
			"expect platforms cann: give at least one of guarded, unguarded, rejected-by", `duplicate platform family "cuda"`,
			"expect platforms: want a mapping from platform family (cann, cuda) to expectations, got a list"),
		Entry("expect.modes and a family's modes: known modes, once each, modes and guards the probe runs, no conflict", "expect-modes.yaml", lim, []string{
			"8:38 unknown-key",   // relaxd
			"8:67 unknown-key",   // eager
			"13:67 duplicate",    // global twice
			"13:102 bad-value",   // relaxed: {}
			"18:47 unknown-key",  // guraded
			"18:77 bad-value",    // unguarded: fine
			"18:97 bad-value",    // capture-wrong
			"23:37 bad-value",    // a list
			"29:41 expect-mode",  // relaxed, not run
			"29:96 expect-mode",  // cuda × relaxed, not run
			"34:42 unknown-key",  // a mode for an unknown family
			"34:101 unknown-key", // cuda × relaxd
			"34:156 duplicate",   // cuda × global twice
			"39:124 expect-mode", // cuda × relaxed: rejected-by, exact
			"45:38 expect-mode",  // unguarded, guards on only
			"50:41 expect-mode",  // relaxed: rejected-by, exact
		}, `unknown capture mode "relaxd" in expect modes (did you mean "relaxed"?) (modes: global, thread-local, relaxed)`,
			`duplicate capture mode "global" (first at line 13)`, "expect modes relaxed: give at least one of guarded, unguarded, rejected-by",
			`unknown key "guraded" in expect modes global`, `expect modes global unguarded "fine"`,
			"expect modes: want a mapping from capture mode (global, thread-local, relaxed) to expectations, got a list",
			"expect modes relaxed: the probe does not run in relaxed (its modes: global, thread-local)",
			"expect platforms cuda modes relaxed: the probe does not run in relaxed",
			`unknown capture mode "relaxd" in expect platforms cuda modes`,
			"expect platforms cuda modes relaxed: rejected-by names classes, but no instance it decides expects rejected",
			"expect modes global gives unguarded, but the probe runs with guards: [on] only",
			"expect modes relaxed: rejected-by names classes, but no instance it decides expects rejected"),
		Entry("several problems in one file, all reported together", "several.yaml", lim, []string{
			"8:18 bad-size", "12:5 unknown-key", "18:11 race", "19:31 undeclared", "21:21 unknown-capture", "22:23 bad-value",
		}),
	)

	It("accepts the canonical per-step re-allocation in replay.each: a free, then an alloc of the name", func() {
		_, err := probes.Parse("each.yaml", []byte(`version: replaycheck/v1
set: each-realloc
probes:
  - name: per-step-metadata
    hazard: none
    buffers:
      out: {bytes: 4KiB}
      meta: {bytes: 512, init: fill:0x01}
    streams: [main]
    capture:
      ops:
        - fill: {dst: out, value: 7}
    replay:
      each:
        - free: {buffer: meta}
        - alloc: {buffer: meta, bytes: 512, init: fill:0x02}
        - write: {dst: meta, value: fill:0x03}
    expect: {guarded: exact, unguarded: exact}
`), lim)
		Expect(err).NotTo(HaveOccurred())
	})

	It("reads expect.platforms, whose fields replace the probe's own on that family's platforms only", func() {
		set, err := probes.Parse("platforms.yaml", []byte(`version: replaycheck/v1
set: platforms
probes:
  - name: p
    hazard: unsafe-call
    buffers:
      a: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - fill: {dst: a, value: 1}
    expect:
      guarded: exact
      unguarded: exact
      rejected-by: [capture-mode]
      platforms:
        cuda: {guarded: rejected, rejected-by: [capture-implicit]}
        cann: {rejected-by: []}
`), lim)
		Expect(err).NotTo(HaveOccurred())
		p := set.Probes[0]
		Expect(p.Expect.Platforms).To(HaveLen(2))
		cuda := p.Expect.Platforms[probes.FamilyCUDA]
		Expect(cuda.Pos.Line).To(Equal(17))
		Expect(cuda.Guarded).To(Equal(probes.Rejected))
		Expect(cuda.Unguarded).To(BeEmpty(), "not given: the probe's own")
		Expect(cuda.RejectedBy).To(Equal([]device.Class{device.ClassCaptureImplicit}))

		for _, key := range []string{"sim/cuda", "cuda/13.0-h200", "cuda/12.4-h200-replaycheck-fake"} {
			on := p.Expect.On(key)
			Expect(on.Guarded).To(Equal(probes.Rejected), key)
			Expect(on.Unguarded).To(Equal(probes.Exact), "%s: unguarded is not overridden", key)
			Expect(on.RejectedBy).To(Equal([]device.Class{device.ClassCaptureImplicit}), key)
			Expect(on.Platforms).To(BeNil(), key)
			g, by := probes.Instance{Probe: p, Guarded: true}.ExpectedOn(key)
			Expect(g).To(Equal(probes.Rejected), key)
			Expect(by).To(Equal([]device.Class{device.ClassCaptureImplicit}), key)
			u, _ := probes.Instance{Probe: p}.ExpectedOn(key)
			Expect(u).To(Equal(probes.Exact), key)
		}
		for _, key := range []string{"sim/cann", "acl/cann-9.0-a2a3"} {
			on := p.Expect.On(key)
			Expect(on.Guarded).To(Equal(probes.Exact), key)
			Expect(on.RejectedBy).To(BeEmpty(), "%s: rejected-by given empty, any class", key)
		}
		for _, key := range []string{"", "sim", "sim/other", "rocm/6.0-mi300", "cudax/1"} {
			on := p.Expect.On(key)
			Expect(on.Guarded).To(Equal(probes.Exact), "%q: no family, the probe's own", key)
			Expect(on.RejectedBy).To(Equal([]device.Class{device.ClassCaptureMode}), key)
		}
		in := probes.Instance{Probe: p, Guarded: true}
		Expect(in.Expected()).To(Equal(probes.Exact), "Expected is the probe's own, for no platform")
	})

	It("reads expect.modes and a family's modes, and applies the most specific expectation field by field", func() {
		set, err := probes.Parse("modes.yaml", []byte(`version: replaycheck/v1
set: modes
probes:
  - name: p
    hazard: free-in-capture
    buffers:
      a: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - fill: {dst: a, value: 1}
    expect:
      guarded: refused
      unguarded: exact
      rejected-by: [capture-mode]
      modes:
        global: {unguarded: rejected}
      platforms:
        cuda:
          unguarded: rejected
          rejected-by: [capture-unsupported]
          modes:
            relaxed: {unguarded: exact}
            global: {rejected-by: [capture-invalidated]}
`), lim)
		Expect(err).NotTo(HaveOccurred())
		p := set.Probes[0]
		Expect(p.Expect.Modes).To(HaveLen(1))
		Expect(p.Expect.Modes[device.Global].Pos.Line).To(Equal(17))
		cuda := p.Expect.Platforms[probes.FamilyCUDA]
		Expect(cuda.Modes).To(HaveLen(2))
		Expect(cuda.Modes[device.Relaxed].Pos.Line).To(Equal(23))
		Expect(cuda.Modes[device.Relaxed].Unguarded).To(Equal(probes.Exact))

		type cell struct {
			unguarded probes.Outcome
			by        []device.Class
		}
		want := map[string]map[device.CaptureMode]cell{
			// No family: expect.modes, then the probe's own.
			"": {
				device.Global:      {probes.Rejected, []device.Class{device.ClassCaptureMode}},
				device.ThreadLocal: {probes.Exact, []device.Class{device.ClassCaptureMode}},
				device.Relaxed:     {probes.Exact, []device.Class{device.ClassCaptureMode}},
			},
			// cann has no entry: the same as no family.
			probes.FamilyCANN: {
				device.Global:      {probes.Rejected, []device.Class{device.ClassCaptureMode}},
				device.ThreadLocal: {probes.Exact, []device.Class{device.ClassCaptureMode}},
				device.Relaxed:     {probes.Exact, []device.Class{device.ClassCaptureMode}},
			},
			// cuda: platform × mode over mode over platform over the probe's own, per field.
			probes.FamilyCUDA: {
				device.Global:      {probes.Rejected, []device.Class{device.ClassCaptureInvalidated}},
				device.ThreadLocal: {probes.Rejected, []device.Class{device.ClassCaptureUnsupported}},
				device.Relaxed:     {probes.Exact, []device.Class{device.ClassCaptureUnsupported}},
			},
		}
		for family, modes := range want {
			for mode, c := range modes {
				e := p.Expect.For(family, mode)
				Expect(e.Unguarded).To(Equal(c.unguarded), "%q %s", family, mode)
				Expect(e.RejectedBy).To(Equal(c.by), "%q %s", family, mode)
				Expect(e.Guarded).To(Equal(probes.Refused), "%q %s: guarded is given nowhere else", family, mode)
				Expect(e.Platforms).To(BeNil())
				Expect(e.Modes).To(BeNil())
			}
		}
		for mode, c := range want[probes.FamilyCUDA] {
			o, by := probes.Instance{Probe: p, Mode: mode}.ExpectedOn("cuda/13.0-h200")
			Expect(o).To(Equal(c.unguarded), "%s", mode)
			Expect(by).To(Equal(c.by), "%s", mode)
			Expect(probes.Instance{Probe: p, Mode: mode}.ExpectedIn(probes.FamilyCUDA)).To(Equal(c.unguarded), "%s", mode)
		}
		for mode, c := range want[""] {
			o, _ := probes.Instance{Probe: p, Mode: mode}.ExpectedOn("sim/cann")
			Expect(o).To(Equal(c.unguarded), "%s", mode)
			Expect(probes.Instance{Probe: p, Mode: mode}.Expected()).To(Equal(c.unguarded), "%s", mode)
		}
		// On is the platform's expectation whatever the mode, as before expect.modes.
		Expect(p.Expect.On("sim/cuda").Unguarded).To(Equal(probes.Rejected))
		Expect(p.Expect.On("sim/cann").Unguarded).To(Equal(probes.Exact))
	})

	It("reports a modes entry used through an alias where the alias makes the use", func() {
		_, err := probes.Parse("alias.yaml", []byte(`version: replaycheck/v1
set: alias
probes:
  - name: a
    hazard: none
    streams: [main]
    capture: {}
    expect: {guarded: rejected, modes: &m {relaxed: {guarded: exact}}}
  - name: b
    hazard: none
    modes: [global]
    streams: [main]
    capture: {}
    expect: {guarded: rejected, modes: *m}
`), lim)
		ds := diagnostics(err)
		Expect(ds).To(HaveLen(1), "probe a runs relaxed: only b's use is wrong")
		Expect(ds[0].Error()).To(Equal("alias.yaml:14:40: expect-mode: expect modes relaxed: the probe does not run in relaxed (its modes: global)"))
	})

	It("keeps a probe without modes entries the same in every mode: For is On", func() {
		set, err := probes.Parse("platforms.yaml", []byte(`version: replaycheck/v1
set: platforms
probes:
  - name: p
    hazard: unsafe-call
    buffers:
      a: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - fill: {dst: a, value: 1}
    expect:
      guarded: rejected
      unguarded: exact
      rejected-by: [capture-mode]
      platforms:
        cuda: {unguarded: rejected, rejected-by: [capture-implicit]}
        cann: {rejected-by: []}
`), lim)
		Expect(err).NotTo(HaveOccurred())
		p := set.Probes[0]
		Expect(p.Expect.Modes).To(BeNil())
		for _, key := range []string{"sim/cuda", "cuda/13.0-h200", "sim/cann", "rocm/1"} {
			for _, mode := range device.CaptureModes() {
				Expect(p.Expect.For(probes.Family(key), mode)).To(Equal(p.Expect.On(key)), "%s %s", key, mode)
			}
		}
	})

	DescribeTable("a platform key's family",
		func(key, family string) { Expect(probes.Family(key)).To(Equal(family)) },
		Entry(nil, "sim/cann", probes.FamilyCANN),
		Entry(nil, "acl/cann-9.0-a2a3", probes.FamilyCANN),
		Entry(nil, "sim/cuda", probes.FamilyCUDA),
		Entry(nil, "cuda/13.0-h200", probes.FamilyCUDA),
		Entry(nil, "sim/cudax", ""),
		Entry(nil, "acl", ""),
		Entry(nil, "cuda/", ""),
		Entry(nil, "plugin/anything", ""),
		Entry(nil, "", ""),
	)

	It("lets a probe that runs with guards off only leave expect.guarded out", func() {
		text := `version: replaycheck/v1
set: off-only
probes:
  - name: p
    hazard: host-work-in-capture
    guards: [off]
    buffers:
      a: {bytes: 4KiB}
    streams: [main]
    capture:
      ops:
        - fill: {dst: a, value: 1}
    expect: {unguarded: exact}
`
		_, err := probes.Parse("off.yaml", []byte(text), lim)
		Expect(err).NotTo(HaveOccurred())
		_, err = probes.Parse("both.yaml", []byte(strings.Replace(text, "guards: [off]", "guards: [on, off]", 1)), lim)
		Expect(err).To(MatchError(ContainSubstring(`missing-key: expect lacks required key "guarded"`)))
	})

	It("reports the problems of every file in file, line and column order", func() {
		_, err := probes.Load(lim, "testdata/bad", "testdata/mixed")
		ds := diagnostics(err)
		Expect(len(ds)).To(BeNumerically(">", 40))
		for i := 1; i < len(ds); i++ {
			a, b := ds[i-1].Pos, ds[i].Pos
			ordered := a.File < b.File || a.File == b.File && (a.Line < b.Line || a.Line == b.Line && a.Col <= b.Col)
			Expect(ordered).To(BeTrue(), "%s is listed before %s", ds[i-1], ds[i])
		}
	})

	It("has a table entry for every bad fixture", func() {
		files, _ := filepath.Glob("testdata/bad/*.yaml")
		Expect(len(files)).To(Equal(51))
	})

	It("reports a directory's bad file and returns the good ones", func() {
		sets, err := probes.Load(lim, "testdata/mixed")
		Expect(sets).To(HaveLen(1))
		Expect(sets[0].Name).To(Equal("mixed-good"))
		ds := diagnostics(err)
		// notes.txt and sub/ are not read; bad.yml is.
		Expect(ds).To(HaveLen(1))
		Expect(ds[0].Error()).To(HavePrefix(filepath.Join("testdata", "mixed", "bad.yml") + ":8:23: bad-value: "))
	})

	It("reports a set name loaded twice at the second set: naming the first file", func() {
		sets, err := probes.Load(lim, "testdata/dupset")
		Expect(sets).To(HaveLen(1))
		ds := diagnostics(err)
		Expect(ds).To(HaveLen(1))
		Expect(ds[0].Pos).To(Equal(probes.Pos{File: filepath.Join("testdata", "dupset", "b.yaml"), Line: 2, Col: 6}))
		Expect(ds[0].Rule).To(Equal(probes.RuleDuplicate))
		Expect(ds[0].Message).To(ContainSubstring(filepath.Join("testdata", "dupset", "a.yaml")))
	})

	It("reports every file's problems together, sorted by file", func() {
		sets, err := probes.Load(lim, "testdata/bad/version.yaml", "testdata/good", "testdata/bad/axpy-size.yaml", "testdata/nowhere")
		Expect(sets).To(HaveLen(3))
		ds := diagnostics(err)
		var files []string
		for _, d := range ds {
			files = append(files, d.Pos.File)
		}
		Expect(files).To(Equal([]string{
			"testdata/bad/axpy-size.yaml", "testdata/bad/axpy-size.yaml", "testdata/bad/version.yaml", "testdata/nowhere",
		}))
		Expect(ds[3].Rule).To(Equal(probes.RuleRead))
		Expect(ds[3].Error()).To(HavePrefix("testdata/nowhere: read: "))
		Expect(strings.Count(err.Error(), "\n")).To(Equal(3))
	})

	It("reads a file named twice once", func() {
		sets, err := probes.Load(lim, "testdata/good/realloc.yml", "testdata/good")
		Expect(err).NotTo(HaveOccurred())
		Expect(sets).To(HaveLen(3))
	})

	It("returns no error, not a typed nil, when all is well", func() {
		_, err := probes.Load(lim)
		Expect(err).To(BeNil())
		_, err = probes.Parse("x.yaml", []byte(minimal), lim)
		Expect(err).To(BeNil())
	})

	It("reports an empty file and a document that is not a mapping", func() {
		_, err := probes.Parse("empty.yaml", nil, lim)
		Expect(lineColRule(diagnostics(err))).To(Equal([]string{"1:1 missing-key"}))
		_, err = probes.Parse("list.yaml", []byte("- a\n- b\n"), lim)
		Expect(lineColRule(diagnostics(err))).To(Equal([]string{"1:1 bad-value"}))
	})
})
