package device

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/replaycheck/replaycheck/internal/enum"
)

// Ptr is a range of device memory: the address the device returned and the length requested.
type Ptr struct {
	Addr  uint64
	Bytes int64
}

// End is the first address past the range.
func (p Ptr) End() uint64 { return p.Addr + uint64(p.Bytes) }

// IsZero reports whether p is the zero Ptr (no allocation).
func (p Ptr) IsZero() bool { return p.Addr == 0 && p.Bytes == 0 }

// Overlaps reports whether two ranges share at least one byte.
func (p Ptr) Overlaps(q Ptr) bool { return p.Addr < q.End() && q.Addr < p.End() }

// Contains reports whether q lies entirely inside p.
func (p Ptr) Contains(q Ptr) bool { return q.Addr >= p.Addr && q.End() <= p.End() }

// Slice returns the sub-range [off, off+n) of p.
func (p Ptr) Slice(off, n int64) Ptr { return Ptr{Addr: p.Addr + uint64(off), Bytes: n} }

func (p Ptr) String() string { return string(p.Append(nil)) }

// Append appends p's String to b: 0x<address in hex>+<bytes>.
func (p Ptr) Append(b []byte) []byte {
	b = append(b, "0x"...)
	b = strconv.AppendUint(b, p.Addr, 16)
	b = append(b, '+')
	return strconv.AppendInt(b, p.Bytes, 10)
}

// Stream, Event and Graph are opaque handles issued by one Device. Zero is never a valid Event or
// Graph; the zero Stream is DefaultStream.
type (
	Stream uint64
	Event  uint64
	Graph  uint64
)

// DefaultStream names the platform's default stream: CUDA's legacy NULL stream, ACL's default
// stream. It always exists: it is never created or destroyed. On CUDA it synchronises implicitly
// with every blocking stream, which is why work on it during a capture is a hazard of its own.
const DefaultStream Stream = 0

func (s Stream) String() string {
	if s == DefaultStream {
		return "default stream"
	}
	return fmt.Sprintf("stream#%d", uint64(s))
}
func (e Event) String() string { return fmt.Sprintf("event#%d", uint64(e)) }
func (g Graph) String() string { return fmt.Sprintf("graph#%d", uint64(g)) }

// Thread names the OS thread a device call is issued from.
type Thread uint8

const (
	// Main is the device's own worker thread: the thread that set the device current.
	Main Thread = iota
	// Other is a second worker thread bound to the same device.
	Other
)

var threadNames = enum.New("thread", "thread", enum.Name(Main, "main"), enum.Name(Other, "other"))

func (t Thread) String() string { return threadNames.String(t) }

// HostMemory is the kind of a host allocation.
type HostMemory uint8

const (
	// Pageable is ordinary host memory (malloc): the driver must stage copies from it.
	Pageable HostMemory = iota + 1
	// Pinned is page-locked host memory from the driver (aclrtMallocHost, cuMemAllocHost): async
	// copies read and write it directly, and a captured copy reads it again on every replay.
	Pinned
)

// StreamFlags are how a stream is created.
type StreamFlags uint32

const (
	// Blocking is a platform's default stream kind (cuStreamCreate flags 0): on CUDA it synchronises
	// with the legacy default stream, so work on the legacy stream while a blocking stream captures
	// is rejected.
	Blocking StreamFlags = 0
	// NonBlocking does not synchronise with the platform's default stream (CUDA's
	// CU_STREAM_NON_BLOCKING, the kind PyTorch captures on): work on the legacy stream while only
	// non-blocking streams capture runs at once, outside every graph. Every Ascend stream is
	// non-blocking, whatever the flags.
	NonBlocking StreamFlags = 1
)

var hostMemoryNames = enum.New("host memory", "host-memory", enum.Name(Pageable, "pageable"), enum.Name(Pinned, "pinned"))

// HostMemories lists every host memory kind, in a fresh slice.
func HostMemories() []HostMemory { return hostMemoryNames.Values() }

func (h HostMemory) String() string { return hostMemoryNames.String(h) }

