package probes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/replaycheck/replaycheck/device"
)

// Load reads probe files. Each path is a file, read whatever its name, or a directory, which
// contributes its *.yaml and *.yml files in name order without descending into subdirectories.
// It reads every file even after a bad one and returns the sets of the files that have no problem,
// in the order read, together with the problems of all files as Diagnostics (nil when there is
// none). A file with a problem contributes no set. Set names are unique among the files loaded
// together; a file named twice is read once.
func Load(lim Limits, paths ...string) ([]*Set, error) {
	var (
		sets  []*Set
		diags Diagnostics
		read  = map[string]bool{}
		named = firstSeen{} // set name -> where it was first defined
	)
	for _, path := range paths {
		files, err := probeFiles(path)
		if err != nil {
			diags = append(diags, Diagnostic{Pos: Pos{File: path}, Rule: RuleRead, Message: readProblem(err)})
			continue
		}
		for _, file := range files {
			if abs, err := filepath.Abs(file); err == nil {
				if read[abs] {
					continue
				}
				read[abs] = true
			}
			if !statFile(file, lim, &diags) {
				continue
			}
			data, err := os.ReadFile(file)
			if err != nil {
				diags = append(diags, Diagnostic{Pos: Pos{File: file}, Rule: RuleRead, Message: readProblem(err)})
				continue
			}
			set, namePos, ds := parse(file, data, lim)
			diags = append(diags, ds...)
			if set == nil || set.Name == "" {
				continue
			}
			// Even a bad file claims its set name, so that a duplicate is reported in the same run.
			if first, dup := named.again(set.Name, namePos); dup {
				diags = append(diags, Diagnostic{Pos: namePos, Rule: RuleDuplicate,
					Message: fmt.Sprintf("set %q is already defined in %s (line %d)", set.Name, FileText(first.File), first.Line)})
				continue
			}
			if len(ds) == 0 {
				sets = append(sets, set)
			}
		}
	}
	return sets, diags.err()
}

// LoadFile reads one probe file.
func LoadFile(path string, lim Limits) (*Set, error) {
	var diags Diagnostics
	if !statFile(path, lim, &diags) {
		return nil, diags
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, Diagnostics{{Pos: Pos{File: path}, Rule: RuleRead, Message: readProblem(err)}}
	}
	return Parse(path, data, lim)
}

// Parse reads one probe file's content; file names it in positions. It returns the set, or nil and
// every problem of the file as Diagnostics.
func Parse(file string, data []byte, lim Limits) (*Set, error) {
	set, _, ds := parse(file, data, lim)
	if len(ds) > 0 {
		return nil, ds.err()
	}
	return set, nil
}

// probeFiles lists the files a Load path stands for.
func probeFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path) // sorted by name
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, filepath.Join(path, e.Name()))
		}
	}
	return files, nil
}

// parse decodes and checks one file. It returns the set as far as it could be read (nil when the
// file is not a mapping), where the set's name is written, and the file's problems.
func parse(file string, data []byte, lim Limits) (*Set, Pos, Diagnostics) {
	l := &loader{file: file, data: data, lim: lim.withDefaults(), pos: map[fieldKey]Pos{}}
	if !l.screen(data) {
		return nil, Pos{}, l.problems()
	}
	root := l.document(data)
	if root == nil {
		return nil, Pos{}, l.problems()
	}
	set, namePos := l.set(root)
	return set, namePos, l.problems()
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// document returns the file's one document, nil after a syntax error.
func (l *loader) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			l.errorf(Pos{File: l.file, Line: 1, Col: 1}, RuleMissingKey, "empty probe file: want a mapping with version, set and probes")
		} else {
			l.yamlError(err)
		}
		return nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		l.errorf(l.at(&next), RuleYAML, "a probe file is one YAML document; a second one starts here")
	case !errors.Is(err, io.EOF):
		l.yamlError(err)
	}
	if len(doc.Content) == 0 || !l.refuseStructure(&doc) {
		return nil
	}
	return deref(doc.Content[0])
}

// yamlParserProblems are the problems yaml.v3's parser (not its scanner) reports. For them it
// prints the 0-based line of the construct being parsed, and nothing on the first line; scanner
// problems carry a 1-based line.
var yamlParserProblems = []string{
	"did not find expected ',' or ']'", "did not find expected ',' or '}'", "did not find expected '-' indicator",
	"did not find expected <document start>", "did not find expected <stream-start>", "did not find expected key",
	"did not find expected node content", "found duplicate %TAG directive", "found duplicate %YAML directive",
	"found incompatible YAML document", "found undefined tag handle",
}

