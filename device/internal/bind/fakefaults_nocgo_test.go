//go:build !cgo

package bind_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/internal/bind"
	"github.com/replaycheck/replaycheck/internal/dl"
)

var _ = Describe("FakeFaults without cgo", func() {
	It("returns an error naming the build from every call", func() {
		var f bind.FakeFaults
		Expect(f.InjectFault(device.Fault{Kind: device.FaultAllocFail, N: 1})).To(MatchError(dl.ErrNoCgo))
		Expect(f.ClearFaults()).To(MatchError(dl.ErrNoCgo))
		_, _, err := f.FiredFault(0)
		Expect(err).To(MatchError(dl.ErrNoCgo))
		Expect(err).To(MatchError(ContainSubstring("CGO_ENABLED=0")))
	})
})