// ParseHostMemory accepts the names String returns.
func ParseHostMemory(s string) (HostMemory, error) { return hostMemoryNames.Parse(s) }

// PoolGranularity is the unit a runtime's pool rounds every block up to, as caching allocators
// (and the platforms' own allocators) do.
const PoolGranularity = 512

// CaptureMode is the stream-capture mode of ACL (aclmdlRICaptureMode) and CUDA
// (CUstreamCaptureMode); both number them the same way.
type CaptureMode uint8

const (
	Global      CaptureMode = 0
	ThreadLocal CaptureMode = 1
	Relaxed     CaptureMode = 2
)

var captureModeNames = enum.New("capture mode", "mode",
	enum.Name(Global, "global"), enum.Name(ThreadLocal, "thread-local"), enum.Name(Relaxed, "relaxed"))

// CaptureModes lists every mode in platform order, in a fresh slice.
func CaptureModes() []CaptureMode { return captureModeNames.Values() }

func (m CaptureMode) String() string { return captureModeNames.String(m) }

// ParseCaptureMode accepts the names String returns.
func ParseCaptureMode(s string) (CaptureMode, error) { return captureModeNames.Parse(s) }

// CaptureStatus is a stream's capture state, numbered as both platforms number it.
type CaptureStatus uint8

const (
	CaptureNone        CaptureStatus = 0
	CaptureActive      CaptureStatus = 1
	CaptureInvalidated CaptureStatus = 2
)

var captureStatusNames = enum.New("capture status", "status",
	enum.Name(CaptureNone, "none"), enum.Name(CaptureActive, "active"), enum.Name(CaptureInvalidated, "invalidated"))

func (s CaptureStatus) String() string { return captureStatusNames.String(s) }

// CaptureInfo describes a stream's participation in a capture.
type CaptureInfo struct {
	Status CaptureStatus
	// ID identifies the capture sequence the stream belongs to (0 when Status is CaptureNone).
	// Streams forked into one capture share its ID.
	ID uint64
	// Origin is the stream the capture began on.
	Origin Stream
	Mode   CaptureMode
}

// Capabilities says what a backend can do. Probes name the capabilities they require; a backend
// lacking one skips the probe.
type Capabilities struct {
	Kernels            bool // the axpy kernel
	GraphIntrospection bool // GraphNodes works
	ThreadRules        bool // capture modes are enforced per OS thread
	FaultInjection     bool // faults can be injected (the Device is a FaultInjector)
	NonBlockingStreams bool // CreateStream takes NonBlocking
}

// Has reports whether the capability with the probe-language name is present.
func (c Capabilities) Has(name string) bool {
	switch name {
	case "kernels":
		return c.Kernels
	case "graph-introspection":
		return c.GraphIntrospection
	case "thread-rules":
		return c.ThreadRules
	case "fault-injection":
		return c.FaultInjection
	case "non-blocking-streams":
		return c.NonBlockingStreams
	}
	return false
}

var capabilityNames = []string{"kernels", "graph-introspection", "thread-rules", "fault-injection", "non-blocking-streams"}

// CapabilityNames lists the names Has understands, in a fresh slice.
func CapabilityNames() []string { return slices.Clone(capabilityNames) }

// Counters are live-object and allocator counters; a probe that leaks shows up here.
type Counters struct {
	Mallocs      int64 // allocator calls that succeeded
	Frees        int64 // frees that succeeded
	LiveAllocs   int64
	LiveBytes    int64
	LiveStreams  int64
	LiveEvents   int64
	LiveGraphs   int64
	Launches     int64
	CapturesDone int64 // captures that ended with a graph
	// Host allocations (AllocHost), pageable and pinned alike.
	HostAllocs     int64 // host allocations that succeeded
	HostFrees      int64 // host frees that succeeded
	LiveHostAllocs int64
}

