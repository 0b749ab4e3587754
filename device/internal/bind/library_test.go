package bind_test

import (
	"errors"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device/internal/bind"
	"github.com/replaycheck/replaycheck/internal/dl"
)

var _ = Describe("a binding's library errors", func() {
	acl := bind.NewLibrary("acl", "runtime library", "the runtime library loaded but the driver is not usable")
	cuda := bind.NewLibrary("cuda", "driver library", "the driver library loaded but no driver is usable")

	It("keep each backend's text", func() {
		Expect(acl.ErrNoLibrary.Error()).To(Equal("acl: no runtime library"))
		Expect(acl.ErrNoDriver.Error()).To(Equal("acl: the runtime library loaded but the driver is not usable"))
		Expect(cuda.NoLibrary([]dl.Attempt{{Path: "/nonexistent/libcuda.so.1", Err: "gone", Absent: true}}, errors.New("x")).Error()).
			To(Equal("cuda: no driver library could be loaded (not found: /nonexistent/libcuda.so.1)"))
		Expect(acl.NoLibrary(nil, dl.ErrNoCgo).Error()).To(Equal("acl: no runtime library: " + dl.ErrNoCgo.Error()))
	})

	It("are each backend's own sentinel, and the package's", func() {
		err := fmt.Errorf("wrapped: %w", cuda.NoLibrary(nil, dl.ErrNoCgo))
		Expect(errors.Is(err, cuda.ErrNoLibrary)).To(BeTrue())
		Expect(errors.Is(err, bind.ErrNoLibrary)).To(BeTrue())
		Expect(errors.Is(err, dl.ErrNoCgo)).To(BeTrue())
		Expect(errors.Is(err, acl.ErrNoLibrary)).To(BeFalse(), "another backend's")
		Expect(errors.Is(err, cuda.ErrNoDriver)).To(BeFalse())
		var nl *bind.NoLibraryError
		Expect(errors.As(err, &nl)).To(BeTrue())
		Expect(nl.Library).To(BeIdenticalTo(cuda))

		noDriver := fmt.Errorf("%w: /lib/libascendcl.so: aclInit: %w", acl.ErrNoDriver, errors.New("507000"))
		Expect(errors.Is(noDriver, acl.ErrNoDriver)).To(BeTrue())
		Expect(errors.Is(noDriver, bind.ErrNoDriver)).To(BeTrue())
		Expect(errors.Is(noDriver, bind.ErrNoLibrary)).To(BeFalse())
		Expect(noDriver.Error()).To(HavePrefix("acl: the runtime library loaded but the driver is not usable: /lib/libascendcl.so"))
	})
})

var _ = Describe("Candidates", func() {
	const env = "RC_BIND_CANDIDATES_TEST" // no variable replaycheck reads: only this test sets it
	var searched int
	search := func() []string { searched++; return []string{"libfirst.so", "/opt/lib/libsecond.so"} }
	BeforeEach(func() { searched = 0 })

	It("are the library alone where it is set, before the environment", func() {
		GinkgoT().Setenv(env, "/from/env.so")
		Expect(bind.Candidates("/from/options.so", env, search)).To(Equal([]string{"/from/options.so"}))
		Expect(searched).To(BeZero())
	})

	It("are the environment variable's value alone where only it is set", func() {
		GinkgoT().Setenv(env, "/from/env.so")
		Expect(bind.Candidates("", env, search)).To(Equal([]string{"/from/env.so"}))
		Expect(searched).To(BeZero())
	})

	It("are the search paths, in order, where neither is set", func() {
		GinkgoT().Setenv(env, "")
		Expect(bind.Candidates("", env, search)).To(Equal([]string{"libfirst.so", "/opt/lib/libsecond.so"}))
		Expect(searched).To(Equal(1))
	})
})
