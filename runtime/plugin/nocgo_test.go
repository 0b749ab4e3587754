//go:build !cgo

package plugin_test

import (
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/dl"
	"github.com/replaycheck/replaycheck/runtime/plugin"
)

var _ = Describe("Load without cgo", func() {
	It("fails, saying plugins need a cgo build", func() {
		_, err := plugin.Load("/x/reference.so")
		Expect(errors.Is(err, dl.ErrNoCgo)).To(BeTrue())
		Expect(err.Error()).To(ContainSubstring("runtime plugins need a cgo build"))
		Expect(err.Error()).To(ContainSubstring("/x/reference.so"))
	})
})
