package sim

import (
	"bytes"

	"github.com/replaycheck/replaycheck/runtime"
)

var _ runtime.Comparer = (*Device)(nil)

// Equal compares src with want in place against the device's pages (an absent page compares as
// zeros): a Read as the rules see it, without the copy.
func (d *Device) Equal(t runtime.Thread, src runtime.Ptr, want []byte) (bool, error) {
	if w := d.away(t); w != nil {
		return handOff(d, w, "Read", func() (bool, error) { return d.Equal(t, src, want) })
	}
	var equal bool
	err := d.call(t, "Read", func() error {
		if int64(len(want)) != src.Bytes {
			return d.fail("Read", runtime.ClassInvalidValue, "%d host bytes for source %v: the lengths must match", len(want), src)
		}
		if _, err := d.checkRange("Read", "source", src, false); err != nil {
			return err
		}
		if err := d.enforce(&call{op: "Read", thread: t}); err != nil {
			return err
		}
		equal = d.mem.equal(src.Addr, want)
		return nil
	})
	return equal, err
}

// zeroPage is what an absent page holds.
var zeroPage [PageSize]byte

// equal reports whether [addr, addr+len(want)) holds want.
func (m *memory) equal(addr uint64, want []byte) bool {
	for off := int64(0); off < int64(len(want)); {
		a := addr + uint64(off)
		page, pageOff := a/PageSize, int64(a%PageSize)
		length := min(PageSize-pageOff, int64(len(want))-off)
		var have []byte
		if p, ok := m.pages[page]; ok {
			have = p[pageOff : pageOff+length]
		} else {
			have = zeroPage[:length]
		}
		if !bytes.Equal(have, want[off:off+length]) {
			return false
		}
		off += length
	}
	return true
}
