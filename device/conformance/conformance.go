package conformance

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	g "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
)

// Opener opens a fresh device for one spec. The suite closes it (Device.Close must succeed) when
// the spec ends; ctx is the spec's context.
type Opener func(ctx context.Context) (device.Device, error)

// Options tune the suite to a backend. The zero value suits the simulator's defaults.
type Options struct {
	// Memory is the device memory in bytes, or an upper bound of what Malloc can hand out; 0
	// means 16 GiB. The reuse spec cycles twice this much through Malloc and Free, in blocks of a
	// quarter of it.
	Memory int64
	// Replays is how many times the replay specs launch one graph; 0 means 5, at least 2.
	Replays int
	// Labels are added to every spec (e.g. "hardware"), for ginkgo --label-filter.
	Labels []string
	// SyncCopiesOnLegacyStream says the platform's synchronous copies (Write, Read) are work on a
	// legacy default stream that synchronises with every blocking stream: during any capture in
	// progress, whatever its mode, the calling thread and its interaction mode, they fail
	// capture-implicit and invalidate the capture. CUDA with blocking streams, as the cuda binding
	// creates them (measured on an H200, driver 13.0; the simulator's cuda profile and the fake
	// libcuda follow it). False: they follow the interaction-mode rule for potentially unsafe
	// calls (ACL).
	SyncCopiesOnLegacyStream bool
	// EndCaptureInstantiates says EndCapture also instantiates the graph, a potentially unsafe
	// call: while another capture is in progress that the calling thread's interaction mode minds
	// (its own non-Relaxed capture when the caller is in Global or ThreadLocal mode, any Global
	// capture when it is in Global mode), the end fails capture-unsupported, the capture is over
	// with no graph, and the other capture is invalidated. CUDA, where the binding calls
	// cuGraphInstantiateWithFlags right after cuStreamEndCapture, as PyTorch does (measured on an
	// H200, driver 13.0; the simulator's cuda profile and the fake libcuda follow it). False: the
	// end gives its graph whatever else is in progress (ACL).
	EndCaptureInstantiates bool
	// ErrorCode, when set, is the platform's code and name for a class of failure no rule covers
	// (sim.Profile.ErrorCode: the simulator's profile, which the fakes' tables are generated from):
	// the fault specs then check that injected faults answer with them.
	ErrorCode func(device.Class) (code int, name string, ok bool)
}

const (
	main  = device.Main
	other = device.Other

	kib = 1 << 10
	mib = 1 << 20
	gib = 1 << 30
)

// Describe registers the conformance suite for the device that open returns, in a Ginkgo container
// named "conformance: <name>". Call it at package level of a Ginkgo test suite:
//
//	var _ = conformance.Describe("sim cann", open, conformance.Options{})
func Describe(name string, open Opener, opts Options) bool {
	if opts.Memory <= 0 {
		opts.Memory = 16 * gib
	}
	if opts.Replays == 0 {
		opts.Replays = 5
	}
	opts.Replays = max(opts.Replays, 2)
	h := &harness{opts: opts}
	args := []any{g.Label(append([]string{"conformance"}, opts.Labels...)...)}
	args = append(args, func() {
		g.BeforeEach(func(ctx g.SpecContext) {
			h.open(ctx, open)
		})
		memorySpecs(h)
		hostSpecs(h)
		streamSpecs(h)
		eventSpecs(h)
		captureSpecs(h)
		replaySpecs(h)
		captureRuleSpecs(h)
		threadSpecs(h)
		handleSpecs(h)
		lifecycleSpecs(h)
		faultSpecs(h)
	})
	return g.Describe("conformance: "+name, args...)
}

// harness holds the device of the running spec and the helpers the specs share. Every helper
// that issues a device call does so from Main unless it takes a Thread.
type harness struct {
	opts   Options
	dev    device.Device
	caps   device.Capabilities
	closed bool
}

func (h *harness) open(ctx context.Context, open Opener) {
	g.GinkgoHelper()
	dev, err := open(ctx)
	Expect(err).NotTo(HaveOccurred(), "opening the device")
	Expect(dev).NotTo(BeNil(), "opening the device")
	h.dev, h.caps, h.closed = dev, dev.Capabilities(), false
	g.DeferCleanup(func() {
		if !h.closed {
			h.closed = true
			Expect(dev.Close()).To(Succeed(), "Close at the end of the spec")
		}
	})
}

// need skips the spec unless the device has the named capability (device.Capabilities.Has).
func (h *harness) need(capability string) {
	if !h.caps.Has(capability) {
		g.Skip(fmt.Sprintf("%s lacks capability %q", h.dev.Describe(), capability))
	}
}

// --- Errors ---

