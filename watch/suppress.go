package watch

import (
	"fmt"
	"os"
	"strings"
)

// Suppressions are the entries of a suppression file, in Valgrind's shape:
//
//	{
//	   a-name
//	   watch:alloc-in-capture
//	   fun:warmup_*
//	   ...
//	   obj:*/libfoo.so
//	}
//
// The second line is the kind (watch:* for any); the frame lines match the finding's "finding"
// stack from its innermost frame: fun:GLOB the function, obj:GLOB the object's path, ... any number
// of frames. Fewer frame lines than frames match a prefix of the stack. GLOB has * (any run of
// characters, / included) and ?. Lines starting with # are comments.
type Suppressions struct {
	List []*Suppression
}

// Suppression is one entry.
type Suppression struct {
	Name   string
	Kind   string // a kind, or "*"
	Frames []FramePattern
	File   string
	Line   int // the line of its {
}

// FramePattern is one frame line: Fun or Obj set to a glob, or Any for "...".
type FramePattern struct {
	Fun, Obj string
	Any      bool
}

// LoadSuppressions reads and parses a suppression file.
func LoadSuppressions(path string) (*Suppressions, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseSuppressions(path, data)
}

// ParseSuppressions parses a suppression file's text; name is the file for errors, which say
// name:line and what the line should have been.
func ParseSuppressions(name string, data []byte) (*Suppressions, error) {
	s := &Suppressions{}
	var cur *Suppression
	state := 0 // 0 outside, 1 want name, 2 want kind, 3 frames
	fail := func(n int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, n, fmt.Sprintf(format, args...))
	}
	lines := strings.Split(string(data), "\n")
	for i, raw := range lines {
		n := i + 1
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		switch state {
		case 0:
			if line != "{" {
				return nil, fail(n, "%q outside a suppression: an entry starts with a line {", line)
			}
			cur = &Suppression{File: name, Line: n}
			state = 1
		case 1:
			if line == "}" || line == "{" || strings.HasPrefix(line, "watch:") {
				return nil, fail(n, "%q where the suppression's name was expected (the line after {)", line)
			}
			cur.Name = line
			state = 2
		case 2:
			kind, ok := strings.CutPrefix(line, "watch:")
			if !ok {
				return nil, fail(n, "%q where the kind was expected: watch:<kind> or watch:*", line)
			}
			if kind != "*" && !knownKind(kind) {
				return nil, fail(n, "unknown kind %q (one of %s, or *)", kind, kindList())
			}
			cur.Kind = kind
			state = 3
		case 3:
			if line == "}" {
				s.List = append(s.List, cur)
				cur, state = nil, 0
				continue
			}
			switch {
			case line == "...":
				cur.Frames = append(cur.Frames, FramePattern{Any: true})
			case strings.HasPrefix(line, "fun:"):
				cur.Frames = append(cur.Frames, FramePattern{Fun: strings.TrimPrefix(line, "fun:")})
			case strings.HasPrefix(line, "obj:"):
				cur.Frames = append(cur.Frames, FramePattern{Obj: strings.TrimPrefix(line, "obj:")})
			default:
				return nil, fail(n, "%q is not a frame line: fun:GLOB, obj:GLOB, ... or } to close", line)
			}
		}
	}
	if state != 0 {
		return nil, fail(len(lines), "suppression opened at line %d is not closed with }", cur.Line)
	}
	return s, nil
}

func knownKind(k string) bool {
	for _, known := range Kinds {
		if string(known) == k {
			return true
		}
	}
	return false
}

func kindList() string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// Match returns the first suppression that matches f (nil: none, or s is nil).
func (s *Suppressions) Match(f Finding) *Suppression {
	if s == nil {
		return nil
	}
	var frames []Frame
	for _, st := range f.Stacks {
		if st.Role == "finding" {
			frames = st.Frames
			break
		}
	}
	for _, sup := range s.List {
		if (sup.Kind == "*" || sup.Kind == string(f.Kind)) && matchFrames(sup.Frames, frames) {
			return sup
		}
	}
	return nil
}

// matchFrames matches the patterns against a prefix of frames.
func matchFrames(ps []FramePattern, frames []Frame) bool {
	if len(ps) == 0 {
		return true
	}
	p := ps[0]
	if p.Any {
		for i := 0; i <= len(frames); i++ {
			if matchFrames(ps[1:], frames[i:]) {
				return true
			}
		}
		return false
	}
	if len(frames) == 0 {
		return false
	}
	f := frames[0]
	if p.Fun != "" && !glob(p.Fun, f.Function) || p.Obj != "" && !glob(p.Obj, f.Object) {
		return false
	}
	return matchFrames(ps[1:], frames[1:])
}

// glob matches s against pattern with * (any run, / included) and ?.
func glob(pattern, s string) bool {
	// The classic two-pointer match, backtracking to the last *.
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(pattern) && (pattern[pi] == '?' || pattern[pi] == s[si]):
			pi++
			si++
		case pi < len(pattern) && pattern[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(pattern) && pattern[pi] == '*' {
		pi++
	}
	return pi == len(pattern)
}
