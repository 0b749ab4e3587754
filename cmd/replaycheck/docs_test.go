package main_test

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/cmd/replaycheck/internal/cli"
	"github.com/replaycheck/replaycheck/harness"
)

// docs/cli.md against the code: every command `replaycheck help` lists, each command's usage line
// and flags with their defaults (as `replaycheck help COMMAND` prints them, from the flag
// definitions), the Ginkgo suite's flags (harness.RegisterFlags), every exit status the usage
// names, and every REPLAYCHECK_* variable the code reads. A flag, variable or command that one
// side has and the other lacks fails the spec, naming it.
var _ = Describe("docs/cli.md", Ordered, cgoNeutral, func() {
	var facts cliFacts
	var doc string
	BeforeAll(func() {
		root := filepath.Join("..", "..")
		data, err := os.ReadFile(filepath.Join(root, "docs", "cli.md"))
		Expect(err).NotTo(HaveOccurred())
		doc = string(data)
		facts = gatherCLIFacts(root)
		Expect(facts.commands).To(ContainElements("run", "watch", "help"), "replaycheck help's command list was not parsed")
		Expect(facts.flags["run"]).To(HaveKey("profile"), "replaycheck help run's flags were not parsed")
		Expect(facts.suiteFlags).To(HaveKey("replaycheck.report"), "the suite's flags were not parsed")
		Expect(facts.exits).To(ContainElements(0, 1, 2), "the usage's exit statuses were not parsed")
		Expect(facts.binaryEnv).To(ContainElement("REPLAYCHECK_PROFILE"), "the binary's variables were not found")
		Expect(facts.allEnv).To(ContainElement("REPLAYCHECK_FAKE_FAIL"), "the repository's variables were not found")
	})

	It("documents every command, flag, default, exit status and variable, and nothing else", func() {
		Expect(checkCLIDoc(doc, facts)).To(BeEmpty())
	})

	// The negative controls: the same check over a page with one thing wrong.
	DescribeTable("finds a page that",
		func(edit func(string) string, want string) {
			changed := edit(doc)
			Expect(changed).NotTo(Equal(doc), "the edit changed nothing")
			Expect(checkCLIDoc(changed, facts)).To(ContainElement(ContainSubstring(want)))
		},
		Entry("lacks a flag", dropLine("| `--resume DIR` |"), "run: --resume is a flag but not in the page"),
		Entry("documents a flag that does not exist", addAfter("| `--resume DIR` |", "| `--resumes DIR` | | no such flag |"),
			"run: --resumes is in the page but not a flag"),
		Entry("has a wrong default", replace("| `--timeout D` | `1m0s` | time limit of one instance |", "| `--timeout D` | `30s` | time limit of one instance |"),
			`run: --timeout: the page says default "30s", the flag "1m0s"`),
		Entry("lacks a command's section", replace("### `replaycheck devices`", "### devices"), "devices: no section"),
		Entry("has a stale usage line", replace("replaycheck measure [flags] [DIR]\n", "replaycheck measure [flags] DIR\n"),
			"measure: the section lacks the usage line"),
		Entry("lacks a command in the list", dropLine("| [`report`]"), "report: a command but not in the page's list"),
		Entry("lacks a suite flag", dropLine("| `-replaycheck.isolate` |"), "suite: -replaycheck.isolate is a flag but not in the page"),
		Entry("lacks an exit status", dropLine("| 143 |"), "exit status 143"),
		Entry("lacks a variable replaycheck reads", dropLine("| `REPLAYCHECK_CUDA_LIB` |"), "REPLAYCHECK_CUDA_LIB"),
		Entry("lacks a variable of the tests", dropLine("| `REPLAYCHECK_SCREENSHOTS` |"), "REPLAYCHECK_SCREENSHOTS"),
		Entry("names a variable nothing reads", addAfter("| `REPLAYCHECK_SEED` |", "| `REPLAYCHECK"+"_SEEDS` | nothing |"), "REPLAYCHECK"+"_SEEDS"),
		Entry("puts a test's variable among replaycheck's", addAfter("| `REPLAYCHECK_SEED` |", "| `REPLAYCHECK_HARDWARE` | x |"),
			"REPLAYCHECK_HARDWARE is under \"Read by replaycheck\""),
	)
})

