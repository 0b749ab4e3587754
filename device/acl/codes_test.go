package acl_test

import (
	"github.com/replaycheck/replaycheck/device/acl"
	"github.com/replaycheck/replaycheck/device/internal/bind/bindtest"
)

// The binding's code table and the simulator's cann profile state the same platform facts: every
// code the profile answers with has the same name and class here, so the two cannot drift.
var _ = bindtest.CodeTable("cann", acl.Lookup)
