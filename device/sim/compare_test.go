package sim_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"runtime"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

// The in-place fast paths (Equal, page-to-page copies, kernels on pages) against the plain
// host-slice meaning of the same operations.
var _ = Describe("in-place memory paths", func() {
	var dev *sim.Device
	BeforeEach(func() {
		be, err := sim.New(sim.Options{Profile: "cann"})
		Expect(err).NotTo(HaveOccurred())
		d, err := be.Open(context.Background(), 0)
		Expect(err).NotTo(HaveOccurred())
		dev = d.(*sim.Device)
		DeferCleanup(dev.Close)
	})

	const n = 3*sim.PageSize + 100 // a last partial page

	It("Equal finds a planted difference at page boundaries, in an unwritten page and in the last partial page", func() {
		p, err := dev.Malloc(device.Main, n)
		Expect(err).NotTo(HaveOccurred())
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(i%251 + 1)
		}
		clear(want[sim.PageSize : 2*sim.PageSize]) // page 1 stays unwritten on the device
		Expect(dev.Write(device.Main, p, want)).To(Succeed())
		Expect(dev.ResidentBytes()).To(Equal(int64(3 * sim.PageSize)))
		eq, err := dev.Equal(device.Main, p, want)
		Expect(err).NotTo(HaveOccurred())
		Expect(eq).To(BeTrue())
		for _, at := range []int{0, sim.PageSize - 1, sim.PageSize, sim.PageSize + 17, 2*sim.PageSize - 1, 2 * sim.PageSize, n - 1} {
			planted := bytes.Clone(want)
			planted[at] ^= 0x40
			eq, err := dev.Equal(device.Main, p, planted)
			Expect(err).NotTo(HaveOccurred())
			Expect(eq).To(BeFalse(), "difference at %d", at)
		}
	})

	It("Equal cut into segments compared by separate goroutines finds every planted difference, at the cuts too", func() {
		// Segments of two pages, four CPUs: a range of 11 pages starting mid-page is cut into
		// four, the first longer by its partial page; a difference anywhere must be found.
		DeferCleanup(dev.Tune(sim.Knobs{EqualSegment: 2 * sim.PageSize}))
		DeferCleanup(runtime.GOMAXPROCS, runtime.GOMAXPROCS(4))
		const size = 11*sim.PageSize + 300
		p, err := dev.Malloc(device.Main, size+sim.PageSize)
		Expect(err).NotTo(HaveOccurred())
		src := p.Slice(777, size) // not page aligned: the cuts fall on the device's pages
		want := make([]byte, size)
		for i := range want {
			want[i] = byte(i%253 + 1)
		}
		clear(want[4*sim.PageSize : 6*sim.PageSize]) // absent pages compare as zeros
		Expect(dev.Write(device.Main, src, want)).To(Succeed())
		eq, err := dev.Equal(device.Main, src, want)
		Expect(err).NotTo(HaveOccurred())
		Expect(eq).To(BeTrue())
		rng := rand.New(rand.NewPCG(3, 4))
		at := []int{0, size - 1}
		for page := 1; page <= 11; page++ {
			cut := page*sim.PageSize - 777 // each page boundary of the device, seen from src
			at = append(at, cut-1, cut)
		}
		for range 40 {
			at = append(at, rng.IntN(size))
		}
		for _, i := range at {
			planted := bytes.Clone(want)
			planted[i] ^= 0x10
			eq, err := dev.Equal(device.Main, src, planted)
			Expect(err).NotTo(HaveOccurred())
			Expect(eq).To(BeFalse(), "difference at %d", i)
		}
	})

	It("Equal checks its arguments as Read does", func() {
		p, err := dev.Malloc(device.Main, 512)
		Expect(err).NotTo(HaveOccurred())
		_, err = dev.Equal(device.Main, p, make([]byte, 100))
		Expect(err).To(HaveOccurred())
		_, err = dev.Equal(device.Main, device.Ptr{Addr: p.Addr + 4096, Bytes: 512}, make([]byte, 512))
		Expect(err).To(HaveOccurred())
	})

	It("copies overlapping and page-crossing ranges as memmove does, and axpy as its lanes say", func() {
		rng := rand.New(rand.NewPCG(1, 2))
		p, err := dev.Malloc(device.Main, n)
		Expect(err).NotTo(HaveOccurred())
		s, err := dev.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		host := make([]byte, n)
		for i := range host {
			if i/sim.PageSize != 1 { // page 1 absent: copies from and onto zeros
				host[i] = byte(rng.IntN(256))
			}
		}
		Expect(dev.Write(device.Main, p, host)).To(Succeed())
		for range 200 {
			size := int64(rng.IntN(2*sim.PageSize) + 1)
			so, do := rng.Int64N(n-size+1), rng.Int64N(n-size+1)
			if rng.IntN(2) == 0 {
				size &^= 3
				size = max(size, 4)
				so, do = so&^3, do&^3
				a := rng.Uint32()
				Expect(dev.Axpy(device.Main, s, p.Slice(do, size), p.Slice(so, size), a)).To(Succeed())
				refAxpy(host[do:do+size], host[so:so+size], a, do, so)
			} else {
				Expect(dev.Copy(device.Main, s, p.Slice(do, size), p.Slice(so, size))).To(Succeed())
				copy(host[do:do+size], host[so:so+size])
			}
			got := make([]byte, n)
			Expect(dev.Read(device.Main, got, p)).To(Succeed())
			Expect(bytes.Equal(got, host)).To(BeTrue())
		}
	})
})

// refAxpy is the kernel's meaning on host bytes: distinct overlapping operands load a 64 KiB block
// of both before storing it; disjoint or identical ones lane by lane.
func refAxpy(y, x []byte, a uint32, yo, xo int64) {
	n := int64(len(y))
	overlap := yo != xo && yo < xo+n && xo < yo+n
	block := n
	if overlap {
		block = sim.PageSize
	}
	for off := int64(0); off < n; off += block {
		m := min(block, n-off)
		xs := bytes.Clone(x[off : off+m])
		for i := int64(0); i < m; i += 4 {
			v := a*binary.LittleEndian.Uint32(xs[i:]) + binary.LittleEndian.Uint32(y[off+i:])
			binary.LittleEndian.PutUint32(y[off+i:], v)
		}
	}
}