func dropLine(prefix string) func(string) string {
	return func(doc string) string {
		var out []string
		for _, l := range strings.Split(doc, "\n") {
			if !strings.HasPrefix(l, prefix) {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
}

func addAfter(prefix, line string) func(string) string {
	return func(doc string) string {
		var out []string
		for _, l := range strings.Split(doc, "\n") {
			out = append(out, l)
			if strings.HasPrefix(l, prefix) {
				out = append(out, line)
			}
		}
		return strings.Join(out, "\n")
	}
}

func replace(old, new string) func(string) string {
	return func(doc string) string { return strings.Replace(doc, old, new, 1) }
}

// cliFacts is what the code says: the commands, their usage lines and flags (name to the default
// help prints, "" for none), the suite's flags, the exit statuses and the variables.
type cliFacts struct {
	commands   []string
	usage      map[string]string
	flags      map[string]map[string]string
	suiteFlags map[string]string
	exits      []int
	binaryEnv  []string // REPLAYCHECK_* in the non-test code the replaycheck binary is built from
	allEnv     []string // REPLAYCHECK_* anywhere in the repository's Go and C code, tests included
}

// envLiteral is a variable's name at the start of a Go or C string literal ("NAME" or "NAME=...").
var envLiteral = regexp.MustCompile(`"(REPLAYCHECK_[A-Z0-9_]*[A-Z0-9])`)

func gatherCLIFacts(root string) cliFacts {
	GinkgoHelper()
	f := cliFacts{usage: map[string]string{}, flags: map[string]map[string]string{}}
	// The defaults help prints come from the environment's REPLAYCHECK_*: without them, as documented.
	for _, kv := range os.Environ() {
		if key, value, _ := strings.Cut(kv, "="); strings.HasPrefix(key, "REPLAYCHECK_") {
			Expect(os.Unsetenv(key)).To(Succeed())
			DeferCleanup(os.Setenv, key, value)
		}
	}
	help := func(args ...string) string {
		GinkgoHelper()
		var stdout, stderr bytes.Buffer
		Expect(cli.Main(append([]string{"help"}, args...), &stdout, &stderr)).To(Equal(0), stderr.String())
		return stdout.String()
	}
	top := help()
	_, list, _ := strings.Cut(top, "\nCommands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	for _, l := range strings.Split(list, "\n") {
		if fields := strings.Fields(l); len(fields) > 0 {
			f.commands = append(f.commands, fields[0])
		}
	}
	_, exits, _ := strings.Cut(top, "Exit status:")
	for _, m := range regexp.MustCompile(`\b\d+\b`).FindAllString(exits, -1) {
		n, _ := strconv.Atoi(m)
		if !slices.Contains(f.exits, n) {
			f.exits = append(f.exits, n)
		}
	}
	for _, name := range f.commands {
		if name == "help" {
			continue
		}
		out := help(name)
		first, _, _ := strings.Cut(out, "\n")
		f.usage[name] = strings.TrimPrefix(first, "Usage: ")
		_, flags, _ := strings.Cut(out, "\nFlags:\n")
		f.flags[name] = parseDefaults(flags)
	}

	suite := flag.NewFlagSet("suite", flag.ContinueOnError)
	harness.RegisterFlags(suite)
	var defaults bytes.Buffer
	suite.SetOutput(&defaults)
	suite.PrintDefaults()
	f.suiteFlags = parseDefaults(defaults.String())

	// The packages of the module the binary links, with cgo as a device host builds it.
	goList := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if .Main}}{{$.Dir}}{{end}}{{end}}", "./cmd/replaycheck")
	goList.Dir = root
	goList.Env = append(os.Environ(), "CGO_ENABLED=1")
	goList.Stderr = GinkgoWriter
	dirs, err := goList.Output()
	Expect(err).NotTo(HaveOccurred())
	for _, dir := range strings.Fields(string(dirs)) {
		files, err := os.ReadDir(dir)
		Expect(err).NotTo(HaveOccurred())
		for _, file := range files {
			if n := file.Name(); !strings.HasSuffix(n, "_test.go") && (strings.HasSuffix(n, ".go") || strings.HasSuffix(n, ".c")) {
				f.binaryEnv = addEnv(f.binaryEnv, filepath.Join(dir, n))
			}
		}
	}
	Expect(filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || slices.Contains([]string{"bin", "build"}, d.Name())) {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".c")) {
			f.allEnv = addEnv(f.allEnv, path)
		}
		return nil
	})).To(Succeed())
	return f
}

func addEnv(vars []string, file string) []string {
	GinkgoHelper()
	data, err := os.ReadFile(file)
	Expect(err).NotTo(HaveOccurred())
	for _, m := range envLiteral.FindAllSubmatch(data, -1) {
		if v := string(m[1]); !slices.Contains(vars, v) {
			vars = append(vars, v)
		}
	}
	return vars
}

