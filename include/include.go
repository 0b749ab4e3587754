// Package include holds the C headers replaycheck publishes, embedded so that Go code that builds
// C (the seed runtime plugins, plugin tests) writes the one header there is, never a copy.
package include

import _ "embed"

// RuntimeABI is replaycheck/runtime.h, the runtime plugin ABI.
//
//go:embed replaycheck/runtime.h
var RuntimeABI []byte

// RuntimeABIPath is where a C source includes RuntimeABI from: #include "replaycheck/runtime.h".
const RuntimeABIPath = "replaycheck/runtime.h"
