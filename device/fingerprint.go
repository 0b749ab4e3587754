package device

// Fingerprinter is an optional capability of a Device: reducing device memory to one 64-bit
// fingerprint per MiB where it lies (internal/fingerprint's definition), so that only the
// fingerprints cross the link, stated in Extensions.Fingerprint. The engine compares them with the
// oracle's and reads back only the chunks whose fingerprints differ; a device that does not state
// it is compared through Extensions.Compare or read back whole.
type Fingerprinter interface {
	// Fingerprints writes the fingerprint of each chunk of src into out (len(out) ==
	// fingerprint.Chunks(src.Bytes); word indexes counted from src.Addr), src inside one live
	// device allocation, as a synchronous Read on t would see the bytes: the same rules, the same
	// errors.
	Fingerprints(t Thread, src Ptr, out []uint64) error
}
