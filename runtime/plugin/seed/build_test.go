package seed_test

import (
	"debug/elf"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/cbuild"
	"github.com/replaycheck/replaycheck/runtime/plugin/seed"
)

// exported lists the functions a shared library defines in its dynamic symbol table.
func exported(path string) []string {
	GinkgoHelper()
	f, err := elf.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	syms, err := f.DynamicSymbols()
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && (elf.ST_BIND(s.Info) == elf.STB_GLOBAL || elf.ST_BIND(s.Info) == elf.STB_WEAK) {
			out = append(out, s.Name)
		}
	}
	return out
}

var _ = Describe("building the plugins", func() {
	It("names the reference first, then the five defects", func() {
		Expect(seed.Names()).To(Equal([]string{"reference", "arena-rollback-on-refusal", "retained-free-before-refuse", "no-capture-watch", "pointer-equality-residency", "no-retained-slot"}))
		Expect(seed.Defects()).To(Equal(seed.Names()[1:]))
	})

	for _, name := range seed.Names() {
		It("exports exactly the ABI's three entry points from "+name+".so", func() {
			Expect(filepath.Base(built.plugins[name])).To(Equal(name + ".so"))
			Expect(exported(built.plugins[name])).To(ConsistOf(seed.Exports()))
		})

		It("compiles "+name+" against include/ with the plain flags, exporting the same three", func() {
			srcs, err := filepath.Glob(filepath.Join("c", "*.c"))
			Expect(err).NotTo(HaveOccurred())
			Expect(srcs).To(ContainElement(filepath.Join("c", "seed.c")))
			for i := range srcs {
				srcs[i], err = filepath.Abs(srcs[i])
				Expect(err).NotTo(HaveOccurred())
			}
			inc, err := filepath.Abs(filepath.Join("..", "..", "..", "include"))
			Expect(err).NotTo(HaveOccurred())
			out := filepath.Join(GinkgoT().TempDir(), name+".so")
			cc := cbuild.Compiler()
			args := append(cc[1:], "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-pthread", "-I"+inc, "-o", out)
			args = append(args, srcs...)
			args = append(args, defines[name]...)
			b, err := exec.Command(cc[0], args...).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), string(b))
			Expect(exported(out)).To(ConsistOf(seed.Exports()))
		})
	}

	It("refuses a plugin it does not know, naming the ones it does", func() {
		_, err := seed.Build(GinkgoT().TempDir(), "no-such-defect")
		Expect(err).To(MatchError(And(ContainSubstring(`no plugin "no-such-defect"`), ContainSubstring("pointer-equality-residency"))))
	})
})

// defines are the -D flags Build passes for each plugin (its own table is unexported), for the
// build against include/.
var defines = map[string][]string{
	"reference":                   nil,
	"arena-rollback-on-refusal":   {"-DRC_SEED_DEFECT_ARENA_ROLLBACK"},
	"retained-free-before-refuse": {"-DRC_SEED_DEFECT_RETAINED_FREE"},
	"no-capture-watch":            {"-DRC_SEED_DEFECT_NO_CAPTURE_WATCH"},
	"pointer-equality-residency":  {"-DRC_SEED_DEFECT_POINTER_EQUALITY"},
	"no-retained-slot":            {"-DRC_SEED_DEFECT_NO_RETAINED_SLOT"},
}
