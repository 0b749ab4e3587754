package watch

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Symbolizer names the frames of a stack from the objects' files: the function from the ELF
// symbol tables (.symtab, else .dynsym) where the interposer had no symbol (dladdr sees exported
// symbols only), and the file and line from the DWARF line tables where the object has them. It
// reads files, not /proc, so a process that has exited can be symbolised as long as its objects
// are still there. Each object is read once; one that cannot be read leaves its frames as they are.
// It is safe for concurrent use.
type Symbolizer struct {
	mu      sync.Mutex
	objects map[string]*object // nil: the object could not be read
}

// NewSymbolizer returns a Symbolizer with an empty cache.
func NewSymbolizer() *Symbolizer { return &Symbolizer{objects: map[string]*object{}} }

type object struct {
	exec bool   // ET_EXEC: addresses are absolute
	bias uint64 // ET_DYN: the first PT_LOAD's page-aligned vaddr, which the load base maps to
	syms []symbol
	rows []lineRow
}

type symbol struct {
	addr, size uint64
	name       string
}

type lineRow struct {
	addr uint64
	file string
	line int
	end  bool // the end of a sequence: no line from here
}

// Frame returns f with Function, File and Line filled where the object tells them; f.PC and
// f.Offset (PC less the load base) say where the frame is.
func (s *Symbolizer) Frame(f Frame) Frame {
	if f.Object == "" {
		return f
	}
	o := s.object(f.Object)
	if o == nil {
		return f
	}
	var vaddr uint64
	var err error
	if o.exec {
		vaddr, err = strconv.ParseUint(strings.TrimPrefix(f.PC, "0x"), 16, 64)
	} else {
		if f.Offset == "" {
			return f
		}
		vaddr, err = strconv.ParseUint(strings.TrimPrefix(f.Offset, "0x"), 16, 64)
		vaddr += o.bias
	}
	if err != nil || vaddr == 0 {
		return f
	}
	// A return address is the instruction after the call: look up the call itself.
	at := vaddr - 1
	if f.Function == "" {
		f.Function = o.function(at)
	}
	if file, line := o.line(at); line > 0 {
		f.File, f.Line = file, line
	}
	return f
}

func (s *Symbolizer) object(path string) *object {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.objects[path]; ok {
		return o
	}
	o, err := readObject(path)
	if err != nil {
		o = nil
	}
	s.objects[path] = o
	return o
}

func readObject(path string) (*object, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	o := &object{exec: f.Type == elf.ET_EXEC}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return nil, errors.New("not an executable or shared object")
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			if !o.exec && p.Align > 0 {
				o.bias = p.Vaddr &^ (p.Align - 1)
			}
			break
		}
	}
	syms, err := f.Symbols()
	if err != nil || len(syms) == 0 {
		syms, _ = f.DynamicSymbols()
	}
	for _, sy := range syms {
		t := elf.ST_TYPE(sy.Info)
		if (t != elf.STT_FUNC && t != elf.STT_GNU_IFUNC) || sy.Value == 0 || sy.Section == elf.SHN_UNDEF {
			continue
		}
		name, _, _ := strings.Cut(sy.Name, "@") // versioned dynamic names
		o.syms = append(o.syms, symbol{addr: sy.Value, size: sy.Size, name: name})
	}
	slices.SortStableFunc(o.syms, func(a, b symbol) int {
		switch {
		case a.addr < b.addr:
			return -1
		case a.addr > b.addr:
			return 1
		}
		return 0
	})
	if d, err := f.DWARF(); err == nil {
		o.rows = lineRows(d)
	}
	return o, nil
}

// lineRows are every compilation unit's line-table rows, by address, ends of sequences first
// where a sequence starts at the address another ends.
func lineRows(d *dwarf.Data) []lineRow {
	var rows []lineRow
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(e)
		r.SkipChildren()
		if err != nil || lr == nil {
			continue
		}
		var le dwarf.LineEntry
		for {
			if err := lr.Next(&le); err != nil {
				break // io.EOF, or a table cut short: keep what was read
			}
			row := lineRow{addr: le.Address, line: le.Line, end: le.EndSequence}
			if le.File != nil {
				row.file = le.File.Name
			}
			rows = append(rows, row)
		}
	}
	slices.SortStableFunc(rows, func(a, b lineRow) int {
		switch {
		case a.addr < b.addr:
			return -1
		case a.addr > b.addr:
			return 1
		case a.end && !b.end:
			return -1
		case b.end && !a.end:
			return 1
		}
		return 0
	})
	return rows
}

// function names the function symbol holding vaddr ("" when none).
func (o *object) function(vaddr uint64) string {
	i, _ := slices.BinarySearchFunc(o.syms, vaddr+1, func(s symbol, v uint64) int {
		if s.addr < v {
			return -1
		}
		return 1
	})
	if i == 0 {
		return ""
	}
	// o.syms[i-1] is the last symbol at or below vaddr; several may share its address.
	for j := i - 1; j >= 0 && o.syms[j].addr == o.syms[i-1].addr; j-- {
		s := o.syms[j]
		if s.size == 0 || vaddr < s.addr+s.size {
			return s.name
		}
	}
	return ""
}

// line is the file and line of vaddr (line 0 when the tables do not cover it).
func (o *object) line(vaddr uint64) (string, int) {
	i, _ := slices.BinarySearchFunc(o.rows, vaddr+1, func(r lineRow, v uint64) int {
		if r.addr < v {
			return -1
		}
		return 1
	})
	if i == 0 {
		return "", 0
	}
	r := o.rows[i-1]
	if r.end {
		return "", 0
	}
	return r.file, r.line
}
