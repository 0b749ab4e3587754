package cli

import (
	"bytes"
	"errors"
	"path/filepath"
	"runtime"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// fullWriter fails every write, as standard output on a full disk or a closed pipe does.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A command whose answer cannot be written must not exit as if it had been read: status 2 and
// the reason on stderr, whatever the command.
var _ = Describe("a command whose output cannot be written", func() {
	_, file, _, _ := runtime.Caller(0)
	catalog := filepath.Join(filepath.Dir(file), "../../../../specs")

	DescribeTable("exits 2 and says so",
		func(args ...string) {
			var stderr bytes.Buffer
			Expect(Main(append(args, catalog), fullWriter{}, &stderr)).To(Equal(ExitUsage), stderr.String())
			Expect(stderr.String()).To(MatchRegexp(`replaycheck \w+: writing: no space left on device`))
		},
		Entry("validate", "validate"),
		Entry("list", "list"),
		Entry("baseline write", "baseline", "write", "--probe", "basic/simple-replay"),
		Entry("baseline diff", "baseline", "diff", "--probe", "basic/simple-replay"),
	)

	It("exits 2 from report render too", func() {
		dir := GinkgoT().TempDir()
		var stderr bytes.Buffer
		Expect(Main([]string{"run", "--probe", "basic/simple-replay", "--out", dir, catalog}, &bytes.Buffer{}, &stderr)).To(Equal(ExitOK), stderr.String())
		stderr.Reset()
		Expect(Main([]string{"report", "render", filepath.Join(dir, "report.json")}, fullWriter{}, &stderr)).To(Equal(ExitUsage), stderr.String())
		Expect(stderr.String()).To(ContainSubstring("writing the report: no space left on device"))
	})
})
