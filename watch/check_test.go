package watch_test

import (
	"fmt"
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"

	"github.com/replaycheck/replaycheck/watch"
)

// runText checks a stream given as text and returns the summary and what Add returned.
func runText(text string, opt watch.Options) (watch.Summary, []watch.Finding) {
	GinkgoHelper()
	c := watch.NewChecker(opt)
	var live []watch.Finding
	Expect(watch.ReadEvents(strings.NewReader(text), "stream", func(e watch.Event) error {
		live = append(live, c.Add(e)...)
		return nil
	})).To(Succeed())
	return c.Result(), live
}

func stream(name string) string {
	GinkgoHelper()
	data, err := os.ReadFile("testdata/events/" + name)
	Expect(err).NotTo(HaveOccurred())
	return string(data)
}

var _ = Describe("Checker", func() {
	It("describes a stale replay in full", func() {
		sum, _ := runText(stream("stale-freed.events"), watch.Options{})
		Expect(sum.Findings).To(HaveLen(2))
		f := sum.Findings[1]
		Expect(f.Kind).To(Equal(watch.StaleReplay))
		Expect(f.PID).To(Equal(100))
		Expect(f.TID).To(Equal(100))
		Expect(f.Call).To(Equal("cuGraphLaunch"))
		Expect(f.Refused).To(BeFalse())
		Expect(*f.Graph).To(Equal(watch.Graph{Handle: "0x5000", Exec: "0x6000", PID: 100, Capture: 1,
			Stream: "0x10", Mode: "global", LaunchStream: "0x10"}))
		Expect(*f.Range).To(Equal(watch.Range{Addr: "0x7f0000100000", Bytes: 256}))
		Expect(*f.Captured).To(Equal(watch.Site{Call: "cuMemcpyDtoDAsync_v2", What: "copy"}))
		Expect(*f.AtCapture).To(Equal(watch.Holder{Addr: "0x7f0000100000", Bytes: 4096, Kind: "device",
			Generation: 1, Call: "cuMemAlloc_v2", Freed: true, FreedBy: "cuMemFree_v2"}))
		Expect(f.Now).To(BeNil())
		Expect(stackRoles(f)).To(Equal([]string{"finding", "captured", "at-capture", "freed"}))
		Expect(f.Stacks[0].Frames).To(Equal([]watch.Frame{
			{PC: "0x401050", Object: "/usr/bin/prog", Offset: "0x1050"},
			{PC: "0x401500", Object: "/usr/bin/prog", Offset: "0x1500", Function: "main"},
		}))
		Expect(f.Stacks[3].Frames[0].PC).To(Equal("0x401040"), "the free's stack")
		// The read side of the copy is still live: one finding, for the written range only.
		Expect(f.Count).To(Equal(1))
	})

	It("records what holds a re-used range now, with its generation", func() {
		sum, _ := runText(stream("stale-realloc.events"), watch.Options{})
		f := sum.Findings[1]
		Expect(f.Now).To(Equal(&watch.Holder{Addr: "0x7f0000100000", Bytes: 4096, Kind: "device",
			Generation: 2, Call: "cuMemAlloc_v2"}))
		Expect(stackRoles(f)).To(ContainElement("now"))
	})

	It("disagrees with an interposer whose stale= says otherwise, both ways", func() {
		text := stream("stale-freed.events")
		last := strings.LastIndex(text, "stale=1")
		sum, _ := runText(text[:last]+"stale=0"+text[last+len("stale=1"):], watch.Options{})
		Expect(sum.Disagreements).To(HaveLen(1))
		Expect(sum.Disagreements[0]).To(MatchFields(IgnoreExtras, Fields{
			"PID": Equal(100), "Exec": Equal("0x6000"), "Stream": Equal("0x10"),
			"Interposer": BeFalse(), "Checker": BeTrue()}))

		first := strings.Index(text, "stale=0")
		sum, _ = runText(text[:first]+"stale=1"+text[first+len("stale=0"):], watch.Options{})
		Expect(sum.Disagreements).To(HaveLen(1))
		Expect(sum.Disagreements[0].Interposer).To(BeTrue())
		Expect(sum.Disagreements[0].Checker).To(BeFalse())
	})

	It("returns a finding made in a capture at once, and names its graph in the result", func() {
		sum, live := runText(stream("alloc-in-capture.events"), watch.Options{})
		Expect(live[0].Graph.Handle).To(BeEmpty(), "the capture has not ended when the allocation is made")
		Expect(live[0].Graph.Capture).To(Equal(1))
		Expect(sum.Findings[0].Graph.Handle).To(Equal("0x5000"))
		Expect(sum.Findings[0].Now).To(Equal(&watch.Holder{Addr: "0x7f0000300000", Bytes: 4096, Kind: "device",
			Generation: 1, Call: "cuMemAlloc_v2"}))
	})

	It("finds what a private pool hides once the pool is not declared", func() {
		// The negative control of private-shared.events: the same stream, no pool-private.
		text := stream("private-shared.events")
		Expect(runText(text, watch.Options{})).To(HaveField("Findings", BeEmpty()))
		var kept []string
		for line := range strings.SplitSeq(text, "\n") {
			if !strings.HasPrefix(line, "pool-private ") {
				kept = append(kept, line)
			}
		}
		sum, _ := runText(strings.Join(kept, "\n"), watch.Options{})
		Expect(kindsOf(sum.Findings)).To(ContainElements(watch.AllocInCapture, watch.FreeInCapture))
		Expect(sum.Disagreements).NotTo(BeEmpty(), "the stream's stale=0 assumed the private pool")
	})

	It("counts the fork and the exec as processes of their own", func() {
		sum, _ := runText(stream("fork-exec.events"), watch.Options{})
		Expect(sum.Processes).To(Equal([]watch.Process{
			{PID: 100, PPID: 1, Exe: "/usr/bin/parent", Backend: "cuda"},
			{PID: 101, PPID: 100, Exe: "/usr/bin/parent", Backend: "cuda", Forked: true},
			{PID: 100, PPID: 1, Exe: "/usr/bin/next", Backend: "cuda", Exec: true},
		}))
	})

	It("puts a forked child's hello that comes after its exec's where it happened", func() {
		// The fork's connection and the exec's are read apart: the exec's hello may come first.
		text := `hello pid=100 tid=100 ppid=1 exe=/a backend=cuda refuse=0 version=1
hello pid=101 tid=101 ppid=100 exe=/b backend=cuda refuse=0 version=1
stack pid=101 id=1 frames=0x401010,0x400000,/b,
alloc pid=101 tid=101 call=cuMemAlloc_v2 stack=1 addr=0x7f0000100000 size=4096 kind=device pool=0x0 stream=0x0
begin pid=101 tid=101 call=cuStreamBeginCapture_v2 stack=1 stream=0x10 capture=1 mode=global
hello pid=101 tid=101 ppid=100 exe=/a backend=cuda refuse=0 version=1 fork=1
free pid=101 tid=101 call=cuMemFree_v2 stack=1 addr=0x7f0000100000 kind=device pool=0x0 stream=0x0
`
		sum, _ := runText(text, watch.Options{})
		Expect(sum.Processes).To(Equal([]watch.Process{
			{PID: 100, PPID: 1, Exe: "/a", Backend: "cuda"},
			{PID: 101, PPID: 100, Exe: "/a", Backend: "cuda", Forked: true},
			{PID: 101, PPID: 100, Exe: "/b", Backend: "cuda", Exec: true},
		}))
		// The exec'd program's model went on: its capture is still active at the free.
		Expect(kindsOf(sum.Findings)).To(Equal([]watch.Kind{watch.FreeInCapture}))

		// A fork hello for a pid whose last hello came after a fork is a new child (the pid reused).
		text = strings.Replace(text, "exe=/b backend=cuda refuse=0 version=1\n", "exe=/b backend=cuda refuse=0 version=1 fork=1\n", 1)
		sum, _ = runText(text, watch.Options{})
		Expect(sum.Processes).To(HaveLen(3))
		Expect(sum.Processes[2].Forked).To(BeTrue())
		Expect(sum.Findings).To(BeEmpty(), "the second child's model starts empty")
	})

	It("forgets destroyed graphs but not a live one among them", func() {
		var b strings.Builder
		b.WriteString("hello pid=1 tid=1 ppid=0 exe=/a backend=cuda refuse=0 version=1\n")
		b.WriteString("alloc pid=1 tid=1 call=cuMemAlloc_v2 stack=0 addr=0x10000 size=4096 kind=device pool=0x0 stream=0x0\n")
		for i := 1; i <= 100; i++ {
			fmt.Fprintf(&b, "begin pid=1 tid=1 call=cuStreamBeginCapture_v2 stack=0 stream=0x10 capture=%d mode=global\n", i)
			fmt.Fprintf(&b, "op pid=1 tid=1 call=cuMemsetD8Async stack=0 stream=0x10 capture=%d tcap=%d what=memset w=0x10000+64\n", i, i)
			fmt.Fprintf(&b, "end pid=1 tid=1 call=cuStreamEndCapture stack=0 stream=0x10 capture=%d graph=%#x ok=1\n", i, 0x5000+i)
			fmt.Fprintf(&b, "instantiate pid=1 tid=1 call=cuGraphInstantiateWithFlags stack=0 graph=%#x exec=0x6000\n", 0x5000+i)
			b.WriteString("launch pid=1 tid=1 call=cuGraphLaunch stack=0 exec=0x6000 stream=0x10 stale=0 refused=0\n")
			b.WriteString("destroy-exec pid=1 tid=1 call=cuGraphExecDestroy stack=0 exec=0x6000\n")
			if i != 50 {
				fmt.Fprintf(&b, "destroy-graph pid=1 tid=1 call=cuGraphDestroy stack=0 graph=%#x\n", 0x5000+i)
			}
		}
		b.WriteString("free pid=1 tid=1 call=cuMemFree_v2 stack=0 addr=0x10000 kind=device pool=0x0 stream=0x0\n")
		sum, _ := runText(b.String(), watch.Options{})
		Expect(kindsOf(sum.Findings)).To(Equal([]watch.Kind{watch.FreeCaptured}))
		Expect(sum.Findings[0].Graph.Handle).To(Equal("0x5032"), "graph 50, never destroyed")
		Expect(sum.Findings[0].Count).To(Equal(1))
	})

	It("keeps each note once", func() {
		sum, _ := runText(stream("clean-driver.events"), watch.Options{})
		Expect(sum.Notes).To(Equal([]string{"kernel 0xf2 has no parameter layout: its arguments are not checked"}))
	})

	It("takes events of a process that never said hello", func() {
		text := stream("stale-freed.events")
		text = strings.Replace(text, "hello pid=100", "# hello pid=100", 1)
		sum, _ := runText(text, watch.Options{})
		Expect(kindsOf(sum.Findings)).To(Equal([]watch.Kind{watch.FreeCaptured, watch.StaleReplay}))
		Expect(sum.Processes).To(Equal([]watch.Process{{PID: 100}}))
	})

	Describe("with suppressions", func() {
		const text = `
# the free's call stack is one frame in /usr/bin/prog
{
   known-free
   watch:free-captured
   obj:*/prog
}
{
   launches-in-main
   watch:*
   ...
   fun:ma?n
}
{
   never-used
   watch:alloc-in-capture
}
`
		It("hides what they match, counts it, and lists those never used", func() {
			sup, err := watch.ParseSuppressions("watch.supp", []byte(text))
			Expect(err).NotTo(HaveOccurred())
			sum, live := runText(stream("distinct-sites.events"), watch.Options{Suppress: sup})
			Expect(live).To(BeEmpty())
			Expect(sum.Findings).To(BeEmpty())
			// The free once; the two launch sites 6 and 2 times.
			Expect(sum.Suppressed).To(Equal(map[string]int{"known-free": 1, "launches-in-main": 8}))
			Expect(sum.Unused).To(Equal([]string{"never-used"}))
		})

		It("leave alone what they do not match", func() {
			sup, err := watch.ParseSuppressions("watch.supp", []byte(text))
			Expect(err).NotTo(HaveOccurred())
			// acl-stale's stacks are in another program and have no main: nothing matches.
			sum, _ := runText(stream("acl-stale.events"), watch.Options{Suppress: sup})
			Expect(kindsOf(sum.Findings)).To(Equal([]watch.Kind{watch.FreeCaptured, watch.StaleReplay}))
			Expect(sum.Suppressed).To(BeEmpty())
			Expect(sum.Unused).To(Equal([]string{"known-free", "launches-in-main", "never-used"}))
		})
	})
})
