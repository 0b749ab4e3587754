//go:build cgo

package main_test

// cgoBuild: the binary under test was built with cgo, so it carries the device backends.
const cgoBuild = true
