package cuda

import (
	"fmt"

	"github.com/replaycheck/replaycheck/device"
)

// maxRows bounds the rows a pitched memset or memcpy node may list when its rows do not touch: a
// node with more is reported as one the binding cannot describe. replaycheck's own nodes are
// one row.
const maxRows = 1 << 16

// pitched returns the byte ranges of a pitched region: depth slices of height rows, each row
// width bytes, row r of slice z starting at base + r*pitch + z*pitch*sliceRows. Rows that touch
// (pitch == width, and slices that follow on) merge into one range, so a 1-D region is one range.
// A height, depth or sliceRows of 0 counts as 1; a pitch of 0 as width. ok is false when more
// than maxRows ranges would be listed.
func pitched(base, width, pitch, height, depth, sliceRows uint64) (out []device.Ptr, ok bool) {
	height, depth, sliceRows = max(height, 1), max(depth, 1), max(sliceRows, 1)
	if pitch == 0 {
		pitch = width
	}
	for z := range depth {
		for r := range height {
			start := base + r*pitch + z*pitch*sliceRows
			if n := len(out); n > 0 && out[n-1].Addr+uint64(out[n-1].Bytes) == start {
				out[n-1].Bytes += int64(width)
				continue
			}
			if len(out) == maxRows {
				return nil, false
			}
			out = append(out, device.Ptr{Addr: start, Bytes: int64(width)})
		}
	}
	return out, true
}

// memsetRanges are the ranges a memset node writes: height rows of width elements of elemSize
// bytes, pitch bytes apart (the pitch is unused when height is 1).
func memsetRanges(dst, pitch, elemSize, width, height uint64) ([]device.Ptr, bool) {
	if height <= 1 {
		return []device.Ptr{{Addr: dst, Bytes: int64(width * elemSize)}}, true
	}
	return pitched(dst, width*elemSize, pitch, height, 1, 1)
}

// copySide is one side of a CUDA_MEMCPY3D, its address the one its memory type selects.
type copySide struct {
	Type                         int
	Addr, X, Y, Z, Pitch, Height uint64
}

// Memory types (CUmemorytype).
const (
	memoryHost    = 1
	memoryDevice  = 2
	memoryArray   = 3
	memoryUnified = 4
)

// copyRanges are the ranges one side of a memcpy node touches: WidthInBytes bytes of Height rows
// of Depth slices, from (X, Y, Z) of a region pitch bytes wide and side.Height rows high.
func copyRanges(what string, s copySide, width, height, depth uint64) ([]device.Ptr, error) {
	switch s.Type {
	case memoryHost, memoryDevice, memoryUnified:
	case memoryArray:
		return nil, fmt.Errorf("its %s is a CUDA array, which has no address range", what)
	default:
		return nil, fmt.Errorf("its %s has memory type %d, which cuda.h does not define", what, s.Type)
	}
	pitch := s.Pitch
	if pitch == 0 {
		pitch = width
	}
	rows := max(s.Height, 1)
	base := s.Addr + s.X + s.Y*pitch + s.Z*pitch*rows
	out, ok := pitched(base, width, pitch, height, depth, rows)
	if !ok {
		return nil, fmt.Errorf("its %s spans more than %d separate rows", what, maxRows)
	}
	return out, nil
}

// Graph node types (CUgraphNodeType), named as cuda.h names them.
var nodeTypes = map[int]string{
	0: "CU_GRAPH_NODE_TYPE_KERNEL", 1: "CU_GRAPH_NODE_TYPE_MEMCPY", 2: "CU_GRAPH_NODE_TYPE_MEMSET",
	3: "CU_GRAPH_NODE_TYPE_HOST", 4: "CU_GRAPH_NODE_TYPE_GRAPH", 5: "CU_GRAPH_NODE_TYPE_EMPTY",
	6: "CU_GRAPH_NODE_TYPE_WAIT_EVENT", 7: "CU_GRAPH_NODE_TYPE_EVENT_RECORD",
	8: "CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL", 9: "CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT",
	10: "CU_GRAPH_NODE_TYPE_MEM_ALLOC", 11: "CU_GRAPH_NODE_TYPE_MEM_FREE",
	12: "CU_GRAPH_NODE_TYPE_BATCH_MEM_OP", 13: "CU_GRAPH_NODE_TYPE_CONDITIONAL",
}

// nodeKinds are the node types device.GraphNode has a kind for.
var nodeKinds = map[int]string{0: "kernel", 1: "memcpy", 2: "memset", 5: "empty", 6: "event-wait", 7: "event-record"}

func nodeTypeName(t int) string {
	if name, ok := nodeTypes[t]; ok {
		return name
	}
	return fmt.Sprintf("type %d", t)
}
