package verdict

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// BaselineVersion is the format tag of a baseline file.
const BaselineVersion = "replaycheck-baseline/v1"

// Baseline records what one platform did with every unguarded instance of a catalog: the outcome
// and, for a rejection, the class, code and whether the capture was invalidated. A later run on the
// same platform is compared with it, so a driver or runtime upgrade that changes behaviour is
// caught. Only unguarded instances are recorded: the guards are the runtime's, the baseline is the
// platform's.
type Baseline struct {
	Version     string `yaml:"version"`
	Platform    string `yaml:"platform"`
	Description string `yaml:"description,omitempty"`
	// Instances maps an instance id (set/name@mode/guards-off) to what the platform did.
	Instances map[string]Behaviour `yaml:"instances"`

	// File is where the baseline was read from, for messages.
	File string `yaml:"-"`
}

// Behaviour is what a platform did with one instance.
type Behaviour struct {
	Outcome     string `yaml:"outcome" json:"outcome"`
	Class       string `yaml:"class,omitempty" json:"class,omitempty"`
	Code        int    `yaml:"code,omitempty" json:"code,omitempty"`
	Invalidated bool   `yaml:"invalidated,omitempty" json:"invalidated,omitempty"`
}

func (b Behaviour) String() string {
	if b.Outcome != string(probes.Rejected) {
		return b.Outcome
	}
	s := fmt.Sprintf("rejected with %d [%s]", b.Code, b.Class)
	if b.Invalidated {
		s += ", capture invalidated"
	}
	return s
}

// PlatformKey names the platform a backend and profile stand for, e.g. "sim/cann". Its baseline
// file is BaselineFile(key) in the catalog's baselines/ directory.
func PlatformKey(backend, profile string) string {
	if profile == "" {
		return backend
	}
	return backend + "/" + profile
}

// BaselineFile is the file name of a platform's baseline: the key with "/" made "-", plus .yaml.
// The key comes from the device (a driver library or a runtime plugin reports it), so the name is
// made safe to join to a directory whatever the key holds: every character other than ASCII
// letters, digits, '.', '_' and '-' becomes '-', and leading dots are dropped, so it holds no path
// separator, is never "." or "..", and is never hidden. An empty key is "unknown".
func BaselineFile(key string) string {
	name := strings.Map(func(r rune) rune {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return r
		}
		return '-'
	}, key)
	name = strings.TrimLeft(name, ".")
	if name == "" {
		name = "unknown"
	}
	return name + ".yaml"
}

// BehaviourOf is what res shows the platform did.
func BehaviourOf(res *capture.Result) Behaviour {
	b := Behaviour{Outcome: string(res.Outcome)}
	if res.Outcome == probes.Rejected && res.Rejection != nil {
		b.Class, b.Code, b.Invalidated = string(res.Rejection.Class), res.Rejection.Code, res.Rejection.Invalidated
	}
	return b
}

// recordable reports whether res says something about the platform: unguarded, run, not broken.
func recordable(res *capture.Result) bool {
	return !res.Guarded && res.Outcome != probes.Skipped && res.Outcome != probes.Errored
}

// NewBaseline records the unguarded results of a run on platform.
func NewBaseline(platform, description string, results []*capture.Result) *Baseline {
	b := &Baseline{Version: BaselineVersion, Platform: platform, Description: description, Instances: map[string]Behaviour{}}
	for _, res := range results {
		if recordable(res) {
			b.Instances[res.ID] = BehaviourOf(res)
		}
	}
	return b
}

// FindBaseline reads the baseline of platform key from dir/baselines/, as BaselineFile names it;
// nil without error when there is none. Callers check the platform (CheckPlatform) once they have
// named the file for their users.
func FindBaseline(dir, key string) (*Baseline, error) {
	file := filepath.Join(dir, "baselines", BaselineFile(key))
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return ReadBaseline(file)
}

// LocateBaseline finds the baseline of platform key that choice names: "none" is none; "auto" or
// "" looks for baselines/<file> in each of dirs in turn (BaselineFile(key)) and is nil without
// error when none has it; anything else is a file, read as given. A baseline found for another
// platform is an error naming both.
func LocateBaseline(choice string, dirs []string, key string) (*Baseline, error) {
	var b *Baseline
	var err error
	switch choice {
	case "none":
		return nil, nil
	case "", "auto":
		for _, dir := range dirs {
			if b, err = FindBaseline(dir, key); b != nil || err != nil {
				break
			}
		}
	default:
		b, err = ReadBaseline(choice)
	}
	if b == nil || err != nil {
		return nil, err
	}
	return b, b.CheckPlatform(key)
}

