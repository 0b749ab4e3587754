//go:build !cgo

package dl

import "unsafe"

// Library is an opened shared library; without cgo none can be opened.
type Library struct{ path string }

// Open fails: a binary built without cgo cannot load libraries.
func Open(path string) (*Library, error) { return nil, ErrNoCgo }

// Lookup fails: there is no library.
func (l *Library) Lookup(name string) (unsafe.Pointer, error) { return nil, ErrNoCgo }

// Close does nothing.
func (l *Library) Close() error { return nil }
