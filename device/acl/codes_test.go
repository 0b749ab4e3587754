package acl_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device/acl"
	"github.com/replaycheck/replaycheck/device/sim"
)

// The binding's code table and the simulator's cann profile state the same platform facts: every
// code the profile answers with has the same name and class here, so the two cannot drift.
var _ = Describe("the code table", func() {
	It("agrees with the simulator's cann profile on every code the profile uses", func() {
		p, err := sim.LoadProfile("cann")
		Expect(err).NotTo(HaveOccurred())
		for class, c := range p.Errors {
			name, got := acl.Lookup(c.Code)
			Expect([]any{name, got}).To(Equal([]any{c.Name, class}), "profile error code %d", c.Code)
		}
		for _, r := range p.Rules {
			if r.Allow {
				continue
			}
			name, got := acl.Lookup(r.Code)
			Expect([]any{name, got}).To(Equal([]any{r.Name, r.Class}), "rule %q", r.Situation)
		}
	})
})