// yamlError reports a syntax error at the line yaml.v3 gives, column 1: it reports no column.
func (l *loader) yamlError(err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	p := Pos{File: l.file}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		p.Line, _ = strconv.Atoi(m[1])
		p.Col = 1
		msg = strings.TrimPrefix(err.Error(), m[0])
	}
	if slices.Contains(yamlParserProblems, msg) {
		p.Line, p.Col = p.Line+1, 1
	}
	if p.Line == 0 || strings.HasPrefix(msg, "exceeded max depth") {
		p.Line, p.Col = l.locate(msg)
	}
	l.errorf(p, RuleYAML, "%s", msg)
}

// locate finds, for the problems yaml.v3 reports without a line, the offending place in the data:
// an unknown alias, a control character, an invalid UTF-8 byte. 1:1 when it cannot tell.
func (l *loader) locate(msg string) (line, col int) {
	at := -1
	switch {
	case strings.HasPrefix(msg, "unknown anchor '"):
		name := strings.TrimSuffix(strings.TrimPrefix(msg, "unknown anchor '"), "' referenced")
		at = bytes.Index(l.data, []byte("*"+name))
	case strings.Contains(msg, "control characters"):
		at = bytes.IndexFunc(l.data, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\r' && r != '\t' })
	case strings.HasPrefix(msg, "exceeded max depth"):
		// Where flow brackets first nest past yaml.v3's limit (quotes ignored: a hint).
		depth := 0
		for i, b := range l.data {
			switch b {
			case '[', '{':
				depth++
			case ']', '}':
				depth--
			}
			if depth > 10000 {
				at = i
				break
			}
		}
	case strings.Contains(msg, "UTF-8"):
		for i := 0; i < len(l.data); {
			r, n := utf8.DecodeRune(l.data[i:])
			if r == utf8.RuneError && n <= 1 {
				at = i
				break
			}
			i += n
		}
	}
	if at < 0 {
		return 1, 1
	}
	line = 1 + bytes.Count(l.data[:at], []byte("\n"))
	col = 1 + utf8.RuneCount(l.data[bytes.LastIndexByte(l.data[:at], '\n')+1:at])
	return line, col
}

var (
	setKeys      = []string{"version", "set", "description", "defaults", "probes"}
	defaultsKeys = []string{"replays", "modes", "guards"}
)

func (l *loader) set(root *yaml.Node) (*Set, Pos) {
	s := &Set{Pos: l.at(root)}
	f, ok := l.fields(root, "probe file", setKeys, "version", "set", "probes")
	if !ok {
		return nil, Pos{}
	}
	if e, ok := f["version"]; ok {
		v, ok := l.scalar(e.val, "version")
		if ok && v != Version {
			// Another version's file is read by another reader; checking it against v1 would
			// bury the one useful message under unknown keys.
			l.errorf(l.at(deref(e.val)), RuleVersion, "version %q is not supported: want %s", v, Version)
			return nil, Pos{}
		}
	}
	var namePos Pos
	if e, ok := f["set"]; ok {
		s.Name, _ = l.name(e.val, "set name")
		namePos = l.at(deref(e.val))
	}
	if e, ok := f["description"]; ok {
		s.Description = l.text(e.val, "description")
	}
	if e, ok := f["defaults"]; ok {
		s.Defaults = l.defaults(e.val)
	}
	if e, ok := f["probes"]; ok {
		seen := firstSeen{}
		for _, n := range l.list(e.val, "probes") {
			p := l.probe(n, s)
			if p == nil {
				continue
			}
			// A probe given again by an alias (`- *base`) is given again at the alias. Nothing else
			// of it is placed there: every other problem it has, the anchored probe has too.
			at := l.where(p, "name", p.Pos)
			if n.Kind == yaml.AliasNode {
				at = l.at(n)
			}
			if p.Name == "" || l.unique(seen, "probe", p.Name, at) {
				s.Probes = append(s.Probes, p)
			}
		}
	}
	return s, namePos
}

func (l *loader) defaults(n *yaml.Node) Defaults {
	f, ok := l.fields(n, "defaults", defaultsKeys)
	if !ok {
		return Defaults{}
	}
	return l.matrix(f, "defaults replays")
}

// matrix reads the keys a probe and its set's defaults share, those of the run matrix: replays,
// modes and guards. replaysWhat names the replay count in messages.
func (l *loader) matrix(f map[string]entry, replaysWhat string) Defaults {
	var d Defaults
	if e, ok := f["replays"]; ok {
		d.Replays, _ = l.replays(e.val, replaysWhat)
	}
	if e, ok := f["modes"]; ok {
		d.Modes = l.modes(e.val)
	}
	if e, ok := f["guards"]; ok {
		d.Guards = l.guards(e.val)
	}
	return d
}

// modes reads a non-empty list of capture modes; nil after a problem.
func (l *loader) modes(n *yaml.Node) []device.CaptureMode {
	names := captureModeNames()
	list, at := l.names(n, "mode", func(n *yaml.Node, what string) (string, bool) { return l.oneOf(n, what, names) })
	if len(at) == 0 {
		l.nonEmpty(n, "modes")
		return nil
	}
	out := make([]device.CaptureMode, 0, len(list))
	for _, s := range list {
		m, _ := device.ParseCaptureMode(s)
		out = append(out, m)
	}
	return out
}

// guards reads a non-empty list of on/off; nil after a problem.
func (l *loader) guards(n *yaml.Node) []bool {
	list, at := l.names(n, "guard setting", func(n *yaml.Node, what string) (string, bool) {
		return l.oneOf(n, what, []string{"on", "off"})
	})
	if len(at) == 0 {
		l.nonEmpty(n, "guards")
		return nil
	}
	out := make([]bool, 0, len(list))
	for _, s := range list {
		out = append(out, s == "on")
	}
	return out
}

// nonEmpty reports a list that was given empty: an empty matrix axis would silently run nothing.
func (l *loader) nonEmpty(n *yaml.Node, what string) {
	n = deref(n)
	if isNull(n) || (n.Kind == yaml.SequenceNode && len(n.Content) == 0) {
		l.errorf(l.at(n), RuleBadValue, "%s: want at least one", what)
	}
}

var (
	probeKeys = []string{"name", "description", "hazard", "labels", "requires", "pools", "buffers", "streams",
		"non-blocking", "events", "prepare", "capture", "captures", "between", "phases", "replay", "check", "expect", "replays",
		"modes", "guards", "faults"}
	bufferKeys       = []string{"bytes", "init", "slot", "host", "pool"}
	poolKeys         = []string{"bytes", "host", "private"}
	launchKeys       = []string{"capture", "stream"}
	captureKeys      = []string{"stream", "ops", "end-thread", "end-stream", "pool"}
	capturesItemKeys = []string{"name", "stream", "ops", "end-thread", "end-stream", "pool"}
	replayKeys       = []string{"stream", "order", "each"}
	expectKeys       = []string{"guarded", "unguarded", "rejected-by", "refused-by", "platforms", "modes"}
	// platformExpectKeys are the keys of one family's entry in expect.platforms.
	platformExpectKeys = []string{"guarded", "unguarded", "rejected-by", "refused-by", "modes"}
	// modeExpectKeys are the keys of one capture mode's entry in expect.modes or in a family's
	// modes.
	modeExpectKeys = []string{"guarded", "unguarded", "rejected-by", "refused-by"}
	// refusedByKeys are the keys of a refused-by entry.
	refusedByKeys     = []string{"guard", "step"}
	guardedOutcomes   = []string{string(Exact), string(Refused), string(Rejected)}
	unguardedOutcomes = []string{string(Exact), string(Refused), string(Rejected), string(Corrupted)}
	slotNames         = []string{string(SlotPlain), string(SlotRetained), string(SlotArena)}
)

func hazardNames() []string { return texts(hazards) }

func classNames() []string { return texts(device.Classes()) }

// probe decodes one probe, resolves its defaults and runs the static checks on it.
func (l *loader) probe(n *yaml.Node, s *Set) *Probe {
	n = deref(n)
	p := &Probe{Pos: l.at(n), Set: s.Name}
	f, ok := l.fields(n, "probe", probeKeys, "name", "hazard", "streams", "expect")
	if !ok {
		return nil
	}
	l.mistyped = mistypedKeys(n, probeKeys)
	defer func() { l.mistyped = nil }()
	if e, ok := f["name"]; ok {
		p.Name, _ = l.name(e.val, "probe name")
		l.mark(p, "name", e.val)
	}
	if ops := rawOps(n); ops > l.lim.MaxOps {
		// Counted before decoding: nothing of a probe this large is decoded or checked.
		l.errorf(p.Pos, RuleLimit, "probe %s has %d ops, above the limit of %d", p.Name, ops, l.lim.MaxOps)
		return p
	}
	if e, ok := f["description"]; ok {
		p.Description = l.text(e.val, "description")
	}
	if e, ok := f["hazard"]; ok {
		h, _ := l.oneOf(e.val, "hazard", hazardNames())
		p.Hazard = Hazard(h)
	}
	if e, ok := f["labels"]; ok {
		p.Labels, _ = l.names(e.val, "label", l.name)
	}
	if e, ok := f["requires"]; ok {
		p.Requires, _ = l.names(e.val, "capability", func(n *yaml.Node, what string) (string, bool) {
			return l.oneOf(n, what, device.CapabilityNames())
		})
	}
	if e, ok := f["pools"]; ok {
		l.through(e.val, func() { p.Pools = l.pools(e.val) })
	}
	if e, ok := f["buffers"]; ok {
		l.through(e.val, func() { p.Buffers = l.buffers(e.val) })
	}
	if e, ok := f["streams"]; ok {
		var at []*yaml.Node
		p.Streams, at = l.names(e.val, "stream", l.name)
		l.nonEmpty(e.val, "streams")
		for i, name := range p.Streams {
			if name == DefaultStream {
				l.errorf(l.at(deref(at[i])), RuleBadName, "stream name %q is reserved for the platform's default stream: name it in ops without declaring it", name)
			}
		}
	}
	if e, ok := f["non-blocking"]; ok {
		l.through(e.val, func() { l.nonBlocking(p, e.val) })
	}
	if e, ok := f["events"]; ok {
		p.Events, _ = l.names(e.val, "event", l.name)
	}
	if _, ok := f["phases"]; ok {
		l.phases(p, f) // phases.go: the sequence entry by entry, instead of the sections below
	} else {
		if e, ok := f["prepare"]; ok {
			p.Prepare = l.ops(e.val, "prepare")
		}
		l.captures(p, n, f)
		if e, ok := f["between"]; ok {
			p.Between = l.ops(e.val, "between")
		}
	}
	p.Replay.Pos = p.Pos
	if e, ok := f["replay"]; ok {
		l.through(e.val, func() { l.replay(p, e) })
	}
	if e, ok := f["check"]; ok {
		l.through(e.val, func() {
			var at []*yaml.Node
			p.Check, at = l.names(e.val, "checked buffer", l.scalar)
			for i, n := range at {
				l.mark(p, "check."+strconv.Itoa(i), n)
			}
			if len(at) == 0 {
				l.errorf(l.at(deref(e.val)), RuleBadValue, "check: want at least one buffer; leave check out to compare every live buffer")
			}
		})
	}
	if e, ok := f["expect"]; ok {
		l.through(e.val, func() { l.expect(p, e) })
	}
	if e, ok := f["faults"]; ok {
		l.through(e.val, func() { p.Faults = l.faults(e.val) })
	}
	m := l.matrix(f, "replays")
	p.Replays, p.Modes, p.Guards = m.Replays, m.Modes, m.Guards
	resolveDefaults(p, s.Defaults)
	if !l.mistyped["buffers"] && !l.mistyped["streams"] && !l.mistyped["events"] && !l.mistyped["pools"] {
		// A probe that misspells a declaration key is not checked further: every name the key
		// declares would come out undeclared, and its ops racing, one problem for each use of the
		// one reported.
		l.check(p)
	}
	l.checkFaults(p)
	return p
}

// nonBlocking reads the non-empty list of streams created non-blocking. Its names refer to declared
// streams, as the check list's to buffers: one the probe does not declare, a badly formed one
// included, is reported by the checks after decoding (references), where it is used.
func (l *loader) nonBlocking(p *Probe, n *yaml.Node) {
	var at []*yaml.Node
	p.NonBlocking, at = l.names(n, "non-blocking stream", l.scalar)
	l.nonEmpty(n, "non-blocking")
	for i, name := range p.NonBlocking {
		if name == DefaultStream {
			l.errorf(l.at(deref(at[i])), RuleBadName, "non-blocking stream %q: the platform's default stream is the legacy stream, which is never non-blocking; name a declared stream", name)
		}
		l.mark(p, "non-blocking."+strconv.Itoa(i), at[i])
	}
}

// firstSeen remembers where each name was first given, to report one given again.
type firstSeen map[string]Pos

// again reports whether name was given before, and where; if not, it remembers name at at.
func (s firstSeen) again(name string, at Pos) (first Pos, dup bool) {
	if first, dup = s[name]; !dup {
		s[name] = at
	}
	return first, dup
}

// unique reports a name given before as a duplicate <what>, at at, and returns false; a name not
// seen yet it remembers, and returns true.
func (l *loader) unique(seen firstSeen, what, name string, at Pos) bool {
	first, dup := seen.again(name, at)
	if dup {
		l.errorf(at, RuleDuplicate, "duplicate %s %q (first at line %d)", what, name, first.Line)
	}
	return !dup
}

// named walks a mapping of unique names to values (buffers, pools): each entry with a good,
// unrepeated name is passed to each with its key and value as written (either may be an alias;
// each runs through the value's). keys names the value's keys for the message about a mapping of
// the wrong shape.
func (l *loader) named(n *yaml.Node, what, keys string, each func(k *yaml.Node, name string, v *yaml.Node)) {
	n = deref(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		l.errorf(l.at(n), RuleBadValue, "%ss: want a mapping of name to {%s}, got %s", what, keys, describe(n))
		return
	}
	seen := firstSeen{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if name, ok := l.name(k, what+" name"); ok && l.unique(seen, what, name, l.at(k)) {
			l.through(v, func() { each(k, name, v) })
		}
	}
}

func (l *loader) buffers(n *yaml.Node) []*Buffer {
	var out []*Buffer
	l.named(n, "buffer", strings.Join(bufferKeys, ", "), func(k *yaml.Node, name string, v *yaml.Node) {
		b := &Buffer{Pos: l.placed(k), Name: name, Init: Pattern{Kind: PatZero}, Slot: SlotPlain}
		out = append(out, b)
		what := fmt.Sprintf("buffer %s", name)
		f, ok := l.fields(v, what, bufferKeys, "bytes")
		if !ok {
			return
		}
		if e, ok := f["bytes"]; ok {
			b.Bytes, _ = l.bufferSize(e.val, what+" bytes", 1)
			l.mark(b, "bytes", e.val)
		}
		if e, ok := f["init"]; ok {
			b.Init, _ = l.pattern(e.val, what+" init")
		}
		if e, ok := f["slot"]; ok {
			if s, ok := l.oneOf(e.val, what+" slot", slotNames); ok {
				b.Slot = Slot(s)
			}
			l.mark(b, "slot", e.val)
		}
		if e, ok := f["host"]; ok {
			b.Place.Host = l.host(e.val, what+" host")
			l.mark(b, "host", e.val)
		}
		if e, ok := f["pool"]; ok {
			b.Place.Pool, _ = l.scalar(e.val, what+" pool")
			l.mark(b, "pool", e.val)
		}
	})
	return out
}

// pools reads the probe's pools: a mapping of name to {bytes, host}.
func (l *loader) pools(n *yaml.Node) []*Pool {
	var out []*Pool
	l.named(n, "pool", strings.Join(poolKeys, ", "), func(k *yaml.Node, name string, v *yaml.Node) {
		pl := &Pool{Pos: l.placed(k), Name: name}
		what := "pool " + name
		f, ok := l.fields(v, what, poolKeys, "bytes")
		if !ok {
			return
		}
		if e, ok := f["bytes"]; ok {
			pl.Bytes, _ = l.bufferSize(e.val, what+" bytes", device.PoolGranularity)
		}
		if e, ok := f["host"]; ok {
			pl.Host = l.host(e.val, what+" host")
		}
		if e, ok := f["private"]; ok {
			pl.Private = l.private(pl, e.val, what+" private")
		}
		out = append(out, pl)
	})
	return out
}

// captures reads `capture:` or `captures:`.
func (l *loader) captures(p *Probe, n *yaml.Node, f map[string]entry) {
	one, hasOne := f["capture"]
	many, hasMany := f["captures"]
	switch {
	case hasOne && hasMany:
		later := many.key
		if one.key.Line > later.Line || (one.key.Line == later.Line && one.key.Column > later.Column) {
			later = one.key
		}
		l.errorf(l.at(later), RuleCaptureAndCaptures, "capture and captures are both given: use capture for one capture sequence, captures for several")
		return
	case !hasOne && !hasMany:
		if l.mistyped["capture"] || l.mistyped["captures"] || l.mistyped["phases"] {
			return // the misspelt key is the problem, reported as such
		}
		l.errorf(l.at(n), RuleMissingKey, "probe lacks required key \"capture\" (or \"captures\", or \"phases\")")
		return
	case hasOne:
		c := &Capture{Pos: l.at(one.key), Name: "main"}
		l.through(one.val, func() {
			if l.capture(c, one.val, "capture", captureKeys) {
				p.Captures = append(p.Captures, c)
			}
		})
		return
	}
	l.through(many.val, func() {
		items := l.list(many.val, "captures")
		if len(items) == 0 {
			l.errorf(l.at(deref(many.val)), RuleBadValue, "captures: want at least one capture")
		}
		seen := firstSeen{}
		for _, item := range items {
			l.through(item, func() {
				c := &Capture{Pos: l.placed(item)}
				if l.capture(c, item, "capture", capturesItemKeys, "name") &&
					(c.Name == "" || l.unique(seen, "capture", c.Name, l.where(c, "name", c.Pos))) {
					p.Captures = append(p.Captures, c)
				}
			})
		}
	})
}

func (l *loader) capture(c *Capture, n *yaml.Node, what string, keys []string, required ...string) bool {
	f, ok := l.fields(n, what, keys, required...)
	if !ok {
		return false
	}
	l.captureOrigin(c, f)
	if e, ok := f["end-stream"]; ok {
		c.EndStream, _ = l.scalar(e.val, "capture end-stream")
		l.mark(c, "end-stream", e.val)
	}
	if e, ok := f["end-thread"]; ok {
		c.EndThread = l.thread(e.val, "capture end-thread")
	}
	if e, ok := f["ops"]; ok {
		c.Ops = l.ops(e.val, "capture ops")
	}
	return true
}

// captureOrigin reads the keys every form of a capture has: its name, origin stream and pool.
func (l *loader) captureOrigin(c *Capture, f map[string]entry) {
	if e, ok := f["name"]; ok {
		c.Name, _ = l.name(e.val, "capture name")
		l.mark(c, "name", e.val)
	}
	if e, ok := f["stream"]; ok {
		c.Stream, _ = l.scalar(e.val, "capture stream")
		l.mark(c, "stream", e.val)
	}
	if e, ok := f["pool"]; ok {
		c.Pool, _ = l.scalar(e.val, "capture pool")
		l.mark(c, "pool", e.val)
	}
}

func (l *loader) replay(p *Probe, e entry) {
	r := &p.Replay
	r.Pos = l.at(e.key)
	f, ok := l.fields(e.val, "replay", replayKeys)
	if !ok {
		return
	}
	if e, ok := f["stream"]; ok {
		r.Stream, _ = l.scalar(e.val, "replay stream")
		l.mark(r, "stream", e.val)
	}
	if e, ok := f["order"]; ok {
		l.mark(r, "order", e.val)
		l.through(e.val, func() {
			items := l.list(e.val, "replay order")
			if len(items) == 0 {
				l.errorf(l.at(deref(e.val)), RuleBadValue, "replay order: want at least one capture; leave order out to launch each capture once")
			}
			for _, item := range items {
				l.through(item, func() {
					if launch, ok := l.launch(item); ok {
						r.Order = append(r.Order, launch)
					}
				})
			}
		})
	}
	if e, ok := f["each"]; ok {
		r.Each = l.ops(e.val, "replay each")
	}
}

// launch reads one replay order entry: a capture name, launched on the replay stream, or
// {capture, stream}.
func (l *loader) launch(n *yaml.Node) (Launch, bool) {
	at := l.placed(n)
	n = deref(n)
	if n.Kind == yaml.ScalarNode {
		name, ok := l.scalar(n, "replay order entry")
		return Launch{Pos: at, Capture: name}, ok
	}
	f, ok := l.fields(n, "replay order entry", launchKeys, "capture")
	if !ok {
		return Launch{}, false
	}
	lc := Launch{Pos: at}
	if e, ok := f["capture"]; ok {
		lc.Capture, _ = l.scalar(e.val, "replay order capture")
		lc.Pos = l.placed(e.val)
	}
	if e, ok := f["stream"]; ok {
		lc.Stream, _ = l.scalar(e.val, "replay order stream")
	}
	return lc, lc.Capture != ""
}

func (l *loader) expect(p *Probe, e entry) {
	x := &p.Expect
	x.Pos = l.at(e.key)
	// guarded is required of a probe that runs with guards on; that is known once defaults are
	// resolved (check).
	f, ok := l.fields(e.val, "expect", expectKeys)
	if !ok {
		return
	}
	l.mark(x, "mapping", e.val)
	o := l.outcomes(f, "expect")
	x.Guarded, x.Unguarded = o.Guarded, o.Unguarded
	if e, ok := f["guarded"]; ok {
		l.mark(x, "guarded", e.val)
	}
	if len(o.RejectedBy) > 0 {
		x.RejectedBy = o.RejectedBy
	}
	x.RefusedBy = o.RefusedBy
	if e, ok := f["platforms"]; ok {
		x.Platforms = l.platformExpects(e.val)
	}
	if e, ok := f["modes"]; ok {
		l.through(e.val, func() { x.Modes = l.modeExpects(e.val, "expect modes") })
	}
}

// outcomes reads the guarded, unguarded, rejected-by and refused-by fields of an expectation
// (what names it in errors); a field not given stays empty, a rejected-by given empty is empty and
// not nil.
func (l *loader) outcomes(f map[string]entry, what string) PlatformExpect {
	var o PlatformExpect
	if e, ok := f["guarded"]; ok {
		v, _ := l.oneOf(e.val, what+" guarded", guardedOutcomes)
		o.Guarded = Outcome(v)
	}
	if e, ok := f["unguarded"]; ok {
		v, _ := l.oneOf(e.val, what+" unguarded", unguardedOutcomes)
		o.Unguarded = Outcome(v)
	}
	if e, ok := f["rejected-by"]; ok {
		o.RejectedBy = l.classes(e.val)
	}
	if e, ok := f["refused-by"]; ok {
		l.through(e.val, func() { o.RefusedBy = l.refusedBy(e, what+" refused-by") })
	}
	return o
}

// refusedBy reads a refused-by entry: who must refuse (guard, a name) and where (step, a phase
// or a step as reports write it). It is nil when the entry is not a mapping. The check after
// decoding (checkRefusedBy) finds it by the positions marked here: "key", "guard", "step".
func (l *loader) refusedBy(e entry, what string) *RefusedBy {
	f, ok := l.fields(e.val, what, refusedByKeys)
	if !ok {
		return nil
	}
	r := &RefusedBy{}
	l.mark(r, "key", e.key)
	if g, ok := f["guard"]; ok {
		if name, ok := l.name(g.val, what+" guard"); ok {
			if len(name) > maxRuleName {
				l.errorf(l.at(deref(g.val)), RuleBadName, "bad %s guard: %d bytes, above the limit of %d", what, len(name), maxRuleName)
			}
			r.Guard = name
			l.mark(r, "guard", g.val)
		}
	}
	if s, ok := f["step"]; ok {
		if text, ok := l.scalar(s.val, what+" step"); ok {
			step, err := ParseRefusalStep(text)
			if err != nil {
				l.errorf(l.at(deref(s.val)), RuleBadValue, "%s: %v", what, err)
			} else {
				r.Step = step
				l.mark(r, "step", s.val)
			}
		}
	}
	return r
}

// maxRuleName bounds refused-by's guard as a runtime bounds the name of a rule
// (runtime.MaxRuleBytes): a longer name can never match.
const maxRuleName = 63

// classes reads a rejected-by list of error classes; given empty, it is empty and not nil.
func (l *loader) classes(n *yaml.Node) []device.Class {
	names, _ := l.names(n, "error class", func(n *yaml.Node, what string) (string, bool) {
		return l.oneOf(n, what, classNames())
	})
	out := make([]device.Class, 0, len(names))
	for _, c := range names {
		out = append(out, device.Class(c))
	}
	return out
}

// platformExpects reads expect.platforms: a mapping from platform family to the expectation's
// fields that differ there.
func (l *loader) platformExpects(n *yaml.Node) map[string]PlatformExpect {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		l.errorf(l.at(n), RuleBadValue, "expect platforms: want a mapping from platform family (%s) to expectations, got %s",
			strings.Join(PlatformFamilies(), ", "), describe(n))
		return nil
	}
	out := map[string]PlatformExpect{}
	seen := firstSeen{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		raw, v := n.Content[i], n.Content[i+1]
		k := deref(raw)
		family, ok := l.scalar(k, "expect platforms key")
		if !ok {
			continue
		}
		if !slices.Contains(PlatformFamilies(), family) {
			l.errorf(l.at(k), RuleUnknownKey, "unknown platform family %q in expect platforms%s (families: %s for sim/cann and acl/..., %s for sim/cuda and cuda/...)",
				family, didYouMean(family, PlatformFamilies()), FamilyCANN, FamilyCUDA)
			continue
		}
		if !l.unique(seen, "platform family", family, l.at(raw)) {
			continue
		}
		what := "expect platforms " + family
		f, pe, ok := l.override(v, what, platformExpectKeys)
		if !ok {
			continue
		}
		pe.Pos = l.placed(raw)
		if e, ok := f["modes"]; ok {
			l.through(e.val, func() { pe.Modes = l.modeExpects(e.val, what+" modes") })
		}
		out[family] = pe
	}
	return out
}

