package fake_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device/fake"
)

var _ = Describe("reading a call log", func() {
	write := func(text string) string {
		path := filepath.Join(GinkgoT().TempDir(), "calls.log")
		Expect(os.WriteFile(path, []byte(text), 0o644)).To(Succeed())
		return path
	}

	It("reads calls, failures and hangs, and lists each entry point's callers in order", func() {
		entries, err := fake.ReadLog(write("7 call cuInit\n9 call cuMemAlloc_v2\n9 fail cuMemAlloc_v2 2: out of memory: 1 GiB\n7 call cuMemAlloc_v2\n8 hang\n7 call cuStreamCreate flags=1\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(entries).To(Equal([]fake.LogEntry{
			{TID: 7, Kind: "call", Entry: "cuInit"},
			{TID: 9, Kind: "call", Entry: "cuMemAlloc_v2"},
			{TID: 9, Kind: "fail", Entry: "cuMemAlloc_v2", Code: 2, Detail: "out of memory: 1 GiB"},
			{TID: 7, Kind: "call", Entry: "cuMemAlloc_v2"},
			{TID: 8, Kind: "hang"},
			{TID: 7, Kind: "call", Entry: "cuStreamCreate", Args: "flags=1"},
		}))
		Expect(fake.Callers(entries)).To(Equal(map[string][]int{"cuInit": {7}, "cuMemAlloc_v2": {9, 7}, "cuStreamCreate": {7}}))

		entries, err = fake.ReadLog(write(""))
		Expect(err).NotTo(HaveOccurred())
		Expect(entries).To(BeEmpty())
	})

	DescribeTable("refuses a line of another form, naming the file and the line, and keeps the lines before it",
		func(line string) {
			path := write("7 call cuInit\n" + line + "\n")
			entries, err := fake.ReadLog(path)
			Expect(err).To(MatchError(ContainSubstring(path + ":2: ")))
			Expect(entries).To(HaveLen(1))
		},
		Entry("no thread id", "call cuInit"),
		Entry("an unknown kind", "7 enter cuInit"),
		Entry("a call of nothing", "7 call"),
		Entry("a call with a space and no arguments", "7 call cuInit "),
		Entry("a failure without a code", "7 fail cuInit: no code"),
		Entry("a failure without its detail", "7 fail cuInit 100"),
		Entry("a hang of something", "7 hang cuInit"),
		Entry("an empty line", ""),
	)

	It("refuses a last line cut short, keeping the lines before it", func() {
		path := write("7 call cuInit\n7 call cuMem")
		entries, err := fake.ReadLog(path)
		Expect(err).To(MatchError(ContainSubstring(path + ":2: the last line is cut short")))
		Expect(entries).To(HaveLen(1))
	})

	It("says which file it could not read", func() {
		_, err := fake.ReadLog(filepath.Join(GinkgoT().TempDir(), "none.log"))
		Expect(err).To(MatchError(ContainSubstring("none.log")))
	})
})
