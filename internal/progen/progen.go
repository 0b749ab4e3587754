// Package progen generates random hazard-free probes: eager work of every kind across two streams
// (allocations from the device, from a pool and of host memory, frees, growth, writes, memsets,
// copies to, from and within the device, axpy, events, syncs), a capture whose ops touch only
// buffers that stay put, eager work between, and a few replays.
//
// The contract: every program it produces is valid probe YAML (probes.Parse accepts it) and
// hazard-free by construction, so the oracle and any correct device agree on every byte and the
// engine classifies it exact, guards on or off. It is deterministic: the same choices give the
// same program. Choices come from a Source: Seed (a PRNG, for property tests) or Bytes (a fuzz
// input read as a stream of choices, so the fuzzer's mutations steer the program).
//
// Fills writes the benchmarks' fixed program of a given size, so that loading it (probes) and
// running it (capture) measure the same file.
package progen

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Source supplies a generator's choices. *rand.Rand is one.
type Source interface {
	IntN(n int) int       // in [0, n)
	Int64N(n int64) int64 // in [0, n)
	Uint32() uint32
	Uint64() uint64
}

// Seed is the PRNG source of seed: the same seed, the same program.
func Seed(seed uint64) Source { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// Bytes reads data as a stream of choices, each taking as many bytes as its range needs. Once
// data runs out every choice is 0, which ends every loop: a program is never longer than its
// input allows, and a short input is a short program.
func Bytes(data []byte) Source { return &byteSource{data: data} }

type byteSource struct{ data []byte }

// next returns the next n bytes as a little-endian integer (missing bytes read as 0).
func (s *byteSource) next(n int) uint64 {
	var b [8]byte
	m := copy(b[:n], s.data)
	s.data = s.data[m:]
	return binary.LittleEndian.Uint64(b[:])
}

// width is the number of bytes that cover [0, n).
func width(n uint64) int {
	w := 1
	for n-1 >= 1<<(8*w) && w < 8 {
		w++
	}
	return w
}

func (s *byteSource) IntN(n int) int { return int(s.Int64N(int64(n))) }
func (s *byteSource) Int64N(n int64) int64 {
	if n <= 0 {
		panic("progen: Int64N of a non-positive range") // as math/rand/v2 does
	}
	return int64(s.next(width(uint64(n))) % uint64(n))
}
func (s *byteSource) Uint32() uint32 { return uint32(s.next(4)) }
func (s *byteSource) Uint64() uint64 { return s.next(8) }

// Fills is the benchmarks' program: set "bench", one probe "fills" whose capture makes n fills of
// 64 bytes, each on a range of its own of one buffer, replayed replays times. 100,000 fills are
// about 6 MB of YAML.
func Fills(n, replays int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `version: replaycheck/v1
set: bench
probes:
  - name: fills
    hazard: none
    replays: %d
    buffers:
      b: {bytes: %d, init: zero}
    streams: [main]
    capture:
      stream: main
      ops:
`, replays, n*64)
	for i := range n {
		fmt.Fprintf(&b, "        - fill: {dst: b, value: %d, offset: %d, bytes: 64}\n", i%255+1, i*64)
	}
	b.WriteString("    expect: {guarded: exact, unguarded: exact}\n")
	return b.String()
}

// YAML generates one probe set (set "property", one probe "random") from src's choices.
func YAML(src Source) string {
	g := &program{r: src, sizes: map[string]int64{}, where: map[string]string{}, streams: []string{"s0", "s1"}}
	return g.yaml()
}

type program struct {
	r       Source
	b       strings.Builder
	sizes   map[string]int64  // live buffers
	where   map[string]string // a buffer's place: "" (device), "pool", "pinned" or "pageable"
	stable  []string          // declared buffers: never freed or grown, so captures may use them
	extra   int
	streams []string
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
	out := append([]string(nil), g.stable...)
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
		extras := live[len(g.stable):]
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

// yaml writes the probe. Each loop draws its bound again every round (a geometric length: short
// programs are common, long ones possible).
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
