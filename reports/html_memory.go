package reports

import (
	"fmt"
	"html/template"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
)

// The memory picture: one row per captured buffer (graph: buffer), its bar at the address range
// the graph captured; a stale range in red, and under it a row per live buffer that holds that
// range now (the bystander a replay reads or overwrites), drawn at its own range. A light band
// marks each stale range across every row. The address axis keeps the ranges and squeezes the
// gaps between them to a fixed break, so ranges far apart stay readable.

const (
	memBarH   = 16
	memRowH   = 22
	memWidth  = 560.0 // the bars' area
	memGapW   = 18.0  // a squeezed gap between ranges
	memMinSeg = 28.0  // the narrowest range segment
	memCharW  = 6.6   // an 11px monospace character
	memAxisH  = 30
)

// memoryKinds are the picture's bar kinds, in legend order.
var memoryKinds = []htmlLegendItem{
	{Kind: "held", Meaning: "captured, still its buffer's"},
	{Kind: "stale", Meaning: "stale: captured, then freed; the graph still uses it"},
	{Kind: "bystander", Meaning: "holds a stale range now: the replay reads or overwrites it"},
	{Kind: "band", Meaning: "a stale range, across the rows"},
}

var memoryFill = map[string]string{"held": "#90a4ae", "stale": "#c62828", "bystander": "#ef8f00"}

// owner is a live buffer holding a stale range now, read from StaleRange.Now ("buffer B
// 0xADDR+N (generation G)", several joined by ", ").
type owner struct {
	Name       string
	Range      device.Ptr
	Generation uint64
}

var ownerRE = regexp.MustCompile(`buffer (\S+) 0x([0-9a-f]+)\+([0-9]+) \(generation ([0-9]+)\)`)

