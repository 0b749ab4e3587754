package guard_test

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// guarded wraps inner in mode, with the given guards removed (negative controls only).
func guarded(inner runtime.Device, mode guard.Mode, off ...guard.Disabled) *guard.Device {
	var opts guard.Options
	if len(off) > 0 {
		opts.Disabled = off[0]
	}
	d, err := guard.NewWithOptions(inner, mode, opts)
	Expect(err).NotTo(HaveOccurred())
	return d
}

// expectClass asserts that err is a *runtime.Error of class with the given Op, and returns it.
func expectClass(err error, class runtime.Class, op string) *runtime.Error {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	e, ok := runtime.AsError(err)
	Expect(ok).To(BeTrue(), "not a *runtime.Error: %v", err)
	Expect(e.Class).To(Equal(class), "%v", err)
	Expect(e.Op).To(Equal(op), "%v", err)
	return e
}

func expectRefused(err error, op string) *runtime.Error {
	GinkgoHelper()
	e := expectClass(err, runtime.ClassRefused, op)
	Expect(e.Backend).To(Equal("guard"))
	return e
}

// state is what a refusal must leave untouched: the allocator's counters and calls, and the
// slot's buffer and contents.
type state struct {
	counters runtime.Counters
	calls    int
	slots    map[string]runtime.Ptr
	contents map[string][]byte
}

func snapshot(f *fake, d *guard.Device, keys ...string) state {
	GinkgoHelper()
	s := state{counters: f.Counters(), calls: f.MallocCalls(), slots: map[string]runtime.Ptr{}, contents: map[string][]byte{}}
	for _, k := range keys {
		_, p, ok := d.Holds(k)
		if !ok {
			continue
		}
		s.slots[k] = p
		s.contents[k] = read(d, p)
	}
	return s
}

func read(d runtime.Device, p runtime.Ptr) []byte {
	GinkgoHelper()
	b := make([]byte, p.Bytes)
	Expect(d.Read(runtime.Main, b, p)).To(Succeed())
	return b
}

func write(d runtime.Device, p runtime.Ptr, value byte) {
	GinkgoHelper()
	Expect(d.Write(runtime.Main, p, bytes.Repeat([]byte{value}, int(p.Bytes)))).To(Succeed())
}

func filled(p runtime.Ptr, value byte) []byte { return bytes.Repeat([]byte{value}, int(p.Bytes)) }

func stream(d runtime.Device) runtime.Stream {
	GinkgoHelper()
	s, err := d.CreateStream(runtime.Main, runtime.Blocking)
	Expect(err).NotTo(HaveOccurred())
	return s
}

func event(d runtime.Device) runtime.Event {
	GinkgoHelper()
	e, err := d.CreateEvent(runtime.Main)
	Expect(err).NotTo(HaveOccurred())
	return e
}

func malloc(d runtime.Device, n int64) runtime.Ptr {
	GinkgoHelper()
	p, err := d.Malloc(runtime.Main, n)
	Expect(err).NotTo(HaveOccurred())
	return p
}

// captureFill captures one Fill of p on s and returns the graph.
func captureFill(d runtime.Device, s runtime.Stream, p runtime.Ptr, value byte) runtime.Graph {
	GinkgoHelper()
	Expect(d.BeginCapture(runtime.Main, s, runtime.Global)).To(Succeed())
	Expect(d.Fill(runtime.Main, s, p, value)).To(Succeed())
	g, err := d.EndCapture(runtime.Main, s)
	Expect(err).NotTo(HaveOccurred())
	return g
}
