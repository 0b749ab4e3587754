package sim_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"gopkg.in/yaml.v3"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

// What an NVIDIA H200 (driver 580.159.04, CUDA 13.0, 2026-12-04) answered for a replay over memory
// freed with cuMemFree, for a capture ended while another is in progress and for pinned host memory
// allocated or freed in a capture, as the cuda profile encodes it; and, for each row, a negative
// control: the profile without it answers otherwise.

// replayAfterFree captures the shape of hazards/replay-after-free (copy src to tmp, tmp to out),
// tmp of n bytes and src and out of io bytes, frees tmp and returns the replay's answer.
func replayAfterFree(d *sim.Device, n, io int64) error {
	GinkgoHelper()
	s := newStream(d)
	src, tmp, out := malloc(d, io), malloc(d, n), malloc(d, io)
	Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
	Expect(d.Copy(main, s, tmp.Slice(0, io), src)).To(Succeed())
	Expect(d.Copy(main, s, out, tmp.Slice(0, io))).To(Succeed())
	g, err := d.EndCapture(main, s)
	Expect(err).NotTo(HaveOccurred())
	Expect(d.Free(main, tmp)).To(Succeed())
	return d.Launch(main, g, s)
}

// endWhileCapturing begins a capture of mode on began and a Global one on Main, ends Main's and
// returns the end's graph, the status of began's capture afterwards and the end's error.
func endWhileCapturing(d *sim.Device, began device.Thread, mode device.CaptureMode) (device.Graph, device.CaptureStatus, error) {
	GinkgoHelper()
	x := malloc(d, 4*KiB)
	s1, s2 := newStream(d), newStream(d)
	Expect(d.BeginCapture(began, s2, mode)).To(Succeed())
	Expect(d.Fill(began, s2, x, 2)).To(Succeed())
	Expect(d.BeginCapture(main, s1, device.Global)).To(Succeed())
	Expect(d.Fill(main, s1, x, 1)).To(Succeed())
	g, err := d.EndCapture(main, s1)
	return g, status(d, s2), err
}

// hostCallInCapture begins a capture of mode on Main with a fill in it, then has t make one call on
// pinned host memory, cuMemAllocHost (alloc) or cuMemFreeHost, and returns the capture's status
// after it and the call's answer.
func hostCallInCapture(d *sim.Device, alloc bool, t device.Thread, mode device.CaptureMode) (device.CaptureStatus, error) {
	GinkgoHelper()
	s, x := newStream(d), malloc(d, 4*KiB)
	h, err := d.AllocHost(main, 4*KiB, device.Pinned)
	Expect(err).NotTo(HaveOccurred())
	Expect(d.BeginCapture(main, s, mode)).To(Succeed())
	Expect(d.Fill(main, s, x, 1)).To(Succeed())
	if alloc {
		_, err = d.AllocHost(t, 4*KiB, device.Pinned)
	} else {
		err = d.FreeHost(t, h)
	}
	return status(d, s), err
}

// endAfterFree captures a fill of a 4 KiB buffer in mode, has t free it (realloc: and allocate
// 4 KiB again, which takes its address) and returns the end's graph, the stream's capture status
// afterwards and the end's answer.
func endAfterFree(d *sim.Device, mode device.CaptureMode, t device.Thread, realloc bool) (device.Graph, device.CaptureStatus, error) {
	GinkgoHelper()
	s, x := newStream(d), malloc(d, 4*KiB)
	Expect(d.BeginCapture(main, s, mode)).To(Succeed())
	Expect(d.Fill(main, s, x, 1)).To(Succeed())
	Expect(d.Free(t, x)).To(Succeed())
	if realloc {
		again, err := d.Malloc(t, 4*KiB)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Addr).To(Equal(x.Addr))
	}
	g, err := d.EndCapture(main, s)
	return g, status(d, s), err
}

// refusedCall checks the answer of a call made in a capture of mode: prepare runs before the
// capture on its stream and returns the call.
func refusedCall(code int, mode device.CaptureMode, prepare func(d *sim.Device, s device.Stream) func() error) func(d *sim.Device) error {
	return func(d *sim.Device) error {
		s := newStream(d)
		call := prepare(d, s)
		Expect(d.BeginCapture(main, s, mode)).To(Succeed())
		if e, ok := device.AsError(call()); !ok || e.Code != code {
			return fmt.Errorf("the call answered %v, not %d", e, code)
		}
		return nil
	}
}

