//go:build cgo

package plugin

// RaceBuild is whether this test binary was built with the race detector, whose exit handler
// judges only the thread of a call (race_on.go).
const RaceBuild = raceBuild
