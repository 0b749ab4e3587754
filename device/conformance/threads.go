package conformance

import (
	"fmt"
	"sync"

	g "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
)

// unsafeRefused says whether a synchronous copy made while a capture is in progress is refused.
// Where synchronous copies are legacy-stream work (Options.SyncCopiesOnLegacyStream: CUDA) it
// always is. Elsewhere the rule for a potentially unsafe call decides (minds).
func unsafeRefused(opts Options, captureMode, callerMode device.CaptureMode, callerBegan bool) bool {
	return opts.SyncCopiesOnLegacyStream || minds(captureMode, callerMode, callerBegan)
}

// minds is the rule both platforms document for a potentially unsafe call made while a capture is
// in progress, by the calling thread's capture interaction mode: Relaxed never refuses; ThreadLocal
// refuses during the caller's own non-relaxed capture; Global also refuses during any Global
// capture, whichever thread began it.
func minds(captureMode, callerMode device.CaptureMode, callerBegan bool) bool {
	switch {
	case callerMode == device.Relaxed:
		return false
	case callerBegan:
		return captureMode != device.Relaxed
	default:
		return captureMode == device.Global && callerMode == device.Global
	}
}

func threadSpecs(h *harness) {
	g.Context("threads", func() {
		g.It("are Main and Other, and any other Thread value is refused", func() {
			Expect(device.Main.String()).To(Equal("main"))
			Expect(device.Other.String()).To(Equal("other"))
			base := h.dev.Counters()
			bad := device.Thread(7)
			_, err := h.dev.Malloc(bad, 512)
			h.failed(err)
			_, err = h.dev.CreateStream(bad, device.Blocking)
			h.failed(err)
			_, err = h.dev.ExchangeCaptureMode(bad, device.Relaxed)
			h.failed(err)
			h.failed(h.dev.SyncDevice(bad))
			Expect(h.dev.Counters()).To(Equal(base))
		})

		g.It("share one device: memory, streams and events made on one thread serve the other", func() {
			p := h.mallocOn(other, 4*kib)
			s, err := h.dev.CreateStream(other, device.Blocking)
			Expect(err).NotTo(HaveOccurred())
			e, err := h.dev.CreateEvent(other)
			Expect(err).NotTo(HaveOccurred())
			Expect(h.dev.Fill(main, s, p, 2)).To(Succeed())
			Expect(h.dev.Record(main, e, s)).To(Succeed())
			Expect(h.dev.SyncEvent(other, e)).To(Succeed())
			Expect(h.read(p)).To(Equal(filled(p.Bytes, 2)))
			Expect(h.dev.DestroyEvent(main, e)).To(Succeed())
			Expect(h.dev.DestroyStream(main, s)).To(Succeed())
			h.free(p)
		})

		g.It("may be driven from many goroutines at once: allocations stay disjoint and the counters exact", func() {
			const workers, rounds = 8, 25
			base := h.dev.Counters()
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer g.GinkgoRecover()
					defer wg.Done()
					t := []device.Thread{main, other}[w%2]
					s, err := h.dev.CreateStream(t, device.Blocking)
					Expect(err).NotTo(HaveOccurred())
					for r := range rounds {
						p, err := h.dev.Malloc(t, int64(512*(1+(w+r)%5)))
						Expect(err).NotTo(HaveOccurred())
						want := pattern(p.Bytes, byte(w*rounds+r))
						Expect(h.dev.Write(t, p, want)).To(Succeed())
						Expect(h.dev.Fill(t, s, p.Slice(0, 1), byte(w))).To(Succeed())
						Expect(h.dev.SyncStream(t, s)).To(Succeed())
						want[0] = byte(w)
						got := make([]byte, p.Bytes)
						Expect(h.dev.Read(t, got, p)).To(Succeed())
						Expect(got).To(Equal(want), "worker %d round %d: another goroutine's allocation overlapped", w, r)
						Expect(h.dev.Free(t, p)).To(Succeed())
					}
					Expect(h.dev.DestroyStream(t, s)).To(Succeed())
				}()
			}
			wg.Wait()
			c := h.dev.Counters()
			Expect(c.Mallocs - base.Mallocs).To(Equal(int64(workers * rounds)))
			Expect(c.Frees - base.Frees).To(Equal(int64(workers * rounds)))
			Expect(c.Leaks(base)).To(BeEmpty())
		})
	})

	g.Context("capture interaction modes of threads", func() {
		g.It("start Global on each thread; an exchange sets one thread's mode and returns the one it replaces", func() {
			for _, t := range []device.Thread{main, other} {
				old, err := h.dev.ExchangeCaptureMode(t, device.ThreadLocal)
				Expect(err).NotTo(HaveOccurred())
				Expect(old).To(Equal(device.Global), "%v starts in Global", t)
			}
			old, err := h.dev.ExchangeCaptureMode(other, device.Relaxed)
			Expect(err).NotTo(HaveOccurred())
			Expect(old).To(Equal(device.ThreadLocal))
			old, err = h.dev.ExchangeCaptureMode(main, device.Global)
			Expect(err).NotTo(HaveOccurred())
			Expect(old).To(Equal(device.ThreadLocal), "exchanging Other's mode left Main's alone")
			old, err = h.dev.ExchangeCaptureMode(other, device.Global)
			Expect(err).NotTo(HaveOccurred())
			Expect(old).To(Equal(device.Relaxed))
		})

		g.It("refuse an unknown mode and keep the thread's mode", func() {
			_, err := h.dev.ExchangeCaptureMode(main, device.Relaxed)
			Expect(err).NotTo(HaveOccurred())
			_, err = h.dev.ExchangeCaptureMode(main, device.CaptureMode(7))
			h.failed(err)
			old, err := h.dev.ExchangeCaptureMode(main, device.Global)
			Expect(err).NotTo(HaveOccurred())
			Expect(old).To(Equal(device.Relaxed))
		})

		for _, call := range []string{"Write", "Read"} {
			for _, began := range []device.Thread{main, other} {
				for _, caller := range []device.Thread{main, other} {
					for _, m := range device.CaptureModes() {
						for _, cm := range device.CaptureModes() {
							refused := unsafeRefused(h.opts, m, cm, caller == began)
							verdict := "allowed"
							if refused {
								verdict = "refused"
							}
							who := "the capturing thread"
							if caller != began {
								who = "the other thread"
							}
							text := fmt.Sprintf("%s by %s (%v, interaction mode %v) during a %v capture begun on %v: %s",
								call, who, caller, cm, m, began, verdict)
							g.It(text, func() {
								h.need("thread-rules")
								unsafeCallSpec(h, call, began, caller, m, cm, refused)
							})
						}
					}
				}
			}
		}

		for _, began := range []device.Thread{main, other} {
			for _, m := range device.CaptureModes() {
				for _, cm := range device.CaptureModes() {
					refused := h.opts.EndCaptureInstantiates && minds(m, cm, began == main)
					verdict := "ends with its graph"
					if refused {
						verdict = "fails capture-unsupported with no graph and invalidates the other"
					}
					who := "Main's own"
					if began != main {
						who = "the other thread's"
					}
					text := fmt.Sprintf("EndCapture by Main (interaction mode %v) while %s %v capture is in progress: %s", cm, who, m, verdict)
					g.It(text, func() {
						h.need("thread-rules")
						endDuringOtherCaptureSpec(h, began, m, cm, refused)
					})
				}
			}
		}

		for _, m := range []device.CaptureMode{device.Global, device.ThreadLocal} {
			g.It(inMode("EndCapture from the thread that did not begin the capture fails wrong-thread and makes no graph", m), func() {
				h.need("thread-rules")
				s := h.stream()
				x := h.malloc(1 * kib)
				base := h.dev.Counters()
				h.begin(main, s, m)
				h.fill(s, x, 1)
				graph, err := h.dev.EndCapture(other, s)
				e := h.failed(err, device.ClassWrongThread)
				Expect(graph).To(BeZero())
				Expect(h.dev.Counters().LiveGraphs).To(Equal(base.LiveGraphs))
				h.rejectedInCapture(e, s, true) // ACL ends the capture on this error, CUDA leaves it
				h.finish(main, s)
				h.notCapturing(s)
			})
		}

		g.It(inMode("EndCapture from the thread that did not begin the capture succeeds", device.Relaxed), func() {
			s := h.stream()
			x := h.malloc(1 * kib)
			h.zeroed(x)
			h.begin(main, s, device.Relaxed)
			h.fill(s, x, 1)
			graph := h.end(other, s)
			h.notCapturing(s)
			h.launch(graph, s)
			h.sync(s)
			Expect(h.read(x)).To(Equal(filled(x.Bytes, 1)))
		})
	})
}