// Leaks reports the live objects left in c relative to a baseline taken before the work began.
func (c Counters) Leaks(base Counters) []string {
	var out []string
	add := func(what string, now, then int64) {
		if now != then {
			out = append(out, fmt.Sprintf("%s: %d live, %d before", what, now, then))
		}
	}
	add("allocations", c.LiveAllocs, base.LiveAllocs)
	add("host allocations", c.LiveHostAllocs, base.LiveHostAllocs)
	add("streams", c.LiveStreams, base.LiveStreams)
	add("events", c.LiveEvents, base.LiveEvents)
	add("graphs", c.LiveGraphs, base.LiveGraphs)
	return out
}

// GraphNode is one node of a captured graph, for backends with GraphIntrospection.
//
// A kernel node lists its ranges when the backend can read the kernel's parameters, and none
// otherwise (the CUDA backend does not bind cuGraphKernelNodeGetParams, whose export and struct
// changed in CUDA 12.0); memset and memcpy nodes always list theirs.
//
// A "task" node is one the platform names no kind or parameters for: it may be work (a fill or a
// copy) or the runtime's own. ACL types a fill or a copy ACL_MODEL_RI_TASK_DEFAULT and gives no
// parameters for it, so every such task of an ACL graph is a "task" node without ranges.
type GraphNode struct {
	Kind   string // "memset", "memcpy", "kernel", "event-record", "event-wait", "empty", "task"
	Reads  []Ptr
	Writes []Ptr
}

// GraphWalker is an optional capability of a Device with GraphIntrospection: visiting a graph's
// nodes in capture order without building their list. GraphNodes of a graph of 100,000 nodes
// makes 100,000 nodes and their ranges (8 MB) that a check reads once; a walk makes none. A
// device states it in Extensions.Walk; the engine lists the nodes with GraphNodes on a device
// that does not.
type GraphWalker interface {
	// WalkGraph calls visit with each of g's nodes, as GraphNodes would list them, and returns
	// how many it visited: the same rules, the same errors. The node and its ranges are valid only
	// during the call, and visit must not call the device.
	WalkGraph(t Thread, g Graph, visit func(GraphNode)) (int, error)
}

// WalkGraph visits g's nodes on d in capture order: by the walk d states (Extensions.Walk), else
// from the list GraphNodes makes.
func WalkGraph(d Device, t Thread, g Graph, visit func(GraphNode)) (int, error) {
	if w := ExtensionsOf(d).Walk; w != nil {
		return w.WalkGraph(t, g, visit)
	}
	nodes, err := d.GraphNodes(t, g)
	if err != nil {
		return 0, err
	}
	for _, n := range nodes {
		visit(n)
	}
	return len(nodes), nil
}

// Backend opens devices of one kind.
type Backend interface {
	// Name is the backend's short name: "sim", "acl", "cuda".
	Name() string
	// Devices returns how many devices Open accepts.
	Devices(ctx context.Context) (int, error)
	// Open opens device index and starts its worker threads.
	Open(ctx context.Context, index int) (Device, error)
	// Info describes device index without opening it for work.
	Info(ctx context.Context, index int) (DeviceInfo, error)
	// Source says where the backend comes from: "built in", or the driver library it loaded.
	Source() string
	// Close releases what the backend holds (a driver library's handle). Devices must be closed
	// first; the backend is unusable afterwards.
	Close() error
}

// DeviceInfo describes one device of a backend, as `replaycheck devices` shows it.
type DeviceInfo struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	// Memory is the device's memory in bytes.
	Memory int64 `json:"memory_bytes"`
	// Driver and Runtime are the versions the backend reports ("" when it has none).
	Driver  string `json:"driver,omitempty"`
	Runtime string `json:"runtime,omitempty"`
	// Platform is the key a device opened here reports (Device.Platform).
	Platform string `json:"platform"`
	// Lacks names what the backend's library lacks that a device opened here would otherwise do,
	// each with the entry points missing ("graph reading: the runtime library lacks ...").
	Lacks []string `json:"lacks,omitempty"`
}

