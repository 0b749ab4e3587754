package probes

import (
	"strings"
)

// Platform families: what expect.platforms is keyed by. A family is a platform and the simulator's
// profile that models it, whatever driver version or device a key names.
const (
	// FamilyCANN is Ascend's ACL: the simulator's cann profile (sim/cann) and the acl binding
	// (acl/<runtime>-<soc>).
	FamilyCANN = "cann"
	// FamilyCUDA is the CUDA driver API: the simulator's cuda profile (sim/cuda) and the cuda
	// binding (cuda/<driver>-<device>).
	FamilyCUDA = "cuda"
)

// PlatformFamilies lists the families expect.platforms may name, a fresh slice.
func PlatformFamilies() []string { return []string{FamilyCANN, FamilyCUDA} }

// Family is the family of a device's platform key (device.Device.Platform, capture.Result's
// Platform): cann for sim/cann and acl/..., cuda for sim/cuda and cuda/..., "" for any other key.
func Family(platform string) string {
	backend, rest, ok := strings.Cut(platform, "/")
	if !ok || rest == "" {
		return ""
	}
	switch {
	case backend == "sim" && rest == "cann", backend == "acl":
		return FamilyCANN
	case backend == "sim" && rest == "cuda", backend == "cuda":
		return FamilyCUDA
	}
	return ""
}
