package sim

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/replaycheck/replaycheck/device"
)

// call is what a condition sees of one device call.
type call struct {
	op            string
	thread        device.Thread
	stream        *stream // the stream argument, if any
	defaultStream bool    // the stream argument is handle 0, the platform's default stream
	event         *event
	graph         *graph
	mode          device.CaptureMode // BeginCapture's mode
	pageable      bool               // Copy: one side is pageable host memory
}

// condition is a situation the simulator can recognise. A profile binds it to an answer.
type condition struct {
	doc   string
	calls []string // the calls it is evaluated for
	// scoped conditions name the captures they concern: a rule's modes filter them, and an
	// invalidating rule acts on them (a capture-ending rule ends the capture EndCapture was asked
	// to end, which a scoped condition of EndCapture names unless it is about others).
	scoped bool
	// others: the captures named are never the one the call ends, so a rule may end that one and
	// invalidate these.
	others bool
	eval   func(d *Device, c call) (captures []*capture, detail string, ok bool)
	// sized conditions concern freed allocations, which a rule's freed-bytes selects by size: sized
	// is evaluated instead of eval, with the rule's range (the zero range admits every size).
	sized func(d *Device, c call, within ByteRange) (detail string, ok bool)
}

var (
	enqueueCalls = []string{"Fill", "Copy", "Axpy", "Record", "Wait"}
	unsafeCalls  = []string{"Malloc", "Free", "AllocHost", "FreeHost", "Write", "Read", "SyncDevice"}
	// threadCalls are the calls the interaction-mode conditions judge: the potentially unsafe
	// calls, a copy (ACL's pageable copy turned synchronous) and an event query or sync (CUDA's
	// cuEventQuery and cuEventSynchronize; an event recorded in a capture is event-captured's).
	threadCalls = append(slices.Clone(unsafeCalls), "Copy", "QueryEvent", "SyncEvent")
	// callNames are the Device methods a rule may name. AllocHost and FreeHost are checked for
	// pinned memory only: pageable memory is the program's malloc, no driver call.
	callNames = []string{
		"Malloc", "Free", "AllocHost", "FreeHost", "Write", "Read", "Fill", "Copy", "Axpy", "Record", "Wait",
		"SyncStream", "SyncDevice", "QueryEvent", "SyncEvent", "BeginCapture", "EndCapture", "Launch",
	}
)

