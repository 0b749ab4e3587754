package runtime

import (
	"errors"

	"github.com/replaycheck/replaycheck/device"
)

// The reference guards' names (runtime/guard), as a refusal names the guard that refused and a
// probe's expect.refused-by names the guard that must refuse. A runtime plugin names its own
// rules (rc_runtime.refusal_rule); the seed plugins use these names for the same rules.
const (
	// GuardRetained refuses the growth, release or free of a runtime.Retained slot's buffer.
	GuardRetained = "retained"
	// GuardArena refuses a committed runtime.Arena region's growth above its capacity, release or
	// free.
	GuardArena = "arena"
	// GuardCaptureWatch refuses allocator calls, and work on streams outside the capture, while a
	// capture is active, and the destruction of a stream a capture holds.
	GuardCaptureWatch = "capture-watch"
	// GuardResidency refuses the replay of a graph whose captured ranges no longer hold the
	// allocations they held at capture.
	GuardResidency = "residency"
	// GuardIsolation refuses the replay of a graph while another that shares its memory may still
	// run on another stream.
	GuardIsolation = "isolation"
)

// Guards lists the reference guards' names, in the order the package doc of runtime/guard
// describes them, in a fresh slice.
func Guards() []string {
	return []string{GuardRetained, GuardArena, GuardCaptureWatch, GuardResidency, GuardIsolation}
}

// MaxRuleBytes bounds the name of a guard or rule: a name is ValidRule's.
const MaxRuleBytes = 63

// ValidRule reports whether name can name a guard or a runtime's rule: 1 to MaxRuleBytes
// characters, lowercase ASCII letters, digits and '-', not starting with '-' (the probe
// language's names).
func ValidRule(name string) bool {
	if name == "" || len(name) > MaxRuleBytes || name[0] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// Refusal is a refusal that names who refused: the guard of the reference runtime, or the rule
// of a runtime plugin. Its chain holds the refusal itself, a *device.Error of class
// device.ClassRefused (device.AsError, device.IsRefusal find it), and its text is that error's:
// who refused is read with RefusedBy, not parsed from a message.
type Refusal struct {
	// Guard names the guard or rule (ValidRule).
	Guard string
	// Err is the refusal.
	Err *device.Error
}

func (r *Refusal) Error() string { return r.Err.Error() }

// Unwrap is the refusal itself.
func (r *Refusal) Unwrap() error { return r.Err }

// Refuse returns refusal e, naming guard as the one that refused: e itself when guard is "".
func Refuse(guard string, e *device.Error) error {
	if guard == "" {
		return e
	}
	return &Refusal{Guard: guard, Err: e}
}

// RefusedBy names the guard or rule that refused err: the Guard of the first Refusal in err's
// chain, "" when err is no refusal or its runtime named none.
func RefusedBy(err error) string {
	var r *Refusal
	if errors.As(err, &r) && r.Err != nil && r.Err.Class == device.ClassRefused {
		return r.Guard
	}
	return ""
}
