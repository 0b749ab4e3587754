package watch_test

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/cbuild"
	"github.com/replaycheck/replaycheck/watch"
)

// probeC is a tiny library: an exported function and a static one (in .symtab only), each on a
// line of its own so a return address into it resolves to that line.
const probeC = `/* line 1 */
__attribute__((visibility("default"), noinline)) int watch_probe_exported(int a) { return a * 3 + 1; }
static __attribute__((noinline, used)) int watch_probe_static(int a) { return (a ^ 0x55) * 7; }
__attribute__((visibility("default"))) int watch_probe_calls(int a) { return watch_probe_static(a) + 1; }
`

// Lines of probeC.
const (
	exportedLine = 2
	staticLine   = 3
)

// symbolAt is the address and size of a function symbol of the ELF file at path.
func symbolAt(path, name string) (uint64, uint64) {
	GinkgoHelper()
	f, err := elf.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	syms, err := f.Symbols()
	Expect(err).NotTo(HaveOccurred())
	for _, s := range syms {
		if s.Name == name {
			return s.Value, s.Size
		}
	}
	Fail("no symbol " + name + " in " + path)
	return 0, 0
}

func buildProbe(dir string, extra ...string) string {
	GinkgoHelper()
	lib, err := cbuild.Build(cbuild.Library{What: "watch test: probe library", Dir: dir, Name: "libprobe.so",
		Sources: map[string][]byte{"probe.c": []byte(probeC)}, Args: append([]string{"-g", "probe.c"}, extra...)})
	Expect(err).NotTo(HaveOccurred())
	return lib
}

var _ = Describe("Symbolizer", func() {
	var dir, lib string
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		lib = buildProbe(dir)
	})

	// frame is a return address just after offset off in lib, loaded at base.
	frame := func(obj string, off uint64) watch.Frame {
		const base = 0x7f3300000000
		return watch.Frame{PC: fmt.Sprintf("%#x", base+off+1), Object: obj, Offset: fmt.Sprintf("%#x", off+1)}
	}

	It("names a shared object's functions, static ones included, with file and line", func() {
		s := watch.NewSymbolizer()
		for _, c := range []struct {
			name string
			line int
		}{{"watch_probe_exported", exportedLine}, {"watch_probe_static", staticLine}} {
			addr, size := symbolAt(lib, c.name)
			Expect(size).To(BeNumerically(">", 1))
			f := s.Frame(frame(lib, addr))
			Expect(f.Function).To(Equal(c.name))
			Expect(filepath.Base(f.File)).To(Equal("probe.c"))
			Expect(f.Line).To(Equal(c.line))
			// The function's last byte is still the function.
			Expect(s.Frame(frame(lib, addr+size-2)).Function).To(Equal(c.name))
		}
	})

	It("keeps the interposer's symbol and leaves what it cannot read as it was", func() {
		s := watch.NewSymbolizer()
		addr, _ := symbolAt(lib, "watch_probe_exported")
		f := frame(lib, addr)
		f.Function = "from_dladdr"
		Expect(s.Frame(f).Function).To(Equal("from_dladdr"))
		Expect(s.Frame(f).Line).To(Equal(exportedLine))

		missing := frame(filepath.Join(dir, "gone.so"), addr)
		Expect(s.Frame(missing)).To(Equal(missing))
		text := frame(filepath.Join(dir, "notelf.so"), addr)
		Expect(os.WriteFile(filepath.Join(dir, "notelf.so"), []byte("not an object"), 0o644)).To(Succeed())
		Expect(s.Frame(text)).To(Equal(text))
	})

	It("keeps what it read of an object after the file is gone", func() {
		s := watch.NewSymbolizer()
		addr, _ := symbolAt(lib, "watch_probe_static")
		Expect(s.Frame(frame(lib, addr)).Function).To(Equal("watch_probe_static"))
		Expect(os.Remove(lib)).To(Succeed())
		Expect(s.Frame(frame(lib, addr)).Function).To(Equal("watch_probe_static"))
	})

	It("falls back to .dynsym in a stripped object, without lines", func() {
		stripped := buildProbe(filepath.Join(dir, "stripped"), "-s")
		addr, _ := symbolAt(lib, "watch_probe_exported") // the same code, the same layout
		s := watch.NewSymbolizer()
		f := s.Frame(frame(stripped, addr))
		Expect(f.Function).To(Equal("watch_probe_exported"))
		Expect(f.Line).To(BeZero())
	})

	It("uses the PC itself in an executable that is not position independent", func() {
		src := filepath.Join(dir, "main.c")
		Expect(os.WriteFile(src, []byte(probeC+"int main(void) { return watch_probe_calls(2) == 0; }\n"), 0o644)).To(Succeed())
		prog := filepath.Join(dir, "prog")
		cc := cbuild.Compiler()
		out, err := exec.Command(cc[0], append(cc[1:], "-g", "-O1", "-no-pie", "-o", prog, src)...).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		addr, _ := symbolAt(prog, "watch_probe_static")
		f := watch.NewSymbolizer().Frame(watch.Frame{PC: fmt.Sprintf("%#x", addr+1), Object: prog, Offset: "0x1"})
		Expect(f.Function).To(Equal("watch_probe_static"))
		Expect(f.Line).To(Equal(staticLine))
	})

	It("names the frames of a checker's findings, which suppressions then match by function", func() {
		addr, _ := symbolAt(lib, "watch_probe_static")
		const base = 0x7f3300000000
		text := strings.ReplaceAll(stream("stale-freed.events"), "stack pid=100 id=4 frames=0x401040,0x400000,/usr/bin/prog,",
			fmt.Sprintf("stack pid=100 id=4 frames=%#x,%#x,%s,", base+addr+1, base, lib))
		sum, _ := runText(text, watch.Options{Symbolizer: watch.NewSymbolizer()})
		Expect(sum.Findings[0].Kind).To(Equal(watch.FreeCaptured))
		top := sum.Findings[0].Stacks[0].Frames[0]
		Expect(top.Function).To(Equal("watch_probe_static"))
		Expect(top.Line).To(Equal(staticLine))

		sup, err := watch.ParseSuppressions("s", []byte("{\n s\n watch:free-captured\n fun:watch_probe_*\n}\n"))
		Expect(err).NotTo(HaveOccurred())
		sum, _ = runText(text, watch.Options{Symbolizer: watch.NewSymbolizer(), Suppress: sup})
		Expect(kindsOf(sum.Findings)).To(Equal([]watch.Kind{watch.StaleReplay}))
		Expect(sum.Suppressed).To(Equal(map[string]int{"s": 1}))
		// Without the symbolizer the frame has no function, and the suppression does not match.
		sum, _ = runText(text, watch.Options{Suppress: sup})
		Expect(kindsOf(sum.Findings)).To(Equal([]watch.Kind{watch.FreeCaptured, watch.StaleReplay}))
	})
})
