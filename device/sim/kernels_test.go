package sim_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

// EnqueueKernels must be exactly the kernels' own calls in order, stopping at the first that
// fails: the same error, the same memory, the same graph.
var _ = Describe("a batch of kernels (EnqueueKernels)", func() {
	// state runs ks on a fresh device of profile, eagerly or inside a capture, either as one batch
	// or one call each, and returns what it says: how many took, the error, the memory of the
	// two buffers after, and the graph's nodes when captured.
	type state struct {
		n     int
		err   string
		bytes []byte
		nodes []device.GraphNode
	}
	run := func(profile string, captured, asBatch bool, kernels func(a, b device.Ptr) []device.Kernel) state {
		d := onProfile(profile)
		a, b := malloc(d, 4*KiB), malloc(d, 4*KiB)
		s := newStream(d)
		ks := kernels(a, b)
		if captured {
			Expect(d.BeginCapture(main, s, device.Global)).To(Succeed())
		}
		var st state
		var err error
		if asBatch {
			st.n, err = d.EnqueueKernels(main, s, ks)
		} else {
			st.n, err = device.EnqueueEach(d, main, s, ks)
		}
		if err != nil {
			st.err = err.Error()
		}
		if captured {
			g, err := d.EndCapture(main, s)
			Expect(err).NotTo(HaveOccurred())
			st.nodes, err = d.GraphNodes(main, g)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.Launch(main, g, s)).To(Succeed())
		}
		Expect(d.SyncDevice(main)).To(Succeed())
		st.bytes = make([]byte, 8*KiB)
		Expect(d.Read(main, st.bytes[:4*KiB], a)).To(Succeed())
		Expect(d.Read(main, st.bytes[4*KiB:], b)).To(Succeed())
		return st
	}
	valid := func(a, b device.Ptr) []device.Kernel {
		return []device.Kernel{
			{Kind: device.KernelFill, Dst: a, Value: 7},
			{Kind: device.KernelFill, Dst: b.Slice(64, 128), Value: 9},
			{Kind: device.KernelCopy, Dst: a.Slice(1024, 256), Src: b.Slice(0, 256)},
			{Kind: device.KernelAxpy, Dst: b.Slice(0, 512), Src: a.Slice(512, 512), A: 3},
		}
	}
	failing := func(a, b device.Ptr) []device.Kernel {
		ks := valid(a, b)
		// The third kernel writes past its buffer: the batch stops there.
		ks = append(ks[:2], append([]device.Kernel{{Kind: device.KernelFill, Dst: device.Ptr{Addr: b.Addr + 4000, Bytes: 200}, Value: 1}}, ks[2:]...)...)
		return ks
	}
	for _, profile := range sim.Profiles() {
		for _, captured := range []bool{false, true} {
			It(fmt.Sprintf("does what the kernels' own calls do on %s, %s", profile, map[bool]string{false: "eagerly", true: "captured"}[captured]), func() {
				one, each := run(profile, captured, true, valid), run(profile, captured, false, valid)
				Expect(one).To(Equal(each))
				Expect(one.n).To(Equal(4))
				Expect(one.err).To(BeEmpty())
				if captured {
					Expect(one.nodes).To(HaveLen(4))
				}
			})
			It(fmt.Sprintf("stops at the first kernel that fails, with its error, on %s, %s", profile, map[bool]string{false: "eagerly", true: "captured"}[captured]), func() {
				one, each := run(profile, captured, true, failing), run(profile, captured, false, failing)
				Expect(one).To(Equal(each))
				Expect(one.n).To(Equal(2))
				Expect(one.err).To(ContainSubstring("Fill"))
			})
		}
	}
})
