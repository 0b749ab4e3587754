package proc

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	gm "github.com/onsi/gomega"
)

var _ = Describe("the last-call page", func() {
	It("keeps the last name stored whole, even when a worker dies while storing the next", func() {
		page, err := newLastCallPage()
		gm.Expect(err).NotTo(gm.HaveOccurred())
		defer page.Close()
		gm.Expect(readLastCall(page)).To(gm.BeEmpty(), "a page nothing was stored on")
		m, err := mapLastCall(page)
		gm.Expect(err).NotTo(gm.HaveOccurred())
		m.Store("Malloc")
		gm.Expect(readLastCall(page)).To(gm.Equal("Malloc"))

		// A store cut short before it made its slot current.
		m.write("Launch")
		gm.Expect(readLastCall(page)).To(gm.Equal("Malloc"))

		m.Store("Launch")
		m.Store("SyncStream")
		gm.Expect(readLastCall(page)).To(gm.Equal("SyncStream"))
		m.Store(strings.Repeat("x", 5000))
		gm.Expect(readLastCall(page)).To(gm.Equal(strings.Repeat("x", lastCallMax)), "a longer name is cut")
	})
})
