package probes

import (
	"bytes"
	"fmt"
	"os"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// The defences against hostile input. They run before the expensive work: screen before YAML
// parses the file, refuseStructure right after it, before any probe is decoded or checked.

// statFile refuses a file above Limits.MaxFileBytes from its size alone, so a huge file is never
// read, and anything but a regular file; it returns false after a problem.
func statFile(file string, lim Limits, diags *Diagnostics) bool {
	info, err := os.Stat(file)
	if err != nil {
		*diags = append(*diags, Diagnostic{Pos: Pos{File: file}, Rule: RuleRead, Message: readProblem(err)})
		return false
	}
	if !info.Mode().IsRegular() {
		// /dev/zero or a FIFO: its size says nothing, and reading it may never end.
		*diags = append(*diags, Diagnostic{Pos: Pos{File: file}, Rule: RuleRead, Message: "not a regular file; not read"})
		return false
	}
	if max := lim.withDefaults().MaxFileBytes; info.Size() > max {
		*diags = append(*diags, Diagnostic{Pos: Pos{File: file}, Rule: RuleLimit,
			Message: fmt.Sprintf("file is %s, above the probe file limit of %s; not read", bytesText(info.Size()), bytesText(max))})
		return false
	}
	return true
}

// screen refuses data that is not probe text: too large, binary (a NUL byte) or not UTF-8. It
// returns false after a problem; YAML never sees such data.
func (l *loader) screen(data []byte) bool {
	if int64(len(data)) > l.lim.MaxFileBytes {
		l.errorf(Pos{File: l.file}, RuleLimit, "file is %s, above the probe file limit of %s", bytesText(int64(len(data))), bytesText(l.lim.MaxFileBytes))
		return false
	}
	if n := valueBound(data); n > l.lim.MaxFileValues {
		l.errorf(Pos{File: l.file}, RuleLimit, "file may make up to %d YAML values (counted from its punctuation), above the limit of %d; not parsed", n, l.lim.MaxFileValues)
		return false
	}
	if at := bytes.IndexByte(data, 0); at >= 0 {
		l.errorf(l.offset(at), RuleEncoding, "binary file: NUL byte at offset %d; a probe file is UTF-8 text", at)
		return false
	}
	if !utf8.Valid(data) {
		at := 0
		for at < len(data) {
			r, n := utf8.DecodeRune(data[at:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			at += n
		}
		l.errorf(l.offset(at), RuleEncoding, "invalid UTF-8 (byte 0x%02x at offset %d); a probe file is UTF-8 text", data[at], at)
		return false
	}
	return true
}

// valueBound is an upper bound of the nodes yaml.v3 builds from data (the document node
// included), counted from its punctuation in one pass, before it is parsed: the parse's time and
// memory grow with its nodes (about 170 bytes each), and a file of short items makes several
// nodes per byte. Apart from the document and its root, every node starts at an indicator: `:`
// ends a key and starts its value (two), `,`, `{` and `?` start a key that may have no value (two),
// `[` starts an item, and `-` followed by a space or a line break starts a block item.
// Indicators inside quoted or multi-line scalars are counted too, which only raises the bound.
func valueBound(data []byte) int {
	n := 2 + 2*bytes.Count(data, []byte(":")) + 2*bytes.Count(data, []byte(",")) +
		2*bytes.Count(data, []byte("{")) + 2*bytes.Count(data, []byte("?")) + bytes.Count(data, []byte("["))
	for i := 0; ; i++ {
		d := bytes.IndexByte(data[i:], '-')
		if d < 0 {
			return n
		}
		i += d
		if i+1 == len(data) || data[i+1] == ' ' || data[i+1] == '\n' || data[i+1] == '\r' {
			n++
		}
	}
}

// offset is the position of byte at of the file's data: columns count runes.
func (l *loader) offset(at int) Pos {
	d := l.data[:at]
	start := bytes.LastIndexByte(d, '\n') + 1
	return Pos{File: l.file, Line: 1 + bytes.Count(d, []byte("\n")), Col: 1 + utf8.RuneCount(d[start:])}
}

// MaxDepth is how deeply mappings and lists may nest in a probe file, aliases followed. The
// deepest structure of the language (probes, a probe, captures, a capture, ops, an op, its fields)
// is under 10 levels deep.
const MaxDepth = 32

// MaxAliasNodes is how many nodes the aliases of one file may add, each alias counting the nodes
// it stands for. Aliases let a file share a value; beyond this they would only make the loader
// walk one subtree again and again (the "billion laughs").
const MaxAliasNodes = 100000

// refuseStructure walks the parsed document once, before any of it is decoded, and reports
// aliases that expand beyond MaxAliasNodes, nesting deeper than MaxDepth and control characters in
// any key or value (they would reach terminals and reports). It returns false after a problem, so
// nothing is decoded from the tree. The expanded size and depth of each aliased node are counted
// once, so the walk is linear in the file whatever the aliases expand to.
func (l *loader) refuseStructure(root *yaml.Node) bool {
	before := l.found
	type extent struct{ nodes, depth int }
	memo := map[*yaml.Node]extent{}
	// expanded is n's size and depth with aliases followed; counts saturate past the budgets.
	var expanded func(n *yaml.Node) extent
	expanded = func(n *yaml.Node) extent {
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			return expanded(n.Alias)
		}
		if e, ok := memo[n]; ok {
			return e
		}
		memo[n] = extent{MaxAliasNodes + 1, MaxDepth + 1} // an alias inside its own anchor
		e := extent{1, 1}
		for _, c := range n.Content {
			ce := expanded(c)
			e.nodes = min(e.nodes+ce.nodes, MaxAliasNodes+1)
			e.depth = max(e.depth, ce.depth+1)
		}
		memo[n] = e
		return e
	}
	added, deep, bomb := 0, false, false
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		switch {
		case n.Kind == yaml.AliasNode && n.Alias != nil:
			e := expanded(n.Alias)
			added = min(added+e.nodes, MaxAliasNodes+1)
			if added > MaxAliasNodes && !bomb {
				l.errorf(l.at(n), RuleAlias, "alias *%s: the file's aliases expand to more than %d nodes", n.Value, MaxAliasNodes)
				bomb = true
			}
			if depth+e.depth-1 > MaxDepth && !deep {
				l.errorf(l.at(n), RuleLimit, "alias *%s: nesting deeper than %d levels", n.Value, MaxDepth)
				deep = true
			}
			return
		case n.Kind == yaml.ScalarNode:
			if at, r, ok := controlChar(n.Value); ok {
				l.errorf(l.at(n), RuleControl, "control character U+%04X at character %d of %s: text may hold newlines and tabs, no other control characters", r, at+1, describeText(n.Value))
			}
			return
		}
		if depth > MaxDepth {
			if !deep {
				l.errorf(l.at(n), RuleLimit, "nesting deeper than %d levels", MaxDepth)
				deep = true
			}
			return
		}
		for _, c := range n.Content {
			walk(c, depth+1)
		}
	}
	walk(root, 0)
	return l.found == before
}

// controlChar finds the first C0 or C1 control character or DEL in s other than newline and tab,
// and returns its index in runes.
func controlChar(s string) (at int, r rune, ok bool) {
	i := 0
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) {
			return i, r, true
		}
		i++
	}
	return 0, 0, false
}

