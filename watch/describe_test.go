package watch_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/watch"
)

var _ = Describe("Describe", func() {
	It("writes a stale replay the way a user reads it", func() {
		sum, _ := runText(stream("stale-freed.events"), watch.Options{})
		text := watch.Describe(sum.Findings[1])
		// The example in full: the shape every finding's text has.
		Expect(strings.Split(text, "\n")).To(Equal([]string{
			"watch: stale-replay in pid 100: graph 0x5000 was launched on stream 0x10, but the range 0x7f0000100000+256 it captured in cuMemcpyDtoDAsync_v2 held the device allocation 0x7f0000100000 (4096 bytes, generation 1), freed by cuMemFree_v2 and nothing holds it now",
			"    graph:        0x5000 (exec 0x6000), capture 1 on stream 0x10 (global), launched on stream 0x10",
			"    range:        0x7f0000100000, 256 bytes",
			"    captured by:  cuMemcpyDtoDAsync_v2 (copy)",
			"    at capture:   device 0x7f0000100000, 4096 bytes, generation 1, from cuMemAlloc_v2; freed by cuMemFree_v2",
			"    now:          nothing holds it",
			"    finding stack:",
			"        prog+0x1050",
			"        main (prog+0x1500)",
			"    captured stack:",
			"        prog+0x1030",
			"        main (prog+0x1500)",
			"    at-capture stack:",
			"        prog+0x1010",
			"        main (prog+0x1500)",
			"    freed stack:",
			"        prog+0x1040",
			"        main (prog+0x1500)",
		}))
	})

	It("marks refused, possible and repeated findings on the first line", func() {
		sum, _ := runText(stream("stale-rebase.events"), watch.Options{})
		first, _, _ := strings.Cut(watch.Describe(sum.Findings[1]), "\n")
		Expect(first).To(HavePrefix("watch: stale-replay in pid 100: "))
		Expect(first).To(HaveSuffix("now inside another allocation (0x7f00000ff000, 16384 bytes, cuMemAlloc_v2) [refused]"))

		sum, _ = runText(stream("distinct-sites.events"), watch.Options{})
		first, _, _ = strings.Cut(watch.Describe(sum.Findings[1]), "\n")
		Expect(first).To(HaveSuffix("nothing holds it now (x 6)"))

		sum, _ = runText(stream("kernel-arg.events"), watch.Options{})
		text := watch.Describe(sum.Findings[1])
		first, _, _ = strings.Cut(text, "\n")
		Expect(first).To(HaveSuffix(" (possible, arg 1 at offset 8)"))
		Expect(text).To(ContainSubstring("\n    captured by:  cuLaunchKernel (kernel), arg 1 at offset 8\n"))

		// A single, certain, unrefused finding has none of the marks.
		sum, _ = runText(stream("stale-freed.events"), watch.Options{})
		first, _, _ = strings.Cut(watch.Describe(sum.Findings[1]), "\n")
		Expect(first).NotTo(Or(ContainSubstring("[refused]"), ContainSubstring("(possible"), ContainSubstring("(x ")))
	})

	It("names the other graph of a shared-concurrent finding, pool blocks and what holds a range now", func() {
		sum, _ := runText(stream("shared-concurrent.events"), watch.Options{})
		text := watch.Describe(sum.Findings[0])
		Expect(text).To(ContainSubstring("\n    other graph:  0x5001 (exec 0x6001), capture 1 on stream 0x10 (thread-local), launched on stream 0x10\n"))
		Expect(text).To(ContainSubstring("\n    at capture:   pool block of pool 0xb1 at 0x7f0001000000, 4096 bytes, generation 1, from rc_watch_pool_alloc; freed by rc_watch_pool_free\n"))
		Expect(text).To(ContainSubstring("\n    other-launch stack:\n"))

		sum, _ = runText(stream("stale-realloc.events"), watch.Options{})
		Expect(watch.Describe(sum.Findings[1])).To(ContainSubstring("\n    now:          device 0x7f0000100000, 4096 bytes, generation 2, from cuMemAlloc_v2\n"))
	})

	It("shows the top frames of a long stack, by function and line where known", func() {
		frames := []watch.Frame{{PC: "0x7f01", Object: "/lib/libx.so", Offset: "0x1", Function: "f", File: "/src/x.c", Line: 12}}
		for range 7 {
			frames = append(frames, watch.Frame{PC: "0x7f02", Object: "/lib/libx.so", Offset: "0x2"})
		}
		frames = append(frames, watch.Frame{PC: "0x99"})
		text := watch.Describe(watch.Finding{Kind: watch.AllocInCapture, PID: 3, Detail: "d", Count: 1,
			Stacks: []watch.Stack{{Role: "finding", Frames: frames}}})
		Expect(strings.Split(text, "\n")).To(Equal([]string{
			"watch: alloc-in-capture in pid 3: d",
			"    finding stack:",
			"        f (/src/x.c:12)",
			"        libx.so+0x2",
			"        libx.so+0x2",
			"        libx.so+0x2",
			"        libx.so+0x2",
			"        ... 4 more",
		}))
	})
})