// hostRefused checks the measured 900 and invalidation of hostCallInCapture.
func hostRefused(alloc bool, t device.Thread, mode device.CaptureMode) func(d *sim.Device) error {
	return func(d *sim.Device) error {
		if left, err := hostCallInCapture(d, alloc, t, mode); device.ClassOf(err) != device.ClassCaptureUnsupported || left != device.CaptureInvalidated {
			return fmt.Errorf("the call answered %v, the capture is %v", err, left)
		}
		return nil
	}
}

// profileWithout is the embedded cuda profile, changed by edit, as a document.
func profileWithout(edit func(p *sim.Profile)) []byte {
	GinkgoHelper()
	p, err := sim.LoadProfile("cuda")
	Expect(err).NotTo(HaveOccurred())
	edit(p)
	doc, err := yaml.Marshal(p)
	Expect(err).NotTo(HaveOccurred())
	return doc
}

// endRefused checks the measured answer to ending Main's capture while one that thread began
// began in mode is in progress: 900 (capture-unsupported), and that other capture invalidated.
func endRefused(began device.Thread, mode device.CaptureMode) func(d *sim.Device) error {
	return func(d *sim.Device) error {
		if _, left, err := endWhileCapturing(d, began, mode); device.ClassOf(err) != device.ClassCaptureUnsupported || left != device.CaptureInvalidated {
			return fmt.Errorf("the end answered %v, the other capture is %v", err, left)
		}
		return nil
	}
}

// dropRow removes the one rule whose situation starts with prefix.
func dropRow(prefix string) func(p *sim.Profile) {
	return func(p *sim.Profile) {
		GinkgoHelper()
		n := len(p.Rules)
		p.Rules = slices.DeleteFunc(p.Rules, func(r sim.Rule) bool { return strings.HasPrefix(r.Situation, prefix) })
		Expect(p.Rules).To(HaveLen(n-1), "one row starts %q", prefix)
	}
}

