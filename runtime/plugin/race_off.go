//go:build cgo && !race

package plugin

// raceBuild: see race_on.go. Without the race detector Go never ends the process through the C
// library's exit(), so any call into a plugin in flight when exit() runs is the plugin's doing.
const raceBuild = false
