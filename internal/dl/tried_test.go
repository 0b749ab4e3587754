package dl_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/internal/dl"
)

var _ = Describe("Tried", func() {
	It("lists absent libraries together, and a library whose dependency is absent as a failure of its own", func() {
		Expect(dl.Tried([]dl.Attempt{
			{Path: "/opt/a/libcuda.so.1", Err: "/opt/a/libcuda.so.1: cannot open shared object file: No such file or directory", Absent: true},
			{Path: "libcuda.so.1", Err: "libcuda.so.1: cannot open shared object file: No such file or directory", Absent: true},
			{Path: "/opt/b/libcuda.so.1", Err: "libmissingdep.so: cannot open shared object file: No such file or directory"},
			{Path: "/opt/c/libcuda.so.1", Err: "/opt/c/libcuda.so.1: wrong ELF class: ELFCLASS32"},
		})).To(Equal("not found: /opt/a/libcuda.so.1, libcuda.so.1; " +
			"/opt/b/libcuda.so.1: libmissingdep.so: cannot open shared object file: No such file or directory; " +
			"/opt/c/libcuda.so.1: wrong ELF class: ELFCLASS32"))
	})

	It("reads no error text: absence is what the attempt found, in any language", func() {
		Expect(dl.Tried([]dl.Attempt{
			{Path: "/opt/a/libcuda.so.1", Err: "/opt/a/libcuda.so.1: Datei oder Verzeichnis nicht gefunden", Absent: true},
			{Path: "/opt/b/libcuda.so.1", Err: "/opt/b/libcuda.so.1: libdep.so: No such file or directory"},
			{Path: "/opt/c/libcuda.so.1"},
		})).To(Equal("not found: /opt/a/libcuda.so.1; /opt/b/libcuda.so.1: libdep.so: No such file or directory"))
	})
})
