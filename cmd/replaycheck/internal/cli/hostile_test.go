package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// hostileInputs writes each hostile probe file of issue 12 into dir and returns, by case, its
// path and the diagnostic replaycheck must print for it, as a regexp after "PATH:".
func hostileInputs(dir string) map[string][2]string {
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		Expect(os.WriteFile(path, data, 0o644)).To(Succeed())
		return path
	}
	head := "version: replaycheck/v1\nset: t\n"
	probe := func(name, description string) string {
		return head + fmt.Sprintf("probes:\n  - name: %s\n    description: %s\n    hazard: none\n    streams: [main]\n    capture: {ops: [sync: {}]}\n    expect: {guarded: exact}\n", name, description)
	}

	bomb := head + "bomb:\n  - &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
	for i := 1; i < 9; i++ {
		bomb += fmt.Sprintf("  - &a%d [%s]\n", i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
	}
	binary := make([]byte, 20<<20)
	for i := range binary {
		binary[i] = byte(i * 7)
	}
	var ops strings.Builder
	ops.WriteString(head + "probes:\n  - name: p\n    hazard: none\n    streams: [main]\n    capture:\n      ops:\n")
	for range 1000000 {
		ops.WriteString("        - sync: {}\n")
	}
	return map[string][2]string{
		"alias bomb":   {write("bomb.yaml", []byte(bomb)), `8:45: alias: alias \*a3: the file's aliases expand to more than 100000 nodes`},
		"deep nesting": {write("deep.yaml", []byte(head+"probes: "+strings.Repeat("[", 100)+strings.Repeat("]", 100)+"\n")), `3:40: limit: nesting deeper than 32 levels`},
		"very deep nesting (yaml.v3's own limit)": {write("deeper.yaml", []byte(head+"probes: "+strings.Repeat("[", 20000)+strings.Repeat("]", 20000)+"\n")),
			`3:10009: yaml: exceeded max depth of 10000`},
		"20 MiB binary": {write("binary.yaml", binary), ` limit: file is 20MiB, above the probe file limit of 16MiB; not read`},
		"invalid UTF-8": {write("latin1.yaml", []byte(probe("p", "caf\xe9"))), `5:21: encoding: invalid UTF-8 \(byte 0xe9 at offset 71\)`},
		"10^6 ops":      {write("ops.yaml", []byte(ops.String())), ` limit: file is 19000112 bytes, above the probe file limit of 16MiB; not read`},
		"5 MB of short values": {write("flat.yaml", []byte(head+"probes: ["+strings.Repeat("a,", 2500000)+"a]\n")),
			` limit: file may make up to 5000009 YAML values \(counted from its punctuation\), above the limit of 4000000; not parsed`},
		"ESC in a probe name":         {write("esc-name.yaml", []byte(probe(`"p\e[2J"`, "fine"))), `4:11: control-character: control character U\+001B at character 2 of "p\\x1b\[2J"`},
		"C1 control in a description": {write("c1-text.yaml", []byte(probe("p", `"a\u009b31m"`))), `5:18: control-character: control character U\+009B`},
	}
}

// Hostile probe files are refused by every command that loads probes, with exit status 2, one
// diagnostic naming the file, position and rule, and before any device or runtime is opened: the
// control is a good file given the same unusable backend and runtime, which they do reach.
var _ = Describe("hostile input", Ordered, func() {
	var cases map[string][2]string
	BeforeAll(func() {
		dir, err := os.MkdirTemp("", "hostile")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(os.RemoveAll, dir)
		cases = hostileInputs(dir) // once: 45 MB of input for 18 specs
	})
	unusable := []string{"--backend", "acl", "--runtime", "/nonexistent/plugin.so"}

	for _, name := range []string{"alias bomb", "deep nesting", "very deep nesting (yaml.v3's own limit)", "20 MiB binary",
		"invalid UTF-8", "10^6 ops", "5 MB of short values", "ESC in a probe name", "C1 control in a description"} {
		for _, cmd := range [][]string{{"validate"}, append([]string{"run"}, unusable...)} {
			It(fmt.Sprintf("refuses %s: replaycheck %s", name, cmd[0]), func() {
				path, want := cases[name][0], cases[name][1]
				var stdout, stderr bytes.Buffer
				code := Main(append(append([]string{}, cmd...), path), &stdout, &stderr)
				Expect(code).To(Equal(ExitUsage), "stderr:\n%s", stderr.String())
				Expect(stderr.String()).To(MatchRegexp(`\A%s:%s[^\n]*\n\z`, regexp.QuoteMeta(path), want))
				Expect(stdout.String()).To(BeEmpty())
			})
		}
	}

	It("control: a good file with the same flags reaches the backend or runtime, which the hostile ones never do", func() {
		path := filepath.Join(GinkgoT().TempDir(), "good.yaml")
		Expect(os.WriteFile(path, []byte("version: replaycheck/v1\nset: t\nprobes:\n  - name: p\n    hazard: none\n    streams: [main]\n    capture: {ops: [sync: {}]}\n    expect: {guarded: exact}\n"), 0o644)).To(Succeed())
		var stdout, stderr bytes.Buffer
		code := Main(append(append([]string{"run"}, unusable...), path), &stdout, &stderr)
		Expect(code).To(Equal(ExitUsage))
		Expect(stderr.String()).To(MatchRegexp(`replaycheck run: (--runtime|.*acl)`))
	})
})
