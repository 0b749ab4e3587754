//go:build cgo

package dl_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"unsafe"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/cbuild"
	"github.com/replaycheck/replaycheck/internal/dl"
)

// library compiles C source into a shared library in a fresh directory.
func library(name, source string) string {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	src := filepath.Join(dir, "lib.c")
	Expect(os.WriteFile(src, []byte(source), 0o644)).To(Succeed())
	out := filepath.Join(dir, name)
	cc := cbuild.Compiler()
	cmd := exec.Command(cc[0], append(cc[1:], "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o", out, src)...)
	msg, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(msg))
	return out
}

const source = `
int answer(void) { return 42; }
int answer_v2(void) { return 43; }
int other(void) { return 7; }
`

var _ = Describe("a library", func() {
	var lib *dl.Library
	BeforeEach(func() {
		var err error
		lib, err = dl.Open(library("libfake.so", source))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = lib.Close() })
	})

	It("resolves a table: versioned names in order, optional ones left nil", func() {
		var answer, other, gone unsafe.Pointer
		Expect(lib.Resolve([]dl.Symbol{
			{Names: []string{"answer_v2", "answer"}, Slot: &answer},
			dl.Sym("other", &other),
			{Names: []string{"not_here"}, Slot: &gone, Optional: true},
		})).To(Succeed())
		v2, err := lib.Lookup("answer_v2")
		Expect(err).NotTo(HaveOccurred())
		Expect(answer).To(Equal(v2), "the suffixed export wins over the base name")
		Expect(other != nil).To(BeTrue())
		Expect(gone == nil).To(BeTrue(), "an optional symbol that is missing leaves its slot nil")
	})

	It("fails the whole table on a missing required symbol, naming every one", func() {
		var a, b, c unsafe.Pointer
		err := lib.Resolve([]dl.Symbol{dl.Sym("answer", &a), dl.Sym("cuMissing", &b), dl.Sym("aclMissing", &c)})
		var missing *dl.MissingError
		Expect(err).To(BeAssignableToTypeOf(missing))
		Expect(err.Error()).To(ContainSubstring(`symbols "cuMissing", "aclMissing" not found`))
		Expect(err.Error()).To(ContainSubstring(lib.Path()))
		Expect(a != nil).To(BeTrue(), "the symbols found are filled all the same")
	})

	It("is closed once", func() {
		Expect(lib.Close()).To(Succeed())
		Expect(lib.Close()).To(MatchError(ContainSubstring("already closed")))
		_, err := lib.Lookup("answer")
		Expect(err).To(HaveOccurred())
	})
})

var _ = Describe("OpenFirst", func() {
	It("opens the first path that loads and reports every attempt", func() {
		good := library("libgood.so", source)
		lib, tried, err := dl.OpenFirst([]string{"/nonexistent/libascendcl.so", good, "/also/not/here.so"})
		Expect(err).NotTo(HaveOccurred())
		defer lib.Close()
		Expect(lib.Path()).To(Equal(good))
		Expect(tried).To(HaveLen(2))
		Expect(tried[0].Err).To(ContainSubstring("/nonexistent/libascendcl.so"))
		Expect(tried[1]).To(Equal(dl.Attempt{Path: good}))
	})

	It("lists every attempt when none loads", func() {
		_, tried, err := dl.OpenFirst([]string{"/a/lib.so", "/b/lib.so"})
		Expect(err).To(MatchError(SatisfyAll(ContainSubstring("/a/lib.so"), ContainSubstring("/b/lib.so"))))
		Expect(tried).To(HaveLen(2))
	})
})

var _ = Describe("OpenFirst's attempts", func() {
	It("tell an absent file by os.Stat, and a file that is there but fails to load apart", func() {
		dir := GinkgoT().TempDir()
		// A library that needs another, which is then removed: the file is there, its dependency
		// is not, and the loader's error says "No such file or directory" all the same.
		dep := library("libdep.so", "int dep(void) { return 1; }\n")
		needs := filepath.Join(dir, "libneeds.so")
		src := filepath.Join(dir, "needs.c")
		Expect(os.WriteFile(src, []byte("int dep(void);\nint needs(void) { return dep(); }\n"), 0o644)).To(Succeed())
		cc := cbuild.Compiler()
		msg, err := exec.Command(cc[0], append(cc[1:], "-shared", "-fPIC", "-o", needs, src, "-L"+filepath.Dir(dep), "-ldep")...).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(msg))
		Expect(os.Remove(dep)).To(Succeed())
		junk := filepath.Join(dir, "libjunk.so")
		Expect(os.WriteFile(junk, []byte("not an ELF file"), 0o644)).To(Succeed())
		gone := filepath.Join(dir, "libgone.so")

		_, tried, err := dl.OpenFirst([]string{gone, "libreplaycheck-not-installed.so.1", needs, junk})
		Expect(err).To(HaveOccurred())
		Expect(tried).To(HaveLen(4))
		Expect(tried[0].Absent).To(BeTrue(), "no file at the path: %s", tried[0].Err)
		Expect(tried[1].Absent).To(BeTrue(), "a bare name the loader's search did not find: %s", tried[1].Err)
		Expect(tried[2].Absent).To(BeFalse(), "the file is there; its dependency is not: %s", tried[2].Err)
		Expect(tried[2].Err).To(ContainSubstring("libdep.so"))
		Expect(tried[3].Absent).To(BeFalse(), "the file is there but is no library: %s", tried[3].Err)
		Expect(err.Error()).To(HavePrefix("no library could be opened: not found: " + gone + ", libreplaycheck-not-installed.so.1; " + needs + ": "))
		Expect(err.Error()).To(ContainSubstring("; " + junk + ": "))
	})
})
