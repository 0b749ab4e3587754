package watch

import (
	"fmt"
	"path/filepath"
	"strings"
)

// topFrames is how many frames of each stack Describe shows.
const topFrames = 5

// Describe is the text a user reads for one finding, as watch prints it live and the text report
// lists it: a first line `watch: <kind> in pid N: <detail>` with [refused], (possible, arg ...)
// and (x COUNT) where they apply, then the graph, the range, the captured call, the allocation at
// capture and now, and the top frames of each stack, indented.
func Describe(f Finding) string { return describe(f, true) }

// DescribeLive is the shorter text watch prints while the program runs, so the program's own
// stderr stays readable: the first line, the graph, the range, the captured call and the top
// frames of the finding's own stack. The report at the end has the rest.
func DescribeLive(f Finding) string { return describe(f, false) }

// liveFrames is how many frames of the finding's own stack DescribeLive shows.
const liveFrames = 3

func describe(f Finding, full bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "watch: %s in pid %d: %s", f.Kind, f.PID, f.Detail)
	if f.Refused {
		b.WriteString(" [refused]")
	}
	if f.Possible {
		if f.Captured != nil && f.Captured.Arg != "" {
			fmt.Fprintf(&b, " (possible, %s)", f.Captured.Arg)
		} else {
			b.WriteString(" (possible)")
		}
	}
	if f.Count > 1 {
		fmt.Fprintf(&b, " (x %d)", f.Count)
	}
	b.WriteByte('\n')
	row := func(label, text string) { fmt.Fprintf(&b, "    %-13s %s\n", label+":", text) }
	if f.Graph != nil {
		row("graph", describeGraph(f.Graph))
	}
	if f.Other != nil {
		row("other graph", describeGraph(f.Other))
	}
	if f.Range != nil {
		row("range", fmt.Sprintf("%s, %d bytes", f.Range.Addr, f.Range.Bytes))
	}
	if f.Captured != nil {
		s := fmt.Sprintf("%s (%s)", f.Captured.Call, f.Captured.What)
		if f.Captured.Arg != "" {
			s += ", " + f.Captured.Arg
		}
		row("captured by", s)
	}
	if !full {
		for _, s := range f.Stacks {
			if s.Role != "finding" {
				continue
			}
			for i, fr := range s.Frames {
				if i == liveFrames {
					break
				}
				label := ""
				if i == 0 {
					label = "at"
				}
				fmt.Fprintf(&b, "    %-13s %s\n", label, describeFrame(fr))
			}
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	if f.AtCapture != nil {
		row("at capture", describeHolder(f.AtCapture))
	}
	switch {
	case f.Now != nil:
		row("now", describeHolder(f.Now))
	case f.Kind == StaleReplay:
		row("now", "nothing holds it")
	}
	for _, s := range f.Stacks {
		if len(s.Frames) == 0 {
			continue
		}
		fmt.Fprintf(&b, "    %s stack:\n", s.Role)
		for i, fr := range s.Frames {
			if i == topFrames {
				fmt.Fprintf(&b, "        ... %d more\n", len(s.Frames)-topFrames)
				break
			}
			fmt.Fprintf(&b, "        %s\n", describeFrame(fr))
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func describeGraph(g *Graph) string {
	var parts []string
	h := g.Handle
	if h == "" {
		h = "(not made yet)"
	}
	if g.Exec != "" && g.Exec != g.Handle {
		h += " (exec " + g.Exec + ")"
	}
	parts = append(parts, h)
	c := fmt.Sprintf("capture %d", g.Capture)
	if g.Stream != "" {
		c += " on stream " + g.Stream
	}
	if g.Mode != "" {
		c += " (" + g.Mode + ")"
	}
	parts = append(parts, c)
	if g.LaunchStream != "" {
		parts = append(parts, "launched on stream "+g.LaunchStream)
	}
	return strings.Join(parts, ", ")
}

func describeHolder(h *Holder) string {
	s := fmt.Sprintf("%s %s, %d bytes, generation %d, from %s", h.Kind, h.Addr, h.Bytes, h.Generation, h.Call)
	if h.Pool != "" {
		s = fmt.Sprintf("%s block of pool %s at %s, %d bytes, generation %d, from %s", h.Kind, h.Pool, h.Addr, h.Bytes, h.Generation, h.Call)
	}
	if h.Freed {
		s += "; freed by " + h.FreedBy
	}
	return s
}

// describeFrame is a frame as people read it: function (file:line), else object+offset.
func describeFrame(fr Frame) string {
	where := fr.PC
	if fr.Object != "" && fr.Offset != "" {
		where = filepath.Base(fr.Object) + "+" + fr.Offset
	}
	switch {
	case fr.Function != "" && fr.File != "":
		return fmt.Sprintf("%s (%s:%d)", fr.Function, fr.File, fr.Line)
	case fr.Function != "":
		return fmt.Sprintf("%s (%s)", fr.Function, where)
	case fr.File != "":
		return fmt.Sprintf("%s (%s:%d)", where, fr.File, fr.Line)
	}
	return where
}
