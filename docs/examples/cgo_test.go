//go:build cgo

package examples_test

// pluginsLoad says whether this build can load runtime plugins (runtime/plugin needs cgo).
const pluginsLoad = true