// ReadBaseline reads a baseline file strictly: unknown keys, a wrong version, an unknown outcome or
// a rejection without class are errors naming the file and line.
func ReadBaseline(path string) (*Baseline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	return ParseBaseline(path, data)
}

// ParseBaseline is ReadBaseline on data already read; file names it in errors.
func ParseBaseline(file string, data []byte) (*Baseline, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var b Baseline
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	b.File = file
	if b.Version != BaselineVersion {
		return nil, fmt.Errorf("%s:%d: version must be %s, not %q", file, lineOf(&doc, "version"), BaselineVersion, b.Version)
	}
	if b.Platform == "" {
		return nil, fmt.Errorf("%s: platform is missing", file)
	}
	var errs []string
	for _, id := range slices.Sorted(maps.Keys(b.Instances)) {
		beh := b.Instances[id]
		line := lineOf(&doc, "instances", id)
		switch probes.Outcome(beh.Outcome) {
		case probes.Exact, probes.Corrupted, probes.Refused:
			if beh.Class != "" || beh.Code != 0 || beh.Invalidated {
				errs = append(errs, fmt.Sprintf("%s:%d: %s: class, code and invalidated belong to a rejection only", file, line, id))
			}
		case probes.Rejected:
			if beh.Class == "" {
				errs = append(errs, fmt.Sprintf("%s:%d: %s: a rejection needs its class", file, line, id))
			}
		default:
			errs = append(errs, fmt.Sprintf("%s:%d: %s: outcome %q is not exact, rejected, refused or corrupted", file, line, id, beh.Outcome))
		}
		if _, _, guarded, err := probes.ParseID(id); err != nil {
			errs = append(errs, fmt.Sprintf("%s:%d: %v", file, line, err))
		} else if guarded {
			errs = append(errs, fmt.Sprintf("%s:%d: %s: a baseline records unguarded instances (…/guards-off) only", file, line, id))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return &b, nil
}

// lineOf finds the line of a key path in a YAML document, 0 when absent.
func lineOf(doc *yaml.Node, path ...string) int {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, key := range path {
		if n.Kind != yaml.MappingNode {
			return 0
		}
		next := (*yaml.Node)(nil)
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				line, next = n.Content[i].Line, n.Content[i+1]
				break
			}
		}
		if next == nil {
			return 0
		}
		n = next
	}
	return line
}

// WriteYAML writes the baseline with instances in sorted order, one per line, so that baselines
// diff well under version control. Every string is written so that ParseBaseline reads it back as
// it was (scalar): a platform key or a class comes from a driver library or a plugin, and may hold
// anything.
func (b *Baseline) WriteYAML(w io.Writer) error {
	var buf bytes.Buffer
	platform := scalar(b.Platform)
	fmt.Fprintf(&buf, "# What %s did with every unguarded instance of the catalog. Written by\n", platform)
	fmt.Fprintf(&buf, "# `replaycheck baseline write`; compared with every run on this platform.\n")
	fmt.Fprintf(&buf, "version: %s\nplatform: %s\n", BaselineVersion, platform)
	if b.Description != "" {
		d, err := yaml.Marshal(map[string]string{"description": b.Description})
		if err != nil {
			return err
		}
		buf.Write(d)
	}
	buf.WriteString("instances:\n")
	for _, id := range slices.Sorted(maps.Keys(b.Instances)) {
		beh := b.Instances[id]
		fmt.Fprintf(&buf, "  %s: {outcome: %s", scalar(id), scalar(beh.Outcome))
		if beh.Class != "" {
			fmt.Fprintf(&buf, ", class: %s, code: %d", scalar(beh.Class), beh.Code)
		}
		if beh.Invalidated {
			buf.WriteString(", invalidated: true")
		}
		buf.WriteString("}\n")
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// scalar is s as a YAML scalar that reads back as s, as a key or a value, in a flow mapping too:
// plain when s is made of characters that mean nothing to YAML and reads back as the same string
// (the catalog's ids, platforms, outcomes and classes do), double-quoted otherwise.
func scalar(s string) string {
	plain := s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._/@-", r))
	})
	if plain {
		var v struct{ S string }
		// "null", "true", "1e3" and their like are other things than strings.
		if err := yaml.Unmarshal([]byte("s: "+s), &v); err == nil && v.S == s {
			return s
		}
	}
	var q strings.Builder
	q.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			q.WriteByte('\\')
			q.WriteRune(r)
		// YAML's printable characters, less the line breaks beyond ASCII (U+2028, U+2029).
		case r >= 0x20 && r < 0x7f, r >= 0xa0 && r <= 0xd7ff && r != 0x2028 && r != 0x2029,
			r >= 0xe000 && r <= 0xfffd && r != 0xfeff, r >= 0x10000:
			q.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&q, "\\u%04x", r)
		default:
			fmt.Fprintf(&q, "\\U%08x", r)
		}
	}
	q.WriteByte('"')
	return q.String()
}

