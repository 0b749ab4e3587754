package proc

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"syscall"
)

// The last-call page: where a worker (RunWorker) keeps the name of the call it is about to make,
// for the parent to read once the worker has died. Announcing each call on the result pipe
// instead cost a write, a wake-up of the parent and a JSON line per call: about 4 µs (six
// isolated instances of a probe of 100,000 ops took 2.6 s less once calls went to the page). A
// store into shared memory costs nothing that a crash in the call could undo: the bytes are in
// the file's page before the call is made.
//
// The page has two slots, each a 4-byte length and the name; byte 0 says which slot is current.
// A name goes into the other slot, then byte 0 flips to it, so a worker that dies while writing
// leaves the previous name whole.
const (
	lastCallBytes = 4096
	lastCallSlot  = (lastCallBytes - 8) / 2
	lastCallMax   = lastCallSlot - 4 // the longest name kept; a longer one is cut
)

// newLastCallPage is an unlinked file of one zeroed page, for a worker as file descriptor 4
// (LastCallFD).
func newLastCallPage() (*os.File, error) {
	f, err := os.CreateTemp("", "replaycheck-last-call-")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name()) // the parent and the worker hold it open; nothing else needs its name
	if err := f.Truncate(lastCallBytes); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readLastCall is the name the worker stored last in page, "" when it stored none.
func readLastCall(page *os.File) string {
	b := make([]byte, lastCallBytes)
	if _, err := page.ReadAt(b, 0); err != nil && err != io.EOF {
		return ""
	}
	slot := b[8+int(b[0]&1)*lastCallSlot:][:lastCallSlot]
	n := binary.LittleEndian.Uint32(slot)
	if n == 0 || n > lastCallMax {
		return ""
	}
	return string(slot[4 : 4+n])
}

// LastCallPage is a worker's mapping of the last-call page its parent passed it.
type LastCallPage []byte

// MapLastCall maps the last-call page this worker's parent passed it (descriptor LastCallFD). Only
// a worker its parent gave a page calls it: descriptor 4 is whatever this process has there.
func MapLastCall() (LastCallPage, error) {
	return mapLastCall(os.NewFile(LastCallFD, "last-call"))
}

// mapLastCall maps the page the parent passed as f.
func mapLastCall(f *os.File) (LastCallPage, error) {
	b, err := syscall.Mmap(int(f.Fd()), 0, lastCallBytes, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping the last-call page: %w", err)
	}
	return b, nil
}

// Store makes name the last call: written into the slot that is not current, then made current.
// It is not safe for concurrent use: a worker whose calls come from several goroutines serializes
// them.
func (m LastCallPage) Store(name string) { m[0] = byte(m.write(name)) }

// write puts name into the slot that is not current and returns that slot; until byte 0 names
// it, the page still says the previous name.
func (m LastCallPage) write(name string) int {
	next := 1 - int(m[0]&1)
	slot := m[8+next*lastCallSlot:][:lastCallSlot]
	n := copy(slot[4:4+lastCallMax], name)
	binary.LittleEndian.PutUint32(slot, uint32(n))
	return next
}
