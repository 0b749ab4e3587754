package main_test

// A small testscript-style runner: each testdata/script/NAME.txtar is an archive whose comment is
// a script and whose files are written into a fresh directory the script runs in.
//
// Script lines (blank lines and lines starting with # are ignored; arguments split on spaces,
// single quotes group, '' inside quotes is a quote, $WORK is the script's directory):
//
//	exec replaycheck ARGS...    run the CLI in-process; it must exit 0
//	! exec replaycheck ARGS...  run it; it must exit non-zero
//	exit N                      the last exec exited with exactly N
//	stdout REGEX                the last exec's stdout matches (multi-line mode: ^ and $ match lines)
//	! stdout REGEX              it does not match
//	stderr REGEX / ! stderr REGEX
//	cmp stdout FILE             the last stdout equals the archive file FILE (also cmp stderr FILE)
//	env KEY=VALUE               set a variable for later execs; execs see no other environment

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/tools/txtar"

	"github.com/replaycheck/replaycheck/cmd/replaycheck/internal/cli"
)

var _ = Describe("replaycheck scripts", func() {
	// Specs are generated from the files during tree construction, one per script.
	scripts, err := filepath.Glob(filepath.Join("testdata", "script", "*.txtar"))
	if err != nil || len(scripts) == 0 {
		It("finds its scripts", func() {
			Fail(fmt.Sprintf("no scripts under testdata/script (glob error: %v)", err))
		})
		return
	}
	for _, path := range scripts {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		It(name, func() {
			ar, err := txtar.ParseFile(path)
			Expect(err).NotTo(HaveOccurred())
			// The runner's error is already a readable log; Fail prints it as it is.
			if err := runScript(path, ar, GinkgoT().TempDir()); err != nil {
				Fail(err.Error())
			}
		})
	}
})

// The runner is only worth something if it can fail: each of these scripts is wrong in one way.
var _ = Describe("script runner", func() {
	const okProbe = `
-- ok.yaml --
version: replaycheck/v1
set: basic
probes:
  - name: fill
    hazard: none
    modes: [global]
    guards: [off]
    replays: 1
    buffers:
      dst: {bytes: 64}
    streams: [main]
    capture:
      stream: main
      ops:
        - fill: {dst: dst, value: 7}
    expect:
      guarded: exact
      unguarded: exact
`
	DescribeTable("reports a broken expectation",
		func(script, want string) {
			ar := txtar.Parse([]byte(script + okProbe))
			err := runScript("control.txtar", ar, GinkgoT().TempDir())
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("exec that fails", "exec replaycheck validate missing.yaml\n", "exited 2, want 0"),
		Entry("! exec that succeeds", "! exec replaycheck validate ok.yaml\n", "exited 0, want non-zero"),
		Entry("wrong exit code", "! exec replaycheck validate missing.yaml\nexit 1\n", "exit code 2, want 1"),
		Entry("stdout that does not match", "exec replaycheck validate ok.yaml\nstdout '^nope$'\n", "stdout does not match"),
		Entry("stdout that must not match", "exec replaycheck validate ok.yaml\n! stdout '^ok'\n", "stdout matches"),
		Entry("stderr that does not match", "exec replaycheck validate ok.yaml\nstderr .\n", "stderr does not match"),
		Entry("cmp that differs", "exec replaycheck validate ok.yaml\ncmp stdout ok.yaml\n", "stdout differs from ok.yaml"),
		Entry("unknown program", "exec ls\n", `only "replaycheck"`),
		Entry("unknown command", "frobnicate\n", "unknown script command"),
		Entry("assertion before exec", "stdout .\n", "no exec"),
		Entry("unterminated quote", "stdout 'abc\n", "unterminated"),
	)

	It("passes a correct script", func() {
		ar := txtar.Parse([]byte("exec replaycheck validate ok.yaml\nstdout '^ok: 1 probe file, 1 probe, 1 instance$'\n! stderr .\n" + okProbe))
		Expect(runScript("control.txtar", ar, GinkgoT().TempDir())).To(Succeed())
	})
})

// script is the state of one running script.
type script struct {
	name  string
	dir   string
	files map[string][]byte
	env   map[string]string

	ran            bool
	stdout, stderr string
	code           int
	log            strings.Builder // commands so far and their output, for the failure message
}

// runScript extracts ar into dir and runs its comment as a script. The error names the script line
// that failed and carries the log of everything before it.
func runScript(name string, ar *txtar.Archive, dir string) error {
	s := &script{name: name, dir: dir, files: map[string][]byte{}, env: map[string]string{}}
	for _, f := range ar.Files {
		clean := filepath.Clean(f.Name)
		if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
			return fmt.Errorf("%s: archive file %q is outside the script directory", name, f.Name)
		}
		s.files[clean] = f.Data
		full := filepath.Join(dir, clean)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("%s: writing %s: %w", name, f.Name, err)
		}
		if err := os.WriteFile(full, f.Data, 0o644); err != nil {
			return fmt.Errorf("%s: writing %s: %w", name, f.Name, err)
		}
	}
	for i, line := range strings.Split(string(ar.Comment), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fmt.Fprintf(&s.log, "> %s\n", line)
		if err := s.command(line); err != nil {
			return fmt.Errorf("%s:%d: %s: %w\n\nscript log:\n%s", name, i+1, line, err, s.log.String())
		}
	}
	return nil
}

