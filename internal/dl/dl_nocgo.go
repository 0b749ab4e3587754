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

// Inject is never called: without cgo no library is loaded, so FakeFaults is never Present.
func (f *FakeFaults) Inject(kind, n int) int { panic("dl: FakeFaults.Inject without cgo") }

// Fired is never called, as Inject.
func (f *FakeFaults) Fired(i int) (kind, n int, ok bool) { panic("dl: FakeFaults.Fired without cgo") }
