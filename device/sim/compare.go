package sim

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/replaycheck/replaycheck/device"
)

var _ device.Comparer = (*Device)(nil)

// Equal compares src with want in place against the device's pages (an absent page compares as
// zeros): a Read as the rules see it, without the copy.
func (d *Device) Equal(t device.Thread, src device.Ptr, want []byte) (bool, error) {
	if w := d.away(t); w != nil {
		return handOff(d, w, "Read", func() (bool, error) { return d.Equal(t, src, want) })
	}
	var equal bool
	err := d.call(t, "Read", func() error {
		if int64(len(want)) != src.Bytes {
			return d.fail("Read", device.ClassInvalidValue, "%d host bytes for source %v: the lengths must match", len(want), src)
		}
		if _, err := d.checkRange("Read", "source", src, false); err != nil {
			return err
		}
		if err := d.enforce(&call{op: "Read", thread: t}); err != nil {
			return err
		}
		equal = d.mem.equal(src.Addr, want, d.knobs.segment())
		return nil
	})
	return equal, err
}

// zeroPage is what an absent page holds.
var zeroPage [PageSize]byte

// defaultEqualSegment is the least one goroutine of equal compares: comparing 8 MiB takes about a
// millisecond, starting a goroutine microseconds, so nothing smaller is worth cutting (a round
// figure, not a tuned one). A multiple of PageSize.
const defaultEqualSegment int64 = 8 << 20

// knobs are a device's internal switches: the zero value is the defaults. Nothing package-level
// steers the device; tests set a device's own through export_test.go's Tune, the one way they
// reach them, under the device lock.
type knobs struct {
	// equalSegment, when positive, replaces defaultEqualSegment (a multiple of PageSize), so tests
	// can cut ranges of a few pages.
	equalSegment int64
}

// segment is the least one goroutine of equal compares.
func (k knobs) segment() int64 {
	if k.equalSegment > 0 {
		return k.equalSegment
	}
	return defaultEqualSegment
}

// equal reports whether [addr, addr+len(want)) holds want. A range of at least two segments (of at
// least segment bytes) is cut at page boundaries into one segment per CPU, compared by separate
// goroutines that stop as soon as any of them finds a difference: verification then runs at the
// memory bandwidth of every core rather than of one. The caller holds the device lock, so no page
// changes meanwhile.
func (m *memory) equal(addr uint64, want []byte, segment int64) bool {
	n := int64(len(want))
	parts := min(int64(runtime.GOMAXPROCS(0)), n/segment)
	if parts < 2 {
		return m.equalPages(addr, want, nil)
	}
	// Cuts at page boundaries of the device's address space, so no page is split between two
	// goroutines.
	per := (n / parts) &^ (PageSize - 1)
	first := int64(PageSize-addr%PageSize) % PageSize
	var differs atomic.Bool
	var wg sync.WaitGroup
	lo := int64(0)
	for k := range parts - 1 {
		hi := first + (k+1)*per
		seg, at := want[lo:hi], addr+uint64(lo) // sliced here: a panic in a goroutine would end the process
		wg.Go(func() {
			if !m.equalPages(at, seg, &differs) {
				differs.Store(true)
			}
		})
		lo = hi
	}
	if !m.equalPages(addr+uint64(lo), want[lo:], &differs) {
		differs.Store(true)
	}
	wg.Wait()
	return !differs.Load()
}

// equalPages compares page by page (an absent page compares as zeros); it gives up, answering
// true, once stop is set: another segment has answered for the whole range.
func (m *memory) equalPages(addr uint64, want []byte, stop *atomic.Bool) bool {
	for off := int64(0); off < int64(len(want)); {
		if stop != nil && stop.Load() {
			return true
		}
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