// Device is one opened device. Every method is safe to call from any goroutine; the Thread
// argument says which of the device's OS threads issues the call.
type Device interface {
	Backend() string
	// Describe names the device and, for the simulator, its platform profile.
	Describe() string
	// Platform is the platform key baselines are recorded and found under: backend/profile on the
	// simulator ("sim/cann"), backend/<runtime version>-<device> on hardware
	// ("acl/cann-9.0-a2a3", "cuda/12.4-h200"). It has no spaces and may contain one "/".
	Platform() string
	Capabilities() Capabilities
	// Extensions states what the device can do beyond Device, for itself (Extensions.Of is the
	// device). Ask ExtensionsOf, which drops extensions a wrapper inherited by embedding.
	Extensions() Extensions
	Counters() Counters
	// Close destroys what is left and stops the workers. The Device is unusable afterwards.
	Close() error

	Malloc(t Thread, bytes int64) (Ptr, error)
	Free(t Thread, p Ptr) error
	// Write copies src to device memory at dst synchronously (host to device); len(src) == dst.Bytes.
	Write(t Thread, dst Ptr, src []byte) error
	// Read copies device memory at src into dst synchronously (device to host); len(dst) == src.Bytes.
	Read(t Thread, dst []byte, src Ptr) error

	// AllocHost allocates host memory that stream copies may name: Pinned through the driver,
	// Pageable as a program's malloc would. Host and device addresses never overlap.
	AllocHost(t Thread, bytes int64, kind HostMemory) (Ptr, error)
	FreeHost(t Thread, p Ptr) error
	// HostWrite and HostRead are the CPU's own stores and loads of host memory: no driver call, so
	// no capture rule applies. len(src) == dst.Bytes, len(dst) == src.Bytes; the range must lie
	// in one live host allocation.
	HostWrite(dst Ptr, src []byte) error
	HostRead(dst []byte, src Ptr) error

	// CreateStream creates a stream of the given kind; NonBlocking needs the non-blocking-streams
	// capability.
	CreateStream(t Thread, f StreamFlags) (Stream, error)
	DestroyStream(t Thread, s Stream) error
	CreateEvent(t Thread) (Event, error)
	DestroyEvent(t Thread, e Event) error

	// Fill enqueues a memset of dst to value.
	Fill(t Thread, s Stream, dst Ptr, value byte) error
	// Copy enqueues a copy of min(dst.Bytes, src.Bytes) bytes: device to device, or host to device
	// or device to host when one side is host memory from AllocHost (an async memcpy).
	Copy(t Thread, s Stream, dst, src Ptr) error
	// Axpy enqueues the kernel y[i] = a*x[i] + y[i] over little-endian uint32 lanes, wrapping.
	Axpy(t Thread, s Stream, y, x Ptr, a uint32) error
	Record(t Thread, e Event, s Stream) error
	Wait(t Thread, s Stream, e Event) error
	SyncStream(t Thread, s Stream) error
	SyncDevice(t Thread) error
	// QueryEvent reports whether all work recorded before e has completed.
	QueryEvent(t Thread, e Event) (bool, error)
	SyncEvent(t Thread, e Event) error

	// ExchangeCaptureMode sets the calling thread's capture interaction mode and returns the one it
	// had (aclmdlRICaptureThreadExchangeMode, cuThreadExchangeStreamCaptureMode). A thread starts
	// in Global. The thread's mode decides which captures forbid its potentially unsafe calls.
	ExchangeCaptureMode(t Thread, mode CaptureMode) (CaptureMode, error)

	BeginCapture(t Thread, s Stream, mode CaptureMode) error
	// EndCapture ends the capture that s belongs to and returns its graph.
	EndCapture(t Thread, s Stream) (Graph, error)
	CaptureInfo(t Thread, s Stream) (CaptureInfo, error)
	// Launch replays g on s. Launches on different streams that nothing orders run concurrently.
	Launch(t Thread, g Graph, s Stream) error
	DestroyGraph(t Thread, g Graph) error
	// GraphNodes lists a graph's nodes; ClassNotSupported without GraphIntrospection.
	GraphNodes(t Thread, g Graph) ([]GraphNode, error)
}
