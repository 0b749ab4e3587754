package sim

// workList is a capture's works in capture order, kept in blocks of blockLen: recording a node
// never copies the nodes before it, which a single slice doubling its way to 100,000 nodes did
// twice over, onto fresh memory each time. The first block starts small and doubles up to
// blockLen, so a capture of a few nodes costs a few; every later block is whole. The blocks are the
// replay plan: a launch queues them as they are.
type workList struct {
	blocks [][]work // each blockLen long but the first, which may be shorter until it fills
	last   []work   // the last block, where entry n goes
	n      int
	room   int // the entries the blocks hold
}

const (
	blockShift = 12
	blockLen   = 1 << blockShift // 128 KiB of works
	blockMask  = blockLen - 1
)

func (l *workList) len() int { return l.n }

func (l *workList) at(i int) work { return l.blocks[i>>blockShift][i&blockMask] }

// push appends w, taking a new whole block from spare when one is needed and spare has one.
func (l *workList) push(w work, spare *spareBlocks) {
	if l.n == l.room {
		l.grow(spare)
	}
	l.last[l.n&blockMask] = w
	l.n++
}

// grow makes room for entry n: a new block, or the first block doubled.
func (l *workList) grow(spare *spareBlocks) {
	switch {
	case l.n > 0 && l.n < blockLen: // only the first block can be shorter than blockLen
		grown := make([]work, min(2*l.n, blockLen))
		copy(grown, l.blocks[0])
		l.blocks[0] = grown
	case l.n > 0 || spare.has():
		l.blocks = append(l.blocks, spare.take())
	default:
		l.blocks = append(l.blocks, make([]work, 8))
	}
	l.last = l.blocks[len(l.blocks)-1]
	l.room = l.n - l.n&blockMask + len(l.last)
}

// filled yields the blocks cut to the works pushed, in order.
func (l *workList) filled(yield func([]work) bool) {
	for b, blk := range l.blocks {
		if !yield(blk[:min(len(blk), l.n-b<<blockShift)]) {
			return
		}
	}
}

// spareBlocks keeps the whole blocks of destroyed graphs for the next captures, up to max of
// them: a program that captures, replays and destroys graphs in turn records its nodes into
// memory already mapped. A block is handed out again only once nothing can read it through its
// graph (DestroyGraph).
type spareBlocks struct {
	blocks [][]work
	max    int
}

func (s *spareBlocks) has() bool { return len(s.blocks) > 0 }

// take returns a spare block, or a fresh one when none is left.
func (s *spareBlocks) take() []work {
	if !s.has() {
		return make([]work, blockLen)
	}
	blk := s.blocks[len(s.blocks)-1]
	s.blocks[len(s.blocks)-1] = nil
	s.blocks = s.blocks[:len(s.blocks)-1]
	return blk
}

// keep takes l's whole blocks as spares, as many as fit, and empties l.
func (s *spareBlocks) keep(l *workList) {
	for _, blk := range l.blocks {
		if len(blk) == blockLen && len(s.blocks) < s.max {
			s.blocks = append(s.blocks, blk)
		}
	}
	*l = workList{}
}
