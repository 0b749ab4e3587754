package sim_test

import (
	"bytes"
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

const (
	main  = device.Main
	other = device.Other
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

func malloc(d *sim.Device, n int64) device.Ptr {
	GinkgoHelper()
	p, err := d.Malloc(main, n)
	Expect(err).NotTo(HaveOccurred())
	return p
}

func newStream(d *sim.Device) device.Stream {
	GinkgoHelper()
	s, err := d.CreateStream(main, device.Blocking)
	Expect(err).NotTo(HaveOccurred())
	return s
}

func newEvent(d *sim.Device) device.Event {
	GinkgoHelper()
	e, err := d.CreateEvent(main)
	Expect(err).NotTo(HaveOccurred())
	return e
}

// read copies p to the host from the main thread (outside any capture it is always allowed).
func read(d *sim.Device, p device.Ptr) []byte {
	GinkgoHelper()
	out := make([]byte, p.Bytes)
	Expect(d.Read(main, out, p)).To(Succeed())
	return out
}

func write(d *sim.Device, p device.Ptr, b []byte) {
	GinkgoHelper()
	Expect(d.Write(main, p, b)).To(Succeed())
}

func filled(n int64, v byte) []byte { return bytes.Repeat([]byte{v}, int(n)) }

// rtError asserts that err is a *device.Error of the simulator and returns it.
func rtError(err error) *device.Error {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	e, ok := device.AsError(err)
	Expect(ok).To(BeTrue(), "want a *device.Error, got %T: %v", err, err)
	Expect(e.Backend).To(Equal("sim"))
	Expect(e.Detail).NotTo(BeEmpty(), "every error explains itself")
	return e
}

// expectError asserts err's code and class.
func expectError(err error, code int, class device.Class) *device.Error {
	GinkgoHelper()
	e := rtError(err)
	Expect(e.Code).To(Equal(code), "error: %v", e)
	Expect(e.Class).To(Equal(class), "error: %v", e)
	return e
}

func status(d *sim.Device, s device.Stream) device.CaptureStatus {
	GinkgoHelper()
	info, err := d.CaptureInfo(main, s)
	Expect(err).NotTo(HaveOccurred())
	return info.Status
}
