// Package bytesize reads and writes byte counts with binary units (KiB, MiB, GiB, TiB), as probe
// files, simulator profiles, flags and messages spell them.
package bytesize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// units are the binary units, largest first.
var units = []struct {
	name  string
	shift uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}}

// Parse reads a byte count: a non-negative decimal integer without a leading 0 (0 itself is fine),
// optionally followed by KiB, MiB, GiB or TiB. Anything else (decimal units, fractions, signs,
// spaces, hex, a leading 0, overflow) is an error. A leading 0 is refused rather than skipped:
// 010 is 8 to YAML 1.1 and C and 10 to Go, so no reader can tell what it was meant to be.
func Parse(s string) (int64, error) {
	num, shift := s, uint(0)
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.name); ok {
			num, shift = n, u.shift
			break
		}
	}
	if num == "" || strings.IndexFunc(num, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, fmt.Errorf("bad size %q: want a non-negative integer of bytes, optionally with KiB, MiB, GiB or TiB", s)
	}
	if len(num) > 1 && num[0] == '0' {
		return 0, fmt.Errorf("bad size %q: a leading 0 is not allowed (want a non-negative integer of bytes, optionally with KiB, MiB, GiB or TiB)", s)
	}
	v, err := strconv.ParseUint(num, 10, 63)
	if err != nil || v > math.MaxInt64>>shift {
		return 0, fmt.Errorf("size %q overflows", s)
	}
	return int64(v << shift), nil
}

// Unit is n in the largest binary unit that divides it: the count and the unit's name, or n and
// "" when no unit does (0 included).
func Unit(n int64) (int64, string) {
	for _, u := range units {
		if n != 0 && n%(1<<u.shift) == 0 {
			return n >> u.shift, u.name
		}
	}
	return n, ""
}

// Format writes n with the largest binary unit that divides it, else as bytes: "16GiB", "1536B".
func Format(n int64) string {
	v, unit := Unit(n)
	if unit == "" {
		unit = "B"
	}
	return strconv.FormatInt(v, 10) + unit
}
