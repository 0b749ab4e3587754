package cuda

import "github.com/replaycheck/replaycheck/device/internal/bind"

// PlatformKey is the platform key of a driver version and device name, for the unit tests.
var PlatformKey = platformKey

// Pitched, MemsetRanges, CopyRanges and CopySide expose the node range arithmetic to the unit
// tests.
var (
	Pitched      = pitched
	MemsetRanges = memsetRanges
	CopyRanges   = copyRanges
)

type CopySide = copySide

// SetCompareShape sets the verification's pinned chunk and comparison goroutines (bind).
var SetCompareShape = bind.SetCompareShape
