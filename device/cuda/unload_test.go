//go:build cgo

package cuda_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device/cuda"
	"github.com/replaycheck/replaycheck/device/fake"
)

// openFDs counts this process's open file descriptors.
func openFDs() int {
	GinkgoHelper()
	fds, err := os.ReadDir("/proc/self/fd")
	Expect(err).NotTo(HaveOccurred())
	return len(fds)
}

var _ = Describe("a driver library loaded and unloaded again and again", func() {
	It("leaves no file open behind, its call log included", func(ctx SpecContext) {
		if _, err := os.Stat("/proc/self/fd"); err != nil {
			Skip("no /proc/self/fd to count descriptors in")
		}
		// A copy of its own: unloading it unloads the library, which no other spec holds.
		path, err := fake.Build(GinkgoT().TempDir(), fake.CUDA, fake.Variant{})
		Expect(err).NotTo(HaveOccurred())
		GinkgoT().Setenv("REPLAYCHECK_FAKE_LOG", filepath.Join(GinkgoT().TempDir(), "calls.log"))
		cycle := func() {
			b, err := cuda.New(cuda.Options{Library: path})
			Expect(err).NotTo(HaveOccurred())
			d, err := b.Open(ctx, 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.Close()).To(Succeed())
			Expect(b.Close()).To(Succeed())
		}
		cycle() // whatever the first load opens for good (the Go runtime's own) is counted before
		before := openFDs()
		for range 20 {
			cycle()
		}
		Expect(openFDs()).To(BeNumerically("<=", before+2), "a descriptor per load would be 20 more")
	})
})
