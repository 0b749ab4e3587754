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
