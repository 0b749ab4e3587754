package sim

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/bytesize"
)

//go:embed profiles/*.yaml
var profileFiles embed.FS

// Profile is one platform's answer to calls made during a capture, loaded from YAML. The simulator
// evaluates a fixed set of named conditions (see Conditions); a profile binds them to codes.
type Profile struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Errors gives the platform's code for failures that no rule covers, by class. Every profile
	// names invalid-value, out-of-memory, not-supported and capture-invalidated.
	Errors map[device.Class]Code `yaml:"errors"`
	// Rejecting rules are tried in order and the first whose call and condition match decides;
	// allow rules document silent behaviour and never pre-empt a rejection.
	Rules []Rule `yaml:"rules"`
}

// Code is a platform error code and the platform's name for it.
type Code struct {
	Code int    `yaml:"code"`
	Name string `yaml:"name"`
}

// Rule binds one condition, for some device calls and capture modes, to the platform's answer.
type Rule struct {
	// Situation is the row of docs/platforms.md this rule encodes, in words; it starts the
	// Detail of the error the rule produces.
	Situation string `yaml:"situation"`
	// Source is the row's evidence tag: measured, source, doc or verify.
	Source string `yaml:"source"`
	// Note says why, for rows tagged verify: which choice was made.
	Note string `yaml:"note"`
	// Calls are Device method names ("SyncStream", "Write", ...).
	Calls []string `yaml:"calls"`
	// When is a condition name (see Conditions).
	When string `yaml:"when"`
	// ModeNames restricts the rule to captures begun in these modes, as written in the file ("global",
	// "thread-local", "relaxed"); empty means every mode. Only for conditions that name captures.
	ModeNames []string `yaml:"modes"`
	// Modes is ModeNames parsed.
	Modes []device.CaptureMode `yaml:"-"`
	// CallerModeNames restricts the rule to calls from threads whose capture interaction mode
	// (ExchangeCaptureMode; every thread starts in global) is one of these; empty means any.
	CallerModeNames []string `yaml:"caller-modes"`
	// CallerModes is CallerModeNames parsed.
	CallerModes []device.CaptureMode `yaml:"-"`
	// Pageable restricts a rule on Copy to copies that name pageable host memory, which a
	// platform may have to stage through a synchronous copy.
	Pageable bool `yaml:"pageable"`
	// FreedBytes restricts a rule on a condition about freed allocations (graph-range-freed) to
	// allocations whose size, as requested when they were made, lies in this range: a platform may
	// keep a small allocation mapped after it is freed and unmap a large one. The zero range
	// means any size.
	FreedBytes ByteRange `yaml:"freed-bytes"`
	// Allow lets the call through: the platform does not check this situation.
	Allow bool `yaml:"allow"`
	// Crash is the signal the platform's process dies of inside the call ("SIGSEGV"): no answer
	// comes back. The simulator answers an error naming it (device.Error.Crash, class device-lost:
	// the process is gone, its device with it), which the engine reports as a crash, and ends the
	// capture the call ends with no graph. A crash rule gives no code, name or class.
	Crash string `yaml:"crash"`
	// Code, Name and Class are the error a rejecting rule returns.
	Code  int          `yaml:"code"`
	Name  string       `yaml:"name"`
	Class device.Class `yaml:"class"`
	// Invalidates: the rejection also invalidates the captures the condition names.
	Invalidates bool `yaml:"invalidates"`
	// EndsCapture: a rejected EndCapture still terminates the capture it was asked to end (no
	// graph is returned). Invalidates, on the same rule, acts on the captures the condition names,
	// which for a condition about other captures (caller-began-other-capture) are those others.
	EndsCapture bool `yaml:"ends-capture"`
}

// ByteRange bounds a size in bytes: at least AtLeast and, unless Below is 0, less than Below.
type ByteRange struct {
	AtLeast Bytes `yaml:"at-least"`
	Below   Bytes `yaml:"below"`
}

// Contains reports whether n lies in the range.
func (b ByteRange) Contains(n int64) bool {
	return n >= int64(b.AtLeast) && (b.Below == 0 || n < int64(b.Below))
}

