// Package dl loads a driver library at run time: dlopen, dlsym and dlclose, with dlerror read on
// the same locked OS thread as the call it explains.
//
// A binding never links against a driver. It opens the library (Open, or OpenFirst over the
// places a driver is installed) and resolves every symbol it will ever call into a table at once
// (Library.Resolve): a required symbol that is missing fails the open and names the symbol, so an
// older or partial driver is an error at open, never a crash at the first call. A symbol may be
// versioned (the first of several exported names that exists wins, e.g. cuMemAlloc_v2 before
// cuMemAlloc) or optional (its slot stays nil and the feature reports itself missing).
//
// Without cgo the package still builds: Open, Lookup, Resolve and Close fail with ErrNoCgo, which
// says the binary was built without cgo and so cannot load driver libraries; nothing panics.
// Everything else in replaycheck runs on the simulator.
//
// The package only loads libraries and resolves symbols: what a driver's entry points mean,
// including the fake libraries' fault injection (device/internal/bind), belongs to the bindings.
package dl

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"
)

// ErrNoCgo is the error of every entry point (Open, Lookup, Resolve, Close) in a binary built
// without cgo. Its text is part of replaycheck's output (runtime plugins, backends): keep it.
var ErrNoCgo = errors.New("built without cgo (CGO_ENABLED=0): cannot load driver libraries")

// Symbol is one entry of a function table: the names to look for, in order, and the slot that
// receives the address of the first one found.
type Symbol struct {
	// Names are the exported names to try, first first: a versioned entry point lists its
	// suffixed export before the base name.
	Names []string
	// Slot receives the address; it stays nil when nothing was found.
	Slot *unsafe.Pointer
	// Optional symbols may be missing: Resolve leaves their slot nil and does not fail.
	Optional bool
}

// Sym is a required symbol with one name.
func Sym(name string, slot *unsafe.Pointer) Symbol { return Symbol{Names: []string{name}, Slot: slot} }

// MissingError is a library that lacks required symbols.
type MissingError struct {
	Path    string
	Symbols []string // the first name of each missing entry
	Detail  string   // dlerror's text for the first of them
}

func (e *MissingError) Error() string {
	quoted := make([]string, len(e.Symbols))
	for i, s := range e.Symbols {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	what := "symbol " + quoted[0]
	if len(quoted) > 1 {
		what = "symbols " + strings.Join(quoted, ", ")
	}
	return fmt.Sprintf("%s: %s not found: %s", e.Path, what, e.Detail)
}

// Resolve fills every slot of table from l. Every required entry that is missing is named in one
// *MissingError; the slots it did find are filled all the same.
func (l *Library) Resolve(table []Symbol) error {
	var missing *MissingError
	for _, s := range table {
		*s.Slot = nil
		var firstErr error
		for _, name := range s.Names {
			p, err := l.Lookup(name)
			if err == nil {
				*s.Slot = p
				break
			}
			if errors.Is(err, ErrNoCgo) {
				return err
			}
			if firstErr == nil {
				firstErr = err
			}
		}
		if *s.Slot != nil || s.Optional {
			continue
		}
		if missing == nil {
			missing = &MissingError{Path: l.path, Detail: firstErr.Error()}
		}
		missing.Symbols = append(missing.Symbols, s.Names[0])
	}
	if missing != nil {
		return missing
	}
	return nil
}

// Path is the path the library was opened with.
func (l *Library) Path() string { return l.path }

// Attempt is one place OpenFirst tried, and why it failed ("" when it opened).
type Attempt struct {
	Path string `json:"path"`
	Err  string `json:"error,omitempty"`
	// Absent is a failure because no file is there: os.Stat found nothing at Path (for a bare
	// name, the loader's search found nothing). A file that is there but fails to load (a wrong
	// ELF class, a dependency that is absent) is not Absent.
	Absent bool `json:"-"`
}

// openError is Open's failure: the loader's text, and whether the file was absent.
type openError struct {
	msg    string
	absent bool
}

func (e *openError) Error() string { return e.msg }

// Tried says in one line what a list of failed attempts found: the paths where no file was
// (Absent), together, then every other failure (a wrong ELF class, a missing dependency) with its
// path.
func Tried(attempts []Attempt) string {
	var absent, other []string
	for _, a := range attempts {
		switch {
		case a.Err == "":
		case a.Absent:
			absent = append(absent, a.Path)
		case !strings.Contains(a.Err, a.Path):
			other = append(other, a.Path+": "+a.Err)
		default:
			other = append(other, a.Err)
		}
	}
	var parts []string
	if len(absent) > 0 {
		parts = append(parts, "not found: "+strings.Join(absent, ", "))
	}
	return strings.Join(append(parts, other...), "; ")
}

// OpenFirst opens the first of paths that loads, and reports every attempt up to it. The error,
// when none loads, lists them all.
func OpenFirst(paths []string) (*Library, []Attempt, error) {
	var tried []Attempt
	for _, p := range paths {
		l, err := Open(p)
		if err == nil {
			return l, append(tried, Attempt{Path: p}), nil
		}
		var oe *openError
		tried = append(tried, Attempt{Path: p, Err: err.Error(), Absent: errors.As(err, &oe) && oe.absent})
		if errors.Is(err, ErrNoCgo) {
			return nil, tried, err
		}
	}
	return nil, tried, fmt.Errorf("no library could be opened: %s", Tried(tried))
}
