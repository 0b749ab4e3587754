package probes

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	gm "github.com/onsi/gomega"
)

// An internal test: it lowers the race check's budget instead of building a huge probe.
var _ = Describe("the race check's budget", func() {
	It("stops comparing and reports a limit once the budget is spent", func() {
		lim := tuneRace(DefaultLimits(), func(k *raceKnobs) { k.budget = 3 })
		var ops []string
		for i := range 6 {
			stream := []string{"main", "side"}[i%2]
			ops = append(ops, "        - fill: {dst: a, value: 1, offset: "+string(rune('0'+i))+", bytes: 1, stream: "+stream+"}")
		}
		src := "version: replaycheck/v1\nset: b\nprobes:\n  - name: p\n    hazard: none\n    buffers: {a: {bytes: 64}}\n" +
			"    streams: [main, side]\n    capture:\n      ops:\n" + strings.Join(ops, "\n") + "\n    expect: {guarded: exact}\n"
		_, err := Parse("budget.yaml", []byte(src), lim)
		gm.Expect(err).To(gm.HaveOccurred())
		ds, ok := err.(Diagnostics)
		gm.Expect(ok).To(gm.BeTrue())
		gm.Expect(ds).To(gm.HaveLen(1))
		// The ops (lines 10..15) compare 0, 1 and 1 earlier ops; the fourth (line 13) needs 2 more.
		gm.Expect(ds[0].Error()).To(gm.HavePrefix("budget.yaml:13:11: limit: capture main has too many unordered data ops"))
	})
})