// defaultSuffix is the default flag.PrintDefaults appends to a flag's usage.
var defaultSuffix = regexp.MustCompile(`\(default ("(?:[^"\\]|\\.)*"|[^()"]*)\)$`)

// parseDefaults reads flag.PrintDefaults' output: each flag's name and the default it prints ("" for
// none).
func parseDefaults(text string) map[string]string {
	GinkgoHelper()
	flags := map[string]string{}
	var name string
	var usage []string
	flush := func() {
		if name == "" {
			return
		}
		def := ""
		if m := defaultSuffix.FindStringSubmatch(strings.Join(usage, "\n")); m != nil {
			def = m[1]
			if strings.HasPrefix(def, `"`) {
				var err error
				def, err = strconv.Unquote(def)
				Expect(err).NotTo(HaveOccurred())
			}
		}
		flags[name] = def
	}
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "  -"):
			flush()
			head, rest, _ := strings.Cut(strings.TrimPrefix(l, "  -"), "\t")
			name, _, _ = strings.Cut(head, " ")
			usage = []string{rest}
		case strings.HasPrefix(l, "    \t"):
			usage = append(usage, strings.TrimPrefix(l, "    \t"))
		}
	}
	flush()
	return flags
}

// docSection is the text under the heading line that starts with heading, up to the next heading
// of its level or above; ok is false when there is none.
func docSection(doc, heading string) (string, bool) {
	level := strings.Index(heading, " ")
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, heading) {
			continue
		}
		var body []string
		for _, l := range lines[i+1:] {
			if hashes := len(l) - len(strings.TrimLeft(l, "#")); hashes > 0 && hashes <= level && strings.HasPrefix(l[hashes:], " ") {
				break
			}
			body = append(body, l)
		}
		return strings.Join(body, "\n"), true
	}
	return "", false
}

// tableRows is the cells of each table row in text whose first cell starts with prefix; a
// backslash-escaped | stays in its cell.
func tableRows(text, prefix string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, "| "+prefix) {
			continue
		}
		l = strings.ReplaceAll(strings.Trim(l, "|"), `\|`, "\x00")
		var cells []string
		for _, c := range strings.Split(l, "|") {
			cells = append(cells, strings.TrimSpace(strings.ReplaceAll(c, "\x00", "|")))
		}
		rows = append(rows, cells)
	}
	return rows
}

// docFlags is the flags of the flag tables in text (first cell "`--name VALUE`" or "`-name`"), by
// name with prefix taken off, to their default cell without backticks.
func docFlags(text, prefix string) map[string]string {
	flags := map[string]string{}
	for _, row := range tableRows(text, "`-") {
		name, _, _ := strings.Cut(strings.Trim(row[0], "`"), " ")
		name = strings.TrimPrefix(strings.TrimLeft(name, "-"), prefix)
		def := ""
		if len(row) > 1 {
			def = strings.Trim(row[1], "`")
		}
		flags[name] = def
	}
	return flags
}

