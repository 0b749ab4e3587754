package runtime

import "github.com/replaycheck/replaycheck/internal/enum"

// Slot is a buffer's allocation point, as the probe language names it.
type Slot uint8

const (
	// Plain is an ordinary allocation: it grows by free + malloc in both modes.
	Plain Slot = iota
	// Retained holds one buffer for the context's life: in kernel mode it is allocated once and
	// never grown, released or freed.
	Retained
	// Arena is a region of an arena bank: in kernel mode a committed region is never re-based or
	// released.
	Arena
)

var slotNames = enum.New("slot", "slot", enum.Name(Plain, "plain"), enum.Name(Retained, "retained"), enum.Name(Arena, "arena"))

// Slots lists every slot in order, in a fresh slice.
func Slots() []Slot { return slotNames.Values() }

func (s Slot) String() string { return slotNames.String(s) }

// ParseSlot accepts the names String returns (the probe language's slot names).
func ParseSlot(name string) (Slot, error) { return slotNames.Parse(name) }

// Valid reports whether s is one of the slots Slots lists.
func (s Slot) Valid() bool { return slotNames.Valid(s) }

// Served says how a Provision was served.
type Served uint8

const (
	// NotServed: the request was refused or failed.
	NotServed Served = iota
	// InPlace: no allocator call; the slot's address and size are unchanged.
	InPlace
	// Allocated: the first allocation of an empty slot.
	Allocated
	// Rebased: the old buffer was freed and a new one allocated; the address may have changed and
	// the contents are not carried over.
	Rebased
)

var servedNames = enum.New("served", "served",
	enum.Name(NotServed, "not-served"), enum.Name(InPlace, "in-place"), enum.Name(Allocated, "allocated"), enum.Name(Rebased, "rebased"))

func (s Served) String() string { return servedNames.String(s) }

// Region is one arena region of a CommitBank call: its key and the capacity asked for.
type Region struct {
	Key   string
	Bytes int64
}
