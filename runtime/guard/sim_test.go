package guard_test

import (
	"context"
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// The same hazards on the simulator, under both platform profiles: program mode shows the platform
// letting the silent case through, kernel mode shows the guard refusing it with no side effect.
var _ = Describe("On the simulator", func() {
	var inner *sim.Device

	open := func(profile string) {
		b, err := sim.New(sim.Options{Profile: profile})
		Expect(err).NotTo(HaveOccurred())
		dev, err := b.Open(context.Background(), 0)
		Expect(err).NotTo(HaveOccurred())
		inner = dev.(*sim.Device)
		DeferCleanup(inner.Close)
	}

	for _, profile := range []string{"cann", "cuda"} {
		Context("profile "+profile, func() {
			BeforeEach(func() { open(profile) })

			// rebase captures a fill of a plain buffer, grows it, and puts a bystander of the old size
			// where the graph still points. It returns the graph, the stream and the bystander.
			rebase := func(d *guard.Device) (device.Graph, device.Stream, device.Ptr) {
				GinkgoHelper()
				s := stream(d)
				x, _, err := d.Provision(device.Main, runtime.Plain, "x", device.Ptr{}, 4096)
				Expect(err).NotTo(HaveOccurred())
				write(d, x, 0)
				g := captureFill(d, s, x, 0xAB)
				grown, served, err := d.Provision(device.Main, runtime.Plain, "x", x, 8192)
				Expect(err).NotTo(HaveOccurred())
				Expect(served).To(Equal(runtime.Rebased))
				write(d, grown, 0)
				bystander := malloc(d, 4096)
				Expect(bystander.Addr).To(Equal(x.Addr), "the caching allocator hands the old block out again")
				write(d, bystander, 0)
				return g, s, bystander
			}

			It("program mode: a replay after a re-base silently corrupts a bystander", func() {
				d := guarded(inner, guard.Program)
				g, s, bystander := rebase(d)
				Expect(d.Launch(device.Main, g, s)).To(Succeed())
				Expect(d.SyncStream(device.Main, s)).To(Succeed())
				Expect(read(d, bystander)).To(Equal(filled(bystander, 0xAB)))
			})

			It("kernel mode: the replay after a re-base is refused and writes nothing", func() {
				d := guarded(inner, guard.Kernel)
				g, s, bystander := rebase(d)
				before := inner.Counters()
				expectRefused(d.Launch(device.Main, g, s), "Launch")
				Expect(d.SyncStream(device.Main, s)).To(Succeed())
				Expect(read(d, bystander)).To(Equal(filled(bystander, 0)))
				Expect(inner.Counters()).To(Equal(before))
			})

			It("kernel mode: a same-size free and re-allocation at the same address is refused", func() {
				d := guarded(inner, guard.Kernel)
				s := stream(d)
				x := malloc(d, 4096)
				g := captureFill(d, s, x, 1)
				Expect(d.Free(device.Main, x)).To(Succeed())
				Expect(malloc(d, 4096)).To(Equal(x))
				expectRefused(d.Launch(device.Main, g, s), "Launch")
			})

			It("kernel mode: malloc during a capture is refused and the capture goes on untouched", func() {
				d := guarded(inner, guard.Kernel)
				s := stream(d)
				Expect(d.BeginCapture(device.Main, s, device.Global)).To(Succeed())
				before := inner.Counters()
				_, err := d.Malloc(device.Main, 512)
				expectRefused(err, "Malloc")
				Expect(inner.Counters()).To(Equal(before))
				info, err := d.CaptureInfo(device.Main, s)
				Expect(err).NotTo(HaveOccurred())
				Expect(info.Status).To(Equal(device.CaptureActive), "no invalidation, whatever the platform would do")
				_, err = d.EndCapture(device.Main, s)
				Expect(err).NotTo(HaveOccurred())
			})

			It("kernel mode: off-capture work is refused, the fork and its join are allowed, and the graph replays", func() {
				d := guarded(inner, guard.Kernel)
				origin, side, stray := stream(d), stream(d), stream(d)
				x, y := malloc(d, 1024), malloc(d, 1024)
				write(d, x, 0)
				write(d, y, 0)
				fork, join := event(d), event(d)
				Expect(d.BeginCapture(device.Main, origin, device.Global)).To(Succeed())
				expectRefused(d.Fill(device.Main, stray, x, 9), "Fill")
				Expect(d.Record(device.Main, fork, origin)).To(Succeed())
				Expect(d.Wait(device.Main, side, fork)).To(Succeed())
				Expect(d.Fill(device.Main, side, y, 0x22)).To(Succeed())
				Expect(d.Record(device.Main, join, side)).To(Succeed())
				Expect(d.Wait(device.Main, origin, join)).To(Succeed())
				Expect(d.Fill(device.Main, origin, x, 0x11)).To(Succeed())
				g, err := d.EndCapture(device.Main, origin)
				Expect(err).NotTo(HaveOccurred())
				Expect(read(d, x)).To(Equal(filled(x, 0)), "the refused fill did nothing")

				Expect(d.Launch(device.Main, g, origin)).To(Succeed())
				Expect(d.SyncStream(device.Main, origin)).To(Succeed())
				Expect(read(d, x)).To(Equal(filled(x, 0x11)))
				Expect(read(d, y)).To(Equal(filled(y, 0x22)))
			})

			It("kernel mode: an allocation failure rolls the bank back", func() {
				d := guarded(inner, guard.Kernel)
				base := inner.Counters()
				inner.FailMalloc(2)
				_, err := d.CommitBank(device.Main, []runtime.Region{{Key: "a", Bytes: 4096}, {Key: "b", Bytes: 4096}})
				expectClass(err, device.ClassOutOfMemory, "Malloc")
				Expect(inner.Counters().Leaks(base)).To(BeEmpty())
				_, err = d.CommitBank(device.Main, []runtime.Region{{Key: "a", Bytes: 4096}, {Key: "b", Bytes: 4096}})
				Expect(err).NotTo(HaveOccurred())
				Expect(d.Retire(device.Main)).To(Succeed())
				Expect(inner.Counters().Leaks(base)).To(BeEmpty())
			})

			It("kernel mode: a refused retained growth leaves the buffer usable, also from the other thread", func() {
				d := guarded(inner, guard.Kernel)
				w, _, err := d.Provision(device.Main, runtime.Retained, "w", device.Ptr{}, 2048)
				Expect(err).NotTo(HaveOccurred())
				write(d, w, 0x42)
				before := inner.Counters()
				_, _, err = d.Provision(device.Other, runtime.Retained, "w", w, 4096)
				expectRefused(err, "Provision")
				Expect(inner.Counters()).To(Equal(before))
				Expect(read(d, w)).To(Equal(filled(w, 0x42)))
			})

			It("keeps its books straight under calls from both threads at once", func() {
				d := guarded(inner, guard.Program)
				base := inner.Counters()
				var wg sync.WaitGroup
				errs := make(chan error, 2)
				for _, t := range []device.Thread{device.Main, device.Other} {
					wg.Go(func() {
						key := t.String()
						var cur device.Ptr
						for i := range 50 {
							p, _, err := d.Provision(t, runtime.Retained, key, cur, int64(512*(i+1)))
							if err != nil {
								errs <- fmt.Errorf("%v: provision %d: %w", t, i, err)
								return
							}
							cur = p
							q, err := d.Malloc(t, 512)
							if err == nil {
								err = d.Free(t, q)
							}
							if err != nil {
								errs <- fmt.Errorf("%v: malloc/free %d: %w", t, i, err)
								return
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					Expect(err).NotTo(HaveOccurred())
				}
				Expect(inner.Counters().LiveAllocs - base.LiveAllocs).To(Equal(int64(2)))
				Expect(d.Retire(device.Main)).To(Succeed())
				Expect(inner.Counters().Leaks(base)).To(BeEmpty())
			})
		})
	}
})
