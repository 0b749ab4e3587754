package conformance

import (
	"bytes"
	"fmt"

	g "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
)

// expectDisjoint asserts that no two ranges share a byte.
func expectDisjoint(ps []device.Ptr) {
	g.GinkgoHelper()
	for i := range ps {
		for j := i + 1; j < len(ps); j++ {
			Expect(ps[i].Overlaps(ps[j])).To(BeFalse(), "live ranges %v and %v overlap", ps[i], ps[j])
		}
	}
}

func memorySpecs(h *harness) {
	g.Context("device memory", func() {
		g.It("Malloc returns a non-zero range of exactly the requested length", func() {
			for _, n := range []int64{1, 3, 511, 512, 513, 4 * kib, 1 * mib} {
				p := h.malloc(n)
				Expect(p.IsZero()).To(BeFalse(), "Malloc(%d)", n)
				Expect(p.Addr).NotTo(BeZero(), "Malloc(%d) returned address 0", n)
				Expect(p.Bytes).To(Equal(n), "the Ptr keeps the requested length")
			}
		})

		g.It("never hands out a range that overlaps a live one, also when it hands freed memory out again", func() {
			sizes := []int64{1, 511, 512, 513, 4 * kib, 64 * kib, 3, 1 * mib, 100}
			var live []device.Ptr
			for _, n := range sizes {
				live = append(live, h.malloc(n))
			}
			expectDisjoint(live)
			// Free every other one, then allocate the same sizes, smaller and bigger ones again.
			var kept []device.Ptr
			for i, p := range live {
				if i%2 == 0 {
					h.free(p)
				} else {
					kept = append(kept, p)
				}
			}
			live = kept
			for _, n := range append(sizes, 2, 256, 8*kib, 2*mib) {
				live = append(live, h.malloc(n))
			}
			expectDisjoint(live)
			// The ranges are disjoint in what they hold, too: each keeps its own bytes.
			for i, p := range live {
				h.write(p, pattern(p.Bytes, byte(i+1)))
			}
			for i, p := range live {
				Expect(h.read(p)).To(Equal(pattern(p.Bytes, byte(i+1))), "%v lost its bytes to a neighbour", p)
			}
		})

		g.It("takes freed memory back: cycling twice the device's memory through Malloc and Free succeeds", func() {
			chunk := h.opts.Memory / 4
			base := h.dev.Counters()
			for i := range 8 {
				p, err := h.dev.Malloc(main, chunk)
				Expect(err).NotTo(HaveOccurred(), "cycle %d: Malloc(%d) after %d frees of the same size", i, chunk, i)
				h.free(p)
			}
			c := h.dev.Counters()
			Expect(c.Mallocs - base.Mallocs).To(Equal(int64(8)))
			Expect(c.Frees - base.Frees).To(Equal(int64(8)))
			Expect(c.Leaks(base)).To(BeEmpty())
		})

		g.It("Write then Read round-trips whole allocations and sub-ranges", func() {
			p := h.malloc(8 * kib)
			want := pattern(p.Bytes, 0x11)
			h.write(p, want)
			Expect(h.read(p)).To(Equal(want))

			sub := p.Slice(1000, 100)
			h.write(sub, filled(sub.Bytes, 0xee))
			copy(want[1000:1100], filled(100, 0xee))
			Expect(h.read(p)).To(Equal(want), "a sub-range Write changes only the sub-range")
			Expect(h.read(p.Slice(990, 20))).To(Equal(want[990:1010]), "a sub-range Read")
		})

		g.It("Write and Read work from either thread", func() {
			p := h.mallocOn(other, 4*kib)
			Expect(h.dev.Write(other, p, pattern(p.Bytes, 3))).To(Succeed())
			out := make([]byte, p.Bytes)
			Expect(h.dev.Read(main, out, p)).To(Succeed())
			Expect(out).To(Equal(pattern(p.Bytes, 3)))
			Expect(h.dev.Write(main, p, pattern(p.Bytes, 4))).To(Succeed())
			Expect(h.dev.Read(other, out, p)).To(Succeed())
			Expect(out).To(Equal(pattern(p.Bytes, 4)))
			Expect(h.dev.Free(other, p)).To(Succeed())
		})

		g.It("Write and Read of a host buffer of the wrong length fail and touch nothing", func() {
			p := h.malloc(1 * kib)
			h.write(p, filled(p.Bytes, 5))
			h.failed(h.dev.Write(main, p, make([]byte, 10)))
			h.failed(h.dev.Write(main, p, make([]byte, 2*kib)))
			h.failed(h.dev.Read(main, make([]byte, 2*kib), p))
			h.failed(h.dev.Read(main, make([]byte, 10), p))
			Expect(h.read(p)).To(Equal(filled(p.Bytes, 5)))
		})

		g.It("Malloc of zero or negative bytes fails and allocates nothing", func() {
			base := h.dev.Counters()
			for _, n := range []int64{0, -1, -4096} {
				p, err := h.dev.Malloc(main, n)
				h.failed(err)
				Expect(p.IsZero()).To(BeTrue(), "a failed Malloc returns the zero Ptr")
			}
			Expect(h.dev.Counters()).To(Equal(base), "failed calls count nothing")
		})

		g.It("Malloc of more than the device has fails out-of-memory (or invalid-value) and allocates nothing", func() {
			base := h.dev.Counters()
			p, err := h.dev.Malloc(main, 1<<50)
			h.failed(err, device.ClassOutOfMemory, device.ClassInvalidValue)
			Expect(p.IsZero()).To(BeTrue())
			Expect(h.dev.Counters()).To(Equal(base), "failed calls count nothing")
			h.malloc(4 * kib) // the device is still usable
		})

		g.It("Free of what is not a live allocation fails and frees nothing", func() {
			p := h.malloc(4 * kib)
			h.write(p, filled(p.Bytes, 9))
			base := h.dev.Counters()
			h.failed(h.dev.Free(main, device.Ptr{Addr: 0x1234, Bytes: 8}), device.ClassInvalidValue, device.ClassIllegalAddress, device.ClassInternal)
			h.failed(h.dev.Free(main, device.Ptr{}))
			h.failed(h.dev.Free(main, p.Slice(512, 512)), device.ClassInvalidValue, device.ClassIllegalAddress, device.ClassInternal)
			Expect(h.dev.Counters()).To(Equal(base), "failed frees count nothing")
			Expect(h.read(p)).To(Equal(filled(p.Bytes, 9)), "the allocation is still live and intact")

			h.free(p)
			base = h.dev.Counters()
			h.failed(h.dev.Free(main, p), device.ClassInvalidValue, device.ClassIllegalAddress, device.ClassInternal)
			Expect(h.dev.Counters()).To(Equal(base), "a double free counts nothing")
		})

		g.It("counts Mallocs, Frees, LiveAllocs and LiveBytes exactly", func() {
			base := h.dev.Counters()
			a := h.malloc(1000)
			b := h.mallocOn(other, 24)
			c := h.dev.Counters()
			Expect(c.Mallocs - base.Mallocs).To(Equal(int64(2)))
			Expect(c.Frees - base.Frees).To(Equal(int64(0)))
			Expect(c.LiveAllocs - base.LiveAllocs).To(Equal(int64(2)))
			Expect(c.LiveBytes-base.LiveBytes).To(Equal(int64(1024)), "LiveBytes sums the requested lengths")

			h.free(b)
			c = h.dev.Counters()
			Expect(c.Mallocs - base.Mallocs).To(Equal(int64(2)))
			Expect(c.Frees - base.Frees).To(Equal(int64(1)))
			Expect(c.LiveAllocs - base.LiveAllocs).To(Equal(int64(1)))
			Expect(c.LiveBytes - base.LiveBytes).To(Equal(int64(1000)))
			Expect(c.Leaks(base)).To(ConsistOf("allocations: 1 live, 0 before"))

			Expect(h.dev.Free(other, a)).To(Succeed())
			c = h.dev.Counters()
			Expect(c.Frees - base.Frees).To(Equal(int64(2)))
			Expect(c.LiveAllocs).To(Equal(base.LiveAllocs))
			Expect(c.LiveBytes).To(Equal(base.LiveBytes))
			Expect(c.Leaks(base)).To(BeEmpty())
		})
	})
}

