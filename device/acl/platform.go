package acl

import (
	"strings"

	"github.com/replaycheck/replaycheck/device/internal/bind"
)

// platformKey is "acl/cann-<major.minor>-<device>": the runtime version cut to major.minor and the
// device family of the SoC, e.g. "acl/cann-9.0-a2a3".
func platformKey(version, soc string) string {
	return "acl/cann-" + bind.KeyPart(majorMinor(version)) + "-" + bind.KeyPart(family(soc))
}

// majorMinor keeps the first two dot-separated fields: "8.0.RC3" -> "8.0", "9.0.0" -> "9.0".
func majorMinor(v string) string {
	if v == "" {
		return "unknown"
	}
	parts := strings.SplitN(v, ".", 3)
	if len(parts) > 2 {
		parts = parts[:2]
	}
	return strings.Join(parts, ".")
}

// family maps a SoC name to the chip family its capture rules belong to: Ascend910B* (Atlas A2)
// and Ascend910_93* (Atlas A3) share the a2a3 runtime; other SoCs keep their own name.
func family(soc string) string {
	s := strings.ToLower(soc)
	switch {
	case s == "":
		return "unknown"
	case strings.HasPrefix(s, "ascend910b"), strings.HasPrefix(s, "ascend910_93"):
		return "a2a3"
	}
	return strings.TrimPrefix(s, "ascend")
}
