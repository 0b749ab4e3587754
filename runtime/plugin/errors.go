package plugin

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/replaycheck/replaycheck/runtime"
)

// Status values of the ABI (rc_status).
const (
	statusOK      = 0
	statusRefused = 1
	statusError   = 2
)

// Sizes of rc_error's text fields, NUL included.
const (
	nameSize    = 64
	classSize   = 32
	messageSize = 512
)

// BackendPrefix starts the Backend of every error a runtime plugin reports itself: "runtime:" and
// the plugin's Name.
const BackendPrefix = runtime.PluginBackend

// nameOf is a library's Name: its base name without the extension ("reference" for
// /x/reference.so).
func nameOf(path string) string {
	base := filepath.Base(path)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// cError is an rc_error as Go holds it, field for field.
type cError struct {
	code        int32
	invalidated uint32
	name        string
	class       string
	message     string
}

// toC is what replaycheck writes into rc_error for an inner device's error: the platform's code,
// name and class, and the Detail as message, each cut to its field (at a rune boundary).
func toC(err error) cError {
	e, ok := runtime.AsError(err)
	if !ok {
		return cError{class: fit(string(runtime.ClassInternal), classSize), message: fit(err.Error(), messageSize)}
	}
	c := cError{
		code:    clampCode(e.Code),
		name:    fit(e.Name, nameSize),
		class:   fit(string(e.Class), classSize),
		message: fit(e.Detail, messageSize),
	}
	if e.Invalidated {
		c.invalidated = 1
	}
	return c
}

func clampCode(n int) int32 {
	switch {
	case n > 1<<31-1:
		return 1<<31 - 1
	case n < -1<<31:
		return -1 << 31
	}
	return int32(n)
}

// fit cuts s to what a field of size bytes holds with its NUL, at a rune boundary.
func fit(s string, size int) string {
	if len(s) < size {
		return s
	}
	s = s[:size-1]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// innerFailure is one failed inner call of the outer call in progress: the Go error and the
// rc_error it was written as.
type innerFailure struct {
	c   cError
	err error
}

// mapStatus turns an outer call's status and rc_error into its Go error (see the package doc).
// inner are the inner failures of this call, oldest first.
func mapStatus(plugin, op string, status int32, c cError, inner []innerFailure) error {
	backend := BackendPrefix + plugin
	switch status {
	case statusOK:
		return nil
	case statusRefused:
		return &runtime.Error{Backend: backend, Op: op, Class: runtime.ClassRefused, Detail: c.message}
	case statusError:
		for i := len(inner) - 1; i >= 0; i-- {
			if inner[i].c == c {
				return inner[i].err
			}
		}
		e := &runtime.Error{Backend: backend, Op: op, Code: int(c.code), Name: c.name, Class: runtime.Class(c.class),
			Invalidated: c.invalidated != 0, Detail: c.message}
		switch {
		case e.Class == runtime.ClassRefused:
			e.Class = runtime.ClassInternal
			e.Detail = fmt.Sprintf("RC_ERROR with class %q (a refusal returns RC_REFUSED): %s", c.class, c.message)
		case !runtime.ValidClass(e.Class):
			e.Class = runtime.ClassInternal
			e.Detail = fmt.Sprintf("unknown class %q: %s", c.class, c.message)
		}
		return e
	}
	return &runtime.Error{Backend: backend, Op: op, Class: runtime.ClassInternal,
		Detail: fmt.Sprintf("returned status %d, which is not RC_OK, RC_REFUSED or RC_ERROR (message %q)", status, c.message)}
}

// misuse is an error of replaycheck's side of the seam, found before the plugin is called.
func misuse(plugin, op string, class runtime.Class, format string, args ...any) error {
	return &runtime.Error{Backend: BackendPrefix + plugin, Op: op, Class: class, Detail: fmt.Sprintf(format, args...)}
}