// describeText quotes s for a message, shortened: it is hostile text.
func describeText(s string) string {
	if utf8.RuneCountInString(s) > 40 {
		s = string([]rune(s)[:40]) + "..."
	}
	return fmt.Sprintf("%+q", s)
}

// rawOps counts a probe's ops from its YAML before anything of it is decoded: the op limit then
// refuses a huge probe before its ops are decoded, checked for liveness or raced pairwise.
func rawOps(n *yaml.Node) int {
	count := 0
	listLen := func(v *yaml.Node) {
		if v = deref(v); v != nil && v.Kind == yaml.SequenceNode {
			count += len(v.Content)
		}
	}
	value := func(m *yaml.Node, key string) *yaml.Node {
		if m = deref(m); m == nil || m.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i+1]
			}
		}
		return nil
	}
	listLen(value(n, "prepare"))
	listLen(value(n, "between"))
	listLen(value(value(n, "capture"), "ops"))
	listLen(value(value(n, "replay"), "each"))
	if ps := deref(value(n, "phases")); ps != nil && ps.Kind == yaml.SequenceNode {
		for _, entry := range ps.Content {
			listLen(value(entry, "eager"))
			listLen(value(entry, "ops"))
			listLen(value(value(entry, "capture"), "ops"))
		}
	}
	if cs := deref(value(n, "captures")); cs != nil && cs.Kind == yaml.SequenceNode {
		for _, c := range cs.Content {
			listLen(value(c, "ops"))
		}
	}
	return count
}
