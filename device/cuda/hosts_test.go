//go:build cgo

package cuda_test

import (
	"bytes"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

// The binding keeps host memory a live graph's copy names past its FreeHost (device/internal/bind
// hosts.go): the fake, as the H200 did, loses the context on a launch whose copy names pinned
// memory freed with cuMemFreeHost since capture, so without the keeping the replays below fail.
var _ = Describe("host memory a graph names", func() {
	var (
		d   device.Device
		log string
		s   device.Stream
		dev device.Ptr
	)
	BeforeEach(func(ctx SpecContext) {
		d, log = openLogged(ctx)
		var err error
		s, err = d.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		dev, err = d.Malloc(device.Main, 4096)
		Expect(err).NotTo(HaveOccurred())
	})
	// upload captures a copy of h to dev and returns its graph.
	upload := func(h device.Ptr) device.Graph {
		GinkgoHelper()
		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		Expect(d.Copy(device.Main, s, dev, h)).To(Succeed())
		g, err := d.EndCapture(device.Main, s)
		Expect(err).NotTo(HaveOccurred())
		return g
	}
	allocOf := func(kind device.HostMemory, n int, fill byte) device.Ptr {
		GinkgoHelper()
		h, err := d.AllocHost(device.Main, int64(n), kind)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.HostWrite(h, bytes.Repeat([]byte{fill}, n))).To(Succeed())
		return h
	}
	alloc := func(kind device.HostMemory, fill byte) device.Ptr { return allocOf(kind, 4096, fill) }
	replayed := func(g device.Graph) []byte {
		GinkgoHelper()
		Expect(d.Launch(device.Main, g, s)).To(Succeed())
		Expect(d.SyncStream(device.Main, s)).To(Succeed())
		got := make([]byte, 4096)
		Expect(d.Read(device.Main, got, dev)).To(Succeed())
		return got
	}
	hostCalls := func() (allocs, frees int) {
		c := calls(log)
		return len(c["cuMemAllocHost_v2"]), len(c["cuMemFreeHost"])
	}

	// Pageable memory of 16 MiB: the C library unmaps a block that large when it is freed, and
	// hands out another address for the next one (the fake does not track pageable memory, so the
	// address is what fails without the keeping).
	for kind, n := range map[device.HostMemory]int{device.Pinned: 4096, device.Pageable: 16 << 20} {
		It("keeps "+kind.String()+" memory past FreeHost while a graph's copy names it: the next allocation of its size takes it, and the replay uploads that one's bytes", func() {
			stage := allocOf(kind, n, 0x11)
			g := upload(stage)
			Expect(d.FreeHost(device.Main, stage)).To(Succeed())
			Expect(d.HostWrite(stage, make([]byte, n))).NotTo(Succeed(), "freed: no longer live host memory")
			c := d.Counters()
			Expect(c.HostFrees).To(Equal(int64(1)))
			Expect(c.LiveHostAllocs).To(BeZero())

			next := allocOf(kind, n, 0x22)
			Expect(next).To(Equal(stage), "the kept block, handed out again")
			Expect(replayed(g)).To(Equal(bytes.Repeat([]byte{0x22}, 4096)), "the replay read the new owner's bytes")
			if kind == device.Pinned {
				allocs, frees := hostCalls()
				Expect([]int{allocs, frees}).To(Equal([]int{1, 0}), "kept and reused without the driver")
			}

			Expect(d.FreeHost(device.Main, next)).To(Succeed())
			Expect(d.DestroyGraph(device.Main, g)).To(Succeed())
			if kind == device.Pinned {
				_, frees := hostCalls()
				Expect(frees).To(Equal(1), "returned to the driver with the last graph that named it")
			}
			fresh := allocOf(kind, n, 0x33)
			if kind == device.Pinned {
				allocs, _ := hostCalls()
				Expect(allocs).To(Equal(2), "nothing kept any more: a new driver allocation")
			}
			Expect(d.FreeHost(device.Main, fresh)).To(Succeed())
		})
	}

	It("frees pinned memory no live graph names at once, and keeps a block while any graph names it", func() {
		stage := alloc(device.Pinned, 0x11)
		g1, g2 := upload(stage), upload(stage)
		Expect(d.DestroyGraph(device.Main, g1)).To(Succeed())
		Expect(d.FreeHost(device.Main, stage)).To(Succeed())
		_, frees := hostCalls()
		Expect(frees).To(BeZero(), "g2 still names it")
		Expect(d.DestroyGraph(device.Main, g2)).To(Succeed())
		_, frees = hostCalls()
		Expect(frees).To(Equal(1))

		other := alloc(device.Pinned, 0x44)
		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		Expect(d.Fill(device.Main, s, dev, 1)).To(Succeed())
		_, err := d.EndCapture(device.Main, s) // a live graph that names no host memory
		Expect(err).NotTo(HaveOccurred())
		Expect(d.FreeHost(device.Main, other)).To(Succeed())
		_, frees = hostCalls()
		Expect(frees).To(Equal(2), "named by no graph: freed through the driver at once")
	})

	It("returns kept blocks to the driver when the device closes", func() {
		stage := alloc(device.Pinned, 0x11)
		upload(stage)
		Expect(d.FreeHost(device.Main, stage)).To(Succeed())
		_, frees := hostCalls()
		Expect(frees).To(BeZero(), "kept")
		Expect(d.Close()).To(Succeed())
		_, frees = hostCalls()
		Expect(frees).To(Equal(1))
	})

	It("keeps pinned memory a capture in progress names, freed before the capture ends (RELAXED lets the thread free)", func() {
		stage := alloc(device.Pinned, 0x11)
		Expect(d.BeginCapture(device.Main, s, device.Relaxed)).To(Succeed())
		Expect(d.Copy(device.Main, s, dev, stage)).To(Succeed())
		Expect(d.FreeHost(device.Main, stage)).To(Succeed())
		g, err := d.EndCapture(device.Main, s)
		Expect(err).NotTo(HaveOccurred())
		allocs, frees := hostCalls()
		Expect([]int{allocs, frees}).To(Equal([]int{2, 1}), "kept, the graph names it; the driver was asked with a pinned byte of its own, freed at once")
		Expect(alloc(device.Pinned, 0x22)).To(Equal(stage))
		Expect(replayed(g)).To(Equal(bytes.Repeat([]byte{0x22}, 4096)))
		Expect(d.DestroyGraph(device.Main, g)).To(Succeed())
	})

	// freeInCapture frees pinned memory that a graph names while another stream captures, in the
	// situation sit, on device d, and says in one line what the free answered, what became of the
	// capture, whether the block is still allocated, and what its end answered.
	type situation struct {
		mode       device.CaptureMode
		freer      device.Thread
		relaxed    bool // the freeing thread exchanges its interaction mode for RELAXED first
		names      bool // the capture in progress copies from the block too
		invalidate bool // a refused allocation invalidates the capture before the free
	}
	freeInCapture := func(d device.Device, sit situation) string {
		GinkgoHelper()
		s, err := d.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		other, err := d.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		dev, err := d.Malloc(device.Main, 4096)
		Expect(err).NotTo(HaveOccurred())
		stage, err := d.AllocHost(device.Main, 4096, device.Pinned)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
		Expect(d.Copy(device.Main, s, dev, stage)).To(Succeed())
		_, err = d.EndCapture(device.Main, s)
		Expect(err).NotTo(HaveOccurred())
		if sit.relaxed {
			old, err := d.ExchangeCaptureMode(sit.freer, device.Relaxed)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() error { _, err := d.ExchangeCaptureMode(sit.freer, old); return err })
		}
		Expect(d.BeginCapture(device.Main, other, sit.mode)).To(Succeed())
		Expect(d.Fill(device.Main, other, dev, 1)).To(Succeed())
		if sit.names {
			Expect(d.Copy(device.Main, other, dev, stage)).To(Succeed())
		}
		if sit.invalidate {
			_, err := d.AllocHost(device.Main, 4096, device.Pinned)
			Expect(device.ClassOf(err)).To(Equal(device.ClassCaptureUnsupported), "%v", err)
		}
		answer := "allowed"
		if e, ok := device.AsError(d.FreeHost(sit.freer, stage)); ok {
			answer = fmt.Sprintf("%d %s invalidated=%v", e.Code, e.Class, e.Invalidated)
		}
		info, err := d.CaptureInfo(device.Main, other)
		Expect(err).NotTo(HaveOccurred())
		live := d.HostWrite(stage, make([]byte, 4096)) == nil
		end := "a graph"
		if _, err := d.EndCapture(device.Main, other); err != nil {
			end = string(device.ClassOf(err))
		}
		return fmt.Sprintf("free: %s; capture: %v; block allocated: %v; end: %s", answer, info.Status, live, end)
	}

	DescribeTable("answers a FreeHost of pinned memory a graph names, inside a capture, as the driver answers cuMemFreeHost, and as the simulator's cuda profile does",
		func(ctx SpecContext, sit situation, refused bool) {
			got := freeInCapture(d, sit)
			Expect(got).To(HavePrefix(map[bool]string{true: "free: 900 capture-unsupported", false: "free: allowed"}[refused]))
			b, err := sim.New(sim.Options{Profile: "cuda"})
			Expect(err).NotTo(HaveOccurred())
			sd, err := b.Open(ctx, 0)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(sd.Close)
			Expect(got).To(Equal(freeInCapture(sd, sit)), "the binding over the fake answers as the simulator")
		},
		Entry("GLOBAL, by the capturing thread", situation{mode: device.Global, freer: device.Main}, true),
		Entry("GLOBAL, by another thread", situation{mode: device.Global, freer: device.Other}, true),
		Entry("THREAD_LOCAL, by the capturing thread, the capture naming the block too", situation{mode: device.ThreadLocal, freer: device.Main, names: true}, true),
		Entry("THREAD_LOCAL, by another thread", situation{mode: device.ThreadLocal, freer: device.Other}, false),
		Entry("RELAXED, by the capturing thread", situation{mode: device.Relaxed, freer: device.Main}, false),
		Entry("GLOBAL, by a thread that exchanged its mode for RELAXED", situation{mode: device.Global, freer: device.Main, relaxed: true}, false),
		Entry("GLOBAL, the capture already invalidated", situation{mode: device.Global, freer: device.Main, invalidate: true}, true),
	)

	It("lets the free through when the driver's answer to the question is out of memory, and gives back a question it could not free", func() {
		stage := alloc(device.Pinned, 0x11)
		upload(stage)
		other, err := d.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.BeginCapture(device.Main, other, device.Global)).To(Succeed())
		Expect(d.Fill(device.Main, other, dev, 1)).To(Succeed())
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "cuMemAllocHost_v2=2")
		Expect(d.FreeHost(device.Main, stage)).To(Succeed(), "out of memory says nothing about the free: kept as before")
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "")
		info, err := d.CaptureInfo(device.Main, other)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Status).To(Equal(device.CaptureActive))
		_, err = d.EndCapture(device.Main, other)
		Expect(err).NotTo(HaveOccurred())

		second := alloc(device.Pinned, 0x22)
		upload(second)
		Expect(d.BeginCapture(device.Main, other, device.Relaxed)).To(Succeed())
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "cuMemFreeHost=999")
		e, ok := device.AsError(d.FreeHost(device.Main, second))
		GinkgoT().Setenv("REPLAYCHECK_FAKE_FAIL", "")
		Expect(ok).To(BeTrue())
		Expect(e.Code).To(Equal(999))
		Expect(d.HostWrite(second, make([]byte, 4096))).To(Succeed(), "refused: still allocated")
		_, err = d.EndCapture(device.Main, other)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Close()).To(Succeed())
		allocs, frees := hostCalls()
		Expect(frees).To(Equal(allocs), "every pinned block the binding allocated, the question's byte included, went back by Close")
	})

	It("leaves the driver out of a capture in progress: a kept block is not freed by a DestroyGraph during a GLOBAL capture, nor handed to an allocation in it", func() {
		stage := alloc(device.Pinned, 0x11)
		g := upload(stage)
		Expect(d.FreeHost(device.Main, stage)).To(Succeed())

		other, err := d.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.BeginCapture(device.Main, other, device.Global)).To(Succeed())
		Expect(d.Fill(device.Main, other, dev, 1)).To(Succeed())
		Expect(d.DestroyGraph(device.Main, g)).To(Succeed())
		_, frees := hostCalls()
		Expect(frees).To(BeZero(), "a cuMemFreeHost now would invalidate the capture")
		info, err := d.CaptureInfo(device.Main, other)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Status).To(Equal(device.CaptureActive))

		_, err = d.AllocHost(device.Main, 4096, device.Pinned)
		Expect(device.ClassOf(err)).To(Equal(device.ClassCaptureUnsupported), "the driver judges it: %v", err)
		_, err = d.EndCapture(device.Main, other)
		Expect(device.ClassOf(err)).To(Equal(device.ClassCaptureInvalidated))

		again, err := d.CreateStream(device.Main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.BeginCapture(device.Main, again, device.Global)).To(Succeed())
		Expect(d.Fill(device.Main, again, dev, 1)).To(Succeed())
		g2, err := d.EndCapture(device.Main, again)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.DestroyGraph(device.Main, g2)).To(Succeed())
		_, frees = hostCalls()
		Expect(frees).To(Equal(1), "given back once no capture is in progress")
	})
})
