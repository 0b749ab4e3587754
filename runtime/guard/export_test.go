package guard

import "github.com/replaycheck/replaycheck/device"

// Watched lists the captures the Device is watching, oldest first, and counts the events it
// would take as forks into one of them. For specs that check bookkeeping no refusal shows
// (program mode).
func (d *Device) Watched() (captures []string, forkEvents int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, seq := range sortedSeqs(d.captures) {
		captures = append(captures, d.captures[seq].String())
	}
	return captures, len(d.recordedIn)
}

// Touched is a range a captured op touched, for specs of the replay-isolation check.
type Touched struct {
	Ptr   device.Ptr
	Write bool
}

// Conflict is the replay-isolation check's answer for a graph touching xs launched while one
// touching ys is in flight: the pair of ranges it reports, if any.
func Conflict(xs, ys []Touched) (x, y Touched, ok bool) {
	conv := func(ts []Touched) []capturedRange {
		out := make([]capturedRange, len(ts))
		for i, t := range ts {
			out[i] = capturedRange{ptr: t.Ptr, write: t.Write, gen: 1}
		}
		return out
	}
	a, b, ok := conflict(conv(xs), &footprint{ranges: conv(ys)})
	return Touched{a.ptr, a.write}, Touched{b.ptr, b.write}, ok
}

// Kept is what a graph keeps of the ranges its capture's ops touched, in order, each with the
// generation that held it: what the capture recorded op by op, without its repeats.
func Kept(ts []Touched, gens []uint64) []Touched {
	var c capture
	for i, t := range ts {
		c.add(capturedRange{ptr: t.Ptr, write: t.Write, gen: gens[i]})
	}
	var out []Touched
	for _, r := range distinct(c.ranges) {
		out = append(out, Touched{r.ptr, r.write})
	}
	return out
}
