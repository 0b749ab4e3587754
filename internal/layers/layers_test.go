package layers_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/layers"
)

const module = "github.com/replaycheck/replaycheck"

// moduleGraph is this module's import graph, without tests, by `go list -deps`, for the build
// at hand (cgo on or off: the files each build includes differ).
func moduleGraph(env ...string) layers.Graph {
	cmd := exec.Command("go", "list", "-e", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"/...")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "go list: %s", stderr.String())
	g := layers.Graph{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg, ok := strings.CutPrefix(f[0], module+"/")
		if !ok {
			continue
		}
		var deps []string
		for _, d := range f[1:] {
			if d, ok := strings.CutPrefix(d, module+"/"); ok {
				deps = append(deps, d)
			}
		}
		g[pkg] = deps
	}
	Expect(sc.Err()).NotTo(HaveOccurred())
	return g
}

var _ = Describe("the module's imports", func() {
	DescribeTable("keep the layering rules", func(env ...string) {
		g := moduleGraph(env...)
		// The graph is the real one: the platform, both halves' runtimes and the engine are in it.
		Expect(g).To(HaveKey("device/sim"))
		Expect(g).To(HaveKey("runtime/guard"))
		Expect(g).To(HaveKey("runtime/plugin"))
		Expect(g["capture"]).To(ContainElement("runtime"))
		Expect(layers.Violations(g, layers.Rules())).To(BeEmpty())
	},
		Entry("with cgo", "CGO_ENABLED=1"),
		Entry("without cgo", "CGO_ENABLED=0"),
	)

	It("name no file that gives Go's runtime an alias", func() {
		// The word is split so that this file does not find itself.
		out, err := exec.Command("git", "-C", "../..", "grep", "-n", "go"+"runtime", "--", "*.go").Output()
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
			return // git grep found nothing
		}
		if err != nil {
			Skip("not a git checkout: " + err.Error())
		}
		Fail("aliases of Go's runtime:\n" + string(out))
	})
})

var _ = Describe("Violations", func() {
	// The negative control: a graph that breaks each kind of rule is caught, naming the import.
	It("reports the platform importing the runtime under test, through another package too", func() {
		g := layers.Graph{"device/sim": {"device", "runtime/guard"}, "device": nil}
		Expect(layers.Violations(g, layers.Rules())).To(Equal([]string{
			"device/sim imports runtime/guard (rule: device/... must not import runtime/...)",
		}))
	})
	It("reports the guards and the plugin loader importing each other", func() {
		g := layers.Graph{"runtime/guard": {"runtime/plugin"}, "runtime/plugin/seed": {"runtime/guard"}}
		Expect(layers.Violations(g, layers.Rules())).To(Equal([]string{
			"runtime/guard imports runtime/plugin (rule: runtime/guard/... must not import runtime/plugin/...)",
			"runtime/plugin/seed imports runtime/guard (rule: runtime/plugin/... must not import runtime/guard/...)",
		}))
	})
	It("reports the seam importing an implementation", func() {
		Expect(layers.Violations(layers.Graph{"runtime": {"runtime/guard"}}, layers.Rules())).To(HaveLen(1))
	})
	It("reports the engine importing an implementation of the runtime under test", func() {
		Expect(layers.Violations(layers.Graph{"capture": {"runtime", "runtime/plugin", "runtime/guard"}}, layers.Rules())).To(HaveLen(2))
	})
	It("does not take a package whose name only starts like a tree's for part of it", func() {
		Expect(layers.Violations(layers.Graph{"devices/x": {"runtime/guard"}, "device": {"runtimes"}}, layers.Rules())).To(BeEmpty())
	})
})
