package seed_test

import (
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/cbuild"
	"github.com/replaycheck/replaycheck/internal/leakcheck"

	"github.com/replaycheck/replaycheck/runtime/plugin/seed"
)

func TestSeed(t *testing.T) {
	RegisterFailHandler(Fail)
	leakcheck.Suite(t)
	RunSpecs(t, "runtime/plugin/seed")
}

// built are the plugins and the test driver BeforeSuite compiles once, in parallel.
var built struct {
	plugins map[string]string // name -> path
	driver  string
}

var _ = BeforeSuite(func() {
	if _, err := exec.LookPath(cbuild.Compiler()[0]); err != nil {
		Skip("no C compiler: " + err.Error())
	}
	dir := GinkgoT().TempDir()
	built.plugins = map[string]string{}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for _, name := range seed.Names() {
		wg.Go(func() {
			p, err := seed.Build(dir, name)
			mu.Lock()
			defer mu.Unlock()
			built.plugins[name] = p
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Go(func() {
		out := filepath.Join(dir, "driver")
		src, _ := filepath.Abs(filepath.Join("testdata", "driver.c"))
		inc, _ := filepath.Abs(filepath.Join("..", "..", "..", "include"))
		cc := cbuild.Compiler()
		args := append(cc[1:], "-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread", "-I"+inc, "-o", out, src, "-ldl")
		b, err := exec.Command(cc[0], args...).CombinedOutput()
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, &buildError{string(b), err})
			return
		}
		built.driver = out
	})
	wg.Wait()
	Expect(errs).To(BeEmpty())
})

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// scenario runs one driver scenario against the named plugin and returns its output.
func scenario(plugin, name string) string {
	GinkgoHelper()
	out, err := exec.Command(built.driver, built.plugins[plugin], name).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "driver %s %s:\n%s", plugin, name, out)
	return string(out)
}
