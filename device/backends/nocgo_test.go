//go:build !cgo

package backends_test

const cgoBuild = false