// unsafeCallSpec begins a capture of mode m on thread began, sets the caller's interaction mode to
// cm, and makes one synchronous copy (Write or Read) from caller: refused with a capture class
// and without effect, or carried out. Where the copy is legacy-stream work it is refused
// capture-implicit and invalidates the capture.
func unsafeCallSpec(h *harness, call string, began, caller device.Thread, m, cm device.CaptureMode, refused bool) {
	g.GinkgoHelper()
	s := h.stream()
	x := h.malloc(1 * kib)
	h.write(x, filled(x.Bytes, 1))
	h.begin(began, s, m)
	old, err := h.dev.ExchangeCaptureMode(caller, cm)
	Expect(err).NotTo(HaveOccurred())
	Expect(old).To(Equal(device.Global))

	got := make([]byte, x.Bytes)
	switch call {
	case "Write":
		err = h.dev.Write(caller, x, filled(x.Bytes, 2))
	case "Read":
		err = h.dev.Read(caller, got, x)
	}
	_, xerr := h.dev.ExchangeCaptureMode(caller, device.Global)
	Expect(xerr).NotTo(HaveOccurred())

	want := filled(x.Bytes, 1)
	switch {
	case refused && h.opts.SyncCopiesOnLegacyStream:
		e := h.failed(err, syncCopyInCapture...)
		Expect(e.Invalidated).To(BeTrue(), "legacy-stream work invalidates the capture: %v", e)
		h.rejectedInCapture(e, s, false)
	case refused:
		e := h.failed(err, unsafeInCapture...)
		h.rejectedInCapture(e, s, false)
	default:
		Expect(err).NotTo(HaveOccurred(), "%s is allowed here", call)
		Expect(h.status(s)).To(Equal(device.CaptureActive))
		if call == "Write" {
			want = filled(x.Bytes, 2)
		} else {
			Expect(got).To(Equal(want), "the Read returned the buffer")
		}
	}
	h.finish(began, s)
	Expect(h.read(x)).To(Equal(want), "a refused Write wrote nothing; an allowed one wrote")
}

