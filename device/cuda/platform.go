package cuda

import (
	"strings"

	"github.com/replaycheck/replaycheck/device/internal/bind"
)

// platformKey is "cuda/<major.minor>-<device>", the device name lowercased without its "NVIDIA"
// prefix and with spaces as '-', e.g. "cuda/12.4-h200".
func platformKey(version, name string) string {
	n := strings.TrimSpace(strings.ToLower(name))
	return "cuda/" + bind.KeyPart(version) + "-" + bind.KeyPart(strings.TrimPrefix(n, "nvidia"))
}
