package cuda_test

import (
	"github.com/replaycheck/replaycheck/device/cuda"
	"github.com/replaycheck/replaycheck/device/internal/bind/bindtest"
)

// The binding's code table and the simulator's cuda profile state the same platform facts: every
// code the profile answers with has the same name and class here, so the two cannot drift.
var _ = bindtest.CodeTable("cuda", cuda.Lookup)
