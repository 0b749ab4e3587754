//go:build !race

package capture_test

// raceBuild: see race_on_test.go.
const raceBuild = false
