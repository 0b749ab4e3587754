package probes

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/chunk"
	"github.com/replaycheck/replaycheck/internal/plural"
)

// loader reads one probe file. It walks yaml.Node trees rather than decoding into structs so every
// problem carries the line and column of the key or value at fault, and it keeps going after a
// problem so a file's problems are all reported at once.
type loader struct {
	file  string
	data  []byte // the file's text, to place the problems yaml.v3 reports without a line
	lim   Limits
	diags Diagnostics
	// found counts the problems found, those beyond MaxDiagnostics (not kept) included: a check
	// that asks whether it found a problem compares it, not len(diags).
	found int
	// repeats counts the problems found again, word for word at the same place, and not kept
	// twice: a value used through several aliases is decoded once for each.
	repeats int
	// via is where the value being decoded is used, when the loader reached it through an alias
	// inside a probe: the alias's position, zero otherwise. The positions kept for the checks that
	// run after decoding (placed) are there, since what those checks find (a name given twice, a
	// buffer freed or out of range at that point, a race) is a problem of that use of the value;
	// what is wrong with the value itself is reported where the anchor defines it.
	via Pos
	// pos holds where a field's value was written, for the checks that run after decoding.
	pos map[fieldKey]Pos
	// sizes holds the sizes and offsets ops point to, one block after another: one allocation
	// each, wherever the decoder left it, made the first read of an op's sizes a cache miss.
	sizes chunk.Log[int64]
	// mistyped holds the keys the probe being decoded misspells (mistypedKeys).
	mistyped map[string]bool
}

// fieldKey names one field of one decoded value (an *Op, *Capture, *Replay, *Probe...).
type fieldKey struct {
	owner any
	field string
}

func (l *loader) at(n *yaml.Node) Pos { return Pos{File: l.file, Line: n.Line, Col: n.Column} }

// placed is where n is used, for a check after decoding: an alias's own position when n is an
// alias, else the alias the loader is decoding through (via), else n's.
func (l *loader) placed(n *yaml.Node) Pos {
	switch {
	case n.Kind == yaml.AliasNode:
		return l.at(n)
	case l.via != (Pos{}):
		return l.via
	}
	return l.at(n)
}

// through decodes n's value with decode, through n when n is an alias (via).
func (l *loader) through(n *yaml.Node, decode func()) {
	old := l.via
	if n.Kind == yaml.AliasNode {
		l.via = l.at(n)
	}
	decode()
	l.via = old
}

// MaxDiagnostics is how many problems of one file are listed; past it the loader still decodes
// and checks (so that the answer is the same), but neither formats nor keeps what it finds. A
// file of two million bad items would otherwise print two million lines, and take seconds to.
const MaxDiagnostics = 100

func (l *loader) errorf(p Pos, rule, format string, args ...any) {
	if len(l.diags) < MaxDiagnostics {
		l.add(Diagnostic{Pos: p, Rule: rule, Message: fmt.Sprintf(format, args...)})
		return
	}
	l.found++
}

// unknown reports name, which is none of the names known lists: what it is (e.g. "undeclared
// buffer"), the closest known name when one is close, and the list, as kinds (e.g. "buffers").
// The list and the suggestion are worked out only for a problem that is listed: past
// MaxDiagnostics, 90,000 ops naming an unknown buffer of a probe of 2,000 buffers cost nothing.
func (l *loader) unknown(p Pos, rule, what, name, kinds string, known func() []string) {
	if len(l.diags) >= MaxDiagnostics {
		l.found++
		return
	}
	names := known()
	l.errorf(p, rule, "%s %q%s (%s: %s)", what, name, didYouMean(name, names), kinds, strings.Join(names, ", "))
}

// add keeps a problem already formatted, under the same cap as errorf, once: the same problem at
// the same place, found again through another alias of its value, is counted but not kept again.
func (l *loader) add(d Diagnostic) {
	l.found++
	switch {
	case len(l.diags) >= MaxDiagnostics:
	case slices.Contains(l.diags, d):
		l.repeats++
	default:
		l.diags = append(l.diags, d)
	}
}