func (s *script) command(line string) error {
	words, err := split(line)
	if err != nil {
		return err
	}
	neg := words[0] == "!"
	if neg {
		words = words[1:]
		if len(words) == 0 {
			return fmt.Errorf("! needs a command")
		}
	}
	verb, args := words[0], words[1:]
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "$WORK", s.dir)
	}
	switch verb {
	case "exec":
		return s.exec(neg, args)
	case "exit":
		if neg || len(args) != 1 {
			return fmt.Errorf("usage: exit N")
		}
		want, err := strconv.Atoi(args[0])
		if err != nil {
			return fmt.Errorf("exit: %q is not a number", args[0])
		}
		if !s.ran {
			return fmt.Errorf("no exec before exit")
		}
		if s.code != want {
			return fmt.Errorf("exit code %d, want %d", s.code, want)
		}
		return nil
	case "stdout", "stderr":
		if len(args) != 1 {
			return fmt.Errorf("usage: %s REGEX", verb)
		}
		return s.match(verb, neg, args[0])
	case "cmp":
		if neg || len(args) != 2 || (args[0] != "stdout" && args[0] != "stderr") {
			return fmt.Errorf("usage: cmp stdout|stderr FILE")
		}
		return s.cmp(args[0], args[1])
	case "env":
		key, val, ok := strings.Cut(strings.Join(args, " "), "=")
		if neg || !ok || key == "" {
			return fmt.Errorf("usage: env KEY=VALUE")
		}
		s.env[key] = val
		return nil
	}
	return fmt.Errorf("unknown script command %q", verb)
}

func (s *script) exec(neg bool, args []string) error {
	if len(args) == 0 || args[0] != "replaycheck" {
		return fmt.Errorf("exec runs only %q in-process, got %q", "replaycheck", args)
	}
	var stdout, stderr bytes.Buffer
	s.code = cli.Run(context.Background(), args[1:], cli.Env{
		Stdout: &stdout, Stderr: &stderr, Dir: s.dir,
		Getenv: func(key string) string { return s.env[key] },
	})
	s.ran, s.stdout, s.stderr = true, stdout.String(), stderr.String()
	fmt.Fprintf(&s.log, "[exit %d]\n", s.code)
	if s.stdout != "" {
		fmt.Fprintf(&s.log, "[stdout]\n%s", s.stdout)
	}
	if s.stderr != "" {
		fmt.Fprintf(&s.log, "[stderr]\n%s", s.stderr)
	}
	switch {
	case neg && s.code == 0:
		return fmt.Errorf("exited 0, want non-zero")
	case !neg && s.code != 0:
		return fmt.Errorf("exited %d, want 0", s.code)
	}
	return nil
}

func (s *script) output(stream string) (string, error) {
	if !s.ran {
		return "", fmt.Errorf("no exec before %s", stream)
	}
	if stream == "stdout" {
		return s.stdout, nil
	}
	return s.stderr, nil
}

func (s *script) match(stream string, neg bool, pattern string) error {
	out, err := s.output(stream)
	if err != nil {
		return err
	}
	re, err := regexp.Compile("(?m)" + pattern)
	if err != nil {
		return fmt.Errorf("bad regular expression: %w", err)
	}
	switch found := re.MatchString(out); {
	case neg && found:
		return fmt.Errorf("%s matches %q", stream, pattern)
	case !neg && !found:
		return fmt.Errorf("%s does not match %q", stream, pattern)
	}
	return nil
}

func (s *script) cmp(stream, file string) error {
	out, err := s.output(stream)
	if err != nil {
		return err
	}
	want, ok := s.files[filepath.Clean(file)]
	if !ok {
		return fmt.Errorf("no archive file %q", file)
	}
	if diff := cmp.Diff(string(want), out); diff != "" {
		return fmt.Errorf("%s differs from %s (-want +got):\n%s", stream, file, diff)
	}
	return nil
}

// split breaks a script line into words: spaces separate, single quotes group, and a doubled
// single quote inside quotes is a literal one.
func split(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'' && i+1 < len(line) && line[i+1] == '\'':
			cur.WriteByte('\'')
			i++
		case c == '\'':
			quoted, inWord = !quoted, true
		case !quoted && (c == ' ' || c == '\t'):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote")
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	return words, nil
}
