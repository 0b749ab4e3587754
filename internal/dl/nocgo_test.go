//go:build !cgo

package dl_test

import (
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
})