// IsZero reports whether the range bounds nothing.
func (b ByteRange) IsZero() bool { return b == ByteRange{} }

// String says the range in words: "at least 2 MiB", "below 2 MiB", "at least 4 KiB and below 2
// MiB".
func (b ByteRange) String() string {
	switch {
	case b.IsZero():
		return "any size"
	case b.Below == 0:
		return "at least " + b.AtLeast.String()
	case b.AtLeast == 0:
		return "below " + b.Below.String()
	}
	return "at least " + b.AtLeast.String() + " and below " + b.Below.String()
}

// Bytes is a size in a profile: a number of bytes, or a number with the suffix KiB, MiB, GiB or TiB
// ("2MiB").
type Bytes int64

// UnmarshalYAML reads a plain integer or an integer with a binary unit, a space before the unit
// allowed ("2 MiB").
func (b *Bytes) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: a size is a number of bytes or a number with KiB, MiB, GiB or TiB", node.Line)
	}
	text := strings.TrimSpace(node.Value)
	if i := strings.LastIndexAny(text, "0123456789"); i >= 0 {
		text = text[:i+1] + strings.TrimLeft(text[i+1:], " ")
	}
	n, err := bytesize.Parse(text)
	if err != nil {
		return fmt.Errorf("line %d: size %q is not a non-negative number of bytes, KiB, MiB, GiB or TiB", node.Line, node.Value)
	}
	*b = Bytes(n)
	return nil
}

// String writes the size with the largest binary unit that divides it: "2 MiB", "1536 bytes".
func (b Bytes) String() string {
	v, unit := bytesize.Unit(int64(b))
	if unit == "" {
		unit = "bytes"
	}
	return fmt.Sprintf("%d %s", v, unit)
}

func (r *Rule) applies(call string) bool { return slices.Contains(r.Calls, call) }

func (r *Rule) appliesToMode(m device.CaptureMode) bool {
	return len(r.Modes) == 0 || slices.Contains(r.Modes, m)
}

func (r *Rule) appliesToCaller(m device.CaptureMode) bool {
	return len(r.CallerModes) == 0 || slices.Contains(r.CallerModes, m)
}

// appliesTo reports whether the rule concerns c: its call, the calling thread's interaction mode
// and, for a pageable rule, the memory the copy names.
func (r *Rule) appliesTo(c *call, callerMode device.CaptureMode) bool {
	return r.applies(c.op) && r.appliesToCaller(callerMode) && (!r.Pageable || c.pageable)
}

// clone copies p deeply, so a caller of LoadProfile cannot change what devices enforce.
// ErrorCode is the platform's code and name for failures of class that no rule covers (Errors).
func (p *Profile) ErrorCode(class device.Class) (code int, name string, ok bool) {
	c, ok := p.Errors[class]
	return c.Code, c.Name, ok
}

func (p *Profile) clone() *Profile {
	c := *p
	c.Errors = maps.Clone(p.Errors)
	c.Rules = slices.Clone(p.Rules)
	for i := range c.Rules {
		r := &c.Rules[i]
		r.Calls, r.ModeNames, r.Modes = slices.Clone(r.Calls), slices.Clone(r.ModeNames), slices.Clone(r.Modes)
		r.CallerModeNames, r.CallerModes = slices.Clone(r.CallerModeNames), slices.Clone(r.CallerModes)
	}
	return &c
}

// crashSignal is what a rule's crash names: a signal, as the isolated worker reports one.
var crashSignal = regexp.MustCompile(`^SIG[A-Z]+$`)

// Source tags a rule may carry, as docs/platforms.md defines them.
var sourceTags = []string{"measured", "source", "doc", "verify"}

// Classes every profile must give a code for, used by failures outside the rules.
var requiredErrors = []device.Class{
	device.ClassInvalidValue, device.ClassOutOfMemory, device.ClassNotSupported, device.ClassCaptureInvalidated,
}

