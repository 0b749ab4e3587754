//go:build cgo

package acl_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/runtime"
)

// Fault injection through the fake library's own entry point: each kind answered with the
// platform's code, the faults that fired listed, and a lost device released clean by Close.
var _ = Describe("fault injection on the fake library", func() {
	var (
		d   runtime.Device
		inj runtime.FaultInjector
	)
	BeforeEach(func(ctx SpecContext) {
		_, d = open(ctx, libs.full)
		Expect(d.Capabilities().FaultInjection).To(BeTrue())
		inj = d.(runtime.FaultInjector)
	})
	// graph captures one fill of p on s.
	graph := func(s runtime.Stream, p runtime.Ptr) runtime.Graph {
		GinkgoHelper()
		Expect(d.BeginCapture(runtime.Main, s, runtime.Global)).To(Succeed())
		Expect(d.Fill(runtime.Main, s, p, 7)).To(Succeed())
		g, err := d.EndCapture(runtime.Main, s)
		Expect(err).NotTo(HaveOccurred())
		return g
	}
	code := func(err error) []any {
		e, ok := runtime.AsError(err)
		Expect(ok).To(BeTrue(), "%v", err)
		return []any{e.Code, e.Name, e.Class}
	}

	It("fails the N-th allocation, then a launch, then loses the device, each with the platform's code", func() {
		Expect(inj.InjectFault(runtime.Fault{Kind: runtime.FaultAllocFail, N: 2})).To(Succeed())
		p, err := d.Malloc(runtime.Main, 4096)
		Expect(err).NotTo(HaveOccurred())
		_, err = d.Malloc(runtime.Main, 4096)
		Expect(code(err)).To(Equal([]any{207001, code(err)[1], runtime.ClassOutOfMemory}))
		Expect(err).To(MatchError(ContainSubstring("fault alloc-fail")))
		Expect(d.Counters().LiveAllocs).To(Equal(int64(1)), "the failed allocation holds nothing")

		s, err := d.CreateStream(runtime.Main)
		Expect(err).NotTo(HaveOccurred())
		g := graph(s, p)
		Expect(inj.InjectFault(runtime.Fault{Kind: runtime.FaultLaunchFail, N: 2})).To(Succeed())
		Expect(d.Launch(runtime.Main, g, s)).To(Succeed())
		err = d.Launch(runtime.Main, g, s)
		Expect(code(err)).To(Equal([]any{507000, "ACL_ERROR_RT_INTERNAL_ERROR", runtime.ClassInternal}))
		Expect(d.Launch(runtime.Main, g, s)).To(Succeed(), "a launch failure leaves the device usable")

		Expect(inj.InjectFault(runtime.Fault{Kind: runtime.FaultDeviceLost, N: 1})).To(Succeed())
		err = d.Launch(runtime.Main, g, s)
		Expect(code(err)).To(Equal([]any{507010, "ACL_ERROR_RT_LOST_HEARTBEAT", runtime.ClassDeviceLost}))
		_, err = d.Malloc(runtime.Other, 512)
		Expect(code(err)).To(Equal([]any{507010, "ACL_ERROR_RT_LOST_HEARTBEAT", runtime.ClassDeviceLost}), "a lost device answers every call so")
		Expect(d.SyncDevice(runtime.Main)).To(MatchError(ContainSubstring("the device is lost")))

		Expect(inj.FiredFaults()).To(Equal([]runtime.Fault{
			{Kind: runtime.FaultAllocFail, N: 2}, {Kind: runtime.FaultLaunchFail, N: 2}, {Kind: runtime.FaultDeviceLost, N: 1},
		}))
		// Close (the cleanup open registered) releases the lost device without an error.
	})

	It("disarms what has not fired, and refuses a fault that cannot fire", func() {
		Expect(inj.InjectFault(runtime.Fault{Kind: runtime.FaultAllocFail, N: 1})).To(Succeed())
		Expect(inj.ClearFaults()).To(Succeed())
		p, err := d.Malloc(runtime.Main, 512)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Free(runtime.Main, p)).To(Succeed())
		Expect(inj.FiredFaults()).To(BeEmpty())
		Expect(runtime.ClassOf(inj.InjectFault(runtime.Fault{Kind: runtime.FaultHang, N: 0}))).To(Equal(runtime.ClassInvalidValue))
		Expect(runtime.ClassOf(inj.InjectFault(runtime.Fault{Kind: 9, N: 1}))).To(Equal(runtime.ClassInvalidValue))
	})
})
