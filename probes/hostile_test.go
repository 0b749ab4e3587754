package probes_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

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
			Expect(ds[0].Error()).To(Equal(path + ": limit: file is 20MiB, above the probe file limit of 4MiB; not read"))
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
		Expect(ds[0].Message).To(Equal("file is 38000143 bytes, above the probe file limit of 4MiB"))
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
