package conformance

import (
	"encoding/binary"

	g "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
)

// lanes encodes little-endian uint32 lanes, the axpy kernel's element type.
func lanes(vs ...uint32) []byte {
	out := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(out[4*i:], v)
	}
	return out
}

func streamSpecs(h *harness) {
	g.Context("streams", func() {
		g.It("run their work in enqueue order: a fill, then a copy of it, then another fill", func() {
			s := h.stream()
			x, y := h.malloc(1*mib), h.malloc(1*mib)
			h.fill(s, x, 1)
			h.copy(s, y, x)
			h.fill(s, x, 2)
			h.sync(s)
			Expect(h.read(y)).To(Equal(filled(y.Bytes, 1)), "the copy ran after the first fill and before the second")
			Expect(h.read(x)).To(Equal(filled(x.Bytes, 2)))
		})

		g.It("fill a sub-range only", func() {
			s := h.stream()
			x := h.malloc(2 * kib)
			h.zeroed(x)
			h.fill(s, x.Slice(512, 512), 9)
			h.sync(s)
			got := h.read(x)
			Expect(got[:512]).To(Equal(make([]byte, 512)))
			Expect(got[512:1024]).To(Equal(filled(512, 9)))
			Expect(got[1024:]).To(Equal(make([]byte, 1024)))
		})

		g.It("copy device to device the smaller of the two lengths", func() {
			s := h.stream()
			src, dst := h.malloc(1*kib), h.malloc(2*kib)
			h.write(src, pattern(src.Bytes, 7))
			h.zeroed(dst)
			h.copy(s, dst, src)
			h.sync(s)
			got := h.read(dst)
			Expect(got[:1*kib]).To(Equal(pattern(1*kib, 7)))
			Expect(got[1*kib:]).To(Equal(make([]byte, 1*kib)), "nothing past the source's length")

			h.write(dst, pattern(dst.Bytes, 8))
			h.copy(s, src, dst) // the destination is the shorter one now
			h.sync(s)
			Expect(h.read(src)).To(Equal(pattern(dst.Bytes, 8)[:1*kib]))
		})

		g.It("run the axpy kernel over little-endian uint32 lanes, wrapping; x is only read", func() {
			h.need("kernels")
			s := h.stream()
			x, y := h.malloc(12), h.malloc(12)
			h.write(x, lanes(0xffffffff, 2, 0x80000000))
			h.write(y, lanes(5, 0xffffffff, 1))
			Expect(h.dev.Axpy(main, s, y, x, 3)).To(Succeed())
			h.sync(s)
			Expect(h.read(y)).To(Equal(lanes(2, 5, 0x80000001)))
			Expect(h.read(x)).To(Equal(lanes(0xffffffff, 2, 0x80000000)))
		})

		g.It("take work issued from either thread, on streams created on either thread", func() {
			s, err := h.dev.CreateStream(other, device.Blocking)
			Expect(err).NotTo(HaveOccurred())
			t := h.stream()
			Expect(s).NotTo(Equal(t), "two live streams have distinct handles")
			Expect(s).NotTo(Equal(device.DefaultStream))
			x, y := h.malloc(4*kib), h.malloc(4*kib)
			Expect(h.dev.Fill(main, s, x, 4)).To(Succeed())
			Expect(h.dev.SyncStream(other, s)).To(Succeed())
			Expect(h.dev.Copy(other, t, y, x)).To(Succeed())
			Expect(h.dev.SyncStream(main, t)).To(Succeed())
			Expect(h.read(y)).To(Equal(filled(y.Bytes, 4)))
			Expect(h.dev.DestroyStream(main, s)).To(Succeed())
			Expect(h.dev.DestroyStream(other, t)).To(Succeed())
		})

		g.It("are all waited for by SyncDevice", func() {
			s, t := h.stream(), h.stream()
			x, y := h.malloc(1*mib), h.malloc(1*mib)
			h.fill(s, x, 5)
			h.fill(t, y, 6)
			Expect(h.dev.SyncDevice(main)).To(Succeed())
			Expect(h.read(x)).To(Equal(filled(x.Bytes, 5)))
			Expect(h.read(y)).To(Equal(filled(y.Bytes, 6)))
			Expect(h.dev.SyncDevice(other)).To(Succeed())
		})

		g.It("are counted while they live, and a destroyed one is gone", func() {
			base := h.dev.Counters()
			s, t := h.stream(), h.stream()
			Expect(h.dev.Counters().LiveStreams - base.LiveStreams).To(Equal(int64(2)))
			Expect(h.dev.DestroyStream(main, s)).To(Succeed())
			Expect(h.dev.Counters().LiveStreams - base.LiveStreams).To(Equal(int64(1)))
			x := h.malloc(1 * kib)
			h.failed(h.dev.Fill(main, s, x, 1))
			h.failed(h.dev.SyncStream(main, s))
			h.failed(h.dev.DestroyStream(main, s))
			Expect(h.dev.Counters().LiveStreams - base.LiveStreams).To(Equal(int64(1)))
			Expect(h.dev.DestroyStream(main, t)).To(Succeed())
			h.free(x)
			Expect(h.dev.Counters().Leaks(base)).To(BeEmpty())
		})
	})

	g.Context("the default stream", func() {
		g.It("exists without being created, takes work and synchronises", func() {
			x := h.malloc(4 * kib)
			y := h.malloc(4 * kib)
			Expect(h.dev.Fill(main, device.DefaultStream, x, 7)).To(Succeed())
			Expect(h.dev.Copy(other, device.DefaultStream, y, x)).To(Succeed())
			Expect(h.dev.SyncStream(main, device.DefaultStream)).To(Succeed())
			Expect(h.read(y)).To(Equal(filled(y.Bytes, 7)))
			h.notCapturing(device.DefaultStream)
		})

		g.It("is never destroyed and never counted among the live streams", func() {
			base := h.dev.Counters()
			h.failed(h.dev.DestroyStream(main, device.DefaultStream))
			Expect(h.dev.Counters()).To(Equal(base))
			x := h.malloc(1 * kib)
			Expect(h.dev.Fill(main, device.DefaultStream, x, 1)).To(Succeed(), "still usable after the refused destroy")
			s := h.stream()
			Expect(h.dev.Counters().LiveStreams-base.LiveStreams).To(Equal(int64(1)), "only the created stream is counted")
			Expect(h.dev.DestroyStream(main, s)).To(Succeed())
			Expect(h.dev.Counters().LiveStreams).To(Equal(base.LiveStreams))
		})

		g.It("takes work at once while only a non-blocking stream captures, outside its graph", func() {
			// CUDA's legacy stream does not synchronise with a non-blocking stream, so nothing ties
			// its work to the capture (libuipc#472); every Ascend stream is non-blocking.
			h.need("non-blocking-streams")
			s := h.streamOf(device.NonBlocking)
			x, y := h.malloc(4*kib), h.malloc(4*kib)
			h.zeroed(x)
			h.zeroed(y)
			h.begin(main, s, device.Global)
			h.fill(s, x, 1)
			h.fill(device.DefaultStream, y, 2)
			Expect(h.status(s)).To(Equal(device.CaptureActive), "the default stream's work left the capture as it was")
			graph := h.end(main, s)
			h.sync(device.DefaultStream)
			Expect(h.read(y)).To(Equal(filled(y.Bytes, 2)), "the default stream's work ran at once")
			Expect(h.read(x)).To(Equal(make([]byte, x.Bytes)), "the captured fill has not run")
			h.zeroed(y)
			h.launch(graph, s)
			h.sync(s)
			Expect(h.read(x)).To(Equal(filled(x.Bytes, 1)))
			Expect(h.read(y)).To(Equal(make([]byte, y.Bytes)), "the default stream's work is not in the graph")
		})

		g.It("orders with other streams through events", func() {
			s := h.stream()
			e, f := h.event(), h.event()
			x, y, z := h.malloc(64*kib), h.malloc(64*kib), h.malloc(64*kib)
			h.fill(s, x, 3)
			h.record(e, s)
			h.wait(device.DefaultStream, e)
			h.copy(device.DefaultStream, y, x)
			h.record(f, device.DefaultStream)
			h.wait(s, f)
			h.copy(s, z, y)
			h.sync(s)
			Expect(h.read(z)).To(Equal(filled(z.Bytes, 3)))
		})
	})
}

