package probes_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/progen"
	"github.com/replaycheck/replaycheck/probes"
)

// probeWithOps is a one-probe file whose capture holds n fill ops, each on buffer buf: with buf
// undeclared every op is also an undeclared reference, which only decoding and checking find.
func probeWithOps(n int, buf string) string {
	var b strings.Builder
	b.WriteString("version: replaycheck/v1\nset: big\nprobes:\n  - name: p\n    hazard: none\n    streams: [main]\n    capture:\n      ops:\n")
	for range n {
		fmt.Fprintf(&b, "        - fill: {buffer: %s, value: 1}\n", buf)
	}
	b.WriteString("    expect: {guarded: exact}\n")
	return b.String()
}

// The defences against hostile input, each with the control that fails when it is removed: the
// hostile case would then be accepted, reported under another rule, or take the expensive path.
var _ = Describe("hostile input", func() {
	lim := probes.DefaultLimits()

	It("refuses a file above MaxFileBytes from its size, without reading it", func() {
		path := filepath.Join(GinkgoT().TempDir(), "huge.yaml")
		f, err := os.Create(path)
		Expect(err).NotTo(HaveOccurred())
		// Sparse 20 MiB with NUL bytes: read, it would be refused as binary, not for its size.
		Expect(f.Truncate(20 << 20)).To(Succeed())
		Expect(f.Close()).To(Succeed())
		for _, load := range []func() error{
			func() error { _, err := probes.Load(lim, path); return err },
			func() error { _, err := probes.LoadFile(path, lim); return err },
		} {
			ds := diagnostics(load())
			Expect(ds).To(HaveLen(1))
			Expect(ds[0].Rule).To(Equal(probes.RuleLimit))
			Expect(ds[0].Error()).To(Equal(path + ": limit: file is 20MiB, above the probe file limit of 16MiB; not read"))
		}
	})

	It("refuses what is not a regular file, without reading it", func() {
		// /dev/zero has size 0 and never ends: read, the load would not return.
		_, err := probes.LoadFile("/dev/zero", lim)
		Expect(diagnostics(err)[0].Error()).To(Equal("/dev/zero: read: not a regular file; not read"))
		_, err = probes.Load(lim, "/dev/zero")
		Expect(diagnostics(err)[0].Error()).To(Equal("/dev/zero: read: not a regular file; not read"))
	})

	It("takes MaxFileBytes from Limits, and checks it in Parse too", func() {
		src := []byte(minimal)
		_, err := probes.Parse("small.yaml", src, probes.Limits{MaxFileBytes: int64(len(src))})
		Expect(err).NotTo(HaveOccurred())
		_, err = probes.Parse("small.yaml", src, probes.Limits{MaxFileBytes: int64(len(src)) - 1})
		ds := diagnostics(err)
		Expect(ds).To(HaveLen(1))
		Expect(ds[0].Rule).To(Equal(probes.RuleLimit))
		Expect(ds[0].Message).To(ContainSubstring("above the probe file limit"))
	})

	It("places invalid UTF-8 at its line and column", func() {
		_, err := probes.Parse("x.yaml", []byte("version: replaycheck/v1\nset: t\ndescription: caf\xe9\n"), lim)
		ds := diagnostics(err)
		Expect(ds).To(HaveLen(1))
		Expect(ds[0].Error()).To(Equal("x.yaml:3:17: encoding: invalid UTF-8 (byte 0xe9 at offset 47); a probe file is UTF-8 text"))
	})

	It("accepts aliases within the budget and refuses a bomb at the alias that crosses it", func() {
		// 10 probes sharing one capture by alias load (the language allows aliases).
		shared := "version: replaycheck/v1\nset: s\nprobes:\n"
		for i := range 10 {
			anchor := "*c"
			if i == 0 {
				anchor = "&c {ops: [sync: {}]}"
			}
			shared += fmt.Sprintf("  - {name: p%d, hazard: none, streams: [main], capture: %s, expect: {guarded: exact}}\n", i, anchor)
		}
		set, err := probes.Parse("shared.yaml", []byte(shared), lim)
		Expect(err).NotTo(HaveOccurred())
		Expect(set.Probes).To(HaveLen(10))

		// A probe of 1000 ops launched 1000 times by alias: 10^6 ops to decode and check.
		bomb := probeWithOps(1000, "a")
		bomb = strings.Replace(bomb, "  - name: p\n", "  - &p\n    name: p\n", 1)
		bomb += "  -" + strings.Repeat(" *p\n  -", 999) + " *p\n"
		_, err = probes.Parse("bomb.yaml", []byte(bomb), lim)
		ds := diagnostics(err)
		Expect(ds).To(HaveLen(1), "refused before a probe is decoded:\n%v", err)
		Expect(ds[0].Rule).To(Equal(probes.RuleAlias))
		Expect(ds[0].Pos.Line).To(BeNumerically(">", 1000))
	})

	It("refuses nesting beyond MaxDepth, and beyond yaml.v3's own limit, with a position", func() {
		within := "version: replaycheck/v1\nset: t\nx: " + strings.Repeat("[", probes.MaxDepth-1) + strings.Repeat("]", probes.MaxDepth-1) + "\n"
		_, err := probes.Parse("d.yaml", []byte(within), lim)
		Expect(err.Error()).NotTo(ContainSubstring("nesting"), "within the depth: decoded")

		beyond := strings.Replace(within, "x: [", "x: [[", 1)
		beyond = strings.Replace(beyond, "]\n", "]]\n", 1)
		_, err = probes.Parse("d.yaml", []byte(beyond), lim)
		ds := diagnostics(err)
		Expect(ds).To(HaveLen(1))
		Expect(ds[0].Error()).To(HavePrefix(fmt.Sprintf("d.yaml:3:%d: limit: nesting deeper than 32 levels", 3+probes.MaxDepth)))

		const n = 20000
		_, err = probes.Parse("d.yaml", []byte("x: "+strings.Repeat("[", n)+strings.Repeat("]", n)), lim)
		ds = diagnostics(err)
		Expect(ds).To(HaveLen(1))
		Expect(ds[0].Error()).To(Equal("d.yaml:1:10004: yaml: exceeded max depth of 10000"))
	})

	It("counts a probe's ops before decoding them: an over-limit probe takes no other check", func() {
		// Every op names an undeclared buffer: decoded and checked, each would be reported.
		_, err := probes.Parse("ops.yaml", []byte(probeWithOps(101, "nope")), probes.Limits{MaxOps: 100})
		ds := diagnostics(err)
		Expect(ds).To(HaveLen(1), "%v", err)
		Expect(ds[0].Error()).To(Equal("ops.yaml:4:5: limit: probe p has 101 ops, above the limit of 100"))

		_, err = probes.Parse("ops.yaml", []byte(probeWithOps(100, "nope")), probes.Limits{MaxOps: 100})
		Expect(len(diagnostics(err))).To(BeNumerically(">=", 100), "at the limit: decoded and checked")
	})

	It("refuses 10^6 ops by the file limit, before YAML parses them", func() {
		// Parsed (38 MB of YAML) they would take seconds; the op limit is shown above on a small
		// probe, and 10^6 ops written by alias in a small file are an alias bomb.
		_, err := probes.Parse("m.yaml", []byte(probeWithOps(1000000, "a")), lim)
		ds := diagnostics(err)
		Expect(ds).To(HaveLen(1))
		Expect(ds[0].Message).To(Equal("file is 38000143 bytes, above the probe file limit of 16MiB"))
	})

	// The op limit must be reachable: a probe of MaxOps ops, each written in full, has to fit
	// both file limits, or a generated probe meets a file limit first.
	DescribeTable("fits a probe at the op limit in both file limits, each op written with every field",
		func(op string) {
			var b strings.Builder
			b.WriteString("version: replaycheck/v1\nset: big\nprobes:\n  - name: p\n    hazard: none\n    capture:\n      ops:\n")
			for range lim.MaxOps {
				b.WriteString("        - " + op + "\n")
			}
			b.WriteString("    expect: {guarded: exact}\n")
			data := []byte(b.String())
			Expect(int64(len(data))).To(BeNumerically("<=", lim.MaxFileBytes))
			Expect(probes.ValueBound(data)).To(BeNumerically("<=", lim.MaxFileValues))
		},
		Entry("fill", "fill: {dst: buffer-a, value: 255, offset: 1048512, bytes: 64, stream: stream-1, thread: main, intent: replay}"),
		Entry("copy", "copy: {dst: buffer-a, src: buffer-b, bytes: 64, dst-offset: 1048512, src-offset: 1048512, stream: stream-1, thread: main, intent: replay}"),
		Entry("axpy", "axpy: {y: buffer-a, x: buffer-b, a: 4294967295, stream: stream-1, thread: main, intent: replay}"),
		Entry("alloc", "alloc: {buffer: buffer-a, bytes: 1048576, init: fill:0x5A, slot: arena, host: false, pool: pool-1, thread: main}"),
	)

	It("keeps the position of every field an op kind has", func() {
		Expect(probes.OpKeysFit()).To(BeTrue())
	})

	It("loads a probe of 100,000 fills, above the file size the limits once allowed", func() {
		src := []byte(progen.Fills(100000, 1))
		Expect(len(src)).To(BeNumerically(">", 4<<20))
		set, err := probes.Parse("big.yaml", src, lim)
		Expect(err).NotTo(HaveOccurred())
		ops := set.Probes[0].Captures[0].Ops
		Expect(ops).To(HaveLen(100000))
		Expect(*ops[99999].Offset).To(Equal(int64(99999 * 64)))
	})

	It("refuses a file of many short values from its punctuation, before YAML parses it", func() {
		// 5 MB of one-letter items, under the size limit: parsed, 2.5 million nodes (2.1 s and
		// 490 MB resident for yaml.v3 alone, here).
		src := []byte("x: [" + strings.Repeat("a,", 2500000) + "a]\n")
		Expect(int64(len(src))).To(BeNumerically("<", lim.MaxFileBytes))
		_, err := probes.Parse("flat.yaml", src, lim)
		ds := diagnostics(err)
		Expect(ds).To(HaveLen(1))
		Expect(ds[0].Error()).To(Equal("flat.yaml: limit: file may make up to 5000005 YAML values (counted from its punctuation), above the limit of 4000000; not parsed"))

		// The control, on a small file: at its bound it is parsed (and read as what it is).
		small := []byte("x: [" + strings.Repeat("a,", 100) + "a]\n")
		_, err = probes.Parse("flat.yaml", small, probes.Limits{MaxFileValues: probes.ValueBound(small)})
		Expect(diagnostics(err)[0].Message).NotTo(ContainSubstring("YAML values"))
		_, err = probes.Parse("flat.yaml", small, probes.Limits{MaxFileValues: probes.ValueBound(small) - 1})
		Expect(diagnostics(err)[0].Message).To(ContainSubstring("YAML values"))
	})

	It("lists the first MaxDiagnostics problems of a file, and says that there are more", func() {
		bad := func(n int) probes.Diagnostics {
			src := "version: replaycheck/v1\nset: t\nprobes: [" + strings.Repeat("a, ", n-1) + "a]\n"
			_, err := probes.Parse("bad.yaml", []byte(src), lim)
			return diagnostics(err)
		}
		ds := bad(5000)
		Expect(ds).To(HaveLen(probes.MaxDiagnostics + 1))
		Expect(ds[0].Error()).To(Equal("bad.yaml: limit: more than 100 problems; the first 100 found are listed"))
		Expect(ds[1].Error()).To(Equal(`bad.yaml:3:10: bad-value: probe: want a mapping, got "a"`))
		Expect(ds[100].Pos.Col).To(Equal(10 + 99*3))

		// The control: at the cap, every problem is listed and none is said to be missing.
		ds = bad(probes.MaxDiagnostics)
		Expect(ds).To(HaveLen(probes.MaxDiagnostics))
		Expect(ds[0].Rule).To(Equal(probes.RuleBadValue))
	})

	It("works out the names an unknown name could have meant only for a problem it lists", func() {
		// 90,000 ops naming an unknown buffer of a probe of 2,000 buffers took over three minutes
		// to validate while every message offered the closest of the 2,000 names.
		calls := 0
		known := func() []string { calls++; return []string{"buffer", "other"} }
		kept, found := probes.ReportUnknown(probes.MaxDiagnostics, known)
		Expect([]int{kept, found, calls}).To(Equal([]int{probes.MaxDiagnostics, probes.MaxDiagnostics + 1, 0}))
		// The control: under the cap the names are listed, with the suggestion.
		kept, found = probes.ReportUnknown(0, known)
		Expect([]int{kept, found, calls}).To(Equal([]int{1, 1, 1}))
	})

	It("keeps counting past the cap in replay.each's second round, which lists what round 1 did not", func() {
		// Round 2 of replay.each repeats round 1's problems, dropped as duplicates by comparing
		// each with those listed: uncapped, that is quadratic (100,000 ops naming an undeclared
		// buffer took 12 s to validate).
		each := func(n int) string {
			var b strings.Builder
			b.WriteString("version: replaycheck/v1\nset: t\nprobes:\n  - name: p\n    hazard: none\n    streams: [main]\n    buffers: {b: {bytes: 64}}\n    capture: {ops: [fill: {dst: b, value: 1}]}\n    replay:\n      each:\n")
			for range n {
				b.WriteString("        - fill: {dst: nope, value: 1}\n")
			}
			b.WriteString("    expect: {guarded: exact}\n")
			return b.String()
		}
		_, err := probes.Parse("each.yaml", []byte(each(3000)), lim)
		ds := diagnostics(err)
		Expect(ds).To(HaveLen(probes.MaxDiagnostics + 1))
		Expect(ds[0].Message).To(HavePrefix("more than 100 problems"))
		for _, d := range ds[1:] {
			Expect(d.Message).To(HavePrefix(`undeclared buffer "nope"`), "round 2 repeats round 1: nothing of it is listed")
		}

		// Under the cap, round 2 adds nothing either: its problems are round 1's.
		_, err = probes.Parse("each.yaml", []byte(each(50)), lim)
		Expect(diagnostics(err)).To(HaveLen(50))
	})

	DescribeTable("control characters in any key or value, placed; newline and tab allowed in text",
		func(value string, want string) {
			src := strings.Replace(minimal, "hazard: none", "description: "+value+"\n    hazard: none", 1)
			_, err := probes.Parse("c.yaml", []byte(src), lim)
			if want == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			ds := diagnostics(err)
			Expect(ds).To(HaveLen(1))
			Expect(ds[0].Rule).To(Equal(probes.RuleControl))
			Expect(ds[0].Message).To(ContainSubstring(want))
		},
		Entry("ESC", `"\e]0;owned\a"`, "U+001B at character 1"),
		Entry("DEL", `"a\x7f"`, "U+007F at character 2"),
		Entry("C1 CSI", `"a\u009b"`, "U+009B"),
		Entry("carriage return", `"a\rb"`, "U+000D"),
		Entry("newline and tab", `"line one\n\tline two"`, ""),
	)

	It("refuses a control character in a key", func() {
		_, err := probes.Parse("k.yaml", []byte("version: replaycheck/v1\nset: t\n\"pro\\ebes\": []\n"), lim)
		ds := diagnostics(err)
		Expect(ds).To(HaveLen(1))
		Expect(ds[0].Error()).To(HavePrefix("k.yaml:3:1: control-character: "))
	})
})
