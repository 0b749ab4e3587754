package watch_test

import (
	"errors"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/watch"
)

var _ = Describe("ParseEvent", func() {
	It("parses every field of an op, a stack and a hello", func() {
		e, err := watch.ParseEvent([]byte("op pid=7 tid=8 call=cuLaunchKernel_ptsz stack=3 stream=0x00AB capture=2 tcap=2 what=kernel func=0xf1 arg=1:8:0x7f00 arg=2:16:0x10 w=0x10+4 r=0x20+8 newkey=whatever\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(e).To(Equal(watch.Event{Name: "op", PID: 7, TID: 8, Call: "cuLaunchKernel_ptsz", Stack: 3,
			Stream: "0xab", Capture: 2, TCap: 2, What: "kernel", Func: 0xf1,
			Args:   []watch.Arg{{Index: 1, Offset: 8, Value: 0x7f00}, {Index: 2, Offset: 16, Value: 0x10}},
			Writes: []watch.Span{{Addr: 0x10, Bytes: 4}}, Reads: []watch.Span{{Addr: 0x20, Bytes: 8}}}))

		e, err = watch.ParseEvent([]byte("stack pid=7 id=4 frames=0x401010,0x400000,/opt/my%20app/bin%7Cx,main|0x7f01,0x7f00,/lib/libc.so.6,"))
		Expect(err).NotTo(HaveOccurred())
		Expect(e.ID).To(Equal(4))
		Expect(e.Frames).To(Equal([]watch.RawFrame{
			{PC: 0x401010, Base: 0x400000, Object: "/opt/my app/bin|x", Symbol: "main"},
			{PC: 0x7f01, Base: 0x7f00, Object: "/lib/libc.so.6"},
		}))

		e, err = watch.ParseEvent([]byte("hello pid=9 tid=9 ppid=1 exe=/usr/bin/a%2Cb backend=cuda,acl refuse=1 version=1 fork=1"))
		Expect(err).NotTo(HaveOccurred())
		Expect(e).To(Equal(watch.Event{Name: "hello", PID: 9, TID: 9, PPID: 1, Exe: "/usr/bin/a,b",
			Backend: "cuda,acl", Refuse: true, Version: 1, Fork: true}))
	})

	It("parses the per-thread default stream and the event handles", func() {
		e, err := watch.ParseEvent([]byte("sync pid=1 tid=2 call=cuEventSynchronize stack=0 what=event event=0xE1"))
		Expect(err).NotTo(HaveOccurred())
		Expect(e.What).To(Equal("event"))
		Expect(e.EventHandle).To(Equal(uint64(0xe1)))
		e, err = watch.ParseEvent([]byte("launch pid=1 tid=2 call=cuGraphLaunch_ptsz stack=0 exec=0x6 stream=ptds:2 stale=1 refused=1"))
		Expect(err).NotTo(HaveOccurred())
		Expect(e.Stream).To(Equal("ptds:2"))
		Expect(e.Stale && e.Refused).To(BeTrue())
	})

	DescribeTable("rejects, naming the event and the field",
		func(line, want string) {
			_, err := watch.ParseEvent([]byte(line))
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("an unknown event", "allocate pid=1 tid=1", `unknown event "allocate"`),
		Entry("an empty line", "", "empty line"),
		Entry("a missing field", "alloc pid=1 tid=1 call=cuMemAlloc_v2 stack=1 addr=0x10 kind=device pool=0x0 stream=0x0", "alloc: missing field size"),
		Entry("a bad decimal", "alloc pid=x tid=1 call=c stack=1 addr=0x10 size=4 kind=device pool=0x0 stream=0x0", `alloc: field pid: "x" is not a decimal number`),
		Entry("an address without 0x", "alloc pid=1 tid=1 call=c stack=1 addr=10 size=4 kind=device pool=0x0 stream=0x0", "field addr"),
		Entry("a bad kind", "alloc pid=1 tid=1 call=c stack=1 addr=0x10 size=4 kind=managed pool=0x0 stream=0x0", "field kind"),
		Entry("a bad bool", "launch pid=1 tid=1 call=c stack=1 exec=0x1 stream=0x0 stale=yes refused=0", "field stale"),
		Entry("a bad range", "op pid=1 tid=1 call=c stack=1 stream=0x0 capture=1 tcap=1 what=copy w=0x10-4", "field w"),
		Entry("a bad argument", "op pid=1 tid=1 call=c stack=1 stream=0x0 capture=1 tcap=1 what=kernel func=0x1 arg=1:0x10", "field arg"),
		Entry("a kernel without func", "op pid=1 tid=1 call=c stack=1 stream=0x0 capture=1 tcap=1 what=kernel", "missing field func"),
		Entry("an op in no capture", "op pid=1 tid=1 call=c stack=1 stream=0x0 capture=0 tcap=0 what=copy", "capture and tcap both 0"),
		Entry("capture id 0", "begin pid=1 tid=1 call=c stack=1 stream=0x0 capture=0 mode=global", "field capture"),
		Entry("a bad mode", "begin pid=1 tid=1 call=c stack=1 stream=0x0 capture=1 mode=local", "field mode"),
		Entry("a repeated field", "free pid=1 tid=1 call=c stack=1 addr=0x1 addr=0x2 kind=device pool=0x0 stream=0x0", "field addr given twice"),
		Entry("a word without =", "destroy-exec pid=1 tid=1 call=c stack=1 exec", `"exec" is not key=value`),
		Entry("two spaces", "destroy-exec pid=1  tid=1 call=c stack=1 exec=0x1", "two spaces"),
		Entry("a bad escape", "note pid=1 tid=1 text=50%", "field text"),
		Entry("a frame of three parts", "stack pid=1 id=1 frames=0x1,0x0,/a", "field frames"),
		Entry("a sync of a stream without the stream", "sync pid=1 tid=1 call=c stack=1 what=stream", "missing field stream"),
		Entry("a bad stream", "wait pid=1 tid=1 call=c stack=1 stream=ptds:x event=0x1", "field stream"),
		Entry("a run of no launches", "launch pid=1 tid=1 call=c stack=1 exec=0x1 stream=0x0 stale=0 refused=0 n=0", "field n"),
	)
})

var _ = Describe("ReadEvents", func() {
	It("names the file and line of a bad event, skipping comments and blank lines", func() {
		stream := "# a comment\n\nhello pid=1 tid=1 ppid=0 exe=/a backend=cuda refuse=0 version=1\nfree pid=1 tid=1\n"
		var names []string
		err := watch.ReadEvents(strings.NewReader(stream), "run.events", func(e watch.Event) error {
			names = append(names, e.Name)
			return nil
		})
		Expect(err).To(MatchError("run.events:4: free: missing field call"))
		Expect(names).To(Equal([]string{"hello"}))
	})

	It("stops at fn's error and names the line", func() {
		stream := "note pid=1 tid=1 text=a\nnote pid=1 tid=1 text=b\n"
		stop := errors.New("enough")
		n := 0
		err := watch.ReadEvents(strings.NewReader(stream), "x", func(watch.Event) error {
			n++
			return stop
		})
		Expect(err).To(MatchError(stop))
		Expect(err).To(MatchError(ContainSubstring("x:1: enough")))
		Expect(n).To(Equal(1))
	})
})
