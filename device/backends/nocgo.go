//go:build !cgo

package backends

// Without cgo no driver library can be loaded: the device backends are left out of the binary.
func init() {
	for _, name := range []string{"acl", "cuda"} {
		missing[name] = "built without cgo (CGO_ENABLED=0): driver libraries cannot be loaded"
	}
}
