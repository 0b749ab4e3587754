package guard_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

func poolAlloc(d *guard.Device, pool string, n int64) device.Ptr {
	GinkgoHelper()
	p, err := d.PoolAlloc(device.Main, pool, n)
	Expect(err).NotTo(HaveOccurred())
	return p
}

var _ = Describe("Pools", func() {
	var inner *sim.Device
	BeforeEach(func() { inner = openSim("cuda") })

	It("reserve one segment and serve blocks from it with no device call, best fit, rounded to 512 bytes", func() {
		d := guarded(inner, guard.Program)
		Expect(d.ReservePool(device.Main, "cache", 8192, 0)).To(Succeed())
		base := inner.Counters()
		a := poolAlloc(d, "cache", 1000) // a block of 1024
		b := poolAlloc(d, "cache", 512)
		c := poolAlloc(d, "cache", 2048)
		Expect(b.Addr).To(Equal(a.Addr + 1024))
		Expect(c.Addr).To(Equal(b.Addr + 512))
		Expect(inner.Counters().Mallocs).To(Equal(base.Mallocs), "no device allocation")

		Expect(d.PoolFree(device.Main, "cache", a)).To(Succeed())
		small := poolAlloc(d, "cache", 600)
		Expect(small.Addr).To(Equal(a.Addr), "the freed block is the best fit for the next request it holds")
		Expect(d.PoolFree(device.Main, "cache", b)).To(Succeed())
		Expect(d.PoolFree(device.Main, "cache", small)).To(Succeed())
		merged := poolAlloc(d, "cache", 1536)
		Expect(merged.Addr).To(Equal(a.Addr), "freed neighbours merge into one block")
		Expect(inner.Counters().Mallocs).To(Equal(base.Mallocs))
	})

	It("fail a request no free block holds with out-of-memory, changing nothing", func() {
		d := guarded(inner, guard.Kernel)
		Expect(d.ReservePool(device.Main, "small", 2048, 0)).To(Succeed())
		x := poolAlloc(d, "small", 1024)
		_ = poolAlloc(d, "small", 512)
		Expect(d.PoolFree(device.Main, "small", x)).To(Succeed())
		_, err := d.PoolAlloc(device.Main, "small", 1536)
		e := expectClass(err, device.ClassOutOfMemory, "PoolAlloc")
		Expect(e.Detail).To(ContainSubstring("largest free block has 1024"))
		Expect(poolAlloc(d, "small", 1024).Addr).To(Equal(x.Addr), "the failed request took nothing")
	})

	It("reject misuse: an unknown pool, a second reservation, a block it did not hand out", func() {
		d := guarded(inner, guard.Program)
		Expect(d.ReservePool(device.Main, "p", 4096, 0)).To(Succeed())
		expectClass(d.ReservePool(device.Main, "p", 4096, 0), device.ClassInvalidValue, "ReservePool")
		_, err := d.PoolAlloc(device.Main, "q", 512)
		expectClass(err, device.ClassInvalidValue, "PoolAlloc")
		x := poolAlloc(d, "p", 512)
		expectClass(d.PoolFree(device.Main, "p", x.Slice(0, 100)), device.ClassInvalidValue, "PoolFree")
		Expect(d.PoolFree(device.Main, "p", x)).To(Succeed())
		expectClass(d.PoolFree(device.Main, "p", x), device.ClassInvalidValue, "PoolFree")
	})

	It("serve host memory from a host pool, and release every segment at retirement", func() {
		d := guarded(inner, guard.Kernel)
		Expect(d.ReservePool(device.Main, "dev", 4096, 0)).To(Succeed())
		Expect(d.ReservePool(device.Main, "stage", 4096, device.Pinned)).To(Succeed())
		h := poolAlloc(d, "stage", 512)
		Expect(d.HostWrite(h, filled(h, 7))).To(Succeed(), "a block of a host pool is host memory")
		c := inner.Counters()
		Expect(c.LiveAllocs).To(Equal(int64(1)))
		Expect(c.LiveHostAllocs).To(Equal(int64(1)))
		Expect(d.Retire(device.Main)).To(Succeed())
		c = inner.Counters()
		Expect(c.LiveAllocs).To(BeZero())
		Expect(c.LiveHostAllocs).To(BeZero())
		expectClass(d.ReservePool(device.Main, "late", 4096, 0), device.ClassInvalidState, "ReservePool")
	})

	Context("in kernel mode", func() {
		// reuse captures a fill of a pool block, frees the block and hands it to a bystander.
		reuse := func(d *guard.Device) (device.Graph, device.Stream, device.Ptr) {
			GinkgoHelper()
			Expect(d.ReservePool(device.Main, "cache", 8192, 0)).To(Succeed())
			s := stream(d)
			x := poolAlloc(d, "cache", 1024)
			g := captureFill(d, s, x, 0xAB)
			Expect(d.PoolFree(device.Main, "cache", x)).To(Succeed())
			bystander := poolAlloc(d, "cache", 1024)
			Expect(bystander.Addr).To(Equal(x.Addr))
			write(d, bystander, 0)
			return g, s, bystander
		}

		It("program mode replays into the block's next owner, silently", func() {
			d := guarded(inner, guard.Program)
			g, s, bystander := reuse(d)
			Expect(d.Launch(device.Main, g, s)).To(Succeed())
			Expect(read(d, bystander)).To(Equal(filled(bystander, 0xAB)))
		})

		It("refuse the replay: a block handed out again is a new generation", func() {
			d := guarded(inner, guard.Kernel)
			g, s, bystander := reuse(d)
			e := expectRefused(d.Launch(device.Main, g, s), "Launch")
			Expect(e.Detail).To(ContainSubstring("same address, different allocation"))
			Expect(e.Detail).To(ContainSubstring(`a block of pool "cache"`))
			Expect(read(d, bystander)).To(Equal(filled(bystander, 0)))
		})

		It("refuse the replay of a block freed back into the pool, naming the pool", func() {
			d := guarded(inner, guard.Kernel)
			Expect(d.ReservePool(device.Main, "cache", 8192, 0)).To(Succeed())
			s := stream(d)
			x := poolAlloc(d, "cache", 1024)
			g := captureFill(d, s, x, 0xAB)
			Expect(d.PoolFree(device.Main, "cache", x)).To(Succeed())
			e := expectRefused(d.Launch(device.Main, g, s), "Launch")
			Expect(e.Detail).To(ContainSubstring(`freed back in the free space of pool "cache"`))
		})

		It("negative control: without the residency check the reused block is replayed into", func() {
			d := guarded(inner, guard.Kernel, guard.Disabled{Residency: true})
			g, s, bystander := reuse(d)
			Expect(d.Launch(device.Main, g, s)).To(Succeed())
			Expect(read(d, bystander)).To(Equal(filled(bystander, 0xAB)))
		})

		It("refuse pool allocations and frees while a capture is active", func() {
			d := guarded(inner, guard.Kernel)
			Expect(d.ReservePool(device.Main, "cache", 8192, 0)).To(Succeed())
			x := poolAlloc(d, "cache", 512)
			s := stream(d)
			Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
			_, err := d.PoolAlloc(device.Main, "cache", 512)
			expectRefused(err, "PoolAlloc")
			expectRefused(d.PoolFree(device.Main, "cache", x), "PoolFree")
			expectRefused(d.ReservePool(device.Main, "other", 4096, 0), "ReservePool")
			_, err = d.AllocHost(device.Main, 512, device.Pageable)
			expectRefused(err, "AllocHost")
			_, err = d.EndCapture(device.Main, s)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.PoolFree(device.Main, "cache", x)).To(Succeed(), "the refused free changed nothing")
		})
	})
})

