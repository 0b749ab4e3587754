package device

// Comparer is an optional capability of a Device: comparing device memory with host bytes where it
// lies, without reading it back, stated in Extensions.Compare. The engine reads a device that
// does not state it back in chunks through a reused host buffer instead.
type Comparer interface {
	// Equal reports whether the bytes of src on the device are want (len(want) == src.Bytes, src
	// inside one live device allocation), as a synchronous Read on t would see them: the same
	// rules, the same errors.
	Equal(t Thread, src Ptr, want []byte) (bool, error)
}
