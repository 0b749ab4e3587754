package guard_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/replaycheck/replaycheck/runtime"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// Each spec removes one guard from a kernel-mode Device and shows the hazard that guard covers
// going through; the matching positive specs show the guard refusing it. Together they prove that
// each guard, and not something else, does the refusing.
var _ = Describe("Negative controls", func() {
	var f *fake

	BeforeEach(func() { f = newFake() })

	It("without the retained-slot guard, a retained buffer is re-based and can be freed", func() {
		d := guarded(f, guard.Kernel, guard.Disabled{RetainedSlot: true})
		w, _, err := d.Provision(device.Main, runtime.Retained, "workspace", device.Ptr{}, 1024)
		Expect(err).NotTo(HaveOccurred())
		g, served, err := d.Provision(device.Main, runtime.Retained, "workspace", w, 2048)
		Expect(err).NotTo(HaveOccurred())
		Expect(served).To(Equal(runtime.Rebased))
		Expect(f.Counters().Frees).To(Equal(int64(1)))
		Expect(d.Free(device.Main, g)).To(Succeed())
	})

	It("without the arena guard, a committed region is re-based above its capacity and can be released", func() {
		d := guarded(f, guard.Kernel, guard.Disabled{ArenaBank: true})
		ptrs, err := d.CommitBank(device.Main, []runtime.Region{{Key: "kv", Bytes: 4096}})
		Expect(err).NotTo(HaveOccurred())
		grown, err := d.CommitBank(device.Main, []runtime.Region{{Key: "kv", Bytes: 4097}})
		Expect(err).NotTo(HaveOccurred())
		Expect(grown[0].Addr).NotTo(Equal(ptrs[0].Addr))
		Expect(d.Release(device.Main, runtime.Arena, "kv", grown[0])).To(Succeed())
	})

	It("without the capture watch, off-capture work runs once and never replays, and malloc goes through", func() {
		d := guarded(f, guard.Kernel, guard.Disabled{CaptureWatch: true})
		origin, side := stream(d), stream(d)
		x := malloc(d, 1024)
		Expect(d.BeginCapture(device.Main, origin, device.Global)).To(Succeed())
		_, err := d.Malloc(device.Main, 512)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Fill(device.Main, side, x, 0xEE)).To(Succeed())
		g, err := d.EndCapture(device.Main, origin)
		Expect(err).NotTo(HaveOccurred())
		Expect(read(d, x)).To(Equal(filled(x, 0xEE)), "it ran eagerly")

		write(d, x, 0)
		Expect(d.Launch(device.Main, g, origin)).To(Succeed())
		Expect(read(d, x)).To(Equal(filled(x, 0)), "the replay lost the work: silent wrong data")
	})

	It("without the residency check, a replay after a re-base writes into a bystander", func() {
		d := guarded(f, guard.Kernel, guard.Disabled{Residency: true})
		s := stream(d)
		x, _, err := d.Provision(device.Main, runtime.Plain, "x", device.Ptr{}, 1024)
		Expect(err).NotTo(HaveOccurred())
		g := captureFill(d, s, x, 0xAB)
		grown, _, err := d.Provision(device.Main, runtime.Plain, "x", x, 2048)
		Expect(err).NotTo(HaveOccurred())
		bystander := malloc(d, 1024)
		write(d, bystander, 0)
		write(d, grown, 0)

		Expect(d.Launch(device.Main, g, s)).To(Succeed())
		Expect(read(d, bystander)).To(Equal(filled(bystander, 0xAB)), "the bystander is corrupted")
		Expect(read(d, grown)).To(Equal(filled(grown, 0)), "the buffer the program means got nothing")
	})

	It("without the residency check, a same-address re-allocation replays into the new owner", func() {
		d := guarded(f, guard.Kernel, guard.Disabled{Residency: true})
		s := stream(d)
		x := malloc(d, 1024)
		g := captureFill(d, s, x, 0xAB)
		Expect(d.Free(device.Main, x)).To(Succeed())
		owner := malloc(d, 1024)
		write(d, owner, 0)
		Expect(d.Launch(device.Main, g, s)).To(Succeed())
		Expect(read(d, owner)).To(Equal(filled(owner, 0xAB)))
	})
})
