package sim_test

import (
	"bytes"
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/sim"
)

const (
	main  = runtime.Main
	other = runtime.Other
	KiB   = 1 << 10
	MiB   = 1 << 20
	GiB   = 1 << 30
)

// openDevice opens device 0 of a fresh backend and closes it when the spec ends.
func openDevice(opts sim.Options) *sim.Device {
	GinkgoHelper()
	b, err := sim.New(opts)
	Expect(err).NotTo(HaveOccurred())
	dev, err := b.Open(context.Background(), 0)
	Expect(err).NotTo(HaveOccurred())
	d, ok := dev.(*sim.Device)
	Expect(ok).To(BeTrue(), "Open returns a *sim.Device")
	DeferCleanup(d.Close)
	return d
}

func onProfile(name string) *sim.Device {
	GinkgoHelper()
	return openDevice(sim.Options{Profile: name})
}

func malloc(d *sim.Device, n int64) runtime.Ptr {
	GinkgoHelper()
	p, err := d.Malloc(main, n)
	Expect(err).NotTo(HaveOccurred())
	return p
}

func newStream(d *sim.Device) runtime.Stream {
	GinkgoHelper()
	s, err := d.CreateStream(main, runtime.Blocking)
	Expect(err).NotTo(HaveOccurred())
	return s
}

func newEvent(d *sim.Device) runtime.Event {
	GinkgoHelper()
	e, err := d.CreateEvent(main)
	Expect(err).NotTo(HaveOccurred())
	return e
}

// read copies p to the host from the main thread (outside any capture it is always allowed).
func read(d *sim.Device, p runtime.Ptr) []byte {
	GinkgoHelper()
	out := make([]byte, p.Bytes)
	Expect(d.Read(main, out, p)).To(Succeed())
	return out
}

func write(d *sim.Device, p runtime.Ptr, b []byte) {
	GinkgoHelper()
	Expect(d.Write(main, p, b)).To(Succeed())
}

func filled(n int64, v byte) []byte { return bytes.Repeat([]byte{v}, int(n)) }

// rtError asserts that err is a *runtime.Error of the simulator and returns it.
func rtError(err error) *runtime.Error {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	e, ok := runtime.AsError(err)
	Expect(ok).To(BeTrue(), "want a *runtime.Error, got %T: %v", err, err)
	Expect(e.Backend).To(Equal("sim"))
	Expect(e.Detail).NotTo(BeEmpty(), "every error explains itself")
	return e
}

// expectError asserts err's code and class.
func expectError(err error, code int, class runtime.Class) *runtime.Error {
	GinkgoHelper()
	e := rtError(err)
	Expect(e.Code).To(Equal(code), "error: %v", e)
	Expect(e.Class).To(Equal(class), "error: %v", e)
	return e
}

func status(d *sim.Device, s runtime.Stream) runtime.CaptureStatus {
	GinkgoHelper()
	info, err := d.CaptureInfo(main, s)
	Expect(err).NotTo(HaveOccurred())
	return info.Status
}