// compareFlags says how the page's flags (doc) differ from the code's (code).
func compareFlags(who, dash string, doc, code map[string]string) []string {
	var problems []string
	for _, name := range sortedKeys(code) {
		shown := dash + name
		if len(name) == 1 {
			shown = "-" + name
		}
		docDef, ok := doc[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: %s is a flag but not in the page", who, shown))
		case docDef != code[name]:
			problems = append(problems, fmt.Sprintf("%s: %s: the page says default %q, the flag %q", who, shown, docDef, code[name]))
		}
	}
	for _, name := range sortedKeys(doc) {
		if _, ok := code[name]; !ok {
			problems = append(problems, fmt.Sprintf("%s: %s%s is in the page but not a flag", who, dash, name))
		}
	}
	return problems
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// docEnv is the variables of the tables under each "### Read by" heading, by heading.
func docEnv(doc string) map[string][]string {
	env := map[string][]string{}
	section, _ := docSection(doc, "## Environment")
	for _, part := range strings.Split(section, "\n### ")[1:] {
		heading, body, _ := strings.Cut(part, "\n")
		for _, row := range tableRows(body, "`REPLAYCHECK_") {
			env[heading] = append(env[heading], strings.Trim(row[0], "`"))
		}
	}
	return env
}

// checkCLIDoc lists every way doc differs from facts; none when it is true.
func checkCLIDoc(doc string, facts cliFacts) []string {
	var problems []string
	say := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }

	list, _ := docSection(doc, "## Commands")
	list, _, _ = strings.Cut(list, "\n#") // the table before the commands' own sections
	var listed []string
	for _, row := range tableRows(list, "") {
		name := strings.TrimPrefix(row[0], "[")
		if strings.HasPrefix(name, "`") {
			listed = append(listed, strings.Split(name, "`")[1])
		}
	}
	for _, name := range facts.commands {
		if !slices.Contains(listed, name) {
			say("%s: a command but not in the page's list", name)
		}
		if name == "help" {
			continue
		}
		section, ok := docSection(doc, "### `replaycheck "+name+"`")
		if !ok {
			say("%s: no section ### `replaycheck %s`", name, name)
			continue
		}
		if !strings.Contains(section, "```\n"+facts.usage[name]+"\n```") {
			say("%s: the section lacks the usage line %q", name, facts.usage[name])
		}
		problems = append(problems, compareFlags(name, "--", docFlags(section, ""), facts.flags[name])...)
	}
	for _, name := range listed {
		if !slices.Contains(facts.commands, name) {
			say("%s: in the page's list but not a command", name)
		}
	}

	suite, ok := docSection(doc, "## The Ginkgo suite's flags")
	if !ok {
		say("suite: no section ## The Ginkgo suite's flags")
	}
	problems = append(problems, compareFlags("suite", "-", docFlags(suite, ""), facts.suiteFlags)...)

	exits, _ := docSection(doc, "## Exit status")
	var documented []int
	for _, row := range tableRows(exits, "") {
		if n, err := strconv.Atoi(row[0]); err == nil {
			documented = append(documented, n)
		}
	}
	for _, n := range facts.exits {
		if !slices.Contains(documented, n) {
			say("exit status %d: in replaycheck help's usage but not in the page's table", n)
		}
	}
	for _, n := range documented {
		if !slices.Contains(facts.exits, n) {
			say("exit status %d: in the page's table but not in replaycheck help's usage", n)
		}
	}

	env := docEnv(doc)
	const binary = "Read by replaycheck"
	for _, v := range facts.binaryEnv {
		if !slices.Contains(env[binary], v) {
			say("%s: the replaycheck binary's code reads it, but it is not under %q", v, binary)
		}
	}
	for _, v := range env[binary] {
		if !slices.Contains(facts.binaryEnv, v) {
			say("%s is under %q, but the binary's code does not name it", v, binary)
		}
	}
	var all []string
	for _, vars := range env {
		all = append(all, vars...)
	}
	for _, v := range facts.allEnv {
		if !slices.Contains(all, v) {
			say("%s: the code names it, but no table of ## Environment does", v)
		}
	}
	for _, v := range all {
		if !slices.Contains(facts.allEnv, v) {
			say("%s: in ## Environment, but no code names it", v)
		}
	}
	return problems
}

// The README: at most 200 lines, every link inside the repository and landing (a file, and a
// heading of it for an anchor), and a layout table that names every package and every command.
var _ = Describe("README.md", Ordered, cgoNeutral, func() {
	root := filepath.Join("..", "..")
	var readme string
	var packages []string
	BeforeAll(func() {
		data, err := os.ReadFile(filepath.Join(root, "README.md"))
		Expect(err).NotTo(HaveOccurred())
		readme = string(data)
		goList := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
		goList.Dir = root
		goList.Stderr = GinkgoWriter
		out, err := goList.Output()
		Expect(err).NotTo(HaveOccurred())
		abs, err := filepath.Abs(root)
		Expect(err).NotTo(HaveOccurred())
		for _, dir := range strings.Fields(string(out)) {
			rel, err := filepath.Rel(abs, dir)
			Expect(err).NotTo(HaveOccurred())
			packages = append(packages, filepath.ToSlash(rel))
		}
		Expect(packages).To(ContainElements("capture", "cmd/replaycheck", "watch/interpose"))
	})

	It("is at most 200 lines", func() {
		Expect(strings.Count(readme, "\n")).To(BeNumerically("<=", 200))
	})

	It("links only inside the repository, to files and headings that exist", func() {
		for _, page := range []string{"README.md", "docs/cli.md", "docs/guide.md"} {
			Expect(checkLinks(root, page)).To(BeEmpty(), page)
		}
	})

	It("has a layout table naming every package and every command", func() {
		Expect(checkLayout(readme, packages, gatherCommands(), root)).To(BeEmpty())
	})

	DescribeTable("finds a README that",
		func(edit func(string) string, want string) {
			changed := edit(readme)
			Expect(changed).NotTo(Equal(readme), "the edit changed nothing")
			dir := GinkgoT().TempDir()
			Expect(os.MkdirAll(filepath.Join(dir, "docs"), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, "README.md"), []byte(changed), 0o644)).To(Succeed())
			for _, f := range []string{"docs/cli.md", "docs/guide.md", "docs/performance.md", "docs/watch.md"} {
				data, err := os.ReadFile(filepath.Join(root, f))
				Expect(err).NotTo(HaveOccurred())
				Expect(os.WriteFile(filepath.Join(dir, f), data, 0o644)).To(Succeed())
			}
			problems := append(checkLinks(dir, "README.md"), checkLayout(changed, packages, gatherCommands(), root)...)
			Expect(problems).To(ContainElement(ContainSubstring(want)))
		},
		Entry("links outside the repository", addAfter("## Watch a program", "See [x](https://example.com/)."), "https://example.com/: outside the repository"),
		Entry("links to a missing file", addAfter("## Watch a program", "See [x](docs/nope.md)."), "docs/nope.md: no such file"),
		Entry("links to a missing heading", replace("docs/performance.md#make-test-and-make-check", "docs/performance.md#make-tests"),
			"docs/performance.md#make-tests: no such heading"),
		Entry("leaves a package out of the layout", dropLine("| `run/proc` |"), "run/proc: a package the layout table does not name"),
		Entry("names a path that does not exist", addAfter("| `run/proc` |", "| `run/nope` | x |"), "run/nope: in the layout table but not in the repository"),
		Entry("leaves a command out", replace("`devices`, `watch`, `version`", "`watch`, `version`"), "devices: a command the layout table's cmd/replaycheck row does not name"),
	)
})