// problems is the file's diagnostics, headed by one saying that some are not listed when more
// than MaxDiagnostics were found.
func (l *loader) problems() Diagnostics {
	if l.found-l.repeats > len(l.diags) {
		return append(l.diags, Diagnostic{Pos: Pos{File: l.file}, Rule: RuleLimit,
			Message: fmt.Sprintf("more than %d problems; the first %d found are listed", MaxDiagnostics, MaxDiagnostics)})
	}
	return l.diags
}

// mark remembers where owner's field, n as written, is used (placed).
func (l *loader) mark(owner any, field string, n *yaml.Node) {
	l.pos[fieldKey{owner, field}] = l.placed(n)
}

// where is the position of owner's field, or fallback when the field was not written. An op
// keeps its fields' positions itself (fieldsAt); every other owner's are in l.pos.
func (l *loader) where(owner any, field string, fallback Pos) Pos {
	if op, ok := owner.(*Op); ok {
		if i := slices.Index(opFields[op.Kind].keys, field); i >= 0 && op.at[i].line > 0 {
			return Pos{File: l.file, Line: int(op.at[i].line), Col: int(op.at[i].col)}
		}
		return fallback
	}
	if p, ok := l.pos[fieldKey{owner, field}]; ok {
		return p
	}
	return fallback
}

// deref follows aliases to the anchored node.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

func describe(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case isNull(n):
		return "nothing"
	case n.Kind == yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "an unexpected node"
}

// mistypedKeys are the keys of keys that mapping n lacks but has a misspelling of (an unknown key
// whose closest allowed key it is): the unknown key is reported, and what follows from the
// missing one (a required key, every name it declares) is not reported again.
func mistypedKeys(n *yaml.Node, keys []string) map[string]bool {
	var out map[string]bool
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	given := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		given[deref(n.Content[i]).Value] = true
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		if k.Kind != yaml.ScalarNode || slices.Contains(keys, k.Value) {
			continue
		}
		if c := Closest(k.Value, keys); c != "" && !given[c] {
			if out == nil {
				out = map[string]bool{}
			}
			out[c] = true
		}
	}
	return out
}

// entry is one key of a mapping and its value; raw is the key as written, an alias or key.
type entry struct{ key, val, raw *yaml.Node }

// fields reads a mapping whose keys come from keys. Unknown and repeated keys are reported where
// they are written, missing required keys at the mapping. ok is false when n is not a mapping.
func (l *loader) fields(n *yaml.Node, what string, keys []string, required ...string) (map[string]entry, bool) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		l.errorf(l.at(n), RuleBadValue, "%s: want a mapping, got %s", what, describe(n))
		return nil, false
	}
	out := make(map[string]entry, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		raw, v := n.Content[i], n.Content[i+1]
		k := deref(raw)
		switch {
		case k.Kind != yaml.ScalarNode:
			l.errorf(l.at(k), RuleBadValue, "%s: keys are plain words, got %s", what, describe(k))
		case !slices.Contains(keys, k.Value):
			l.errorf(l.at(k), RuleUnknownKey, "unknown key %q in %s%s (allowed: %s)",
				k.Value, what, didYouMean(k.Value, keys), strings.Join(keys, ", "))
		default:
			// A key given again through an alias of the first (`*k : ...`) is given again there.
			if first, dup := out[k.Value]; dup {
				l.errorf(l.at(raw), RuleDuplicate, "key %q given twice in %s (first at line %d)", k.Value, what, first.raw.Line)
				continue
			}
			out[k.Value] = entry{k, v, raw}
		}
	}
	for _, r := range required {
		if _, ok := out[r]; !ok && !mistypedKeys(n, keys)[r] {
			l.errorf(l.at(n), RuleMissingKey, "%s lacks required key %q", what, r)
		}
	}
	return out, true
}

