package device

import (
	"fmt"

	"github.com/replaycheck/replaycheck/internal/enum"
)

// FaultKind is a fault a device can be made to suffer (Capabilities.FaultInjection). The values
// are also the kinds the fake driver libraries' injection entry point takes (device/fake).
type FaultKind uint8

const (
	// FaultAllocFail: a device allocation fails out-of-memory, touching nothing.
	FaultAllocFail FaultKind = iota + 1
	// FaultLaunchFail: a graph launch fails with the platform's internal error and runs nothing;
	// the device stays usable.
	FaultLaunchFail
	// FaultDeviceLost: a graph launch fails device-lost, and so does every later call on the
	// device but Close, which releases everything (as a device reset does).
	FaultDeviceLost
	// FaultHang: a graph launch never returns. Its worker thread stays blocked; the device can only
	// be abandoned (Abandoner).
	FaultHang
)

var faultKindNames = enum.New("fault kind", "fault",
	enum.Name(FaultAllocFail, "alloc-fail"), enum.Name(FaultLaunchFail, "launch-fail"),
	enum.Name(FaultDeviceLost, "device-lost"), enum.Name(FaultHang, "hang"))

// FaultKinds lists every fault kind, in a fresh slice.
func FaultKinds() []FaultKind { return faultKindNames.Values() }

func (k FaultKind) String() string { return faultKindNames.String(k) }

// ParseFaultKind accepts the names String returns.
func ParseFaultKind(s string) (FaultKind, error) { return faultKindNames.Parse(s) }

// MarshalText writes the kind's name.
func (k FaultKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText accepts the names ParseFaultKind accepts.
func (k *FaultKind) UnmarshalText(b []byte) error {
	v, err := ParseFaultKind(string(b))
	*k = v
	return err
}

// Call is the device call a fault of kind k fires in: Malloc for FaultAllocFail, Launch for the
// others.
func (k FaultKind) Call() string {
	if k == FaultAllocFail {
		return "Malloc"
	}
	return "Launch"
}

// Fault is one fault armed on a device: it fires at the N-th call of its kind's Call (N >= 1)
// made on the device after it was armed, whatever thread makes it, and fires once.
type Fault struct {
	Kind FaultKind `json:"kind"`
	N    int       `json:"n"`
}

func (f Fault) String() string {
	return fmt.Sprintf("%s at the %s next %s", f.Kind, ordinal(f.N), f.Kind.Call())
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// FaultInjector is a Device that can be made to fail on purpose: the simulator, and the ACL and
// CUDA bindings over the fake driver libraries. A device whose Capabilities say FaultInjection
// states it in Extensions.Faults; a binding over a real driver library does not say so.
//
// Faults armed together count their calls independently. A fired fault answers the call it fired
// in as its kind says and is spent; a fault that has not fired stays armed until ClearFaults.
type FaultInjector interface {
	// InjectFault arms f. An f with an unknown kind or N < 1 is an invalid-value error.
	InjectFault(f Fault) error
	// ClearFaults disarms every fault that has not fired.
	ClearFaults() error
	// FiredFaults lists the faults that have fired on the device since it was opened, in the
	// order they fired. A hang is listed once its call has blocked.
	FiredFaults() []Fault
}

// Abandoner is a Device that can be given up while a call into it may be blocked forever (a hang
// in the driver): Abandon marks it so that nothing waits for that call. The caller makes no further
// call on an abandoned device; its Close returns at once, releasing nothing, and its backend's
// Close leaves it (and, for a driver library, the library that a thread is blocked in) alone.
type Abandoner interface {
	Abandon()
}

// Recoverer is a Backend that says whether, after one of its devices was lost (a device-lost
// error; the device is then closed) or abandoned (a call never returned), Open gives a fresh device
// that shares nothing with it. A backend that does not implement it cannot.
type Recoverer interface {
	// Recovers answers for a lost device (abandoned false) or an abandoned one; why says why not.
	Recovers(abandoned bool) (ok bool, why string)
}
