package interpose_test

import (
	"os"
	"path/filepath"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/watch/interpose"
)

var _ = Describe("building the interposer", func() {
	It("builds once per source hash, safely from concurrent callers", func() {
		root := GinkgoT().TempDir()
		var (
			wg    sync.WaitGroup
			paths [3]string
			errs  [3]error
		)
		for i := range paths {
			wg.Go(func() { paths[i], errs[i] = interpose.CachedIn(root) })
		}
		wg.Wait()
		for i := range paths {
			Expect(errs[i]).NotTo(HaveOccurred())
			Expect(paths[i]).To(Equal(paths[0]))
		}
		sum, err := interpose.SourceHash()
		Expect(err).NotTo(HaveOccurred())
		Expect(paths[0]).To(Equal(filepath.Join(root, "watch-"+sum, interpose.FileName)))
		Expect(paths[0]).To(BeARegularFile())
		entries, err := os.ReadDir(root)
		Expect(err).NotTo(HaveOccurred())
		Expect(entries).To(HaveLen(1), "the losers' temporary builds are gone")
		info, err := os.Stat(paths[0])
		Expect(err).NotTo(HaveOccurred())
		again, err := interpose.CachedIn(root)
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(Equal(paths[0]))
		info2, err := os.Stat(again)
		Expect(err).NotTo(HaveOccurred())
		Expect(info2.ModTime()).To(Equal(info.ModTime()), "not built again")
	})

	It("uses the cache directory, or the library $REPLAYCHECK_WATCH_LIB names", func() {
		GinkgoT().Setenv("XDG_CACHE_HOME", GinkgoT().TempDir())
		GinkgoT().Setenv(interpose.EnvLibrary, built.lib)
		Expect(interpose.Cached()).To(Equal(built.lib))
		GinkgoT().Setenv(interpose.EnvLibrary, filepath.Join(GinkgoT().TempDir(), "missing.so"))
		_, err := interpose.Cached()
		Expect(err).To(MatchError(ContainSubstring(interpose.EnvLibrary)))
	})
})
