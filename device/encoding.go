package device

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Encodings for results that leave the process (a JSON report, a crash-isolated child's result):
// every value a result holds reads back to exactly the value written.

// MarshalText writes the mode's name.
func (m CaptureMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText accepts the names ParseCaptureMode accepts.
func (m *CaptureMode) UnmarshalText(b []byte) error {
	v, err := ParseCaptureMode(string(b))
	*m = v
	return err
}

// ParseThread accepts the names Thread.String returns for the threads a device has.
func ParseThread(s string) (Thread, error) {
	for _, t := range []Thread{Main, Other} {
		if t.String() == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown thread %q (want main or other)", s)
}

// MarshalText writes the thread's name.
func (t Thread) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText accepts the names ParseThread accepts.
func (t *Thread) UnmarshalText(b []byte) error {
	v, err := ParseThread(string(b))
	*t = v
	return err
}

// ptrJSON is a Ptr as JSON: the address in 0x-prefixed hex, so readers whose numbers are doubles
// keep every bit of it.
type ptrJSON struct {
	Addr  string `json:"addr"`
	Bytes int64  `json:"bytes"`
}

// MarshalJSON writes {"addr": "0x…", "bytes": n}.
func (p Ptr) MarshalJSON() ([]byte, error) {
	return json.Marshal(ptrJSON{Addr: fmt.Sprintf("%#x", p.Addr), Bytes: p.Bytes})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (p *Ptr) UnmarshalJSON(b []byte) error {
	var v ptrJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	addr, err := strconv.ParseUint(v.Addr, 0, 64)
	if err != nil {
		return fmt.Errorf("device address %q: %w", v.Addr, err)
	}
	*p = Ptr{Addr: addr, Bytes: v.Bytes}
	return nil
}