// list reads a sequence; nothing (`key:` with no value) is an empty list.
func (l *loader) list(n *yaml.Node, what string) []*yaml.Node {
	n = deref(n)
	switch {
	case isNull(n):
		return nil
	case n.Kind != yaml.SequenceNode:
		l.errorf(l.at(n), RuleBadValue, "%s: want a list, got %s", what, describe(n))
		return nil
	}
	return n.Content
}

// scalar reads a plain value; nothing is an error.
func (l *loader) scalar(n *yaml.Node, what string) (string, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || isNull(n) {
		l.errorf(l.at(n), RuleBadValue, "%s: want a value, got %s", what, describe(n))
		return "", false
	}
	return n.Value, true
}

// text reads free text; nothing is the empty string.
func (l *loader) text(n *yaml.Node, what string) string {
	if isNull(deref(n)) {
		return ""
	}
	s, _ := l.scalar(n, what)
	return s
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// name reads a name of the language ([a-z0-9][a-z0-9-]*). A badly formed name is reported and
// still returned, so that what refers to it is not reported a second time as undeclared.
func (l *loader) name(n *yaml.Node, what string) (string, bool) {
	v, ok := l.scalar(n, what)
	if ok && !nameRE.MatchString(v) {
		l.errorf(l.at(deref(n)), RuleBadName, "bad %s %q: want lower-case letters, digits and '-', not starting with '-'", what, v)
	}
	return v, ok
}

// size reads a byte count (PROBE-LANGUAGE.md, Sizes).
func (l *loader) size(n *yaml.Node, what string) (int64, bool) {
	v, ok := l.scalar(n, what)
	if !ok {
		return 0, false
	}
	sz, err := ParseSize(v)
	if err != nil {
		hint := ""
		for _, u := range []string{"KB", "MB", "GB", "TB", "kB", "k", "K", "M", "G", "T"} {
			if strings.HasSuffix(v, u) {
				hint = " (decimal units are not sizes here: write KiB, MiB, GiB or TiB)"
				break
			}
		}
		if strings.HasPrefix(v, "0x") || strings.HasPrefix(v, "0X") {
			hint = " (sizes and offsets are decimal; 0x hex is for the other numbers)"
		}
		l.errorf(l.at(deref(n)), RuleBadSize, "%s: %v%s", what, err, hint)
		return 0, false
	}
	return sz, true
}

// bufferSize reads the size of a buffer (declared, alloc or grow): at least min bytes, at most
// the buffer limit.
func (l *loader) bufferSize(n *yaml.Node, what string, min int64) (int64, bool) {
	sz, ok := l.size(n, what)
	switch {
	case !ok:
		return 0, false
	case sz < min:
		l.errorf(l.at(deref(n)), RuleBadSize, "%s: at least %s", what, plural.Count(min, "byte"))
		return 0, false
	case sz > l.lim.MaxBufferBytes:
		l.errorf(l.at(deref(n)), RuleLimit, "%s: %s is above the buffer limit of %s", what, bytesText(sz), bytesText(l.lim.MaxBufferBytes))
	}
	return sz, true
}

// unsigned reads an integer 0..max, decimal without a leading 0 or 0x hex (ParseUint).
func (l *loader) unsigned(n *yaml.Node, what string, max uint64) (uint64, bool) {
	v, ok := l.scalar(n, what)
	if !ok {
		return 0, false
	}
	u, err := ParseUint(v)
	if err != nil || u > max {
		l.errorf(l.at(deref(n)), RuleBadValue, "%s: want an integer 0..%d, %s; got %q%s", what, max, integerRule, v, leadingZero(v))
		return 0, false
	}
	return u, true
}

// replays reads a replay count, 1..MaxReplays, written as every number but a size is (ParseUint).
// A count below 1, a negative one included, or above the limit is a limit problem; any other
// text a bad value.
func (l *loader) replays(n *yaml.Node, what string) (int, bool) {
	v, ok := l.scalar(n, what)
	if !ok {
		return 0, false
	}
	p := l.at(deref(n))
	digits, negative := strings.CutPrefix(v, "-")
	i, err := ParseUint(digits)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		l.errorf(p, RuleBadValue, "%s: want an integer 1..%d, %s; got %q%s", what, l.lim.MaxReplays, integerRule, v, leadingZero(digits))
	case negative || i < 1:
		l.errorf(p, RuleLimit, "%s: %s is below 1", what, v)
	case err != nil || i > uint64(l.lim.MaxReplays):
		l.errorf(p, RuleLimit, "%s: %s is above the limit of %d", what, v, l.lim.MaxReplays)
	default:
		return int(i), true
	}
	return 0, false
}

