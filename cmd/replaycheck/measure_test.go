package main_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/cmd/replaycheck/internal/cli"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/device/fake"
)

// replaycheck measure through the cgo bindings, on the fake driver libraries (device/fake), which
// answer as the simulator's profiles do: every row agrees on both. Compared with a profile whose
// rule says another code, the rows of that rule disagree and measure exits 1.
var _ = Describe("replaycheck measure on the fake driver libraries", func() {
	measure := func(env []string, args ...string) (int, string) {
		GinkgoHelper()
		for i := 0; i+1 < len(env); i += 2 {
			GinkgoT().Setenv(env[i], env[i+1])
		}
		var out, errOut bytes.Buffer
		code := cli.Main(append([]string{"measure"}, args...), &out, &errOut)
		Expect(errOut.String()).To(BeEmpty())
		return code, out.String()
	}
	dir := filepath.Join("..", "..", "specs", "measure")

	DescribeTable("agrees with the profile on every row",
		func(backend string, lib fake.Library, envVar, platform string) {
			if why := backends.Unavailable(backend); why != "" {
				Skip(why)
			}
			path, err := fake.Build(GinkgoT().TempDir(), lib, fake.Variant{})
			Expect(err).NotTo(HaveOccurred())
			code, out := measure([]string{envVar, path}, "--backend", backend, dir)
			Expect(code).To(Equal(cli.ExitOK), out)
			Expect(out).To(HavePrefix("measure: " + platform + " (backend " + backend + ")"))
			Expect(out).To(MatchRegexp(`(?m)^agree `))
			Expect(out).NotTo(MatchRegexp(`(?m)^(disagree|inconclusive) `))
			Expect(out).To(MatchRegexp(`\n[0-9]+ measurements: [0-9]+ agree, 0 disagree, 0 inconclusive, [0-9]+ not measured\n$`))
		},
		Entry("acl", "acl", fake.ACL, "REPLAYCHECK_ACL_LIB", "acl/cann-9.0-replaycheck-fake"),
		Entry("cuda", "cuda", fake.CUDA, "REPLAYCHECK_CUDA_LIB", "cuda/12.4-replaycheck-fake"),
	)

	It("disagrees, and exits 1, where the profile compared with says another code (negative control)", func() {
		if why := backends.Unavailable("acl"); why != "" {
			Skip(why)
		}
		path, err := fake.Build(GinkgoT().TempDir(), fake.ACL, fake.Variant{})
		Expect(err).NotTo(HaveOccurred())
		data, err := os.ReadFile(filepath.Join("..", "..", "device", "sim", "profiles", "cann.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Count(string(data), "code: 507011")).To(Equal(1), "the mutation must reach one rule")
		mutated := filepath.Join(GinkgoT().TempDir(), "cann.yaml")
		Expect(os.WriteFile(mutated, bytes.ReplaceAll(data, []byte("code: 507011"), []byte("code: 507012")), 0o644)).To(Succeed())
		code, out := measure([]string{"REPLAYCHECK_ACL_LIB", path}, "--backend", "acl", "--against", mutated, dir)
		Expect(code).To(Equal(cli.ExitFail), out)
		Expect(out).To(MatchRegexp(`(?m)^disagree +cann rule [0-9]+ \(verify\): replay of a graph whose captured memory was freed .* +507012 ACL_ERROR_RT_MODEL_EXECUTE, capture not invalidated +507011 ACL_ERROR_RT_MODEL_EXECUTE`))
		// The mutated rule's rows, every one; the rows of other rules still agree.
		Expect(out).NotTo(MatchRegexp(`(?m)^agree +cann rule [0-9]+ \(verify\): replay of a graph whose captured memory was freed `))
	})
})
