package capture_test

import (
	"fmt"
	"math/rand/v2"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/runtime"
)

// program generates a random hazard-free probe: eager work of every kind across two streams
// (allocations from the device, from a pool and of host memory, frees, growth, writes, memsets,
// copies to, from and within the device, axpy, events, syncs), a capture whose ops touch only
// buffers that stay put, eager work between, and a few replays. The oracle and the simulator must
// agree on every byte: nothing here is a hazard, so any difference is a bug in one of them.
type program struct {
	r       *rand.Rand
	b       strings.Builder
	sizes   map[string]int64  // live buffers
	where   map[string]string // a buffer's place: "" (device), "pool", "pinned" or "pageable"
	stable  []string          // declared buffers: never freed or grown, so captures may use them
	extra   int
	streams []string
}

func newProgram(seed uint64) *program {
	return &program{r: rand.New(rand.NewPCG(seed, 0x5eed)), sizes: map[string]int64{}, where: map[string]string{}, streams: []string{"s0", "s1"}}
}

// places are where a buffer's memory may come from, and the keys that say so.
var places = []struct{ name, keys string }{
	{"", ""}, {"pool", ", pool: cache"}, {"pinned", ", host: pinned"}, {"pageable", ", host: pageable"},
}

func (g *program) host(name string) bool {
	return g.where[name] == "pinned" || g.where[name] == "pageable"
}

// device lists the names that are device memory (plain or pooled).
func (g *program) device(names []string) []string {
	var out []string
	for _, n := range names {
		if !g.host(n) {
			out = append(out, n)
		}
	}
	return out
}

var sizeChoices = []int64{512, 1024, 4096, 4100}

func (g *program) pattern() string {
	switch g.r.IntN(6) {
	case 0:
		return "zero"
	case 1:
		return fmt.Sprintf("fill:%d", g.r.IntN(256))
	case 2:
		return "iota8"
	case 3:
		return "iota32"
	case 4:
		return fmt.Sprintf("random:%d", g.r.Uint64())
	}
	return fmt.Sprintf("hex:%02x%02x%02x", g.r.IntN(256), g.r.IntN(256), g.r.IntN(256))
}

func (g *program) pick(from []string) string { return from[g.r.IntN(len(from))] }

func (g *program) live() []string {
	var out []string
	for _, name := range g.stable {
		out = append(out, name)
	}
	for i := 0; i < g.extra; i++ {
		if _, ok := g.sizes[fmt.Sprintf("x%d", i)]; ok {
			out = append(out, fmt.Sprintf("x%d", i))
		}
	}
	return out
}

// dataOp emits a fill, copy or axpy over buffers from names, on stream: a memset and the kernel
// on device memory, a copy with at least one device side. In a capture (captured), host memory
// must be pinned: the platforms treat pageable copies during a capture apart.
func (g *program) dataOp(names []string, stream string, captured bool) string {
	dev := g.device(names)
	if captured {
		var ok []string
		for _, n := range names {
			if g.where[n] != "pageable" {
				ok = append(ok, n)
			}
		}
		names = ok
	}
	switch g.r.IntN(3) {
	case 0:
		d := g.pick(dev)
		// Ranges are never empty: the probe language rejects an empty range (platforms disagree on it).
		off := g.r.Int64N(g.sizes[d])
		n := 1 + g.r.Int64N(g.sizes[d]-off)
		return fmt.Sprintf("fill: {dst: %s, value: %d, offset: %d, bytes: %d, stream: %s}", d, g.r.IntN(256), off, n, stream)
	case 1:
		d, s := g.pick(names), g.pick(names)
		if g.host(d) && g.host(s) {
			s = g.pick(dev)
		}
		n := 1 + g.r.Int64N(min(g.sizes[d], g.sizes[s]))
		do, so := g.r.Int64N(g.sizes[d]-n+1), g.r.Int64N(g.sizes[s]-n+1)
		if d == s {
			so = do // a copy of a buffer onto itself at the same offset is hazard-free
		}
		return fmt.Sprintf("copy: {dst: %s, src: %s, bytes: %d, dst-offset: %d, src-offset: %d, stream: %s}", d, s, n, do, so, stream)
	}
	y := g.pick(dev)
	var xs []string
	for _, x := range dev {
		if g.sizes[x] == g.sizes[y] && g.sizes[x]%4 == 0 {
			xs = append(xs, x)
		}
	}
	if len(xs) == 0 || g.sizes[y]%4 != 0 {
		return fmt.Sprintf("fill: {dst: %s, value: %d, stream: %s}", y, g.r.IntN(256), stream)
	}
	return fmt.Sprintf("axpy: {y: %s, x: %s, a: %d, stream: %s}", y, g.pick(xs), g.r.Uint32(), stream)
}

