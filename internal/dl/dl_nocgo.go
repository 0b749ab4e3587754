//go:build !cgo

package dl

import (
	"fmt"
	"unsafe"
)

// Library is an opened shared library; without cgo none can be opened.
type Library struct{ path string }

// Open fails: a binary built without cgo cannot load libraries.
func Open(path string) (*Library, error) { return nil, ErrNoCgo }

// Lookup fails: there is no library.
func (l *Library) Lookup(name string) (unsafe.Pointer, error) {
	return nil, fmt.Errorf("symbol %q: %w", name, ErrNoCgo)
}

// Close fails: there is no library to close.
func (l *Library) Close() error { return fmt.Errorf("dlclose %s: %w", l.path, ErrNoCgo) }
