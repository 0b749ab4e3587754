package cbuild_test

import (
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/cbuild"
)

func TestCbuild(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "cbuild")
}

// lib is a library of one source file, answer.c, with body as its text.
func lib(dir, body string) cbuild.Library {
	return cbuild.Library{What: "test: build answer", Dir: dir, Name: "libanswer.so",
		Sources: map[string][]byte{"c/answer.c": []byte(body)}, Args: []string{"-DANSWER=42", "c/answer.c"}}
}

const answer = `__attribute__((visibility("default"))) int answer(void) { return ANSWER; }
int hidden(void) { return 1; }
`

// sources lists the source directories left in dir.
func sources(dir string) []string {
	GinkgoHelper()
	left, err := filepath.Glob(filepath.Join(dir, "src-*"))
	Expect(err).NotTo(HaveOccurred())
	return left
}

var _ = Describe("building a shared library", func() {
	BeforeEach(func() {
		if _, err := exec.LookPath(cbuild.Compiler()[0]); err != nil {
			Skip("no C compiler: " + err.Error())
		}
	})

	It("compiles the sources with the defines and exports only what they mark visible, under its soname, and removes the sources", func() {
		dir := GinkgoT().TempDir()
		out, err := cbuild.Build(lib(dir, answer))
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(filepath.Join(dir, "libanswer.so")))
		f, err := elf.Open(out)
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		names, err := f.DynString(elf.DT_SONAME)
		Expect(err).NotTo(HaveOccurred())
		Expect(names).To(Equal([]string{"libanswer.so"}))
		syms, err := f.DynamicSymbols()
		Expect(err).NotTo(HaveOccurred())
		var defined []string
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF {
				defined = append(defined, s.Name)
			}
		}
		Expect(defined).To(ConsistOf("answer"))
		Expect(sources(dir)).To(BeEmpty())
	})

	It("fails on a warning, keeps the sources, and says where they are, the command and what the compiler printed", func() {
		dir := GinkgoT().TempDir()
		_, err := cbuild.Build(lib(dir, answer+"int unused(int x) { int y; return x; }\n"))
		Expect(err).To(HaveOccurred())
		left := sources(dir)
		Expect(left).To(HaveLen(1))
		Expect(filepath.Join(left[0], "c", "answer.c")).To(BeARegularFile())
		Expect(err.Error()).To(And(HavePrefix("test: build answer in "+left[0]+": "), ContainSubstring("-Werror"),
			ContainSubstring("-o "+filepath.Join(dir, "libanswer.so")), ContainSubstring("unused variable")))
		Expect(filepath.Join(dir, "libanswer.so")).NotTo(BeAnExistingFile())
	})

	It("takes the compiler and its leading arguments from $CC", func() {
		GinkgoT().Setenv("CC", "no-such-compiler -m64")
		Expect(cbuild.Compiler()).To(Equal([]string{"no-such-compiler", "-m64"}))
		_, err := cbuild.Build(lib(GinkgoT().TempDir(), answer))
		Expect(err).To(MatchError(ContainSubstring("no-such-compiler -m64 -std=c11")))
		GinkgoT().Setenv("CC", " ")
		Expect(cbuild.Compiler()).To(Equal([]string{"cc"}))
	})

	It("names the build in an error before the compiler runs", func() {
		file := filepath.Join(GinkgoT().TempDir(), "file")
		Expect(os.WriteFile(file, nil, 0o644)).To(Succeed())
		_, err := cbuild.Build(lib(filepath.Join(file, "under"), answer))
		Expect(err).To(MatchError(HavePrefix("test: build answer: ")))
	})
})

var _ = Describe("building several", func() {
	It("runs every build and reports each failure, then how many of them failed", func() {
		ran := make([]bool, 5)
		err := cbuild.Each(5, func(i int) error {
			ran[i] = true
			if i%2 == 1 {
				return errors.New("build " + string(rune('0'+i)) + " failed")
			}
			return nil
		})
		Expect(ran).To(HaveEach(BeTrue()))
		Expect(err).To(MatchError("build 1 failed\nbuild 3 failed\n2 of 5 builds failed"))
		Expect(cbuild.Each(3, func(int) error { return nil })).To(Succeed())
	})
})
