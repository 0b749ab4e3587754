package seed_test

import (
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/runtime/plugin/seed"
)

// reference is what each driver scenario (testdata/driver.c) prints through the reference plugin,
// "why: " lines (refusal messages, which hold addresses) apart. Every line is one fact: a call's
// status and class, how a provision was served, the inner device's counter deltas, offsets in a pool
// segment, whether a slot still holds its buffer.
var reference = map[string]string{
	"grow-program": `
retained first: ok allocated mallocs+1 frees+0 same-address=0 held=1
retained at capacity: ok in-place mallocs+0 frees+0 same-address=1 held=1
retained below capacity: ok in-place mallocs+0 frees+0 same-address=1 held=1
retained growth: ok rebased mallocs+1 frees+1 same-address=0 held=1
plain first: ok allocated mallocs+1 frees+0 same-address=0 held=1
plain growth: ok rebased mallocs+1 frees+1 same-address=0 held=1
arena first: ok allocated mallocs+1 frees+0 same-address=0 held=1
arena below capacity: ok in-place mallocs+0 frees+0 same-address=1 held=1
arena over capacity: ok rebased mallocs+1 frees+1 same-address=0 held=1
empty zero request: ok in-place mallocs+0 frees+0 same-address=1 held=0
stale view: error not-served mallocs+0 frees+0 same-address=1 held=1 class=invalid-value
release retained: ok
release retained frees+1
free arena region: ok
release plain: ok
done grow-program
`,
	"grow-kernel": `
retained first: ok allocated mallocs+1 frees+0 same-address=0 held=1
retained at capacity: ok in-place mallocs+0 frees+0 same-address=1 held=1
retained below capacity: ok in-place mallocs+0 frees+0 same-address=1 held=1
retained growth: refused not-served mallocs+0 frees+0 same-address=1 held=1 class=refused
plain first: ok allocated mallocs+1 frees+0 same-address=0 held=1
plain growth: ok rebased mallocs+1 frees+1 same-address=0 held=1
arena first: ok allocated mallocs+1 frees+0 same-address=0 held=1
arena below capacity: ok in-place mallocs+0 frees+0 same-address=1 held=1
arena over capacity: refused not-served mallocs+0 frees+0 same-address=1 held=1 class=refused
empty zero request: ok in-place mallocs+0 frees+0 same-address=1 held=0
stale view: error not-served mallocs+0 frees+0 same-address=1 held=1 class=invalid-value
release retained: refused refused
release retained frees+0
free arena region: refused refused
release plain: ok
done grow-kernel
`,
	"bank": `
commit: ok
commit mallocs=2
commit within capacity: ok
within capacity in place=1 mallocs=2
commit over capacity: refused refused
over capacity mallocs+0 frees+0 a-held=1 b-held=1
over capacity a-allocated=1
commit naming a region twice: error invalid-value
done bank
`,
	"pool": `
reserve: ok
reserve again: error invalid-value
reserve tiny: error invalid-value
alloc 100 at 0 bytes 100
alloc 600 at 512 bytes 600
alloc 512 at 1536 bytes 512
alloc 512 at 2048 bytes 512
alloc 1 at 2560 bytes 1
equal fit at 0
best fit at 1536
alloc too large: error out-of-memory
free of a foreign block: error invalid-value
alloc whole segment after coalescing: ok
whole segment at 0
pool device mallocs=1 frees=0
retire: ok
after retire frees=1
done pool
`,
	"watch-kernel": `
malloc during capture: refused refused
malloc during capture mallocs+0
alloc_host during capture: refused refused
provision during capture: refused not-served mallocs+0 frees+0 same-address=1 held=0 class=refused
reserve_pool during capture: refused refused
fill off the capture: refused refused
fill in the capture: ok
record in the capture: ok
wait forking into the capture: ok
fill on the forked stream: ok
destroy the origin during capture: refused refused
retire during capture: refused refused
end: ok
malloc after capture: ok
done watch-kernel
`,
	"watch-program": `
malloc during capture: ok
malloc during capture mallocs+1
free during capture: ok
alloc_host during capture: ok
provision during capture: ok allocated mallocs+1 frees+0 same-address=0 held=1
reserve_pool during capture: ok
fill off the capture: ok
fill in the capture: ok
record in the capture: ok
wait forking into the capture: ok
fill on the forked stream: ok
destroy the origin during capture: ok
retire during capture: ok
end: error capture-not-capturing
malloc after capture: ok
done watch-program
`,
	"rebase-kernel": `
plain first: ok allocated mallocs+1 frees+0 same-address=0 held=1
launch before the re-base: ok
plain growth: ok rebased mallocs+1 frees+1 same-address=0 held=1
launch after the re-base: refused refused
launch after the re-base reached the device=0
more stale ranges named=no
launch of a graph not captured here: refused refused
done rebase-kernel
`,
	"rebase-program": `
plain first: ok allocated mallocs+1 frees+0 same-address=0 held=1
launch before the re-base: ok
plain growth: ok rebased mallocs+1 frees+1 same-address=0 held=1
launch after the re-base: error illegal-address
launch after the re-base reached the device=1
launch of a graph not captured here: error invalid-value
done rebase-program
`,
	"same-address-kernel": `
free dst: ok
bystander at the same address=1
launch after free and re-allocation: refused refused
bystander byte=238
free bystander: ok
launch after free: refused refused
done same-address-kernel
`,
	"same-address-program": `
free dst: ok
bystander at the same address=1
launch after free and re-allocation: ok
bystander byte=7
free bystander: ok
launch after free: error illegal-address
done same-address-program
`,
	"isolation-kernel": `
launch g1 on s1: ok
launch g2 on s2 while g1 writes what it reads: refused refused
sync s1: ok
launch g2 on s2 after the sync: ok
launch g3 on the same stream: ok
launch g1 on s1 while g2 reads what it writes: refused refused
record after g2 and g3 on s2: ok
s1 waits for it: ok
launch g1 on s1 after the wait: ok
done isolation-kernel
`,
	"isolation-program": `
launch g1 on s1: ok
launch g2 on s2 while g1 writes what it reads: ok
sync s1: ok
launch g2 on s2 after the sync: ok
launch g3 on the same stream: ok
launch g1 on s1 while g2 reads what it writes: ok
record after g2 and g3 on s2: ok
s1 waits for it: ok
launch g1 on s1 after the wait: ok
done isolation-program
`,
	"retire": `
retained: ok allocated mallocs+1 frees+0 same-address=0 held=1
arena: ok allocated mallocs+1 frees+0 same-address=0 held=1
plain: ok allocated mallocs+1 frees+0 same-address=0 held=1
reserve host pool: ok
retire: ok
retire frees=3 host-frees=1
retire again: ok
provision after retire: error not-served mallocs+0 frees+0 same-address=1 held=0 class=invalid-state
done retire
`,
	"opens": `
abi version=4
a retained: ok allocated mallocs+1 frees+0 same-address=0 held=1
b holds a's slot=0
b retained: ok allocated mallocs+1 frees+0 same-address=0 held=1
b retained growth: ok rebased mallocs+1 frees+1 same-address=0 held=1
a non-blocking stream: ok flags=1
open with another ABI version: error invalid-value
open with an unknown mode: error invalid-value
done opens
`,
}

