// Package enum holds the name table behind the small integer enumerations of replaycheck (capture
// modes, host memory kinds, slots, ...): one place that turns a value into its name and a name back
// into its value, with the same wording everywhere.
package enum

import (
	"fmt"
	"slices"
	"strings"
)

// Entry pairs one value of an enumeration with its name.
type Entry[T ~uint8 | ~int] struct {
	Value T
	Name  string
}

// Name pairs v with its name, for New.
func Name[T ~uint8 | ~int](v T, name string) Entry[T] { return Entry[T]{v, name} }

// Names is the table of an enumeration's named values, in their canonical order. Build one with
// New; it is read-only after that and safe for concurrent use.
type Names[T ~uint8 | ~int] struct {
	what    string // the enumeration in messages, e.g. "capture mode"
	unnamed string // the prefix of an unnamed value's String, e.g. "mode" for "mode(7)"
	values  []T
	names   []string
}

// New builds the table of an enumeration. what names the enumeration in Parse's error ("unknown
// <what> "x" (want a, b or c)"); unnamed prefixes the String of a value without a name
// ("<unnamed>(7)"). named lists the values and their names in canonical order.
func New[T ~uint8 | ~int](what, unnamed string, named ...Entry[T]) *Names[T] {
	n := &Names[T]{what: what, unnamed: unnamed}
	for _, e := range named {
		n.values = append(n.values, e.Value)
		n.names = append(n.names, e.Name)
	}
	return n
}

// String returns v's name, or "<unnamed>(<number>)" for a value the table does not name.
func (n *Names[T]) String(v T) string {
	if i := slices.Index(n.values, v); i >= 0 {
		return n.names[i]
	}
	return fmt.Sprintf("%s(%d)", n.unnamed, int(v))
}

// Parse returns the value named s: exactly a name String returns.
func (n *Names[T]) Parse(s string) (T, error) {
	if i := slices.Index(n.names, s); i >= 0 {
		return n.values[i], nil
	}
	return 0, fmt.Errorf("unknown %s %q (want %s)", n.what, s, orList(n.names))
}

// Values returns the named values in canonical order, a fresh slice the caller may change.
func (n *Names[T]) Values() []T { return slices.Clone(n.values) }

// Valid reports whether v is a named value.
func (n *Names[T]) Valid(v T) bool { return slices.Contains(n.values, v) }

// orList writes names as "a", "a or b", "a, b or c".
func orList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
