package guard

// Watched lists the captures the Device is watching, oldest first, and counts the events it
// would take as forks into one of them. For specs that check bookkeeping no refusal shows
// (program mode).
func (d *Device) Watched() (captures []string, forkEvents int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, seq := range sortedSeqs(d.captures) {
		captures = append(captures, d.captures[seq].String())
	}
	return captures, len(d.recordedIn)
}
