package sim_test

import (
	"context"
	"runtime"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/internal/fingerprint"
)

var _ = Describe("fingerprints (device.Fingerprinter)", func() {
	open := func(fingerprints bool) device.Device {
		be, err := sim.New(sim.Options{Profile: "cuda", Fingerprints: fingerprints})
		Expect(err).NotTo(HaveOccurred())
		d, err := be.Open(context.Background(), 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(d.Close)
		return d
	}

	It("are stated only for a device opened with Options.Fingerprints", func() {
		Expect(device.ExtensionsOf(open(false)).Fingerprint).To(BeNil())
		d := open(true)
		Expect(device.ExtensionsOf(d).Fingerprint).To(BeIdenticalTo(device.Fingerprinter(d.(*sim.Device))))
		tr := device.ExtensionsOf(d).Threads
		Expect(tr.OnThread(device.Main, func(on device.Device) {
			Expect(device.ExtensionsOf(on).Fingerprint).NotTo(BeNil(), "a session's view states it too")
		})).To(Succeed())
	})

	It("are the test vectors', at any offset of an allocation, on one CPU and on several", func() {
		d := open(true)
		fp := device.ExtensionsOf(d).Fingerprint
		vs, err := fingerprint.Vectors()
		Expect(err).NotTo(HaveOccurred())
		for _, procs := range []int{1, 4} {
			prev := runtime.GOMAXPROCS(procs)
			for _, v := range vs {
				for _, at := range []int64{0, 3, sim.PageSize - 5} {
					p, err := d.Malloc(device.Main, int64(v.Bytes)+at)
					Expect(err).NotTo(HaveOccurred())
					Expect(d.Write(device.Main, p.Slice(at, int64(v.Bytes)), v.Input())).To(Succeed())
					out := make([]uint64, len(v.Chunks))
					Expect(fp.Fingerprints(device.Other, p.Slice(at, int64(v.Bytes)), out)).To(Succeed())
					Expect(out).To(Equal(v.Chunks), "%s at offset %d, %d CPUs", v.Name, at, procs)
					Expect(d.Free(device.Main, p)).To(Succeed())
				}
			}
			runtime.GOMAXPROCS(prev)
		}
	})

	It("check their arguments and answer as a synchronous Read would during a capture", func() {
		d := open(true)
		fp := device.ExtensionsOf(d).Fingerprint
		p, err := d.Malloc(device.Main, 4096)
		Expect(err).NotTo(HaveOccurred())
		Expect(device.ClassOf(fp.Fingerprints(device.Main, p, make([]uint64, 2)))).To(Equal(device.ClassInvalidValue))
		Expect(device.ClassOf(fp.Fingerprints(device.Main, device.Ptr{Addr: p.Addr + 8192, Bytes: 8}, make([]uint64, 1)))).To(Equal(device.ClassInvalidValue))
		s, err := d.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		fpErr := fp.Fingerprints(device.Main, p, make([]uint64, 1))
		readErr := d.Read(device.Main, make([]byte, 4096), p)
		_, _ = d.EndCapture(device.Main, s)
		Expect(readErr).To(HaveOccurred(), "the cuda profile refuses a synchronous read during a global capture")
		Expect(device.ClassOf(fpErr)).To(Equal(device.ClassOf(readErr)))
	})
})