var _ = Describe("cuda, as measured on an H200", func() {
	It("replays over an allocation freed with cuMemFree silently below 2 MiB and fails 700 from 2 MiB, for the probes' sizes", func() {
		for _, n := range []int64{4 * KiB, 64 * KiB, 1 * MiB, 2*MiB - sim.Granularity, 2 * MiB, 4 * MiB, 64 * MiB} {
			for _, io := range []int64{n, 4 * KiB} {
				d := onProfile("cuda")
				err := replayAfterFree(d, n, io)
				if n < 2*MiB {
					Expect(err).NotTo(HaveOccurred(), "tmp of %d bytes, src and out of %d", n, io)
					continue
				}
				e := expectError(err, 700, device.ClassIllegalAddress)
				Expect(e.Detail).To(ContainSubstring(fmt.Sprintf("of %d bytes at capture", n)))
			}
		}
	})

	It("fails 700 when one freed allocation of a graph's is of 2 MiB, whatever the others", func() {
		d := onProfile("cuda")
		s := newStream(d)
		small, big := malloc(d, 4*KiB), malloc(d, 2*MiB)
		Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		Expect(d.Fill(main, s, small, 1)).To(Succeed())
		Expect(d.Fill(main, s, big.Slice(0, 4*KiB), 2)).To(Succeed())
		g, err := d.EndCapture(main, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Free(main, small)).To(Succeed())
		Expect(d.Launch(main, g, s)).To(Succeed())
		Expect(d.Free(main, big)).To(Succeed())
		expectError(d.Launch(main, g, s), 700, device.ClassIllegalAddress)
		again := malloc(d, 2*MiB)
		Expect(again.Addr).To(Equal(big.Addr), "handed out again, the block is another allocation's")
		Expect(d.Launch(main, g, s)).To(Succeed(), "a re-base is silent")
	})

	for _, mode := range []device.CaptureMode{device.Global, device.ThreadLocal} {
		It("ends a capture while another "+mode.String()+" capture of the thread is in progress: 900, no graph, the other invalidated (device/cuda/hardware_test.go)", func() {
			d := onProfile("cuda")
			before := d.Counters()
			x := malloc(d, 4*KiB)
			s1, s2 := newStream(d), newStream(d)
			Expect(d.BeginCapture(main, s1, mode)).To(Succeed())
			Expect(d.Fill(main, s1, x, 1)).To(Succeed())
			Expect(d.BeginCapture(main, s2, mode)).To(Succeed())
			Expect(d.Fill(main, s2, x, 2)).To(Succeed())
			g, err := d.EndCapture(main, s1)
			e := expectError(err, 900, device.ClassCaptureUnsupported)
			Expect(e.Invalidated).To(BeTrue(), "the other capture was invalidated")
			Expect(e.Detail).To(ContainSubstring("the capture is ended without a graph"))
			Expect(g).To(BeZero())
			Expect(status(d, s1)).To(Equal(device.CaptureNone), "the first capture ended")
			Expect(status(d, s2)).To(Equal(device.CaptureInvalidated), "the capture still open")
			_, err = d.EndCapture(main, s2)
			expectError(err, 901, device.ClassCaptureInvalidated)
			after := d.Counters()
			Expect(after.LiveGraphs).To(Equal(before.LiveGraphs))
			Expect(after.CapturesDone).To(Equal(before.CapturesDone))
			Expect(d.Fill(main, s1, x, 9)).To(Succeed())
			Expect(read(d, x)).To(Equal(filled(x.Bytes, 9)), "the ended capture's stream runs eagerly again")
		})
	}

	It("lets the other thread end its capture while this thread's relaxed capture is in progress (device/cuda/hardware_test.go)", func() {
		d := onProfile("cuda")
		x := malloc(d, 4*KiB)
		s1, s2 := newStream(d), newStream(d)
		Expect(d.BeginCapture(other, s1, device.Global)).To(Succeed())
		Expect(d.Fill(other, s1, x, 1)).To(Succeed())
		Expect(d.BeginCapture(main, s2, device.Relaxed)).To(Succeed())
		Expect(d.Fill(main, s2, x, 2)).To(Succeed())
		g1, err := d.EndCapture(other, s1)
		Expect(err).NotTo(HaveOccurred())
		g2, err := d.EndCapture(main, s2)
		Expect(err).NotTo(HaveOccurred())
		Expect(errors.Join(d.DestroyGraph(main, g1), d.DestroyGraph(main, g2))).To(Succeed())
	})

	It("refuses the end's instantiation during another thread's GLOBAL capture, in GLOBAL mode only", func() {
		for _, mode := range device.CaptureModes() {
			for _, caller := range device.CaptureModes() {
				d := onProfile("cuda")
				_, err := d.ExchangeCaptureMode(main, caller)
				Expect(err).NotTo(HaveOccurred())
				g, left, err := endWhileCapturing(d, device.Other, mode)
				at := fmt.Sprintf("another thread's %v capture, caller in %v", mode, caller)
				if mode == device.Global && caller == device.Global {
					Expect(expectError(err, 900, device.ClassCaptureUnsupported).Invalidated).To(BeTrue(), at)
					Expect(g).To(BeZero(), at)
					Expect(left).To(Equal(device.CaptureInvalidated), at)
					continue
				}
				Expect(err).NotTo(HaveOccurred(), at)
				Expect(g).NotTo(BeZero(), at)
				Expect(left).To(Equal(device.CaptureActive), at)
			}
		}
	})

	It("answers cuMemAllocHost and cuMemFreeHost in a capture as the H200 did: 900 and the capture invalidated where the capture minds the caller's unsafe calls", func() {
		for _, alloc := range []bool{true, false} {
			for _, mode := range device.CaptureModes() {
				for _, t := range []device.Thread{main, other} {
					left, err := hostCallInCapture(onProfile("cuda"), alloc, t, mode)
					at := fmt.Sprintf("alloc %v, %v capture, by %v", alloc, mode, t)
					if mode == device.Global || (mode == device.ThreadLocal && t == main) {
						Expect(expectError(err, 900, device.ClassCaptureUnsupported).Invalidated).To(BeTrue(), at)
						Expect(left).To(Equal(device.CaptureInvalidated), at)
						continue
					}
					Expect(err).NotTo(HaveOccurred(), at)
					Expect(left).To(Equal(device.CaptureActive), at)
				}
			}
		}
	})

	It("refuses the end of a capture holding a fill of memory freed during it: 1, no graph; allocated again at the address, or a buffer no node names, it makes the graph", func() {
		for _, c := range []struct {
			mode device.CaptureMode
			t    device.Thread
		}{{device.Relaxed, main}, {device.ThreadLocal, other}} {
			g, left, err := endAfterFree(onProfile("cuda"), c.mode, c.t, false)
			e := expectError(err, 1, device.ClassInvalidValue)
			Expect(e.Detail).To(ContainSubstring("lies in no live allocation"))
			Expect(g).To(BeZero())
			Expect(left).To(Equal(device.CaptureNone), "the capture is over")

			g, _, err = endAfterFree(onProfile("cuda"), c.mode, c.t, true)
			Expect(err).NotTo(HaveOccurred(), "allocated again at the same address")
			Expect(g).NotTo(BeZero())
		}
		d := onProfile("cuda")
		s, x, y := newStream(d), malloc(d, 4*KiB), malloc(d, 4*KiB)
		Expect(d.BeginCapture(main, s, device.Relaxed)).To(Succeed())
		Expect(d.Fill(main, s, x, 1)).To(Succeed())
		Expect(d.Free(main, y)).To(Succeed())
		_, err := d.EndCapture(main, s)
		Expect(err).NotTo(HaveOccurred(), "the freed buffer is no node's")
	})

	// Negative controls: the profile without the row (or with the 700 row unbounded) answers
	// otherwise, so each spec above depends on its row.
	DescribeTable("without its row, a measured answer is gone",
		func(edit func(p *sim.Profile), measured func(d *sim.Device) error) {
			Expect(measured(onProfile("cuda"))).To(Succeed(), "with the row")
			d := openDevice(sim.Options{ProfileYAML: profileWithout(edit)})
			Expect(measured(d)).NotTo(Succeed(), "without the row")
		},
		Entry("700 over a freed 2 MiB allocation",
			dropRow("replay of a graph over an allocation of 2 MiB or more freed"),
			func(d *sim.Device) error {
				if e, ok := device.AsError(replayAfterFree(d, 2*MiB, 4*KiB)); !ok || e.Code != 700 {
					return fmt.Errorf("the replay answered %v, not 700", e)
				}
				return nil
			}),
		Entry("a silent replay over a freed 1 MiB allocation (the 700 row without its bound)",
			func(p *sim.Profile) {
				i := slices.IndexFunc(p.Rules, func(r sim.Rule) bool { return r.When == "graph-range-freed" && !r.Allow })
				Expect(i).To(BeNumerically(">=", 0))
				p.Rules[i].FreedBytes = sim.ByteRange{}
			},
			func(d *sim.Device) error { return replayAfterFree(d, 1*MiB, 4*KiB) }),
		Entry("900 at an end during the thread's own other GLOBAL capture",
			dropRow("end a capture while the calling thread's own other GLOBAL or THREAD_LOCAL capture"),
			endRefused(device.Main, device.Global)),
		Entry("900 at an end during the thread's own other THREAD_LOCAL capture",
			dropRow("end a capture while the calling thread's own other GLOBAL or THREAD_LOCAL capture"),
			endRefused(device.Main, device.ThreadLocal)),
		Entry("900 for cuMemAllocHost by the capturing thread",
			dropRow("cuMemAllocHost or cuMemFreeHost by the capturing thread in GLOBAL"),
			hostRefused(true, device.Main, device.ThreadLocal)),
		Entry("900 for cuMemFreeHost by another thread during a GLOBAL capture",
			dropRow("cuMemAllocHost or cuMemFreeHost by another thread while a GLOBAL"),
			hostRefused(false, device.Other, device.Global)),
		Entry("1 at the end of a capture holding a fill of memory freed during it",
			dropRow("end a capture holding a fill of memory freed during the capture"),
			func(d *sim.Device) error {
				if _, _, err := endAfterFree(d, device.Relaxed, device.Main, false); device.ClassOf(err) != device.ClassInvalidValue {
					return fmt.Errorf("the end answered %v", err)
				}
				return nil
			}),
		Entry("905 for a wait on an event recorded before the capture",
			dropRow("wait on an event recorded before the capture began"),
			refusedCall(905, device.Relaxed, func(d *sim.Device, s device.Stream) func() error {
				e, err := d.CreateEvent(main)
				Expect(err).NotTo(HaveOccurred())
				Expect(d.Record(main, e, s)).To(Succeed())
				return func() error { return d.Wait(main, s, e) }
			})),
		Entry("401 for a begin on a capturing stream",
			dropRow("begin a capture on a stream that is already capturing"),
			refusedCall(401, device.ThreadLocal, func(d *sim.Device, s device.Stream) func() error {
				return func() error { return d.BeginCapture(main, s, device.ThreadLocal) }
			})),
		Entry("900 for cuMemAlloc by the capturing thread",
			dropRow("cuMemAlloc by the capturing thread"),
			refusedCall(900, device.ThreadLocal, func(d *sim.Device, s device.Stream) func() error {
				return func() error { _, err := d.Malloc(main, 4*KiB); return err }
			})),
		Entry("900 for cuMemFree by another thread during a GLOBAL capture",
			dropRow("cuMemFree by another thread while a GLOBAL"),
			refusedCall(900, device.Global, func(d *sim.Device, s device.Stream) func() error {
				x := malloc(d, 4*KiB)
				return func() error { return d.Free(other, x) }
			})),
		Entry("900 at an end during another thread's GLOBAL capture",
			dropRow("end a capture while another thread's GLOBAL capture is in progress, in GLOBAL"),
			endRefused(device.Other, device.Global)),
	)
})