func eventSpecs(h *harness) {
	g.Context("events", func() {
		g.It("order work across streams: a wait makes a stream's later work follow what was recorded", func() {
			s, t := h.stream(), h.stream()
			e := h.event()
			x, y := h.malloc(1*mib), h.malloc(1*mib)
			h.fill(s, x, 3)
			h.record(e, s)
			h.wait(t, e)
			Expect(h.dev.Copy(other, t, y, x)).To(Succeed())
			h.sync(t)
			Expect(h.read(y)).To(Equal(filled(y.Bytes, 3)))
		})

		g.It("report completion once synchronised: SyncEvent, or the stream that recorded them", func() {
			s := h.stream()
			e, f := h.event(), h.event()
			x := h.malloc(1 * mib)
			h.fill(s, x, 1)
			h.record(e, s)
			Expect(h.dev.SyncEvent(main, e)).To(Succeed())
			done, err := h.dev.QueryEvent(main, e)
			Expect(err).NotTo(HaveOccurred())
			Expect(done).To(BeTrue(), "all work recorded before the event has completed after SyncEvent")
			Expect(h.read(x)).To(Equal(filled(x.Bytes, 1)), "SyncEvent waited for the fill")

			h.fill(s, x, 2)
			Expect(h.dev.Record(other, f, s)).To(Succeed())
			h.sync(s)
			done, err = h.dev.QueryEvent(other, f)
			Expect(err).NotTo(HaveOccurred())
			Expect(done).To(BeTrue(), "all work recorded before the event has completed after SyncStream")
			Expect(h.dev.SyncEvent(other, f)).To(Succeed())
		})

		g.It("can be recorded again: a wait follows the latest record", func() {
			s, t := h.stream(), h.stream()
			e := h.event()
			x, y := h.malloc(4*kib), h.malloc(4*kib)
			h.fill(s, x, 1)
			h.record(e, s)
			h.fill(s, x, 2)
			h.record(e, s)
			h.wait(t, e)
			h.copy(t, y, x)
			h.sync(t)
			Expect(h.read(y)).To(Equal(filled(y.Bytes, 2)))
		})

		g.It("are counted while they live, and a destroyed one is gone", func() {
			base := h.dev.Counters()
			e, f := h.event(), h.event()
			Expect(e).NotTo(Equal(f), "two live events have distinct handles")
			Expect(h.dev.Counters().LiveEvents - base.LiveEvents).To(Equal(int64(2)))
			Expect(h.dev.DestroyEvent(other, e)).To(Succeed())
			Expect(h.dev.Counters().LiveEvents - base.LiveEvents).To(Equal(int64(1)))
			s := h.stream()
			h.failed(h.dev.Record(main, e, s))
			h.failed(h.dev.Wait(main, s, e))
			_, err := h.dev.QueryEvent(main, e)
			h.failed(err)
			h.failed(h.dev.SyncEvent(main, e))
			h.failed(h.dev.DestroyEvent(main, e))
			Expect(h.dev.DestroyEvent(main, f)).To(Succeed())
			Expect(h.dev.Counters().LiveEvents).To(Equal(base.LiveEvents))
		})
	})
}
