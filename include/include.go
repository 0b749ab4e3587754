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

// WatchABI is replaycheck/watch.h, the pool annotations replaycheck watch's interposer defines.
//
//go:embed replaycheck/watch.h
var WatchABI []byte

// WatchABIPath is where a C source includes WatchABI from: #include "replaycheck/watch.h".
const WatchABIPath = "replaycheck/watch.h"
