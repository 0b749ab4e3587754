package bind

import (
	"errors"
	"fmt"
	"os"

	"github.com/replaycheck/replaycheck/internal/dl"
)

// The failures of a binding's New that a `devices` command reports apart: no library could be
// loaded (ErrNoLibrary), or one loaded but its driver is not usable (ErrNoDriver). Each backend
// has its own sentinel of each, with its own text (Library's); both are in the chain of that
// sentinel, so a caller can ask about one backend or about any.
var (
	ErrNoLibrary = errors.New("no library")
	ErrNoDriver  = errors.New("no usable driver")
)

// Library names what a binding loads, for its errors: one per backend.
type Library struct {
	// Backend prefixes every message: "acl".
	Backend string
	// What is what it loads: "runtime library".
	What string
	// ErrNoLibrary is the backend's sentinel in the chain of its every *NoLibraryError:
	// "<Backend>: no <What>". It wraps the package's ErrNoLibrary.
	ErrNoLibrary error
	// ErrNoDriver is the backend's sentinel for a library that loaded without a usable driver;
	// it wraps the package's ErrNoDriver.
	ErrNoDriver error
}

// NewLibrary is the errors of a backend that loads what (its library), the no-driver sentinel
// reading "<backend>: <noDriver>".
func NewLibrary(backend, what, noDriver string) *Library {
	return &Library{
		Backend:      backend,
		What:         what,
		ErrNoLibrary: &sentinel{text: backend + ": no " + what, kind: ErrNoLibrary},
		ErrNoDriver:  &sentinel{text: backend + ": " + noDriver, kind: ErrNoDriver},
	}
}

// NoLibrary is the failure to load any of the library's paths (tried, every attempt; err, the
// loader's error).
func (l *Library) NoLibrary(tried []dl.Attempt, err error) *NoLibraryError {
	return &NoLibraryError{Library: l, Tried: tried, Err: err}
}

// Candidates are the paths a binding's New tries, in order: library alone where it is set (the
// backend's Options.Library), else the value of the environment variable env alone where that is
// set, else search() (the backend's SearchPaths), called only then.
func Candidates(library, env string, search func() []string) []string {
	if library != "" {
		return []string{library}
	}
	if v := os.Getenv(env); v != "" {
		return []string{v}
	}
	return search()
}

// sentinel is a backend's own text for one of the package's failures.
type sentinel struct {
	text string
	kind error
}

func (s *sentinel) Error() string { return s.text }
func (s *sentinel) Unwrap() error { return s.kind }

// NoLibraryError is the failure to load any of a binding's libraries; Tried lists every attempt.
type NoLibraryError struct {
	Library *Library
	Tried   []dl.Attempt
	Err     error // the loader's error, e.g. dl.ErrNoCgo
}

func (e *NoLibraryError) Error() string {
	if len(e.Tried) == 0 {
		return fmt.Sprintf("%s: no %s: %v", e.Library.Backend, e.Library.What, e.Err)
	}
	return fmt.Sprintf("%s: no %s could be loaded (%s)", e.Library.Backend, e.Library.What, dl.Tried(e.Tried))
}

func (e *NoLibraryError) Unwrap() []error { return []error{e.Library.ErrNoLibrary, e.Err} }