// override reads one entry of expect.platforms or of a modes mapping (what names it in errors):
// its fields, keys, at least one of them given, and the outcomes among them. ok is false when the
// entry was reported.
func (l *loader) override(v *yaml.Node, what string, keys []string) (f map[string]entry, o PlatformExpect, ok bool) {
	if f, ok = l.fields(v, what, keys); !ok {
		return nil, PlatformExpect{}, false
	}
	if len(f) == 0 {
		l.errorf(l.at(deref(v)), RuleBadValue, "%s: give at least one of %s", what, strings.Join(keys, ", "))
		return nil, PlatformExpect{}, false
	}
	return f, l.outcomes(f, what), true
}

// modeNames are the capture modes' names, as expect.modes keys them.
func modeNames() []string {
	var out []string
	for _, m := range device.CaptureModes() {
		out = append(out, m.String())
	}
	return out
}

// modeExpects reads a mapping from capture mode to the expectation's fields that differ in that
// mode: expect.modes, or a family's modes in expect.platforms (what names it in errors).
func (l *loader) modeExpects(n *yaml.Node, what string) map[device.CaptureMode]ModeExpect {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		l.errorf(l.at(n), RuleBadValue, "%s: want a mapping from capture mode (%s) to expectations, got %s",
			what, strings.Join(modeNames(), ", "), describe(n))
		return nil
	}
	out := map[device.CaptureMode]ModeExpect{}
	seen := firstSeen{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		raw, v := n.Content[i], n.Content[i+1]
		k := deref(raw)
		name, ok := l.scalar(k, what+" key")
		if !ok {
			continue
		}
		mode, err := device.ParseCaptureMode(name)
		if err != nil {
			l.errorf(l.at(k), RuleUnknownKey, "unknown capture mode %q in %s%s (modes: %s)",
				name, what, didYouMean(name, modeNames()), strings.Join(modeNames(), ", "))
			continue
		}
		if !l.unique(seen, "capture mode", name, l.at(raw)) {
			continue
		}
		_, o, ok := l.override(v, what+" "+name, modeExpectKeys)
		if !ok {
			continue
		}
		out[mode] = ModeExpect{Pos: l.placed(raw), Guarded: o.Guarded, Unguarded: o.Unguarded, RejectedBy: o.RejectedBy, RefusedBy: o.RefusedBy}
	}
	return out
}

