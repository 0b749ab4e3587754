package probes

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/replaycheck/replaycheck/internal/bytesize"
)

// PatternKind is the family of an init/write pattern.
type PatternKind string

const (
	PatZero   PatternKind = "zero"
	PatFill   PatternKind = "fill"
	PatIota8  PatternKind = "iota8"
	PatIota32 PatternKind = "iota32"
	PatRandom PatternKind = "random"
	PatHex    PatternKind = "hex"
)

// Pattern is a deterministic byte pattern; the zero Pattern is `zero`.
type Pattern struct {
	Kind PatternKind
	Byte byte   // fill
	Seed uint64 // random
	Hex  []byte // hex, at least one byte
}

// ParsePattern reads the pattern syntax of PROBE-LANGUAGE.md.
func ParsePattern(s string) (Pattern, error) {
	head, arg, hasArg := strings.Cut(s, ":")
	switch PatternKind(head) {
	case PatZero, PatIota8, PatIota32:
		if hasArg {
			return Pattern{}, fmt.Errorf("pattern %q takes no argument", head)
		}
		return Pattern{Kind: PatternKind(head)}, nil
	case PatFill:
		v, err := ParseUint(arg)
		if !hasArg || err != nil || v > 255 {
			return Pattern{}, fmt.Errorf("pattern %q: fill needs a byte 0..255 (fill:7, fill:0xAB), %s%s", s, integerRule, leadingZero(arg))
		}
		return Pattern{Kind: PatFill, Byte: byte(v)}, nil
	case PatRandom:
		v, err := ParseUint(arg)
		if !hasArg || err != nil {
			return Pattern{}, fmt.Errorf("pattern %q: random needs a uint64 seed (random:42), %s%s", s, integerRule, leadingZero(arg))
		}
		return Pattern{Kind: PatRandom, Seed: v}, nil
	case PatHex:
		b, err := hex.DecodeString(arg)
		if !hasArg || err != nil || len(b) == 0 {
			return Pattern{}, fmt.Errorf("pattern %q: hex needs an even number of hex digits, at least two (hex:deadbeef)", s)
		}
		return Pattern{Kind: PatHex, Hex: b}, nil
	}
	return Pattern{}, fmt.Errorf("unknown pattern %q (want zero, fill:B, iota8, iota32, random:SEED or hex:BYTES)", s)
}

// integerRule is how every number of the language but a size is written, for messages.
const integerRule = "decimal without a leading 0, or 0x hex"

// leadingZero explains why decimal digits after a 0 are refused, for messages; "" for other text.
func leadingZero(v string) string {
	if len(v) > 1 && v[0] == '0' && v[1] >= '0' && v[1] <= '9' {
		return " (a leading 0 is not allowed: octal to some readers, decimal to others)"
	}
	return ""
}

// ParseUint reads an unsigned integer written in decimal or as 0x hex: every number of the
// language but a size (ParseSize) is written so. Leading zeros, octal and binary prefixes, signs
// and underscores are errors: 010 would otherwise silently mean 8. A number too large for uint64
// is an error that wraps strconv.ErrRange.
func ParseUint(s string) (uint64, error) {
	if hexDigits, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		if hexDigits == "" || strings.ContainsAny(hexDigits, "_+-") {
			return 0, fmt.Errorf("bad hex number %q", s)
		}
		return strconv.ParseUint(hexDigits, 16, 64)
	}
	if s == "" || (len(s) > 1 && s[0] == '0') || strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, fmt.Errorf("bad number %q: want decimal digits without leading zeros, or 0x hex", s)
	}
	return strconv.ParseUint(s, 10, 64)
}

func (p Pattern) String() string {
	switch p.Kind {
	case PatFill:
		return fmt.Sprintf("fill:%#02x", p.Byte)
	case PatRandom:
		return fmt.Sprintf("random:%d", p.Seed)
	case PatHex:
		return "hex:" + hex.EncodeToString(p.Hex)
	case "":
		return string(PatZero)
	}
	return string(p.Kind)
}

// Fill writes the pattern over dst, starting at pattern offset 0.
func (p Pattern) Fill(dst []byte) {
	switch p.Kind {
	case PatZero, "":
		clear(dst)
	case PatFill:
		setBytes(dst, p.Byte)
	case PatIota8:
		for i := range dst[:min(len(dst), 256)] {
			dst[i] = byte(i)
		}
		repeat(dst, 256)
	case PatIota32:
		var lane [4]byte
		for i := 0; i < len(dst); i += 4 {
			binary.LittleEndian.PutUint32(lane[:], uint32(i/4))
			copy(dst[i:], lane[:])
		}
	case PatRandom:
		state := p.Seed
		var word [8]byte
		for i := 0; i < len(dst); i += 8 {
			binary.LittleEndian.PutUint64(word[:], splitmix64(&state))
			copy(dst[i:], word[:])
		}
	case PatHex:
		copy(dst, p.Hex)
		repeat(dst, len(p.Hex))
	}
}

// repeat copies the first period bytes of dst over the rest of it, doubling what it copies each
// time (memmove speed, not a loop per byte or per period: an initial pattern of a 128 MiB buffer
// is written twice per instance, for the device and for the oracle).
func repeat(dst []byte, period int) {
	if period <= 0 {
		return // an empty hex pattern (the loader refuses one) leaves dst as it was
	}
	for n := period; n < len(dst); n *= 2 {
		copy(dst[n:], dst[:n])
	}
}

// Bytes returns n bytes of the pattern.
func (p Pattern) Bytes(n int64) []byte {
	b := make([]byte, n)
	p.Fill(b)
	return b
}

func splitmix64(state *uint64) uint64 {
	*state += 0x9e3779b97f4a7c15
	z := *state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// ParseSize reads a byte count: a non-negative decimal integer without a leading 0, optionally
// followed by a binary unit (KiB, MiB, GiB, TiB). Anything else — decimal units, fractions, signs,
// hex, a leading 0, overflow — is an error.
func ParseSize(s string) (int64, error) { return bytesize.Parse(s) }

// FormatSize prints n with the largest binary unit that divides it, else as a plain number.
func FormatSize(n int64) string {
	v, unit := bytesize.Unit(n)
	return strconv.FormatInt(v, 10) + unit
}
