//go:build !cgo

package dl_test

import (
	"unsafe"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/dl"
)

var _ = Describe("without cgo", func() {
	It("opens no library, and says why", func() {
		_, err := dl.Open("libcuda.so.1")
		Expect(err).To(MatchError(dl.ErrNoCgo))
		_, tried, err := dl.OpenFirst([]string{"libascendcl.so", "libcuda.so.1"})
		Expect(err).To(MatchError(dl.ErrNoCgo))
		Expect(tried).To(Equal([]dl.Attempt{{Path: "libascendcl.so", Err: dl.ErrNoCgo.Error()}}), "the first attempt says it all")
		Expect(dl.ErrNoCgo.Error()).To(ContainSubstring("CGO_ENABLED=0"))
	})

	It("returns the build's error from every entry point, and never panics", func() {
		var lib dl.Library
		var slot unsafe.Pointer
		Expect(func() {
			_, err := lib.Lookup("cuInit")
			Expect(err).To(MatchError(dl.ErrNoCgo))
			Expect(err).To(MatchError(ContainSubstring(`symbol "cuInit"`)))
			Expect(lib.Resolve([]dl.Symbol{dl.Sym("cuInit", &slot)})).To(MatchError(dl.ErrNoCgo))
			Expect(lib.Resolve([]dl.Symbol{{Names: []string{"cuInit"}, Slot: &slot, Optional: true}})).To(MatchError(dl.ErrNoCgo), "even a table of optional symbols")
			Expect(lib.Close()).To(MatchError(dl.ErrNoCgo))
		}).NotTo(Panic())
		Expect(slot == nil).To(BeTrue())
		Expect(dl.ErrNoCgo.Error()).To(HavePrefix("built without cgo (CGO_ENABLED=0)"), "the text runtime plugins and backends print")
	})
})