// failed asserts that err is a failure as the contract defines it: a *device.Error (not
// wrapped), of a valid Class that is not the guards' ClassRefused, naming the device's backend and
// an Op. When classes are given, the class must be one of them: the family the contract allows.
func (h *harness) failed(err error, classes ...device.Class) *device.Error {
	g.GinkgoHelper()
	Expect(err).To(HaveOccurred(), "the call must fail")
	e, ok := err.(*device.Error)
	Expect(ok).To(BeTrue(), "every failure is a *device.Error, got %T: %v", err, err)
	Expect(device.ValidClass(e.Class)).To(BeTrue(), "class %q is not one of device.Classes(): %v", e.Class, e)
	Expect(e.Class).NotTo(Equal(device.ClassRefused), "a backend never refuses as a guard does: %v", e)
	Expect(e.Backend).To(Equal(h.dev.Backend()), "the error names the device's backend: %v", e)
	Expect(e.Op).NotTo(BeEmpty(), "the error names the call: %v", e)
	if len(classes) > 0 {
		Expect(slices.Contains(classes, e.Class)).To(BeTrue(), "class %q, want one of %v: %v", e.Class, classes, e)
	}
	return e
}

// --- Memory ---

func (h *harness) malloc(n int64) device.Ptr {
	g.GinkgoHelper()
	return h.mallocOn(main, n)
}

func (h *harness) mallocOn(t device.Thread, n int64) device.Ptr {
	g.GinkgoHelper()
	p, err := h.dev.Malloc(t, n)
	Expect(err).NotTo(HaveOccurred(), "Malloc(%v, %d)", t, n)
	return p
}

func (h *harness) free(p device.Ptr) {
	g.GinkgoHelper()
	Expect(h.dev.Free(main, p)).To(Succeed(), "Free(%v)", p)
}

func (h *harness) allocHost(n int64, kind device.HostMemory) device.Ptr {
	g.GinkgoHelper()
	p, err := h.dev.AllocHost(main, n, kind)
	Expect(err).NotTo(HaveOccurred(), "AllocHost(%d, %v)", n, kind)
	return p
}

// write stores b at p synchronously; zeroed fills p with zeros.
func (h *harness) write(p device.Ptr, b []byte) {
	g.GinkgoHelper()
	Expect(h.dev.Write(main, p, b)).To(Succeed(), "Write(%v)", p)
}

func (h *harness) zeroed(p device.Ptr) { g.GinkgoHelper(); h.write(p, make([]byte, p.Bytes)) }

// read loads p synchronously. Specs synchronise the streams that wrote p first: a synchronous
// copy is not promised to wait for stream work.
func (h *harness) read(p device.Ptr) []byte {
	g.GinkgoHelper()
	out := make([]byte, p.Bytes)
	Expect(h.dev.Read(main, out, p)).To(Succeed(), "Read(%v)", p)
	return out
}

func (h *harness) hostWrite(p device.Ptr, b []byte) {
	g.GinkgoHelper()
	Expect(h.dev.HostWrite(p, b)).To(Succeed(), "HostWrite(%v)", p)
}

func (h *harness) hostRead(p device.Ptr) []byte {
	g.GinkgoHelper()
	out := make([]byte, p.Bytes)
	Expect(h.dev.HostRead(out, p)).To(Succeed(), "HostRead(%v)", p)
	return out
}

// --- Streams, events, graphs ---

func (h *harness) stream() device.Stream { g.GinkgoHelper(); return h.streamOf(device.Blocking) }

func (h *harness) streamOf(f device.StreamFlags) device.Stream {
	g.GinkgoHelper()
	s, err := h.dev.CreateStream(main, f)
	Expect(err).NotTo(HaveOccurred(), "CreateStream(%#x)", uint32(f))
	Expect(s).NotTo(Equal(device.DefaultStream), "a created stream is never the default stream")
	return s
}

func (h *harness) event() device.Event {
	g.GinkgoHelper()
	e, err := h.dev.CreateEvent(main)
	Expect(err).NotTo(HaveOccurred(), "CreateEvent")
	Expect(e).NotTo(BeZero(), "the zero Event is never valid")
	return e
}

func (h *harness) sync(ss ...device.Stream) {
	g.GinkgoHelper()
	for _, s := range ss {
		Expect(h.dev.SyncStream(main, s)).To(Succeed(), "SyncStream(%v)", s)
	}
}

func (h *harness) fill(s device.Stream, p device.Ptr, v byte) {
	g.GinkgoHelper()
	Expect(h.dev.Fill(main, s, p, v)).To(Succeed(), "Fill(%v, %v, %#x)", s, p, v)
}

