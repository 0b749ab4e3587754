package guard_test

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// guarded wraps inner in mode, with the given guards removed (negative controls only).
func guarded(inner device.Device, mode guard.Mode, off ...guard.Disabled) *guard.Device {
	var opts guard.Options
	if len(off) > 0 {
		opts.Disabled = off[0]
	}
	d, err := guard.NewWithOptions(inner, mode, opts)
	Expect(err).NotTo(HaveOccurred())
	return d
}

// expectClass asserts that err is a *device.Error of class with the given Op, and returns it.
func expectClass(err error, class device.Class, op string) *device.Error {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	e, ok := device.AsError(err)
	Expect(ok).To(BeTrue(), "not a *device.Error: %v", err)
	Expect(e.Class).To(Equal(class), "%v", err)
	Expect(e.Op).To(Equal(op), "%v", err)
	return e
}

func expectRefused(err error, op string) *device.Error {
	GinkgoHelper()
	e := expectClass(err, device.ClassRefused, op)
	Expect(e.Backend).To(Equal("guard"))
	return e
}

// state is what a refusal must leave untouched: the allocator's counters and calls, and the
// slot's buffer and contents.
type state struct {
	counters device.Counters
	calls    int
	slots    map[string]device.Ptr
	contents map[string][]byte
}

func snapshot(f *fake, d *guard.Device, keys ...string) state {
	GinkgoHelper()
	s := state{counters: f.Counters(), calls: f.MallocCalls(), slots: map[string]device.Ptr{}, contents: map[string][]byte{}}
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

func read(d device.Device, p device.Ptr) []byte {
	GinkgoHelper()
	b := make([]byte, p.Bytes)
	Expect(d.Read(device.Main, b, p)).To(Succeed())
	return b
}

func write(d device.Device, p device.Ptr, value byte) {
	GinkgoHelper()
	Expect(d.Write(device.Main, p, bytes.Repeat([]byte{value}, int(p.Bytes)))).To(Succeed())
}

func filled(p device.Ptr, value byte) []byte { return bytes.Repeat([]byte{value}, int(p.Bytes)) }

func stream(d device.Device) device.Stream {
	GinkgoHelper()
	s, err := d.CreateStream(device.Main, device.Blocking)
	Expect(err).NotTo(HaveOccurred())
	return s
}

func event(d device.Device) device.Event {
	GinkgoHelper()
	e, err := d.CreateEvent(device.Main)
	Expect(err).NotTo(HaveOccurred())
	return e
}

func malloc(d device.Device, n int64) device.Ptr {
	GinkgoHelper()
	p, err := d.Malloc(device.Main, n)
	Expect(err).NotTo(HaveOccurred())
	return p
}

// captureFill captures one Fill of p on s and returns the graph.
func captureFill(d device.Device, s device.Stream, p device.Ptr, value byte) device.Graph {
	GinkgoHelper()
	Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
	Expect(d.Fill(device.Main, s, p, value)).To(Succeed())
	g, err := d.EndCapture(device.Main, s)
	Expect(err).NotTo(HaveOccurred())
	return g
}