var _ = Describe("Host memory through the guard", func() {
	It("is in the residency ledger: a replay reading a staging buffer freed and handed out again is refused", func() {
		inner := openSim("cann")
		for _, mode := range []guard.Mode{guard.Program, guard.Kernel} {
			d := guarded(inner, mode)
			s := stream(d)
			stage, err := d.AllocHost(device.Main, 512, device.Pinned)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.HostWrite(stage, filled(stage, 1))).To(Succeed())
			dst := malloc(d, 512)
			Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
			Expect(d.Copy(device.Main, s, dst, stage)).To(Succeed())
			g, err := d.EndCapture(device.Main, s)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.FreeHost(device.Main, stage)).To(Succeed())
			other, err := d.AllocHost(device.Main, 512, device.Pinned)
			Expect(err).NotTo(HaveOccurred())
			Expect(other.Addr).To(Equal(stage.Addr))
			Expect(d.HostWrite(other, filled(other, 9))).To(Succeed())
			err = d.Launch(device.Main, g, s)
			if mode == guard.Program {
				Expect(err).NotTo(HaveOccurred())
				Expect(read(d, dst)).To(Equal(filled(dst, 9)), "the replay read the new owner's bytes")
			} else {
				expectRefused(err, "Launch")
			}
			Expect(d.FreeHost(device.Main, other)).To(Succeed())
			Expect(d.Free(device.Main, dst)).To(Succeed())
			Expect(d.DestroyGraph(device.Main, g)).To(Succeed())
			Expect(d.DestroyStream(device.Main, s)).To(Succeed())
		}
	})
})