// ownersOf reads the buffers that hold s's range now; none when Now says something else (free,
// another graph's pool).
func ownersOf(s capture.StaleRange) []owner {
	var out []owner
	for _, m := range ownerRE.FindAllStringSubmatch(s.Now, -1) {
		addr, err1 := strconv.ParseUint(m[2], 16, 64)
		n, err2 := strconv.ParseInt(m[3], 10, 64)
		gen, err3 := strconv.ParseUint(m[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		out = append(out, owner{Name: m[1], Range: device.Ptr{Addr: addr, Bytes: n}, Generation: gen})
	}
	return out
}

// ledgerOwner is buffer name as the ledger last captured it (its latest generation).
func ledgerOwner(ledger []capture.Residency, name string) (owner, bool) {
	var o owner
	found := false
	for _, l := range ledger {
		if l.Buffer == name && (!found || l.Generation > o.Generation) {
			o, found = owner{Name: name, Range: l.Range, Generation: l.Generation}, true
		}
	}
	return o, found
}

// memRow is one row of the picture.
type memRow struct {
	label, kind, title string
	r                  device.Ptr
	note               string // said right of the bars (what holds a stale range when no buffer does)
}

// axis maps addresses to x: the covered intervals keep their share of the width, the gaps between
// them are squeezed to memGapW.
type axis struct {
	segs []seg
}

type seg struct {
	lo, hi uint64
	x, w   float64
}

func newAxis(ranges []device.Ptr, x0 float64) axis {
	sorted := slices.Clone(ranges)
	slices.SortFunc(sorted, func(a, b device.Ptr) int {
		switch {
		case a.Addr < b.Addr:
			return -1
		case a.Addr > b.Addr:
			return 1
		}
		return 0
	})
	var segs []seg
	for _, r := range sorted {
		end := max(r.End(), r.Addr+1)
		if n := len(segs); n > 0 && r.Addr <= segs[n-1].hi {
			segs[n-1].hi = max(segs[n-1].hi, end)
			continue
		}
		segs = append(segs, seg{lo: r.Addr, hi: end})
	}
	var total float64
	for _, s := range segs {
		total += float64(s.hi - s.lo)
	}
	avail := memWidth - float64(len(segs)-1)*memGapW
	x := x0
	for i := range segs {
		segs[i].x = x
		segs[i].w = max(memMinSeg, avail*float64(segs[i].hi-segs[i].lo)/total)
		x += segs[i].w + memGapW
	}
	return axis{segs: segs}
}

func (a axis) x(addr uint64) float64 {
	for _, s := range a.segs {
		if addr >= s.lo && addr <= s.hi {
			return s.x + float64(addr-s.lo)/float64(s.hi-s.lo)*s.w
		}
	}
	return a.segs[0].x
}

func (a axis) end() float64 {
	last := a.segs[len(a.segs)-1]
	return last.x + last.w
}

// memoryPicture draws e's ledger with its stale ranges and who holds them now, and lists the
// legend entries the picture uses. Nothing when the result has no ledger.
func memoryPicture(e Entry) (template.HTML, []htmlLegendItem) {
	if len(e.Ledger) == 0 {
		return "", nil
	}
	stale := map[string][]capture.StaleRange{}
	for _, s := range e.Stale {
		k := fmt.Sprintf("%s/%s/%d", s.Capture, s.Buffer, s.Generation)
		stale[k] = append(stale[k], s)
	}
	var rows []memRow
	var bands []device.Ptr
	used := map[string]bool{}
	for _, l := range e.Ledger {
		row := memRow{label: fmt.Sprintf("graph %s: %s", l.Capture, l.Buffer), kind: "held", r: l.Range,
			title: fmt.Sprintf("graph %s captured %s at %v (generation %d); the graph %s it", l.Capture, l.Buffer, l.Range, l.Generation, l.Access.Verb())}
		ss := stale[fmt.Sprintf("%s/%s/%d", l.Capture, l.Buffer, l.Generation)]
		if len(ss) == 0 {
			rows = append(rows, row)
			used["held"] = true
			continue
		}
		s := ss[0]
		row.kind = "stale"
		row.title += "; stale: now " + s.Now
		if s.Round > 0 {
			row.title += fmt.Sprintf("; first touched in round %d", s.Round)
		}
		owners := ownersOf(s)
		if len(owners) == 0 {
			// Another graph's buffer (a shared private pool): drawn at the range its graph captured.
			for _, name := range s.Owners {
				if o, ok := ledgerOwner(e.Ledger, name); ok {
					owners = append(owners, o)
				}
			}
		}
		if len(owners) == 0 {
			row.note = "now free"
			if len(s.Owners) > 0 {
				row.note = "now " + strings.Join(s.Owners, ", ")
			}
		}
		rows = append(rows, row)
		bands = append(bands, l.Range)
		used["stale"], used["band"] = true, true
		for _, o := range owners {
			rows = append(rows, memRow{label: fmt.Sprintf("now %s", o.Name), kind: "bystander", r: o.Range,
				title: fmt.Sprintf("buffer %s holds %v now (generation %d): round %d's replay of graph %s %s it", o.Name, o.Range, o.Generation, s.Round, s.Capture, s.Access.Verb())})
			used["bystander"] = true
		}
	}
	labelW := 0
	ranges := make([]device.Ptr, len(rows))
	for i, r := range rows {
		labelW = max(labelW, len(r.label))
		ranges[i] = r.r
	}
	x0 := float64(labelW)*memCharW + 12
	ax := newAxis(ranges, x0)
	noteW := 0
	for _, r := range rows {
		noteW = max(noteW, len(r.note))
	}
	width := ax.end() + 8 + float64(noteW)*memCharW
	height := len(rows)*memRowH + memAxisH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="memory" width="%.0f" height="%d" viewBox="0 0 %.0f %d" role="img" aria-label="captured ranges and who holds them now">`,
		width, height, width, height)
	for _, band := range bands {
		fmt.Fprintf(&b, `<rect class="band" x="%.1f" y="0" width="%.1f" height="%d" fill="#ffebee"/>`,
			ax.x(band.Addr), max(ax.x(band.End())-ax.x(band.Addr), 2), len(rows)*memRowH)
	}
	for i, r := range rows {
		y := i*memRowH + (memRowH-memBarH)/2
		weight := ""
		if r.kind != "bystander" {
			weight = ` font-weight="bold"`
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%d" font-size="11" font-family="monospace" text-anchor="end"%s>%s</text>`,
			x0-8, y+memBarH-4, weight, template.HTMLEscapeString(r.label))
		fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`,
			r.kind, ax.x(r.r.Addr), y, max(ax.x(r.r.End())-ax.x(r.r.Addr), 2), memBarH, memoryFill[r.kind], template.HTMLEscapeString(r.title))
		if r.note != "" {
			fmt.Fprintf(&b, `<text x="%.0f" y="%d" font-size="11" font-family="monospace">%s</text>`, ax.end()+8, y+memBarH-4, template.HTMLEscapeString(r.note))
		}
	}
	// The axis: each range segment's first address where it has room, a break mark in each gap.
	ya := len(rows)*memRowH + 4
	fmt.Fprintf(&b, `<g class="axis" font-size="10" font-family="monospace" fill="#555">`)
	for i, s := range ax.segs {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/>`, s.x, ya, s.x+s.w, ya)
		if i == 0 || s.w >= 100 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%#x</text>`, s.x, ya+13, s.lo)
		}
		if i > 0 {
			gx := s.x - memGapW/2
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">⋯</text>`, gx, ya+4)
		}
	}
	last := ax.segs[len(ax.segs)-1]
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="end">%#x</text>`, last.x+last.w, ya+25, last.hi)
	b.WriteString(`</g></svg>`)
	var legend []htmlLegendItem
	for _, k := range memoryKinds {
		if used[k.Kind] {
			legend = append(legend, k)
		}
	}
	return template.HTML(b.String()), legend
}