// why is what the refusal messages of a scenario must say, through the reference.
var why = map[string][]string{
	"isolation-kernel":    {"replay of graph#2 on stream#2 refused: graph#1, launched on stream#1, may still be running and nothing orders it before stream#2; both touch ", "(read by this graph, written by that one): concurrent replays would race"},
	"rebase-kernel":       {"replay of graph#1 refused: captured range ", "(allocation generation 2 at capture) is no longer inside any live allocation (freed)"},
	"same-address-kernel": {"replay of graph#1 refused: captured range ", "(allocation generation 2 at capture) now lies in allocation generation 3 at ", "same address, different allocation"},
}

// exposed is, for each defect, how the scenarios that expose it differ from the reference: the
// lines the reference prints that the defect does not (gone) and the lines it prints instead
// (instead). Every other scenario prints exactly what the reference prints.
var exposed = map[string]map[string]struct{ gone, instead []string }{
	"arena-rollback-on-refusal": {
		// The refused over-capacity request released the slot's region (a free, the slot emptied);
		// the later free of it is then a foreign pointer to the inner device.
		"grow-kernel": {
			gone: []string{
				"arena over capacity: refused not-served mallocs+0 frees+0 same-address=1 held=1 class=refused",
				"free arena region: refused refused",
			},
			instead: []string{
				"arena over capacity: refused not-served mallocs+0 frees+1 same-address=1 held=0 class=refused",
				"free arena region: error invalid-value",
			},
		},
		// The refusal of region b's growth freed the other committed region, a, as well.
		"bank": {
			gone:    []string{"over capacity mallocs+0 frees+0 a-held=1 b-held=1", "over capacity a-allocated=1"},
			instead: []string{"over capacity mallocs+0 frees+2 a-held=0 b-held=0", "over capacity a-allocated=0"},
		},
	},
	"retained-free-before-refuse": {
		// The inner free count went up although the growth was refused.
		"grow-kernel": {
			gone: []string{
				"retained growth: refused not-served mallocs+0 frees+0 same-address=1 held=1 class=refused",
				"release retained: refused refused",
			},
			instead: []string{
				"retained growth: refused not-served mallocs+0 frees+1 same-address=1 held=0 class=refused",
				"release retained: error invalid-value",
			},
		},
	},
	"no-capture-watch": {
		// Allocator calls, off-capture work, the origin's destruction and retirement go through
		// during the capture (the destroyed origin then has no capture to end).
		"watch-kernel": {
			gone: []string{
				"malloc during capture: refused refused",
				"malloc during capture mallocs+0",
				"alloc_host during capture: refused refused",
				"provision during capture: refused not-served mallocs+0 frees+0 same-address=1 held=0 class=refused",
				"reserve_pool during capture: refused refused",
				"fill off the capture: refused refused",
				"destroy the origin during capture: refused refused",
				"retire during capture: refused refused",
				"end: ok",
			},
			instead: []string{
				"malloc during capture: ok",
				"malloc during capture mallocs+1",
				"free during capture: ok",
				"alloc_host during capture: ok",
				"provision during capture: ok allocated mallocs+1 frees+0 same-address=0 held=1",
				"reserve_pool during capture: ok",
				"fill off the capture: ok",
				"destroy the origin during capture: ok",
				"retire during capture: ok",
				"end: error capture-not-capturing",
			},
		},
	},
	"no-retained-slot": {
		// The retained slot grows by free + malloc and is released, as in program mode.
		"grow-kernel": {
			gone: []string{
				"retained growth: refused not-served mallocs+0 frees+0 same-address=1 held=1 class=refused",
				"release retained: refused refused",
				"release retained frees+0",
			},
			instead: []string{
				"retained growth: ok rebased mallocs+1 frees+1 same-address=0 held=1",
				"release retained: ok",
				"release retained frees+1",
			},
		},
	},
	"pointer-equality-residency": {
		// Free + re-allocate at the same address, then launch: not refused, and the replay
		// overwrites the bystander.
		"same-address-kernel": {
			gone:    []string{"launch after free and re-allocation: refused refused", "bystander byte=238"},
			instead: []string{"launch after free and re-allocation: ok", "bystander byte=7"},
		},
	},
}