func (h *harness) copy(s device.Stream, dst, src device.Ptr) {
	g.GinkgoHelper()
	Expect(h.dev.Copy(main, s, dst, src)).To(Succeed(), "Copy(%v, %v <- %v)", s, dst, src)
}

func (h *harness) record(e device.Event, s device.Stream) {
	g.GinkgoHelper()
	Expect(h.dev.Record(main, e, s)).To(Succeed(), "Record(%v, %v)", e, s)
}

func (h *harness) wait(s device.Stream, e device.Event) {
	g.GinkgoHelper()
	Expect(h.dev.Wait(main, s, e)).To(Succeed(), "Wait(%v, %v)", s, e)
}

func (h *harness) begin(t device.Thread, s device.Stream, m device.CaptureMode) {
	g.GinkgoHelper()
	Expect(h.dev.BeginCapture(t, s, m)).To(Succeed(), "BeginCapture(%v, %v, %v)", t, s, m)
}

// end ends the capture s began from thread t and returns its graph.
func (h *harness) end(t device.Thread, s device.Stream) device.Graph {
	g.GinkgoHelper()
	graph, err := h.dev.EndCapture(t, s)
	Expect(err).NotTo(HaveOccurred(), "EndCapture(%v, %v)", t, s)
	Expect(graph).NotTo(BeZero(), "the zero Graph is never valid")
	return graph
}

func (h *harness) launch(graph device.Graph, s device.Stream) {
	g.GinkgoHelper()
	Expect(h.dev.Launch(main, graph, s)).To(Succeed(), "Launch(%v, %v)", graph, s)
}

func (h *harness) info(s device.Stream) device.CaptureInfo {
	g.GinkgoHelper()
	info, err := h.dev.CaptureInfo(main, s)
	Expect(err).NotTo(HaveOccurred(), "CaptureInfo(%v)", s)
	return info
}

func (h *harness) status(s device.Stream) device.CaptureStatus {
	g.GinkgoHelper()
	return h.info(s).Status
}

// notCapturing asserts what CaptureInfo says of a stream in no capture: status none and ID 0.
func (h *harness) notCapturing(s device.Stream) {
	g.GinkgoHelper()
	info := h.info(s)
	Expect(info.Status).To(Equal(device.CaptureNone), "%v: %+v", s, info)
	Expect(info.ID).To(BeZero(), "%v: the ID is 0 when the status is none", s)
}

// rejectedInCapture checks what a capture looks like after a call that failed with e while the
// capture s belongs to was active: invalidated exactly when e says so (Error.Invalidated), active
// otherwise. mayEnd allows a failed EndCapture to have ended the capture instead.
func (h *harness) rejectedInCapture(e *device.Error, s device.Stream, mayEnd bool) {
	g.GinkgoHelper()
	st := h.status(s)
	if mayEnd && st == device.CaptureNone {
		Expect(e.Invalidated).To(BeFalse(), "an error that ended the capture did not leave it invalidated: %v", e)
		return
	}
	if e.Invalidated {
		Expect(st).To(Equal(device.CaptureInvalidated), "the error says it invalidated the capture: %v", e)
	} else {
		Expect(st).To(Equal(device.CaptureActive), "the error does not say it invalidated the capture: %v", e)
	}
}

// finish ends whatever capture the origin s is in, as the contract says each state ends: an active
// capture ends with a graph (returned), an invalidated one fails with ClassCaptureInvalidated,
// returns no graph and is over; a stream in no capture is left alone (0 is returned).
func (h *harness) finish(t device.Thread, s device.Stream) device.Graph {
	g.GinkgoHelper()
	switch st := h.status(s); st {
	case device.CaptureActive:
		return h.end(t, s)
	case device.CaptureInvalidated:
		before := h.dev.Counters()
		graph, err := h.dev.EndCapture(t, s)
		h.failed(err, device.ClassCaptureInvalidated)
		Expect(graph).To(BeZero(), "an invalidated capture yields no graph")
		h.notCapturing(s)
		after := h.dev.Counters()
		Expect(after.LiveGraphs).To(Equal(before.LiveGraphs), "no graph was made")
		Expect(after.CapturesDone).To(Equal(before.CapturesDone), "CapturesDone counts captures that ended with a graph")
	case device.CaptureNone:
	default:
		g.Fail(fmt.Sprintf("%v: unknown capture status %v", s, st))
	}
	return 0
}

// --- Data ---

func filled(n int64, v byte) []byte { return bytes.Repeat([]byte{v}, int(n)) }

// pattern is n bytes that differ from any other seed's and from a fill.
func pattern(n int64, seed byte) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(i*7) ^ seed
	}
	return out
}

// inMode names a spec that runs in capture mode m.
func inMode(text string, m device.CaptureMode) string {
	return fmt.Sprintf("%s [%v capture]", text, m)
}
