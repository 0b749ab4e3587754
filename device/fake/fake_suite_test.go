package fake_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/cbuild"
	"github.com/replaycheck/replaycheck/internal/leakcheck"

	"github.com/replaycheck/replaycheck/device/fake"
)

func TestFake(t *testing.T) {
	RegisterFailHandler(Fail)
	leakcheck.Suite(t)
	RunSpecs(t, "device/fake")
}

// built are the libraries and test drivers BeforeSuite compiles once, in parallel.
var built struct {
	full, stub, missing map[fake.Library]string
	driver              map[fake.Library]string
}

// omitted is the export each library's missing-symbol build lacks.
var omitted = map[fake.Library]string{fake.ACL: "aclrtMalloc", fake.CUDA: "cuMemAlloc_v2"}

var _ = BeforeSuite(func() {
	if _, err := exec.LookPath(cbuild.Compiler()[0]); err != nil {
		Skip("no C compiler: " + err.Error())
	}
	dir := GinkgoT().TempDir()
	built.full, built.stub, built.missing, built.driver = map[fake.Library]string{}, map[fake.Library]string{}, map[fake.Library]string{}, map[fake.Library]string{}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	run := func(f func() error) {
		wg.Go(func() {
			if err := f(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	for _, lib := range fake.Libraries {
		for name, v := range map[string]fake.Variant{"full": {}, "stub": {Stub: true}, "missing": {Omit: omitted[lib]}} {
			run(func() error {
				p, err := fake.Build(filepath.Join(dir, lib.String(), name), lib, v)
				mu.Lock()
				defer mu.Unlock()
				map[string]map[fake.Library]string{"full": built.full, "stub": built.stub, "missing": built.missing}[name][lib] = p
				return err
			})
		}
		run(func() error {
			out := filepath.Join(dir, "test_"+lib.String())
			src, _ := filepath.Abs(filepath.Join("testdata", "test_"+lib.String()+".c"))
			cc := cbuild.Compiler()
			args := append(cc[1:], "-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread", "-rdynamic", "-o", out, src, "-ldl")
			if b, err := exec.Command(cc[0], args...).CombinedOutput(); err != nil {
				return &buildError{string(b), err}
			}
			mu.Lock()
			built.driver[lib] = out
			mu.Unlock()
			return nil
		})
	}
	wg.Wait()
	Expect(errs).To(BeEmpty())
})

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// scenario runs a test driver scenario against a library with extra environment.
func scenario(lib fake.Library, path, name string, env ...string) (string, *os.ProcessState) {
	GinkgoHelper()
	cmd := exec.Command(built.driver[lib], path, name)
	cmd.Env = append(os.Environ(), env...)
	out, _ := cmd.CombinedOutput()
	return string(out), cmd.ProcessState
}