var conditions = map[string]condition{
	"stream-capturing": {
		doc:    "the stream argument belongs to a capture in progress",
		calls:  []string{"SyncStream", "BeginCapture"},
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			if c.stream == nil || c.stream.capture == nil {
				return nil, "", false
			}
			return []*capture{c.stream.capture}, fmt.Sprintf("%v is in %v", c.stream.id, c.stream.capture), true
		},
	},
	"any-capture": {
		doc:    "some capture is in progress on the device",
		calls:  unsafeCalls,
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			if len(d.captures) == 0 {
				return nil, "", false
			}
			return slices.Clone(d.captures), fmt.Sprintf("%v is in progress", d.captures[0]), true
		},
	},
	"caller-began-capture": {
		doc:    "the calling thread began a capture in progress",
		calls:  threadCalls,
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			caps := capturesWhere(d, func(x *capture) bool { return x.thread == c.thread })
			if len(caps) == 0 {
				return nil, "", false
			}
			return caps, fmt.Sprintf("thread %v began %v", c.thread, caps[0]), true
		},
	},
	"other-thread-began-capture": {
		doc:    "another thread began a capture in progress",
		calls:  threadCalls,
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			caps := capturesWhere(d, func(x *capture) bool { return x.thread != c.thread })
			if len(caps) == 0 {
				return nil, "", false
			}
			return caps, fmt.Sprintf("called on thread %v while %v is in progress", c.thread, caps[0]), true
		},
	},
	"event-captured": {
		doc:    "the event's last record belongs to a capture in progress",
		calls:  []string{"QueryEvent", "SyncEvent"},
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			if c.event.capture == nil {
				return nil, "", false
			}
			return []*capture{c.event.capture}, fmt.Sprintf("%v was recorded in %v", c.event.id, c.event.capture), true
		},
	},
	"event-recorded-outside": {
		doc:    "a capturing stream waits on an event recorded outside any capture (e.g. before the capture began)",
		calls:  []string{"Wait"},
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			if c.stream.capture == nil || c.event.capture != nil || !c.event.eager {
				return nil, "", false
			}
			return []*capture{c.stream.capture}, fmt.Sprintf("%v is in %v and %v was recorded outside it", c.stream.id, c.stream.capture, c.event.id), true
		},
	},
	"event-in-other-capture": {
		doc:    "a capturing stream waits on, or records, an event last recorded in another capture in progress",
		calls:  []string{"Wait", "Record"},
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			sc, ec := c.stream.capture, c.event.capture
			if sc == nil || ec == nil || sc == ec {
				return nil, "", false
			}
			return []*capture{sc, ec}, fmt.Sprintf("%v is in %v and %v was recorded in %v", c.stream.id, sc, c.event.id, ec), true
		},
	},
	"capture-invalidated": {
		doc:    "the capture the call would record into, sync or end was invalidated by an earlier error",
		calls:  append(slices.Clone(enqueueCalls), "SyncStream", "EndCapture"),
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			target := c.stream.capture
			if target == nil && c.op == "Wait" && c.event.capture != nil {
				target = c.event.capture // the wait would fork the stream into it
			}
			if target == nil || target.status != device.CaptureInvalidated {
				return nil, "", false
			}
			return []*capture{target}, fmt.Sprintf("%v", target), true
		},
	},
	"stream-outside-capture": {
		doc:    "work enqueued on a stream that is in no capture while a capture is in progress",
		calls:  enqueueCalls,
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			if c.stream.capture != nil || len(d.captures) == 0 || (c.op == "Wait" && c.event.capture != nil) {
				return nil, "", false
			}
			return slices.Clone(d.captures), fmt.Sprintf("%v is in no capture while %v is in progress", c.stream.id, d.captures[0]), true
		},
	},
	"default-stream": {
		doc:   "the stream argument is the platform's default stream (handle 0)",
		calls: []string{"BeginCapture"},
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			return nil, "the default stream was named", c.defaultStream
		},
	},
	"default-stream-during-capture": {
		doc:    "work on, or a synchronisation of, the default stream while a capture is in progress on another stream",
		calls:  append(slices.Clone(enqueueCalls), "SyncStream"),
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			if c.stream.id != device.DefaultStream || c.stream.capture != nil || len(d.captures) == 0 {
				return nil, "", false
			}
			return slices.Clone(d.captures), fmt.Sprintf("the default stream was named while %v is in progress", d.captures[0]), true
		},
	},
	"default-stream-during-blocking-capture": {
		doc:    "work on, or a synchronisation of, the default stream while a capture in progress holds a blocking stream (its origin, or a stream that joined it)",
		calls:  append(slices.Clone(enqueueCalls), "SyncStream"),
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			if c.stream.id != device.DefaultStream || c.stream.capture != nil {
				return nil, "", false
			}
			caps, s := blockingCaptures(d)
			if len(caps) == 0 {
				return nil, "", false
			}
			return caps, fmt.Sprintf("the default stream was named while %v, blocking, is in %v", s.id, s.capture), true
		},
	},
	"blocking-capture": {
		doc:    "a capture in progress holds a blocking stream (its origin, or a stream that joined it)",
		calls:  unsafeCalls,
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			caps, s := blockingCaptures(d)
			if len(caps) == 0 {
				return nil, "", false
			}
			return caps, fmt.Sprintf("%v, blocking, is in %v", s.id, s.capture), true
		},
	},
	"default-stream-joins-capture": {
		doc:    "the default stream waits on an event recorded in a capture in progress, which would fork it into the capture",
		calls:  []string{"Wait"},
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			if c.stream.id != device.DefaultStream || c.event.capture == nil {
				return nil, "", false
			}
			return []*capture{c.event.capture}, fmt.Sprintf("the default stream waits on %v, recorded in %v", c.event.id, c.event.capture), true
		},
	},
	"pageable-copy-in-capture": {
		doc:    "a copy naming pageable host memory is enqueued on a stream that belongs to a capture",
		calls:  []string{"Copy"},
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			if !c.pageable || c.stream.capture == nil {
				return nil, "", false
			}
			return []*capture{c.stream.capture}, fmt.Sprintf("a copy of pageable host memory on %v, which is in %v", c.stream.id, c.stream.capture), true
		},
	},
	"stream-not-capturing": {
		doc:   "the stream belongs to no capture",
		calls: []string{"EndCapture"},
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			return nil, fmt.Sprintf("%v is not capturing", c.stream.id), c.stream.capture == nil
		},
	},
	"stream-not-origin": {
		doc:    "the stream is in a capture it did not begin",
		calls:  []string{"EndCapture"},
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			cp := c.stream.capture
			if cp == nil || cp.origin == c.stream.id {
				return nil, "", false
			}
			return []*capture{cp}, fmt.Sprintf("%v was forked into %v", c.stream.id, cp), true
		},
	},
	"end-from-other-thread": {
		doc:    "the capture is ended from a thread that did not begin it",
		calls:  []string{"EndCapture"},
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			cp := c.stream.capture
			if cp == nil || cp.thread == c.thread {
				return nil, "", false
			}
			return []*capture{cp}, fmt.Sprintf("ended on thread %v, %v", c.thread, cp), true
		},
	},
	"fork-unjoined": {
		doc:    "a stream forked into the capture has work the origin stream does not wait for",
		calls:  []string{"EndCapture"},
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			cp := c.stream.capture
			if cp == nil || cp.origin != c.stream.id {
				return nil, "", false
			}
			open := cp.unjoined()
			if len(open) == 0 {
				return nil, "", false
			}
			return []*capture{cp}, fmt.Sprintf("%s not joined back to %v in %v", streamList(open), c.stream.id, cp), true
		},
	},
	"graph-range-stale": {
		doc:   "a range the graph captured now lies in another allocation than at capture (freed, or re-based, and handed out again)",
		calls: []string{"Launch"},
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			stale, _ := c.graph.stale(d.mem)
			if len(stale) == 0 {
				return nil, "", false
			}
			return nil, fmt.Sprintf("%v captured ranges that changed owner: %s", c.graph.id, strings.Join(stale, "; ")), true
		},
	},
	"graph-range-freed": {
		doc:   "a range the graph captured lies in no live allocation: it was freed, and returned to the driver, since capture (a rule's freed-bytes selects by the size of the allocation the range lay in at capture)",
		calls: []string{"Launch"},
		sized: func(d *Device, c call, within ByteRange) (string, bool) {
			_, freed := c.graph.stale(d.mem)
			var ranges []string
			for _, f := range freed {
				if within.Contains(f.bytes) {
					ranges = append(ranges, f.desc)
				}
			}
			if len(ranges) == 0 {
				return "", false
			}
			return fmt.Sprintf("%v captured ranges that were freed: %s", c.graph.id, strings.Join(ranges, "; ")), true
		},
	},
	// The graph's instantiation (on CUDA, cuGraphInstantiateWithFlags right after
	// cuStreamEndCapture) checks the nodes it is given: a memset node on memory no allocation holds
	// any more is refused. The fill's memory was freed during the capture, where the capture mode
	// lets the thread free; allocated again at the same address, it is live again.
	"capture-fill-freed": {
		doc:    "a fill the capture ended holds lies in no live allocation: freed during the capture, and not allocated again",
		calls:  []string{"EndCapture"},
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			return endedWorkFreed(d, c, func(w work) (device.Ptr, string, bool) {
				return w.dst, "a fill of", w.kind == kindMemset
			})
		},
	},
	// The same instantiation with a copy node whose source memory no allocation holds any more: on
	// the H200 the driver crashed the process inside cuGraphInstantiateWithFlags. Device memory
	// only: a copy from host memory names the program's memory, freed or not.
	"capture-copy-freed": {
		doc:    "a copy the capture ended holds reads device memory that lies in no live allocation: freed during the capture, and not allocated again",
		calls:  []string{"EndCapture"},
		scoped: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			return endedWorkFreed(d, c, func(w work) (device.Ptr, string, bool) {
				src := w.source()
				return src, "a copy from", w.kind == kindMemcpy && d.mem.device.within(src.Addr)
			})
		},
	},
	// CUDA's EndCapture is cuStreamEndCapture and cuGraphInstantiateWithFlags right after it: the
	// instantiation is a potentially unsafe call, judged by the other captures still in progress.
	"caller-began-other-capture": {
		doc:    "the calling thread began a capture in progress other than the one the call ends",
		calls:  []string{"EndCapture"},
		scoped: true,
		others: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			ending := c.stream.capture
			caps := capturesWhere(d, func(x *capture) bool { return x != ending && x.thread == c.thread })
			if len(caps) == 0 {
				return nil, "", false
			}
			return caps, fmt.Sprintf("thread %v began %v, still in progress", c.thread, caps[0]), true
		},
	},
	"other-thread-began-other-capture": {
		doc:    "another thread began a capture in progress other than the one the call ends",
		calls:  []string{"EndCapture"},
		scoped: true,
		others: true,
		eval: func(d *Device, c call) ([]*capture, string, bool) {
			ending := c.stream.capture
			caps := capturesWhere(d, func(x *capture) bool { return x != ending && x.thread != c.thread })
			if len(caps) == 0 {
				return nil, "", false
			}
			return caps, fmt.Sprintf("ended on thread %v while %v is in progress", c.thread, caps[0]), true
		},
	},
}

