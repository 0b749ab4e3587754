package probes

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// Rule names, one per static check. A Diagnostic's Rule is one of these; the package doc says what
// each one covers.
const (
	RuleVersion            = "version"
	RuleUnknownKey         = "unknown-key"
	RuleMissingKey         = "missing-key"
	RuleBadName            = "bad-name"
	RuleBadValue           = "bad-value"
	RuleBadSize            = "bad-size"
	RuleBadPattern         = "bad-pattern"
	RuleDuplicate          = "duplicate"
	RuleUndeclared         = "undeclared"
	RuleRange              = "range"
	RuleAxpySize           = "axpy-size"
	RuleUseAfterFree       = "use-after-free"
	RuleCaptureAndCaptures = "capture-and-captures"
	RulePhases             = "phases"
	RuleUnknownCapture     = "unknown-capture"
	RuleRace               = "race"
	RuleMemory             = "memory"
	RulePool               = "pool"
	RulePrivatePool        = "private-pool" // a private pool used outside a capture into it
	RuleDestroyed          = "destroyed"    // a destroyed graph named again
	RuleLimit              = "limit"
	RuleFault              = "fault"
	RuleExpectMode         = "expect-mode"
	RuleRefusedBy          = "refused-by"
	RuleYAML               = "yaml"
	RuleEncoding           = "encoding"
	RuleAlias              = "alias"
	RuleControl            = "control-character"
	RuleRead               = "read"
)

// Diagnostic is one problem found in a probe file.
type Diagnostic struct {
	Pos     Pos
	Rule    string
	Message string
}

// Error is "file:line:col: rule: message", or "file: rule: message" when there is no line (a file
// that could not be read); the file as FileText writes it.
func (d Diagnostic) Error() string {
	if d.Pos.Line == 0 {
		return fmt.Sprintf("%s: %s: %s", FileText(d.Pos.File), d.Rule, d.Message)
	}
	return fmt.Sprintf("%s: %s: %s", d.Pos, d.Rule, d.Message)
}

// Diagnostics is every problem found in the files loaded together, sorted by file, line and column.
type Diagnostics []Diagnostic

// Error prints one diagnostic per line.
func (ds Diagnostics) Error() string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.Error()
	}
	return strings.Join(lines, "\n")
}

// sort orders by file, line and column; problems at one position keep the order they were found in.
func (ds Diagnostics) sort() {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		if c := strings.Compare(a.Pos.File, b.Pos.File); c != 0 {
			return c
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		return a.Pos.Col - b.Pos.Col
	})
}

// readProblem is the message of a path that cannot be read: err's, with the path in it as
// FileText writes it.
func readProblem(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s %s: %v", pe.Op, FileText(pe.Path), pe.Err)
	}
	return err.Error()
}

// err returns ds as an error, nil when empty (never a typed nil).
func (ds Diagnostics) err() error {
	if len(ds) == 0 {
		return nil
	}
	ds.sort()
	return ds
}

// Limits bound what one probe may ask of a device. A zero or negative field takes its default.
type Limits struct {
	MaxBufferBytes int64 // one buffer, at any size it reaches (declared, alloc, grow); default 1 GiB
	MaxTotalBytes  int64 // the largest size of every buffer of a probe, summed; default 4 GiB
	MaxOps         int   // ops of one probe, all phases; default 100000
	MaxReplays     int   // replay rounds; default 1000000
	MaxFileBytes   int64 // one probe file, checked before it is read; default 16 MiB
	// MaxFileValues bounds the YAML values (nodes) one file may make, an upper bound counted from
	// its punctuation (`:` `,` `{` `?` `[`, and `-` before a space or line break) before YAML
	// parses it; default 4,000,000. It, not the file's size, bounds the parse's time and memory:
	// a file of short items makes several nodes per byte. 100,000 fills bound about 1.5 million.
	MaxFileValues int

	// race are the race check's internal switches as a test set them (race.go); nil: the
	// defaults.
	race *raceKnobs
}

// DefaultLimits are the limits of PROBE-LANGUAGE.md.
func DefaultLimits() Limits {
	return Limits{MaxBufferBytes: 1 << 30, MaxTotalBytes: 4 << 30, MaxOps: 100000, MaxReplays: 1000000, MaxFileBytes: 16 << 20, MaxFileValues: 4000000}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBufferBytes <= 0 {
		l.MaxBufferBytes = d.MaxBufferBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = d.MaxTotalBytes
	}
	if l.MaxOps <= 0 {
		l.MaxOps = d.MaxOps
	}
	if l.MaxReplays <= 0 {
		l.MaxReplays = d.MaxReplays
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = d.MaxFileBytes
	}
	if l.MaxFileValues <= 0 {
		l.MaxFileValues = d.MaxFileValues
	}
	return l
}
