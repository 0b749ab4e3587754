package probes

// SetBytes is the oracle's fill of b with v.
var SetBytes = setBytes
