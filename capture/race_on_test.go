//go:build race

package capture_test

// raceBuild: the race detector slows the engine about fivefold. Specs that walk the whole
// catalog many times for a logical property, not for concurrency, walk a fixed sample then.
const raceBuild = true