// endDuringOtherCaptureSpec begins a capture of mode m on thread began (the other capture) and a
// Global capture on Main, sets Main's interaction mode to cm and ends Main's capture: refused where
// EndCapture instantiates the graph and the other capture is one cm minds (the capture is then
// over with no graph and the other invalidated), or ended with its graph, the other left active.
func endDuringOtherCaptureSpec(h *harness, began device.Thread, m, cm device.CaptureMode, refused bool) {
	g.GinkgoHelper()
	s, t := h.stream(), h.stream()
	x, y := h.malloc(1*kib), h.malloc(1*kib)
	h.zeroed(x)
	h.zeroed(y)
	h.begin(began, t, m)
	Expect(h.dev.Fill(began, t, y, 2)).To(Succeed())
	h.begin(main, s, device.Global)
	h.fill(s, x, 1)
	old, err := h.dev.ExchangeCaptureMode(main, cm)
	Expect(err).NotTo(HaveOccurred())
	Expect(old).To(Equal(device.Global))
	base := h.dev.Counters()
	graph, err := h.dev.EndCapture(main, s)
	_, xerr := h.dev.ExchangeCaptureMode(main, device.Global)
	Expect(xerr).NotTo(HaveOccurred())

	if refused {
		h.instantiationRefused(graph, err, s, t, base)
		h.finish(began, t)
		return
	}
	Expect(err).NotTo(HaveOccurred(), "EndCapture while %v's %v capture is in progress", began, m)
	Expect(graph).NotTo(BeZero())
	h.notCapturing(s)
	Expect(h.status(t)).To(Equal(device.CaptureActive), "ending one capture leaves the other")
	Expect(h.finish(began, t)).NotTo(BeZero(), "the other capture ends with its graph")
	h.launch(graph, s)
	h.sync(s)
	Expect(h.read(x)).To(Equal(filled(x.Bytes, 1)))
	Expect(h.read(y)).To(Equal(make([]byte, y.Bytes)), "the ended graph holds its own capture's work only")
}

// instantiationRefused checks EndCapture's answer on s where instantiating the graph was refused
// for the capture still in progress on t (base: the counters before the call): capture-unsupported,
// no graph, s's capture over, t's invalidated and the error saying so.
func (h *harness) instantiationRefused(graph device.Graph, err error, s, t device.Stream, base device.Counters) {
	g.GinkgoHelper()
	e := h.failed(err, device.ClassCaptureUnsupported)
	Expect(graph).To(BeZero(), "a refused instantiation leaves no graph")
	h.notCapturing(s)
	Expect(e.Invalidated).To(BeTrue(), "the error says it invalidated the other capture: %v", e)
	Expect(h.status(t)).To(Equal(device.CaptureInvalidated), "the capture still in progress is invalidated")
	Expect(h.dev.Counters().LiveGraphs).To(Equal(base.LiveGraphs), "no graph was made")
}
