package probes_test

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/probes"
)

var _ = Describe("file names in diagnostics", func() {
	lim := probes.DefaultLimits()

	It("are printed as they are when they hold nothing a terminal acts on", func() {
		for _, name := range []string{"specs/a b.yaml", "häzard.yaml", `q"uote.yaml`} {
			Expect(probes.FileText(name)).To(Equal(name))
		}
		d := probes.Diagnostic{Pos: probes.Pos{File: "a.yaml", Line: 3, Col: 7}, Rule: probes.RuleBadValue, Message: "m"}
		Expect(d.Error()).To(Equal("a.yaml:3:7: bad-value: m"))
	})

	It("are quoted, escapes and all, when they hold a control character or are not UTF-8", func() {
		for name, want := range map[string]string{
			"a\x1b[2Jb.yaml": `"a\x1b[2Jb.yaml"`,
			"a\u009bb.yaml":  `"a\u009bb.yaml"`,
			"line\nbreak":    `"line\nbreak"`,
			"tab\t.yaml":     `"tab\t.yaml"`,
			"del\x7f.yaml":   `"del\x7f.yaml"`,
			"latin\xe9.yaml": `"latin\xe9.yaml"`,
		} {
			Expect(probes.FileText(name)).To(Equal(want), "%q", name)
		}
		at := probes.Pos{File: "a\x1b[2Jb.yaml", Line: 3, Col: 7}
		Expect(at.String()).To(Equal(`"a\x1b[2Jb.yaml":3:7`))
		Expect(probes.Diagnostic{Pos: at, Rule: probes.RuleBadValue, Message: "m"}.Error()).To(Equal(`"a\x1b[2Jb.yaml":3:7: bad-value: m`))
		Expect(probes.Diagnostic{Pos: probes.Pos{File: at.File}, Rule: probes.RuleRead, Message: "m"}.Error()).To(Equal(`"a\x1b[2Jb.yaml": read: m`))
	})

	It("reach no terminal raw from a file read, a path that cannot be read, or a set defined twice", func() {
		dir := GinkgoT().TempDir()
		set := "version: replaycheck/v1\nset: s\nprobes:\n  - {name: p, hazard: none, streams: [main], capture: {}, expect: {guarded: bogus}}\n"
		Expect(os.WriteFile(filepath.Join(dir, "a\x1b[2Jb.yaml"), []byte(set), 0o644)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(set), 0o644)).To(Succeed())
		_, err := probes.Load(lim, dir, filepath.Join(dir, "gone\x1b]0;x\x07.yaml"))
		Expect(err).To(HaveOccurred())
		text := err.Error()
		Expect(text).NotTo(ContainSubstring("\x1b"))
		Expect(text).NotTo(ContainSubstring("\x07"))
		Expect(text).To(ContainSubstring(`b.yaml":4:`))
		Expect(text).To(ContainSubstring(`set "s" is already defined in "` + dir + `/a\x1b[2Jb.yaml" (line 2)`))
		Expect(text).To(MatchRegexp(`gone\\x1b\]0;x\\a\.yaml": read: stat "[^"]*gone\\x1b\]0;x\\a\.yaml": no such file`))
		Expect(strings.Count(text, "\n")).To(Equal(len(diagnostics(err))-1), "one line each")
	})
})