// resolveDefaults fills what the probe left out: the set's defaults, then the built-in ones, and
// the default streams of captures, ops and the replay, so later layers never see "".
func resolveDefaults(p *Probe, d Defaults) {
	switch {
	case p.Replays > 0:
	case d.Replays > 0:
		p.Replays = d.Replays
	default:
		p.Replays = DefaultReplays
	}
	switch {
	case p.Modes != nil:
	case d.Modes != nil:
		p.Modes = slices.Clone(d.Modes)
	default:
		p.Modes = DefaultModes()
	}
	switch {
	case p.Guards != nil:
	case d.Guards != nil:
		p.Guards = slices.Clone(d.Guards)
	default:
		p.Guards = DefaultGuards()
	}

	var first string
	if len(p.Streams) > 0 {
		first = p.Streams[0]
	}
	defaultStream := func(ops []*Op, stream string) {
		for _, op := range ops {
			if op.Stream == "" && op.Kind.onStream() {
				op.Stream = stream
			}
		}
	}
	defaultStream(p.Prepare, first)
	for _, c := range p.Captures {
		if c.Stream == "" {
			c.Stream = first
		}
		if c.EndStream == "" {
			c.EndStream = c.Stream
		}
		defaultStream(c.Ops, c.Stream)
	}
	defaultStream(p.Between, first)
	for _, st := range p.Phases {
		defaultStream(st.Ops, first)
	}
	defaultStream(p.Replay.Each, first)
	if p.Replay.Stream == "" && len(p.Captures) > 0 {
		p.Replay.Stream = p.Captures[0].Stream
	}
	if p.Replay.Order == nil {
		// Each capture once: each whose graph eager work does not destroy.
		destroyed := map[string]bool{}
		for _, st := range p.Stages() {
			if st.Eager() {
				for _, op := range st.Ops {
					destroyed[op.Capture] = destroyed[op.Capture] || op.Kind == OpDestroy
				}
			}
		}
		for _, c := range p.Captures {
			if !destroyed[c.Name] {
				p.Replay.Order = append(p.Replay.Order, Launch{Pos: p.Replay.Pos, Capture: c.Name})
			}
		}
	}
	for i := range p.Replay.Order {
		if p.Replay.Order[i].Stream == "" {
			p.Replay.Order[i].Stream = p.Replay.Stream
		}
	}
}
