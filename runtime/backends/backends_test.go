package backends_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/runtime/backends"
)

var _ = Describe("Names", func() {
	It("lists sim first, and every listed backend opens under its own name", func() {
		names := backends.Names()
		Expect(names).NotTo(BeEmpty(), "Names() lists no backend")
		Expect(names[0]).To(Equal("sim"), "Names() = %v, want sim first", names)
		for _, name := range names {
			b, err := backends.Open(name, backends.Config{})
			Expect(err).NotTo(HaveOccurred(), "Open(%q) of a listed backend", name)
			Expect(b.Name()).To(Equal(name), "Open(%q).Name()", name)
		}
	})

	It("hands out a copy, so a caller cannot change what the package accepts", func() {
		names := backends.Names()
		Expect(names).NotTo(BeEmpty())
		names[0] = "mutated"
		Expect(backends.Names()[0]).To(Equal("sim"), "Names() exposes the package's own slice")
	})
})

var _ = Describe("Open", func() {
	DescribeTable("opens a sim device that names its profile, and closes it cleanly",
		func(ctx SpecContext, profile, want string) {
			b, err := backends.Open("sim", backends.Config{Profile: profile, Seed: 7, Memory: 1 << 20})
			Expect(err).NotTo(HaveOccurred(), "profile %q", profile)
			dev, err := b.Open(ctx, 0)
			Expect(err).NotTo(HaveOccurred(), "profile %q: opening device 0", profile)
			// A non-nil error from Close fails the spec.
			DeferCleanup(dev.Close)
			Expect(dev.Describe()).To(ContainSubstring(want), "profile %q: the device does not name profile %q", profile, want)
		},
		Entry("no profile named: the default profile", "", backends.DefaultProfile),
		Entry("the cann profile", "cann", "cann"),
		Entry("the cuda profile", "cuda", "cuda"),
	)

	DescribeTable("refuses what it cannot open, with an error that says why",
		func(name string, cfg backends.Config, want ...string) {
			b, err := backends.Open(name, cfg)
			Expect(err).To(HaveOccurred(), func() string {
				return fmt.Sprintf("Open(%q, %+v) = %v, want an error", name, cfg, b.Name())
			})
			for _, w := range want {
				Expect(err).To(MatchError(ContainSubstring(w)), "Open(%q, %+v): the error does not mention %q", name, cfg, w)
			}
		},
		Entry("acl is planned but not built in", "acl", backends.Config{}, `backend "acl": not built into this binary yet (this binary has: sim)`),
		Entry("cuda is planned but not built in", "cuda", backends.Config{}, `backend "cuda": not built into this binary yet (this binary has: sim)`),
		Entry("an unknown name lists the known backends", "tpu", backends.Config{}, `unknown backend "tpu"`, "sim", "acl", "cuda"),
		Entry("the empty name is unknown", "", backends.Config{}, `unknown backend ""`),
		Entry("an unknown sim profile lists the embedded ones", "sim", backends.Config{Profile: "rocm"}, "sim", `"rocm"`, "cann", "cuda"),
	)
})