// Drift is one difference between a run and a baseline.
type Drift struct {
	ID       string             `json:"id"`
	Probe    string             `json:"probe"`
	Mode     device.CaptureMode `json:"mode"`
	Baseline *Behaviour         `json:"baseline,omitempty"` // nil: the baseline does not characterise the instance
	Now      *Behaviour         `json:"now,omitempty"`      // nil: the run did not produce the instance
}

// Changed reports whether the platform's behaviour differs from the baseline (as opposed to an
// instance only one side has).
func (d Drift) Changed() bool { return d.Baseline != nil && d.Now != nil }

func (d Drift) String() string {
	switch {
	case d.Baseline == nil:
		return fmt.Sprintf("%s in %s mode: uncharacterised (not in the baseline), now %s", d.Probe, d.Mode, d.Now)
	case d.Now == nil:
		return fmt.Sprintf("%s in %s mode: in the baseline (%s) but not in this run", d.Probe, d.Mode, d.Baseline)
	}
	return fmt.Sprintf("%s in %s mode: behaviour changed: baseline says %s, now %s", d.Probe, d.Mode, d.Baseline, d.Now)
}

// Compare returns the drift of one result, and false when there is none (or the result says nothing
// about the platform).
func (b *Baseline) Compare(res *capture.Result) (Drift, bool) {
	if !recordable(res) {
		return Drift{}, false
	}
	now := BehaviourOf(res)
	d := Drift{ID: res.ID, Probe: res.Probe, Mode: res.Mode, Now: &now}
	old, ok := b.Instances[res.ID]
	if !ok {
		return d, true
	}
	if old == now {
		return Drift{}, false
	}
	d.Baseline = &old
	return d, true
}

// Diff compares a run with the baseline: changed behaviour, uncharacterised instances, and baseline
// instances the run did not produce (a skipped or broken result counts as not run). Sorted by
// instance id.
func (b *Baseline) Diff(results []*capture.Result) []Drift {
	var out []Drift
	seen := map[string]bool{}
	for _, res := range results {
		if !recordable(res) {
			continue // skipped or broken: it did not run, as far as the platform is concerned
		}
		seen[res.ID] = true
		if d, ok := b.Compare(res); ok {
			out = append(out, d)
		}
	}
	for id, beh := range b.Instances {
		if !seen[id] {
			// ParseBaseline checked every id.
			probe, mode, _, _ := probes.ParseID(id)
			old := beh
			out = append(out, Drift{ID: id, Probe: probe, Mode: mode, Baseline: &old})
		}
	}
	slices.SortFunc(out, func(x, y Drift) int { return strings.Compare(x.ID, y.ID) })
	return out
}

// Within is the part of b whose instance ids covers accepts (a narrowed run's selection, e.g.
// run.Config.Covers), and how many instances it left out: a run that selected a few probes says
// nothing of the baseline's others, which would otherwise count as not run. A covers that fails
// keeps the instance.
func (b *Baseline) Within(covers func(id string) (bool, error)) (*Baseline, int) {
	out := *b
	out.Instances = make(map[string]Behaviour, len(b.Instances))
	for id, beh := range b.Instances {
		if in, err := covers(id); in || err != nil {
			out.Instances[id] = beh
		}
	}
	return &out, len(b.Instances) - len(out.Instances)
}

// Unchanged counts the results that say something about the platform and match the baseline.
func (b *Baseline) Unchanged(results []*capture.Result) int {
	n := 0
	for _, res := range results {
		if _, drifted := b.Compare(res); recordable(res) && !drifted {
			n++
		}
	}
	return n
}

// CheckPlatform fails when the baseline records another platform than key.
func (b *Baseline) CheckPlatform(key string) error {
	if b.Platform != key {
		return fmt.Errorf("baseline %s records platform %s, but this run is %s", b.File, b.Platform, key)
	}
	return nil
}
