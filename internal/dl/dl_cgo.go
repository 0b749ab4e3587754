//go:build cgo

package dl

/*
#cgo CFLAGS: -std=c11 -Wall -Wextra -Werror
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "dl.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"unsafe"
)

// Library is an opened shared library.
type Library struct {
	handle unsafe.Pointer
	path   string
}

// Open loads the library at path (RTLD_NOW: every symbol it needs is bound now).
func Open(path string) (*Library, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cerr *C.char
	h := C.rc_dl_open(cpath, &cerr)
	if h == nil {
		// dlerror names the file already, as "path: why", unless it failed on something else.
		raw := text(cerr)
		msg := raw
		if !strings.HasPrefix(msg, path) {
			msg = path + ": " + msg
		}
		return nil, &openError{msg: msg, absent: absent(path, raw)}
	}
	return &Library{handle: h, path: path}, nil
}

// Lookup returns the address of the exported symbol name.
func (l *Library) Lookup(name string) (unsafe.Pointer, error) {
	if l.handle == nil {
		return nil, errors.New("library is closed")
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cerr *C.char
	p := C.rc_dl_sym(l.handle, cname, &cerr)
	if cerr != nil {
		return nil, errors.New(text(cerr))
	}
	if p == nil {
		return nil, fmt.Errorf("symbol %q is NULL", name)
	}
	return p, nil
}

// Close unloads the library; the addresses it handed out are invalid afterwards. Closing twice is
// an error.
func (l *Library) Close() error {
	if l.handle == nil {
		return fmt.Errorf("dlclose %s: already closed", l.path)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cerr *C.char
	if C.rc_dl_close(l.handle, &cerr) != 0 {
		return fmt.Errorf("dlclose %s: %s", l.path, text(cerr))
	}
	l.handle = nil
	return nil
}

func text(s *C.char) string {
	if s == nil {
		return "unknown error"
	}
	return C.GoString(s)
}

// absent says whether the library at path failed to open because there is no such file: os.Stat
// says so of a path. A bare name (no slash) is not a path: the loader searched its directories
// for it, never the working directory, and named it as given only when it found no such file (a
// file it found it names by the path it found, a missing dependency by the dependency's name).
func absent(path, dlerror string) bool {
	if strings.Contains(path, "/") {
		_, err := os.Stat(path)
		return errors.Is(err, fs.ErrNotExist)
	}
	return strings.HasPrefix(dlerror, path+": ")
}