// Conditions lists the condition names a profile rule may use, sorted.
func Conditions() []string {
	names := make([]string, 0, len(conditions))
	for name := range conditions {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// ConditionDoc describes a condition in one line ("" for an unknown name).
func ConditionDoc(name string) string { return conditions[name].doc }

// ConditionCalls lists the calls a condition is evaluated for.
func ConditionCalls(name string) []string { return slices.Clone(conditions[name].calls) }

func capturesWhere(d *Device, keep func(*capture) bool) []*capture {
	var out []*capture
	for _, c := range d.captures {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

// blockingCaptures are the captures in progress that hold a blocking stream, and the first such
// stream (of the first capture, origin first): CUDA's legacy stream synchronises with it, so
// legacy-stream work then would depend on the capture.
func blockingCaptures(d *Device) (caps []*capture, first *stream) {
	for _, c := range d.captures {
		for _, s := range c.members {
			if s.capture == c && !s.nonBlocking {
				if first == nil {
					first = s
				}
				caps = append(caps, c)
				break
			}
		}
	}
	return caps, first
}

// enforce applies the profile to one call: the first rejecting rule whose call and condition match
// returns its error after invalidating the captures the condition names and, for EndCapture,
// ending the capture the call ends, as the rule says. Allow rules record what the platform lets
// through and never pre-empt a rejection, so a silent row placed before a rejecting one cannot
// hide it. No match: the call proceeds.
func (d *Device) enforce(c *call) error {
	if c.op != d.lastOp {
		d.lastOp, d.lastRules = c.op, d.rulesFor[c.op]
	}
	for _, i := range d.lastRules {
		r := &d.profile.Rules[i]
		if r.Allow || !r.appliesTo(c, d.threadModes[c.thread]) {
			continue
		}
		cond := conditions[r.When]
		// By value: a pointer passed through a function value escapes, one allocation per call.
		var (
			caps   []*capture
			detail string
			ok     bool
		)
		if cond.sized != nil {
			detail, ok = cond.sized(d, *c, r.FreedBytes)
		} else {
			caps, detail, ok = cond.eval(d, *c)
		}
		if !ok {
			continue
		}
		if cond.scoped {
			caps = slices.DeleteFunc(caps, func(x *capture) bool { return !r.appliesToMode(x.mode) })
			if len(caps) == 0 {
				continue
			}
		}
		if r.Crash != "" {
			// The platform's process dies in the call: nothing it did survives, so the capture the
			// call ends is over, with no graph.
			if c.op == "EndCapture" && c.stream != nil && c.stream.capture != nil {
				d.terminate(c.stream.capture)
			}
			return &device.Error{
				Backend: "sim", Op: c.op, Class: device.ClassDeviceLost, Crash: r.Crash,
				Detail: fmt.Sprintf("%s: %s (profile %s, rule %d); the platform's process dies in this call, the simulator's goes on", r.Situation, detail, d.profile.Name, i+1),
			}
		}
		invalidated := false
		if r.Invalidates {
			for _, x := range caps {
				if x.status == device.CaptureActive {
					x.status = device.CaptureInvalidated
					invalidated = true
				}
			}
		}
		if r.EndsCapture && c.stream != nil && c.stream.capture != nil {
			d.terminate(c.stream.capture)
			detail += "; the capture is ended without a graph"
		}
		return &device.Error{
			Backend: "sim", Op: c.op, Code: r.Code, Name: r.Name, Class: r.Class, Invalidated: invalidated,
			Detail: fmt.Sprintf("%s: %s (profile %s, rule %d)", r.Situation, detail, d.profile.Name, i+1),
		}
	}
	return nil
}

// endedWorkFreed finds, in the capture an EndCapture ends on its origin stream, the first work that
// touches (names) memory lying in no live allocation: freed during the capture, and not allocated
// again. Captures that freed nothing are not searched.
func endedWorkFreed(d *Device, c call, touches func(work) (r device.Ptr, what string, ok bool)) ([]*capture, string, bool) {
	cp := c.stream.capture
	if cp == nil || cp.origin != c.stream.id || cp.frees == d.counters.Frees {
		return nil, "", false
	}
	for n := range cp.len() {
		if r, what, ok := touches(cp.works.at(n)); ok && d.mem.containing(r) == nil {
			return []*capture{cp}, fmt.Sprintf("%v holds %s %v, which lies in no live allocation", cp, what, r), true
		}
	}
	return nil, "", false
}