// Profiles lists the embedded profile names, sorted.
func Profiles() []string {
	entries, err := profileFiles.ReadDir("profiles")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// embeddedProfiles parses every embedded profile once; a broken one fails every New that asks for
// it.
var embeddedProfiles = sync.OnceValue(func() map[string]profileOrError {
	out := map[string]profileOrError{}
	for _, name := range Profiles() {
		data, err := profileFiles.ReadFile("profiles/" + name + ".yaml")
		if err == nil {
			var p *Profile
			p, err = ParseProfile(data)
			if err == nil && p.Name != name {
				err = fmt.Errorf("profile file %s.yaml names itself %q", name, p.Name)
			}
			out[name] = profileOrError{p, err}
			continue
		}
		out[name] = profileOrError{nil, err}
	}
	return out
})

type profileOrError struct {
	p   *Profile
	err error
}

// LoadProfile returns a copy of the embedded profile with the given name.
func LoadProfile(name string) (*Profile, error) {
	got, ok := embeddedProfiles()[name]
	if !ok {
		return nil, fmt.Errorf("sim: unknown profile %q (embedded: %s)", name, strings.Join(Profiles(), ", "))
	}
	if got.err != nil {
		return nil, fmt.Errorf("sim: embedded profile %q: %w", name, got.err)
	}
	return got.p.clone(), nil
}

// ParseProfile decodes and validates a profile document. Unknown keys, unknown calls, conditions,
// modes and classes, and rules that cannot mean anything are errors, all reported together.
func ParseProfile(data []byte) (*Profile, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var p Profile
	if err := dec.Decode(&p); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty profile document")
		}
		return nil, fmt.Errorf("decode profile: %w", err)
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// guardOnly reports whether a class belongs to the kernel-mode guards, never to a platform.
func guardOnly(c device.Class) bool {
	return c == device.ClassRefused || c == device.ClassInvalidState
}

// parseModes reads capture mode names, reporting each bad one.
func parseModes(names []string, bad func(error)) []device.CaptureMode {
	var out []device.CaptureMode
	for _, name := range names {
		m, err := device.ParseCaptureMode(name)
		if err != nil {
			bad(err)
			continue
		}
		out = append(out, m)
	}
	return out
}

// complain records one problem of a profile; validate reports them all together.
type complain func(format string, args ...any)

// validate checks a decoded profile and parses its rules' mode names, returning every problem.
func (p *Profile) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if p.Name == "" {
		bad("profile: name is required")
	}
	if p.Description == "" {
		bad("profile %s: description is required", p.Name)
	}
	p.validateErrors(bad)
	if len(p.Rules) == 0 {
		bad("profile %s: no rules", p.Name)
	}
	for i := range p.Rules {
		r := &p.Rules[i]
		at := fmt.Sprintf("profile %s: rule %d (%s)", p.Name, i+1, r.Situation)
		r.validateSource(at, bad)
		cond, known := r.validateScope(at, bad)
		r.validateAnswer(at, cond, known, bad)
	}
	return errors.Join(errs...)
}

// validateErrors checks the codes for failures outside the rules: known platform classes, each
// with a code and a name, and every required class present.
func (p *Profile) validateErrors(bad complain) {
	for class, code := range p.Errors {
		if !device.ValidClass(class) {
			bad("profile %s: errors: unknown class %q", p.Name, class)
		}
		if guardOnly(class) {
			bad("profile %s: errors: %s is the guards' class, not a platform's", p.Name, class)
		}
		if code.Code == 0 || code.Name == "" {
			bad("profile %s: errors: %s needs a non-zero code and a name", p.Name, class)
		}
	}
	for _, class := range requiredErrors {
		if _, ok := p.Errors[class]; !ok {
			bad("profile %s: errors: %s is required", p.Name, class)
		}
	}
}

// validateSource checks what ties a rule to its row of docs/platforms.md: the situation, the
// evidence tag and, for a verify row, the note.
func (r *Rule) validateSource(at string, bad complain) {
	if r.Situation == "" {
		bad("%s: situation is required", at)
	}
	if !slices.Contains(sourceTags, r.Source) {
		bad("%s: source %q is not one of %s", at, r.Source, strings.Join(sourceTags, ", "))
	}
	if r.Source == "verify" && r.Note == "" {
		bad("%s: a verify row needs a note saying which choice was made", at)
	}
}

