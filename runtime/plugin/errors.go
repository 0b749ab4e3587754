package plugin

import (
	"fmt"
	"github.com/replaycheck/replaycheck/runtime"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/replaycheck/replaycheck/device"
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
	e, ok := device.AsError(err)
	if !ok {
		return cError{class: fit(string(device.ClassInternal), classSize), message: fit(err.Error(), messageSize)}
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
// inner are the inner failures of this call, oldest first. c is as the plugin wrote it: an inner
// error passed through is recognised byte for byte, and anything else of the plugin's is cleaned
// (clean) before it goes into an error.
func mapStatus(plugin, op string, status int32, c cError, inner []innerFailure) error {
	backend := BackendPrefix + plugin
	if status == statusError {
		for i := len(inner) - 1; i >= 0; i-- {
			if inner[i].c == c {
				return inner[i].err
			}
		}
	}
	raw := c // quoted with %q where it is named, which escapes all a plugin could write
	c = c.cleaned()
	switch status {
	case statusOK:
		return nil
	case statusRefused:
		return &device.Error{Backend: backend, Op: op, Class: device.ClassRefused, Detail: c.message}
	case statusError:
		e := &device.Error{Backend: backend, Op: op, Code: int(c.code), Name: c.name, Class: device.Class(c.class),
			Invalidated: c.invalidated != 0, Detail: c.message}
		switch {
		case e.Class == device.ClassRefused:
			e.Class = device.ClassInternal
			e.Detail = fmt.Sprintf("RC_ERROR with class %q (a refusal returns RC_REFUSED): %s", raw.class, c.message)
		case !device.ValidClass(e.Class):
			e.Class = device.ClassInternal
			e.Detail = fmt.Sprintf("unknown class %q: %s", raw.class, c.message)
		}
		return e
	}
	return &device.Error{Backend: backend, Op: op, Class: device.ClassInternal,
		Detail: fmt.Sprintf("returned status %d, which is not RC_OK, RC_REFUSED or RC_ERROR (message %q)", status, raw.message)}
}

// cleaned is c with its strings cleaned (clean).
func (c cError) cleaned() cError {
	c.name, c.class, c.message = clean(c.name), clean(c.class), clean(c.message)
	return c
}

// clean makes a string read from a plugin safe to print and to store: runtime.h promises UTF-8,
// and nothing stops a plugin from writing any bytes. Each byte that is not UTF-8 becomes U+FFFD,
// and each C0 or C1 control character or DEL (newline, tab and ESC included: a message is one
// line of a report, and an escape sequence would reach the terminal) becomes its Go escape (\n,
// \x1b, \u009b), as the probe loader quotes names with control characters (probes.FileText). The
// result is what every report format shows, the same in each. A string with none is returned as
// it is.
func clean(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, control) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s { // an invalid byte is read as utf8.RuneError: U+FFFD
		if control(r) {
			q := strconv.QuoteRune(r) // '\x1b'
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// control reports whether r is a C0 or C1 control character or DEL.
func control(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }

// entries are the ABI's names of the calls the loader makes, by their Go names (the Op of the
// errors): what an error or the exit handler names as the entry point.
var entries = map[string]string{
	"Malloc": "device.malloc_", "Free": "device.free_", "Write": "device.write", "Read": "device.read",
	"AllocHost": "device.alloc_host", "FreeHost": "device.free_host", "HostWrite": "device.host_write",
	"HostRead": "device.host_read", "CreateStream": "device.create_stream", "CreateStreamWithFlags": "create_stream_with_flags",
	"DestroyStream": "device.destroy_stream",
	"CreateEvent":   "device.create_event", "DestroyEvent": "device.destroy_event", "Fill": "device.fill",
	"Copy": "device.copy", "Axpy": "device.axpy", "Record": "device.record", "Wait": "device.wait",
	"SyncStream": "device.sync_stream", "SyncDevice": "device.sync_device", "QueryEvent": "device.query_event",
	"SyncEvent": "device.sync_event", "ExchangeCaptureMode": "device.exchange_capture_mode",
	"BeginCapture": "device.begin_capture", "EndCapture": "device.end_capture", "CaptureInfo": "device.capture_info",
	"Launch": "device.launch", "DestroyGraph": "device.destroy_graph",
	"Provision": "provision", "Release": "release", "Holds": "holds", "SlotsChangedSince": "slots_changed",
	"CommitBank": "commit_bank", "ReservePool": "reserve_pool", "PoolAlloc": "pool_alloc", "PoolFree": "pool_free",
	"Retire": "retire", "RefusalRule": "refusal_rule", "rc_runtime_open": "rc_runtime_open", "rc_runtime_close": "rc_runtime_close",
}

// entryOf is the ABI's name of the call the loader names op.
func entryOf(op string) string {
	if e, ok := entries[op]; ok {
		return e
	}
	return op
}

// misuse is an error of replaycheck's side of the seam, found before the plugin is called.
func misuse(plugin, op string, class device.Class, format string, args ...any) error {
	return &device.Error{Backend: BackendPrefix + plugin, Op: op, Class: class, Detail: fmt.Sprintf(format, args...)}
}
