package fake_test

import (
	"debug/elf"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device/fake"
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
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF && elf.ST_BIND(s.Info) == elf.STB_GLOBAL {
			out = append(out, s.Name)
		}
	}
	return out
}

func soname(path string) string {
	GinkgoHelper()
	f, err := elf.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	names, err := f.DynString(elf.DT_SONAME)
	Expect(err).NotTo(HaveOccurred())
	Expect(names).To(HaveLen(1))
	return names[0]
}

var _ = Describe("building the fakes", func() {
	for _, lib := range fake.Libraries {
		It("exports exactly the "+lib.String()+" entry points, under the platform's soname", func() {
			Expect(soname(built.full[lib])).To(Equal(lib.FileName()))
			Expect(exported(built.full[lib])).To(ConsistOf(lib.Exports()))
			Expect(exported(built.stub[lib])).To(ConsistOf(lib.Exports()), "the stub exports everything")
		})

		It("leaves exactly one export out of the "+lib.String()+" missing-symbol variant", func() {
			var want []string
			for _, s := range lib.Exports() {
				if s != omitted[lib] {
					want = append(want, s)
				}
			}
			Expect(exported(built.missing[lib])).To(ConsistOf(want))
		})
	}

	It("refuses to omit a symbol the library does not export", func() {
		_, err := fake.Build(GinkgoT().TempDir(), fake.CUDA, fake.Variant{Omit: "aclrtMalloc"})
		Expect(err).To(MatchError(ContainSubstring(`does not export "aclrtMalloc"`)))
	})

	It("names variants as directories", func() {
		Expect(fake.Variant{}.String()).To(Equal("full"))
		Expect(fake.Variant{Stub: true}.String()).To(Equal("stub"))
		Expect(fake.Variant{Omit: "cuInit"}.String()).To(Equal("missing-cuInit"))
	})
})