var _ = Describe("Replay isolation", func() {
	var (
		inner           *sim.Device
		scratch, o1, o2 device.Ptr
	)
	// graphs captures two graphs that each fill the shared scratch and copy it to their own output.
	graphs := func(d *guard.Device) (g1, g2 device.Graph, s1, s2 device.Stream) {
		GinkgoHelper()
		scratch, o1, o2 = malloc(d, 512), malloc(d, 512), malloc(d, 512)
		s1, s2 = stream(d), stream(d)
		capture := func(s device.Stream, v byte, out device.Ptr) device.Graph {
			Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
			Expect(d.Fill(device.Main, s, scratch, v)).To(Succeed())
			Expect(d.Copy(device.Main, s, out, scratch)).To(Succeed())
			g, err := d.EndCapture(device.Main, s)
			Expect(err).NotTo(HaveOccurred())
			return g
		}
		return capture(s1, 1, o1), capture(s2, 2, o2), s1, s2
	}
	BeforeEach(func() { inner = openSim("cuda") })

	It("program mode lets concurrent replays sharing memory race", func() {
		d := guarded(inner, guard.Program)
		g1, g2, s1, s2 := graphs(d)
		Expect(d.Launch(device.Main, g1, s1)).To(Succeed())
		Expect(d.Launch(device.Main, g2, s2)).To(Succeed())
		Expect(d.SyncDevice(device.Main)).To(Succeed())
		Expect(read(d, o1)).To(Equal(filled(o1, 2)), "graph 1 copied graph 2's scratch")
	})

	It("kernel mode refuses the second launch while the first may still run, and names the shared range", func() {
		d := guarded(inner, guard.Kernel)
		g1, g2, s1, s2 := graphs(d)
		Expect(d.Launch(device.Main, g1, s1)).To(Succeed())
		e := expectRefused(d.Launch(device.Main, g2, s2), "Launch")
		Expect(e.Detail).To(ContainSubstring("may still be running"))
		Expect(e.Detail).To(ContainSubstring(scratch.String()))
		Expect(d.SyncDevice(device.Main)).To(Succeed())
		Expect(read(d, o1)).To(Equal(filled(o1, 1)))
	})

	It("kernel mode lets ordered launches through: same stream, after a sync, after a wait on an event", func() {
		d := guarded(inner, guard.Kernel)
		g1, g2, s1, s2 := graphs(d)
		Expect(d.Launch(device.Main, g1, s1)).To(Succeed())
		Expect(d.Launch(device.Main, g2, s1)).To(Succeed(), "one stream runs its launches in order")
		Expect(d.SyncStream(device.Main, s1)).To(Succeed())
		Expect(d.Launch(device.Main, g2, s2)).To(Succeed(), "s1's launches completed")
		e := event(d)
		Expect(d.Record(device.Main, e, s2)).To(Succeed())
		Expect(d.Wait(device.Main, s1, e)).To(Succeed())
		Expect(d.Launch(device.Main, g1, s1)).To(Succeed(), "the wait orders s2's launch before it")
		Expect(d.SyncDevice(device.Main)).To(Succeed())
		Expect(read(d, o1)).To(Equal(filled(o1, 1)))
		Expect(read(d, o2)).To(Equal(filled(o2, 2)))
	})

	It("negative control: without the check the concurrent replays race", func() {
		d := guarded(inner, guard.Kernel, guard.Disabled{ReplayIsolation: true})
		g1, g2, s1, s2 := graphs(d)
		Expect(d.Launch(device.Main, g1, s1)).To(Succeed())
		Expect(d.Launch(device.Main, g2, s2)).To(Succeed())
		Expect(d.SyncDevice(device.Main)).To(Succeed())
		Expect(read(d, o1)).To(Equal(filled(o1, 2)))
	})
})
