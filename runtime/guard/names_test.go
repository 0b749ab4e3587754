package guard_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/replaycheck/replaycheck/runtime"

	"github.com/replaycheck/replaycheck/runtime/guard"
)

var _ = Describe("names", func() {
	It("print the guard's enumerations, and a number for a value without a name", func() {
		Expect([]string{guard.Unlatched.String(), guard.Kernel.String(), guard.Mode(5).String()}).To(Equal([]string{"unlatched", "kernel", "mode(5)"}))
		Expect([]string{runtime.Arena.String(), runtime.Slot(3).String()}).To(Equal([]string{"arena", "slot(3)"}))
		Expect([]string{runtime.NotServed.String(), runtime.Rebased.String(), runtime.Served(4).String()}).To(Equal([]string{"not-served", "rebased", "served(4)"}))
	})

	It("parse every slot name, and say what they want otherwise", func() {
		for _, s := range runtime.Slots() {
			Expect(runtime.ParseSlot(s.String())).To(Equal(s))
		}
		_, err := runtime.ParseSlot("heap")
		Expect(err).To(MatchError(`unknown slot "heap" (want plain, retained or arena)`))
		runtime.Slots()[0] = runtime.Arena
		Expect(runtime.Slots()).To(Equal([]runtime.Slot{runtime.Plain, runtime.Retained, runtime.Arena}))
	})
})