// facts splits a scenario's output into its lines, "why: " lines apart.
func facts(out string) (lines, whys []string) {
	for l := range strings.Lines(out) {
		l = strings.TrimSuffix(l, "\n")
		if w, ok := strings.CutPrefix(l, "why: "); ok {
			whys = append(whys, w)
			continue
		}
		lines = append(lines, l)
	}
	return lines, whys
}

// diff returns the lines of a missing from b and the lines of b missing from a, as multisets.
func diff(a, b []string) (gone, extra []string) {
	rest := slices.Clone(b)
	for _, l := range a {
		if i := slices.Index(rest, l); i >= 0 {
			rest = slices.Delete(rest, i, i+1)
			continue
		}
		gone = append(gone, l)
	}
	return gone, rest
}

func scenarios() []string {
	names := make([]string, 0, len(reference))
	for name := range reference {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

var _ = Describe("the reference plugin over a toy inner device", func() {
	for _, sc := range scenarios() {
		It("prints the expected facts in scenario "+sc, func() {
			lines, whys := facts(scenario(seed.Reference, sc))
			want, _ := facts(strings.TrimPrefix(reference[sc], "\n"))
			Expect(lines).To(Equal(want))
			if why[sc] == nil {
				Expect(whys).To(BeEmpty())
				return
			}
			Expect(whys).To(HaveLen(1))
			for _, part := range why[sc] {
				Expect(whys[0]).To(ContainSubstring(part))
			}
		})
	}
})

var _ = Describe("the defective plugins", func() {
	for _, name := range seed.Defects() {
		Context(name, func() {
			It("has a scenario that exposes it", func() {
				Expect(exposed[name]).NotTo(BeEmpty())
			})
			for _, sc := range scenarios() {
				want := exposed[name][sc]
				what := "prints what the reference prints in scenario " + sc
				if want.gone != nil {
					what = "differs from the reference in scenario " + sc + " exactly by its defect"
				}
				It(what, func() {
					ref, _ := facts(strings.TrimPrefix(reference[sc], "\n"))
					got, _ := facts(scenario(name, sc))
					gone, instead := diff(ref, got)
					Expect(gone).To(ConsistOf(want.gone))
					Expect(instead).To(ConsistOf(want.instead))
				})
			}
		})
	}
})