// gatherCommands is replaycheck help's command list.
func gatherCommands() []string {
	GinkgoHelper()
	var stdout, stderr bytes.Buffer
	Expect(cli.Main([]string{"help"}, &stdout, &stderr)).To(Equal(0), stderr.String())
	_, list, _ := strings.Cut(stdout.String(), "\nCommands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	var names []string
	for _, l := range strings.Split(list, "\n") {
		if fields := strings.Fields(l); len(fields) > 0 {
			names = append(names, fields[0])
		}
	}
	return names
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// checkLinks lists the links of page (relative to root) that leave the repository or land nowhere.
func checkLinks(root, page string) []string {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(root, page))
	Expect(err).NotTo(HaveOccurred())
	var problems []string
	for _, m := range mdLink.FindAllStringSubmatch(string(data), -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			problems = append(problems, target+": outside the repository")
			continue
		}
		file, anchor, _ := strings.Cut(target, "#")
		path := filepath.Join(root, page)
		if file != "" {
			path = filepath.Join(filepath.Dir(path), file)
		}
		body, err := os.ReadFile(path)
		if err != nil {
			if st, serr := os.Stat(path); serr == nil && st.IsDir() && anchor == "" {
				continue
			}
			problems = append(problems, target+": no such file")
			continue
		}
		if anchor != "" && !slices.Contains(headingSlugs(string(body)), anchor) {
			problems = append(problems, target+": no such heading")
		}
	}
	return problems
}

// headingSlugs is the anchors GitHub gives the headings of a Markdown file.
func headingSlugs(md string) []string {
	var slugs []string
	inCode := false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(l, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		slugs = append(slugs, b.String())
	}
	return slugs
}

// checkLayout lists the packages the README's layout table leaves out, the paths it names that do
// not exist, and the commands its cmd/replaycheck row leaves out.
func checkLayout(readme string, packages, commands []string, root string) []string {
	var problems []string
	layout, ok := docSection(readme, "## Layout")
	if !ok {
		return []string{"no ## Layout section"}
	}
	var named []string
	for _, row := range tableRows(layout, "`") {
		for _, part := range strings.Split(row[0], ",") {
			path := strings.TrimSuffix(strings.Trim(strings.TrimSpace(part), "`"), "/")
			named = append(named, path)
			if _, err := os.Stat(filepath.Join(root, path)); err != nil {
				problems = append(problems, path+": in the layout table but not in the repository")
			}
		}
		if strings.Trim(row[0], "`") == "cmd/replaycheck" {
			for _, c := range commands {
				if !strings.Contains(row[1], "`"+c+"`") {
					problems = append(problems, c+": a command the layout table's cmd/replaycheck row does not name")
				}
			}
		}
	}
	for _, p := range packages {
		if !slices.Contains(named, p) {
			problems = append(problems, p+": a package the layout table does not name")
		}
	}
	return problems
}