// oneOf reads a value from a closed set.
func (l *loader) oneOf(n *yaml.Node, what string, allowed []string) (string, bool) {
	v, ok := l.scalar(n, what)
	if !ok {
		return "", false
	}
	if !slices.Contains(allowed, v) {
		l.errorf(l.at(deref(n)), RuleBadValue, "%s %q%s: want one of %s", what, v, didYouMean(v, allowed), strings.Join(allowed, ", "))
		return "", false
	}
	return v, true
}

func (l *loader) pattern(n *yaml.Node, what string) (Pattern, bool) {
	v, ok := l.scalar(n, what)
	if !ok {
		return Pattern{}, false
	}
	p, err := ParsePattern(v)
	if err != nil {
		l.errorf(l.at(deref(n)), RuleBadPattern, "%s: %v", what, err)
		return Pattern{}, false
	}
	return p, true
}

var threadNames = []string{"main", "other"}

// host reads a host memory kind (pageable, pinned); 0 after a problem.
func (l *loader) host(n *yaml.Node, what string) device.HostMemory {
	s, ok := l.oneOf(n, what, stringers(device.HostMemories()))
	if !ok {
		return 0
	}
	h, _ := device.ParseHostMemory(s)
	return h
}

func captureModeNames() []string { return stringers(device.CaptureModes()) }

// texts lists values of a string kind as plain strings, for closed-set checks and hints.
func texts[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// stringers lists values by their String, for closed-set checks and hints.
func stringers[T fmt.Stringer](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = v.String()
	}
	return out
}

func (l *loader) thread(n *yaml.Node, what string) device.Thread {
	if v, _ := l.oneOf(n, what, threadNames); v == "other" {
		return device.Other
	}
	return device.Main
}

// names reads a list of names, reporting repeats where they are written (an alias of an earlier
// item at the alias); at gives each name's item as written, an alias or the name.
func (l *loader) names(n *yaml.Node, what string, check func(*yaml.Node, string) (string, bool)) (out []string, at []*yaml.Node) {
	seen := firstSeen{}
	for _, item := range l.list(n, what+"s") {
		if v, ok := check(item, what); ok && l.unique(seen, what, v, l.at(item)) {
			out = append(out, v)
			at = append(at, item)
		}
	}
	return out, at
}

// DidYouMean suggests the allowed word closest to word, as " (did you mean "x"?)", or "" when none
// is close: for messages about names a user typed.
func DidYouMean(word string, allowed []string) string { return didYouMean(word, allowed) }

func didYouMean(word string, allowed []string) string {
	best := Closest(word, allowed)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// Closest is the allowed word closest to word when it is a small typo of it (an edit distance
// below 3 and below word's length), or "": the suggestion DidYouMean words, for callers that
// word their own (the command line's "did you mean --profile?").
func Closest(word string, allowed []string) string {
	best, bestDist := "", 3
	for _, a := range allowed {
		if d := editDistance(word, a); d < bestDist && d < len(word) {
			best, bestDist = a, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
