//go:build cgo && race

package plugin

// raceBuild: a race-enabled build ends the process with exit(0) of the C library (racefini) when
// it exits 0, so the exit handler must not take a call still in flight on another thread (one
// given up on a timeout) for a plugin's exit: only the exiting thread's own call counts.
const raceBuild = true