// eagerOp emits any op that is safe outside a capture.
func (g *program) eagerOp() string {
	live := g.live()
	s := g.pick(g.streams)
	switch k := g.r.IntN(12); {
	case k < 5:
		return g.dataOp(live, s, false)
	case k == 5:
		return fmt.Sprintf("write: {dst: %s, value: %s}", g.pick(live), g.pattern())
	case k == 6:
		name := fmt.Sprintf("x%d", g.extra)
		g.extra++
		g.sizes[name] = sizeChoices[g.r.IntN(len(sizeChoices))]
		pl := places[g.r.IntN(len(places))]
		g.where[name] = pl.name
		return fmt.Sprintf("alloc: {buffer: %s, bytes: %d, init: %s%s}", name, g.sizes[name], g.pattern(), pl.keys)
	case k == 7 || k == 8:
		var extras []string
		for _, name := range live[len(g.stable):] {
			extras = append(extras, name)
		}
		if len(extras) == 0 {
			return "sync-device: {}"
		}
		name := g.pick(extras)
		if k == 7 {
			delete(g.sizes, name)
			return fmt.Sprintf("free: {buffer: %s}", name)
		}
		g.sizes[name] += int64(g.r.IntN(3)) * 512
		return fmt.Sprintf("grow: {buffer: %s, bytes: %d}", name, g.sizes[name])
	case k == 9:
		return fmt.Sprintf("record: {event: e0, stream: %s}", s)
	case k == 10:
		return fmt.Sprintf("wait: {event: e0, stream: %s}", s)
	}
	return fmt.Sprintf("sync: {stream: %s}", s)
}

func (g *program) line(indent int, s string) {
	g.b.WriteString(strings.Repeat(" ", indent) + s + "\n")
}

func (g *program) yaml() string {
	g.line(0, "version: replaycheck/v1")
	g.line(0, "set: property")
	g.line(0, "probes:")
	g.line(2, "- name: random")
	g.line(4, "hazard: none")
	g.line(4, "pools:")
	g.line(6, "cache: {bytes: 256KiB}")
	g.line(4, "buffers:")
	for i := 0; i < 2+g.r.IntN(4); i++ {
		name := fmt.Sprintf("b%d", i)
		g.sizes[name] = sizeChoices[g.r.IntN(len(sizeChoices))]
		g.stable = append(g.stable, name)
		pl := places[0]
		if i > 0 { // b0 stays plain device memory, so every op has a device buffer to work on
			pl = places[g.r.IntN(len(places))]
		}
		g.where[name] = pl.name
		g.line(6, fmt.Sprintf("%s: {bytes: %d, init: %s%s}", name, g.sizes[name], g.pattern(), pl.keys))
	}
	g.line(4, "streams: [s0, s1]")
	g.line(4, "events: [e0]")
	g.line(4, "prepare:")
	for i := 0; i < g.r.IntN(12); i++ {
		g.line(6, "- "+g.eagerOp())
	}
	g.line(4, "capture:")
	g.line(6, "stream: s0")
	g.line(6, "ops:")
	for i := 0; i < g.r.IntN(6); i++ {
		g.line(8, "- "+g.dataOp(g.stable, "s0", true))
	}
	g.line(4, "between:")
	for i := 0; i < g.r.IntN(6); i++ {
		g.line(6, "- "+g.eagerOp())
	}
	g.line(4, "expect: {guarded: exact, unguarded: exact}")
	return g.b.String()
}

var _ = Describe("oracle and simulator", func() {
	It("agree on every byte of random hazard-free programs", func() {
		dev := openSim("cann")
		defer dev.Close()
		const programs = 300
		for seed := uint64(1); seed <= programs; seed++ {
			text := newProgram(seed).yaml()
			set, err := probes.Parse(fmt.Sprintf("program-%d.yaml", seed), []byte(text), probes.DefaultLimits())
			Expect(err).NotTo(HaveOccurred(), "seed %d:\n%s", seed, text)
			mode := runtime.CaptureModes()[seed%3]
			res := runOn(dev, set.Probes[0], mode, 1+int(seed%4))
			Expect(res.Outcome).To(Equal(probes.Exact), "seed %d (%s): %s\n%s", seed, mode, res.Reason, text)
		}
	})

	It("disagree when the simulator is made to drop a copy (the comparison can fail)", func() {
		dev := droppingCopies{openSim("cann")}
		defer dev.Close()
		res := runOn(dev, parseProbe(simple), runtime.Global, 1)
		Expect(res.Outcome).To(Equal(probes.Corrupted))
	})
})

// droppingCopies acknowledges copies without doing them: a defect the comparison must catch.
type droppingCopies struct{ runtime.Device }

func (droppingCopies) Copy(runtime.Thread, runtime.Stream, runtime.Ptr, runtime.Ptr) error {
	return nil
}
