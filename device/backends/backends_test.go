package backends_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device/backends"
)

var _ = Describe("Names", func() {
	It("lists sim first; with cgo the device backends too, and without it says why they are missing", func() {
		names := backends.Names()
		Expect(names).NotTo(BeEmpty(), "Names() lists no backend")
		Expect(names[0]).To(Equal("sim"), "Names() = %v, want sim first", names)
		Expect(backends.Known()).To(Equal([]string{"sim", "acl", "cuda"}))
		b, err := backends.Open("sim", backends.Config{})
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Name()).To(Equal("sim"))
		Expect(b.Close()).To(Succeed())
		if cgoBuild {
			Expect(names).To(Equal([]string{"sim", "acl", "cuda"}))
			Expect(backends.Unavailable("acl")).To(BeEmpty())
		} else {
			Expect(names).To(Equal([]string{"sim"}))
			Expect(backends.Unavailable("cuda")).To(ContainSubstring("built without cgo"))
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
		Entry("an unknown name lists the known backends", "tpu", backends.Config{}, `unknown backend "tpu"`, "sim", "acl", "cuda"),
		Entry("the empty name is unknown", "", backends.Config{}, `unknown backend ""`),
		Entry("an unknown sim profile lists the embedded ones", "sim", backends.Config{Profile: "rocm"}, "sim", `"rocm"`, "cann", "cuda"),
	)
	It("says why a device backend cannot be opened: its library missing, or no cgo", func() {
		for name, lib := range map[string]string{"acl": "/nonexistent/libascendcl.so", "cuda": "/nonexistent/libcuda.so.1"} {
			_, err := backends.Open(name, backends.Config{Library: lib})
			if cgoBuild {
				Expect(err).To(MatchError(SatisfyAll(ContainSubstring(name+": no "), ContainSubstring("not found: "+lib))))
			} else {
				Expect(err).To(MatchError(ContainSubstring(`backend "` + name + `": built without cgo`)))
			}
		}
	})
})
