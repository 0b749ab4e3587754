package watch

// Kind is what a finding is about. The names are part of the report's contract.
type Kind string

// The kinds of finding (docs/watch.md says when each is made).
const (
	// StaleReplay: a graph launched while a range it captured no longer holds the allocation it
	// held at capture.
	StaleReplay Kind = "stale-replay"
	// FreeCaptured: memory a live graph names was freed (before any replay).
	FreeCaptured Kind = "free-captured"
	// AllocInCapture: an allocation while a capture was active.
	AllocInCapture Kind = "alloc-in-capture"
	// FreeInCapture: a free while a capture was active.
	FreeInCapture Kind = "free-in-capture"
	// SharedConcurrent: two graphs sharing private-pool memory launched so both may be in flight.
	SharedConcurrent Kind = "shared-concurrent"
	// OffCaptureWork: the capturing thread enqueued work outside its capture on memory the capture
	// uses (a warning).
	OffCaptureWork Kind = "off-capture-work"
)

// Kinds lists every kind, in the order reports list them.
var Kinds = []Kind{StaleReplay, FreeCaptured, AllocInCapture, FreeInCapture, SharedConcurrent, OffCaptureWork}

// Finding is one distinct site of a hazard, as report.json's findings[] holds it. Count says how
// many times the site was met; the other fields describe the first time.
type Finding struct {
	Kind Kind `json:"kind"`
	// Refused: the interposer kept the launch from the driver (--refuse).
	Refused bool `json:"refused"`
	// Possible: the range came from a kernel argument that looks like a pointer.
	Possible bool `json:"possible,omitempty"`
	PID      int  `json:"pid"`
	TID      int  `json:"tid,omitempty"`
	// Call is the entry point at which the finding was made (cuGraphLaunch, aclrtFree...).
	Call string `json:"call"`
	// Detail is one sentence saying what happened, for people.
	Detail string `json:"detail"`
	// Graph is the graph concerned (nil for alloc-in-capture and free-in-capture outside any
	// graph: then Capture says which capture was active).
	Graph *Graph `json:"graph"`
	// Other is the second graph of a shared-concurrent finding.
	Other *Graph `json:"other,omitempty"`
	// Range is the memory concerned.
	Range *Range `json:"range"`
	// Captured is the captured call that put the range in the graph.
	Captured *Site `json:"captured,omitempty"`
	// AtCapture is the allocation that held the range at capture; Now what holds it now (nil:
	// nothing does).
	AtCapture *Holder `json:"at_capture,omitempty"`
	Now       *Holder `json:"now,omitempty"`
	// Stacks are the call stacks, by role: "finding" (the call that made it), "captured",
	// "at-capture", "now", "freed" (the free that ended the allocation at capture).
	Stacks []Stack `json:"stacks"`
	// Count is how many times this site was met.
	Count int `json:"count"`
}

// Graph names a graph: the handles and the capture that made it.
type Graph struct {
	Handle string `json:"handle"`         // CUgraph or aclmdlRI, hexadecimal
	Exec   string `json:"exec,omitempty"` // CUgraphExec (the same as Handle on Ascend)
	PID    int    `json:"pid"`            // the process that captured it
	// Capture is the interposer's capture id (per process, from 1); Stream and Mode are the
	// capture's origin stream and mode.
	Capture int    `json:"capture"`
	Stream  string `json:"stream,omitempty"`
	Mode    string `json:"mode,omitempty"`
	// LaunchStream is the stream of the launch the finding is about.
	LaunchStream string `json:"launch_stream,omitempty"`
}

// Range is a span of memory.
type Range struct {
	Addr  string `json:"addr"` // hexadecimal
	Bytes uint64 `json:"bytes"`
}

// Site is a call that put a range into a graph.
type Site struct {
	Call string `json:"call"`
	What string `json:"what"` // copy, memset, kernel
	// Arg names the kernel argument ("arg 1 at offset 0") of a possible range.
	Arg string `json:"arg,omitempty"`
}

// Holder is an allocation: a driver allocation or an annotated pool block.
type Holder struct {
	Addr       string `json:"addr"`
	Bytes      uint64 `json:"bytes"`
	Kind       string `json:"kind"` // device, host, async, pool
	Pool       string `json:"pool,omitempty"`
	Generation int    `json:"generation"` // 1 for the first allocation at its address, then 2...
	Call       string `json:"call"`
	// Freed is set when the allocation has been freed (by FreedBy).
	Freed   bool   `json:"freed,omitempty"`
	FreedBy string `json:"freed_by,omitempty"`
}

// Stack is one call stack, innermost frame first.
type Stack struct {
	Role   string  `json:"role"`
	Frames []Frame `json:"frames"`
}

// Frame is one return address, symbolised as far as the object allows.
type Frame struct {
	PC       string `json:"pc"`
	Object   string `json:"object,omitempty"`
	Offset   string `json:"offset,omitempty"` // PC relative to the object's load address
	Function string `json:"function,omitempty"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
}
