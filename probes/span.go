package probes

import "fmt"

// Span is a byte range of a named buffer.
type Span struct {
	Buffer string
	Off    int64
	Len    int64
}

// End is the first offset past the span.
func (s Span) End() int64 { return s.Off + s.Len }

// Overlaps reports whether two spans share a byte of the same buffer.
func (s Span) Overlaps(t Span) bool {
	return s.Buffer == t.Buffer && s.Len > 0 && t.Len > 0 && s.Off < t.End() && t.Off < s.End()
}

func (s Span) String() string { return fmt.Sprintf("%s[%d:%d]", s.Buffer, s.Off, s.End()) }

// Access is what a data op touches once its defaults are resolved.
type Access struct {
	Writes []Span
	Reads  []Span
}

// Resolve fills in an op's default offsets and byte counts with the buffer sizes given by size
// (the sizes at the moment the op is issued) and returns what it reads and writes. It fails when a
// range is empty or leaves its buffer or the axpy size rules are broken. Ops without data effect on device
// buffers (record, wait, sync, query, alloc, free, grow) return an empty Access.
func (op *Op) Resolve(size func(buffer string) int64) (Access, error) {
	var sp Spans
	if err := op.ResolveInto(size, &sp); err != nil || sp.N == 0 {
		return Access{}, err
	}
	return sp.Access(), nil
}

// Spans is what Resolve returns, held in place: the writes are Span[:W], the reads Span[W:N]. A
// capture of 100,000 ops resolves one per op, and this form allocates nothing.
type Spans struct {
	Span [3]Span
	W, N int
}

// Access returns a copy of the spans as an Access (a list with no span is nil).
func (s *Spans) Access() Access {
	return s.over(append([]Span(nil), s.Span[:s.N]...))
}

// View returns the spans as an Access that shares s's array: valid until s changes.
func (s *Spans) View() Access { return s.over(s.Span[:s.N]) }

func (s *Spans) over(all []Span) Access {
	var acc Access
	if s.W > 0 {
		acc.Writes = all[:s.W:s.W]
	}
	if s.N > s.W {
		acc.Reads = all[s.W:s.N]
	}
	return acc
}

// ResolveInto is Resolve into sp: N is 0 for an op without data effect, and on error. It asks size
// once per buffer.
func (op *Op) ResolveInto(size func(buffer string) int64, sp *Spans) error {
	*sp = Spans{}
	opt := func(p *int64, def int64) int64 {
		if p != nil {
			return *p
		}
		return def
	}
	within := func(what, buf string, total, off, n int64) error {
		if off < 0 || n < 0 || off > total || n > total-off {
			return fmt.Errorf("%s range [%d, %d) is outside buffer %q of %d bytes", what, off, off+n, buf, total)
		}
		if n == 0 {
			// An empty memset or copy does nothing, and platforms disagree on whether it is an error.
			return fmt.Errorf("%s range at offset %d of buffer %q is empty", what, off, buf)
		}
		return nil
	}
	offsetWithin := func(what, buf string, total, off int64) error {
		if off < 0 || off > total {
			return fmt.Errorf("%s offset %d is outside buffer %q of %d bytes", what, off, buf, total)
		}
		return nil
	}
	switch op.Kind {
	case OpFill:
		total, off := size(op.Dst), opt(op.Offset, 0)
		// The offset first: the default count is derived from it.
		if err := offsetWithin("fill", op.Dst, total, off); err != nil {
			return err
		}
		n := opt(op.Bytes, total-off)
		if err := within("fill", op.Dst, total, off, n); err != nil {
			return err
		}
		*sp = Spans{Span: [3]Span{{op.Dst, off, n}}, W: 1, N: 1}
	case OpCopy:
		dsize, ssize := size(op.Dst), size(op.Src)
		doff, soff := opt(op.DstOffset, 0), opt(op.SrcOffset, 0)
		if err := offsetWithin("copy destination", op.Dst, dsize, doff); err != nil {
			return err
		}
		if err := offsetWithin("copy source", op.Src, ssize, soff); err != nil {
			return err
		}
		n := opt(op.Bytes, min(dsize-doff, ssize-soff))
		if err := within("copy destination", op.Dst, dsize, doff, n); err != nil {
			return err
		}
		if err := within("copy source", op.Src, ssize, soff, n); err != nil {
			return err
		}
		*sp = Spans{Span: [3]Span{{op.Dst, doff, n}, {op.Src, soff, n}}, W: 1, N: 2}
	case OpAxpy:
		ny, nx := size(op.Y), size(op.X)
		if ny != nx || ny%4 != 0 {
			return fmt.Errorf("axpy needs x and y of the same size, a multiple of 4 bytes (y %q is %d, x %q is %d)", op.Y, ny, op.X, nx)
		}
		*sp = Spans{Span: [3]Span{{op.Y, 0, ny}, {op.X, 0, nx}, {op.Y, 0, ny}}, W: 1, N: 3}
	case OpWrite:
		*sp = Spans{Span: [3]Span{{op.Dst, 0, size(op.Dst)}}, W: 1, N: 1}
	case OpRead:
		*sp = Spans{Span: [3]Span{{op.Src, 0, size(op.Src)}}, W: 0, N: 1}
	}
	return nil
}