func hostSpecs(h *harness) {
	g.Context("host memory", func() {
		for _, kind := range device.HostMemories() {
			g.It("AllocHost "+kind.String()+" returns a range of the requested length apart from device memory, counted as host memory", func() {
				dev := h.malloc(4 * kib)
				base := h.dev.Counters()
				a := h.allocHost(4*kib, kind)
				b := h.allocHost(1, kind)
				Expect(a.Addr).NotTo(BeZero())
				Expect(a.Bytes).To(Equal(int64(4 * kib)))
				Expect(b.Bytes).To(Equal(int64(1)))
				expectDisjoint([]device.Ptr{dev, a, b})
				c := h.dev.Counters()
				Expect(c.HostAllocs - base.HostAllocs).To(Equal(int64(2)))
				Expect(c.LiveHostAllocs - base.LiveHostAllocs).To(Equal(int64(2)))
				Expect(c.LiveAllocs).To(Equal(base.LiveAllocs), "host memory is not device memory")
				Expect(c.Mallocs).To(Equal(base.Mallocs), "host memory is not device memory")
				Expect(c.Leaks(base)).To(ConsistOf("host allocations: 2 live, 0 before"))

				Expect(h.dev.FreeHost(main, a)).To(Succeed())
				Expect(h.dev.FreeHost(other, b)).To(Succeed())
				c = h.dev.Counters()
				Expect(c.HostFrees - base.HostFrees).To(Equal(int64(2)))
				Expect(c.LiveHostAllocs).To(Equal(base.LiveHostAllocs))
				Expect(c.Leaks(base)).To(BeEmpty())
			})

			g.It("HostWrite then HostRead round-trips "+kind.String()+" memory, whole and in sub-ranges", func() {
				p := h.allocHost(4*kib, kind)
				want := pattern(p.Bytes, 0x42)
				h.hostWrite(p, want)
				Expect(h.hostRead(p)).To(Equal(want))
				h.hostWrite(p.Slice(100, 10), filled(10, 0xff))
				copy(want[100:110], filled(10, 0xff))
				Expect(h.hostRead(p)).To(Equal(want))
				Expect(h.hostRead(p.Slice(95, 20))).To(Equal(want[95:115]))
			})

			g.It("copies "+kind.String()+" host memory to the device and back on a stream", func() {
				s := h.stream()
				src, dst := h.allocHost(8*kib, kind), h.allocHost(8*kib, kind)
				dev := h.malloc(8 * kib)
				h.hostWrite(src, pattern(src.Bytes, 0x21))
				h.copy(s, dev, src) // host to device
				h.sync(s)
				Expect(h.read(dev)).To(Equal(pattern(dev.Bytes, 0x21)), "host to device")

				h.write(dev, pattern(dev.Bytes, 0x37))
				h.copy(s, dst, dev) // device to host
				h.sync(s)
				Expect(h.hostRead(dst)).To(Equal(pattern(dst.Bytes, 0x37)), "device to host")

				// Sub-ranges, and the smaller of the two lengths.
				h.hostWrite(src, filled(src.Bytes, 1))
				h.copy(s, dev.Slice(0, 2*kib), src.Slice(0, 4*kib))
				h.sync(s)
				got := h.read(dev)
				Expect(got[:2*kib]).To(Equal(filled(2*kib, 1)), "min(dst, src) bytes copied")
				Expect(got[2*kib:]).To(Equal(pattern(dev.Bytes, 0x37)[2*kib:]), "nothing past the destination")
			})
		}

		// The hazard of hazards/host-staging-reused, as every device must let it show: a graph's
		// copy names the host address it captured, and the allocator hands a freed block to the
		// next allocation of its size. A binding keeps such a block rather than give it back to
		// the driver (device/internal/bind): on an H200 (driver 13.0), through cuMemFreeHost these
		// replays crashed the process in cuGraphLaunch up to 1 MiB and failed 719 at 16 MiB, and a
		// 16 MiB pageable block, unmapped by free, crashed the launch.
		for _, kind := range device.HostMemories() {
			g.It("hands "+kind.String()+" host memory a graph's copy names, once freed, to the next allocation of its size, which the replay then reads", func() {
				for _, n := range []int64{8 * kib, 1 * mib, 16 * mib} {
					s := h.stream()
					stage := h.allocHost(n, kind)
					h.hostWrite(stage, filled(n, 0x11))
					dev := h.malloc(n)
					h.begin(main, s, device.Global)
					if err := h.dev.Copy(main, s, dev, stage); err != nil {
						g.Skip(fmt.Sprintf("the platform captures no copy of %v host memory: %v", kind, err))
					}
					graph := h.end(main, s)
					Expect(h.dev.FreeHost(main, stage)).To(Succeed())
					next := h.allocHost(n, kind)
					Expect(next).To(Equal(stage), "%d bytes: the freed block, handed out again", n)
					h.hostWrite(next, filled(n, 0x22))
					h.launch(graph, s)
					h.sync(s)
					Expect(bytes.Equal(h.read(dev), filled(n, 0x22))).To(BeTrue(), "%d bytes: the replay read the block's new owner", n)
					Expect(h.dev.DestroyGraph(main, graph)).To(Succeed())
					Expect(h.dev.FreeHost(main, next)).To(Succeed())
					h.free(dev)
				}
			})
		}

		g.It("HostWrite and HostRead outside one live host allocation fail", func() {
			p := h.allocHost(1*kib, device.Pinned)
			q := h.allocHost(1*kib, device.Pageable)
			dev := h.malloc(1 * kib)
			h.hostWrite(p, filled(p.Bytes, 6))
			h.failed(h.dev.HostWrite(p.Slice(0, 2*kib), make([]byte, 2*kib)))
			h.failed(h.dev.HostWrite(p, make([]byte, 10)), device.ClassInvalidValue)
			h.failed(h.dev.HostRead(make([]byte, 2*kib), p))
			h.failed(h.dev.HostWrite(dev, make([]byte, dev.Bytes)))
			h.failed(h.dev.HostRead(make([]byte, dev.Bytes), dev))
			Expect(h.hostRead(p)).To(Equal(filled(p.Bytes, 6)), "the failed writes wrote nothing")
			Expect(h.dev.FreeHost(main, q)).To(Succeed())
			h.failed(h.dev.HostWrite(q, make([]byte, q.Bytes)))
			h.failed(h.dev.HostRead(make([]byte, q.Bytes), q))
		})

		g.It("FreeHost of what is not a live host allocation, and AllocHost of no bytes or an unknown kind, fail", func() {
			dev := h.malloc(1 * kib)
			p := h.allocHost(1*kib, device.Pinned)
			base := h.dev.Counters()
			h.failed(h.dev.FreeHost(main, dev))
			h.failed(h.dev.FreeHost(main, device.Ptr{Addr: 0x1234, Bytes: 8}))
			_, err := h.dev.AllocHost(main, 0, device.Pinned)
			h.failed(err)
			_, err = h.dev.AllocHost(main, 1*kib, device.HostMemory(0))
			h.failed(err)
			_, err = h.dev.AllocHost(main, 1*kib, device.HostMemory(9))
			h.failed(err)
			Expect(h.dev.Counters()).To(Equal(base), "failed calls count nothing")
			Expect(h.dev.FreeHost(main, p)).To(Succeed())
			h.failed(h.dev.FreeHost(main, p))
			h.failed(h.dev.Free(main, h.allocHost(1*kib, device.Pageable)))
		})
	})
}