// validateScope checks what a rule applies to, its condition, calls, modes, pageable copies and
// freed sizes, and parses its mode names. It returns the rule's condition; known is false when it
// has none.
func (r *Rule) validateScope(at string, bad complain) (cond condition, known bool) {
	cond, known = conditions[r.When]
	if !known {
		bad("%s: unknown condition %q (known: %s)", at, r.When, strings.Join(Conditions(), ", "))
	}
	if len(r.Calls) == 0 {
		bad("%s: calls is required", at)
	}
	for _, c := range r.Calls {
		if !slices.Contains(callNames, c) {
			bad("%s: unknown call %q", at, c)
		} else if known && !slices.Contains(cond.calls, c) {
			bad("%s: condition %s is not evaluated for %s (only %s)", at, r.When, c, strings.Join(cond.calls, ", "))
		}
	}
	r.Modes = parseModes(r.ModeNames, func(err error) { bad("%s: %v", at, err) })
	if r.Pageable && !r.onlyCall("Copy") {
		bad("%s: pageable concerns copies only: calls must be [Copy]", at)
	}
	if len(r.ModeNames) > 0 && known && !cond.scoped {
		bad("%s: modes given, but condition %s names no capture", at, r.When)
	}
	if !r.FreedBytes.IsZero() {
		if known && cond.sized == nil {
			bad("%s: freed-bytes given, but condition %s concerns no freed allocation", at, r.When)
		}
		if r.FreedBytes.Below != 0 && r.FreedBytes.Below <= r.FreedBytes.AtLeast {
			bad("%s: freed-bytes: below (%v) must be more than at-least (%v)", at, r.FreedBytes.Below, r.FreedBytes.AtLeast)
		}
	}
	r.CallerModes = parseModes(r.CallerModeNames, func(err error) { bad("%s: caller-modes: %v", at, err) })
	return cond, known
}

// validateAnswer checks what a rule answers: an allow rule nothing, a rejecting rule a platform
// error, with invalidates and ends-capture only where its condition names the capture.
func (r *Rule) validateAnswer(at string, cond condition, known bool, bad complain) {
	if r.Allow {
		if r.Code != 0 || r.Name != "" || r.Class != "" || r.Invalidates || r.EndsCapture || r.Crash != "" {
			bad("%s: an allow rule carries no code, name, class, invalidates, ends-capture or crash", at)
		}
		return
	}
	if r.Crash != "" {
		if !crashSignal.MatchString(r.Crash) {
			bad("%s: crash %q is not a signal name (SIGSEGV, SIGABRT, ...)", at, r.Crash)
		}
		if r.Code != 0 || r.Name != "" || r.Class != "" || r.Invalidates || r.EndsCapture {
			bad("%s: a crash rule carries no code, name, class, invalidates or ends-capture: the process dies in the call", at)
		}
		return
	}
	if r.Code == 0 || r.Name == "" {
		bad("%s: a rejecting rule needs a non-zero code and a name", at)
	}
	if !device.ValidClass(r.Class) {
		bad("%s: unknown class %q", at, r.Class)
	}
	if guardOnly(r.Class) {
		// The engine reads this class as a guard refusal: a platform rule must never use it.
		bad("%s: class %s is the guards', not a platform's", at, r.Class)
	}
	if r.EndsCapture && (known && !cond.scoped || !r.onlyCall("EndCapture")) {
		bad("%s: ends-capture is only meaningful for EndCapture with a condition that names captures", at)
	}
	if r.Invalidates && known && !cond.scoped {
		bad("%s: invalidates, but condition %s names no capture", at, r.When)
	}
	if r.Invalidates && r.EndsCapture && known && !cond.others {
		bad("%s: invalidates and ends-capture: the capture ended is not also invalidated; condition %s names no other capture", at, r.When)
	}
}

// onlyCall reports whether the rule names exactly one call, name.
func (r *Rule) onlyCall(name string) bool { return len(r.Calls) == 1 && r.Calls[0] == name }
